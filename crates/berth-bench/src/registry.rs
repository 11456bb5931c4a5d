//! A private registry for the cold pull: Debian's `docker-registry`
//! (distribution 2.8) on 127.0.0.1 at a free port (never 5000, never a
//! system service), plain HTTP, its config and storage in a temporary
//! directory; killed when dropped. Engines treat 127.0.0.0/8 as an insecure
//! registry, so no TLS is needed.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::process::which;

pub struct LocalRegistry {
    child: Child,
    port: u16,
    /// Config, storage and log; removed with the registry.
    _directory: tempfile::TempDir,
    pub version: String,
}

pub fn binary() -> Option<PathBuf> {
    which("docker-registry").or_else(|| {
        let path = PathBuf::from("/usr/bin/docker-registry");
        path.exists().then_some(path)
    })
}

impl LocalRegistry {
    pub fn start(program: &Path, parent: &Path) -> Result<Self, String> {
        let directory = tempfile::Builder::new()
            .prefix("registry-")
            .tempdir_in(parent)
            .map_err(|error| format!("failed to make the registry directory: {error}"))?;
        let version = Command::new(program)
            .arg("--version")
            .output()
            .map(|output| {
                String::from_utf8_lossy(&output.stdout)
                    .split_whitespace()
                    .last()
                    .unwrap_or("")
                    .to_owned()
            })
            .unwrap_or_default();
        let mut last_error = String::new();
        // A port can be taken between choosing and binding it: try again.
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|listener| listener.local_addr())
                .map(|address| address.port())
                .map_err(|error| format!("no free port on 127.0.0.1: {error}"))?;
            if port == 5000 {
                continue;
            }
            let config = format!(
                "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n\
                 storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
                 http:\n  addr: 127.0.0.1:{port}\n  secret: berth-bench\n",
                directory.path().join("storage").display()
            );
            let config_path = directory.path().join("config.yml");
            fs_err::write(&config_path, config).map_err(|error| error.to_string())?;
            let log = fs_err::File::create(directory.path().join("registry.log"))
                .map_err(|error| error.to_string())?
                .into_parts()
                .0;
            let log_err = log.try_clone().map_err(|error| error.to_string())?;
            let mut child = Command::new(program)
                .arg("serve")
                .arg(&config_path)
                .stdin(Stdio::null())
                .stdout(log)
                .stderr(log_err)
                .spawn()
                .map_err(|error| format!("failed to run {}: {error}", program.display()))?;
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Ok(Self {
                        child,
                        port,
                        _directory: directory,
                        version,
                    });
                }
                if matches!(child.try_wait(), Ok(Some(_))) || Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    last_error = fs_err::read_to_string(directory.path().join("registry.log"))
                        .unwrap_or_default();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Err(format!(
            "docker-registry did not come up: {}",
            last_error.trim()
        ))
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for LocalRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
