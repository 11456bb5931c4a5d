//! `import`: a root filesystem tarball becomes a one-layer image.

mod changes;

use std::io::{Read, Write};

use berth_store::{MovedTag, NewImage, Store, StoreError};
use berth_types::image::{ContainerConfig, History, ImageConfig, RootFs};
use berth_types::{Digest, Reference};

pub use changes::{parse_change, Change, ChangeError};

use crate::archive::oci::host_architecture;
use crate::layer::{add_layer, LayerError};

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("failed to read the rootfs tarball")]
    Read(#[source] std::io::Error),
    #[error(transparent)]
    Change(#[from] ChangeError),
    #[error(transparent)]
    Layer(#[from] LayerError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    pub reference: Option<Reference>,
    /// Dockerfile-style lines from `-c/--change`.
    pub changes: Vec<String>,
    /// `-m/--message`: the history comment.
    pub message: Option<String>,
    /// Where the tarball came from, for the history ("-" for stdin).
    pub source_name: String,
}

#[derive(Clone, Debug)]
pub struct ImportedImage {
    pub id: Digest,
    pub moved: Vec<MovedTag>,
}

pub fn import_rootfs(
    store: &mut Store,
    mut input: impl Read,
    options: &ImportOptions,
) -> Result<ImportedImage, ImportError> {
    // Validate the changes before touching the store.
    let changes = options
        .changes
        .iter()
        .map(|line| parse_change(line))
        .collect::<Result<Vec<_>, _>>()?;
    let result = import_locked(store, &mut input, options, &changes);
    if result.is_err() {
        if let Err(error) = store.try_collect_garbage() {
            tracing::warn!(%error, "failed to remove content of a failed import");
        }
    }
    result
}

fn import_locked(
    store: &mut Store,
    input: &mut dyn Read,
    options: &ImportOptions,
    changes: &[Change],
) -> Result<ImportedImage, ImportError> {
    let _lock = store.lock_shared()?;
    let staged_file = store.staging_path("import");
    let result = (|| {
        let mut file = fs_err::File::create(&staged_file).map_err(ImportError::Read)?;
        std::io::copy(input, &mut file).map_err(ImportError::Read)?;
        file.flush().map_err(ImportError::Read)?;
        drop(file);
        add_layer(store, &staged_file, None, None).map_err(ImportError::from)
    })();
    let _ = fs_err::remove_file(&staged_file);
    let layer = result?;

    let mut container_config = ContainerConfig::default();
    for change in changes {
        change.apply(&mut container_config);
    }
    let created = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
    let config = ImageConfig {
        created: Some(created.clone()),
        architecture: host_architecture().to_owned(),
        os: "linux".to_owned(),
        config: Some(container_config),
        rootfs: RootFs {
            kind: "layers".to_owned(),
            diff_ids: vec![layer.record.diff_id.clone()],
        },
        history: vec![History {
            created: Some(created.clone()),
            created_by: None,
            comment: Some(
                options
                    .message
                    .clone()
                    .unwrap_or_else(|| format!("Imported from {}", options.source_name)),
            ),
            ..History::default()
        }],
        ..ImageConfig::default()
    };
    let config_bytes = serde_json::to_vec(&config).expect("an image config always serializes");
    let id = store.blobs().put(&config_bytes)?;
    let manifest = crate::archive::load::synthesize_manifest(
        &id,
        config_bytes.len() as u64,
        std::slice::from_ref(&layer),
    );
    let manifest_digest = store
        .blobs()
        .put(&serde_json::to_vec(&manifest).expect("a manifest always serializes"))?;
    let moved = store.add_image(&NewImage {
        id: id.clone(),
        manifest_digest: Some(manifest_digest.clone()),
        created: Some(created),
        blobs: vec![id.clone(), manifest_digest, layer.blob.clone()],
        layers: vec![layer.record],
        tags: options.reference.iter().map(ToString::to_string).collect(),
        repo_digests: Vec::new(),
    })?;
    Ok(ImportedImage { id, moved })
}
