//! Real registries for tests: each [`TestRegistry`] is its own Debian
//! `docker-registry` (distribution 2.8) process on 127.0.0.1, with its
//! config, storage, certificates and log in a temporary directory, killed
//! when dropped. A registry service the system may run (on :5000) is left
//! alone.
//!
//! Variants: plain HTTP, htpasswd Basic auth (the bcrypt file made by
//! `htpasswd` from apache2-utils), TLS with a test CA given through a
//! temporary `certs.d`, and Bearer tokens from a small token service.
//!
//! Other crates' tests enable the `testing` feature:
//! `berth-registry = { workspace = true, features = ["testing"] }`.

mod certs;
mod token_server;

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use berth_types::Digest;
use tempfile::TempDir;

pub use certs::OPENSSL_CONFIG;
pub use token_server::TokenRequest;

use crate::client::{ClientConfig, ClientError, RegistryClient, RetryPolicy};
use crate::Credentials;

/// Debian's package `docker-registry`.
pub const REGISTRY_BINARY: &str = "/usr/bin/docker-registry";
const READY_TIMEOUT: Duration = Duration::from_secs(20);

#[derive(Debug, thiserror::Error)]
pub enum TestRegistryError {
    #[error("failed to run {program}")]
    Spawn {
        program: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{command} failed: {stderr}")]
    Tool { command: String, stderr: String },
    #[error("test registry I/O failed")]
    Io(#[source] std::io::Error),
    #[error("the test registry did not come up: {log}")]
    NotReady { log: String },
}

/// Who may use a test registry.
#[derive(Clone, Debug, Default)]
pub enum TestAuth {
    #[default]
    Anonymous,
    /// `auth: htpasswd` with one user.
    Htpasswd { username: String, password: String },
    /// `auth: token`, tokens from a token service that wants these
    /// credentials (`None`: it gives tokens to anyone).
    Token {
        credentials: Option<(String, String)>,
    },
}

#[derive(Clone, Debug, Default)]
pub struct TestRegistryOptions {
    pub auth: TestAuth,
    /// Serve HTTPS with a certificate from a test CA, which
    /// [`TestRegistry::client_config`] trusts through its `certs.d`.
    pub tls: bool,
    /// Blob GETs answer with a redirect to this base URL plus the blob's
    /// storage path (distribution's `redirect` storage middleware), as
    /// registries on S3 or behind a CDN do.
    pub redirect_blobs_to: Option<String>,
}

pub struct TestRegistry {
    child: Option<Child>,
    host: String,
    port: u16,
    directory: TempDir,
    certs_root: PathBuf,
    token_server: Option<token_server::TokenServer>,
}

impl TestRegistry {
    /// Why test registries cannot run here, if they cannot: the tools they
    /// need (`docker-registry`, `htpasswd`, `openssl`) are missing.
    pub fn unavailable_reason() -> Option<String> {
        let missing: Vec<&str> = [REGISTRY_BINARY, "htpasswd", "openssl"]
            .into_iter()
            .filter(|tool| !tool_exists(tool))
            .collect();
        (!missing.is_empty()).then(|| {
            format!(
                "missing {} (apt-get install docker-registry apache2-utils openssl)",
                missing.join(", ")
            )
        })
    }

    /// A plain HTTP registry without auth.
    pub fn plain() -> Result<Self, TestRegistryError> {
        Self::start(TestRegistryOptions::default())
    }

    pub fn start(options: TestRegistryOptions) -> Result<Self, TestRegistryError> {
        let directory = tempfile::Builder::new()
            .prefix("berth-test-registry")
            .tempdir()
            .map_err(TestRegistryError::Io)?;
        let port = free_port()?;
        let host = format!("127.0.0.1:{port}");
        let certs_root = directory.path().join("certs.d");
        let mut token_server = None;
        let mut sections = Vec::new();
        match &options.auth {
            TestAuth::Anonymous => {}
            TestAuth::Htpasswd { username, password } => {
                let file = directory.path().join("htpasswd");
                make_htpasswd(&file, username, password)?;
                sections.push(format!(
                    "auth:\n  htpasswd:\n    realm: berth-test\n    path: {}\n",
                    file.display()
                ));
            }
            TestAuth::Token { credentials } => {
                let signer = certs::make_token_signer(directory.path())?;
                let server = token_server::TokenServer::start(&signer, credentials.clone())?;
                sections.push(format!(
                    "auth:\n  token:\n    realm: {}\n    service: {}\n    issuer: {}\n    rootcertbundle: {}\n",
                    server.realm,
                    token_server::TOKEN_SERVICE,
                    token_server::TOKEN_ISSUER,
                    signer.certificate.display()
                ));
                token_server = Some(server);
            }
        }
        let mut tls_section = String::new();
        if options.tls {
            let files = certs::make_tls_files(directory.path())?;
            let host_dir = certs_root.join(&host);
            fs_err::create_dir_all(&host_dir).map_err(TestRegistryError::Io)?;
            fs_err::copy(&files.ca_certificate, host_dir.join("ca.crt"))
                .map_err(TestRegistryError::Io)?;
            tls_section = format!(
                "  tls:\n    certificate: {}\n    key: {}\n",
                files.server_certificate.display(),
                files.server_key.display()
            );
        }
        if let Some(base_url) = &options.redirect_blobs_to {
            sections.push(format!(
                "middleware:\n  storage:\n    - name: redirect\n      options:\n        baseurl: {base_url}\n"
            ));
        }
        let config = format!(
            "version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: true\n\
             storage:\n  filesystem:\n    rootdirectory: {storage}\n  delete:\n    enabled: true\n\
             \x20 maintenance:\n    uploadpurging:\n      enabled: false\n\
             http:\n  addr: {host}\n  secret: berth-test-secret\n{tls_section}{auth}",
            storage = directory.path().join("storage").display(),
            auth = sections.concat(),
        );
        let config_path = directory.path().join("config.yml");
        fs_err::write(&config_path, config).map_err(TestRegistryError::Io)?;
        let mut registry = Self {
            child: None,
            host,
            port,
            directory,
            certs_root,
            token_server,
        };
        registry.spawn()?;
        Ok(registry)
    }

    /// Starts the registry process (again, after [`TestRegistry::kill`]):
    /// same port, same storage.
    pub fn restart(&mut self) -> Result<(), TestRegistryError> {
        self.kill();
        self.spawn()
    }

    fn spawn(&mut self) -> Result<(), TestRegistryError> {
        let log = fs_err::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.directory.path().join("registry.log"))
            .map_err(TestRegistryError::Io)?
            .into_parts()
            .0;
        let log_err = log.try_clone().map_err(TestRegistryError::Io)?;
        let child = Command::new(REGISTRY_BINARY)
            .arg("serve")
            .arg(self.directory.path().join("config.yml"))
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|source| TestRegistryError::Spawn {
                program: REGISTRY_BINARY,
                source,
            })?;
        self.child = Some(child);
        self.wait_ready(self.port)
    }

    fn wait_ready(&mut self, port: u16) -> Result<(), TestRegistryError> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(());
            }
            let exited = matches!(
                self.child.as_mut().map(Child::try_wait),
                Some(Ok(Some(_))) | None
            );
            if exited || Instant::now() > deadline {
                return Err(TestRegistryError::NotReady { log: self.log() });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// What the registry printed so far.
    pub fn log(&self) -> String {
        fs_err::read_to_string(self.directory.path().join("registry.log")).unwrap_or_default()
    }

    /// Settings that reach this registry: its own `certs.d`, and quick
    /// retries so that failure tests stay short.
    pub fn client_config(&self) -> ClientConfig {
        ClientConfig {
            certs_root: self.certs_root.clone(),
            retry: RetryPolicy {
                attempts: 3,
                initial_backoff: Duration::from_millis(50),
            },
            ..ClientConfig::default()
        }
    }

    pub fn client(&self, credentials: Option<Credentials>) -> Result<RegistryClient, ClientError> {
        RegistryClient::new(&self.host, &self.client_config(), credentials)
    }

    /// The registry's storage root (`docker/registry/v2/…` below it).
    pub fn storage_root(&self) -> PathBuf {
        self.directory.path().join("storage")
    }

    /// Where the registry keeps blob `digest`'s bytes: overwrite it to make
    /// the registry serve a corrupt blob.
    pub fn blob_data_path(&self, digest: &Digest) -> PathBuf {
        self.storage_root()
            .join("docker/registry/v2/blobs/sha256")
            .join(&digest.hex()[..2])
            .join(digest.hex())
            .join("data")
    }

    /// The token requests seen so far (token auth only).
    pub fn token_requests(&self) -> Vec<TokenRequest> {
        self.token_server
            .as_ref()
            .and_then(|server| server.requests.lock().ok().map(|requests| requests.clone()))
            .unwrap_or_default()
    }

    /// The token service's realm URL (token auth only).
    pub fn token_realm(&self) -> Option<&str> {
        self.token_server
            .as_ref()
            .map(|server| server.realm.as_str())
    }

    /// Stops the registry now (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for TestRegistry {
    fn drop(&mut self) {
        self.kill();
    }
}

fn tool_exists(tool: &str) -> bool {
    if tool.starts_with('/') {
        return Path::new(tool).exists();
    }
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|directory| directory.join(tool).is_file())
    })
}

/// A port nothing listens on right now (the registry binds it a moment
/// later; a clash shows up as the registry not coming up).
fn free_port() -> Result<u16, TestRegistryError> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(TestRegistryError::Io)?;
    Ok(listener.local_addr().map_err(TestRegistryError::Io)?.port())
}

/// A bcrypt htpasswd file (distribution accepts bcrypt only).
fn make_htpasswd(path: &Path, username: &str, password: &str) -> Result<(), TestRegistryError> {
    let output = Command::new("htpasswd")
        .args(["-Bbn", username, password])
        .output()
        .map_err(|source| TestRegistryError::Spawn {
            program: "htpasswd",
            source,
        })?;
    if !output.status.success() {
        return Err(TestRegistryError::Tool {
            command: "htpasswd -Bbn".into(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    fs_err::write(path, output.stdout).map_err(TestRegistryError::Io)
}
