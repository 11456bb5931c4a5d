use std::path::PathBuf;

use berth_store::StoreError;
use berth_types::Digest;

use crate::LayerError;

#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("failed to read the archive")]
    Read(#[source] std::io::Error),
    #[error("failed to write {path:?}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("unsafe path {path:?} in the archive")]
    UnsafePath { path: String },
    #[error("invalid archive: neither manifest.json nor index.json found")]
    UnknownFormat,
    #[error("invalid archive: {file} is not valid")]
    BadJson {
        file: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("invalid archive: {file} is missing")]
    Missing { file: String },
    #[error("invalid archive: {file} does not match its digest {expected}")]
    DigestMismatch { file: String, expected: Digest },
    #[error("invalid archive: image config {config} lists {expected} layers but the manifest has {actual}")]
    LayerCount {
        config: String,
        expected: usize,
        actual: usize,
    },
    #[error("invalid archive: no image for platform linux/{architecture} in {file}")]
    NoPlatform { file: String, architecture: String },
    #[error("invalid archive: reference {reference:?}")]
    BadReference {
        reference: String,
        #[source]
        source: Box<berth_types::ReferenceError>,
    },
    #[error("failed to load layer {index} of {config}")]
    Layer {
        config: String,
        index: usize,
        #[source]
        source: Box<LayerError>,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}
