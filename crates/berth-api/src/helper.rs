//! Both sides of `berth api-helper exec`: the server runs the berth binary
//! for an exec, which joins the container's namespaces (the pid namespace
//! for the calling process's future children too), because the server is
//! multi-threaded and a forked child of a multi-threaded process may only
//! run async-signal-safe code. `std::process::Command` (fork + exec) is safe
//! from any thread. (Starting a container needs no helper: the engine
//! spawns the monitor itself when its caller has threads,
//! `containers/monitor/launch.rs`.)
//!
//! Protocol: the request is one JSON argument; the helper's stdin, stdout
//! and stderr are the container's streams (pipes from the server, or
//! /dev/null); fd 3 is a unix socket on which the helper reports
//! [`MonitorMessage`]s as JSON lines (started / failed, then exited when
//! asked to wait). For an exec with a tty, the pty master comes first over
//! fd 3 (SCM_RIGHTS; one plain byte instead when there is none).

use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use berth_engine::containers::monitor::protocol::MonitorMessage;
use berth_engine::containers::{exec_in_container, ContainerError, ExecRequest};
use berth_engine::{Engine, EngineConfig, EngineError};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;

/// The descriptor the helper reports on.
const STATUS_FD: i32 = 3;

/// `berth api-helper exec`: run a process in a running container.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ExecHelperRequest {
    /// The exec instance's id (`execID` in its events).
    #[serde(default)]
    pub id: Option<String>,
    pub container: String,
    pub command: Vec<String>,
    pub env: Vec<String>,
    pub working_dir: Option<String>,
    pub user: Option<String>,
    pub tty: bool,
    pub privileged: bool,
    pub stdin: bool,
}

/// A running helper, seen from the server.
pub struct Helper {
    child: Child,
    status: UnixStream,
}

impl Helper {
    /// Runs `berth api-helper KIND REQUEST` with the given stdio.
    pub fn spawn(
        binary: &std::path::Path,
        config: &EngineConfig,
        kind: &str,
        request: &impl Serialize,
        stdio: [Stdio; 3],
    ) -> Result<Self, ApiError> {
        let request = serde_json::to_string(request)
            .map_err(|error| ApiError::internal(error.to_string()))?;
        let (ours, theirs) = UnixStream::pair()
            .map_err(|error| ApiError::internal(format!("failed to create a socket: {error}")))?;
        let theirs_fd = theirs.as_raw_fd();
        let [stdin, stdout, stderr] = stdio;
        let mut command = Command::new(binary);
        command
            .arg("--root")
            .arg(&config.root)
            .arg("--run-root")
            .arg(&config.run_root)
            .arg("api-helper")
            .arg(kind)
            .arg(request)
            .stdin(stdin)
            .stdout(stdout)
            .stderr(stderr)
            .env_remove("LISTEN_FDS")
            .env_remove("LISTEN_PID");
        // SAFETY: the closure runs in the forked child before exec and calls
        // only dup2, which is async-signal-safe; `theirs_fd` stays open in
        // the parent until spawn returns. dup2 clears FD_CLOEXEC on fd 3.
        unsafe {
            command.pre_exec(move || {
                if libc::dup2(theirs_fd, STATUS_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().map_err(|error| {
            ApiError::internal(format!("failed to run {}: {error}", binary.display()))
        })?;
        drop(theirs);
        Ok(Self {
            child,
            status: ours,
        })
    }

    /// The next message; None when the helper is gone.
    pub fn receive(&mut self) -> Option<MonitorMessage> {
        let line = read_line(&mut self.status)?;
        serde_json::from_slice(&line).ok()
    }

    /// The pty master an exec with a tty sends first.
    pub fn receive_fd(&mut self) -> Option<OwnedFd> {
        berth_runtime::console::receive_fd(self.status.as_raw_fd()).ok()
    }

    /// Reaps the helper process.
    pub fn reap(mut self) {
        let _ = self.child.wait();
    }
}

/// One line, read a byte at a time so that nothing after it (a descriptor
/// on the socket) is consumed.
fn read_line(stream: &mut UnixStream) -> Option<Vec<u8>> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        match stream.read(&mut byte) {
            Ok(0) => return None,
            Ok(_) if byte[0] == b'\n' => return Some(line),
            Ok(_) => {
                line.push(byte[0]);
                if line.len() > 1024 * 1024 {
                    return None;
                }
            }
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        }
    }
}

/// Turns a failure a helper reported into the API error.
pub fn failure(message: String, status: i32) -> ApiError {
    let status = if matches!(status, 126 | 127) {
        400
    } else {
        500
    };
    ApiError::new(status, message)
}

// ---- the helper process side (runs in `berth api-helper`) ----

/// Runs one helper request; returns the process exit status.
pub fn run(config: EngineConfig, kind: &str, request: &str) -> i32 {
    // SAFETY: fd 3 was set up by the server for this process (pre_exec
    // above); nothing else in this process owns it.
    let status = unsafe { OwnedFd::from_raw_fd(STATUS_FD) };
    if nix::sys::socket::getsockopt(&status, nix::sys::socket::sockopt::SockType).is_err() {
        eprintln!("berth api-helper is run by `berth serve` only");
        std::mem::forget(status);
        return 125;
    }
    let mut status = UnixStream::from(status);
    let result = match kind {
        "exec" => serde_json::from_str(request)
            .map_err(|error| error.to_string())
            .map(|request| exec(config, &request, &mut status)),
        other => Err(format!("unknown helper request {other:?}")),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            send(
                &mut status,
                &MonitorMessage::Failed {
                    message,
                    status: 125,
                },
            );
            125
        }
    }
}

fn send(status: &mut UnixStream, message: &MonitorMessage) {
    if let Ok(mut line) = serde_json::to_vec(message) {
        line.push(b'\n');
        let _ = status.write_all(&line);
    }
}

fn message_of(error: &EngineError) -> String {
    berth_engine::ErrorChain(error).to_string()
}

fn dup_standard(fd: i32) -> std::io::Result<OwnedFd> {
    // SAFETY: 0, 1 and 2 are open for the life of the process; the borrow
    // lasts only for the duplication.
    unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }.try_clone_to_owned()
}

/// Points 0, 1 and 2 at /dev/null: once the container (or the exec) has
/// its copies, the server's pipes must end when it does, not when the
/// helper does.
fn release_standard_streams() {
    if let Ok(null) = fs_err::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        for target in 0..=2 {
            // SAFETY: dup2 onto 0..2 replaces this process's standard
            // streams with /dev/null, which it owns.
            unsafe { libc::dup2(null.as_raw_fd(), target) };
        }
    }
}

fn exec(config: EngineConfig, request: &ExecHelperRequest, status: &mut UnixStream) -> i32 {
    let failed = |status: &mut UnixStream, error: &EngineError| {
        if request.tty {
            // The server waits for a descriptor first.
            let _ = status.write_all(b"x");
        }
        let code = match error {
            EngineError::StartFailed(failure) => failure.status,
            _ => 126,
        };
        send(
            status,
            &MonitorMessage::Failed {
                message: message_of(error),
                status: code,
            },
        );
        code
    };
    let engine = match Engine::open(config) {
        Ok(engine) => engine,
        Err(error) => return failed(status, &error),
    };
    let null = || -> std::io::Result<OwnedFd> {
        fs_err::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
            .map(OwnedFd::from)
    };
    let stdio_failed = |status: &mut UnixStream, what, source| {
        failed(status, &ContainerError::ExecStdio { what, source }.into())
    };
    let exec_request = ExecRequest {
        id: request.id.clone(),
        command: request.command.clone(),
        env: request.env.clone(),
        working_dir: request.working_dir.clone(),
        user: request.user.clone(),
        tty: request.tty,
        // The client sets the size after the start (exec resize).
        console_size: None,
        privileged: request.privileged,
    };
    let mut console = None;
    let stdio = if request.tty {
        let terminal = berth_runtime::console::console_socket_pair()
            .map_err(std::io::Error::from)
            .and_then(|pair| Ok((pair, null()?, null()?, null()?)));
        let ((ours, theirs), a, b, c) = match terminal {
            Ok(terminal) => terminal,
            Err(source) => return stdio_failed(status, "terminal", source),
        };
        console = Some(ours);
        berth_runtime::Stdio {
            stdin: a,
            stdout: b,
            stderr: c,
            console: Some(theirs),
        }
    } else {
        let stdin = if request.stdin {
            dup_standard(0)
        } else {
            null()
        };
        let streams = stdin.and_then(|stdin| Ok((stdin, dup_standard(1)?, dup_standard(2)?)));
        let (stdin, stdout, stderr) = match streams {
            Ok(streams) => streams,
            Err(source) => return stdio_failed(status, "streams", source),
        };
        berth_runtime::Stdio {
            stdin,
            stdout,
            stderr,
            console: None,
        }
    };
    let process = match exec_in_container(&engine, &request.container, &exec_request, stdio) {
        Ok(process) => process,
        Err(error) => return failed(status, &error),
    };
    if let Some(console) = console {
        match berth_runtime::console::receive_fd(console.as_raw_fd()) {
            Ok(master) => {
                let _ =
                    berth_runtime::console::send_fd(status.as_raw_fd(), master.as_fd().as_raw_fd());
            }
            Err(_) => {
                let _ = status.write_all(b"x");
            }
        }
    }
    release_standard_streams();
    send(
        status,
        &MonitorMessage::Started {
            pid: process.pid.as_raw(),
        },
    );
    let code = process.wait();
    send(status, &MonitorMessage::Exited { code });
    0
}
