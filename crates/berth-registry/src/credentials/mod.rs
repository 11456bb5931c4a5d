//! The credentials Docker users already have: the client configuration file
//! `config.json` in `$DOCKER_CONFIG` (else `$HOME/.docker`), its `auths`
//! entries, and the credential helpers named by `credsStore` and
//! `credHelpers` — read and written as docker/cli 20.10 does, so `docker
//! login` and `berth login` share one login.

mod file;
mod helper;
pub mod key;
#[cfg(test)]
mod tests;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

pub use key::{hostname, server_key, INDEX_SERVER};

use crate::Credentials;
use file::ConfigFile;
use helper::Helper;

/// The user name under which credential helpers (and [`Credentials`]
/// returned here) carry an identity token, an OAuth2 refresh token to trade
/// for access tokens, instead of a password (docker/cli `tokenUsername`).
pub const IDENTITY_TOKEN_USERNAME: &str = "<token>";

/// The configuration file's name inside the configuration directory.
pub const CONFIG_FILE_NAME: &str = "config.json";

#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    #[error(
        "failed to find the Docker configuration directory: neither DOCKER_CONFIG nor HOME is set"
    )]
    NoConfigDirectory,
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
    #[error("{path:?} does not hold a JSON object")]
    NotAnObject { path: PathBuf },
    #[error("invalid auth configuration for {key:?} in {path:?}: {reason}")]
    InvalidAuth {
        path: PathBuf,
        key: String,
        reason: &'static str,
    },
    #[error("failed to encode {path:?}")]
    Encode {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("failed to write {path:?}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// docker-credential-helpers' own words, which embed the cause: "error
    /// getting credentials - err: exit status 1, out: `…`".
    #[error("error {action} credentials - err: {error}, out: `{output}`")]
    Helper {
        action: &'static str,
        error: String,
        output: String,
    },
    #[error("failed to exchange JSON with {program}")]
    HelperOutput {
        program: String,
        #[source]
        source: serde_json::Error,
    },
    /// Every key a logout tried failed; each with its own error.
    #[error("could not erase credentials")]
    Erase {
        failures: Vec<(String, CredentialsError)>,
    },
}

/// What `config.json` (or a helper) holds for one server.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct AuthEntry {
    pub username: String,
    pub password: String,
    /// An OAuth2 refresh token the registry's token server handed out at
    /// login (docker/cli `identitytoken`); it replaces the password.
    pub identity_token: String,
}

impl std::fmt::Debug for AuthEntry {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let redacted = |secret: &str| if secret.is_empty() { "" } else { "<redacted>" };
        formatter
            .debug_struct("AuthEntry")
            .field("username", &self.username)
            .field("password", &redacted(&self.password))
            .field("identity_token", &redacted(&self.identity_token))
            .finish()
    }
}

impl AuthEntry {
    /// The credentials to present: an identity token (under
    /// [`IDENTITY_TOKEN_USERNAME`]) before a password; `None` for an empty
    /// entry (a helper's placeholder in `auths`).
    pub fn credentials(&self) -> Option<Credentials> {
        if !self.identity_token.is_empty() {
            return Some(Credentials {
                username: IDENTITY_TOKEN_USERNAME.to_owned(),
                secret: self.identity_token.clone(),
            });
        }
        if self.username.is_empty() && self.password.is_empty() {
            return None;
        }
        Some(Credentials {
            username: self.username.clone(),
            secret: self.password.clone(),
        })
    }
}

/// Where the credentials of one server are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialStore {
    /// In `auths` of this `config.json`, base64-encoded but not encrypted.
    File(PathBuf),
    /// In the helper `docker-credential-NAME`.
    Helper(String),
}

/// One Docker client configuration directory.
#[derive(Debug, Clone)]
pub struct DockerConfig {
    dir: PathBuf,
    /// Where helpers are looked up; `$PATH` when `None`.
    search_path: Option<OsString>,
}

impl DockerConfig {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            search_path: None,
        }
    }

    /// `$DOCKER_CONFIG`, else `$HOME/.docker` (docker/cli `config.Dir`).
    pub fn from_env() -> Result<Self, CredentialsError> {
        if let Some(dir) = std::env::var_os("DOCKER_CONFIG").filter(|dir| !dir.is_empty()) {
            return Ok(Self::new(dir));
        }
        let home = std::env::var_os("HOME")
            .filter(|home| !home.is_empty())
            .ok_or(CredentialsError::NoConfigDirectory)?;
        Ok(Self::new(Path::new(&home).join(".docker")))
    }

    /// Looks helpers up on `search_path` instead of `$PATH`.
    pub fn with_search_path(mut self, search_path: impl Into<OsString>) -> Self {
        self.search_path = Some(search_path.into());
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `DIR/config.json`.
    pub fn file(&self) -> PathBuf {
        self.dir.join(CONFIG_FILE_NAME)
    }

    fn search_path(&self) -> Option<&OsStr> {
        self.search_path.as_deref()
    }

    fn load(&self) -> Result<ConfigFile, CredentialsError> {
        ConfigFile::load(&self.file())
    }

    /// `detachKeys`: the key sequence that detaches an attached terminal
    /// when the command line gives none (docker/cli reads it for `run`,
    /// `start`, `attach` and `exec`); None when unset or empty.
    pub fn detach_keys(&self) -> Result<Option<String>, CredentialsError> {
        Ok(self.load()?.detach_keys().map(str::to_owned))
    }

    /// The helper for `key`: `credHelpers[key]`, else `credsStore`, else —
    /// only while the file configures no credentials at all — the
    /// platform's default helper when it is installed (docker/cli
    /// `DetectDefaultStore`: `pass` where `pass` is on the path, else
    /// `secretservice`). The last is flagged so a store can record it.
    fn helper_for(&self, file: &ConfigFile, key: &str) -> Option<(String, bool)> {
        if let Some(name) = file
            .credential_helper(key)
            .or_else(|| file.credentials_store())
        {
            return Some((name.to_owned(), false));
        }
        if file.contains_auth() {
            return None;
        }
        let platform_default = if helper::program_exists("pass", self.search_path()) {
            "pass"
        } else {
            "secretservice"
        };
        helper::exists(platform_default, self.search_path())
            .then(|| (platform_default.to_owned(), true))
    }

    fn helper<'a>(&'a self, name: &'a str) -> Helper<'a> {
        Helper {
            name,
            search_path: self.search_path(),
        }
    }

    /// What is stored for `server` (any form: `docker.io`, `host:port`,
    /// `https://host/v2/`), from its helper or from `auths`.
    pub fn lookup(&self, server: &str) -> Result<Option<AuthEntry>, CredentialsError> {
        let key = server_key(server);
        let file = self.load()?;
        match self.helper_for(&file, &key) {
            Some((name, _)) => self.helper(&name).get(&key),
            None => file.entry(&key),
        }
    }

    /// The credentials to use for `registry` (a host such as `docker.io` or
    /// `localhost:5000`); `None` when there are none (pull anonymously).
    pub fn credentials_for(&self, registry: &str) -> Result<Option<Credentials>, CredentialsError> {
        Ok(self.lookup(registry)?.and_then(|entry| entry.credentials()))
    }

    /// Where storing credentials for `server` would put them.
    pub fn store_for(&self, server: &str) -> Result<CredentialStore, CredentialsError> {
        let key = server_key(server);
        let file = self.load()?;
        Ok(match self.helper_for(&file, &key) {
            Some((name, _)) => CredentialStore::Helper(name),
            None => CredentialStore::File(file.path().to_owned()),
        })
    }

    /// Stores a user name and password for `server`, in its helper when it
    /// has one (leaving an empty placeholder in `auths`, as docker/cli
    /// does), else in `auths`.
    pub fn store_credentials(
        &self,
        server: &str,
        credentials: &Credentials,
    ) -> Result<CredentialStore, CredentialsError> {
        self.store_entry(
            server,
            &AuthEntry {
                username: credentials.username.clone(),
                password: credentials.secret.clone(),
                identity_token: String::new(),
            },
        )
    }

    /// Stores an identity token the registry gave at login, in place of the
    /// password (docker/cli keeps the user name beside it in `auths`).
    pub fn store_identity_token(
        &self,
        server: &str,
        username: &str,
        token: &str,
    ) -> Result<CredentialStore, CredentialsError> {
        self.store_entry(
            server,
            &AuthEntry {
                username: username.to_owned(),
                password: String::new(),
                identity_token: token.to_owned(),
            },
        )
    }

    fn store_entry(
        &self,
        server: &str,
        entry: &AuthEntry,
    ) -> Result<CredentialStore, CredentialsError> {
        let key = server_key(server);
        let mut file = self.load()?;
        let mut changed = false;
        let (entry, store) = match self.helper_for(&file, &key) {
            Some((name, detected)) => {
                self.helper(&name).store(&key, entry)?;
                if detected {
                    // docker/cli keeps the detected store in the file it saves.
                    changed |= file.set_credentials_store(&name);
                }
                (AuthEntry::default(), CredentialStore::Helper(name))
            }
            None => (entry.clone(), CredentialStore::File(file.path().to_owned())),
        };
        changed |= file.set_entry(&key, &entry);
        if changed {
            file.save()?;
        }
        Ok(store)
    }

    /// Logs out of `server`: erases what is filed under its key and under
    /// the forms older clients used (see [`key::logout_keys`]), each from
    /// the store that key maps to. True when something was removed; an
    /// error only when every key failed (docker/cli 20.10 warns then and
    /// still succeeds).
    pub fn erase_credentials(&self, server: &str) -> Result<bool, CredentialsError> {
        let keys = key::logout_keys(server);
        let mut file = self.load()?;
        let mut removed = false;
        let mut changed = false;
        let mut failures = Vec::new();
        for key in &keys {
            if let Some((name, _)) = self.helper_for(&file, key) {
                if let Err(error) = self.helper(&name).erase(key) {
                    failures.push((key.clone(), error));
                    continue;
                }
                removed = true;
            }
            if file.remove_entry(key) {
                removed = true;
                changed = true;
            }
        }
        if changed {
            file.save()?;
        }
        if failures.len() == keys.len() {
            return Err(CredentialsError::Erase { failures });
        }
        Ok(removed)
    }
}

/// The credentials for `registry_host` from the user's Docker configuration
/// (`$DOCKER_CONFIG`, else `$HOME/.docker`); `None` when there are none,
/// including when neither variable is set (a pull then goes anonymous).
pub fn credentials_for(registry_host: &str) -> Result<Option<Credentials>, CredentialsError> {
    match DockerConfig::from_env() {
        Ok(config) => config.credentials_for(registry_host),
        Err(CredentialsError::NoConfigDirectory) => Ok(None),
        Err(error) => Err(error),
    }
}

/// Stores credentials for `server` in the user's Docker configuration.
pub fn store_credentials(server: &str, credentials: &Credentials) -> Result<(), CredentialsError> {
    DockerConfig::from_env()?
        .store_credentials(server, credentials)
        .map(drop)
}

/// Erases the user's credentials for `server`; true when some were removed.
pub fn erase_credentials(server: &str) -> Result<bool, CredentialsError> {
    DockerConfig::from_env()?.erase_credentials(server)
}
