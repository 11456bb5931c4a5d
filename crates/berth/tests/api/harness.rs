//! A `berth serve` on a private socket and root, the real docker CLI
//! pointed at it, and raw HTTP requests for what the CLI cannot send.
#![allow(dead_code, clippy::unwrap_used)] // test support: a failed step is a failed test

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{output_with_stdin, Berth, Run};

/// The docker CLI the tests drive: `$BERTH_TEST_DOCKER_CLI`, else Debian's
/// docker.io 20.10 at /usr/bin/docker. None (with the reason printed) when
/// it is missing.
pub fn docker_cli() -> Option<PathBuf> {
    let path = std::env::var_os("BERTH_TEST_DOCKER_CLI")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/docker"));
    if path.exists() {
        Some(path)
    } else {
        eprintln!("SKIP: no docker CLI at {path:?} (set BERTH_TEST_DOCKER_CLI)");
        None
    }
}

pub struct Server {
    pub berth: Berth,
    pub directory: tempfile::TempDir,
    pub socket: PathBuf,
    pub docker: PathBuf,
    child: Option<Child>,
}

impl Server {
    /// A server with busybox loaded; None when there is no docker CLI.
    pub fn start() -> Option<Self> {
        Self::start_with(&[], true)
    }

    pub fn start_with(extra: &[&str], load: bool) -> Option<Self> {
        Self::start_in(extra, load, &[])
    }

    /// A server with busybox loaded and `env` set in its environment.
    pub fn start_with_env(env: &[(&str, &Path)]) -> Option<Self> {
        Self::start_in(&[], true, env)
    }

    fn start_in(extra: &[&str], load: bool, env: &[(&str, &Path)]) -> Option<Self> {
        let docker = docker_cli()?;
        let berth = Berth::new();
        if load {
            berth.load("busybox-docker.tar");
        }
        let directory = tempfile::Builder::new()
            .prefix("berth-api-")
            .tempdir()
            .unwrap();
        let socket = directory.path().join("docker.sock");
        let host = format!("unix://{}", socket.display());
        let child = berth
            .command()
            .args(["serve", "-H", &host])
            .args(extra)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let server = Self {
            berth,
            directory,
            socket,
            docker,
            child: Some(child),
        };
        server.wait_for_socket(&server.socket);
        Some(server)
    }

    pub fn wait_for_socket(&self, socket: &Path) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while UnixStream::connect(socket).is_err() {
            assert!(
                Instant::now() < deadline,
                "berth serve did not listen on {socket:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn host(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    /// The docker CLI with DOCKER_HOST at this server and a private config.
    pub fn docker_command(&self) -> Command {
        let mut command = Command::new(&self.docker);
        command
            .env("DOCKER_HOST", self.host())
            .env("DOCKER_CONFIG", self.directory.path().join("docker-config"))
            .env_remove("DOCKER_CONTEXT")
            .env_remove("DOCKER_API_VERSION");
        command
    }

    pub fn docker(&self, args: &[&str]) -> Run {
        self.docker_with_stdin(args, None)
    }

    pub fn docker_with_stdin(&self, args: &[&str], stdin: Option<&[u8]>) -> Run {
        let mut command = self.docker_command();
        command.args(args);
        Run {
            output: output_with_stdin(command, stdin),
        }
    }

    /// One raw request on a fresh connection; returns (status, head, body).
    pub fn raw(&self, request: &[u8]) -> (u16, String, Vec<u8>) {
        raw_request(&self.socket, request)
    }

    pub fn child(&mut self) -> &mut Child {
        self.child.as_mut().unwrap()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Sends `request` (which should say `Connection: close`) and reads the
/// whole answer; a chunked body is decoded.
pub fn raw_request(socket: &Path, request: &[u8]) -> (u16, String, Vec<u8>) {
    let mut stream = UnixStream::connect(socket).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream.write_all(request).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let end = answer
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(&answer)));
    let head = String::from_utf8_lossy(&answer[..end]).into_owned();
    let mut body = answer[end + 4..].to_vec();
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|status| status.parse().ok())
        .unwrap();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    (status, head, body)
}

fn dechunk(mut bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(line_end) = bytes.windows(2).position(|window| window == b"\r\n") else {
            return out;
        };
        let size =
            usize::from_str_radix(std::str::from_utf8(&bytes[..line_end]).unwrap().trim(), 16)
                .unwrap();
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&bytes[line_end + 2..line_end + 2 + size]);
        bytes = &bytes[line_end + 2 + size + 2..];
    }
}

/// The header's value in a response head.
pub fn header<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

/// Runs the docker CLI with a pseudo-terminal (24 rows, 80 columns) as its
/// stdin, stdout and stderr, writes `input`, and returns what appeared on
/// the terminal and the exit status.
pub fn docker_in_terminal(server: &Server, args: &[&str], input: &[u8]) -> (String, i32) {
    let size = nix::pty::Winsize {
        ws_row: 24,
        ws_col: 80,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = nix::pty::openpty(Some(&size), None).unwrap();
    let mut command = server.docker_command();
    command
        .args(args)
        .stdin(Stdio::from(pty.slave.try_clone().unwrap()))
        .stdout(Stdio::from(pty.slave.try_clone().unwrap()))
        .stderr(Stdio::from(pty.slave));
    // SAFETY: setsid and the TIOCSCTTY ioctl are async-signal-safe; they make
    // the pty the child's controlling terminal, as a login shell has.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, || {
            nix::libc::setsid();
            nix::libc::ioctl(0, nix::libc::TIOCSCTTY, 0);
            Ok(())
        });
    }
    let mut child = command.spawn().unwrap();
    // The command holds copies of the slave until dropped.
    drop(command);
    let mut master = std::fs::File::from(pty.master);
    // Give the CLI time to put the terminal in raw mode before typing.
    std::thread::sleep(Duration::from_millis(700));
    master.write_all(input).unwrap();
    let reader = std::thread::spawn(move || {
        let mut output = Vec::new();
        let mut buffer = [0u8; 4096];
        // EIO once the child (the last holder of the slave) has exited.
        while let Ok(read) = master.read(&mut buffer) {
            if read == 0 {
                break;
            }
            output.extend_from_slice(&buffer[..read]);
        }
        output
    });
    let status = crate::support::containers::wait_child(&mut child, 30.0, "docker exec -it");
    let output = reader.join().unwrap();
    (
        String::from_utf8_lossy(&output).into_owned(),
        status.code().unwrap_or(-1),
    )
}

/// (open descriptors, threads) of process `pid`, from /proc: what a server
/// must give back once its clients are gone.
pub fn resources(pid: u32) -> (usize, usize) {
    let count = |what: &str| {
        fs_err::read_dir(format!("/proc/{pid}/{what}"))
            .unwrap()
            .count()
    };
    (count("fd"), count("task"))
}

/// Polls [`resources`] until process `pid` is back at `idle` or `seconds`
/// have passed; returns the last reading.
pub fn settle(pid: u32, idle: (usize, usize), seconds: u64) -> (usize, usize) {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    loop {
        let now = resources(pid);
        if now == idle || Instant::now() >= deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
