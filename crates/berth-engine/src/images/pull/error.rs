//! What can stop a pull or a push, worded as Docker words it where users
//! know the text (the registry client's errors pass through unchanged).

use berth_image::LayerError;
use berth_registry::client::ClientError;
use berth_registry::config::ConfigError;
use berth_registry::credentials::CredentialsError;
use berth_store::StoreError;
use berth_types::Digest;

#[derive(Debug, thiserror::Error)]
pub enum PullError {
    #[error("{0}")]
    InvalidReference(String),
    /// docker/cli's text for `pull --all-tags NAME:TAG` (or `@DIGEST`).
    #[error("tag can't be used with --all-tags/-a")]
    TagWithAllTags,
    /// containerd's `platforms.Parse` text, as dockerd prints it.
    #[error("{platform:?}: unknown operating system or architecture: invalid argument")]
    InvalidPlatform { platform: String },
    #[error(transparent)]
    Registry(#[from] ClientError),
    #[error("failed to read the registry settings")]
    Config(#[from] ConfigError),
    #[error("failed to get the credentials for {registry}")]
    Credentials {
        registry: String,
        #[source]
        source: CredentialsError,
    },
    #[error("invalid mirror {mirror:?}")]
    InvalidMirror { mirror: String },
    #[error("failed to parse the image config {digest}")]
    InvalidConfig {
        digest: Digest,
        #[source]
        source: serde_json::Error,
    },
    #[error("image config {digest} lists {expected} layers but the manifest has {actual}")]
    LayerCount {
        digest: Digest,
        expected: usize,
        actual: usize,
    },
    #[error("failed to stage blob {digest}")]
    Stage {
        digest: Digest,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to register layer {digest}")]
    Layer {
        digest: Digest,
        #[source]
        source: Box<LayerError>,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}
