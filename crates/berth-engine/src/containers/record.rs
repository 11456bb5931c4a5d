//! What a container was asked to be: resolved once at `create` from the
//! image config and the user's settings, stored as JSON, and used by every
//! later `start` (and restart).

use std::collections::BTreeMap;

use berth_runtime::cgroups::Resources;
use berth_runtime::devices::{Access, DeviceRule};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestartPolicy {
    /// "no", "always", "unless-stopped", "on-failure"
    pub name: String,
    pub maximum_retry_count: u32,
}

impl RestartPolicy {
    pub fn is_none(&self) -> bool {
        self.name.is_empty() || self.name == "no"
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SeccompChoice {
    #[default]
    Default,
    Unconfined,
    /// A profile in Docker's JSON format (`--security-opt seccomp=FILE`).
    Custom(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MountSource {
    Bind {
        host_path: String,
        recursive: bool,
    },
    Volume {
        name: String,
    },
    Tmpfs {
        size: Option<u64>,
        mode: Option<u32>,
        /// The `exec` option: Docker mounts a tmpfs `noexec` unless it is given.
        #[serde(default)]
        exec: bool,
        /// One of dockerd's mount points (`--mount type=tmpfs`): listed in
        /// inspect's `Mounts` and copied by `--volumes-from`; a `--tmpfs`
        /// (`HostConfig.Tmpfs`) is neither.
        #[serde(default)]
        mount_point: bool,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountRequest {
    pub source: MountSource,
    pub destination: String,
    pub readonly: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ulimit {
    pub name: String,
    pub soft: u64,
    pub hard: u64,
}

/// Everything a start needs, already merged with the image config.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSettings {
    pub args: Vec<String>,
    pub env: Vec<String>,
    pub working_dir: String,
    /// As given (`-u` or the image's User), resolved at each start.
    pub user: String,
    pub group_add: Vec<String>,
    pub hostname: String,
    pub domainname: String,
    pub tty: bool,
    pub open_stdin: bool,
    pub auto_remove: bool,
    pub restart: RestartPolicy,
    pub privileged: bool,
    pub cap_add: Vec<String>,
    pub cap_drop: Vec<String>,
    pub no_new_privileges: bool,
    pub seccomp: SeccompChoice,
    pub readonly_rootfs: bool,
    pub init: bool,
    pub shm_size: u64,
    /// "none", "host", "container:<name>", "bridge" or a network's name.
    pub network_mode: String,
    /// The networks to connect at each start, the first with the default
    /// route; empty for host, none and container: modes.
    #[serde(default)]
    pub networks: Vec<crate::networks::NetworkRequest>,
    /// Ports to publish at each start (`-p`, `-P`).
    #[serde(default)]
    pub ports: Vec<crate::networks::ports::PortRequest>,
    pub dns: Vec<String>,
    pub dns_search: Vec<String>,
    pub dns_options: Vec<String>,
    pub extra_hosts: Vec<String>,
    pub mounts: Vec<MountRequest>,
    pub resources: Resources,
    pub ulimits: Vec<Ulimit>,
    pub stop_signal: String,
    pub stop_timeout: Option<i64>,
    pub labels: BTreeMap<String, String>,
    /// `--cgroupns host`: share the host's cgroup namespace.
    #[serde(default)]
    pub cgroupns_host: bool,
    /// `--device`: host device paths, resolved (numbers, mode, owner) at
    /// each start, as Docker does.
    #[serde(default)]
    pub devices: Vec<DeviceMapping>,
    /// `--device-cgroup-rule`, parsed at create.
    #[serde(default)]
    pub device_cgroup_rules: Vec<DeviceRule>,
    /// `--pid`: empty (a namespace of its own) or `host`.
    #[serde(default)]
    pub pid_mode: String,
    /// `--ipc`: empty (private), `host` or `none` (`shareable` and `private` are stored empty:
    /// berth's private namespace is the one another container would join).
    #[serde(default)]
    pub ipc_mode: String,
    /// `--uts`: empty or `host`.
    #[serde(default)]
    pub uts_mode: String,
    /// `--oom-score-adj`; 0 leaves the inherited score.
    #[serde(default)]
    pub oom_score_adj: i32,
    /// `--isolation` (and `--runtime vm`): namespaces on this kernel, or a
    /// microVM of its own.
    #[serde(default)]
    pub isolation: Isolation,
    /// `--log-driver`/`--log-opt`, resolved (records from before it: json-file, unrotated).
    #[serde(default)]
    pub log: crate::logs::LogSettings,
    /// Legacy links (`--link`) on the default bridge (see `links.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<super::links::Link>,
    /// `Config.ExposedPorts` (the image's, `--expose`, and the published
    /// ones): `PORT/PROTO`, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exposed_ports: Vec<String>,
}

/// Which backend runs a container.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// Namespaces and cgroups on the host's kernel (Docker's `default`).
    #[default]
    Namespaces,
    /// One QEMU microVM per container (`--isolation=vm`, berth-vm).
    Vm,
}

impl Isolation {
    /// From `HostConfig.Isolation` and `HostConfig.Runtime` (validated
    /// before: "", "default" or "vm", any case; "vm" the runtime's name).
    pub fn of_request(isolation: &str, runtime: &str) -> Isolation {
        if isolation.eq_ignore_ascii_case("vm") || runtime == super::vm::RUNTIME_NAME {
            Isolation::Vm
        } else {
            Isolation::Namespaces
        }
    }
}

/// One `--device HOST[:CONTAINER][:PERMISSIONS]`, with the defaults filled in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceMapping {
    pub host_path: String,
    pub container_path: String,
    pub access: Access,
}

/// The stored container.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContainerRecord {
    pub id: String,
    pub name: String,
    pub image_id: String,
    /// The image as the user named it (`Config.Image`).
    pub image_name: String,
    pub created: String,
    pub run: RunSettings,
    /// Docker's `Config` and `HostConfig` as created, for `inspect`.
    pub config: serde_json::Value,
    pub host_config: serde_json::Value,
}
