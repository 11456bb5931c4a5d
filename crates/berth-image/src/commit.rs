//! A new image from an existing one plus one layer (`commit`).

use std::path::Path;

use berth_store::{ImageRecord, MovedTag, NewImage, Store};
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
        .image_of_containers(request.base)?
        .ok_or_else(|| CommitError::BaseImage(request.base.clone()))?;
    let mut config = base_config(store, &base)?;
    if request.author.is_some() {
        config.author = request.author.clone();
    }
    config.config = Some(request.config);
    // The base's own record of its container is not this image's.
    config.extra.remove("container");
    config.extra.remove("container_config");
    if let Some((id, container_config)) = request.container {
        config
            .extra
            .insert("container".to_owned(), Value::String(id));
        config
            .extra
            .insert("container_config".to_owned(), container_config);
    }
    store_child_image(
        store,
        Some(&base),
        Some(request.layer_tar),
        config,
        request.history,
        request.reference.iter().map(ToString::to_string).collect(),
    )
}

/// One step of a build: `parent`'s layers (none for `FROM scratch`) plus
/// `layer_tar` when the step changed files, with `config` as its runtime
/// config and `history` as the step's entry (`empty_layer` is set here
/// for a step without a layer). Untagged; the builder tags the last.
pub struct StepCommit<'a> {
    pub parent: Option<&'a Digest>,
    pub layer_tar: Option<&'a Path>,
    pub config: ContainerConfig,
    pub history: History,
    /// `MAINTAINER`: the image's `author`.
    pub author: Option<String>,
    /// The step's container config as moby's classic builder records it
    /// (`container_config`: the config with the step's command as `Cmd`);
    /// compose 1.x reads its `Volumes` and `Cmd` back.
    pub container_config: Option<Value>,
    /// The platform of an image without a parent (`FROM scratch`); None
    /// for this host's. An image with a parent keeps the parent's.
    pub platform: Option<berth_types::image::Platform>,
}

pub fn commit_step(store: &mut Store, request: StepCommit<'_>) -> Result<Committed, CommitError> {
    let _lock = store.lock_shared()?;
    let base = match request.parent {
        Some(parent) => Some(
            store
                .image(parent)?
                .ok_or_else(|| CommitError::BaseImage(parent.clone()))?,
        ),
        None => None,
    };
    let mut config = match &base {
        Some(base) => base_config(store, base)?,
        None => ImageConfig {
            architecture: request.platform.as_ref().map_or_else(
                || crate::host_architecture().to_owned(),
                |p| p.architecture.clone(),
            ),
            os: request
                .platform
                .as_ref()
                .map_or_else(|| "linux".to_owned(), |p| p.os.clone()),
            variant: request.platform.as_ref().and_then(|p| p.variant.clone()),
            rootfs: berth_types::image::RootFs {
                kind: "layers".to_owned(),
                diff_ids: Vec::new(),
            },
            ..ImageConfig::default()
        },
    };
    if request.author.is_some() {
        config.author = request.author;
    }
    config.config = Some(request.config);
    config.extra.remove("container");
    config.extra.remove("container_config");
    if let Some(container_config) = request.container_config {
        config
            .extra
            .insert("container_config".to_owned(), container_config);
    }
    let history = History {
        empty_layer: request.layer_tar.is_none(),
        ..request.history
    };
    store_child_image(
        store,
        base.as_ref(),
        request.layer_tar,
        config,
        history,
        Vec::new(),
    )
}

fn base_config(store: &Store, base: &ImageRecord) -> Result<ImageConfig, CommitError> {
    serde_json::from_slice(&store.blobs().read(&base.id)?).map_err(CommitError::BaseConfig)
}

/// Stores `config` (the base's, changed by the caller) as a new image on
/// `base` with `layer_tar` as one more layer, if any; the caller holds the
/// store's lock.
fn store_child_image(
    store: &mut Store,
    base: Option<&ImageRecord>,
    layer_tar: Option<&Path>,
    mut config: ImageConfig,
    history: History,
    tags: Vec<String>,
) -> Result<Committed, CommitError> {
    let mut manifest_layers = Vec::new();
    let mut records = Vec::new();
    if let Some(base) = base {
        let manifest: berth_types::image::Manifest = base
            .manifest_digest
            .as_ref()
            .and_then(|digest| store.blobs().read(digest).ok())
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or_else(|| CommitError::BaseImage(base.id.clone()))?;
        manifest_layers = manifest.layers;
        for chain_id in &base.layers {
            if let Some(record) = store.layer(chain_id)? {
                records.push(record);
            }
        }
    }
    let layer = layer_tar
        .map(|tar| add_layer(store, tar, base.and_then(|base| base.layers.last()), None))
        .transpose()?;

    // A history entry that comes with its time (a reproducible build's
    // SOURCE_DATE_EPOCH) dates the image too.
    let created = history
        .created
        .clone()
        .unwrap_or_else(|| chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true));
    config.created = Some(created.clone());
    // moby's `image.Image.Parent`: the image committed on, in the config
    // (so also in `save`), shown by inspect as `Parent`.
    match base {
        Some(base) => config
            .extra
            .insert("parent".to_owned(), Value::String(base.id.to_string())),
        None => config.extra.remove("parent"),
    };
    if let Some(layer) = &layer {
        config.rootfs.diff_ids.push(layer.record.diff_id.clone());
    }
    config.history.push(History {
        created: Some(created.clone()),
        ..history
    });
    let config_bytes = serde_json::to_vec(&config).expect("an image config always serializes");
    let id = store.blobs().put(&config_bytes)?;

    // The new manifest keeps the base layers' blobs and adds ours.
    let mut new_manifest = synthesize_manifest(&id, config_bytes.len() as u64, layer.as_slice());
    manifest_layers.append(&mut new_manifest.layers);
    new_manifest.layers = manifest_layers;
    let manifest_digest = store
        .blobs()
        .put(&serde_json::to_vec(&new_manifest).expect("a manifest always serializes"))?;

    records.extend(layer.iter().map(|layer| layer.record.clone()));
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
        tags,
        repo_digests: Vec::new(),
    })?;
    Ok(Committed { id, moved })
}
