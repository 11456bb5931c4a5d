//! What can stop a push.

use berth_registry::client::ClientError;
use berth_store::StoreError;
use berth_types::Digest;

use crate::images::pull::PullError;

#[derive(Debug, thiserror::Error)]
pub enum PushError {
    #[error("{0}")]
    InvalidReference(String),
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
