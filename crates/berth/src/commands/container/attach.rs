//! Running attached: hand the monitor our streams, put a terminal in raw
//! mode for `-t`, forward signals (`--sig-proxy`), and exit with the
//! container's status.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

use anyhow::Context;
use berth_engine::containers::{start_container, Attachment};
use berth_engine::Engine;
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

/// How `run` and `start -a` take part in the container's run.
#[derive(Clone, Debug)]
pub struct AttachedSession {
    pub streams: AttachStreams,
    pub tty: bool,
    /// Forward the signals this process receives to the container (`run
    /// --sig-proxy`, on by default, with or without a tty as in docker/cli
    /// 20.10; `start -a` without a tty).
    pub sig_proxy: bool,
    /// The detach sequence, watched for when stdin is attached from a
    /// terminal to a `-t` container (see `detach.rs`).
    pub detach_keys: Vec<u8>,
}

/// Starts the container attached and returns its exit status (0 when the
/// user detached: the container runs on).
pub fn start_attached(
    engine: &mut Engine,
    id: &str,
    session: &AttachedSession,
    claimed: Option<berth_engine::warm::Claimed>,
) -> anyhow::Result<i32> {
    let AttachedSession {
        streams,
        tty,
        sig_proxy,
        ..
    } = *session;
    let terminal =
        tty && streams.stdin && nix::unistd::isatty(std::io::stdin().as_raw_fd()).unwrap_or(false);
    // With a terminal the CLI reads its input itself, to see the detach
    // keys; the monitor gets the other end of a socket instead of a copy of
    // the terminal (and, when the socket ends, lets go of the terminal).
    let (stdin, input) = if terminal {
        let (ours, theirs) = super::detach::input_pair()?;
        (Some(theirs), Some(ours))
    } else if streams.stdin {
        (Some(dup(std::io::stdin())?), None)
    } else {
        (None, None)
    };
    let attachment = Attachment {
        stdin,
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
    if sig_proxy {
        catch_proxied_signals(tty);
    }
    let started = match claimed {
        Some(claimed) => claimed.start(Some(attachment)),
        None => start_container(engine, id, Some(attachment)),
    };
    let mut started =
        started.map_err(|error| crate::exit::engine_status_error(&error, crate::exit::USAGE))?;
    let raw = if terminal { RawMode::enter() } else { None };
    if sig_proxy {
        proxy_signals(started.pid, tty);
    }
    if terminal {
        forward_window_changes(started.monitor_pid);
    }
    let ended = match input {
        Some(input) => {
            super::detach::feed_terminal(&mut started, input, session.detach_keys.clone())
        }
        None => super::detach::Ended::Reported(started.wait_exit()),
    };
    drop(raw);
    match ended {
        // docker/cli's `run` and `start` detach without a word.
        super::detach::Ended::Detached => Ok(0),
        super::detach::Ended::Reported(Some(code)) => Ok(code),
        super::detach::Ended::Reported(None) => {
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

/// The signals `--sig-proxy` forwards: every signal docker/cli 20.10's
/// `ForwardAllSignals` passes on (it catches all and skips SIGCHLD and
/// SIGPIPE; SIGURG and SIGPROF never reach it, Go's runtime keeps them),
/// the real-time ones included, except those a program cannot catch
/// (SIGKILL, SIGSTOP) and the faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL),
/// which a process raises against itself. With a tty, SIGWINCH resizes
/// the container's terminal instead (see [`forward_window_changes`]).
fn proxied(tty: bool) -> Vec<libc::c_int> {
    let mut signals = vec![
        libc::SIGHUP,
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGTRAP,
        libc::SIGABRT,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
        libc::SIGTERM,
        libc::SIGSTKFLT,
        libc::SIGCONT,
        libc::SIGTSTP,
        libc::SIGTTIN,
        libc::SIGTTOU,
        libc::SIGXCPU,
        libc::SIGXFSZ,
        libc::SIGVTALRM,
        libc::SIGIO,
        libc::SIGPWR,
        libc::SIGSYS,
    ];
    if !tty {
        signals.push(libc::SIGWINCH);
    }
    signals.extend(libc::SIGRTMIN()..=libc::SIGRTMAX());
    signals
}

/// Starts catching the signals `--sig-proxy` forwards, before the container
/// (and so its pid) exists: one that arrives meanwhile waits for
/// [`proxy_signals`] instead of killing the CLI, as Docker's CLI catches them
/// before it starts the container. (A monitor forked meanwhile puts the
/// default actions back, see berth-engine `monitor/launch.rs`.)
pub(super) fn catch_proxied_signals(tty: bool) {
    forward_signals(&proxied(tty));
}

/// Forwards the signals a user sends the CLI to the container's first
/// process (Docker's `--sig-proxy`), those caught so far first.
pub(super) fn proxy_signals(pid: i32, tty: bool) {
    PROXY_TARGET.store(pid, Ordering::SeqCst);
    let signals = proxied(tty);
    forward_signals(&signals);
    loop {
        let pending = PENDING.swap(0, Ordering::SeqCst);
        if pending == 0 {
            break;
        }
        for &signal in &signals {
            if pending & pending_bit(signal) != 0 {
                // SAFETY: kill has no memory effects in this process.
                unsafe { libc::kill(pid, signal) };
            }
        }
    }
}

/// `-t`: terminal size changes reach the container through its monitor,
/// which reads the new size from this terminal (Docker's resize).
pub(super) fn forward_window_changes(monitor_pid: i32) {
    WINDOW_TARGET.store(monitor_pid, Ordering::SeqCst);
    forward_signals(&[libc::SIGWINCH]);
}

/// Where [`pass_on`] sends SIGWINCH with a terminal (the monitor), and
/// every other signal it handles (the container's first process).
static WINDOW_TARGET: AtomicI32 = AtomicI32::new(0);
static PROXY_TARGET: AtomicI32 = AtomicI32::new(0);
/// Proxied signals caught before the container's pid was known, a bit each.
static PENDING: AtomicU64 = AtomicU64::new(0);

/// Signal `signal`'s bit in [`PENDING`] (1 to 64).
fn pending_bit(signal: libc::c_int) -> u64 {
    1u64.checked_shl((signal - 1) as u32).unwrap_or(0)
}

/// The handler of the forwarded signals: kill(2) is async-signal-safe, so
/// no thread has to wait for them.
extern "C" fn pass_on(signal: libc::c_int) {
    if signal == libc::SIGWINCH {
        let monitor = WINDOW_TARGET.load(Ordering::SeqCst);
        if monitor > 0 {
            // SAFETY: kill has no memory effects in this process.
            unsafe { libc::kill(monitor, signal) };
            return;
        }
    }
    let pid = PROXY_TARGET.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill has no memory effects in this process.
        unsafe { libc::kill(pid, signal) };
    } else {
        PENDING.fetch_or(pending_bit(signal), Ordering::SeqCst);
    }
}

/// Installs [`pass_on`] for `signals`; interrupted reads and writes restart.
fn forward_signals(signals: &[libc::c_int]) {
    // SAFETY: an all-zero sigaction is a valid value to fill in (empty mask,
    // no flags) before the fields are set below.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = pass_on as extern "C" fn(libc::c_int) as libc::sighandler_t;
    action.sa_flags = libc::SA_RESTART;
    for &signal in signals {
        // SAFETY: the handler only reads atomics and calls kill(2); the
        // action outlives the call, and the old action is not asked for.
        unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) };
    }
}
