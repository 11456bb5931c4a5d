//! `config.json` as the OCI runtime specification (1.0–1.1) writes it: the fields berth
//! reads. Unknown properties are ignored, as the specification requires of readers
//! (config.md: "MUST NOT generate an error if they encounter an unknown property"); known
//! ones berth cannot honour are refused when the bundle is converted (`convert`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Spec {
    #[serde(default)]
    pub oci_version: String,
    pub process: Option<Process>,
    pub root: Option<Root>,
    #[serde(default)]
    pub hostname: Option<String>,
    #[serde(default)]
    pub domainname: Option<String>,
    #[serde(default)]
    pub mounts: Vec<Mount>,
    #[serde(default)]
    pub hooks: Option<Hooks>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    pub linux: Option<Linux>,
    /// Other platforms' sections: present means the bundle is not for Linux.
    #[serde(default)]
    pub solaris: Option<serde_json::Value>,
    #[serde(default)]
    pub windows: Option<serde_json::Value>,
    #[serde(default)]
    pub vm: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Process {
    #[serde(default)]
    pub terminal: bool,
    #[serde(default)]
    pub console_size: Option<ConsoleSize>,
    #[serde(default)]
    pub user: User,
    #[serde(default)]
    pub args: Vec<String>,
    /// Windows only; refused.
    #[serde(default)]
    pub command_line: Option<String>,
    #[serde(default)]
    pub env: Vec<String>,
    #[serde(default)]
    pub cwd: String,
    #[serde(default)]
    pub capabilities: Option<Capabilities>,
    #[serde(default)]
    pub rlimits: Vec<Rlimit>,
    #[serde(default)]
    pub no_new_privileges: bool,
    #[serde(default)]
    pub apparmor_profile: Option<String>,
    #[serde(default)]
    pub oom_score_adj: Option<i32>,
    #[serde(default)]
    pub selinux_label: Option<String>,
    #[serde(default)]
    pub scheduler: Option<serde_json::Value>,
    #[serde(default)]
    pub io_priority: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct ConsoleSize {
    pub height: u16,
    pub width: u16,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct User {
    #[serde(default)]
    pub uid: u32,
    #[serde(default)]
    pub gid: u32,
    #[serde(default)]
    pub umask: Option<u32>,
    #[serde(default)]
    pub additional_gids: Vec<u32>,
    /// Windows only; refused.
    #[serde(default)]
    pub username: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Capabilities {
    #[serde(default)]
    pub bounding: Vec<String>,
    #[serde(default)]
    pub effective: Vec<String>,
    #[serde(default)]
    pub inheritable: Vec<String>,
    #[serde(default)]
    pub permitted: Vec<String>,
    #[serde(default)]
    pub ambient: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rlimit {
    #[serde(rename = "type")]
    pub kind: String,
    pub hard: u64,
    pub soft: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Root {
    pub path: String,
    #[serde(default)]
    pub readonly: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Mount {
    pub destination: String,
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub options: Vec<String>,
    #[serde(default)]
    pub uid_mappings: Vec<IdMapping>,
    #[serde(default)]
    pub gid_mappings: Vec<IdMapping>,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct IdMapping {
    #[serde(rename = "containerID")]
    pub container_id: u32,
    #[serde(rename = "hostID")]
    pub host_id: u32,
    pub size: u32,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hooks {
    /// Deprecated in 1.0.2 for createRuntime; run at the same moment.
    #[serde(default)]
    pub prestart: Vec<Hook>,
    #[serde(default)]
    pub create_runtime: Vec<Hook>,
    #[serde(default)]
    pub create_container: Vec<Hook>,
    #[serde(default)]
    pub start_container: Vec<Hook>,
    #[serde(default)]
    pub poststart: Vec<Hook>,
    #[serde(default)]
    pub poststop: Vec<Hook>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Hook {
    pub path: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: Vec<String>,
    /// Seconds; none means no limit.
    #[serde(default)]
    pub timeout: Option<i64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Linux {
    #[serde(default)]
    pub namespaces: Vec<Namespace>,
    #[serde(default)]
    pub uid_mappings: Vec<IdMapping>,
    #[serde(default)]
    pub gid_mappings: Vec<IdMapping>,
    #[serde(default)]
    pub devices: Vec<Device>,
    #[serde(default)]
    pub cgroups_path: Option<String>,
    #[serde(default)]
    pub resources: Option<Resources>,
    #[serde(default)]
    pub sysctl: BTreeMap<String, String>,
    #[serde(default)]
    pub seccomp: Option<Seccomp>,
    #[serde(default)]
    pub rootfs_propagation: Option<String>,
    #[serde(default)]
    pub masked_paths: Vec<String>,
    #[serde(default)]
    pub readonly_paths: Vec<String>,
    #[serde(default)]
    pub mount_label: Option<String>,
    #[serde(default)]
    pub intel_rdt: Option<serde_json::Value>,
    #[serde(default)]
    pub personality: Option<serde_json::Value>,
    #[serde(default)]
    pub time_offsets: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Namespace {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub path: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Device {
    #[serde(rename = "type")]
    pub kind: String,
    pub path: String,
    #[serde(default)]
    pub major: i64,
    #[serde(default)]
    pub minor: i64,
    #[serde(default)]
    pub file_mode: Option<u32>,
    #[serde(default)]
    pub uid: Option<u32>,
    #[serde(default)]
    pub gid: Option<u32>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Resources {
    #[serde(default)]
    pub devices: Vec<DeviceCgroup>,
    #[serde(default)]
    pub memory: Option<Memory>,
    #[serde(default)]
    pub cpu: Option<Cpu>,
    #[serde(default)]
    pub pids: Option<Pids>,
    #[serde(default, rename = "blockIO")]
    pub block_io: Option<BlockIo>,
    #[serde(default)]
    pub hugepage_limits: Vec<serde_json::Value>,
    #[serde(default)]
    pub network: Option<serde_json::Value>,
    #[serde(default)]
    pub rdma: Option<serde_json::Value>,
    #[serde(default)]
    pub unified: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct DeviceCgroup {
    pub allow: bool,
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub major: Option<i64>,
    #[serde(default)]
    pub minor: Option<i64>,
    #[serde(default)]
    pub access: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Memory {
    #[serde(default)]
    pub limit: Option<i64>,
    #[serde(default)]
    pub reservation: Option<i64>,
    #[serde(default)]
    pub swap: Option<i64>,
    #[serde(default)]
    pub kernel: Option<i64>,
    #[serde(default, rename = "kernelTCP")]
    pub kernel_tcp: Option<i64>,
    #[serde(default)]
    pub swappiness: Option<u64>,
    #[serde(default, rename = "disableOOMKiller")]
    pub disable_oom_killer: Option<bool>,
    #[serde(default)]
    pub use_hierarchy: Option<bool>,
    #[serde(default)]
    pub check_before_update: Option<bool>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Cpu {
    #[serde(default)]
    pub shares: Option<u64>,
    #[serde(default)]
    pub quota: Option<i64>,
    #[serde(default)]
    pub burst: Option<u64>,
    #[serde(default)]
    pub period: Option<u64>,
    #[serde(default)]
    pub realtime_runtime: Option<i64>,
    #[serde(default)]
    pub realtime_period: Option<u64>,
    #[serde(default)]
    pub cpus: Option<String>,
    #[serde(default)]
    pub mems: Option<String>,
    #[serde(default)]
    pub idle: Option<i64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Pids {
    pub limit: i64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BlockIo {
    #[serde(default)]
    pub weight: Option<u16>,
    #[serde(default)]
    pub leaf_weight: Option<u16>,
    #[serde(default)]
    pub weight_device: Vec<serde_json::Value>,
    #[serde(default)]
    pub throttle_read_bps_device: Vec<serde_json::Value>,
    #[serde(default)]
    pub throttle_write_bps_device: Vec<serde_json::Value>,
    #[serde(default, rename = "throttleReadIOPSDevice")]
    pub throttle_read_iops_device: Vec<serde_json::Value>,
    #[serde(default, rename = "throttleWriteIOPSDevice")]
    pub throttle_write_iops_device: Vec<serde_json::Value>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Seccomp {
    #[serde(default)]
    pub default_action: String,
    #[serde(default)]
    pub default_errno_ret: Option<u32>,
    #[serde(default)]
    pub architectures: Vec<String>,
    #[serde(default)]
    pub flags: Vec<String>,
    #[serde(default)]
    pub listener_path: Option<String>,
    #[serde(default)]
    pub listener_metadata: Option<String>,
    #[serde(default)]
    pub syscalls: Vec<SeccompSyscall>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeccompSyscall {
    #[serde(default)]
    pub names: Vec<String>,
    pub action: String,
    #[serde(default)]
    pub errno_ret: Option<u32>,
    #[serde(default)]
    pub args: Vec<SeccompArg>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeccompArg {
    pub index: u32,
    pub value: u64,
    #[serde(default)]
    pub value_two: u64,
    pub op: String,
}

/// `exec --process`: a process as `config.json`'s `process` writes it.
pub type ProcessFile = Process;
