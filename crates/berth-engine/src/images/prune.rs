//! `image prune`: dangling images (or, with `-a`, every image; no
//! containers exist yet to keep one in use).

use berth_store::Store;

use super::remove::{remove_image_measured, vacuum, RemovalEvent};
use crate::EngineError;

#[derive(Clone, Debug, Default)]
pub struct PruneReport {
    pub events: Vec<RemovalEvent>,
    /// Bytes of disk freed, as `du` counts them: the removed images' layers
    /// and blobs, and whatever killed commands had left (unreferenced
    /// content, staging). Docker reports the layers' recorded sizes, which
    /// here would leave out the kept blobs and every orphan.
    pub reclaimed: u64,
}

pub fn prune_images(store: &mut Store, all: bool) -> Result<PruneReport, EngineError> {
    let mut report = PruneReport {
        reclaimed: store.take_recovered(),
        ..PruneReport::default()
    };
    // Images `rmi --force` hid whose containers are gone (left when a
    // removal found the content lock taken).
    report.reclaimed += super::delete_released_images(store);
    let images = store.images()?;
    // An image another was built on goes with that child (the removal
    // prunes untagged parents), never before it.
    let parents = super::parent_ids(store, &images);
    for image in images {
        if !all && !image.tags.is_empty() {
            continue;
        }
        if parents.contains(&image.id.to_string()) || store.image(&image.id)?.is_none() {
            continue;
        }
        if !store
            .containers_using_image(&image.id.to_string())?
            .is_empty()
        {
            continue;
        }
        let removal = remove_image_measured(store, &image.id.to_string(), true)?;
        report.reclaimed += removal.freed;
        report.events.extend(removal.events);
    }
    // Content left behind by killed processes goes too.
    let lock = store.lock_exclusive()?;
    report.reclaimed += store.collect_garbage(&lock)?;
    drop(lock);
    vacuum(store);
    Ok(report)
}
