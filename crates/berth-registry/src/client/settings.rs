//! Settings shared by every registry client, resolved before any request,
//! and the per-host decisions taken from them (which host serves a domain,
//! HTTP or HTTPS).

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Docker Hub's API host; references name it `docker.io`.
pub const DOCKER_HUB_REGISTRY_HOST: &str = "registry-1.docker.io";

/// Where Docker keeps per-registry CA certificates and client keys
/// (`/etc/docker/certs.d/HOST[:PORT]/*.crt`, `*.cert` + `*.key`).
pub const DEFAULT_CERTS_ROOT: &str = "/etc/docker/certs.d";

/// CA bundles of the usual distributions, the first one found is used.
const SYSTEM_CA_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt", // Debian, Ubuntu, Alpine, Arch
    "/etc/pki/tls/certs/ca-bundle.crt",   // Fedora, RHEL
    "/etc/ssl/ca-bundle.pem",             // openSUSE
];

/// How berth reaches registries: one value for the whole process, cloned
/// into each [`RegistryClient`](super::RegistryClient).
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Hosts (`host` or `host:port`) spoken to over plain HTTP besides the
    /// loopback ones, as Docker's `insecure-registries`.
    pub insecure_registries: Vec<String>,
    /// Root of the per-registry certificate directories.
    pub certs_root: PathBuf,
    /// The system CA bundle (PEM). `None`, or a path that does not exist,
    /// falls back to the Mozilla roots built into the binary.
    pub system_ca_bundle: Option<PathBuf>,
    pub retry: RetryPolicy,
    /// Blobs larger than this are pushed in chunks (POST, PATCH…, PUT);
    /// smaller ones in one PUT.
    pub chunked_upload_threshold: u64,
    /// Size of each PATCH of a chunked upload.
    pub upload_chunk_size: u64,
    pub user_agent: String,
    pub connect_timeout: Duration,
    /// Longest wait for any single read; a stalled download fails after it.
    pub read_timeout: Duration,
}

/// Retries of requests that failed on the way (connection refused or
/// reset, timeouts) or with a 5xx status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries in all, the first included (1 means no retry).
    pub attempts: u32,
    /// Wait before the second try; doubled before each further one.
    pub initial_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 3,
            initial_backoff: Duration::from_millis(500),
        }
    }
}

impl RetryPolicy {
    /// The wait before try number `attempt` (counted from 1 for the first
    /// retry).
    pub(super) fn backoff(&self, attempt: u32) -> Duration {
        self.initial_backoff
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
    }
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            insecure_registries: Vec::new(),
            certs_root: PathBuf::from(DEFAULT_CERTS_ROOT),
            system_ca_bundle: SYSTEM_CA_BUNDLES
                .iter()
                .map(PathBuf::from)
                .find(|path| path.exists()),
            retry: RetryPolicy::default(),
            chunked_upload_threshold: 64 * 1024 * 1024,
            upload_chunk_size: 16 * 1024 * 1024,
            user_agent: format!("berth/{}", env!("CARGO_PKG_VERSION")),
            connect_timeout: Duration::from_secs(30),
            read_timeout: Duration::from_secs(120),
        }
    }
}

/// The API host of the registry a reference's domain names: Docker Hub's
/// `docker.io` is served from `registry-1.docker.io`, others as written.
pub fn registry_host(domain: &str) -> &str {
    match domain {
        "docker.io" | "index.docker.io" => DOCKER_HUB_REGISTRY_HOST,
        other => other,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Https => "https",
        }
    }
}

impl ClientConfig {
    /// HTTPS, except for loopback hosts and listed insecure registries;
    /// a host with its own certs.d directory is always HTTPS (that
    /// directory exists only to make TLS to it work).
    pub fn scheme_for(&self, host: &str) -> Scheme {
        if self.certs_root.join(host).is_dir() {
            return Scheme::Https;
        }
        let insecure = self
            .insecure_registries
            .iter()
            .any(|entry| entry == host || entry == host_name(host));
        if insecure || is_loopback(host) {
            Scheme::Http
        } else {
            Scheme::Https
        }
    }
}

/// `host` without its port: `127.0.0.1:5000` → `127.0.0.1`,
/// `[::1]:5000` → `::1`.
fn host_name(host: &str) -> &str {
    if let Some(bracketed) = host.strip_prefix('[') {
        return bracketed.split(']').next().unwrap_or(bracketed);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => {
            name
        }
        _ => host,
    }
}

/// 127.0.0.0/8, ::1 and `localhost`, which Docker also treats as insecure.
pub fn is_loopback(host: &str) -> bool {
    let name = host_name(host);
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<IpAddr>()
            .map(|address| address.is_loopback())
            .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_hub_domain_maps_to_its_api_host() {
        assert_eq!(registry_host("docker.io"), "registry-1.docker.io");
        assert_eq!(registry_host("quay.io"), "quay.io");
        assert_eq!(registry_host("localhost:5000"), "localhost:5000");
    }

    #[test]
    fn loopback_hosts_and_insecure_ones_use_http() {
        let config = ClientConfig {
            insecure_registries: vec!["registry.lan:5000".into(), "other.lan".into()],
            certs_root: PathBuf::from("/nonexistent/certs.d"),
            ..ClientConfig::default()
        };
        for host in [
            "127.0.0.1:5000",
            "127.1.2.3",
            "localhost:5000",
            "[::1]:5000",
            "::1",
        ] {
            assert_eq!(config.scheme_for(host), Scheme::Http, "{host}");
        }
        assert_eq!(config.scheme_for("registry.lan:5000"), Scheme::Http);
        assert_eq!(config.scheme_for("other.lan:443"), Scheme::Http);
        assert_eq!(config.scheme_for("registry.lan:5001"), Scheme::Https);
        assert_eq!(config.scheme_for("registry-1.docker.io"), Scheme::Https);
        assert_eq!(config.scheme_for("10.0.0.1:5000"), Scheme::Https);
    }

    #[test]
    fn a_certs_dir_makes_a_loopback_host_https() {
        let root = tempfile::tempdir().unwrap();
        fs_err::create_dir(root.path().join("127.0.0.1:5443")).unwrap();
        let config = ClientConfig {
            certs_root: root.path().to_owned(),
            ..ClientConfig::default()
        };
        assert_eq!(config.scheme_for("127.0.0.1:5443"), Scheme::Https);
        assert_eq!(config.scheme_for("127.0.0.1:5000"), Scheme::Http);
    }

    #[test]
    fn backoff_doubles() {
        let policy = RetryPolicy {
            attempts: 4,
            initial_backoff: Duration::from_millis(100),
        };
        assert_eq!(policy.backoff(1), Duration::from_millis(100));
        assert_eq!(policy.backoff(3), Duration::from_millis(400));
    }
}
