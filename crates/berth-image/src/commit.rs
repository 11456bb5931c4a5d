//! A new image from an existing one plus one layer (`commit`).

use std::path::Path;

use berth_store::{MovedTag, NewImage, Store};
use berth_types::image::{ContainerConfig, History, ImageConfig};
use berth_types::{Digest, Reference};
use serde_json::Value;

use crate::archive::load::synthesize_manifest;
use crate::layer::{add_layer, LayerError};

#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    #[error("base image {0} not found")]
    BaseImage(Digest),
    #[error("the base image config is not valid")]
    BaseConfig(#[source] serde_json::Error),
    #[error(transparent)]
    Layer(#[from] LayerError),
    #[error(transparent)]
    Store(#[from] berth_store::StoreError),
}

pub struct CommitRequest<'a> {
    pub base: &'a Digest,
    /// The new layer as a tar file (it is moved into the blob store).
    pub layer_tar: &'a Path,
    pub config: ContainerConfig,
    pub history: History,
    pub author: Option<String>,
    pub reference: Option<Reference>,
    /// The container committed, as Docker records it in the image config
    /// (`container`: its id, `container_config`: its Config): docker-compose
    /// 1.x and Docker < 25 read them back as `Container`/`ContainerConfig`.
    pub container: Option<(String, serde_json::Value)>,
}

pub struct Committed {
    pub id: Digest,
    pub moved: Vec<MovedTag>,
}

pub fn commit_image(
    store: &mut Store,
    request: CommitRequest<'_>,
) -> Result<Committed, CommitError> {
    let _lock = store.lock_shared()?;
    let base = store
        .image(request.base)?
        .ok_or_else(|| CommitError::BaseImage(request.base.clone()))?;
    let mut config: ImageConfig =
        serde_json::from_slice(&store.blobs().read(&base.id)?).map_err(CommitError::BaseConfig)?;
    let manifest: berth_types::image::Manifest = base
        .manifest_digest
        .as_ref()
        .and_then(|digest| store.blobs().read(digest).ok())
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(|| CommitError::BaseImage(base.id.clone()))?;
    let parent = base.layers.last();
    let layer = add_layer(store, request.layer_tar, parent, None)?;

    let created = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
    config.created = Some(created.clone());
    if request.author.is_some() {
        config.author = request.author.clone();
    }
    config.config = Some(request.config);
    // The base's own record of its container is not this image's.
    config.extra.remove("container");
    config.extra.remove("container_config");
    // moby's `image.Image.Parent`: the image committed on, in the config
    // (so also in `save`), shown by inspect as `Parent`.
    config
        .extra
        .insert("parent".to_owned(), Value::String(base.id.to_string()));
    if let Some((id, container_config)) = request.container {
        config
            .extra
            .insert("container".to_owned(), Value::String(id));
        config
            .extra
            .insert("container_config".to_owned(), container_config);
    }
    config.rootfs.diff_ids.push(layer.record.diff_id.clone());
    config.history.push(History {
        created: Some(created.clone()),
        ..request.history
    });
    let config_bytes = serde_json::to_vec(&config).expect("an image config always serializes");
    let id = store.blobs().put(&config_bytes)?;

    // The new manifest keeps the base layers' blobs and adds ours.
    let mut new_manifest =
        synthesize_manifest(&id, config_bytes.len() as u64, std::slice::from_ref(&layer));
    let mut layers = manifest.layers.clone();
    layers.append(&mut new_manifest.layers);
    new_manifest.layers = layers;
    let manifest_digest = store
        .blobs()
        .put(&serde_json::to_vec(&new_manifest).expect("a manifest always serializes"))?;

    let mut records = Vec::new();
    for chain_id in &base.layers {
        if let Some(record) = store.layer(chain_id)? {
            records.push(record);
        }
    }
    records.push(layer.record.clone());
    let blobs = [id.clone(), manifest_digest.clone()]
        .into_iter()
        .chain(
            new_manifest
                .layers
                .iter()
                .map(|descriptor| descriptor.digest.clone()),
        )
        .collect();
    let moved = store.add_image(&NewImage {
        id: id.clone(),
        manifest_digest: Some(manifest_digest),
        created: Some(created),
        layers: records,
        blobs,
        tags: request.reference.iter().map(ToString::to_string).collect(),
        repo_digests: Vec::new(),
    })?;
    Ok(Committed { id, moved })
}
