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

    // Removing by name (a tag or a `name@digest`) when the image has other
    // names only untags (moby's `ImageDelete`).
    let named = super::parse_reference(text)
        .ok()
        .map(|reference| reference.to_string())
        .filter(|reference| {
            image.tags.contains(reference) || image.repo_digests.contains(reference)
        });
    let named_tag = named.clone();
    if let Some(name) = &named {
        let others = image
            .tags
            .iter()
            .chain(&image.repo_digests)
            .filter(|reference| *reference != name)
            .count();
        if others > 0 {
            untag(store, &image, name, &mut events)?;
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

    // By id, an image other images were built on stays, forced or not.
    // Each image's parent is read once for the whole removal.
    let mut parents = None;
    if named_tag.is_none() {
        let map = super::parent_map(store, &store.images()?);
        if map.values().any(|parent| *parent == image.id.to_string()) {
            return Err(ImageError::HasChildren {
                id: image.id.short().to_owned(),
            }
            .into());
        }
        parents = Some(map);
    }

    // An image a container uses: moby's conflicts. Without --force each
    // is refused; with it a running container's image only loses the name
    // asked for (refused by id), and a stopped container's is deleted for
    // every name and lookup while the container keeps its layers.
    let users = store.containers_using_image(&image.id.to_string())?;
    if let Some(user) = users.first() {
        let short = |id: &str| id.chars().take(12).collect::<String>();
        let running = users.iter().find(|row| {
            crate::containers::lookup::parse_row(row).is_ok_and(|c| c.state.is_running())
        });
        match (&named_tag, running) {
            (None, Some(running)) => {
                return Err(ImageError::UsedByRunningContainer {
                    id: image.id.short().to_owned(),
                    container: short(&running.id),
                }
                .into())
            }
            (None, None) if !force => {
                return Err(ImageError::UsedByContainer {
                    id: image.id.short().to_owned(),
                    container: short(&user.id),
                }
                .into())
            }
            (Some(tag), _) if !force => {
                return Err(ImageError::InUse {
                    reference: familiar(tag),
                    container: short(&user.id),
                    id: image.id.short().to_owned(),
                }
                .into())
            }
            (Some(name), Some(_)) => {
                untag(store, &image, name, &mut events)?;
                return Ok(Removal { events, freed: 0 });
            }
            (_, None) => {
                for name in image.tags.iter().chain(&image.repo_digests) {
                    events.push(RemovalEvent::Untagged(familiar(name)));
                }
                store.hide_image(&image.id)?;
                events.push(RemovalEvent::Deleted(image.id.clone()));
                return Ok(Removal { events, freed: 0 });
            }
        }
    }

    // The lock's mark is on disk before the row goes: a removal killed
    // between the row and the last file is finished by the next command
    // (`Store::open`).
    let _lock = store.lock_exclusive()?;
    for tag in image.tags.iter().chain(image.repo_digests.iter()) {
        events.push(RemovalEvent::Untagged(familiar(tag)));
    }
    let mut parents = match parents {
        Some(parents) => parents,
        None => super::parent_map(store, &store.images()?),
    };
    let mut parent = parents.remove(&image.id.to_string()).unwrap_or_default();
    let mut freed = delete_image_files(store, &image.id, &mut events)?;
    // The untagged images it was built on go with it, as moby prunes
    // them (a build's steps): each one that no container uses and that
    // has no other child.
    while let Some(image) = prunable_parent(store, &parent, &parents)? {
        parent = parents.remove(&image.id.to_string()).unwrap_or_default();
        freed += delete_image_files(store, &image.id, &mut events)?;
    }
    Ok(Removal { events, freed })
}

/// Deletes the image's row and the layers and blobs only it used; the
/// caller holds the exclusive lock.
fn delete_image_files(
    store: &mut Store,
    id: &Digest,
    events: &mut Vec<RemovalEvent>,
) -> Result<u64, EngineError> {
    let removed = store.delete_image(id)?;
    events.push(RemovalEvent::Deleted(id.clone()));
    delete_content(store, &removed, events)
}

/// The files of the layers and blobs a deleted image row let go; each
/// layer is reported in `events`. The caller holds the exclusive lock.
fn delete_content(
    store: &Store,
    removed: &berth_store::RemovedImage,
    events: &mut Vec<RemovalEvent>,
) -> Result<u64, EngineError> {
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
    Ok(freed)
}

/// Deletes for good the images `rmi --force` hid ([`Store::hide_image`])
/// that no container uses any more: their rows, layers and blobs. Called
/// where containers are removed; while another process holds the content
/// lock it is left to the next removal or `image prune`. Never fails the
/// caller. Returns the bytes freed.
pub(crate) fn delete_released_images(store: &Store) -> u64 {
    let deleted = (|| -> Result<u64, EngineError> {
        if !store.has_unused_hidden_images()? {
            return Ok(0);
        }
        let Some(lock) = store.try_lock_exclusive()? else {
            return Ok(0);
        };
        let mut freed = 0;
        for (id, removed) in store.delete_unused_hidden_images(&lock)? {
            tracing::debug!(%id, "deleting an image its last container let go");
            freed += delete_content(store, &removed, &mut Vec::new())?;
        }
        Ok(freed)
    })();
    deleted.unwrap_or_else(|error| {
        tracing::warn!(%error, "failed to delete the images removed containers let go");
        0
    })
}

/// The image `parent` names when it goes with its child: untagged, used
/// by no container, and the parent of no other image (`parents`: each
/// remaining image's parent).
fn prunable_parent(
    store: &Store,
    parent: &str,
    parents: &std::collections::HashMap<String, String>,
) -> Result<Option<berth_store::ImageRecord>, EngineError> {
    let Ok(id) = Digest::parse(parent) else {
        return Ok(None);
    };
    let Some(image) = store.image(&id)? else {
        return Ok(None);
    };
    if !image.tags.is_empty()
        || !image.repo_digests.is_empty()
        || !store.containers_using_image(parent)?.is_empty()
    {
        return Ok(None);
    }
    if parents.values().any(|other| other == parent) {
        return Ok(None);
    }
    Ok(Some(image))
}

/// Removes the name `name` (a tag or a `name@digest`) of `image`. A tag
/// whose repository keeps no other tag takes that repository's digest
/// references with it, as moby's `ImageDelete` does.
fn untag(
    store: &mut Store,
    image: &berth_store::ImageRecord,
    name: &str,
    events: &mut Vec<RemovalEvent>,
) -> Result<(), EngineError> {
    if image.repo_digests.iter().any(|reference| reference == name) {
        store.remove_repo_digest(name)?;
        events.push(RemovalEvent::Untagged(familiar(name)));
        return Ok(());
    }
    store.remove_tag(name)?;
    events.push(RemovalEvent::Untagged(familiar(name)));
    let repository = |reference: &str| super::familiar_parts(reference).0;
    let name_repository = repository(name);
    let tag_left = image
        .tags
        .iter()
        .any(|tag| tag != name && repository(tag) == name_repository);
    if !tag_left {
        for digest in image
            .repo_digests
            .iter()
            .filter(|reference| repository(reference) == name_repository)
        {
            store.remove_repo_digest(digest)?;
            events.push(RemovalEvent::Untagged(familiar(digest)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000001";

    fn store_with(tags: &[&str], digests: &[&str]) -> (tempfile::TempDir, Store) {
        let root = tempfile::tempdir().unwrap();
        let mut store = Store::open(root.path()).unwrap();
        let id = Digest::of_bytes(b"{}");
        store.blobs().put(b"{}").unwrap();
        store
            .add_image(&berth_store::NewImage {
                id,
                manifest_digest: None,
                created: None,
                layers: vec![],
                blobs: vec![],
                tags: tags.iter().map(|tag| tag.to_string()).collect(),
                repo_digests: digests.iter().map(|digest| digest.to_string()).collect(),
            })
            .unwrap();
        (root, store)
    }

    fn untagged(events: &[RemovalEvent]) -> Vec<String> {
        events
            .iter()
            .filter_map(|event| match event {
                RemovalEvent::Untagged(name) => Some(name.clone()),
                RemovalEvent::Deleted(_) => None,
            })
            .collect()
    }

    #[test]
    fn a_digest_reference_with_other_names_is_only_untagged() {
        let digest = format!("docker.io/library/busybox@{DIGEST}");
        let (_root, mut store) = store_with(&["docker.io/library/other:latest"], &[&digest]);
        let events = remove_image(&mut store, &format!("busybox@{DIGEST}"), false).unwrap();
        assert_eq!(untagged(&events), [format!("busybox@{DIGEST}")]);
        let image = resolve_image(&store, "other").unwrap();
        assert!(image.repo_digests.is_empty());
        assert_eq!(image.tags, ["docker.io/library/other:latest"]);
    }

    #[test]
    fn the_last_tag_of_a_repository_takes_its_digests_along() {
        let digest = format!("docker.io/library/busybox@{DIGEST}");
        let (_root, mut store) = store_with(
            &[
                "docker.io/library/busybox:latest",
                "docker.io/library/other:1",
            ],
            &[&digest],
        );
        let events = remove_image(&mut store, "busybox:latest", false).unwrap();
        assert_eq!(
            untagged(&events),
            ["busybox:latest".to_owned(), format!("busybox@{DIGEST}")]
        );
        let image = resolve_image(&store, "other:1").unwrap();
        assert!(
            image.repo_digests.is_empty(),
            "no <none> digest row is left"
        );
        // The last name deletes the image.
        let events = remove_image(&mut store, "other:1", false).unwrap();
        assert!(events
            .iter()
            .any(|event| matches!(event, RemovalEvent::Deleted(_))));
        assert!(store.images().unwrap().is_empty());
    }
}
