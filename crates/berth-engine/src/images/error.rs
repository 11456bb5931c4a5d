//! What can go wrong with local images (pulls and pushes have their own:
//! [`super::PullError`], [`super::PushError`]). Messages are Docker's where
//! Docker has them (moby `daemon/images`).

use berth_image::{ArchiveError, ImportError};
use berth_types::reference::ReferenceError;
use berth_types::Digest;

use crate::ErrorKind;

#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("multiple IDs found with provided prefix: {0}")]
    AmbiguousPrefix(String),
    /// A name that is no image reference; the parser's words are Docker's
    /// (`invalid reference format`).
    #[error(transparent)]
    InvalidReference(ReferenceError),
    #[error("Error parsing reference: {target:?} is not a valid repository/tag")]
    InvalidTag {
        target: String,
        #[source]
        source: ReferenceError,
    },
    #[error("refusing to create a tag with a digest reference")]
    DigestTag,
    #[error("conflict: unable to delete {id} (must be forced) - image is referenced in multiple repositories")]
    ReferencedByTags { id: String },
    #[error("conflict: unable to remove repository reference {reference:?} (must force) - container {container} is using its referenced image {id}")]
    InUse {
        reference: String,
        container: String,
        id: String,
    },
    #[error("conflict: unable to delete {id} (must be forced) - image is being used by stopped container {container}")]
    UsedByContainer { id: String, container: String },
    #[error("conflict: unable to delete {id} (cannot be forced) - image is being used by running container {container}")]
    UsedByRunningContainer { id: String, container: String },
    #[error(
        "conflict: unable to delete {id} (cannot be forced) - image has dependent child images"
    )]
    HasChildren { id: String },
    #[error("failed to load the image archive")]
    Load(#[source] ArchiveError),
    #[error("failed to save the image archive")]
    Save(#[source] ArchiveError),
    #[error("failed to import the root filesystem")]
    Import(#[source] ImportError),
    #[error("failed to parse the config of image {id}")]
    InvalidConfig {
        id: Digest,
        #[source]
        source: serde_json::Error,
    },
}

impl ImageError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::AmbiguousPrefix(_)
            | Self::InvalidReference(_)
            | Self::InvalidTag { .. }
            | Self::DigestTag => ErrorKind::InvalidArgument,
            Self::ReferencedByTags { .. }
            | Self::InUse { .. }
            | Self::UsedByContainer { .. }
            | Self::UsedByRunningContainer { .. }
            | Self::HasChildren { .. } => ErrorKind::Conflict,
            Self::Load(_) | Self::Save(_) | Self::Import(_) | Self::InvalidConfig { .. } => {
                ErrorKind::Internal
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::{EngineError, ErrorChain};

    #[test]
    fn image_errors_have_dockers_kinds() {
        let id = || "0123456789ab".to_owned();
        assert_eq!(
            ImageError::AmbiguousPrefix(id()).kind(),
            ErrorKind::InvalidArgument
        );
        assert_eq!(
            ImageError::ReferencedByTags { id: id() }.kind(),
            ErrorKind::Conflict
        );
        assert_eq!(
            ImageError::UsedByContainer {
                id: id(),
                container: id()
            }
            .kind(),
            ErrorKind::Conflict
        );
        assert_eq!(
            EngineError::from(ImageError::DigestTag).kind(),
            ErrorKind::InvalidArgument
        );
    }

    #[test]
    fn the_reference_error_is_the_cause_of_a_bad_tag() {
        let source = berth_types::Reference::parse_normalized("UPPER").unwrap_err();
        let error = EngineError::from(ImageError::InvalidTag {
            target: "UPPER".to_owned(),
            source,
        });
        assert_eq!(
            error.to_string(),
            "Error parsing reference: \"UPPER\" is not a valid repository/tag"
        );
        assert_eq!(
            ErrorChain(&error).to_string(),
            "Error parsing reference: \"UPPER\" is not a valid repository/tag: invalid reference format: repository name (library/UPPER) must be lowercase"
        );
        let bare = ImageError::InvalidReference(
            berth_types::Reference::parse_normalized("a b").unwrap_err(),
        );
        assert_eq!(bare.to_string(), "invalid reference format");
        assert!(std::error::Error::source(&bare).is_none());
    }
}
