//! Docker's `HostConfig`: how the host runs a container (moby
//! `api/types/container/hostconfig.go`, API 1.41 field set). Modes stay text, as in
//! Docker; the predicates below say what a mode means.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::mount::Mount;
use super::resources::Resources;
use super::serde_util::{is_none_or_empty, nullable, optional_map_of_nullable, string_or_list};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HostConfig {
    /// `-v` binds and named volumes: `source:target[:options]`.
    #[serde(default)]
    pub binds: Option<Vec<String>>,
    #[serde(default, deserialize_with = "nullable", rename = "ContainerIDFile")]
    pub container_id_file: String,
    #[serde(default, deserialize_with = "nullable")]
    pub log_config: LogConfig,
    /// `default`, `bridge`, `host`, `none`, `container:<name|id>` or a network name.
    #[serde(default, deserialize_with = "nullable")]
    pub network_mode: String,
    /// Keys are `port/proto`; one container port may be published several times.
    #[serde(default, deserialize_with = "optional_map_of_nullable")]
    pub port_bindings: Option<BTreeMap<String, Vec<PortBinding>>>,
    #[serde(default, deserialize_with = "nullable")]
    pub restart_policy: RestartPolicy,
    #[serde(default, deserialize_with = "nullable")]
    pub auto_remove: bool,
    #[serde(default, deserialize_with = "nullable")]
    pub volume_driver: String,
    /// `container[:ro|rw]`.
    #[serde(default)]
    pub volumes_from: Option<Vec<String>>,
    /// Height and width of the terminal at start.
    #[serde(default, deserialize_with = "nullable")]
    pub console_size: [u32; 2],
    /// `CAP_NET_ADMIN`-style names, or `ALL`.
    #[serde(default, deserialize_with = "string_or_list")]
    pub cap_add: Option<Vec<String>>,
    #[serde(default, deserialize_with = "string_or_list")]
    pub cap_drop: Option<Vec<String>>,
    /// `""` (engine default), `private` or `host`.
    #[serde(default, deserialize_with = "nullable")]
    pub cgroupns_mode: String,
    #[serde(default)]
    pub dns: Option<Vec<String>>,
    #[serde(default)]
    pub dns_options: Option<Vec<String>>,
    #[serde(default)]
    pub dns_search: Option<Vec<String>>,
    /// `host:ip` entries for `/etc/hosts`.
    #[serde(default)]
    pub extra_hosts: Option<Vec<String>>,
    #[serde(default)]
    pub group_add: Option<Vec<String>>,
    /// `""`, `none`, `private`, `shareable`, `host` or `container:<name|id>`.
    #[serde(default, deserialize_with = "nullable")]
    pub ipc_mode: String,
    /// `container:<name|id>` to share that container's cgroup.
    #[serde(default, deserialize_with = "nullable")]
    pub cgroup: String,
    /// `name:alias` legacy links.
    #[serde(default)]
    pub links: Option<Vec<String>>,
    #[serde(default, deserialize_with = "nullable")]
    pub oom_score_adj: i64,
    /// `""`, `host` or `container:<name|id>`.
    #[serde(default, deserialize_with = "nullable")]
    pub pid_mode: String,
    #[serde(default, deserialize_with = "nullable")]
    pub privileged: bool,
    #[serde(default, deserialize_with = "nullable")]
    pub publish_all_ports: bool,
    #[serde(default, deserialize_with = "nullable")]
    pub readonly_rootfs: bool,
    /// `no-new-privileges[:bool]`, `seccomp=…`, `apparmor=…`, `label=…`.
    #[serde(default)]
    pub security_opt: Option<Vec<String>>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub storage_opt: BTreeMap<String, String>,
    /// Container path → mount options (`--tmpfs /run:size=64m`).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub tmpfs: BTreeMap<String, String>,
    /// `""` or `host`.
    #[serde(default, deserialize_with = "nullable", rename = "UTSMode")]
    pub uts_mode: String,
    /// `""` or `host`.
    #[serde(default, deserialize_with = "nullable")]
    pub userns_mode: String,
    /// Bytes; `0` is the engine's default (64 MiB).
    #[serde(default, deserialize_with = "nullable")]
    pub shm_size: i64,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub sysctls: BTreeMap<String, String>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub runtime: String,
    /// `""` or `default` on Linux (berth: also `vm`).
    #[serde(default, deserialize_with = "nullable")]
    pub isolation: String,
    #[serde(flatten)]
    pub resources: Resources,
    #[serde(default, skip_serializing_if = "is_none_or_empty")]
    pub mounts: Option<Vec<Mount>>,
    /// `None` keeps the engine's masked paths; `Some([])` masks nothing
    /// (`--security-opt systempaths=unconfined`).
    #[serde(default)]
    pub masked_paths: Option<Vec<String>>,
    #[serde(default)]
    pub readonly_paths: Option<Vec<String>>,
    /// `None` leaves the engine's default; set only when `--init` was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct LogConfig {
    /// The log driver; empty for the engine's default.
    #[serde(default, deserialize_with = "nullable")]
    pub r#type: String,
    #[serde(default)]
    pub config: Option<BTreeMap<String, String>>,
}

/// One host address a container port is published on. Empty `host_port` means an
/// ephemeral port; it may also be a range (`8000-8010`) to pick from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct PortBinding {
    #[serde(default, deserialize_with = "nullable")]
    pub host_ip: String,
    #[serde(default, deserialize_with = "nullable")]
    pub host_port: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct RestartPolicy {
    /// `""`, `no`, `always`, `unless-stopped` or `on-failure`.
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    #[serde(default, deserialize_with = "nullable")]
    pub maximum_retry_count: i64,
}

impl RestartPolicy {
    /// No restarts: `no` or unset.
    pub fn is_none(&self) -> bool {
        self.name.is_empty() || self.name == "no"
    }
}

/// The container named by a `container:<name|id>` mode, if the mode is one.
pub fn container_of_mode(mode: &str) -> Option<&str> {
    mode.split_once(':')
        .filter(|(kind, _)| *kind == "container")
        .map(|(_, name)| name)
}

impl HostConfig {
    pub fn network_is_host(&self) -> bool {
        self.network_mode == "host"
    }

    pub fn network_is_none(&self) -> bool {
        self.network_mode == "none"
    }

    /// The container whose network namespace this one joins (`container:<x>`).
    pub fn network_container(&self) -> Option<&str> {
        container_of_mode(&self.network_mode)
    }

    /// A network created by the user rather than one of the engine's modes.
    pub fn network_is_user_defined(&self) -> bool {
        is_user_defined_network(&self.network_mode)
    }
}

/// Whether `mode` names a user-created network rather than `default`, `bridge`,
/// `host`, `none` or `container:…` (moby `NetworkMode.IsUserDefined` on Linux).
pub fn is_user_defined_network(mode: &str) -> bool {
    !matches!(mode, "default" | "bridge" | "host" | "none") && container_of_mode(mode).is_none()
}
