//! Crash safety for what no row names any more. A `--rm` container's
//! monitor deletes the row and reports the exit before it removes the
//! container's directories and cgroup (so that `run --rm` returns sooner);
//! a monitor killed in between leaves those behind. Listing the containers
//! (`ps`, `container prune`, the API's list) removes them, unless a live
//! monitor still holds the container's start record (`monitor/lock.rs`).

use std::collections::HashSet;
use std::path::Path;

use berth_store::Store;

use super::monitor::lock::{MonitorLock, Taken};
use super::paths::ContainerPaths;
use crate::EngineConfig;

/// Removes the directories (and cgroup) of container ids that have neither
/// a row nor a warm pool member.
pub(crate) fn remove_orphans(store: &Store, config: &EngineConfig) {
    let Ok(rows) = container_ids(store) else {
        return;
    };
    let unclaimed: Vec<String> = ids_with_directories(config)
        .into_iter()
        .filter(|id| !rows.contains(id))
        // A pool member has directories and no row until it is claimed; its
        // member directory goes only after the claim stored the row (or
        // after its discard removed its files), so it is checked first…
        .filter(|id| {
            !crate::warm::member::MemberDir::new(&config.run_root, id)
                .path
                .exists()
        })
        .collect();
    if unclaimed.is_empty() {
        return;
    }
    // … and the rows read again after it: a claim that stored its row
    // between the two reads is seen here.
    let Ok(rows) = container_ids(store) else {
        return;
    };
    for id in unclaimed.iter().filter(|id| !rows.contains(*id)) {
        let paths = ContainerPaths::new(&config.root, &config.run_root, id);
        // A `--rm` monitor between its row and its files holds its start
        // record: it removes them itself.
        let lock = match MonitorLock::try_take(&paths) {
            Taken::Busy => continue,
            Taken::Held(lock) => Some(lock),
            Taken::NoRecord => None,
        };
        tracing::debug!(container = %id, "removing the files of a removed container");
        super::manage::delete_runtime_leftovers(config, id);
        super::remove::remove_files(store, &paths, id);
        if let Some(lock) = lock {
            lock.release();
        }
    }
}

fn container_ids(store: &Store) -> Result<HashSet<String>, berth_store::StoreError> {
    Ok(store.container_ids_with_prefix("")?.into_iter().collect())
}

/// The container ids (64 hex digits) with a directory under the root or
/// the run root. A container's row is stored before its directories are
/// made, so a directory listed here before the rows are read has its row
/// among them unless the container is being (or was) removed.
fn ids_with_directories(config: &EngineConfig) -> HashSet<String> {
    let mut ids = HashSet::new();
    for parent in [&config.root, &config.run_root] {
        ids.extend(container_directory_names(&parent.join("containers")));
    }
    ids
}

fn container_directory_names(directory: &Path) -> Vec<String> {
    let Ok(entries) = fs_err::read_dir(directory) else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.len() == 64 && name.bytes().all(|byte| byte.is_ascii_hexdigit()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_container_ids_are_taken_from_a_directory() {
        let directory = tempfile::tempdir().unwrap();
        let id = "a".repeat(64);
        for name in [
            id.as_str(),
            "init-layer",
            "tmp",
            &"g".repeat(64),
            &"b".repeat(63),
        ] {
            fs_err::create_dir(directory.path().join(name)).unwrap();
        }
        assert_eq!(container_directory_names(directory.path()), vec![id]);
        assert!(container_directory_names(&directory.path().join("missing")).is_empty());
    }
}
