//! The seam between the engine and an isolation backend: what the engine's
//! services (stop/kill, pause, update, top, stats, exec, cp, rm and the
//! repair of a container whose monitor died) ask of a container, without
//! knowing whether it is a set of namespaces on this kernel or a microVM.
//!
//! ```text
//! engine service ── Runtime ──┬── NamespaceRuntime  (this crate: cgroups, /proc, setns)
//!                             └── (a VM backend: the guest agent over vsock)
//! ```
//!
//! A container's create and start are its monitor's work (`berth-engine`'s
//! `containers/monitor`, which drives [`crate::launch`] and [`crate::Sandbox`],
//! the two-phase start the warm pool uses); everything done to a container
//! once it runs goes through this trait. The engine holds one per backend in
//! its configuration and tests put a recording fake in its place.

use std::fmt::Debug;
use std::path::PathBuf;

use nix::sys::signal::Signal;
use nix::unistd::Pid;

use crate::cgroups::{
    new_manager, CgroupDriver, CgroupError, CgroupManager, CgroupStats, CgroupVersion, Resources,
};
use crate::{LaunchError, ProcessSpec, Stdio};

/// The container a call is about: its id and, while it runs, its first
/// process as the host sees it (0 when it has none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContainerRef<'a> {
    pub id: &'a str,
    pub pid: i32,
}

/// Bytes through a container's network interfaces, loopback excluded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetworkIo {
    pub received: u64,
    pub sent: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("failed to {action} the cgroup of container {id}")]
    Cgroup {
        action: &'static str,
        id: String,
        #[source]
        source: CgroupError,
    },
    #[error("failed to signal container {id}")]
    Signal {
        id: String,
        #[source]
        source: nix::Error,
    },
    #[error(transparent)]
    Exec(LaunchError),
    #[error("container {id} has no running process")]
    NotRunning { id: String },
    #[error("{operation} is not supported for {backend} containers yet")]
    Unsupported {
        operation: &'static str,
        backend: &'static str,
    },
}

/// `top`'s answer: `ps`'s column titles and one row per process, the last
/// column (the command) whole.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcessTable {
    pub titles: Vec<String>,
    pub processes: Vec<Vec<String>>,
}

/// What the engine does to a container that exists (see the module doc).
pub trait Runtime: Debug + Send + Sync {
    /// The backend's name, as `inspect` and errors show it.
    fn name(&self) -> &'static str;

    /// Sends `signal` to the container's first process; a process that is
    /// already gone is not an error (it exited meanwhile).
    fn signal(&self, container: ContainerRef<'_>, signal: Signal) -> Result<(), RuntimeError>;

    /// Freezes every process of the container.
    fn pause(&self, container: ContainerRef<'_>) -> Result<(), RuntimeError>;

    /// Thaws what [`Runtime::pause`] froze.
    fn resume(&self, container: ContainerRef<'_>) -> Result<(), RuntimeError>;

    /// The container's processes, as host pids (`top`).
    fn processes(&self, container: ContainerRef<'_>) -> Result<Vec<i32>, RuntimeError>;

    /// `top`'s table where the backend makes it itself (a VM container's
    /// processes are the guest's); `None`: the engine runs the host's `ps`
    /// and keeps the rows of [`Runtime::processes`].
    fn process_table(
        &self,
        _container: ContainerRef<'_>,
        _ps_args: &[String],
    ) -> Result<Option<ProcessTable>, RuntimeError> {
        Ok(None)
    }

    /// Memory, CPU, pids and block I/O counters (`stats`).
    fn stats(&self, container: ContainerRef<'_>) -> Result<CgroupStats, RuntimeError>;

    /// Network counters (`stats`' NET I/O); zero when it has no process.
    fn network_io(&self, container: ContainerRef<'_>) -> NetworkIo;

    /// Applies new limits to the running container (`update`).
    fn update(
        &self,
        container: ContainerRef<'_>,
        resources: &Resources,
    ) -> Result<(), RuntimeError>;

    /// Starts `process` in the running container; the caller becomes its
    /// parent and waits for it. The caller must run no other thread that
    /// forks during the call (the namespace backend joins the container's
    /// pid namespace for its fork, and leaves it again before returning, so
    /// a monitor can run health probes and still clone the next run).
    fn exec(
        &self,
        container: ContainerRef<'_>,
        process: &ProcessSpec,
        stdio: Stdio,
    ) -> Result<Pid, RuntimeError>;

    /// The running container's root file system as this host can reach it
    /// (`cp` and `diff` of a running container).
    fn root(&self, container: ContainerRef<'_>) -> PathBuf;

    /// Files under [`Runtime::root`] were changed from the host (`cp` into
    /// the running container): a backend that caches them elsewhere (a
    /// VM's guest) forgets what it cached. Nothing to do for namespaces.
    fn root_changed(&self, _container: ContainerRef<'_>) -> Result<(), RuntimeError> {
        Ok(())
    }

    /// Kills whatever is left of the container and removes what the
    /// backend made for it (after its exit, or for a container whose
    /// monitor died). Idempotent: a container with nothing left is fine.
    fn delete(&self, container: ContainerRef<'_>) -> Result<(), RuntimeError>;
}

/// The namespace backend: a container is a cgroup (`berth/<id>` on this
/// host's cgroup layout) whose processes share namespaces.
#[derive(Debug, Default)]
pub struct NamespaceRuntime;

impl NamespaceRuntime {
    /// The container's cgroup on this machine's layout.
    pub fn cgroup(&self, id: &str) -> Result<Box<dyn CgroupManager>, CgroupError> {
        let version = CgroupVersion::detect()?;
        let path = CgroupDriver::default().container_path(None, id)?;
        Ok(new_manager(&version, path))
    }

    fn with_cgroup<T>(
        &self,
        container: ContainerRef<'_>,
        action: &'static str,
        work: impl FnOnce(&dyn CgroupManager) -> Result<T, CgroupError>,
    ) -> Result<T, RuntimeError> {
        self.cgroup(container.id)
            .and_then(|cgroup| work(cgroup.as_ref()))
            .map_err(|source| RuntimeError::Cgroup {
                action,
                id: container.id.to_owned(),
                source,
            })
    }
}

/// How long [`NamespaceRuntime::delete`] waits for the processes it killed:
/// on a loaded host a killed process can take longer to exit than the
/// cgroup's removal retries.
const KILL_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

impl Runtime for NamespaceRuntime {
    fn name(&self) -> &'static str {
        "runc"
    }

    fn signal(&self, container: ContainerRef<'_>, signal: Signal) -> Result<(), RuntimeError> {
        if container.pid <= 0 {
            return Err(RuntimeError::NotRunning {
                id: container.id.to_owned(),
            });
        }
        match nix::sys::signal::kill(Pid::from_raw(container.pid), signal) {
            Ok(()) | Err(nix::Error::ESRCH) => Ok(()),
            Err(source) => Err(RuntimeError::Signal {
                id: container.id.to_owned(),
                source,
            }),
        }
    }

    fn pause(&self, container: ContainerRef<'_>) -> Result<(), RuntimeError> {
        self.with_cgroup(container, "freeze", |cgroup| cgroup.freeze())
    }

    fn resume(&self, container: ContainerRef<'_>) -> Result<(), RuntimeError> {
        self.with_cgroup(container, "thaw", |cgroup| cgroup.thaw())
    }

    fn processes(&self, container: ContainerRef<'_>) -> Result<Vec<i32>, RuntimeError> {
        let pids = self.with_cgroup(container, "list the processes of", |cgroup| {
            cgroup.processes()
        })?;
        Ok(pids.into_iter().map(Pid::as_raw).collect())
    }

    fn stats(&self, container: ContainerRef<'_>) -> Result<CgroupStats, RuntimeError> {
        self.with_cgroup(container, "read", |cgroup| cgroup.stats())
    }

    fn network_io(&self, container: ContainerRef<'_>) -> NetworkIo {
        if container.pid <= 0 {
            return NetworkIo::default();
        }
        // The container's network namespace's table, through its first process.
        fs_err::read_to_string(format!("/proc/{}/net/dev", container.pid))
            .map(|table| network_io_from_table(&table))
            .unwrap_or_default()
    }

    fn update(
        &self,
        container: ContainerRef<'_>,
        resources: &Resources,
    ) -> Result<(), RuntimeError> {
        self.with_cgroup(container, "update", |cgroup| cgroup.apply(resources))
    }

    fn exec(
        &self,
        container: ContainerRef<'_>,
        process: &ProcessSpec,
        stdio: Stdio,
    ) -> Result<Pid, RuntimeError> {
        if container.pid <= 0 {
            return Err(RuntimeError::NotRunning {
                id: container.id.to_owned(),
            });
        }
        let cgroup = self
            .cgroup(container.id)
            .map_err(|source| RuntimeError::Cgroup {
                action: "join",
                id: container.id.to_owned(),
                source,
            })?;
        crate::exec::exec_in(container.pid, process, stdio, cgroup.as_ref())
            .map_err(RuntimeError::Exec)
    }

    fn root(&self, container: ContainerRef<'_>) -> PathBuf {
        PathBuf::from(format!("/proc/{}/root", container.pid))
    }

    fn delete(&self, container: ContainerRef<'_>) -> Result<(), RuntimeError> {
        self.with_cgroup(container, "delete", |cgroup| {
            let deadline = std::time::Instant::now() + KILL_WAIT;
            loop {
                let _ = cgroup.kill_all(Signal::SIGKILL);
                let left = cgroup.processes().map(|pids| pids.len()).unwrap_or(0);
                if left == 0 || std::time::Instant::now() >= deadline {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            cgroup.delete()
        })
    }
}

/// `(received, sent)` bytes summed over /proc/net/dev's interfaces other
/// than `lo`.
pub fn network_io_from_table(table: &str) -> NetworkIo {
    table_io(table, |name| name != "lo")
}

/// One interface's counters in a `/proc/PID/net/dev` table.
pub fn interface_io(table: &str, interface: &str) -> NetworkIo {
    table_io(table, |name| name == interface)
}

fn table_io(table: &str, counted: impl Fn(&str) -> bool) -> NetworkIo {
    let mut total = NetworkIo::default();
    for line in table.lines().skip(2) {
        let Some((name, counters)) = line.split_once(':') else {
            continue;
        };
        if !counted(name.trim()) {
            continue;
        }
        let fields: Vec<u64> = counters
            .split_whitespace()
            .map(|field| field.parse().unwrap_or(0))
            .collect();
        // Receive: bytes packets errs drop fifo frame compressed multicast; then transmit.
        total.received += fields.first().copied().unwrap_or(0);
        total.sent += fields.get(8).copied().unwrap_or(0);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_counters_leave_out_loopback() {
        let table = "Inter-|   Receive                                                |  Transmit\n \
face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    \
lo:    1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0          0\n  \
eth0:    1500      12    0    0    0     0          0         0      700       7    0    0    0     0       0          0\n  \
eth1:     500       2    0    0    0     0          0         0      300       3    0    0    0     0       0          0\n";
        assert_eq!(
            network_io_from_table(table),
            NetworkIo {
                received: 2000,
                sent: 1000
            }
        );
        assert_eq!(
            interface_io(table, "eth1"),
            NetworkIo {
                received: 500,
                sent: 300
            }
        );
    }

    #[test]
    fn a_container_without_a_process_cannot_be_signalled() {
        let error = NamespaceRuntime
            .signal(ContainerRef { id: "abc", pid: 0 }, Signal::SIGTERM)
            .unwrap_err();
        assert!(matches!(error, RuntimeError::NotRunning { .. }));
    }
}
