//! Crash safety: a container whose monitor died (kill -9, host crash) is
//! found by the next command that looks at it and made consistent: marked
//! exited, its processes killed, its cgroup and root mount removed.

use berth_runtime::cgroups::{new_manager, CgroupDriver, CgroupVersion};
use berth_runtime::rootfs::unmount_rootfs;
use berth_store::Store;
use nix::sys::signal::Signal;

use super::lookup::Container;
use super::monitor::write_state;
use super::paths::ContainerPaths;
use super::state::{now, process_alive, Status};
use crate::EngineConfig;

pub fn reconcile(store: &Store, config: &EngineConfig, mut container: Container) -> Container {
    let state = &container.state;
    if !state.is_running() || process_alive(state.monitor_pid, state.monitor_start_time) {
        return container;
    }
    // Read again: the state we hold may predate a restart by another
    // process (a new monitor), and killing is not undoable.
    if let Some(fresh) = super::monitor::read_state(store, &container.record.id) {
        if !fresh.is_running() || process_alive(fresh.monitor_pid, fresh.monitor_start_time) {
            container.state = fresh;
            return container;
        }
    }
    let id = container.record.id.clone();
    tracing::debug!(container = %id, "monitor is gone; reconciling");
    let paths = ContainerPaths::new(&config.root, &config.run_root, &id);
    if let Ok(version) = CgroupVersion::detect() {
        if let Ok(path) = CgroupDriver::default().container_path(None, &id) {
            let cgroup = new_manager(&version, path);
            let _ = cgroup.kill_all(Signal::SIGKILL);
            if let Err(error) = cgroup.delete() {
                tracing::warn!(%error, "failed to delete the cgroup of a crashed container");
            }
        }
    }
    crate::networks::disconnect_container(
        store,
        &mut berth_net::kernel::HostKernel::new(),
        &id,
        None,
    );
    if let Err(error) = unmount_rootfs(&paths.rootfs()) {
        tracing::warn!(%error, "failed to unmount the root of a crashed container");
    }
    let state = &mut container.state;
    state.status = Status::Exited;
    // Docker reports a container whose shim vanished as killed.
    state.exit_code = 137;
    state.pid = 0;
    state.finished_at = now();
    state.error = "the container's monitor process exited unexpectedly".to_owned();
    write_state(store, &id, state);
    if container.record.run.auto_remove {
        super::remove::remove_files_and_row(store, &paths, &id);
    }
    container
}
