//! What can go wrong talking to a registry, worded as Docker words it where
//! users know the text.

use std::fmt;
use std::path::PathBuf;

use berth_types::Digest;
use serde::Deserialize;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The request never got a response (refused, reset, TLS, timeout).
    /// Printed with its cause as Go prints a `url.Error`:
    /// `Get "https://host/v2/": …`.
    #[error("{method} \"{url}\"")]
    Transport {
        method: &'static str,
        url: String,
        #[source]
        source: ureq::Error,
    },
    /// The registry answered with an error status; the text is the
    /// registry's own (`unauthorized: authentication required`).
    #[error("{errors}")]
    Registry {
        method: &'static str,
        url: String,
        status: u16,
        errors: RegistryErrors,
    },
    /// The registry (or its token service) refused the credentials, or
    /// wanted some: Docker prints `Head "https://host/v2/…": unauthorized: …`.
    #[error("{method} \"{url}\"")]
    Unauthorized {
        method: &'static str,
        url: String,
        #[source]
        source: Box<ClientError>,
    },
    /// Docker's `manifest for NAME:TAG not found: manifest unknown: …`.
    #[error("manifest for {reference} not found")]
    ManifestNotFound {
        reference: String,
        #[source]
        errors: RegistryErrors,
    },
    /// Docker's `repository NAME not found: name unknown: …`, for a tag list
    /// of a repository the registry does not know.
    #[error("repository {repository} not found")]
    RepositoryNotFound {
        repository: String,
        #[source]
        errors: RegistryErrors,
    },
    #[error("the registry's tag list does not end (page {url:?} came again)")]
    EndlessTagList { url: String },
    #[error("invalid tag list from {url:?}")]
    InvalidTagList {
        url: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("no matching manifest for {platform} in the manifest list entries")]
    NoMatchingPlatform { platform: String },
    #[error("unsupported manifest media type {media_type:?}")]
    UnsupportedManifest { media_type: String },
    #[error("failed to parse manifest {digest}")]
    InvalidManifest {
        digest: Digest,
        #[source]
        source: serde_json::Error,
    },
    #[error("manifest verification failed for digest {expected}")]
    ManifestDigestMismatch { expected: Digest, actual: Digest },
    /// The blob's bytes hash to something else: the caller discards what
    /// it staged.
    #[error("filesystem layer verification failed for digest {expected}")]
    BlobDigestMismatch { expected: Digest, actual: Digest },
    #[error("blob {digest} has {actual} bytes, expected {expected}")]
    BlobSizeMismatch {
        digest: Digest,
        expected: u64,
        actual: u64,
    },
    #[error("failed to read blob {digest} from the registry")]
    Download {
        digest: Digest,
        #[source]
        source: std::io::Error,
    },
    /// A download that kept failing: the first try and every retry (a
    /// registry gone mid-blob, then refusing or resetting connections).
    #[error("failed to read blob {digest} from the registry after {attempts} tries")]
    BlobRetriesExhausted {
        digest: Digest,
        attempts: u32,
        /// The last try's failure (for a broken download, its I/O error).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("failed to write blob {digest}")]
    Write {
        digest: Digest,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to read blob {digest} to push")]
    ReadSource {
        digest: Digest,
        #[source]
        source: std::io::Error,
    },
    #[error("{method} \"{url}\" returned {status} without a Location header")]
    MissingLocation {
        method: &'static str,
        url: String,
        status: u16,
    },
    #[error("the registry stored {actual} instead of {expected}")]
    PushedDigestMismatch { expected: Digest, actual: String },
    #[error("invalid token response from {realm}")]
    TokenResponse {
        realm: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("failed to read certificates from {path:?}")]
    Certificates {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid PEM in {path:?}")]
    Pem {
        path: PathBuf,
        #[source]
        source: ureq::Error,
    },
    #[error("client certificate {path:?} has no key file beside it")]
    MissingClientKey { path: PathBuf },
}

impl ClientError {
    /// True for failures a retry may cure: no response, or a 5xx.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Transport { source, .. } => is_transient_transport(source),
            Self::Registry { status, .. } => *status >= 500,
            Self::Download { .. } => true,
            _ => false,
        }
    }

    /// What to show under a message that already names the blob: a
    /// download's own I/O error, else the whole error.
    pub(super) fn into_cause(self) -> Box<dyn std::error::Error + Send + Sync> {
        match self {
            Self::Download { source, .. } => Box::new(source),
            other => Box::new(other),
        }
    }

    /// The registry's error codes, if it answered with some
    /// (`MANIFEST_UNKNOWN`, `UNAUTHORIZED`, `DENIED`…).
    pub fn registry_codes(&self) -> Vec<&str> {
        match self {
            Self::Registry { errors, .. }
            | Self::ManifestNotFound { errors, .. }
            | Self::RepositoryNotFound { errors, .. } => errors.codes(),
            Self::Unauthorized { source, .. } => source.registry_codes(),
            _ => Vec::new(),
        }
    }

    /// The HTTP status of a registry error answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Registry { status, .. } => Some(*status),
            Self::Unauthorized { source, .. } => source.status(),
            _ => None,
        }
    }
}

fn is_transient_transport(error: &ureq::Error) -> bool {
    // TLS failures (a certificate not trusted) come as InvalidData: trying
    // again cannot help.
    if let ureq::Error::Io(io) = error {
        return io.kind() != std::io::ErrorKind::InvalidData;
    }
    matches!(
        error,
        ureq::Error::ConnectionFailed
            | ureq::Error::Timeout(_)
            | ureq::Error::Protocol(_)
            | ureq::Error::BodyStalled
    )
}

/// One entry of the registry's `{"errors":[{"code","message","detail"}]}`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct RegistryErrorEntry {
    pub code: String,
    #[serde(default)]
    pub message: String,
}

/// The body of a registry's error answer, read as Docker's
/// `HandleErrorResponse` reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegistryErrors {
    /// The standard `errors` array.
    Entries(Vec<RegistryErrorEntry>),
    /// A 4xx whose body is not the standard shape: Docker prints
    /// `error parsing HTTP 404 response body: …: "<body>"`.
    Unparsed {
        status: u16,
        reason: &'static str,
        body: String,
    },
    /// A 5xx or other unexpected status: Docker prints
    /// `received unexpected HTTP status: 500 Internal Server Error`.
    Status { status: u16 },
}

impl RegistryErrors {
    /// Reads an error answer's body (its status and the bytes).
    pub fn from_response(status: u16, body: &[u8]) -> Self {
        if !(400..500).contains(&status) {
            return Self::Status { status };
        }
        // Docker Hub's token service answers `{"details": "…"}`.
        #[derive(Deserialize)]
        struct Details {
            details: String,
        }
        if let Ok(Details { details }) = serde_json::from_slice::<Details>(body) {
            if !details.is_empty() {
                // distribution 2.8 (what Debian's docker is built with)
                // reads a 403's details as DENIED.
                let code = if status == 401 {
                    "UNAUTHORIZED"
                } else if status == 403 {
                    "DENIED"
                } else if status == 429 {
                    "TOOMANYREQUESTS"
                } else {
                    "UNKNOWN"
                };
                return Self::Entries(vec![RegistryErrorEntry {
                    code: code.to_owned(),
                    message: details,
                }]);
            }
        }
        #[derive(Deserialize)]
        struct Body {
            errors: Vec<RegistryErrorEntry>,
        }
        let reason = match serde_json::from_slice::<Body>(body) {
            Ok(parsed) if !parsed.errors.is_empty() => return Self::Entries(parsed.errors),
            Ok(_) => "no error details found in HTTP response body",
            Err(_) => "invalid character in body",
        };
        if status == 401 {
            return Self::Entries(vec![RegistryErrorEntry {
                code: "UNAUTHORIZED".to_owned(),
                message: "authentication required".to_owned(),
            }]);
        }
        Self::Unparsed {
            status,
            reason,
            body: String::from_utf8_lossy(body).into_owned(),
        }
    }

    pub fn codes(&self) -> Vec<&str> {
        match self {
            Self::Entries(entries) => entries.iter().map(|entry| entry.code.as_str()).collect(),
            _ => Vec::new(),
        }
    }
}

/// Docker's `errcode.ErrorCode.Error()`: `MANIFEST_UNKNOWN` → `manifest unknown`.
fn code_text(code: &str) -> String {
    code.replace('_', " ").to_lowercase()
}

impl fmt::Display for RegistryErrorEntry {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}: {}", code_text(&self.code), self.message)
    }
}

impl fmt::Display for RegistryErrors {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Entries(entries) => match entries.as_slice() {
                [only] => write!(formatter, "{only}"),
                many => {
                    // Docker's errcode.Errors: a header line, then one per error.
                    writeln!(formatter, "errors:")?;
                    for entry in many {
                        writeln!(formatter, "{entry}")?;
                    }
                    Ok(())
                }
            },
            Self::Unparsed {
                status,
                reason,
                body,
            } => write!(
                formatter,
                "error parsing HTTP {status} response body: {reason}: {body:?}"
            ),
            Self::Status { status } => write!(
                formatter,
                "received unexpected HTTP status: {status} {}",
                status_text(*status)
            ),
        }
    }
}

impl std::error::Error for RegistryErrors {}

fn status_text(status: u16) -> &'static str {
    ureq::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|code| code.canonical_reason())
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_error_prints_as_docker_prints_it() {
        let body = br#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown","detail":{"Tag":"x"}}]}"#;
        let errors = RegistryErrors::from_response(404, body);
        assert_eq!(errors.to_string(), "manifest unknown: manifest unknown");
        assert_eq!(errors.codes(), ["MANIFEST_UNKNOWN"]);
    }

    #[test]
    fn several_errors_are_listed() {
        let body = br#"{"errors":[{"code":"DENIED","message":"no"},{"code":"BLOB_UNKNOWN","message":"gone"}]}"#;
        assert_eq!(
            RegistryErrors::from_response(403, body).to_string(),
            "errors:\ndenied: no\nblob unknown: gone\n"
        );
    }

    #[test]
    fn token_service_details_are_unauthorized() {
        let body = br#"{"details":"incorrect username or password"}"#;
        assert_eq!(
            RegistryErrors::from_response(401, body).to_string(),
            "unauthorized: incorrect username or password"
        );
    }

    #[test]
    fn server_errors_and_broken_connections_are_transient() {
        let registry = |status| ClientError::Registry {
            method: "Get",
            url: "http://x/v2/".into(),
            status,
            errors: RegistryErrors::Status { status },
        };
        assert!(registry(503).is_transient());
        assert!(!registry(404).is_transient());
        let transport = |source| ClientError::Transport {
            method: "Get",
            url: "http://x/v2/".into(),
            source,
        };
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(transport(ureq::Error::Io(refused)).is_transient());
        let tls = std::io::Error::new(std::io::ErrorKind::InvalidData, "UnknownIssuer");
        assert!(!transport(ureq::Error::Io(tls)).is_transient());
    }

    #[test]
    fn odd_bodies_and_server_errors() {
        assert_eq!(
            RegistryErrors::from_response(401, b"").to_string(),
            "unauthorized: authentication required"
        );
        assert_eq!(
            RegistryErrors::from_response(404, b"not here").to_string(),
            "error parsing HTTP 404 response body: invalid character in body: \"not here\""
        );
        assert_eq!(
            RegistryErrors::from_response(503, b"{}").to_string(),
            "received unexpected HTTP status: 503 Service Unavailable"
        );
    }
}
