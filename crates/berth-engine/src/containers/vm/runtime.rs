//! What the engine's services ask of a running VM container. Its processes
//! on the host are the shim, QEMU and virtiofsd, in the container's cgroup;
//! its first process (`ContainerRef::pid`) is the shim, which relays every
//! catchable signal to the process in the guest.

use std::path::PathBuf;

use berth_runtime::cgroups::{BlockIo, CgroupStats, Limit, Resources};
use berth_runtime::{
    ContainerRef, LaunchError, NamespaceRuntime, NetworkIo, ProcessSpec, ProcessTable, Runtime,
    RuntimeError,
};
use nix::sys::signal::Signal;
use nix::unistd::Pid;

/// The backend's name in errors.
const BACKEND: &str = "VM";

/// How long `stats` waits for the guest's counters.
const GUEST_STATS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

/// The microVM backend. Cgroup work (freeze, stats, update, the final
/// kill) is the namespace backend's: the cgroup holds the whole VM.
#[derive(Debug)]
pub struct VmRuntime {
    cgroups: NamespaceRuntime,
    /// berth's roots, where a container's root is mounted (in its shim's
    /// mount namespace).
    root: PathBuf,
    run_root: PathBuf,
}

impl VmRuntime {
    pub fn new(root: PathBuf, run_root: PathBuf) -> VmRuntime {
        VmRuntime {
            cgroups: NamespaceRuntime,
            root,
            run_root,
        }
    }

    fn exec_socket(&self, container: ContainerRef<'_>) -> PathBuf {
        let paths =
            crate::containers::paths::ContainerPaths::new(&self.root, &self.run_root, container.id);
        super::exec::socket_path(&paths.vm)
    }

    fn unsupported(operation: &'static str) -> RuntimeError {
        RuntimeError::Unsupported {
            operation,
            backend: BACKEND,
        }
    }
}

impl Runtime for VmRuntime {
    fn name(&self) -> &'static str {
        super::RUNTIME_NAME
    }

    /// To the shim, which relays it; SIGKILL (and SIGSTOP) cannot be
    /// relayed, and need not be: SIGKILL ends the shim and QEMU with it,
    /// the process's end as far as anyone can tell (exit code 137).
    fn signal(&self, container: ContainerRef<'_>, signal: Signal) -> Result<(), RuntimeError> {
        self.cgroups.signal(container, signal)
    }

    /// Freezes the whole VM (its vCPUs, QEMU's threads, virtiofsd).
    fn pause(&self, container: ContainerRef<'_>) -> Result<(), RuntimeError> {
        self.cgroups.pause(container)
    }

    fn resume(&self, container: ContainerRef<'_>) -> Result<(), RuntimeError> {
        self.cgroups.resume(container)
    }

    /// The guest's processes are not host processes: `top` asks the agent
    /// ([`Runtime::process_table`]).
    fn processes(&self, _container: ContainerRef<'_>) -> Result<Vec<i32>, RuntimeError> {
        Err(Self::unsupported("listing host processes"))
    }

    /// The guest's processes in the container's pid namespace, as `ps -ef`
    /// shows them (the agent reads the guest's /proc); other `ps` options
    /// would need a `ps` in the guest, and are refused.
    fn process_table(
        &self,
        container: ContainerRef<'_>,
        ps_args: &[String],
    ) -> Result<Option<ProcessTable>, RuntimeError> {
        if !ps_args.is_empty() && ps_args != ["-ef"] {
            return Err(Self::unsupported("top with ps options other than -ef"));
        }
        super::exec::list_processes(&self.exec_socket(container))
            .map(Some)
            .map_err(|message| RuntimeError::Exec(LaunchError::Prepare(message)))
    }

    /// The guest's own counters (its memory is the container's, its kernel
    /// included; the limit is the guest's RAM), read by the agent. A VM that
    /// does not answer in time (paused: its vCPUs and the shim are frozen)
    /// gets its cost on the host instead: QEMU's memory and CPU time.
    fn stats(&self, container: ContainerRef<'_>) -> Result<CgroupStats, RuntimeError> {
        match super::exec::read_stats(&self.exec_socket(container), GUEST_STATS_TIMEOUT) {
            Ok(guest) => Ok(CgroupStats {
                memory_usage: Some(guest.memory_used),
                memory_limit: Some(Limit::Value(guest.memory_total)),
                memory_inactive_file: Some(guest.memory_inactive_file),
                oom_kills: Some(guest.oom_kills),
                cpu_usage_ns: Some(guest.cpu_ns),
                pids_current: Some(guest.tasks),
                // The container's files are on virtio-fs: no block device.
                block_io: Some(BlockIo::default()),
            }),
            Err(message) => {
                tracing::debug!(%message, "no counters from the guest; the VM's host cost instead");
                self.cgroups.stats(container)
            }
        }
    }

    /// The container's veths (`eth0`, `eth1`, …) in the shim's network
    /// namespace: every packet of the guest's cards crosses them (the
    /// bridges and the taps behind them would count them again).
    fn network_io(&self, container: ContainerRef<'_>) -> NetworkIo {
        if container.pid <= 0 {
            return NetworkIo::default();
        }
        let Ok(table) = fs_err::read_to_string(format!("/proc/{}/net/dev", container.pid)) else {
            return NetworkIo::default();
        };
        veths_io(&table)
    }

    /// CPU and I/O limits apply to the VM's processes; memory and pids
    /// limits are the guest's size and the guest's business, refused here.
    fn update(
        &self,
        container: ContainerRef<'_>,
        resources: &Resources,
    ) -> Result<(), RuntimeError> {
        if resources.memory.is_some()
            || resources.memory_swap.is_some()
            || resources.memory_reservation.is_some()
            || resources.pids_limit.is_some()
        {
            return Err(Self::unsupported("updating memory or pids limits"));
        }
        self.cgroups.update(container, resources)
    }

    /// Through the shim, which starts the process in the guest (see
    /// `exec.rs`): the pid is the host relay's, which exits with the
    /// process's exit code.
    fn exec(
        &self,
        container: ContainerRef<'_>,
        process: &ProcessSpec,
        stdio: berth_runtime::Stdio,
    ) -> Result<Pid, RuntimeError> {
        super::exec::start(&self.exec_socket(container), process, stdio).map_err(RuntimeError::Exec)
    }

    /// The root as the shim built it, in the shim's mount namespace
    /// (`/proc/<shim>/root` is the host's `/` as the shim sees it; the
    /// container's root is mounted at its rootfs path there). What the
    /// guest already read of a file changed here may stay in its cache.
    fn root(&self, container: ContainerRef<'_>) -> PathBuf {
        let paths =
            crate::containers::paths::ContainerPaths::new(&self.root, &self.run_root, container.id);
        let merged = paths.rootfs().merged;
        PathBuf::from(format!("/proc/{}/root", container.pid))
            .join(merged.strip_prefix("/").unwrap_or(&merged))
    }

    /// The guest caches its root (`always`): it drops its clean caches so
    /// that it reads the copied files anew.
    fn root_changed(&self, container: ContainerRef<'_>) -> Result<(), RuntimeError> {
        super::exec::drop_caches(&self.exec_socket(container), GUEST_STATS_TIMEOUT)
            .map_err(|message| RuntimeError::Exec(LaunchError::Prepare(message)))
    }

    fn delete(&self, container: ContainerRef<'_>) -> Result<(), RuntimeError> {
        self.cgroups.delete(container)
    }
}

/// The counters of the container's veths (`eth*`) in a `/proc/PID/net/dev`
/// table of the shim's namespace, summed: not `lo`, the bridges or the taps.
fn veths_io(table: &str) -> NetworkIo {
    let mut total = NetworkIo::default();
    for name in table
        .lines()
        .skip(2)
        .filter_map(|line| line.split_once(':'))
        .map(|(name, _)| name.trim())
        .filter(|name| name.starts_with("eth"))
    {
        let io = berth_runtime::backend::interface_io(table, name);
        total.received += io.received;
        total.sent += io.sent;
    }
    total
}

#[cfg(test)]
mod tests {
    #[test]
    fn net_io_counts_every_veth_once() {
        let table = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     100       1    0    0    0     0          0         0      100       1    0    0    0     0       0          0
  eth0:    1000      10    0    0    0     0          0         0     2000      20    0    0    0     0       0          0
  tap0:    2000      20    0    0    0     0          0         0     1000      10    0    0    0     0       0          0
   br0:    2000      20    0    0    0     0          0         0     1000      10    0    0    0     0       0          0
  eth1:      30       1    0    0    0     0          0         0       40       1    0    0    0     0       0          0
";
        let io = super::veths_io(table);
        assert_eq!((io.received, io.sent), (1030, 2040));
    }
}
