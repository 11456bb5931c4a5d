//! Running attached: hand the monitor our streams, put a terminal in raw
//! mode for `-t`, forward signals (`--sig-proxy`), and exit with the
//! container's status.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

use anyhow::Context;
use berth_engine::containers::{start_container, Attachment};
use berth_engine::Engine;
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal};
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
    if sig_proxy && !tty {
        catch_proxied_signals();
    }
    let started = match claimed {
        Some(claimed) => claimed.start(Some(attachment)),
        None => start_container(engine, id, Some(attachment)),
    };
    let mut started =
        started.map_err(|error| crate::exit::engine_status_error(&error, crate::exit::USAGE))?;
    let _raw = if terminal { RawMode::enter() } else { None };
    if sig_proxy && !tty {
        proxy_signals(started.pid);
    }
    if terminal {
        forward_window_changes(started.monitor_pid);
    }
    match started.wait_exit() {
        Some(code) => Ok(code),
        None => {
            // The monitor was killed: what it left (its cgroup, addresses,
            // ports, a `--rm` container's row) is repaired before the run
            // returns, as the next command would.
            let config = engine.config().clone();
            let _ = berth_engine::containers::find_container(engine.store(), &config, &started.id);
            Err(StatusError {
                status: 125,
                message: format!(
                    "the monitor of container {} exited unexpectedly",
                    started.id
                ),
            }
            .into())
        }
    }
}

/// The signals `--sig-proxy` forwards.
const PROXIED: [Signal; 6] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
];

/// Starts catching the signals `--sig-proxy` forwards, before the container
/// (and so its pid) exists: one that arrives meanwhile waits for
/// [`proxy_signals`] instead of killing the CLI, as Docker's CLI catches them
/// before it starts the container.
pub(super) fn catch_proxied_signals() {
    forward_signals(&PROXIED);
}

/// Forwards the signals a user sends the CLI to the container's first
/// process (Docker's `--sig-proxy`), those caught so far first.
pub(super) fn proxy_signals(pid: i32) {
    PROXY_TARGET.store(pid, Ordering::SeqCst);
    catch_proxied_signals();
    loop {
        let pending = PENDING.swap(0, Ordering::SeqCst);
        if pending == 0 {
            break;
        }
        for signal in PROXIED {
            if pending & (1 << signal as u64) != 0 {
                // SAFETY: kill has no memory effects in this process.
                unsafe { libc::kill(pid, signal as libc::c_int) };
            }
        }
    }
}

/// `-t`: terminal size changes reach the container through its monitor,
/// which reads the new size from this terminal (Docker's resize).
pub(super) fn forward_window_changes(monitor_pid: i32) {
    WINDOW_TARGET.store(monitor_pid, Ordering::SeqCst);
    forward_signals(&[Signal::SIGWINCH]);
}

/// Where [`pass_on`] sends SIGWINCH, and every other signal it handles.
static WINDOW_TARGET: AtomicI32 = AtomicI32::new(0);
static PROXY_TARGET: AtomicI32 = AtomicI32::new(0);
/// Proxied signals caught before the container's pid was known, by number.
static PENDING: AtomicU64 = AtomicU64::new(0);

/// The handler of the forwarded signals: kill(2) is async-signal-safe, so
/// no thread has to wait for them.
extern "C" fn pass_on(signal: libc::c_int) {
    let target = if signal == libc::SIGWINCH {
        &WINDOW_TARGET
    } else {
        &PROXY_TARGET
    };
    let pid = target.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill has no memory effects in this process.
        unsafe { libc::kill(pid, signal) };
    } else if signal != libc::SIGWINCH {
        PENDING.fetch_or(1 << signal, Ordering::SeqCst);
    }
}

/// Installs [`pass_on`] for `signals`; interrupted reads and writes restart.
fn forward_signals(signals: &[Signal]) {
    let action = SigAction::new(
        SigHandler::Handler(pass_on),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for signal in signals {
        // SAFETY: the handler only reads an atomic and calls kill(2).
        let _ = unsafe { nix::sys::signal::sigaction(*signal, &action) };
    }
}
