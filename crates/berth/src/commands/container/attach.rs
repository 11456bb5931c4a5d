//! Running attached: hand the monitor our streams, put a terminal in raw
//! mode for `-t`, forward signals (`--sig-proxy`), and exit with the
//! container's status.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use anyhow::Context;
use berth_engine::containers::{start_container, Attachment};
use berth_engine::Engine;
use nix::sys::signal::Signal;
use nix::sys::termios::{self, SetArg, Termios};

use crate::exit::StatusError;

#[derive(Clone, Copy, Debug, Default)]
pub struct AttachStreams {
    pub stdin: bool,
    pub stdout: bool,
    pub stderr: bool,
}

/// Restores the terminal when dropped.
pub(super) struct RawMode {
    fd: OwnedFd,
    saved: Termios,
}

impl RawMode {
    pub(super) fn enter() -> Option<Self> {
        let stdin = std::io::stdin();
        let fd = stdin.as_fd().try_clone_to_owned().ok()?;
        let saved = termios::tcgetattr(&fd).ok()?;
        let mut raw = saved.clone();
        termios::cfmakeraw(&mut raw);
        termios::tcsetattr(&fd, SetArg::TCSANOW, &raw).ok()?;
        Some(Self { fd, saved })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = termios::tcsetattr(&self.fd, SetArg::TCSANOW, &self.saved);
    }
}

fn dup(fd: impl AsFd) -> anyhow::Result<OwnedFd> {
    fd.as_fd()
        .try_clone_to_owned()
        .context("failed to duplicate a standard stream")
}

/// Starts the container attached and returns its exit status.
pub fn start_attached(
    engine: &mut Engine,
    id: &str,
    streams: AttachStreams,
    tty: bool,
    sig_proxy: bool,
    claimed: Option<berth_engine::warm::Claimed>,
) -> anyhow::Result<i32> {
    let attachment = Attachment {
        stdin: if streams.stdin {
            Some(dup(std::io::stdin())?)
        } else {
            None
        },
        stdout: if streams.stdout {
            Some(dup(std::io::stdout())?)
        } else {
            None
        },
        stderr: if streams.stderr {
            Some(dup(std::io::stderr())?)
        } else {
            None
        },
    };
    let terminal =
        tty && streams.stdin && nix::unistd::isatty(std::io::stdin().as_raw_fd()).unwrap_or(false);
    let started = match claimed {
        Some(claimed) => claimed.start(Some(attachment)),
        None => start_container(engine, id, Some(attachment)),
    };
    let mut started = started.map_err(|error| {
        let status = error.run_status();
        anyhow::Error::new(StatusError {
            status,
            message: error.to_string(),
        })
    })?;
    let _raw = if terminal { RawMode::enter() } else { None };
    if sig_proxy && !tty {
        proxy_signals(started.pid);
    }
    if terminal {
        forward_window_changes(started.monitor_pid);
    }
    match started.wait_exit() {
        Some(code) => Ok(code),
        None => Err(StatusError {
            status: 125,
            message: format!(
                "the monitor of container {} exited unexpectedly",
                started.id
            ),
        }
        .into()),
    }
}

/// Forwards the signals a user sends the CLI to the container's first
/// process (Docker's `--sig-proxy`).
pub(super) fn proxy_signals(pid: i32) {
    forward_signals(
        &[
            Signal::SIGINT,
            Signal::SIGTERM,
            Signal::SIGHUP,
            Signal::SIGQUIT,
            Signal::SIGUSR1,
            Signal::SIGUSR2,
        ],
        pid,
    );
}

/// `-t`: terminal size changes reach the container through its monitor,
/// which reads the new size from this terminal (Docker's resize).
pub(super) fn forward_window_changes(monitor_pid: i32) {
    forward_signals(&[Signal::SIGWINCH], monitor_pid);
}

/// Blocks `signals` in this thread (and so in threads created after) and
/// passes each one that arrives on to `pid`, from a thread that waits for
/// them with sigwait.
fn forward_signals(signals: &[Signal], pid: i32) {
    let mut set = nix::sys::signal::SigSet::empty();
    for signal in signals {
        set.add(*signal);
    }
    if set.thread_block().is_err() {
        return;
    }
    std::thread::spawn(move || loop {
        match set.wait() {
            Ok(signal) => {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal);
            }
            Err(_) => return,
        }
    });
}
