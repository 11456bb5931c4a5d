//! Docker's container `Config`: what runs inside the container (moby
//! `api/types/container/config.go`). Fields without Go's `omitempty` are always
//! written, `null` when unset, exactly as the Docker Engine API writes them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use super::serde_util::EmptyObject;
use super::serde_util::{is_false, is_none_or_empty, is_zero, nullable, string_or_list};

/// The portable part of a container's configuration (`Config` in the Docker API;
/// `ContainerConfig` here, because `HostConfig` is its sibling).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ContainerConfig {
    #[serde(default, deserialize_with = "nullable")]
    pub hostname: String,
    #[serde(default, deserialize_with = "nullable")]
    pub domainname: String,
    /// `user`, `user:group`, `uid` or `uid:gid`.
    #[serde(default, deserialize_with = "nullable")]
    pub user: String,
    #[serde(default, deserialize_with = "nullable")]
    pub attach_stdin: bool,
    #[serde(default, deserialize_with = "nullable")]
    pub attach_stdout: bool,
    #[serde(default, deserialize_with = "nullable")]
    pub attach_stderr: bool,
    /// Keys are `port/proto`, e.g. `80/tcp`.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub exposed_ports: BTreeMap<String, EmptyObject>,
    #[serde(default, deserialize_with = "nullable")]
    pub tty: bool,
    #[serde(default, deserialize_with = "nullable")]
    pub open_stdin: bool,
    #[serde(default, deserialize_with = "nullable")]
    pub stdin_once: bool,
    /// `KEY=value` entries; a bare `KEY` is kept as given.
    #[serde(default)]
    pub env: Option<Vec<String>>,
    #[serde(default, deserialize_with = "string_or_list")]
    pub cmd: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthcheck: Option<HealthConfig>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub args_escaped: bool,
    #[serde(default, deserialize_with = "nullable")]
    pub image: String,
    /// Anonymous volumes: container paths (`-v /data`).
    #[serde(default)]
    pub volumes: Option<BTreeMap<String, EmptyObject>>,
    #[serde(default, deserialize_with = "nullable")]
    pub working_dir: String,
    /// `Some(vec![""])` resets the image's entrypoint (`--entrypoint ""`).
    #[serde(default, deserialize_with = "string_or_list")]
    pub entrypoint: Option<Vec<String>>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub network_disabled: bool,
    /// Deprecated since API 1.44 in favour of the endpoint's `MacAddress`.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub mac_address: String,
    #[serde(default)]
    pub on_build: Option<Vec<String>>,
    #[serde(default)]
    pub labels: Option<BTreeMap<String, String>>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub stop_signal: String,
    /// Seconds; `None` means the engine's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_timeout: Option<i64>,
    #[serde(
        default,
        deserialize_with = "string_or_list",
        skip_serializing_if = "is_none_or_empty"
    )]
    pub shell: Option<Vec<String>>,
}

/// A container's health check (`HEALTHCHECK`, `--health-*`). Durations are in
/// nanoseconds, as Go's `time.Duration` is written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HealthConfig {
    /// `[]` inherits the image's check, `["NONE"]` disables it, `["CMD", args…]`
    /// runs a program, `["CMD-SHELL", command]` runs the command with the shell.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub test: Vec<String>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_zero"
    )]
    pub interval: i64,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_zero"
    )]
    pub timeout: i64,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_zero"
    )]
    pub start_period: i64,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_zero"
    )]
    pub start_interval: i64,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_zero"
    )]
    pub retries: i64,
}

/// The shortest interval or timeout Docker accepts for a health check.
pub const HEALTHCHECK_MINIMUM_DURATION_NANOS: i64 = 1_000_000;
