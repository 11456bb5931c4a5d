//! Adding one layer blob to the store: keep the blob as given (so `save` and
//! `push` can hand out exactly the bytes the manifest names) and unpack it
//! once under its chain id.

use std::path::Path;

use berth_store::{LayerRecord, Store, StoreError};
use berth_types::image::media_type;
use berth_types::Digest;

use crate::unpack::{self, Compression, UnpackError};

#[derive(Debug, thiserror::Error)]
pub enum LayerError {
    #[error("failed to read layer {path:?}")]
    Read {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to unpack layer {path:?}")]
    Unpack {
        path: std::path::PathBuf,
        #[source]
        source: Box<UnpackError>,
    },
    #[error(
        "layer {path:?} does not match the image config: expected diff id {expected}, got {actual}"
    )]
    DiffIdMismatch {
        path: std::path::PathBuf,
        expected: Digest,
        actual: Digest,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A layer now present in the store.
#[derive(Clone, Debug)]
pub struct AddedLayer {
    pub record: LayerRecord,
    pub blob: Digest,
    pub blob_size: u64,
    pub compression: Compression,
}

impl AddedLayer {
    /// The OCI media type of the stored blob.
    pub fn media_type(&self) -> &'static str {
        match self.compression {
            Compression::None => media_type::OCI_LAYER,
            Compression::Gzip => media_type::OCI_LAYER_GZIP,
            Compression::Zstd => media_type::OCI_LAYER_ZSTD,
        }
    }
}

/// Unpacks the layer blob at `file` on top of `parent` (unless that chain is
/// already unpacked), verifies its diff id when `expected_diff_id` is given,
/// and moves the file into the blob store. The caller holds the shared
/// content lock. On error nothing is left in the store.
pub fn add_layer(
    store: &Store,
    file: &Path,
    parent: Option<&Digest>,
    expected_diff_id: Option<&Digest>,
) -> Result<AddedLayer, LayerError> {
    let read_error = |source| LayerError::Read {
        path: file.to_owned(),
        source,
    };
    let input = fs_err::File::open(file).map_err(read_error)?;
    let staged = store.layers().stage()?;
    let outcome = unpack::unpack_layer(
        std::io::BufReader::with_capacity(1 << 20, input),
        staged.path(),
    )
    .map_err(|source| LayerError::Unpack {
        path: file.to_owned(),
        source: Box::new(source),
    })?;
    if let Some(expected) = expected_diff_id {
        if *expected != outcome.diff_id {
            return Err(LayerError::DiffIdMismatch {
                path: file.to_owned(),
                expected: expected.clone(),
                actual: outcome.diff_id,
            });
        }
    }
    let chain_id = match parent {
        None => outcome.diff_id.clone(),
        Some(parent) => Digest::of_bytes(format!("{parent} {}", outcome.diff_id).as_bytes()),
    };
    // A concurrent or earlier load may have unpacked this chain already; the
    // commit then keeps that copy and drops ours.
    staged.commit(&chain_id)?;
    let blob_size = fs_err::metadata(file).map_err(read_error)?.len();
    let blob = store
        .blobs()
        .adopt(file, Some(&outcome.compressed_digest))?;
    Ok(AddedLayer {
        record: LayerRecord {
            chain_id,
            diff_id: outcome.diff_id,
            parent: parent.cloned(),
            size: outcome.size,
        },
        blob,
        blob_size,
        compression: outcome.compression,
    })
}
