//! berth's own settings file, `/etc/berth/config.json`: the registry keys
//! of Docker's `daemon.json`, with the same names, defaults, checks and
//! messages (moby 20.10 `registry/config.go`, `daemon/config`):
//!
//! ```json
//! {
//!   "registry-mirrors": ["https://mirror.example"],
//!   "insecure-registries": ["registry.lan:5000", "10.0.0.0/8"],
//!   "max-concurrent-downloads": 3
//! }
//! ```
//!
//! Keys this module does not know are left to the modules that do: the
//! file is shared, so they are not errors here.

mod insecure;
mod mirror;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, ToSocketAddrs};
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use insecure::Cidr;

pub const DEFAULT_PATH: &str = "/etc/berth/config.json";
pub const DEFAULT_MAX_CONCURRENT_DOWNLOADS: u32 = 3;
pub const DEFAULT_MAX_CONCURRENT_UPLOADS: u32 = 5;
pub const DEFAULT_MAX_DOWNLOAD_ATTEMPTS: u32 = 5;

/// Always insecure, whatever the file says: moby adds 127.0.0.0/8 ("a
/// stop-gap for people who are running a private registry on localhost");
/// berth adds IPv6's loopback too, which moby 20.10 leaves out.
const LOOPBACK: [Cidr; 2] = [
    Cidr::new_v4(Ipv4Addr::new(127, 0, 0, 0), 8),
    Cidr::new_v6(Ipv6Addr::LOCALHOST, 128),
];

/// Docker Hub is always secure, and the only registry mirrors are for.
const DOCKER_HUB_DOMAINS: [&str; 3] = ["docker.io", "index.docker.io", "registry-1.docker.io"];

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("failed to read {path:?}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to parse {path:?}")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("invalid mirror: {message}")]
    InvalidMirror { message: String },
    #[error("invalid index name ({name}). Cannot begin or end with a hyphen")]
    InvalidIndexName { name: String },
    #[error("insecure registry {entry} should not contain '://'")]
    InsecureRegistryScheme { entry: String },
    #[error("insecure registry {entry} is not valid: {reason}")]
    InvalidInsecureRegistry { entry: String, reason: String },
    #[error("invalid max concurrent downloads: {value}")]
    MaxConcurrentDownloads { value: i64 },
    #[error("invalid max concurrent uploads: {value}")]
    MaxConcurrentUploads { value: i64 },
    #[error("invalid max download attempts: {value}")]
    MaxDownloadAttempts { value: i64 },
}

/// The file's registry keys as written.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct FileSettings {
    #[serde(default)]
    registry_mirrors: Vec<String>,
    #[serde(default)]
    insecure_registries: Vec<String>,
    max_concurrent_downloads: Option<i64>,
    max_concurrent_uploads: Option<i64>,
    max_download_attempts: Option<i64>,
}

/// The registry settings, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryConfig {
    /// `scheme://host[:port]/`, without duplicates, in the file's order.
    mirrors: Vec<String>,
    /// `host[:port]` entries, matched exactly.
    insecure_hosts: Vec<String>,
    insecure_networks: Vec<Cidr>,
    max_concurrent_downloads: u32,
    max_concurrent_uploads: u32,
    max_download_attempts: u32,
}

impl Default for RegistryConfig {
    fn default() -> Self {
        Self {
            mirrors: Vec::new(),
            insecure_hosts: Vec::new(),
            insecure_networks: LOOPBACK.to_vec(),
            max_concurrent_downloads: DEFAULT_MAX_CONCURRENT_DOWNLOADS,
            max_concurrent_uploads: DEFAULT_MAX_CONCURRENT_UPLOADS,
            max_download_attempts: DEFAULT_MAX_DOWNLOAD_ATTEMPTS,
        }
    }
}

impl RegistryConfig {
    /// Reads and checks the file at `path`; a missing file is an error.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = fs_err::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_json(&text).map_err(|error| match error {
            ConfigError::Parse { source, .. } => ConfigError::Parse {
                path: path.to_owned(),
                source,
            },
            other => other,
        })
    }

    /// As [`load`](Self::load), but a missing file means the defaults (as
    /// dockerd treats its default `daemon.json`).
    pub fn load_or_default(path: &Path) -> Result<Self, ConfigError> {
        match fs_err::metadata(path) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            _ => Self::load(path),
        }
    }

    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        let settings: FileSettings =
            serde_json::from_str(text).map_err(|source| ConfigError::Parse {
                path: PathBuf::new(),
                source,
            })?;
        let mut config = Self::new(&settings.registry_mirrors, &settings.insecure_registries)?;
        if let Some(value) = settings.max_concurrent_downloads {
            config.max_concurrent_downloads =
                u32::try_from(value).map_err(|_| ConfigError::MaxConcurrentDownloads { value })?;
        }
        if let Some(value) = settings.max_concurrent_uploads {
            config.max_concurrent_uploads =
                u32::try_from(value).map_err(|_| ConfigError::MaxConcurrentUploads { value })?;
        }
        if let Some(value) = settings.max_download_attempts {
            config.max_download_attempts = u32::try_from(value)
                .ok()
                .filter(|attempts| *attempts > 0)
                .ok_or(ConfigError::MaxDownloadAttempts { value })?;
        }
        Ok(config)
    }

    /// The settings from lists as `registry-mirrors` and
    /// `insecure-registries` hold them (or dockerd's repeated
    /// `--registry-mirror` and `--insecure-registry` flags).
    pub fn new(mirrors: &[String], insecure_registries: &[String]) -> Result<Self, ConfigError> {
        let mut config = Self::default();
        for mirror in mirrors {
            let mirror = mirror::validate(mirror)?;
            if !config.mirrors.contains(&mirror) {
                config.mirrors.push(mirror);
            }
        }
        for entry in insecure_registries {
            config.add_insecure(entry)?;
        }
        Ok(config)
    }

    /// moby `LoadInsecureRegistries`, one entry.
    fn add_insecure(&mut self, entry: &str) -> Result<(), ConfigError> {
        if entry.starts_with('-') || entry.ends_with('-') {
            return Err(ConfigError::InvalidIndexName {
                name: entry.to_owned(),
            });
        }
        let lower = entry.to_ascii_lowercase();
        let scheme = ["http://", "https://"]
            .into_iter()
            .find(|scheme| lower.starts_with(scheme));
        let entry = match scheme {
            Some(scheme) => {
                tracing::warn!(
                    "insecure registry {entry} should not contain '{scheme}' and '{scheme}' has been removed from the insecure registry config"
                );
                &entry[scheme.len()..]
            }
            None if entry.contains("://") => {
                return Err(ConfigError::InsecureRegistryScheme {
                    entry: entry.to_owned(),
                })
            }
            None => entry,
        };
        if let Some(network) = Cidr::parse(entry) {
            if !self.insecure_networks.contains(&network) {
                self.insecure_networks.push(network);
            }
            return Ok(());
        }
        insecure::validate_host_port(entry).map_err(|reason| {
            ConfigError::InvalidInsecureRegistry {
                entry: entry.to_owned(),
                reason,
            }
        })?;
        if !self.insecure_hosts.iter().any(|host| host == entry) {
            self.insecure_hosts.push(entry.to_owned());
        }
        Ok(())
    }

    /// All mirrors, each `scheme://host[:port]/`.
    pub fn mirrors(&self) -> &[String] {
        &self.mirrors
    }

    /// The mirrors to try before `domain` itself: the configured ones for
    /// Docker Hub, none for any other registry (as in Docker).
    pub fn mirrors_for(&self, domain: &str) -> Vec<String> {
        if DOCKER_HUB_DOMAINS
            .iter()
            .any(|hub| domain.eq_ignore_ascii_case(hub))
        {
            self.mirrors.clone()
        } else {
            Vec::new()
        }
    }

    /// Whether `host` (`host[:port]`) may be reached over plain HTTP, or
    /// over HTTPS without verifying its certificate: listed by name, or one
    /// of its addresses in a listed network (loopback always is). Docker
    /// Hub never is. Names are resolved, as moby does.
    pub fn is_insecure(&self, host: &str) -> bool {
        self.is_insecure_with(host, resolve)
    }

    /// [`is_insecure`](Self::is_insecure) with the name lookup given.
    pub fn is_insecure_with(&self, host: &str, lookup: impl Fn(&str) -> Vec<IpAddr>) -> bool {
        if DOCKER_HUB_DOMAINS
            .iter()
            .any(|hub| host.eq_ignore_ascii_case(hub))
        {
            return false;
        }
        if self.insecure_hosts.iter().any(|listed| listed == host) {
            return true;
        }
        let (name, _) = insecure::split_host_port(host);
        let addresses = match name.parse::<IpAddr>() {
            Ok(address) => vec![address],
            Err(_) => lookup(name),
        };
        addresses.into_iter().any(|address| {
            self.insecure_networks
                .iter()
                .any(|network| network.contains(address))
        })
    }

    /// Docker's `max-concurrent-downloads`; 0 (which Docker accepts) means 1.
    pub fn max_concurrent_downloads(&self) -> u32 {
        self.max_concurrent_downloads.max(1)
    }

    /// Docker's `max-concurrent-uploads`; 0 means 1.
    pub fn max_concurrent_uploads(&self) -> u32 {
        self.max_concurrent_uploads.max(1)
    }

    pub fn max_download_attempts(&self) -> u32 {
        self.max_download_attempts
    }
}

/// The addresses `name` resolves to; none when it does not resolve.
fn resolve(name: &str) -> Vec<IpAddr> {
    match (name, 0).to_socket_addrs() {
        Ok(addresses) => addresses.map(|address| address.ip()).collect(),
        Err(error) => {
            tracing::debug!(name, %error, "cannot resolve registry host");
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests;
