//! `pause`, `unpause`, `rename`, `top`, `stats`, `update`, `container prune`.

use berth_runtime::cgroups::{
    new_manager, CgroupDriver, CgroupManager, CgroupStats, CgroupVersion, Resources,
};

use super::lookup::{find_container, Container};
use super::monitor::{read_state, write_state};
use super::names::validate_name;
use super::state::Status;
use crate::{Engine, EngineError};

/// The cgroup of container `id` on this machine's layout.
pub(crate) fn cgroup_of(id: &str) -> Result<Box<dyn CgroupManager>, EngineError> {
    let version = CgroupVersion::detect().map_err(|error| EngineError::Start(error.to_string()))?;
    let path = CgroupDriver::default()
        .container_path(None, id)
        .map_err(|error| EngineError::Start(error.to_string()))?;
    Ok(new_manager(&version, path))
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
    let container = running(engine, text)?;
    if container.state.status == Status::Paused {
        return Err(EngineError::InvalidArgument(format!(
            "Container {} is already paused",
            container.record.id
        )));
    }
    cgroup_of(&container.record.id)?
        .freeze()
        .map_err(|error| EngineError::Start(format!("failed to pause: {error}")))?;
    set_status(engine, &container.record.id, Status::Paused);
    crate::events::emit_container(engine.store(), "pause", &container.record);
    Ok(())
}

pub fn unpause_container(engine: &mut Engine, text: &str) -> Result<(), EngineError> {
    let container = running(engine, text)?;
    if container.state.status != Status::Paused {
        return Err(EngineError::InvalidArgument(format!(
            "Container {} is not paused",
            container.record.id
        )));
    }
    cgroup_of(&container.record.id)?
        .thaw()
        .map_err(|error| EngineError::Start(format!("failed to unpause: {error}")))?;
    set_status(engine, &container.record.id, Status::Running);
    crate::events::emit_container(engine.store(), "unpause", &container.record);
    Ok(())
}

fn set_status(engine: &Engine, id: &str, status: Status) {
    if let Some(mut state) = read_state(engine.store(), id) {
        state.status = status;
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
    let pids = cgroup_of(&container.record.id)?
        .processes()
        .map_err(|error| EngineError::Start(error.to_string()))?;
    Ok(pids.into_iter().map(|pid| pid.as_raw()).collect())
}

/// `stats --no-stream` data.
pub fn container_stats(engine: &Engine, container: &Container) -> Result<CgroupStats, EngineError> {
    let _ = engine;
    cgroup_of(&container.record.id)?
        .stats()
        .map_err(|error| EngineError::Start(error.to_string()))
}

/// `update`: new limits, applied now when running and kept for later starts.
pub fn update_container(
    engine: &mut Engine,
    text: &str,
    resources: &Resources,
    restart: Option<super::record::RestartPolicy>,
) -> Result<(), EngineError> {
    let config = engine.config().clone();
    let mut container = find_container(engine.store(), &config, text)?;
    if container.state.is_running() {
        cgroup_of(&container.record.id)?
            .apply(resources)
            .map_err(|error| {
                EngineError::InvalidArgument(format!(
                    "Cannot update container {}: {error}",
                    container.record.id
                ))
            })?;
    }
    merge_resources(&mut container.record.run.resources, resources);
    if let Some(restart) = restart {
        container.record.run.restart = restart;
    }
    let json = serde_json::to_string(&container.record)
        .map_err(|error| EngineError::Start(error.to_string()))?;
    engine
        .store()
        .set_container_record(&container.record.id, &json)?;
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
pub fn prune_containers(engine: &mut Engine) -> Result<Vec<String>, EngineError> {
    let config = engine.config().clone();
    let containers = super::list_containers(engine.store(), &config)?;
    let mut removed = Vec::new();
    for container in containers {
        if container.state.is_running() {
            continue;
        }
        super::remove_container(engine, &container.record.id, false)?;
        removed.push(container.record.id);
    }
    Ok(removed)
}
