//! `update`: new limits on a live container's cgroup (`-r` takes `linux.resources` JSON).

use crate::cgroup;
use crate::config::Resources;
use crate::convert::convert_resources;
use crate::error::{OciError, Result};
use crate::state::Status;
use crate::store::Store;

pub fn update(store: &Store, id: &str, resources: &Resources) -> Result<()> {
    let (_lock, record) = store.lock(id)?;
    if store.status_held(&record) == Status::Stopped {
        return Err(OciError::WrongState("container not running".to_owned()));
    }
    let (resources, _) = convert_resources(Some(resources), true)?;
    cgroup::manager(&record.cgroup_path)?
        .apply(&resources)
        .map_err(OciError::Cgroup)
}
