//! A synchronous OCI distribution-spec client
//! (<https://github.com/opencontainers/distribution-spec/blob/main/spec.md>):
//! manifests and blobs pulled and pushed over HTTP(S) with Docker's auth
//! flow and TLS trust.
//!
//! One [`RegistryClient`] talks to one registry host. It is cheap to clone
//! and `Send + Sync`: clones share the connection pool and the token cache,
//! so layer downloads can run on several threads at once.

mod auth;
mod blob;
mod challenge;
mod errcode;
mod error;
mod login;
mod manifest;
mod platform;
mod settings;
mod tags;
mod tls;
mod transport;
mod upload;

use std::sync::Arc;

use ureq::http::Method;

pub use error::{ClientError, RegistryErrorEntry, RegistryErrors};
pub use login::{login, LoginError, LoginRequest, LoginSuccess, LOGIN_SUCCEEDED};
pub use manifest::{FetchedManifest, ManifestKind, ResolvedManifest, MANIFEST_ACCEPT};
pub use platform::{host_platform, platform_matches, platform_string, select_manifest};
pub use settings::{
    is_loopback, registry_host, ClientConfig, RetryPolicy, Scheme, DEFAULT_CERTS_ROOT,
    DOCKER_HUB_REGISTRY_HOST,
};
pub use upload::{BlobPush, PushedBlob};

use crate::Credentials;
use auth::Authenticator;
use transport::Call;

/// A client for one registry host.
#[derive(Clone)]
pub struct RegistryClient {
    inner: Arc<ClientInner>,
}

struct ClientInner {
    host: String,
    /// `https://host` or `http://host`, no trailing slash.
    base_url: String,
    agent: ureq::Agent,
    config: ClientConfig,
    auth: Authenticator,
}

impl std::fmt::Debug for RegistryClient {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("RegistryClient")
            .field("base_url", &self.inner.base_url)
            .finish_non_exhaustive()
    }
}

impl RegistryClient {
    /// A client for `host` (`registry-1.docker.io`, `127.0.0.1:5000`; see
    /// [`registry_host`] for a reference's domain). Reads the TLS roots now,
    /// so a broken `certs.d` entry fails here.
    pub fn new(
        host: &str,
        config: &ClientConfig,
        credentials: Option<Credentials>,
    ) -> Result<Self, ClientError> {
        Self::with_scheme(host, config.scheme_for(host), config, credentials)
    }

    /// As [`RegistryClient::new`], with the scheme decided by the caller
    /// (e.g. from `config::RegistryConfig::is_insecure`, which also knows
    /// CIDR ranges).
    pub fn with_scheme(
        host: &str,
        scheme: Scheme,
        config: &ClientConfig,
        credentials: Option<Credentials>,
    ) -> Result<Self, ClientError> {
        Ok(Self {
            inner: Arc::new(ClientInner {
                host: host.to_owned(),
                base_url: format!("{}://{host}", scheme.as_str()),
                agent: new_agent(config, host, true, None)?,
                config: config.clone(),
                auth: Authenticator::new(credentials),
            }),
        })
    }

    pub fn host(&self) -> &str {
        &self.inner.host
    }

    /// `https://host` or `http://host`.
    pub fn base_url(&self) -> &str {
        &self.inner.base_url
    }

    /// Whether this client's credentials open `GET /v2/` (a token without
    /// scope for Bearer registries), through the same authorization and
    /// retries as its pulls. A refusal reads
    /// `Get "https://host/v2/": unauthorized: …`. Docker's own login check,
    /// with its texts and endpoint fallbacks, is [`login`].
    pub fn check_login(&self) -> Result<(), ClientError> {
        let url = format!("{}/v2/", self.inner.base_url);
        self.inner
            .execute(Call::new(Method::GET, url, &[]), |status| status == 200)
            .map(drop)
    }
}

/// The HTTP agent for `host`: its TLS trust (`verify_tls` false for an
/// insecure registry's HTTPS endpoint), berth's user agent and timeouts,
/// and `timeout` as a bound on each whole request when given.
fn new_agent(
    config: &ClientConfig,
    host: &str,
    verify_tls: bool,
    timeout: Option<std::time::Duration>,
) -> Result<ureq::Agent, ClientError> {
    Ok(ureq::Agent::config_builder()
        .http_status_as_error(false)
        .tls_config(tls::tls_config(config, host, verify_tls)?)
        .user_agent(config.user_agent.as_str())
        .timeout_connect(Some(config.connect_timeout))
        .timeout_per_read(Some(config.read_timeout))
        .timeout_global(timeout)
        // Blobs come from anywhere the registry redirects to (S3, a
        // CDN); credentials stay behind (ureq's default).
        .max_redirects(10)
        .build()
        .new_agent())
}

impl ClientInner {
    /// `{base}/v2/{repository}/{rest}`.
    fn repository_url(&self, repository: &str, rest: &str) -> String {
        format!("{}/v2/{repository}/{rest}", self.base_url)
    }

    /// A `Location` header made absolute (registries may answer with a
    /// path only).
    fn resolve_location(&self, location: &str) -> String {
        resolve_location(&self.base_url, location)
    }
}

fn resolve_location(base_url: &str, location: &str) -> String {
    if location.starts_with("http://") || location.starts_with("https://") {
        location.to_owned()
    } else if location.starts_with('/') {
        format!("{base_url}{location}")
    } else {
        format!("{base_url}/{location}")
    }
}

/// Token scope for pulling from `repository`.
fn pull_scope(repository: &str) -> String {
    format!("repository:{repository}:pull")
}

/// Token scope for pushing to `repository` (Docker asks pull and push).
fn push_scope(repository: &str) -> String {
    format!("repository:{repository}:pull,push")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_are_made_absolute() {
        let base = "http://127.0.0.1:5000";
        assert_eq!(
            resolve_location(base, "/v2/a/blobs/uploads/u?_state=x"),
            "http://127.0.0.1:5000/v2/a/blobs/uploads/u?_state=x"
        );
        assert_eq!(
            resolve_location(base, "https://s3.example/upload"),
            "https://s3.example/upload"
        );
    }

    #[test]
    fn client_is_send_sync_and_clone() {
        fn assert_traits<T: Send + Sync + Clone>() {}
        assert_traits::<RegistryClient>();
    }
}
