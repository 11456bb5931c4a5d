//! Finding a container by full id, name or unique id prefix (Docker's
//! order), and loading its record and state.

use berth_store::{ContainerRow, Store};

use super::record::ContainerRecord;
use super::state::ContainerState;
use crate::EngineError;

/// A container as stored.
#[derive(Clone, Debug)]
pub struct Container {
    pub record: ContainerRecord,
    pub state: ContainerState,
}

pub fn find_row(store: &Store, text: &str) -> Result<ContainerRow, EngineError> {
    let name = text.strip_prefix('/').unwrap_or(text);
    if let Some(row) = store.container(name)? {
        return Ok(row);
    }
    if let Some(row) = store.container_by_name(name)? {
        return Ok(row);
    }
    let is_hex = !name.is_empty() && name.bytes().all(|byte| byte.is_ascii_hexdigit());
    if is_hex {
        let mut ids = store.container_ids_with_prefix(&name.to_ascii_lowercase())?;
        match ids.len() {
            0 => {}
            1 => {
                if let Some(row) = store.container(&ids.remove(0))? {
                    return Ok(row);
                }
            }
            _ => return Err(EngineError::AmbiguousContainer(text.to_owned())),
        }
    }
    Err(EngineError::NoSuchContainer(text.to_owned()))
}

pub fn parse_row(row: &ContainerRow) -> Result<Container, EngineError> {
    let record =
        serde_json::from_str(&row.record).map_err(|error| corrupt(&row.id, "record", error))?;
    let state =
        serde_json::from_str(&row.state).map_err(|error| corrupt(&row.id, "state", error))?;
    let mut container = Container { record, state };
    // The name can change (`rename`) without rewriting the record.
    container.record.name = row.name.clone();
    Ok(container)
}

/// Stores a changed record in its row (the row's name and state are not
/// touched): `update`, `network connect`, `rm --link`.
pub(crate) fn save_record(store: &Store, record: &ContainerRecord) -> Result<(), EngineError> {
    let json =
        serde_json::to_string(record).map_err(|source| super::ContainerError::EncodeRecord {
            id: record.id.clone(),
            source,
        })?;
    store.set_container_record(&record.id, &json)?;
    Ok(())
}

fn corrupt(id: &str, what: &str, error: serde_json::Error) -> EngineError {
    EngineError::Store(berth_store::StoreError::Corrupt(format!(
        "container {id} {what}: {error}"
    )))
}

/// Finds and loads a container, reconciling a dead monitor (and repairing
/// what a killed `rm`, `commit` or `cp` left, [`super::repair`]) first.
pub fn find_container(
    store: &Store,
    config: &crate::EngineConfig,
    text: &str,
) -> Result<Container, EngineError> {
    find_container_unless_removed(store, config, text)?
        .ok_or_else(|| EngineError::NoSuchContainer(text.to_owned()))
}

/// [`find_container`], with `None` for a container whose removal (begun
/// by an `rm` that was killed) the lookup itself finished.
pub(crate) fn find_container_unless_removed(
    store: &Store,
    config: &crate::EngineConfig,
    text: &str,
) -> Result<Option<Container>, EngineError> {
    let row = find_row(store, text)?;
    let container = parse_row(&row)?;
    let container = super::reconcile::reconcile(store, config, container);
    if container.state.status == super::state::Status::Removing
        && store.container(&container.record.id)?.is_none()
    {
        return Ok(None);
    }
    Ok(Some(container))
}
