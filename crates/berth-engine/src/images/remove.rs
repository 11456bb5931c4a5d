//! `rmi` / `image rm`.

use std::collections::BTreeSet;

use berth_store::Store;
use berth_types::Digest;

use super::resolve::resolve_image;
use super::{familiar, ImageError};
use crate::EngineError;

/// What `rmi` did, in the order Docker prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RemovalEvent {
    /// `Untagged: busybox:latest`
    Untagged(String),
    /// `Deleted: sha256:…` (the image id, then each layer removed)
    Deleted(Digest),
}

/// Removes a name or, when `text` names an image by id (or its last name),
/// the image and every layer and blob no other image uses.
pub fn remove_image(
    store: &mut Store,
    text: &str,
    force: bool,
) -> Result<Vec<RemovalEvent>, EngineError> {
    let removal = remove_image_measured(store, text, force)?;
    if removal.freed > 0 {
        vacuum(store);
    }
    Ok(removal.events)
}

/// What one removal did and the bytes of disk it freed (layers and blobs,
/// as `du` counts them).
#[derive(Clone, Debug, Default)]
pub(crate) struct Removal {
    pub events: Vec<RemovalEvent>,
    pub freed: u64,
}

/// [`remove_image`], also saying how much disk it freed.
pub(crate) fn remove_image_measured(
    store: &mut Store,
    text: &str,
    force: bool,
) -> Result<Removal, EngineError> {
    let id = resolve_image(store, text)?.id.to_string();
    let removal = remove_image_unrecorded(store, text, force)?;
    crate::events::emit_image_removal(store, &id, &removal.events);
    Ok(removal)
}

/// Shrinks the database when removals left it mostly free; never fails
/// the removal.
pub(crate) fn vacuum(store: &Store) {
    if let Err(error) = store.vacuum_if_mostly_free() {
        tracing::debug!(%error, "the metadata database was not vacuumed");
    }
}

fn remove_image_unrecorded(
    store: &mut Store,
    text: &str,
    force: bool,
) -> Result<Removal, EngineError> {
    let image = resolve_image(store, text)?;
    let mut events = Vec::new();

    // Removing by name when the image has other names only untags.
    let named_tag = super::parse_reference(text)
        .ok()
        .map(|reference| reference.to_string())
        .filter(|reference| image.tags.contains(reference));
    if let Some(tag) = &named_tag {
        if image.tags.len() > 1 {
            store.remove_tag(tag)?;
            events.push(RemovalEvent::Untagged(familiar(tag)));
            return Ok(Removal { events, freed: 0 });
        }
    } else {
        // By id: several repositories need --force (same repository is fine).
        let repositories: BTreeSet<String> = image
            .tags
            .iter()
            .map(|tag| super::familiar_parts(tag).0)
            .collect();
        if repositories.len() > 1 && !force {
            return Err(ImageError::ReferencedByTags {
                id: image.id.short().to_owned(),
            }
            .into());
        }
    }

    // An image a container uses stays: without --force it is a conflict
    // (Docker's words); with --force only the names go.
    if let Some(user) = store.containers_using_image(&image.id.to_string())?.first() {
        let short_container = user.id.chars().take(12).collect::<String>();
        if !force {
            return Err(match &named_tag {
                Some(tag) => ImageError::InUse {
                    reference: familiar(tag),
                    container: short_container,
                    id: image.id.short().to_owned(),
                },
                None => ImageError::UsedByContainer {
                    id: image.id.short().to_owned(),
                    container: short_container,
                },
            }
            .into());
        }
        let tags: Vec<String> = match &named_tag {
            Some(tag) => vec![tag.clone()],
            None => image.tags.clone(),
        };
        for tag in tags {
            store.remove_tag(&tag)?;
            events.push(RemovalEvent::Untagged(familiar(&tag)));
        }
        return Ok(Removal { events, freed: 0 });
    }

    // The lock's mark is on disk before the row goes: a removal killed
    // between the row and the last file is finished by the next command
    // (`Store::open`).
    let _lock = store.lock_exclusive()?;
    for tag in image.tags.iter().chain(image.repo_digests.iter()) {
        events.push(RemovalEvent::Untagged(familiar(tag)));
    }
    let removed = store.delete_image(&image.id)?;
    events.push(RemovalEvent::Deleted(image.id.clone()));
    let mut freed = 0;
    let layers = store.layers();
    for chain_id in removed.layers.iter().rev() {
        freed += layers.delete(chain_id)?;
        events.push(RemovalEvent::Deleted(chain_id.clone()));
    }
    let blobs = store.blobs();
    for digest in &removed.blobs {
        freed += blobs.delete(digest)?;
    }
    Ok(Removal { events, freed })
}
