//! Registries for the login tests, on 127.0.0.1 only: Debian's
//! `docker-registry` behind htpasswd (Basic auth), a small token-auth
//! registry (Bearer), the docker CLI to compare with, and a credential
//! helper script.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const USER: &str = "alice";
pub const PASSWORD: &str = "s3cret";

const REGISTRY: &str = "/usr/bin/docker-registry";
const HTPASSWD: &str = "/usr/bin/htpasswd";

/// `docker-registry serve` on a free loopback port with htpasswd auth
/// (alice / s3cret), its storage in a temporary directory; killed on drop.
pub struct BasicRegistry {
    pub port: u16,
    child: Child,
    directory: tempfile::TempDir,
}

impl BasicRegistry {
    /// None, with the reason printed, where the packages are missing
    /// (.ci/run installs docker-registry and apache2-utils).
    pub fn start() -> Option<Self> {
        for program in [REGISTRY, HTPASSWD] {
            if !Path::new(program).exists() {
                eprintln!(
                    "SKIP: {program} missing (apt-get install docker-registry apache2-utils)"
                );
                return None;
            }
        }
        let directory = tempfile::Builder::new()
            .prefix("berth-registry-")
            .tempdir()
            .unwrap();
        let htpasswd = Command::new(HTPASSWD)
            .args(["-Bbn", USER, PASSWORD])
            .output()
            .unwrap();
        assert!(htpasswd.status.success(), "htpasswd failed: {htpasswd:?}");
        fs_err::write(directory.path().join("htpasswd"), &htpasswd.stdout).unwrap();
        // A port can be taken between choosing and binding it: try again.
        for _ in 0..5 {
            let port = free_port();
            let config = directory.path().join("config.yml");
            fs_err::write(
                &config,
                format!(
                    "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n\
                     storage:\n  filesystem:\n    rootdirectory: {root}/data\n\
                     http:\n  addr: 127.0.0.1:{port}\n\
                     auth:\n  htpasswd:\n    realm: berth-test\n    path: {root}/htpasswd\n",
                    root = directory.path().display()
                ),
            )
            .unwrap();
            let log = fs_err::File::create(directory.path().join("registry.log"))
                .unwrap()
                .into_file();
            let mut child = Command::new(REGISTRY)
                .arg("serve")
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap();
            if wait_for_port(port, &mut child) {
                return Some(Self {
                    port,
                    child,
                    directory,
                });
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        let log = fs_err::read_to_string(directory.path().join("registry.log")).unwrap_or_default();
        panic!("docker-registry did not start:\n{log}");
    }

    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn log(&self) -> String {
        fs_err::read_to_string(self.directory.path().join("registry.log")).unwrap_or_default()
    }
}

impl Drop for BasicRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// True once something accepts on the port; false if `child` exited first
/// or 20 s passed.
fn wait_for_port(port: u16, child: &mut Child) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        if matches!(child.try_wait(), Ok(Some(_))) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// A registry with token auth, as Docker Hub does it: `/v2/` answers 401
/// with a Bearer challenge whose realm is `/token` here; `/token` takes
/// alice / s3cret as Basic auth and hands out an access token and a
/// refresh token (the identity token docker stores); a wrong password gets
/// Docker Hub's `{"details": "incorrect username or password"}`.
pub struct TokenRegistry {
    pub port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TokenRegistry {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    std::thread::spawn(move || {
                        let _ = serve_token_registry(stream, port);
                    });
                }
            }
        });
        Self {
            port,
            stop,
            thread: Some(thread),
        }
    }

    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for TokenRegistry {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve_token_registry(mut stream: TcpStream, port: u16) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
        if stream.read(&mut byte)? == 0 {
            return Ok(());
        }
        // A TLS handshake (the HTTPS attempt first): answer as Go's HTTP
        // server does, so the client falls back to plain HTTP at once.
        if head.is_empty() && byte[0] == 0x16 {
            return stream.write_all(b"HTTP/1.0 400 Bad Request\r\n\r\n");
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    let path = head
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    let authorization = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("authorization")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_default();
    let basic = format!(
        "Basic {}",
        base64_encode(format!("{USER}:{PASSWORD}").as_bytes())
    );
    let (status, extra, body) = if path.starts_with("/v2/") {
        if authorization == "Bearer good-token" {
            ("200 OK", String::new(), "{}".to_owned())
        } else {
            (
                "401 Unauthorized",
                format!(
                    "WWW-Authenticate: Bearer realm=\"http://127.0.0.1:{port}/token\",service=\"berth-test\"\r\n"
                ),
                r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required","detail":null}]}"#
                    .to_owned(),
            )
        }
    } else if path.starts_with("/token") {
        if authorization == basic && path.contains("account=alice") {
            (
                "200 OK",
                String::new(),
                r#"{"token":"good-token","refresh_token":"refresh-1"}"#.to_owned(),
            )
        } else {
            (
                "401 Unauthorized",
                String::new(),
                r#"{"details":"incorrect username or password"}"#.to_owned(),
            )
        }
    } else {
        ("404 Not Found", String::new(), "{}".to_owned())
    };
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\n\
         Docker-Distribution-Api-Version: registry/2.0\r\n{extra}\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A docker-credential-helpers helper: keeps what it is given in
/// `DIR/state/` and appends each call to `DIR/state/log`.
const HELPER_SCRIPT: &str = r#"#!/bin/sh
state="$(dirname "$0")/state"
mkdir -p "$state"
input=$(cat)
case "$1" in
store) url=$(printf '%s' "$input" | sed -n 's/.*"ServerURL":"\([^"]*\)".*/\1/p') ;;
*) url=$input ;;
esac
echo "$1 $url" >>"$state/log"
file="$state/$(printf '%s' "$url" | tr -c 'A-Za-z0-9.-' _)"
case "$1" in
store) printf '%s' "$input" >"$file" ;;
get)
    if [ -f "$file" ]; then cat "$file"; else echo "credentials not found in native keychain"; exit 1; fi ;;
erase)
    if [ -f "$file" ]; then rm "$file"; else echo "credentials not found in native keychain"; exit 1; fi ;;
*) echo "unknown action $1"; exit 1 ;;
esac
"#;

/// A directory holding `docker-credential-test`, for the front of `PATH`.
pub struct HelperDir {
    pub directory: tempfile::TempDir,
}

impl HelperDir {
    pub fn new() -> Self {
        let directory = tempfile::Builder::new()
            .prefix("berth-helper-")
            .tempdir()
            .unwrap();
        let path = directory.path().join("docker-credential-test");
        fs_err::write(&path, HELPER_SCRIPT).unwrap();
        fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        Self { directory }
    }

    /// `PATH` with this directory first.
    pub fn path_variable(&self) -> std::ffi::OsString {
        let mut paths = vec![self.directory.path().to_owned()];
        if let Some(path) = std::env::var_os("PATH") {
            paths.extend(std::env::split_paths(&path));
        }
        std::env::join_paths(paths).unwrap()
    }

    /// The calls made so far, one `action server` per line.
    pub fn log(&self) -> String {
        fs_err::read_to_string(self.directory.path().join("state/log")).unwrap_or_default()
    }

    /// What `store` was given for `server`, as JSON.
    pub fn stored(&self, server: &str) -> Option<serde_json::Value> {
        let name: String = server
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let text = fs_err::read_to_string(self.directory.path().join("state").join(name)).ok()?;
        Some(serde_json::from_str(&text).unwrap())
    }
}

/// The Debian docker CLI (20.10) to compare with, or None with the reason
/// printed. It logs in client-side when no engine answers, so no engine
/// is needed; `BERTH_TEST_DOCKER_HOST` is used when set.
pub struct DockerCli {
    host: String,
    _no_daemon: Option<tempfile::TempDir>,
}

impl DockerCli {
    pub fn find() -> Option<Self> {
        let cli = Path::new("/usr/bin/docker");
        if !cli.exists() {
            eprintln!("SKIP: no /usr/bin/docker to compare with (apt-get install docker.io)");
            return None;
        }
        if let Some(host) = std::env::var("BERTH_TEST_DOCKER_HOST")
            .ok()
            .filter(|host| !host.is_empty())
        {
            return Some(Self {
                host,
                _no_daemon: None,
            });
        }
        let directory = tempfile::tempdir().unwrap();
        Some(Self {
            host: format!(
                "unix://{}",
                directory.path().join("no-daemon.sock").display()
            ),
            _no_daemon: Some(directory),
        })
    }

    /// Whether an engine answers (else docker logs in client-side).
    pub fn has_engine(&self) -> bool {
        self._no_daemon.is_none()
    }

    /// `docker --config CONFIG args…` with `stdin`, and `PATH` set when given.
    pub fn run(
        &self,
        config: &Path,
        args: &[&str],
        stdin: Option<&[u8]>,
        path: Option<&std::ffi::OsStr>,
    ) -> Output {
        let mut command = Command::new("/usr/bin/docker");
        command
            .arg("-H")
            .arg(&self.host)
            .arg("--config")
            .arg(config)
            .args(args)
            .env_remove("DOCKER_CONFIG");
        if let Some(path) = path {
            command.env("PATH", path);
        }
        super::support::output_with_stdin(command, stdin)
    }
}

/// The message of an error as printed by the docker CLI or by berth: the
/// stderr lines that are not warnings or logs, less "Error response from
/// daemon: " (docker) or "Error: " (berth).
pub fn error_words(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| !line.starts_with("WARNING!") && !line.starts_with("time="))
        .collect();
    let text = lines.join("\n");
    let text = text.trim();
    text.strip_prefix("Error response from daemon: ")
        .or_else(|| text.strip_prefix("Error: "))
        .unwrap_or(text)
        .to_owned()
}

/// A fresh Docker configuration directory (not yet created inside).
pub fn config_dir() -> (tempfile::TempDir, PathBuf) {
    let directory = tempfile::Builder::new()
        .prefix("berth-docker-config-")
        .tempdir()
        .unwrap();
    let config = directory.path().join("docker");
    (directory, config)
}
