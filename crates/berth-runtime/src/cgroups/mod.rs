//! One container's cgroup, on cgroup v1 or v2, behind [`CgroupManager`].
//!
//! ```text
//! CgroupVersion::detect()            which layout this machine has (hybrid counts as v1)
//! CgroupDriver::container_path()     "berth/<id>", or below --cgroup-parent
//! new_manager(&version, path)        V1Manager or V2Manager
//!   .create(&resources)              mkdir (every v1 hierarchy / v2 with controllers on), limits,
//!                                    device rules (v1 devices.deny/allow, v2 a BPF program)
//!   .add_process(pid)                or clone3(CLONE_INTO_CGROUP, open_for_clone_into()) on v2
//!   .apply / freeze / thaw / stats / processes / kill_all
//!   .delete()                        rmdir everywhere; gone already is fine
//! ```
//!
//! Resources are docker's numbers (v1 units); v2 conversions (shares → weight, memory+swap →
//! swap) happen in [`V2Manager`]. Kernel documentation: `Documentation/admin-guide/cgroup-v1/`
//! and `Documentation/admin-guide/cgroup-v2.rst`.

mod detect;
mod driver;
mod error;
pub mod fake;
mod files;
mod resources;
mod signal;
mod stats;
mod v1;
mod v2;

#[cfg(test)]
mod tests;

use std::fmt::Debug;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use nix::sys::signal::Signal;
use nix::unistd::Pid;

pub use detect::{CgroupVersion, V1Hierarchies, V2Root, MOUNTINFO, UNIFIED_ROOT};
pub use driver::{CgroupDriver, DEFAULT_PARENT};
pub use error::CgroupError;
pub use resources::{
    blkio_weight_to_io_weight, cpu_shares_to_weight, Limit, Resources, DEFAULT_CPU_PERIOD,
};
pub use stats::{BlockIo, CgroupStats};
pub use v1::V1Manager;
pub use v2::V2Manager;

/// One container's cgroup. Every path is the same cgroup: one directory per v1 hierarchy, or
/// one directory in the v2 unified hierarchy.
pub trait CgroupManager: Debug + Send + Sync {
    /// The cgroup's path relative to the hierarchy root(s), e.g. `berth/<id>`.
    fn path(&self) -> &Path;

    /// Makes the cgroup (and missing parents) and applies `resources`. An existing cgroup is
    /// reused, so that a retry after a crash works.
    fn create(&self, resources: &Resources) -> Result<(), CgroupError>;

    /// Moves a process, with all its threads, into the cgroup.
    fn add_process(&self, pid: Pid) -> Result<(), CgroupError>;

    /// Changes limits on a live cgroup (`docker update`); `None` fields are left alone.
    fn apply(&self, resources: &Resources) -> Result<(), CgroupError>;

    /// Stops every process in the cgroup and returns once all are frozen (`docker pause`).
    fn freeze(&self) -> Result<(), CgroupError>;

    /// Lets the processes run again and returns once the cgroup is thawed.
    fn thaw(&self) -> Result<(), CgroupError>;

    /// Usage counters, including how many processes the OOM killer killed.
    fn stats(&self) -> Result<CgroupStats, CgroupError>;

    /// How many processes the OOM killer killed (what a monitor reads after
    /// each exit): one small file rather than all of [`Self::stats`].
    fn oom_kills(&self) -> Result<Option<u64>, CgroupError> {
        self.stats().map(|stats| stats.oom_kills)
    }

    /// The processes in the cgroup; none if the cgroup is gone.
    fn processes(&self) -> Result<Vec<Pid>, CgroupError>;

    /// Sends `signal` to every process in the cgroup.
    fn kill_all(&self, signal: Signal) -> Result<(), CgroupError>;

    /// Removes the cgroup everywhere, retrying briefly while the last processes exit. A
    /// cgroup that is already gone is not an error.
    fn delete(&self) -> Result<(), CgroupError>;

    /// A directory fd of the cgroup for `clone3(CLONE_INTO_CGROUP)`, which starts the child
    /// inside the cgroup with no `add_process` race; `None` on v1, which has no such thing.
    fn open_for_clone_into(&self) -> Result<Option<OwnedFd>, CgroupError>;

    /// Write-only descriptors through which a new single-threaded process moves itself into
    /// the cgroup ([`join_self`]). On v1 they are the `tasks` files of every hierarchy: a
    /// thread that moves only itself skips the kernel's global threadgroup lock, whose first
    /// taking waits ~10 ms for an RCU grace period (a pid written to `cgroup.procs` takes it).
    /// On v2, `cgroup.procs` (v2 starts containers with `CLONE_INTO_CGROUP` instead).
    fn open_self_join(&self) -> Result<Vec<OwnedFd>, CgroupError>;
}

/// Moves the calling process into the cgroup whose [`CgroupManager::open_self_join`]
/// descriptors these are. The caller must be single-threaded (a freshly forked or cloned
/// child): on v1 only the calling thread moves.
pub fn join_self(files: &[OwnedFd]) -> std::io::Result<()> {
    for file in files {
        // `0` means the writer itself; one write(2), as cgroupfs expects.
        nix::unistd::write(file, b"0")?;
    }
    Ok(())
}

/// The manager for `path` (relative to the hierarchy roots) on this layout.
pub fn new_manager(version: &CgroupVersion, path: PathBuf) -> Box<dyn CgroupManager> {
    match version {
        CgroupVersion::V1(hierarchies) => Box::new(V1Manager::new(hierarchies.clone(), path)),
        CgroupVersion::V2(unified) => Box::new(V2Manager::new(unified.root.clone(), path)),
    }
}
