//! Everything that can go wrong while managing a container's cgroup.
//!
//! `path` fields name the cgroupfs file or directory a call failed on; `value` fields hold
//! exactly what was written, so a limit the kernel rejects (for example a memory limit below
//! current usage, `EBUSY`) reads as "failed to write "1048576" to …/memory.limit_in_bytes".

use std::io;
use std::path::PathBuf;

use nix::sys::signal::Signal;
use nix::unistd::Pid;

/// Why a cgroup operation failed.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    #[error("failed to read {path:?}")]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to parse {path:?}: {reason}")]
    Parse { path: PathBuf, reason: String },
    #[error("failed to write {value:?} to {path:?}")]
    Write {
        path: PathBuf,
        value: String,
        #[source]
        source: io::Error,
    },
    #[error("failed to create cgroup directory {path:?}")]
    CreateDir {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to remove cgroup directory {path:?}")]
    RemoveDir {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to open cgroup directory {path:?}")]
    OpenDir {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to open cgroup file {path:?}")]
    OpenFile {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to find a cgroup file system in {mountinfo:?}")]
    NoCgroupFs { mountinfo: PathBuf },
    #[error("failed to apply resources: the {controller} controller is not available at {path:?}")]
    ControllerUnavailable {
        controller: &'static str,
        path: PathBuf,
    },
    #[error("failed to apply resources: {resource} is not supported on cgroup v2")]
    UnsupportedOnV2 { resource: &'static str },
    #[error(
        "failed to apply resources: the memory+swap limit {memory_swap} is below the memory \
         limit {memory}"
    )]
    SwapBelowMemory { memory: u64, memory_swap: u64 },
    #[error("failed to apply resources: a memory+swap limit needs a memory limit on cgroup v2")]
    SwapWithoutMemory,
    #[error("failed to {action} cgroup {path:?}: still {state:?} after {waited_ms} ms")]
    FreezeTimeout {
        action: &'static str,
        path: PathBuf,
        state: String,
        waited_ms: u128,
    },
    #[error("failed to send {signal} to process {pid}")]
    Signal {
        pid: Pid,
        signal: Signal,
        #[source]
        source: nix::Error,
    },
    #[error("failed to {action} the device program of cgroup {path:?}")]
    DeviceProgram {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("invalid cgroup parent {parent:?}: {reason}")]
    InvalidParent {
        parent: String,
        reason: &'static str,
    },
}
