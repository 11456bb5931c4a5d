//! `pause`, `unpause`, `rename`, `top`, `stats`, `update`, `container prune`.

use berth_runtime::cgroups::{CgroupStats, Resources};
use berth_runtime::{ContainerRef, NetworkIo, Runtime, RuntimeError};

use super::lifecycle::{check, Operation};
use super::lookup::{find_container, Container};
use super::monitor::{read_state, write_state};
use super::names::validate_name;
use super::state::Status;
use crate::{Engine, EngineError};

/// The container as its runtime knows it.
pub(crate) fn runtime_ref(container: &Container) -> ContainerRef<'_> {
    ContainerRef {
        id: &container.record.id,
        pid: container.state.pid,
    }
}

/// The runtime `container` runs on.
pub(crate) fn runtime_of<'a>(engine: &'a Engine, container: &Container) -> &'a dyn Runtime {
    engine.config().runtime_of(&container.record)
}

/// Removes what the runtime keeps of container `id` after it is gone (a
/// removed container's leftovers, a pool member whose monitor died).
pub(crate) fn delete_runtime_leftovers(config: &crate::EngineConfig, id: &str) {
    if let Err(error) = config.runtime.delete(ContainerRef { id, pid: 0 }) {
        tracing::debug!(%error, container = %id, "runtime leftovers not removed");
    }
}

fn runtime_failure(error: RuntimeError) -> EngineError {
    EngineError::Runtime(Box::new(error))
}

fn running(engine: &Engine, text: &str) -> Result<Container, EngineError> {
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, text)?;
    if !container.state.is_running() {
        return Err(EngineError::ContainerNotRunning {
            id: container.record.id.clone(),
        });
    }
    Ok(container)
}

/// `pause`: freezes every process of the container (cgroup freezer).
pub fn pause_container(engine: &mut Engine, text: &str) -> Result<(), EngineError> {
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, text)?;
    check(
        container.state.status,
        &container.record.id,
        Operation::Pause,
    )?;
    runtime_of(engine, &container)
        .pause(runtime_ref(&container))
        .map_err(runtime_failure)?;
    set_status(engine, &container.record.id, Status::Paused);
    crate::events::emit_container(engine.store(), "pause", &container.record);
    Ok(())
}

pub fn unpause_container(engine: &mut Engine, text: &str) -> Result<(), EngineError> {
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, text)?;
    check(
        container.state.status,
        &container.record.id,
        Operation::Unpause,
    )?;
    runtime_of(engine, &container)
        .resume(runtime_ref(&container))
        .map_err(runtime_failure)?;
    set_status(engine, &container.record.id, Status::Running);
    crate::events::emit_container(engine.store(), "unpause", &container.record);
    Ok(())
}

fn set_status(engine: &Engine, id: &str, status: Status) {
    if let Some(mut state) = read_state(engine.store(), id) {
        state.status = status;
        if status == Status::Paused {
            // dockerd stops the health monitor of a paused container, which leaves it
            // unhealthy until a probe after the unpause passes (moby `CloseMonitorChannel`).
            if let Some(health) = state.health.as_mut() {
                health.status = super::health::HealthStatus::Unhealthy;
            }
        }
        write_state(engine.store(), id, &state);
    }
}

/// `rename OLD NEW`.
pub fn rename_container(
    engine: &mut Engine,
    text: &str,
    new_name: &str,
) -> Result<(), EngineError> {
    validate_name(new_name).map_err(EngineError::InvalidArgument)?;
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, text)?;
    let new_name = new_name.strip_prefix('/').unwrap_or(new_name);
    engine
        .store_mut()
        .rename_container(&container.record.id, new_name)
        .map_err(|error| match error {
            berth_store::ContainerStoreError::NameInUse(name) => {
                let id = engine
                    .store()
                    .container_by_name(&name)
                    .ok()
                    .flatten()
                    .map(|row| row.id)
                    .unwrap_or_default();
                EngineError::NameInUse { name, id }
            }
            berth_store::ContainerStoreError::Store(error) => EngineError::Store(error),
        })?;
    let renamed = super::record::ContainerRecord {
        name: new_name.to_owned(),
        ..container.record.clone()
    };
    // Docker's `oldName` keeps the leading slash of its names.
    let old_name = format!("/{}", container.record.name);
    let root = &config.root;
    crate::events::emit_container_with(root, "rename", &renamed, &[("oldName", &old_name)]);
    Ok(())
}

/// Host pids of the container's processes (for `top`).
pub fn container_processes(engine: &Engine, text: &str) -> Result<Vec<i32>, EngineError> {
    let container = running(engine, text)?;
    runtime_of(engine, &container)
        .processes(runtime_ref(&container))
        .map_err(runtime_failure)
}

/// `top`'s table where the container's backend makes it (see
/// `Runtime::process_table`).
pub(super) fn container_process_table(
    engine: &Engine,
    container: &Container,
    ps_args: &[String],
) -> Result<Option<berth_runtime::ProcessTable>, EngineError> {
    let container = running(engine, &container.record.id)?;
    runtime_of(engine, &container)
        .process_table(runtime_ref(&container), ps_args)
        .map_err(runtime_failure)
}

/// `stats --no-stream` data.
pub fn container_stats(engine: &Engine, container: &Container) -> Result<CgroupStats, EngineError> {
    runtime_of(engine, container)
        .stats(runtime_ref(container))
        .map_err(runtime_failure)
}

/// Bytes through the container's network interfaces but loopback (Docker
/// counts its networks' interfaces); zero when it is not running.
pub fn container_network_io(engine: &Engine, container: &Container) -> NetworkIo {
    if !container.state.is_running() {
        return NetworkIo::default();
    }
    runtime_of(engine, container).network_io(runtime_ref(container))
}

/// The `HostConfig` fields an update may change, in Docker's names.
const UPDATABLE_FIELDS: &[&str] = &[
    "BlkioWeight",
    "CpuPeriod",
    "CpuQuota",
    "CpuRealtimePeriod",
    "CpuRealtimeRuntime",
    "CpuShares",
    "CpusetCpus",
    "CpusetMems",
    "Memory",
    "MemoryReservation",
    "MemorySwap",
    "NanoCpus",
    "PidsLimit",
];

/// `update`: new limits, applied now when running and kept for later starts;
/// `fields` are the same changes in Docker's `HostConfig` names (the API's
/// body, or the CLI's flags), which inspect shows afterwards, as dockerd's:
/// a zero or empty value changes nothing. A new restart policy is the one
/// the container's monitor applies at its next exit.
pub fn update_container(
    engine: &mut Engine,
    text: &str,
    resources: &Resources,
    restart: Option<super::record::RestartPolicy>,
    fields: &serde_json::Map<String, serde_json::Value>,
) -> Result<(), EngineError> {
    let config = engine.config().clone();
    let mut container = find_container(engine.store(), &config, text)?;
    if container.state.is_running() {
        runtime_of(engine, &container)
            .update(runtime_ref(&container), resources)
            .map_err(|error| {
                // Docker's words, with the kernel's reason.
                let reason = match &error {
                    RuntimeError::Cgroup { source, .. } => source.to_string(),
                    other => other.to_string(),
                };
                EngineError::InvalidArgument(format!(
                    "Cannot update container {}: {reason}",
                    container.record.id
                ))
            })?;
    }
    merge_resources(&mut container.record.run.resources, resources);
    if let Some(host) = container.record.host_config.as_object_mut() {
        for (key, value) in fields {
            let unchanged = value.is_null()
                || value.as_i64() == Some(0)
                || value.as_str().is_some_and(str::is_empty);
            if UPDATABLE_FIELDS.contains(&key.as_str()) && !unchanged {
                host.insert(key.clone(), value.clone());
            }
        }
        if let Some(restart) = &restart {
            host.insert(
                "RestartPolicy".to_owned(),
                serde_json::json!({
                    "Name": restart.name,
                    "MaximumRetryCount": restart.maximum_retry_count,
                }),
            );
        }
    }
    if let Some(restart) = restart {
        container.record.run.restart = restart;
    }
    super::lookup::save_record(engine.store(), &container.record)?;
    crate::events::emit_container(engine.store(), "update", &container.record);
    Ok(())
}

/// Fields set in `update` replace the stored ones.
fn merge_resources(stored: &mut Resources, update: &Resources) {
    let before = serde_json::to_value(&*stored).unwrap_or_default();
    let changes = serde_json::to_value(update).unwrap_or_default();
    let mut merged = before;
    if let (Some(merged), Some(changes)) = (merged.as_object_mut(), changes.as_object()) {
        for (key, value) in changes {
            if !value.is_null() {
                merged.insert(key.clone(), value.clone());
            }
        }
    }
    if let Ok(resources) = serde_json::from_value(merged) {
        *stored = resources;
    }
}

/// `container prune`: every stopped container; returns the removed ids.
/// What `container prune` removed: the containers' ids, and the bytes of
/// their writable layers (dockerd's `SpaceReclaimed`).
#[derive(Debug, Default)]
pub struct PrunedContainers {
    pub ids: Vec<String>,
    pub reclaimed: u64,
}

pub fn prune_containers(engine: &mut Engine) -> Result<PrunedContainers, EngineError> {
    let config = engine.config().clone();
    let containers = super::list_containers(engine.store(), &config)?;
    let mut pruned = PrunedContainers::default();
    for container in containers {
        if container.state.is_running() {
            continue;
        }
        let (size_rw, _) = super::container_size(engine.store(), &config, &container)?;
        super::remove_container(engine, &container.record.id, false)?;
        pruned.ids.push(container.record.id);
        pruned.reclaimed += size_rw;
    }
    Ok(pruned)
}
