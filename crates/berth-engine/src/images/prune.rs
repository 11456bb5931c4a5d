//! `image prune`: dangling images (or, with `-a`, every image; no
//! containers exist yet to keep one in use).

use berth_store::Store;

use super::remove::{remove_image, RemovalEvent};
use crate::EngineError;

#[derive(Clone, Debug, Default)]
pub struct PruneReport {
    pub events: Vec<RemovalEvent>,
    /// Bytes of unpacked layers freed.
    pub reclaimed: u64,
}

pub fn prune_images(store: &mut Store, all: bool) -> Result<PruneReport, EngineError> {
    let mut report = PruneReport::default();
    for image in store.images()? {
        if !all && !image.tags.is_empty() {
            continue;
        }
        if !store
            .containers_using_image(&image.id.to_string())?
            .is_empty()
        {
            continue;
        }
        let sizes: Vec<(berth_types::Digest, u64)> = image
            .layers
            .iter()
            .filter_map(|chain_id| store.layer(chain_id).ok().flatten())
            .map(|layer| (layer.chain_id, layer.size))
            .collect();
        let events = remove_image(store, &image.id.to_string(), true)?;
        for event in &events {
            if let RemovalEvent::Deleted(digest) = event {
                report.reclaimed += sizes
                    .iter()
                    .find(|(chain_id, _)| chain_id == digest)
                    .map_or(0, |(_, size)| *size);
            }
        }
        report.events.extend(events);
    }
    // Content left behind by killed processes goes too.
    let lock = store.lock_exclusive()?;
    store.collect_garbage(&lock)?;
    Ok(report)
}
