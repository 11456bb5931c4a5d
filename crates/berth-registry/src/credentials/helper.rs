//! Credential helpers: the programs `docker-credential-NAME` that keep
//! secrets outside `config.json` (docker-credential-helpers' protocol).
//! `get` and `erase` read the server URL on stdin; `store` reads
//! `{"ServerURL","Username","Secret"}`; `get` answers with the same JSON, or
//! fails with "credentials not found in native keychain" on stdout.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use super::{AuthEntry, CredentialsError, IDENTITY_TOKEN_USERNAME};

/// Every helper prints exactly this when it has nothing for a server.
const NOT_FOUND: &str = "credentials not found in native keychain";

const PREFIX: &str = "docker-credential-";

#[derive(Serialize, Deserialize)]
struct Message {
    #[serde(rename = "ServerURL", default)]
    server_url: String,
    #[serde(rename = "Username", default)]
    username: String,
    #[serde(rename = "Secret", default)]
    secret: String,
}

/// One helper, found on `search_path` (`$PATH` when none is given).
pub(super) struct Helper<'a> {
    pub name: &'a str,
    pub search_path: Option<&'a OsStr>,
}

impl Helper<'_> {
    fn program(&self) -> String {
        format!("{PREFIX}{}", self.name)
    }

    /// The helper's credentials for `server`; `None` when it has none.
    pub fn get(&self, server: &str) -> Result<Option<AuthEntry>, CredentialsError> {
        let stdout = match self.run("get", server.as_bytes()) {
            Ok(stdout) => stdout,
            Err(failure) if failure.output == NOT_FOUND => return Ok(None),
            Err(failure) => return Err(failure.into_error("getting")),
        };
        let message: Message =
            serde_json::from_slice(&stdout).map_err(|source| CredentialsError::HelperOutput {
                program: self.program(),
                source,
            })?;
        if message.username.is_empty() && message.secret.is_empty() {
            return Ok(None);
        }
        // docker/cli: the user name "<token>" marks an identity token.
        Ok(Some(if message.username == IDENTITY_TOKEN_USERNAME {
            AuthEntry {
                identity_token: message.secret,
                ..AuthEntry::default()
            }
        } else {
            AuthEntry {
                username: message.username,
                password: message.secret,
                ..AuthEntry::default()
            }
        }))
    }

    pub fn store(&self, server: &str, entry: &AuthEntry) -> Result<(), CredentialsError> {
        let message = if entry.identity_token.is_empty() {
            Message {
                server_url: server.to_owned(),
                username: entry.username.clone(),
                secret: entry.password.clone(),
            }
        } else {
            Message {
                server_url: server.to_owned(),
                username: IDENTITY_TOKEN_USERNAME.to_owned(),
                secret: entry.identity_token.clone(),
            }
        };
        let mut input =
            serde_json::to_vec(&message).map_err(|source| CredentialsError::HelperOutput {
                program: self.program(),
                source,
            })?;
        input.push(b'\n');
        self.run("store", &input)
            .map(drop)
            .map_err(|failure| failure.into_error("storing"))
    }

    pub fn erase(&self, server: &str) -> Result<(), CredentialsError> {
        self.run("erase", server.as_bytes())
            .map(drop)
            .map_err(|failure| failure.into_error("erasing"))
    }

    /// Runs `docker-credential-NAME action` with `input` on stdin; its
    /// stdout, or why it failed (Go's words, as docker/cli reports them).
    fn run(&self, action: &str, input: &[u8]) -> Result<Vec<u8>, Failure> {
        let program = self.program();
        let Some(path) = self.find(&program) else {
            return Err(Failure {
                error: format!("exec: \"{program}\": executable file not found in $PATH"),
                output: String::new(),
            });
        };
        tracing::debug!(helper = %program, action, "running credential helper");
        let spawned = Command::new(&path)
            .arg(action)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = spawned.map_err(|error| Failure {
            error: format!("fork/exec {}: {error}", path.display()),
            output: String::new(),
        })?;
        if let Some(mut stdin) = child.stdin.take() {
            // A helper that exits without reading its input is judged by
            // its exit status below, not by the broken pipe.
            let _ = stdin.write_all(input);
        }
        let output = child.wait_with_output().map_err(|error| Failure {
            error: error.to_string(),
            output: String::new(),
        })?;
        if output.status.success() {
            return Ok(output.stdout);
        }
        Err(Failure {
            error: exit_text(output.status),
            output: String::from_utf8_lossy(&output.stdout).trim().to_owned(),
        })
    }

    fn find(&self, program: &str) -> Option<PathBuf> {
        find_program(program, self.search_path)
    }
}

/// Go's `exec.LookPath`: the first executable file named `program` on the
/// search path (`$PATH` when none is given).
fn find_program(program: &str, search_path: Option<&OsStr>) -> Option<PathBuf> {
    let search_path: OsString = match search_path {
        Some(path) => path.to_owned(),
        None => std::env::var_os("PATH")?,
    };
    std::env::split_paths(&search_path)
        .map(|directory| directory.join(program))
        .find(|candidate| {
            fs_err::metadata(candidate).is_ok_and(|metadata| {
                metadata.is_file() && metadata.permissions().mode() & 0o111 != 0
            })
        })
}

/// Whether `docker-credential-NAME` is on the search path.
pub(super) fn exists(name: &str, search_path: Option<&OsStr>) -> bool {
    find_program(&format!("{PREFIX}{name}"), search_path).is_some()
}

/// Whether a plain program (e.g. `pass`) is on the search path.
pub(super) fn program_exists(program: &str, search_path: Option<&OsStr>) -> bool {
    find_program(program, search_path).is_some()
}

struct Failure {
    error: String,
    output: String,
}

impl Failure {
    fn into_error(self, action: &'static str) -> CredentialsError {
        CredentialsError::Helper {
            action,
            error: self.error,
            output: self.output,
        }
    }
}

/// Go's `ExitError` text: "exit status 1", "signal: killed".
fn exit_text(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        return format!("exit status {code}");
    }
    let Some(signal) = status.signal() else {
        return status.to_string();
    };
    // Go's names for the signals a helper plausibly dies of (Linux numbers).
    let name = match signal {
        1 => "hangup",
        2 => "interrupt",
        6 => "aborted",
        9 => "killed",
        11 => "segmentation fault",
        13 => "broken pipe",
        15 => "terminated",
        other => return format!("signal: {other}"),
    };
    format!("signal: {name}")
}
