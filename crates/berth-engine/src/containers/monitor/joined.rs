//! `--pid container:NAME` and `--ipc container:NAME`: the namespaces of
//! another running container that a start joins, found as dockerd finds
//! them (`getPidContainer`, `getIpcContainer`) with its errors.

use std::path::PathBuf;

use berth_runtime::spec::JoinedNamespaces;
use berth_store::Store;

use crate::containers::record::ContainerRecord;
use crate::EngineConfig;

/// The joined namespaces of this start of `record`: each `container:`
/// mode's container must run (and an IPC donor must be shareable).
pub(super) fn joined_namespaces(
    store: &Store,
    config: &EngineConfig,
    record: &ContainerRecord,
) -> Result<JoinedNamespaces, String> {
    let mut joined = JoinedNamespaces::default();
    if let Some(name) = record.run.pid_mode.strip_prefix("container:") {
        let pid = running_pid(store, config, name)
            .map_err(|(_, message)| message)?
            .0;
        joined.pid = Some(namespace_file(pid, "pid"));
    }
    if let Some(name) = record.run.ipc_mode.strip_prefix("container:") {
        let cannot = |id: &str, why: &str| format!("can't join IPC of container {id}: {why}");
        let (pid, donor) = running_pid(store, config, name)
            .map_err(|(id, message)| cannot(id.as_deref().unwrap_or(name), &message))?;
        if !donor.run.ipc_mode.is_empty() {
            return Err(cannot(
                &donor.id,
                "non-shareable IPC (hint: use IpcMode:shareable for the donor container)",
            ));
        }
        joined.ipc = Some(namespace_file(pid, "ipc"));
        joined.shm_of = Some(namespace_file(pid, "mnt"));
    }
    Ok(joined)
}

/// The running container `name`'s process and record, or dockerd's error
/// (with the container's id when there is one).
fn running_pid(
    store: &Store,
    config: &EngineConfig,
    name: &str,
) -> Result<(i32, ContainerRecord), (Option<String>, String)> {
    let target = crate::containers::lookup::find_container(store, config, name)
        .map_err(|error| (None, error.to_string()))?;
    if !target.state.is_running() {
        let id = target.record.id;
        return Err((Some(id.clone()), format!("container {id} is not running")));
    }
    Ok((target.state.pid, target.record))
}

fn namespace_file(pid: i32, kind: &str) -> PathBuf {
    PathBuf::from(format!("/proc/{pid}/ns/{kind}"))
}
