//! From a reference's domain to registry clients: berth's registry
//! settings (mirrors, insecure registries), the TLS settings, and the
//! user's Docker credentials.

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
}
