//! What the runtime needs to start one container: plain, validated data
//! (the engine builds it from the image config and the user's flags).

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::capabilities::Capability;
use crate::devices::{DeviceNode, DeviceRule};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ContainerSpec {
    pub id: String,
    /// The container's root directory. With `overlay`, the first process
    /// mounts overlayfs there inside its own mount namespace (so the host
    /// never holds the mount and nothing needs unmounting when it exits);
    /// without, it must already be a directory tree to use as is.
    pub rootfs: PathBuf,
    pub overlay: Option<OverlaySpec>,
    pub readonly_rootfs: bool,
    pub hostname: String,
    pub process: ProcessSpec,
    /// User mounts, applied in order after the standard ones.
    pub mounts: Vec<MountSpec>,
    /// Per-container files bind-mounted over /etc/hosts, /etc/hostname,
    /// /etc/resolv.conf (host path, container path).
    pub etc_files: Vec<(PathBuf, PathBuf)>,
    pub network: NetworkMode,
    /// Docker's masked and read-only paths (empty with --privileged).
    pub masked_paths: Vec<String>,
    pub readonly_paths: Vec<String>,
    pub privileged: bool,
    /// `--init`: pid 1 is berth's own minimal init, which forwards signals
    /// and reaps zombies; the command runs as its child.
    pub init: bool,
    /// Size of /dev/shm in bytes (Docker's default 64 MiB).
    pub shm_size: u64,
    /// cgroup v1 controller mount points, so the container sees its own
    /// cgroup under /sys/fs/cgroup (empty on v2).
    pub cgroup_v1_hierarchies: Vec<String>,
    pub cgroup_v2: bool,
    /// A private cgroup namespace (Docker's default); false for
    /// `--cgroupns host`.
    pub cgroup_namespace: bool,
    /// Device nodes made in the container beyond Docker's default ones:
    /// `--device`, and the host's devices with `--privileged`.
    #[serde(default)]
    pub devices: Vec<DeviceNode>,
    /// The container's device rules ([`crate::devices::container_rules`]),
    /// which its cgroup gets through `Resources::devices` when it is created.
    #[serde(default)]
    pub device_rules: Vec<DeviceRule>,
    /// The host's namespaces the container shares instead of new ones of its own
    /// (`--pid host`, `--ipc host`, `--uts host`).
    #[serde(default)]
    pub host_namespaces: HostNamespaces,
    /// `--ipc none`: a private IPC namespace with no /dev/shm.
    #[serde(default)]
    pub no_shm: bool,
    /// Another container's namespaces the container joins instead
    /// (`--pid container:`, `--ipc container:`).
    #[serde(default)]
    pub joined_namespaces: JoinedNamespaces,
    /// `--domainname`: the NIS domain name of the container's UTS namespace (empty: none).
    #[serde(default)]
    pub domainname: String,
}

/// Another container's namespaces a container joins, as the `/proc/PID/ns`
/// files of that container's process: its pid namespace (`--pid
/// container:`), and its IPC namespace with its /dev/shm (`--ipc
/// container:`; the /dev/shm is found in the donor's mount namespace).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JoinedNamespaces {
    pub pid: Option<PathBuf>,
    pub ipc: Option<PathBuf>,
    /// The donor's mount namespace, whose /dev/shm becomes the container's.
    pub shm_of: Option<PathBuf>,
}

/// Which of the host's namespaces a container joins rather than getting its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostNamespaces {
    pub pid: bool,
    pub ipc: bool,
    pub uts: bool,
}

/// The overlay layers of a container root.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverlaySpec {
    /// Bottom first.
    pub lower: Vec<PathBuf>,
    pub upper: PathBuf,
    pub work: PathBuf,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProcessSpec {
    pub args: Vec<String>,
    pub env: Vec<String>,
    pub cwd: String,
    pub uid: u32,
    pub gid: u32,
    pub additional_gids: Vec<u32>,
    pub capabilities: BTreeSet<Capability>,
    pub no_new_privileges: bool,
    pub rlimits: Vec<Rlimit>,
    /// Compiled seccomp filter, or None for `seccomp=unconfined`.
    pub seccomp: Option<crate::seccomp::Filter>,
    pub tty: bool,
    /// With `tty`: the terminal's size (rows, columns) from its first
    /// moment, as OCI's `consoleSize`. Set later, a program that reads it
    /// at start (`stty size`, an editor) could see 0×0.
    #[serde(default)]
    pub console_size: Option<(u16, u16)>,
    /// `--oom-score-adj`, written to /proc/self/oom_score_adj before `execve`; `None` keeps
    /// the inherited score.
    #[serde(default)]
    pub oom_score_adj: Option<i32>,
}

/// Docker's `--ulimit` names and the `RLIMIT_*` resource each sets.
pub const RLIMITS: &[(&str, u32)] = &[
    ("core", libc::RLIMIT_CORE),
    ("cpu", libc::RLIMIT_CPU),
    ("data", libc::RLIMIT_DATA),
    ("fsize", libc::RLIMIT_FSIZE),
    ("locks", libc::RLIMIT_LOCKS),
    ("memlock", libc::RLIMIT_MEMLOCK),
    ("msgqueue", libc::RLIMIT_MSGQUEUE),
    ("nice", libc::RLIMIT_NICE),
    ("nofile", libc::RLIMIT_NOFILE),
    ("nproc", libc::RLIMIT_NPROC),
    ("rss", libc::RLIMIT_RSS),
    ("rtprio", libc::RLIMIT_RTPRIO),
    ("rttime", libc::RLIMIT_RTTIME),
    ("sigpending", libc::RLIMIT_SIGPENDING),
    ("stack", libc::RLIMIT_STACK),
];

/// The resource a Docker `--ulimit` name sets.
pub fn rlimit_resource(name: &str) -> Option<u32> {
    RLIMITS
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, resource)| *resource)
}

/// The Docker `--ulimit` name of a resource.
pub fn rlimit_name(resource: u32) -> Option<&'static str> {
    RLIMITS
        .iter()
        .find(|(_, known)| *known == resource)
        .map(|(name, _)| *name)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rlimit {
    /// `libc::RLIMIT_*`
    pub resource: u32,
    pub soft: u64,
    pub hard: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NetworkMode {
    /// A new network namespace with only loopback.
    New,
    /// The host's network namespace.
    Host,
    /// Join an existing namespace (e.g. another container's).
    Join(PathBuf),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MountKind {
    Bind {
        source: PathBuf,
        recursive: bool,
    },
    Tmpfs {
        size: Option<u64>,
        mode: Option<u32>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountSpec {
    pub kind: MountKind,
    /// Absolute path inside the container.
    pub destination: PathBuf,
    pub readonly: bool,
    pub nosuid: bool,
    pub nodev: bool,
    pub noexec: bool,
}

/// Docker's default masked paths (moby `oci/defaults.go`).
pub const DEFAULT_MASKED_PATHS: &[&str] = &[
    "/proc/asound",
    "/proc/acpi",
    "/proc/interrupts",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
];

/// Docker's default read-only paths.
pub const DEFAULT_READONLY_PATHS: &[&str] = &[
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
];

/// PATH when neither image nor user sets one (Docker's default).
pub const DEFAULT_PATH: &str = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
