use berth_image::{ArchiveError, ImportError};
use berth_store::StoreError;

/// Engine errors. Messages that Docker users know use Docker's words.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("No such image: {0}")]
    NoSuchImage(String),
    #[error("multiple IDs found with provided prefix: {0}")]
    AmbiguousImage(String),
    #[error("{0}")]
    InvalidReference(String),
    #[error("conflict: unable to delete {id} (must be forced) - image is referenced in multiple repositories")]
    ImageReferencedByTags { id: String },
    #[error("conflict: unable to remove repository reference {reference:?} (must force) - container {container} is using its referenced image {id}")]
    ImageInUse {
        reference: String,
        container: String,
        id: String,
    },
    #[error("failed to load the image archive")]
    Load(#[source] ArchiveError),
    #[error("failed to save the image archive")]
    Save(#[source] ArchiveError),
    #[error("failed to import the root filesystem")]
    Import(#[source] ImportError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl EngineError {
    /// True for "not found" errors (exit status and HTTP 404 map from it).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NoSuchImage(_))
    }

    /// True for conflicts (HTTP 409).
    pub fn is_conflict(&self) -> bool {
        matches!(
            self,
            Self::ImageReferencedByTags { .. } | Self::ImageInUse { .. }
        )
    }
}
