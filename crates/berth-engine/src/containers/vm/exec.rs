//! `exec` and `top` of a VM container. Its processes are the guest's, and
//! the only way to them is the agent channel, which the shim holds; so the
//! shim listens on a socket in its VM directory ([`socket_path`], a
//! directory only root can enter) and multiplexes what comes there onto
//! the channel (`relay.rs`).
//!
//! An exec's pid, which berth waits for as it waits for a namespace exec's,
//! is a small relay on the host, `berth __vm-exec` ([`run`]), started by
//! [`start`] with the exec's stdio: it hands those descriptors to the shim
//! (which then reads and writes them itself), reports the start, passes on
//! catchable signals and terminal resizes, and exits with the guest
//! process's exit code. Killing the relay kills the guest process (as
//! killing a namespace exec's pid does): the shim sees the connection close.

use std::io::{IoSlice, IoSliceMut, Read, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use berth_runtime::{LaunchError, ProcessSpec, ProcessTable, Stdio};
use berth_vm::protocol::GuestStats;
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::socket::{
    recvmsg, sendmsg, socket, AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags,
    SockFlag, SockType, UnixAddr,
};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

/// The name of the relay's hidden subcommand.
pub const EXEC_COMMAND: &str = "__vm-exec";
// Its descriptors: `super::StartDescriptors` (the request is a
// [`RelayRequest`], the report one [`FromShim`] about the start).
use super::{CONSOLE_FD, REQUEST_FD, STATUS_FD};

/// The largest message on the shim's socket (a process spec with its
/// compiled seccomp filter is tens of KiB).
pub(super) const MAX_MESSAGE: usize = 1 << 20;

/// The shim's socket in a VM container's directory.
pub(crate) fn socket_path(vm_dir: &Path) -> PathBuf {
    vm_dir.join("exec.sock")
}

/// A message to the shim: one seqpacket each.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum ToShim {
    /// The connection's first message: start `process`; with it, the
    /// descriptors of its stdin, stdout and stderr.
    Exec {
        process: Box<ProcessSpec>,
    },
    /// Then, any number of these.
    Resize {
        rows: u16,
        columns: u16,
    },
    Signal {
        signal: i32,
    },
    /// A connection's only message: `top`'s table.
    ListProcesses,
    /// A connection's only message: the guest's counters.
    ReadStats,
    /// A connection's only message: files changed behind the guest's back.
    DropCaches,
    /// A connection's only message: `network connect` of the running
    /// container, whose new veth `veth` the engine put in the shim's
    /// namespace; a spare card takes the network (`guest`, whose MAC the
    /// shim sets to the card's).
    ConnectNetwork {
        network_id: String,
        veth: String,
        guest: berth_vm::protocol::GuestNetwork,
    },
    /// A connection's only message: `network disconnect`.
    DisconnectNetwork {
        network_id: String,
    },
}

/// A message from the shim.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(super) enum FromShim {
    Started {
        pid: i32,
    },
    /// The process ended, or could not start (`error` says why).
    Exited {
        code: i32,
        error: Option<String>,
    },
    Processes(ProcessTable),
    Stats(GuestStats),
    CachesDropped,
    /// The answer to `ConnectNetwork` and `DisconnectNetwork`: done, or why
    /// not (nothing changed then).
    NetworkChanged {
        error: Option<String>,
        /// The error is that every card is in use.
        #[serde(default)]
        limit: bool,
    },
}

/// Why a network change of a running VM container failed.
pub(crate) enum NetworkChangeError {
    /// Every network card of its VM is in use.
    Limit(String),
    Failed(String),
}

/// What [`start`] asks of the relay.
#[derive(Debug, Serialize, Deserialize)]
struct RelayRequest {
    socket: PathBuf,
    process: ProcessSpec,
}

/// Starts `process` in the VM container whose shim listens on `socket`:
/// returns the relay's pid (the caller's child, which exits with the
/// process's exit code) once the process runs, or why it could not start.
pub(crate) fn start(
    socket: &Path,
    process: &ProcessSpec,
    stdio: Stdio,
) -> Result<Pid, LaunchError> {
    let pipe = || nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(LaunchError::Pipe);
    let (request_read, request_write) = pipe()?;
    let (status_read, status_write) = pipe()?;
    let high = |fd: &OwnedFd| {
        crate::containers::monitor::launch::above_fixed_numbers(fd.as_fd())
            .map_err(LaunchError::Report)
    };
    let sources = [
        Some(high(&request_read)?),
        Some(high(&status_write)?),
        stdio.console.as_ref().map(high).transpose()?,
    ];
    drop((request_read, status_write));
    let raw: Vec<(RawFd, RawFd)> = sources
        .iter()
        .zip([REQUEST_FD, STATUS_FD, CONSOLE_FD])
        .filter_map(|(source, target)| source.as_ref().map(|fd| (fd.as_raw_fd(), target)))
        .collect();
    let mut command = Command::new(berth_runtime::sealed_exe::SELF_EXE);
    command
        .arg0("berth")
        .arg(EXEC_COMMAND)
        .stdin(std::process::Stdio::from(stdio.stdin))
        .stdout(std::process::Stdio::from(stdio.stdout))
        .stderr(std::process::Stdio::from(stdio.stderr));
    // SAFETY: the closure runs in the child between fork and exec and makes
    // only dup2(2) calls (async-signal-safe) on descriptors that stay open
    // here until spawn returns; the sources are above the fixed numbers.
    unsafe {
        command.pre_exec(move || {
            for &(source, target) in &raw {
                if libc::dup2(source, target) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let child = command.spawn().map_err(LaunchError::Report)?;
    drop(command);
    drop(sources);
    let pid = Pid::from_raw(child.id() as i32);
    // The caller reaps the relay (`wait_exit_code`): `Child` never waits.
    drop(child);
    let request = RelayRequest {
        socket: socket.to_path_buf(),
        process: process.clone(),
    };
    let bytes = serde_json::to_vec(&request).unwrap_or_default();
    let _ = std::fs::File::from(request_write).write_all(&bytes);
    let mut report = Vec::new();
    let _ = std::fs::File::from(status_read).read_to_end(&mut report);
    match serde_json::from_slice::<FromShim>(&report) {
        Ok(FromShim::Started { .. }) => Ok(pid),
        Ok(FromShim::Exited { error, code }) => {
            berth_runtime::wait_exit_code(pid);
            Err(LaunchError::Prepare(error.unwrap_or_else(|| {
                format!("the process exited with {code} before it started")
            })))
        }
        Ok(
            FromShim::Processes(_)
            | FromShim::Stats(_)
            | FromShim::CachesDropped
            | FromShim::NetworkChanged { .. },
        )
        | Err(_) => {
            let code = berth_runtime::wait_exit_code(pid);
            Err(LaunchError::Prepare(format!(
                "the VM exec relay exited ({code}) before the process started"
            )))
        }
    }
}

/// `top` of the VM container whose shim listens on `socket`.
pub(crate) fn list_processes(socket: &Path) -> Result<ProcessTable, String> {
    match ask(socket, &ToShim::ListProcesses, None)? {
        FromShim::Processes(table) => Ok(table),
        _ => Err("the container's VM did not list its processes".to_owned()),
    }
}

/// The guest's counters of the VM container whose shim listens on
/// `socket`; an error when it does not answer within `timeout` (a paused
/// VM cannot).
pub(crate) fn read_stats(socket: &Path, timeout: Duration) -> Result<GuestStats, String> {
    match ask(socket, &ToShim::ReadStats, Some(timeout))? {
        FromShim::Stats(stats) => Ok(stats),
        _ => Err("the container's VM did not send its counters".to_owned()),
    }
}

/// After `cp` into the running VM container whose shim listens on
/// `socket`: its guest forgets what it cached of the root, so it sees the
/// copied files (its root is cached `always`).
pub(crate) fn drop_caches(socket: &Path, timeout: Duration) -> Result<(), String> {
    match ask(socket, &ToShim::DropCaches, Some(timeout))? {
        FromShim::CachesDropped => Ok(()),
        _ => Err("the container's VM did not drop its caches".to_owned()),
    }
}

/// How long a network change may take the guest (under TCG, on a loaded
/// machine, a few hundred milliseconds).
const NETWORK_CHANGE_TIMEOUT: Duration = Duration::from_secs(30);

/// `network connect` of the running VM container whose shim listens on
/// `socket`: its veth `veth` for `network_id` is in the shim's namespace;
/// a spare card of the VM takes the network with `guest`'s addresses.
pub(crate) fn connect_network(
    socket: &Path,
    network_id: &str,
    veth: &str,
    guest: berth_vm::protocol::GuestNetwork,
) -> Result<(), NetworkChangeError> {
    let question = ToShim::ConnectNetwork {
        network_id: network_id.to_owned(),
        veth: veth.to_owned(),
        guest,
    };
    match ask(socket, &question, Some(NETWORK_CHANGE_TIMEOUT))
        .map_err(NetworkChangeError::Failed)?
    {
        FromShim::NetworkChanged { error: None, .. } => Ok(()),
        FromShim::NetworkChanged {
            error: Some(error),
            limit: true,
        } => Err(NetworkChangeError::Limit(error)),
        FromShim::NetworkChanged {
            error: Some(error), ..
        } => Err(NetworkChangeError::Failed(error)),
        _ => Err(NetworkChangeError::Failed(
            "the container's VM did not answer the connect".to_owned(),
        )),
    }
}

/// `network disconnect` of the running VM container whose shim listens on
/// `socket`: the card of `network_id` goes back among the spares.
pub(crate) fn disconnect_network(socket: &Path, network_id: &str) -> Result<(), String> {
    let question = ToShim::DisconnectNetwork {
        network_id: network_id.to_owned(),
    };
    match ask(socket, &question, Some(NETWORK_CHANGE_TIMEOUT))? {
        FromShim::NetworkChanged { error: None, .. } => Ok(()),
        FromShim::NetworkChanged {
            error: Some(error), ..
        } => Err(error),
        _ => Err("the container's VM did not answer the disconnect".to_owned()),
    }
}

/// One question on a connection of its own, and its answer.
fn ask(socket: &Path, question: &ToShim, timeout: Option<Duration>) -> Result<FromShim, String> {
    let connection = connect(socket)?;
    if let Some(timeout) = timeout {
        let timeout = nix::sys::time::TimeVal::new(
            timeout.as_secs() as i64,
            i64::from(timeout.subsec_micros()),
        );
        nix::sys::socket::setsockopt(
            &connection,
            nix::sys::socket::sockopt::ReceiveTimeout,
            &timeout,
        )
        .map_err(|error| error.to_string())?;
    }
    send(&connection, question, &[])?;
    match receive(&connection)? {
        Some((answer, _)) => Ok(answer),
        None => Err("the container's VM closed the connection".to_owned()),
    }
}

/// `berth __vm-exec`: the relay's whole life; its exit code is the guest
/// process's (137 if the VM ended under it).
pub fn run() -> i32 {
    let mut signals = SigSet::all();
    for kept in [
        Signal::SIGCHLD,
        Signal::SIGSEGV,
        Signal::SIGBUS,
        Signal::SIGFPE,
    ] {
        signals.remove(kept);
    }
    let _ = signals.thread_block();
    let super::StartDescriptors {
        request,
        status,
        console,
    } = super::StartDescriptors::take();
    let mut request_file = std::fs::File::from(request);
    let mut status = Some(status);
    let mut report = |message: &FromShim| {
        if let Some(mut file) = status.take() {
            let _ = file.write_all(&serde_json::to_vec(message).unwrap_or_default());
        }
    };
    let failed = |report: &mut dyn FnMut(&FromShim), error: String| {
        report(&FromShim::Exited {
            code: 126,
            error: Some(error),
        });
        126
    };
    let mut bytes = Vec::new();
    let request = match request_file
        .read_to_end(&mut bytes)
        .map_err(|error| error.to_string())
        .and_then(|_| {
            serde_json::from_slice::<RelayRequest>(&bytes).map_err(|error| error.to_string())
        }) {
        Ok(request) => request,
        Err(error) => return failed(&mut report, format!("malformed exec request: {error}")),
    };
    drop(request_file);
    let terminal = match console {
        Some(console) => {
            match super::terminal::HostTerminal::open(&console, request.process.console_size) {
                Ok(terminal) => Some(terminal),
                Err(error) => return failed(&mut report, error),
            }
        }
        None => None,
    };
    let signalfd =
        match SignalFd::with_flags(&signals, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK) {
            Ok(signalfd) => signalfd,
            Err(error) => {
                return failed(&mut report, format!("failed to watch for signals: {error}"))
            }
        };
    let connection = match connect(&request.socket) {
        Ok(connection) => connection,
        Err(error) => return failed(&mut report, error),
    };
    let stdio: Vec<RawFd> = match &terminal {
        Some(terminal) => vec![terminal.slave.as_raw_fd(); 3],
        None => vec![0, 1, 2],
    };
    let exec = ToShim::Exec {
        process: Box::new(request.process),
    };
    if let Err(error) = send(&connection, &exec, &stdio) {
        return failed(&mut report, error);
    }
    let mut started = false;
    loop {
        let mut fds = [
            nix::poll::PollFd::new(connection.as_fd(), nix::poll::PollFlags::POLLIN),
            nix::poll::PollFd::new(signalfd.as_fd(), nix::poll::PollFlags::POLLIN),
        ];
        match nix::poll::poll(&mut fds, nix::poll::PollTimeout::NONE) {
            Ok(_) | Err(nix::Error::EINTR) => {}
            Err(_) => return 137,
        }
        let ready = |fd: &nix::poll::PollFd| {
            !fd.revents()
                .unwrap_or(nix::poll::PollFlags::empty())
                .is_empty()
        };
        let (connection_ready, signal_ready) = (ready(&fds[0]), ready(&fds[1]));
        if signal_ready {
            while let Ok(Some(info)) = signalfd.read_signal() {
                let message = match (&terminal, info.ssi_signo as i32) {
                    (Some(terminal), libc::SIGWINCH) => match terminal.size() {
                        Some((rows, columns)) => ToShim::Resize { rows, columns },
                        None => continue,
                    },
                    (_, signal) => ToShim::Signal { signal },
                };
                let _ = send(&connection, &message, &[]);
            }
        }
        if connection_ready {
            match receive(&connection) {
                Ok(Some((FromShim::Started { pid }, _))) => {
                    started = true;
                    report(&FromShim::Started { pid });
                }
                Ok(Some((FromShim::Exited { code, error }, _))) => {
                    if !started {
                        report(&FromShim::Exited { code, error });
                    }
                    return code;
                }
                Ok(Some((
                    FromShim::Processes(_)
                    | FromShim::Stats(_)
                    | FromShim::CachesDropped
                    | FromShim::NetworkChanged { .. },
                    _,
                ))) => {}
                // The shim is gone (the container ended): so is the process.
                Ok(None) | Err(_) => {
                    if !started {
                        return failed(&mut report, "the container's VM ended".to_owned());
                    }
                    return 137;
                }
            }
        }
    }
}

/// A connection to the shim's socket.
fn connect(path: &Path) -> Result<OwnedFd, String> {
    let fd = socket(
        AddressFamily::Unix,
        SockType::SeqPacket,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(|error| format!("failed to reach the container's VM: {error}"))?;
    let address = UnixAddr::new(path)
        .map_err(|error| format!("failed to reach the container's VM: {error}"))?;
    nix::sys::socket::connect(fd.as_raw_fd(), &address).map_err(|error| {
        format!(
            "failed to reach the container's VM at {}: {error}",
            path.display()
        )
    })?;
    Ok(fd)
}

/// Sends one message, with `fds` attached.
pub(super) fn send<T: Serialize>(
    socket: &OwnedFd,
    message: &T,
    fds: &[RawFd],
) -> Result<(), String> {
    let bytes = serde_json::to_vec(message).map_err(|error| error.to_string())?;
    let rights = [ControlMessage::ScmRights(fds)];
    let control: &[ControlMessage] = if fds.is_empty() { &[] } else { &rights };
    sendmsg::<()>(
        socket.as_raw_fd(),
        &[IoSlice::new(&bytes)],
        control,
        MsgFlags::MSG_NOSIGNAL,
        None,
    )
    .map(|_| ())
    .map_err(|error| format!("failed to talk to the container's VM: {error}"))
}

/// Receives one message and the descriptors it carried; `None` when the
/// peer has closed.
pub(super) fn receive<T: for<'de> Deserialize<'de>>(
    socket: &OwnedFd,
) -> Result<Option<(T, Vec<OwnedFd>)>, String> {
    // The message's length first (MSG_TRUNC: a seqpacket's whole length,
    // Linux ≥ 3.4), so that a `Resize` does not cost a megabyte.
    let length = loop {
        match nix::sys::socket::recv(
            socket.as_raw_fd(),
            &mut [],
            MsgFlags::MSG_PEEK | MsgFlags::MSG_TRUNC,
        ) {
            Err(nix::Error::EINTR) => continue,
            other => break other,
        }
    }
    .map_err(|error| format!("failed to hear from the container's VM: {error}"))?;
    let mut buffer = vec![0u8; length.clamp(1, MAX_MESSAGE + 1)];
    let mut space = nix::cmsg_space!([RawFd; 3]);
    let (length, fds) = {
        let mut iov = [IoSliceMut::new(&mut buffer)];
        let message = loop {
            match recvmsg::<()>(
                socket.as_raw_fd(),
                &mut iov,
                Some(&mut space),
                MsgFlags::MSG_CMSG_CLOEXEC,
            ) {
                Err(nix::Error::EINTR) => continue,
                other => break other,
            }
        }
        .map_err(|error| format!("failed to hear from the container's VM: {error}"))?;
        let mut fds = Vec::new();
        if let Ok(controls) = message.cmsgs() {
            for control in controls {
                if let ControlMessageOwned::ScmRights(received) = control {
                    // SAFETY: the kernel installed these descriptors for us.
                    fds.extend(
                        received
                            .iter()
                            .map(|&fd| unsafe { OwnedFd::from_raw_fd(fd) }),
                    );
                }
            }
        }
        if message.flags.contains(MsgFlags::MSG_TRUNC) {
            return Err("a message larger than the VM socket's limit".to_owned());
        }
        (message.bytes, fds)
    };
    if length == 0 {
        return Ok(None);
    }
    serde_json::from_slice(&buffer[..length])
        .map(|message| Some((message, fds)))
        .map_err(|error| format!("malformed message from the container's VM: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_descriptors_cross_the_socket() {
        let (left, right) = nix::sys::socket::socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .unwrap();
        let file = tempfile::tempfile().unwrap();
        send(
            &left,
            &ToShim::Resize {
                rows: 24,
                columns: 80,
            },
            &[file.as_raw_fd()],
        )
        .unwrap();
        let (message, fds) = receive::<ToShim>(&right).unwrap().unwrap();
        assert!(matches!(
            message,
            ToShim::Resize {
                rows: 24,
                columns: 80
            }
        ));
        assert_eq!(fds.len(), 1);
        // A message of its own length (a process spec with its seccomp
        // filter is tens of KiB), however small or large.
        let mut bytes = serde_json::to_vec(&ToShim::Signal { signal: 1 }).unwrap();
        bytes.resize(150_000, b' ');
        nix::sys::socket::send(left.as_raw_fd(), &bytes, MsgFlags::empty()).unwrap();
        let (message, _) = receive::<ToShim>(&right).unwrap().unwrap();
        assert!(matches!(message, ToShim::Signal { signal: 1 }));
        drop(left);
        assert!(receive::<ToShim>(&right).unwrap().is_none());
    }
}
