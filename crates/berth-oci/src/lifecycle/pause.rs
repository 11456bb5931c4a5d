//! `pause` and `resume`: the cgroup freezer.

use crate::cgroup;
use crate::error::{OciError, Result};
use crate::state::Status;
use crate::store::Store;

pub fn pause(store: &Store, id: &str) -> Result<()> {
    let (_lock, record) = store.lock(id)?;
    if store.status_held(&record) != Status::Running {
        return Err(OciError::WrongState("container not running".to_owned()));
    }
    cgroup::manager(&record.cgroup_path)?
        .freeze()
        .map_err(OciError::Cgroup)
}

pub fn resume(store: &Store, id: &str) -> Result<()> {
    let (_lock, record) = store.lock(id)?;
    if store.status_held(&record) != Status::Paused {
        return Err(OciError::WrongState("container not paused".to_owned()));
    }
    cgroup::manager(&record.cgroup_path)?
        .thaw()
        .map_err(OciError::Cgroup)
}
