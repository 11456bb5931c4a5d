//! The shim's run of a VM container once its VM has booted: the container's
//! first process (process 0 of the agent protocol) with the shim's stdio
//! (or its terminal) and the signals sent to the shim, and, while it runs,
//! each exec and `top` that comes to the shim's socket (`exec.rs`), all
//! multiplexed on the one agent channel. Returns the first process's exit.
//!
//! No process's reader holds up the loop: output is written without
//! blocking (`output.rs`) and credited back to the guest as it is written
//! out, stdin is read only within the guest's credit for it (the agent
//! protocol's flow control, `berth_vm::flow`).

use std::collections::BTreeMap;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use berth_vm::protocol::{ExecRequest, ProcessId, MAIN_PROCESS};
use berth_vm::vm::PollFlags;
use berth_vm::{Event, Exit, OutputStream, RunRequest, Vm, VmError};
use nix::sys::signalfd::SignalFd;
use nix::sys::socket::{
    accept4, bind, listen, socket, AddressFamily, Backlog, SockFlag, SockType, UnixAddr,
};

use super::exec::{receive, send, FromShim, ToShim};
use super::output::HostOutput;
use super::terminal::HostTerminal;

/// How long the execs' held output may still take to be written out once
/// the container's first process has ended (and its own output is out),
/// and how long none of their readers may take nothing: then the shim
/// ends, and what a reader that stopped did not take is lost.
const EXEC_OUTPUT_GRACE: Duration = Duration::from_secs(2);
const EXEC_OUTPUT_STALL: Duration = Duration::from_millis(250);

/// The first process's streams on the host.
pub(super) struct MainStreams<'a> {
    pub stdin: BorrowedFd<'a>,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
    /// With `-t`: its terminal (stdin and both outputs are its slave).
    pub terminal: Option<&'a HostTerminal>,
}

/// The shim's socket for execs and `top`, removed with the shim.
pub(super) struct ExecListener {
    socket: OwnedFd,
    path: PathBuf,
}

impl ExecListener {
    pub(super) fn bind(path: &Path) -> Result<ExecListener, String> {
        let failed = |error: &dyn std::fmt::Display| {
            format!(
                "failed to listen on {} for the container's execs: {error}",
                path.display()
            )
        };
        let socket = socket(
            AddressFamily::Unix,
            SockType::SeqPacket,
            SockFlag::SOCK_CLOEXEC,
            None,
        )
        .map_err(|error| failed(&error))?;
        // A killed shim's socket of an earlier run.
        let _ = fs_err::remove_file(path);
        let address = UnixAddr::new(path).map_err(|error| failed(&error))?;
        bind(socket.as_raw_fd(), &address).map_err(|error| failed(&error))?;
        listen(&socket, Backlog::new(16).map_err(|error| failed(&error))?)
            .map_err(|error| failed(&error))?;
        Ok(ExecListener {
            socket,
            path: path.to_path_buf(),
        })
    }
}

impl Drop for ExecListener {
    fn drop(&mut self) {
        let _ = fs_err::remove_file(&self.path);
    }
}

/// An exec whose process runs (or is starting) in the guest.
struct ExecClient {
    /// The relay's connection; `None` once it closed (the process was
    /// killed then).
    connection: Option<OwnedFd>,
    stdin: Option<fs_err::File>,
    /// Its stdout and stderr.
    outputs: [HostOutput; 2],
    /// The process ended; told to the relay once its output is written out.
    exit: Option<Exit>,
}

impl ExecClient {
    /// Tells the relay how the process ended, once its output is out: true
    /// when this exec is done.
    fn finish_if_written(&mut self) -> bool {
        let Some(exit) = &self.exit else {
            return false;
        };
        let Some(connection) = &self.connection else {
            // Nobody waits for it (the relay was killed).
            return true;
        };
        if self.outputs.iter().any(HostOutput::is_pending) {
            return false;
        }
        let message = FromShim::Exited {
            code: exit.code,
            error: exit.error.clone(),
        };
        let _ = send(connection, &message, &[]);
        true
    }
}

/// What a watched descriptor is.
#[derive(Clone, Copy)]
enum Source {
    MainStdin,
    Signals,
    Listener,
    Connection(ProcessId),
    ExecStdin(ProcessId),
    /// A process's output holding bytes, writable again.
    Output(ProcessId, OutputStream),
}

fn index(stream: OutputStream) -> usize {
    match stream {
        OutputStream::Stdout => 0,
        OutputStream::Stderr => 1,
    }
}

const STREAMS: [OutputStream; 2] = [OutputStream::Stdout, OutputStream::Stderr];

/// What the shim serves beside the container's processes while it runs.
pub(super) struct Services<'a> {
    /// The embedded DNS the guest's queries go to, when it has one.
    pub dns: Option<&'a mut berth_vm::dns_relay::HostDns>,
    /// Where execs, `top`, `stats` and network changes come.
    pub listener: &'a ExecListener,
    /// The VM's network cards, for `network connect` and `disconnect`.
    pub cards: &'a mut super::network::Cards,
}

/// Runs `run` in `vm` (see the module doc); `started` is called once the
/// process runs.
pub(super) fn run_container(
    vm: &mut Vm,
    run: &RunRequest,
    main: MainStreams<'_>,
    signals: &mut SignalFd,
    services: Services<'_>,
    started: &mut dyn FnMut(),
) -> Result<Exit, VmError> {
    let Services {
        mut dns,
        listener,
        cards,
    } = services;
    vm.start(run)?;
    let mut main_outputs = [
        HostOutput::new(main.stdout, "container stdout"),
        HostOutput::new(main.stderr, "container stderr"),
    ];
    let mut main_stdin_open = true;
    let mut execs: BTreeMap<ProcessId, ExecClient> = BTreeMap::new();
    // Who asked a question (a table, counters, a cache drop), in order: the
    // agent answers each message as it reads it, so answers come in the
    // order the questions were sent.
    let mut waiting: std::collections::VecDeque<Waiting> = std::collections::VecDeque::new();
    let mut next_process: ProcessId = MAIN_PROCESS + 1;
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let input = |process: ProcessId| vm.input_window(process) > 0;
        let mut watched: Vec<(BorrowedFd<'_>, PollFlags, Source)> = Vec::new();
        let readable = PollFlags::POLLIN;
        if main_stdin_open && input(MAIN_PROCESS) {
            watched.push((main.stdin, readable, Source::MainStdin));
        }
        watched.push((signals.as_fd(), readable, Source::Signals));
        watched.push((listener.socket.as_fd(), readable, Source::Listener));
        for (output, stream) in main_outputs.iter().zip(STREAMS) {
            if output.is_pending() {
                let source = Source::Output(MAIN_PROCESS, stream);
                watched.push((output.fd(), PollFlags::POLLOUT, source));
            }
        }
        for (&id, exec) in &execs {
            if let Some(connection) = &exec.connection {
                watched.push((connection.as_fd(), readable, Source::Connection(id)));
            }
            if let (Some(stdin), true) = (&exec.stdin, input(id)) {
                watched.push((stdin.as_fd(), readable, Source::ExecStdin(id)));
            }
            for (output, stream) in exec.outputs.iter().zip(STREAMS) {
                if output.is_pending() {
                    let source = Source::Output(id, stream);
                    watched.push((output.fd(), PollFlags::POLLOUT, source));
                }
            }
        }
        let sources: Vec<Source> = watched.iter().map(|(_, _, source)| *source).collect();
        let fds: Vec<(BorrowedFd<'_>, PollFlags)> = watched
            .iter()
            .map(|(fd, events, _)| (*fd, *events))
            .collect();
        drop(watched);
        let event = vm.next_event(&fds, dns.as_deref_mut())?;
        drop(fds);
        match event {
            Event::Output {
                process,
                stream,
                bytes,
            } => {
                let output = match process {
                    MAIN_PROCESS => Some(&mut main_outputs[index(stream)]),
                    id => execs
                        .get_mut(&id)
                        .map(|exec| &mut exec.outputs[index(stream)]),
                };
                // An exec that is gone loses the output, as a reader that
                // went away does (`HostOutput`).
                let passed = output.map_or(bytes.len(), |output| output.push(&bytes));
                vm.acknowledge(process, stream, passed)?;
            }
            Event::InputCredit { .. } => {}
            Event::Started {
                process: MAIN_PROCESS,
                ..
            } => started(),
            Event::Started { process, pid } => {
                if let Some(connection) = execs.get(&process).and_then(|e| e.connection.as_ref()) {
                    let _ = send(connection, &FromShim::Started { pid }, &[]);
                }
            }
            Event::Exited {
                process: MAIN_PROCESS,
                exit,
            } => {
                write_out(&mut main_outputs, &mut execs);
                return Ok(exit);
            }
            Event::Exited { process, exit } => {
                if let Some(exec) = execs.get_mut(&process) {
                    exec.stdin = None;
                    exec.exit = Some(exit);
                    if exec.finish_if_written() {
                        execs.remove(&process);
                    }
                }
            }
            Event::Processes(table) => answer(&mut waiting, &FromShim::Processes(table)),
            Event::Stats(stats) => answer(&mut waiting, &FromShim::Stats(stats)),
            Event::CachesDropped => answer(&mut waiting, &FromShim::CachesDropped),
            Event::NetworkChanged { error } => {
                if let Some(Waiting {
                    change: Some(NetworkChange::Connect(network_id)),
                    ..
                }) = waiting.front()
                {
                    if error.is_some() {
                        // The guest has not taken it: a spare again.
                        cards.release(network_id);
                    }
                }
                let limit = false;
                answer(&mut waiting, &FromShim::NetworkChanged { error, limit })
            }
            // Asked only before a member's claim.
            Event::RootStaged => {}
            Event::Ready(ready) => match sources[ready] {
                Source::Output(process, stream) => {
                    let output = match process {
                        MAIN_PROCESS => Some(&mut main_outputs[index(stream)]),
                        id => execs
                            .get_mut(&id)
                            .map(|exec| &mut exec.outputs[index(stream)]),
                    };
                    let passed = output.map_or(0, HostOutput::flush);
                    vm.acknowledge(process, stream, passed)?;
                    if execs
                        .get_mut(&process)
                        .is_some_and(ExecClient::finish_if_written)
                    {
                        execs.remove(&process);
                    }
                }
                Source::MainStdin => {
                    let limit = vm.input_window(MAIN_PROCESS).min(buffer.len());
                    let read = read_some(main.stdin, &mut buffer[..limit]);
                    if read == 0 {
                        main_stdin_open = false;
                    }
                    vm.send_input(MAIN_PROCESS, &buffer[..read])?;
                }
                Source::Signals => {
                    while let Ok(Some(info)) = signals.read_signal() {
                        let signal = info.ssi_signo as i32;
                        match main.terminal {
                            Some(terminal) if signal == libc::SIGWINCH => {
                                if let Some((rows, columns)) = terminal.size() {
                                    vm.resize(MAIN_PROCESS, rows, columns)?;
                                }
                            }
                            _ => vm.signal(MAIN_PROCESS, signal)?,
                        }
                    }
                }
                Source::Listener => {
                    let Some((connection, message, fds)) = accept(listener) else {
                        continue;
                    };
                    match message {
                        ToShim::Exec { process } => {
                            let Ok([stdin, stdout, stderr]) = <[OwnedFd; 3]>::try_from(fds) else {
                                let exited = FromShim::Exited {
                                    code: 126,
                                    error: Some("an exec without its stdio".to_owned()),
                                };
                                let _ = send(&connection, &exited, &[]);
                                continue;
                            };
                            let id = next_process;
                            next_process += 1;
                            execs.insert(
                                id,
                                ExecClient {
                                    connection: Some(connection),
                                    stdin: Some(file(stdin, "exec stdin")),
                                    outputs: [
                                        HostOutput::new(stdout, "exec stdout"),
                                        HostOutput::new(stderr, "exec stderr"),
                                    ],
                                    exit: None,
                                },
                            );
                            let request = ExecRequest {
                                process: *process,
                                stdin: true,
                            };
                            vm.exec(id, request)?;
                        }
                        ToShim::ListProcesses => {
                            waiting.push_back(Waiting::answer(connection));
                            vm.list_processes()?;
                        }
                        ToShim::ReadStats => {
                            waiting.push_back(Waiting::answer(connection));
                            vm.read_stats()?;
                        }
                        ToShim::DropCaches => {
                            waiting.push_back(Waiting::answer(connection));
                            vm.drop_caches()?;
                        }
                        ToShim::ConnectNetwork {
                            network_id,
                            veth,
                            guest,
                        } => match cards.take_spare(&network_id, &veth, guest) {
                            Ok(guest) => {
                                vm.connect_network(&veth, &guest)?;
                                waiting.push_back(Waiting {
                                    connection,
                                    change: Some(NetworkChange::Connect(network_id)),
                                });
                            }
                            Err((error, limit)) => {
                                let refused = FromShim::NetworkChanged {
                                    error: Some(error),
                                    limit,
                                };
                                let _ = send(&connection, &refused, &[]);
                            }
                        },
                        ToShim::DisconnectNetwork { network_id } => {
                            // The host's side first: from here on the card
                            // reaches nothing, whatever the guest answers.
                            match cards.release(&network_id) {
                                Some(guest) => {
                                    vm.disconnect_network(&guest)?;
                                    waiting.push_back(Waiting::answer(connection));
                                }
                                None => {
                                    let refused = FromShim::NetworkChanged {
                                        error: Some("the VM has no card on that network".into()),
                                        limit: false,
                                    };
                                    let _ = send(&connection, &refused, &[]);
                                }
                            }
                        }
                        ToShim::Resize { .. } | ToShim::Signal { .. } => {}
                    }
                }
                Source::Connection(id) => {
                    let Some(exec) = execs.get_mut(&id) else {
                        continue;
                    };
                    let Some(connection) = &exec.connection else {
                        continue;
                    };
                    match receive::<ToShim>(connection) {
                        Ok(Some((ToShim::Resize { rows, columns }, _))) => {
                            vm.resize(id, rows, columns)?
                        }
                        Ok(Some((ToShim::Signal { signal }, _))) => vm.signal(id, signal)?,
                        Ok(Some(_)) => {}
                        // The relay is gone: its process goes with it, as a
                        // killed namespace exec's process does.
                        Ok(None) | Err(_) => {
                            exec.connection = None;
                            if exec.exit.is_some() {
                                execs.remove(&id);
                            } else {
                                vm.signal(id, libc::SIGKILL)?;
                            }
                        }
                    }
                }
                Source::ExecStdin(id) => {
                    let Some(exec) = execs.get_mut(&id) else {
                        continue;
                    };
                    let Some(stdin) = &exec.stdin else {
                        continue;
                    };
                    let limit = vm.input_window(id).min(buffer.len());
                    let read = read_some(stdin.as_fd(), &mut buffer[..limit]);
                    if read == 0 {
                        exec.stdin = None;
                    }
                    vm.send_input(id, &buffer[..read])?;
                }
            },
        }
    }
}

/// The container's first process has ended: writes out what its outputs
/// hold, waiting for their readers as long as it takes (its output is the
/// container's, in its log), and what the execs' hold, for
/// [`EXEC_OUTPUT_GRACE`] more at most and while their readers take some
/// (within [`EXEC_OUTPUT_STALL`]), telling each relay its exit once its
/// output is out.
fn write_out(main: &mut [HostOutput; 2], execs: &mut BTreeMap<ProcessId, ExecClient>) {
    let mut main_done_at = None;
    loop {
        for output in main.iter_mut() {
            output.flush();
        }
        execs.retain(|_, exec| {
            for output in &mut exec.outputs {
                output.flush();
            }
            !exec.finish_if_written()
        });
        let main_pending = main.iter().any(HostOutput::is_pending);
        let execs_pending = execs
            .values()
            .any(|exec| exec.connection.is_some() && exec.exit.is_some());
        let timeout = if main_pending {
            None
        } else {
            let done_at = *main_done_at.get_or_insert_with(Instant::now);
            match EXEC_OUTPUT_GRACE.checked_sub(done_at.elapsed()) {
                Some(left) if execs_pending && !left.is_zero() => Some(left.min(EXEC_OUTPUT_STALL)),
                _ => return,
            }
        };
        let mut fds: Vec<nix::poll::PollFd<'_>> = main
            .iter()
            .chain(execs.values().flat_map(|exec| exec.outputs.iter()))
            .filter(|output| output.is_pending())
            .map(|output| nix::poll::PollFd::new(output.fd(), PollFlags::POLLOUT))
            .collect();
        let timeout = match timeout {
            None => nix::poll::PollTimeout::NONE,
            Some(left) => {
                nix::poll::PollTimeout::try_from(left).unwrap_or(nix::poll::PollTimeout::MAX)
            }
        };
        if let (Ok(0), false) = (nix::poll::poll(&mut fds, timeout), main_pending) {
            // No exec's reader took anything for a while: stopped ones.
            return;
        }
    }
}

/// The agent's answer to the oldest question, to whoever asked it.
fn answer(waiting: &mut std::collections::VecDeque<Waiting>, message: &FromShim) {
    if let Some(waiting) = waiting.pop_front() {
        let _ = send(&waiting.connection, message, &[]);
    }
}

/// A question sent on to the guest, whose answer goes to `connection`.
struct Waiting {
    connection: OwnedFd,
    /// A network change to undo on the host if the guest fails it.
    change: Option<NetworkChange>,
}

impl Waiting {
    fn answer(connection: OwnedFd) -> Waiting {
        Waiting {
            connection,
            change: None,
        }
    }
}

/// A network change the guest has been asked for.
enum NetworkChange {
    /// `network connect` of the network with this id.
    Connect(String),
}

/// One read; 0 at end of file or on an error (the stream is over).
fn read_some(fd: BorrowedFd<'_>, buffer: &mut [u8]) -> usize {
    loop {
        match nix::unistd::read(fd.as_raw_fd(), buffer) {
            Ok(read) => return read,
            Err(nix::Error::EINTR) => continue,
            Err(_) => return 0,
        }
    }
}

fn file(fd: OwnedFd, name: &str) -> fs_err::File {
    fs_err::File::from_parts(std::fs::File::from(fd), name)
}

/// A new connection and its first message; `None` if it sent none in time
/// (the relay writes it at once).
fn accept(listener: &ExecListener) -> Option<(OwnedFd, ToShim, Vec<OwnedFd>)> {
    let fd = accept4(listener.socket.as_raw_fd(), SockFlag::SOCK_CLOEXEC).ok()?;
    // SAFETY: accept4 returned a new descriptor that nothing else owns.
    let connection = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let timeout = nix::sys::time::TimeVal::new(2, 0);
    let _ = nix::sys::socket::setsockopt(
        &connection,
        nix::sys::socket::sockopt::ReceiveTimeout,
        &timeout,
    );
    let (message, fds) = receive::<ToShim>(&connection).ok()??;
    let none = nix::sys::time::TimeVal::new(0, 0);
    let _ = nix::sys::socket::setsockopt(
        &connection,
        nix::sys::socket::sockopt::ReceiveTimeout,
        &none,
    );
    Some((connection, message, fds))
}
