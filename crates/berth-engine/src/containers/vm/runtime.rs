//! What the engine's services ask of a running VM container. Its processes
//! on the host are the shim, QEMU and virtiofsd, in the container's cgroup;
//! its first process (`ContainerRef::pid`) is the shim, which relays every
//! catchable signal to the process in the guest.

use std::path::PathBuf;

use berth_runtime::cgroups::{CgroupStats, Resources};
use berth_runtime::{
    ContainerRef, LaunchError, NamespaceRuntime, NetworkIo, ProcessSpec, ProcessTable, Runtime,
    RuntimeError,
};
use nix::sys::signal::Signal;
use nix::unistd::Pid;

/// The backend's name in errors.
const BACKEND: &str = "VM";

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

    /// The VM's cost on the host: QEMU's memory (the guest's RAM as far as
    /// it was touched), CPU time of its vCPUs and devices.
    fn stats(&self, container: ContainerRef<'_>) -> Result<CgroupStats, RuntimeError> {
        self.cgroups.stats(container)
    }

    /// No network yet: a VM container is `--network none`.
    fn network_io(&self, _container: ContainerRef<'_>) -> NetworkIo {
        NetworkIo::default()
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

    fn delete(&self, container: ContainerRef<'_>) -> Result<(), RuntimeError> {
        self.cgroups.delete(container)
    }
}
