//! `load`: an archive from a file or stdin into the store.

use std::collections::HashMap;
use std::io::Read;

use berth_store::{MovedTag, NewImage, Store};
use berth_types::image::{media_type, Descriptor, ImageConfig, Manifest};
use berth_types::{Digest, Reference};

use super::staging::StagedArchive;
use super::{docker, oci, ArchiveError};
use crate::layer::{add_layer, AddedLayer};

/// One image of an archive, whatever format it came in.
pub(crate) struct ImageSource {
    pub config_name: String,
    pub expected_config: Option<Digest>,
    /// The original manifest (OCI layouts); synthesised when absent.
    pub manifest: Option<(Vec<u8>, Digest)>,
    pub layers: Vec<LayerSource>,
    pub tags: Vec<Reference>,
}

pub(crate) struct LayerSource {
    pub name: String,
    pub expected_blob: Option<Digest>,
}

/// An image the archive held, now in the store.
#[derive(Clone, Debug)]
pub struct LoadedImage {
    pub id: Digest,
    pub tags: Vec<Reference>,
    /// Tags that pointed at another image before this load.
    pub moved: Vec<MovedTag>,
}

/// Loads every image in a `docker save` or OCI-layout archive. On error the
/// images loaded so far stay (as with Docker); content of the failed image is
/// removed unless another process is writing, in which case the next command
/// that can take the content lock removes it.
pub fn load_archive(store: &mut Store, input: impl Read) -> Result<Vec<LoadedImage>, ArchiveError> {
    let result = load_locked(store, input);
    if result.is_err() {
        if let Err(error) = store.try_collect_garbage() {
            tracing::warn!(%error, "failed to remove content of a failed load");
        }
    }
    result
}

fn load_locked(store: &mut Store, input: impl Read) -> Result<Vec<LoadedImage>, ArchiveError> {
    let _lock = store.lock_shared()?;
    let staging = store.staging_path("load");
    let staged = StagedArchive::extract(input, staging)?;
    let sources = if staged.has(docker::MANIFEST) {
        docker::read_sources(&staged)?
    } else if staged.has(oci::INDEX) {
        oci::read_sources(&staged)?
    } else {
        return Err(ArchiveError::UnknownFormat);
    };
    let mut layer_blobs = HashMap::new();
    sources
        .into_iter()
        .map(|source| load_image(store, &staged, source, &mut layer_blobs))
        .collect()
}

fn load_image(
    store: &mut Store,
    staged: &StagedArchive,
    source: ImageSource,
    layer_blobs: &mut HashMap<String, Digest>,
) -> Result<LoadedImage, ArchiveError> {
    let config_bytes = match &source.expected_config {
        Some(expected) => oci::read_verified(staged, &source.config_name, expected)?,
        None => staged.read(&source.config_name)?,
    };
    let config: ImageConfig =
        serde_json::from_slice(&config_bytes).map_err(|error| ArchiveError::BadJson {
            file: source.config_name.clone(),
            source: error,
        })?;
    let diff_ids = &config.rootfs.diff_ids;
    if diff_ids.len() != source.layers.len() {
        return Err(ArchiveError::LayerCount {
            config: source.config_name,
            expected: diff_ids.len(),
            actual: source.layers.len(),
        });
    }

    let mut added: Vec<AddedLayer> = Vec::with_capacity(source.layers.len());
    for (index, (layer, diff_id)) in source.layers.iter().zip(diff_ids).enumerate() {
        // A file shared by several images of one archive was moved into the
        // blob store by the first; read it from there.
        let file = match layer_blobs.get(&layer.name) {
            Some(blob) => store.blobs().path(blob),
            None => staged.file(&layer.name)?,
        };
        let parent = added.last().map(|layer| &layer.record.chain_id);
        let layer_result = add_layer(store, &file, parent, Some(diff_id)).map_err(|error| {
            ArchiveError::Layer {
                config: source.config_name.clone(),
                index,
                source: Box::new(error),
            }
        })?;
        if let Some(expected) = &layer.expected_blob {
            if *expected != layer_result.blob {
                return Err(ArchiveError::DigestMismatch {
                    file: layer.name.clone(),
                    expected: expected.clone(),
                });
            }
        }
        layer_blobs.insert(layer.name.clone(), layer_result.blob.clone());
        added.push(layer_result);
    }

    let id = store.blobs().put(&config_bytes)?;
    let manifest_digest = match &source.manifest {
        Some((bytes, digest)) => {
            let stored = store.blobs().put(bytes)?;
            debug_assert_eq!(&stored, digest, "manifest digest verified when read");
            stored
        }
        None => {
            let manifest = synthesize_manifest(&id, config_bytes.len() as u64, &added);
            let bytes = serde_json::to_vec(&manifest).expect("a manifest always serializes");
            store.blobs().put(&bytes)?
        }
    };
    let blobs = [id.clone(), manifest_digest.clone()]
        .into_iter()
        .chain(added.iter().map(|layer| layer.blob.clone()))
        .collect();
    let moved = store.add_image(&NewImage {
        id: id.clone(),
        manifest_digest: Some(manifest_digest),
        created: config.created.clone(),
        layers: added.into_iter().map(|layer| layer.record).collect(),
        blobs,
        tags: source.tags.iter().map(ToString::to_string).collect(),
        repo_digests: Vec::new(),
    })?;
    Ok(LoadedImage {
        id,
        tags: source.tags,
        moved,
    })
}

/// An OCI manifest for layers stored exactly as they arrived.
pub(crate) fn synthesize_manifest(
    config: &Digest,
    config_size: u64,
    layers: &[AddedLayer],
) -> Manifest {
    Manifest {
        schema_version: 2,
        media_type: Some(media_type::OCI_MANIFEST.to_owned()),
        config: Descriptor {
            media_type: media_type::OCI_CONFIG.to_owned(),
            digest: config.clone(),
            size: config_size,
            annotations: None,
            platform: None,
        },
        layers: layers
            .iter()
            .map(|layer| Descriptor {
                media_type: layer.media_type().to_owned(),
                digest: layer.blob.clone(),
                size: layer.blob_size,
                annotations: None,
                platform: None,
            })
            .collect(),
        annotations: None,
    }
}
