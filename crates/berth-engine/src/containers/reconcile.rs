//! Crash safety: a container whose monitor died (kill -9, host crash) is
//! found by the next command that looks at it and made consistent: marked
//! exited (or removed, with `--rm`), its processes killed, its cgroup, root
//! mount, addresses, veths and published ports removed.
//!
//! Two signs say a monitor died: a running state whose monitor process is
//! gone, and a start record (`monitor/lock.rs`) nobody holds — written
//! before the monitor is forked, so that a monitor killed before it first
//! recorded anything (the container still `created`) is found too.

use std::time::Duration;

use berth_runtime::rootfs::unmount_rootfs;
use berth_store::Store;

use super::lookup::Container;
use super::monitor::lock::{MonitorLock, Taken};
use super::monitor::{read_state, write_state};
use super::paths::ContainerPaths;
use super::state::{now, process_alive, ContainerState, Status};
use crate::EngineConfig;

/// How long the first process of a container whose monitor is known to be
/// dead may keep the start record (it holds a copy of the descriptor until
/// it closes its descriptors before `execve`, or dies with its start).
const FIRST_PROCESS_GRACE: Duration = Duration::from_secs(2);

/// What a repair says about the container.
pub(crate) const MONITOR_DIED: &str = "the container's monitor process exited unexpectedly";

pub fn reconcile(store: &Store, config: &EngineConfig, container: Container) -> Container {
    let container = super::repair::repair(store, config, container);
    let paths = ContainerPaths::new(&config.root, &config.run_root, &container.record.id);
    if !container.state.is_running() {
        // A start (or a monitor's end) cut short leaves its record behind.
        return match MonitorLock::try_take(&paths) {
            Taken::NoRecord | Taken::Busy => container,
            Taken::Held(lock) => repair_held(store, config, container, &paths, lock),
        };
    }
    let state = &container.state;
    if process_alive(state.monitor_pid, state.monitor_start_time) {
        return container;
    }
    // Read again: the state we hold may predate a restart by another
    // process (a new monitor), and killing is not undoable.
    let mut container = container;
    if let Some(fresh) = read_state(store, &container.record.id) {
        if !fresh.is_running() || process_alive(fresh.monitor_pid, fresh.monitor_start_time) {
            container.state = fresh;
            return container;
        }
    }
    // The monitor is gone. Its start record is taken first, so that no new
    // start runs while this repairs.
    match MonitorLock::take_waiting(&paths, FIRST_PROCESS_GRACE) {
        Taken::Busy => container,
        // Started before start records existed (or a warm pool member).
        Taken::NoRecord => repair(store, config, container, &paths),
        Taken::Held(lock) => repair_held(store, config, container, &paths, lock),
    }
}

/// After a start whose monitor exited before it reported the start (killed,
/// or failed and gone): repairs what a killed one left. The caller has
/// reaped the monitor.
pub(crate) fn after_failed_start(store: &Store, config: &EngineConfig, id: &str) {
    let paths = ContainerPaths::new(&config.root, &config.run_root, id);
    let Taken::Held(lock) = MonitorLock::take_waiting(&paths, FIRST_PROCESS_GRACE) else {
        return;
    };
    match super::lookup::find_row(store, id).and_then(|row| super::lookup::parse_row(&row)) {
        Ok(container) => {
            repair_held(store, config, container, &paths, lock);
        }
        Err(_) => lock.release(),
    }
}

/// Repairs under a start record nobody else holds, then ends the record.
/// The state is read again first: it is the one the dead holder left.
fn repair_held(
    store: &Store,
    config: &EngineConfig,
    mut container: Container,
    paths: &ContainerPaths,
    lock: MonitorLock,
) -> Container {
    let id = container.record.id.clone();
    match read_state(store, &id) {
        Some(fresh) => container.state = fresh,
        None => {
            // Removed meanwhile: only files and a cgroup may be left.
            lock.release();
            return container;
        }
    }
    let container = repair(store, config, container, paths);
    lock.release();
    container
}

/// What a dead monitor would have done: kill what is left in the cgroup,
/// remove it, take the container off its networks, unmount its root,
/// record the exit, and honour `--rm`.
pub(crate) fn repair(
    store: &Store,
    config: &EngineConfig,
    mut container: Container,
    paths: &ContainerPaths,
) -> Container {
    let id = container.record.id.clone();
    tracing::debug!(container = %id, "monitor is gone; reconciling");
    let runtime = config.runtime_of(&container.record);
    if let Err(error) = runtime.delete(berth_runtime::ContainerRef { id: &id, pid: 0 }) {
        tracing::warn!(%error, "failed to delete what a crashed container left");
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
    crate::volumes::mounts::repair_volumes_of(
        &config.root,
        &config.run_root,
        &container.record.run,
    );
    let _ = fs_err::remove_file(paths.attach_socket());
    if record_crash(&mut container.state) {
        write_state(store, &id, &container.state);
    }
    if container.record.run.auto_remove {
        super::remove::remove_anonymous_volumes(store, config, &container.record);
        super::remove::remove_files_and_row(store, paths, &id);
        // Gone: lookups and listings drop a `removing` container whose
        // row is gone.
        container.state.status = Status::Removing;
    }
    container
}

/// The state of a container whose monitor died: exited, as Docker reports
/// a container whose shim vanished (killed, 137), unless the monitor had
/// recorded the real exit already. True when it changed.
fn record_crash(state: &mut ContainerState) -> bool {
    match state.status {
        Status::Created | Status::Running | Status::Paused | Status::Restarting => {
            state.status = Status::Exited;
            state.exit_code = 137;
            state.pid = 0;
            state.finished_at = now();
            state.error = MONITOR_DIED.to_owned();
            true
        }
        Status::Exited | Status::Removing | Status::Dead => {
            let changed = state.pid != 0;
            state.pid = 0;
            changed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_cut_short_is_recorded_as_killed() {
        for status in [Status::Created, Status::Running, Status::Restarting] {
            let mut state = ContainerState {
                status,
                pid: 42,
                ..ContainerState::default()
            };
            assert!(record_crash(&mut state));
            assert_eq!(
                (state.status, state.exit_code, state.pid),
                (Status::Exited, 137, 0)
            );
            assert_eq!(state.error, MONITOR_DIED);
        }
    }

    #[test]
    fn an_exit_already_recorded_is_kept() {
        let mut state = ContainerState {
            status: Status::Exited,
            exit_code: 3,
            ..ContainerState::default()
        };
        assert!(!record_crash(&mut state));
        assert_eq!((state.status, state.exit_code), (Status::Exited, 3));
    }
}
