//! What can stop a pull or a push, worded as Docker words it where users
//! know the text (the registry client's errors pass through unchanged).

use berth_image::LayerError;
use berth_registry::client::ClientError;
use berth_registry::config::ConfigError;
use berth_registry::credentials::CredentialsError;
use berth_store::StoreError;
use berth_types::{Digest, ReferenceError};

use crate::ErrorKind;

#[derive(Debug, thiserror::Error)]
pub enum PullError {
    /// The parser's words are Docker's (`invalid reference format`).
    #[error(transparent)]
    InvalidReference(ReferenceError),
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

impl PullError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::InvalidReference(_) | Self::TagWithAllTags | Self::InvalidPlatform { .. } => {
                ErrorKind::InvalidArgument
            }
            Self::Registry(error) => registry_kind(error),
            Self::Config(_)
            | Self::Credentials { .. }
            | Self::InvalidMirror { .. }
            | Self::InvalidConfig { .. }
            | Self::LayerCount { .. }
            | Self::Stage { .. }
            | Self::Layer { .. }
            | Self::Store(_) => ErrorKind::Internal,
        }
    }
}

/// dockerd's kind for a registry's answer: the registry refused the
/// credentials (401, also for its 403), or does not have the manifest or
/// repository (404, by the answer's status or its error codes); anything
/// else is the daemon's failure.
pub(crate) fn registry_kind(error: &ClientError) -> ErrorKind {
    match error {
        ClientError::ManifestNotFound { .. } | ClientError::RepositoryNotFound { .. } => {
            ErrorKind::NotFound
        }
        ClientError::Unauthorized { source, .. } => match source.status() {
            Some(401 | 403) => ErrorKind::Unauthorized,
            _ => registry_kind(source),
        },
        _ => match error.status() {
            Some(401 | 403) => ErrorKind::Unauthorized,
            Some(404) => ErrorKind::NotFound,
            _ if error
                .registry_codes()
                .iter()
                .any(|code| matches!(*code, "MANIFEST_UNKNOWN" | "NAME_UNKNOWN")) =>
            {
                ErrorKind::NotFound
            }
            _ => ErrorKind::Internal,
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::{EngineError, ErrorChain};
    use berth_registry::client::{RegistryErrorEntry, RegistryErrors};

    #[test]
    fn pull_errors_have_dockers_kinds() {
        let bad = berth_types::Reference::parse_normalized("a b").unwrap_err();
        let error = PullError::InvalidReference(bad);
        assert_eq!(error.kind(), ErrorKind::InvalidArgument);
        assert_eq!(error.to_string(), "invalid reference format");
        assert_eq!(
            PullError::InvalidPlatform {
                platform: "x".to_owned()
            }
            .kind(),
            ErrorKind::InvalidArgument
        );
        let stage = EngineError::from(PullError::Stage {
            digest: Digest::parse(&format!("sha256:{}", "a".repeat(64))).unwrap(),
            source: std::io::Error::from_raw_os_error(libc::ENOSPC),
        });
        assert_eq!(stage.kind(), ErrorKind::Internal);
        assert_eq!(
            ErrorChain(&stage).to_string(),
            format!(
                "failed to stage blob sha256:{}: No space left on device (os error 28)",
                "a".repeat(64)
            )
        );
    }

    fn answer(status: u16, code: &str) -> ClientError {
        ClientError::Registry {
            method: "GET",
            url: "https://r/v2/x/manifests/1".to_owned(),
            status,
            errors: RegistryErrors::Entries(vec![RegistryErrorEntry {
                code: code.to_owned(),
                message: code.to_lowercase().replace('_', " "),
            }]),
        }
    }

    #[test]
    fn registry_answers_map_by_status_and_variant() {
        assert_eq!(
            registry_kind(&answer(401, "UNAUTHORIZED")),
            ErrorKind::Unauthorized
        );
        assert_eq!(
            registry_kind(&answer(403, "DENIED")),
            ErrorKind::Unauthorized
        );
        assert_eq!(
            registry_kind(&answer(404, "MANIFEST_UNKNOWN")),
            ErrorKind::NotFound
        );
        // Some registries answer an unknown manifest with another status.
        assert_eq!(
            registry_kind(&answer(400, "MANIFEST_UNKNOWN")),
            ErrorKind::NotFound
        );
        assert_eq!(registry_kind(&answer(500, "UNKNOWN")), ErrorKind::Internal);
        let wrapped = ClientError::Unauthorized {
            method: "HEAD",
            url: "https://r/v2/x/manifests/1".to_owned(),
            source: Box::new(answer(401, "UNAUTHORIZED")),
        };
        assert_eq!(registry_kind(&wrapped), ErrorKind::Unauthorized);
        let missing = ClientError::ManifestNotFound {
            reference: "r/x:1".to_owned(),
            errors: RegistryErrors::Status { status: 404 },
        };
        assert_eq!(PullError::Registry(missing).kind(), ErrorKind::NotFound);
        let endless = ClientError::EndlessTagList {
            url: "https://r/v2/x/tags/list".to_owned(),
        };
        assert_eq!(registry_kind(&endless), ErrorKind::Internal);
        let missing = ClientError::NoMatchingPlatform {
            platform: "linux/s390x".to_owned(),
        };
        assert_eq!(registry_kind(&missing), ErrorKind::Internal);
        assert_eq!(
            PullError::Registry(missing).kind(),
            ErrorKind::Internal,
            "a manifest list without the platform is not a 404 (dockerd's 500)"
        );
    }
}
