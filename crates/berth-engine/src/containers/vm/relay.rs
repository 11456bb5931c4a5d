//! The shim's run of a VM container once its VM has booted: the container's
//! first process (process 0 of the agent protocol) with the shim's stdio
//! (or its terminal) and the signals sent to the shim, and, while it runs,
//! each exec and `top` that comes to the shim's socket (`exec.rs`), all
//! multiplexed on the one agent channel. Returns the first process's exit.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use berth_vm::protocol::{ExecRequest, ProcessId, MAIN_PROCESS};
use berth_vm::{Event, Exit, OutputStream, RunRequest, Vm, VmError};
use nix::sys::signalfd::SignalFd;
use nix::sys::socket::{
    accept4, bind, listen, socket, AddressFamily, Backlog, SockFlag, SockType, UnixAddr,
};

use super::exec::{receive, send, FromShim, ToShim};
use super::terminal::HostTerminal;

/// The first process's streams on the host.
pub(super) struct MainStreams<'a> {
    pub stdin: BorrowedFd<'a>,
    pub stdout: &'a mut dyn Write,
    pub stderr: &'a mut dyn Write,
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
    stdout: fs_err::File,
    stderr: fs_err::File,
}

/// What a watched descriptor is.
#[derive(Clone, Copy)]
enum Source {
    MainStdin,
    Signals,
    Listener,
    Connection(ProcessId),
    ExecStdin(ProcessId),
}

/// Runs `run` in `vm` (see the module doc); `started` is called once the
/// process runs.
pub(super) fn run_container(
    vm: &mut Vm,
    run: &RunRequest,
    main: MainStreams<'_>,
    signals: &mut SignalFd,
    mut dns: Option<&mut berth_vm::dns_relay::HostDns>,
    listener: &ExecListener,
    started: &mut dyn FnMut(),
) -> Result<Exit, VmError> {
    vm.start(run)?;
    let mut main_stdin_open = true;
    let mut execs: BTreeMap<ProcessId, ExecClient> = BTreeMap::new();
    // Who asked a question (a table, counters, a cache drop), in order: the
    // agent answers each message as it reads it, so answers come in the
    // order the questions were sent.
    let mut waiting: std::collections::VecDeque<OwnedFd> = std::collections::VecDeque::new();
    let mut next_process: ProcessId = MAIN_PROCESS + 1;
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let mut watched: Vec<(BorrowedFd<'_>, Source)> = Vec::new();
        if main_stdin_open {
            watched.push((main.stdin, Source::MainStdin));
        }
        watched.push((signals.as_fd(), Source::Signals));
        watched.push((listener.socket.as_fd(), Source::Listener));
        for (&id, exec) in &execs {
            if let Some(connection) = &exec.connection {
                watched.push((connection.as_fd(), Source::Connection(id)));
            }
            if let Some(stdin) = &exec.stdin {
                watched.push((stdin.as_fd(), Source::ExecStdin(id)));
            }
        }
        let sources: Vec<Source> = watched.iter().map(|(_, source)| *source).collect();
        let fds: Vec<BorrowedFd<'_>> = watched.iter().map(|(fd, _)| *fd).collect();
        drop(watched);
        let event = vm.next_event(&fds, dns.as_deref_mut())?;
        drop(fds);
        match event {
            Event::Output {
                process,
                stream,
                bytes,
            } => {
                // A reader that went away loses the output, as a namespace
                // container's would.
                let _ = match (process, stream) {
                    (MAIN_PROCESS, OutputStream::Stdout) => main.stdout.write_all(&bytes),
                    (MAIN_PROCESS, OutputStream::Stderr) => main.stderr.write_all(&bytes),
                    (id, stream) => match execs.get_mut(&id) {
                        Some(exec) if stream == OutputStream::Stdout => {
                            exec.stdout.write_all(&bytes)
                        }
                        Some(exec) => exec.stderr.write_all(&bytes),
                        None => Ok(()),
                    },
                };
            }
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
            } => return Ok(exit),
            Event::Exited { process, exit } => {
                if let Some(exec) = execs.remove(&process) {
                    if let Some(connection) = &exec.connection {
                        let message = FromShim::Exited {
                            code: exit.code,
                            error: exit.error,
                        };
                        let _ = send(connection, &message, &[]);
                    }
                }
            }
            Event::Processes(table) => answer(&mut waiting, &FromShim::Processes(table)),
            Event::Stats(stats) => answer(&mut waiting, &FromShim::Stats(stats)),
            Event::CachesDropped => answer(&mut waiting, &FromShim::CachesDropped),
            Event::Ready(index) => match sources[index] {
                Source::MainStdin => {
                    let read = read_some(main.stdin, &mut buffer);
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
                                    stdout: file(stdout, "exec stdout"),
                                    stderr: file(stderr, "exec stderr"),
                                },
                            );
                            let request = ExecRequest {
                                process: *process,
                                stdin: true,
                            };
                            vm.exec(id, request)?;
                        }
                        ToShim::ListProcesses => {
                            waiting.push_back(connection);
                            vm.list_processes()?;
                        }
                        ToShim::ReadStats => {
                            waiting.push_back(connection);
                            vm.read_stats()?;
                        }
                        ToShim::DropCaches => {
                            waiting.push_back(connection);
                            vm.drop_caches()?;
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
                            vm.signal(id, libc::SIGKILL)?;
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
                    let read = read_some(stdin.as_fd(), &mut buffer);
                    if read == 0 {
                        exec.stdin = None;
                    }
                    vm.send_input(id, &buffer[..read])?;
                }
            },
        }
    }
}

/// The agent's answer to the oldest question, to whoever asked it.
fn answer(waiting: &mut std::collections::VecDeque<OwnedFd>, message: &FromShim) {
    if let Some(connection) = waiting.pop_front() {
        let _ = send(&connection, message, &[]);
    }
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
