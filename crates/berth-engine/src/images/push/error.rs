//! What can stop a push.

use berth_registry::client::ClientError;
use berth_store::StoreError;
use berth_types::{Digest, ReferenceError};

use crate::images::pull::PullError;
use crate::ErrorKind;

#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The parser's words are Docker's (`invalid reference format`).
    #[error(transparent)]
    InvalidReference(ReferenceError),
    /// docker/cli's text for a name with no local image.
    #[error("An image does not exist locally with the tag: {0}")]
    NoSuchImage(String),
    #[error("image {id} has no stored manifest")]
    NoManifest { id: Digest },
    #[error("failed to parse the stored manifest {digest}")]
    InvalidManifest {
        digest: Digest,
        #[source]
        source: serde_json::Error,
    },
    #[error(transparent)]
    Registry(#[from] ClientError),
    #[error(transparent)]
    Connect(#[from] PullError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl PushError {
    /// A failed push is the daemon's failure (500) unless the image or the
    /// name was wrong: dockerd reports what the registry said in the
    /// progress stream, not in the status.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::NoSuchImage(_) => ErrorKind::NotFound,
            Self::InvalidReference(_) => ErrorKind::InvalidArgument,
            Self::NoManifest { .. }
            | Self::InvalidManifest { .. }
            | Self::Registry(_)
            | Self::Connect(_)
            | Self::Store(_) => ErrorKind::Internal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_errors_have_their_kinds() {
        let missing = PushError::NoSuchImage("localhost:5000/x:latest".to_owned());
        assert_eq!(missing.kind(), ErrorKind::NotFound);
        assert_eq!(
            missing.to_string(),
            "An image does not exist locally with the tag: localhost:5000/x:latest"
        );
        let bad = PushError::InvalidReference(ReferenceError::InvalidFormat);
        assert_eq!(bad.kind(), ErrorKind::InvalidArgument);
        assert_eq!(bad.to_string(), "invalid reference format");
        let registry = PushError::Registry(ClientError::EndlessTagList {
            url: "u".to_owned(),
        });
        assert_eq!(registry.kind(), ErrorKind::Internal);
    }
}
