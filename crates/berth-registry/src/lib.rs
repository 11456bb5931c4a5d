//! The registry side of images: an OCI distribution-spec client (pull and
//! push of manifests and blobs, the auth challenge flow, TLS), and the
//! credentials and settings Docker users already have (`~/.docker/config.json`,
//! credential helpers, berth's own `/etc/berth/config.json`).

pub mod client;
pub mod config;
pub mod credentials;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

/// A user name and secret for one registry, wherever they came from.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub username: String,
    /// A password, or a personal access token.
    pub secret: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Credentials")
            .field("username", &self.username)
            .field("secret", &"<redacted>")
            .finish()
    }
}
