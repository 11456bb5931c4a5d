//! Starting a monitor process (a container's, or a warm pool member's) from
//! any caller, with no precondition on the caller's threads.
//!
//! A fork of a multi-threaded process may run only async-signal-safe code
//! until it execs: another thread may have held the allocator's lock, or a
//! SQLite mutex, at the moment of the fork. A monitor runs ordinary Rust (it
//! allocates, logs, opens the store), so:
//!
//! - a caller with one thread (the CLI) forks, as it always did: the child is
//!   the monitor at once, with the record and the layers the caller read. The
//!   cold path of `berth run` costs what it cost.
//! - any other caller (the API server, which answers each connection on a
//!   thread) runs berth itself, `berth __monitor ID`, through
//!   `std::process::Command`, whose child runs only `dup2` before `execve`.
//!   The descriptors a forked monitor inherits (status pipe, start record,
//!   the attached streams) arrive at fixed numbers; the record and what
//!   [`Known`] holds are read again from the store, where the caller's start
//!   left them. That process, single-threaded, forks once more and its child
//!   is the monitor, then exits: a long-lived caller collects no zombie per
//!   container (the server does not wait for monitors), and the monitor's
//!   parent is init, as a CLI-forked monitor's is once its CLI exits.
//!
//! Either way the monitor itself is the same code (`monitor::run`, which
//! `setsid`s, becomes a subreaper and points its stdio at /dev/null), holds
//! the same open file description of the start record (the lock passes with
//! the descriptor, see `lock.rs`), and reports over the same pipe.

use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use berth_store::Store;
use nix::unistd::{fork, ForkResult};

use super::lock::MonitorLock;
use super::protocol::{MonitorMessage, MonitorSender};
use super::{Attachment, Known};
use crate::containers::paths::ContainerPaths;
use crate::containers::record::ContainerRecord;
use crate::containers::ContainerError;
use crate::warm::member::{MemberDir, MemberInfo};
use crate::{Engine, EngineConfig, EngineError};

/// The hidden `berth` subcommand a spawned monitor runs
/// (`crates/berth/src/commands/monitor.rs`).
pub const MONITOR_COMMAND: &str = "__monitor";

/// Where a spawned monitor finds what a forked one inherits.
const STATUS_FD: RawFd = 3;
/// The start record (a container's), or the member's record and info as
/// JSON (a pool member's, which takes its own start record).
const LOCK_OR_PAYLOAD_FD: RawFd = 4;
/// Where the spawned process writes the pid of the monitor it forks.
const PID_FD: RawFd = 5;
const STREAM_FDS: [RawFd; 3] = [6, 7, 8];
/// Sources are duplicated to here or above first, so that no `dup2` onto a
/// fixed number overwrites another source.
const FIRST_FREE_FD: RawFd = 16;

/// A close-on-exec copy of `fd` at [`FIRST_FREE_FD`] or above: a source a
/// child's `dup2` onto a fixed number below cannot overwrite.
pub(crate) fn above_fixed_numbers(fd: BorrowedFd<'_>) -> std::io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC only makes a new descriptor of an open one.
    let raw = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, FIRST_FREE_FD) };
    if raw < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fcntl returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// A started monitor.
pub(crate) struct MonitorProcess {
    pub pid: i32,
    /// Forked by this process (so reaped by it); a spawned monitor is not.
    pub child: bool,
    /// The read end of the pipe it reports on.
    pub status: OwnedFd,
}

/// What a container's monitor starts with.
pub(crate) struct ContainerMonitor {
    pub record: ContainerRecord,
    pub restart_count: u32,
    pub attachment: Attachment,
    /// The start record the caller took; the monitor holds it from here.
    pub lock: MonitorLock,
}

/// True when the calling thread is this process's only one, so that a
/// fork's child may run any code. Reads at most two entries of
/// /proc/self/task: ≈ 2 µs here, against ≈ 5 µs for /proc/self/stat's
/// thread count and ≈ 10 µs for the `Threads:` line of /proc/self/status
/// (measured 2026-12-02). One thread cannot race with another's creation.
pub(crate) fn single_threaded() -> bool {
    match fs_err::read_dir("/proc/self/task") {
        Ok(threads) => threads.take(2).count() == 1,
        Err(_) => false,
    }
}

fn pipe() -> Result<(OwnedFd, OwnedFd), EngineError> {
    Ok(nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(ContainerError::Pipe)?)
}

/// Starts the monitor of `start.record`'s container. On failure the start
/// record is ended (nothing was done a repair would have to undo).
pub(crate) fn start_container_monitor(
    engine: &mut Engine,
    start: ContainerMonitor,
) -> Result<MonitorProcess, EngineError> {
    let (status_read, status_write) = match pipe() {
        Ok(pipe) => pipe,
        Err(error) => {
            start.lock.release();
            return Err(error);
        }
    };
    let config = engine.config().clone();
    if !single_threaded() {
        let ContainerMonitor {
            record,
            attachment,
            lock,
            ..
        } = start;
        let spawned = spawn(
            &config,
            Spawn::Container {
                id: &record.id,
                lock: lock.file().as_fd(),
            },
            &attachment,
            status_write,
        );
        return match spawned {
            // The monitor holds the record now (on the open file both
            // share); closing this copy keeps it.
            Ok(pid) => Ok(MonitorProcess {
                pid,
                child: false,
                status: status_read,
            }),
            Err(error) => {
                lock.release();
                Err(error)
            }
        };
    }
    // Read here so that the monitor reaches the launch without opening the
    // database (see `Known`).
    let known = Known {
        layers: crate::containers::start::container_layers(engine.store(), &start.record).ok(),
        restart_count: start.restart_count,
    };
    // No SQLite connection may cross the fork (see Store::suspend).
    if let Err(error) = engine.store_mut().suspend() {
        start.lock.release();
        return Err(error.into());
    }
    // SAFETY: this process has one thread (checked above), so the child
    // cannot inherit a lock another thread held. (The parent reopens the
    // store lazily, when it next needs it.)
    match unsafe { fork() } {
        Err(source) => {
            start.lock.release();
            Err(ContainerError::Fork {
                what: "the monitor",
                source,
            }
            .into())
        }
        Ok(ForkResult::Child) => {
            drop(status_read);
            default_signal_handlers();
            super::run(
                config,
                start.record,
                known,
                start.attachment,
                status_write,
                start.lock,
            )
        }
        Ok(ForkResult::Parent { child }) => {
            drop(status_write);
            drop(start.attachment);
            // The monitor holds the record now (the lock is on the open
            // file both share); closing this copy keeps it.
            drop(start.lock);
            Ok(MonitorProcess {
                pid: child.as_raw(),
                child: true,
                status: status_read,
            })
        }
    }
}

/// Puts the default action back for every signal a handler catches: the
/// attached CLI forwards signals to the container from handlers it
/// installs before the start (`--sig-proxy`), and a monitor forked from
/// it must not inherit them (it would swallow a SIGTERM, say, meant for
/// it). Ignored signals stay ignored, as across execve.
pub(crate) fn default_signal_handlers() {
    for signal in 1..=libc::SIGRTMAX() {
        if signal == libc::SIGKILL || signal == libc::SIGSTOP {
            continue;
        }
        // SAFETY: an all-zero sigaction is a valid value for the kernel to
        // fill in with the current action.
        let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: a null new action only reads the current one into `current`.
        if unsafe { libc::sigaction(signal, std::ptr::null(), &mut current) } != 0 {
            continue;
        }
        if current.sa_sigaction == libc::SIG_DFL || current.sa_sigaction == libc::SIG_IGN {
            continue;
        }
        // SAFETY: SIG_DFL installs no handler code; it only changes this
        // process's disposition of `signal`.
        unsafe { libc::signal(signal, libc::SIG_DFL) };
    }
}

/// Starts the monitor of a warm pool member (which has no stored row: its
/// record and info travel with it).
pub(crate) fn start_member_monitor(
    engine: &mut Engine,
    record: ContainerRecord,
    dir: MemberDir,
    info: MemberInfo,
) -> Result<MonitorProcess, EngineError> {
    let (status_read, status_write) = pipe()?;
    let config = engine.config().clone();
    if !single_threaded() {
        let id = record.id.clone();
        let payload = serde_json::to_vec(&MemberPayload { record, info })
            .map_err(|source| ContainerError::EncodeMember { id, source })?;
        let pid = spawn(
            &config,
            Spawn::Member { payload: &payload },
            &Attachment::default(),
            status_write,
        )?;
        return Ok(MonitorProcess {
            pid,
            child: false,
            status: status_read,
        });
    }
    // No SQLite connection may cross the fork (see Store::suspend).
    engine.store_mut().suspend()?;
    // SAFETY: this process has one thread (checked above), so the child
    // cannot inherit a lock another thread held.
    match unsafe { fork() }.map_err(|source| ContainerError::Fork {
        what: "a pool member's monitor",
        source,
    })? {
        ForkResult::Child => {
            drop(status_read);
            super::member::run_member(config, record, dir, info, status_write)
        }
        ForkResult::Parent { child } => Ok(MonitorProcess {
            pid: child.as_raw(),
            child: true,
            status: status_read,
        }),
    }
}

/// A member as `berth __monitor --member` reads it.
#[derive(serde::Serialize, serde::Deserialize)]
struct MemberPayload {
    record: ContainerRecord,
    info: MemberInfo,
}

/// What a spawned monitor is for.
enum Spawn<'a> {
    Container { id: &'a str, lock: BorrowedFd<'a> },
    Member { payload: &'a [u8] },
}

/// Runs `berth __monitor` with the descriptors at their numbers and returns
/// the pid of the monitor it forks.
fn spawn(
    config: &EngineConfig,
    what: Spawn<'_>,
    attachment: &Attachment,
    status: OwnedFd,
) -> Result<i32, EngineError> {
    let (pid_read, pid_write) = pipe()?;
    let high = |fd: BorrowedFd<'_>| -> Result<OwnedFd, EngineError> {
        Ok(above_fixed_numbers(fd).map_err(ContainerError::DuplicateDescriptor)?)
    };
    let (second, payload) = match &what {
        Spawn::Container { lock, .. } => (high(*lock)?, None),
        Spawn::Member { payload } => {
            let (read, write) = pipe()?;
            (high(read.as_fd())?, Some((write, *payload)))
        }
    };
    let mut sources = vec![
        (high(status.as_fd())?, STATUS_FD),
        (second, LOCK_OR_PAYLOAD_FD),
        (high(pid_write.as_fd())?, PID_FD),
    ];
    let streams = [&attachment.stdin, &attachment.stdout, &attachment.stderr];
    for (stream, target) in streams.iter().zip(STREAM_FDS) {
        if let Some(stream) = stream {
            sources.push((high(stream.as_fd())?, target));
        }
    }
    // Plain numbers in a fixed array: the child reads them between fork and
    // exec, where it must not allocate.
    let mut pairs = [(-1, -1); 6];
    for (pair, (source, target)) in pairs.iter_mut().zip(&sources) {
        *pair = (source.as_raw_fd(), *target);
    }
    let count = sources.len();

    let mut command = Command::new(berth_runtime::sealed_exe::SELF_EXE);
    // Its name in `ps` (the sealed binary names itself after argv[0]).
    command
        .arg0("berth")
        .arg("--root")
        .arg(&config.root)
        .arg("--run-root")
        .arg(&config.run_root);
    if tracing::enabled!(tracing::Level::DEBUG) {
        command.arg("--debug");
    }
    command.arg(MONITOR_COMMAND);
    match &what {
        Spawn::Container { id, .. } => {
            command.arg(id);
        }
        Spawn::Member { .. } => {
            command.arg("--member");
        }
    }
    for (stream, flag) in streams.iter().zip(["--stdin", "--stdout", "--stderr"]) {
        if stream.is_some() {
            command.arg(flag);
        }
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // systemd's socket activation is the server's, not the monitor's.
        .env_remove("LISTEN_FDS")
        .env_remove("LISTEN_PID");
    // SAFETY: the closure runs in the child between fork and exec and calls
    // only dup2 (async-signal-safe) on descriptors that stay open here until
    // spawn returns; every source is at FIRST_FREE_FD or above, so no dup2
    // overwrites one still to be copied. dup2 clears FD_CLOEXEC on the copy.
    unsafe {
        command.pre_exec(move || {
            for &(source, target) in &pairs[..count] {
                if libc::dup2(source, target) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let spawned = command.spawn();
    drop(sources);
    drop(pid_write);
    drop(status);
    let mut child = spawned.map_err(ContainerError::SpawnMonitor)?;
    if let Some((write, payload)) = payload {
        let mut write = std::fs::File::from(write);
        // A spawned process that died early reports nothing; its status
        // pipe tells the caller.
        let _ = write.write_all(payload);
    }
    let mut pid = [0u8; 4];
    let monitor_pid = match std::fs::File::from(pid_read).read_exact(&mut pid) {
        Ok(()) => i32::from_le_bytes(pid),
        // It failed before forking the monitor (and said why on the status
        // pipe), or was killed.
        Err(_) => child.id() as i32,
    };
    let _ = child.wait();
    Ok(monitor_pid)
}

/// Which monitor `berth __monitor` runs.
#[derive(Clone, Debug)]
pub enum SpawnedMonitor {
    /// The container with this id (its start record at the fixed number).
    Container(String),
    /// A warm pool member (its record and info as JSON on a pipe).
    Member,
}

/// The streams `berth __monitor` was given, by flag.
#[derive(Clone, Copy, Debug, Default)]
pub struct SpawnedStreams {
    pub stdin: bool,
    pub stdout: bool,
    pub stderr: bool,
}

/// `berth __monitor`: takes over the descriptors its starter placed, reads
/// the record, forks the monitor and exits. Returns the exit status (0 once
/// the monitor runs; it reports to the starter itself).
pub fn run_spawned(config: EngineConfig, what: SpawnedMonitor, streams: SpawnedStreams) -> i32 {
    let wanted = [streams.stdin, streams.stdout, streams.stderr];
    let expected = [STATUS_FD, LOCK_OR_PAYLOAD_FD, PID_FD].into_iter().chain(
        STREAM_FDS
            .into_iter()
            .zip(wanted)
            .filter(|(_, wanted)| *wanted)
            .map(|(fd, _)| fd),
    );
    let is_pipe = |fd: RawFd| {
        nix::sys::stat::fstat(fd).is_ok_and(|stat| {
            nix::sys::stat::SFlag::from_bits_truncate(stat.st_mode)
                .contains(nix::sys::stat::SFlag::S_IFIFO)
        })
    };
    let in_place = expected.clone().all(|fd| nix::sys::stat::fstat(fd).is_ok())
        && is_pipe(STATUS_FD)
        && is_pipe(PID_FD);
    if !in_place {
        eprintln!("berth {MONITOR_COMMAND} is run by berth only");
        return 125;
    }
    // They were placed for this process only; its children (the monitor's
    // `nft`, say) must not inherit them, as a forked monitor's do not.
    for fd in expected {
        // SAFETY: F_SETFD changes only a flag of a descriptor this process owns.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    // SAFETY: these descriptors were placed for this process by `spawn`
    // (checked open above); nothing else in it owns them.
    let (status, second, mut pid_pipe) = unsafe {
        (
            OwnedFd::from_raw_fd(STATUS_FD),
            OwnedFd::from_raw_fd(LOCK_OR_PAYLOAD_FD),
            std::fs::File::from(OwnedFd::from_raw_fd(PID_FD)),
        )
    };
    let mut streams = STREAM_FDS.into_iter().zip(wanted).map(|(fd, wanted)| {
        // SAFETY: as above, for the streams whose flags were given.
        wanted.then(|| unsafe { OwnedFd::from_raw_fd(fd) })
    });
    let attachment = Attachment {
        stdin: streams.next().flatten(),
        stdout: streams.next().flatten(),
        stderr: streams.next().flatten(),
    };
    let fail = |status: OwnedFd, error: &EngineError| {
        MonitorSender::new(status).send(&MonitorMessage::Failed {
            message: crate::ErrorChain(error).to_string(),
            status: 125,
        });
        125
    };
    match what {
        SpawnedMonitor::Container(id) => {
            let paths = ContainerPaths::new(&config.root, &config.run_root, &id);
            let lock = MonitorLock::inherited(&paths, std::fs::File::from(second));
            let (record, known) = match read_start(&config, &id) {
                Ok(start) => start,
                Err(error) => {
                    lock.release();
                    return fail(status, &error);
                }
            };
            match fork_monitor(&mut pid_pipe) {
                Ok(ForkResult::Child) => {
                    drop(pid_pipe);
                    super::run(config, record, known, attachment, status, lock)
                }
                Ok(ForkResult::Parent { .. }) => 0,
                Err(error) => {
                    lock.release();
                    fail(status, &error)
                }
            }
        }
        SpawnedMonitor::Member => {
            let mut payload = Vec::new();
            let read = std::fs::File::from(second).read_to_end(&mut payload);
            let decoded = read.map_err(ContainerError::ReadMember).and_then(|_| {
                serde_json::from_slice::<MemberPayload>(&payload)
                    .map_err(ContainerError::DecodeMember)
            });
            let MemberPayload { record, info } = match decoded {
                Ok(member) => member,
                Err(error) => return fail(status, &error.into()),
            };
            let dir = MemberDir::new(&config.run_root, &record.id);
            match fork_monitor(&mut pid_pipe) {
                Ok(ForkResult::Child) => {
                    drop(pid_pipe);
                    super::member::run_member(config, record, dir, info, status)
                }
                Ok(ForkResult::Parent { .. }) => 0,
                Err(error) => fail(status, &error),
            }
        }
    }
}

/// The record and what [`Known`] holds, as the starter's fork would have
/// had them (the store is closed again before the fork).
fn read_start(config: &EngineConfig, id: &str) -> Result<(ContainerRecord, Known), EngineError> {
    let store = Store::open(&config.root)?;
    let row = crate::containers::lookup::find_row(&store, id)?;
    let container = crate::containers::lookup::parse_row(&row)?;
    let known = Known {
        layers: crate::containers::start::container_layers(&store, &container.record).ok(),
        restart_count: container.state.restart_count,
    };
    Ok((container.record, known))
}

/// Forks the monitor; in the parent, tells the starter its pid (this
/// process then exits: its copies of the status pipe, the streams and the
/// start record close with it, the monitor's keep them).
fn fork_monitor(pid_pipe: &mut std::fs::File) -> Result<ForkResult, EngineError> {
    if !single_threaded() {
        return Err(ContainerError::StarterThreads.into());
    }
    // SAFETY: this process has one thread (checked above): the child may run
    // any code.
    let forked = unsafe { fork() }.map_err(|source| ContainerError::Fork {
        what: "the monitor",
        source,
    })?;
    if let ForkResult::Parent { child } = forked {
        let _ = pid_pipe.write_all(&child.as_raw().to_le_bytes());
    }
    Ok(forked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_thread_is_seen() {
        let (sender, receiver) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || receiver.recv());
        assert!(!single_threaded());
        drop(sender);
        let _ = thread.join();
    }
}
