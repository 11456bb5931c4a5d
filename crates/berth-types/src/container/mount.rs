//! `HostConfig.Mounts` entries, as `--mount` and the API's `Mounts` write them
//! (moby `api/types/mount`). Every field is `omitempty` in Docker.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::serde_util::{is_false, is_zero, nullable};

pub const TYPE_BIND: &str = "bind";
pub const TYPE_VOLUME: &str = "volume";
pub const TYPE_TMPFS: &str = "tmpfs";
/// Docker Desktop's form of a host directory shared into its VM; berth
/// takes it for VM containers (`--isolation=vm`), where it is a bind over
/// virtio-fs, and refuses it for namespace containers.
pub const TYPE_VIRTIOFS: &str = "virtiofs";

/// Mount propagation modes Linux knows (`bind-propagation=`, `-v …:rshared`).
pub const PROPAGATIONS: &[&str] = &[
    "rprivate", "private", "rshared", "shared", "rslave", "slave",
];

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Mount {
    /// `bind`, `volume` or `tmpfs` (kept as text: the API may send anything, and
    /// validation answers in Docker's words).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub r#type: String,
    /// Host path (bind), volume name (volume, empty for an anonymous one), nothing
    /// for tmpfs.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub source: String,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub target: String,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub read_only: bool,
    /// macOS-only hint (`consistent`, `cached`, `delegated`); ignored on Linux.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub consistency: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind_options: Option<BindOptions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_options: Option<VolumeOptions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmpfs_options: Option<TmpfsOptions>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct BindOptions {
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub propagation: String,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub non_recursive: bool,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub create_mountpoint: bool,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub read_only_non_recursive: bool,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub read_only_force_recursive: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct VolumeOptions {
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub no_copy: bool,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub labels: BTreeMap<String, String>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub subpath: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_config: Option<VolumeDriver>,
}

/// The volume driver of a `--mount type=volume` (`Driver` in Docker's types).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct VolumeDriver {
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub name: String,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub options: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TmpfsOptions {
    /// Bytes; `0` is the kernel's default (half of RAM).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_zero"
    )]
    pub size_bytes: i64,
    /// Permission bits as a number (Go's `os.FileMode`), e.g. `1016` for `1770`.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_zero"
    )]
    pub mode: u32,
}
