//! From a reference's domain to registry clients: berth's registry
//! settings (mirrors, insecure registries), the TLS settings, and the
//! user's Docker credentials.

use std::collections::BTreeMap;
use std::path::Path;

use berth_registry::client::{registry_host, ClientConfig, RegistryClient, Scheme};
use berth_registry::config::RegistryConfig;
use berth_registry::Credentials;

use super::error::PullError;

/// Where a pull or push finds credentials.
#[derive(Clone, Debug, Default)]
pub enum CredentialSource {
    /// `~/.docker/config.json` (or `$DOCKER_CONFIG`) and its helpers, as
    /// `berth login` stores them.
    #[default]
    DockerConfig,
    Anonymous,
    Fixed(Credentials),
    /// One set per registry, as a client sent them (the API's
    /// `X-Registry-Config`), keyed as Docker's config file keys them
    /// (`host[:port]`, or Docker Hub's `https://index.docker.io/v1/`); a
    /// registry not in the map is reached anonymously.
    PerRegistry(BTreeMap<String, Credentials>),
}

/// Everything a pull or push needs to reach registries, resolved before
/// any request.
#[derive(Clone, Debug, Default)]
pub struct RegistrySettings {
    pub client: ClientConfig,
    pub registry: RegistryConfig,
    pub credentials: CredentialSource,
}

impl RegistrySettings {
    /// The settings from berth's config file at `path` (a missing file
    /// means the defaults), with the user's Docker credentials.
    pub fn load(path: &Path) -> Result<Self, PullError> {
        Ok(Self {
            client: ClientConfig::default(),
            registry: RegistryConfig::load_or_default(path)?,
            credentials: CredentialSource::DockerConfig,
        })
    }

    /// The clients a pull from `domain` tries in order: the configured
    /// mirrors (Docker Hub only, as Docker), then the registry itself.
    pub(crate) fn pull_clients(&self, domain: &str) -> Result<Vec<RegistryClient>, PullError> {
        let mut clients = Vec::new();
        for mirror in self.registry.mirrors_for(domain) {
            let (scheme, host) = split_mirror(&mirror).ok_or_else(|| PullError::InvalidMirror {
                mirror: mirror.clone(),
            })?;
            clients.push(self.connect(&host, Some(scheme))?);
        }
        clients.push(self.client_for(domain)?);
        Ok(clients)
    }

    /// The client for the registry `domain` names (`docker.io` is served by
    /// `registry-1.docker.io`).
    pub(crate) fn client_for(&self, domain: &str) -> Result<RegistryClient, PullError> {
        let credentials = self.credentials(domain)?;
        let host = registry_host(domain);
        let scheme = self.scheme_for(host);
        Ok(RegistryClient::with_scheme(
            host,
            scheme,
            &self.client,
            credentials,
        )?)
    }

    fn connect(&self, host: &str, scheme: Option<Scheme>) -> Result<RegistryClient, PullError> {
        let credentials = self.credentials(host)?;
        let scheme = scheme.unwrap_or_else(|| self.scheme_for(host));
        Ok(RegistryClient::with_scheme(
            host,
            scheme,
            &self.client,
            credentials,
        )?)
    }

    /// HTTPS, except for insecure registries (loopback always is) that
    /// have no `certs.d` directory of their own.
    fn scheme_for(&self, host: &str) -> Scheme {
        if self.client.certs_root.join(host).is_dir() {
            return Scheme::Https;
        }
        if self.registry.is_insecure(host) {
            Scheme::Http
        } else {
            self.client.scheme_for(host)
        }
    }

    fn credentials(&self, registry: &str) -> Result<Option<Credentials>, PullError> {
        match &self.credentials {
            CredentialSource::Anonymous => Ok(None),
            CredentialSource::Fixed(credentials) => Ok(Some(credentials.clone())),
            CredentialSource::PerRegistry(map) => Ok(registry_entry(map, registry).cloned()),
            CredentialSource::DockerConfig => {
                berth_registry::credentials::credentials_for(registry).map_err(|source| {
                    PullError::Credentials {
                        registry: registry.to_owned(),
                        source,
                    }
                })
            }
        }
    }
}

/// The entry of `map` for `registry` (a host, `docker.io` for Docker Hub):
/// keys may carry a scheme and a path (`https://host:5000/v1/`), and Docker
/// Hub goes by several names.
fn registry_entry<'m>(
    map: &'m BTreeMap<String, Credentials>,
    registry: &str,
) -> Option<&'m Credentials> {
    const DOCKER_HUB: [&str; 4] = [
        "docker.io",
        "index.docker.io",
        "registry-1.docker.io",
        "registry.hub.docker.com",
    ];
    let host_of = |key: &str| {
        let key = key
            .strip_prefix("https://")
            .or_else(|| key.strip_prefix("http://"))
            .unwrap_or(key);
        key.split('/').next().unwrap_or(key).to_owned()
    };
    let hub = |host: &str| DOCKER_HUB.contains(&host);
    map.iter()
        .find(|(key, _)| {
            let host = host_of(key);
            host == registry || (hub(&host) && hub(registry))
        })
        .map(|(_, credentials)| credentials)
}

/// `https://mirror.example:5000/` → HTTPS and `mirror.example:5000`.
fn split_mirror(mirror: &str) -> Option<(Scheme, String)> {
    let (scheme, rest) = if let Some(rest) = mirror.strip_prefix("https://") {
        (Scheme::Https, rest)
    } else if let Some(rest) = mirror.strip_prefix("http://") {
        (Scheme::Http, rest)
    } else {
        return None;
    };
    let host = rest.split('/').next().filter(|host| !host.is_empty())?;
    Some((scheme, host.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirrors_split_into_scheme_and_host() {
        assert_eq!(
            split_mirror("https://mirror.example:5000/"),
            Some((Scheme::Https, "mirror.example:5000".to_owned()))
        );
        assert_eq!(
            split_mirror("http://10.0.0.1/"),
            Some((Scheme::Http, "10.0.0.1".to_owned()))
        );
        assert_eq!(split_mirror("mirror.example"), None);
    }

    #[test]
    fn docker_hub_mirrors_come_first() {
        let settings = RegistrySettings {
            registry: RegistryConfig::new(&["http://127.0.0.1:5999".to_owned()], &[]).unwrap(),
            credentials: CredentialSource::Anonymous,
            ..RegistrySettings::default()
        };
        let clients = settings.pull_clients("docker.io").unwrap();
        let urls: Vec<&str> = clients.iter().map(RegistryClient::base_url).collect();
        assert_eq!(
            urls,
            ["http://127.0.0.1:5999", "https://registry-1.docker.io"]
        );
        let local = settings.pull_clients("127.0.0.1:5000").unwrap();
        assert_eq!(local.len(), 1);
        assert_eq!(local[0].base_url(), "http://127.0.0.1:5000");
    }

    #[test]
    fn per_registry_credentials_match_by_host_and_docker_hub_by_any_name() {
        let credentials = |user: &str| Credentials {
            username: user.to_owned(),
            secret: "secret".to_owned(),
        };
        let map = BTreeMap::from([
            ("https://index.docker.io/v1/".to_owned(), credentials("hub")),
            ("127.0.0.1:5000".to_owned(), credentials("local")),
            (
                "https://other.example:444/v2/".to_owned(),
                credentials("other"),
            ),
        ]);
        let user = |registry: &str| registry_entry(&map, registry).map(|c| c.username.clone());
        assert_eq!(user("docker.io").as_deref(), Some("hub"));
        assert_eq!(user("registry-1.docker.io").as_deref(), Some("hub"));
        assert_eq!(user("127.0.0.1:5000").as_deref(), Some("local"));
        assert_eq!(user("other.example:444").as_deref(), Some("other"));
        assert_eq!(user("127.0.0.1:5001"), None);
        assert_eq!(user("other.example"), None);
    }
}
