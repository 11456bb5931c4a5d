use std::path::PathBuf;

use berth_types::Digest;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("failed to access {path:?}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to open the metadata database {path:?}")]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("metadata database error")]
    Database(#[from] rusqlite::Error),
    #[error(
        "metadata database schema version {found} is newer than this berth supports ({supported})"
    )]
    SchemaTooNew { found: i64, supported: i64 },
    #[error("corrupt metadata: {0}")]
    Corrupt(String),
    #[error("digest mismatch: expected {expected}, got {actual}")]
    DigestMismatch { expected: Digest, actual: Digest },
    #[error("blob {0} not found")]
    BlobNotFound(Digest),
    #[error("failed to lock {path:?}")]
    Lock {
        path: PathBuf,
        #[source]
        source: nix::Error,
    },
}

impl StoreError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { path, source }
    }
}
