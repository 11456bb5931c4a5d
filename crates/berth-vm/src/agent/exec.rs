//! Running one process in the guest and streaming its output to the host.

use std::ffi::CString;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{kill, Signal};
use nix::sys::signalfd::SignalFd;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use std::collections::{BTreeMap, VecDeque};

use crate::flow::{ReceiveWindow, SendWindow};
use crate::protocol::{
    encode_message, encode_stream, ExecRequest, FrameDecoder, FrameKind, GuestMessage, HostMessage,
    ProcessId, RunRequest, DRAIN_ALLOWANCE, INPUT_WINDOW, MAIN_PROCESS, OUTPUT_WINDOW,
};

/// Docker's default `PATH` (the one runc and Docker put in a container with
/// none).
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Finished {
    pub code: i32,
    pub error: Option<String>,
}

impl Finished {
    fn failed(code: i32, error: String) -> Finished {
        Finished {
            code,
            error: Some(error),
        }
    }
}

/// How a run ended.
#[derive(Debug)]
pub(super) enum Outcome {
    /// The process ended (or never started); `Exited` is still to be sent.
    Finished(Finished),
    /// The host said `Shutdown` while it ran: it was killed.
    Shutdown,
}

/// One running process of the session: the `Run`'s or an `Exec`'s.
struct Process {
    pid: Pid,
    /// Where its stdin frames go (a pipe, or the terminal's master), both
    /// non-blocking: a process that does not read its stdin holds up no one.
    stdin: Option<fs_err::File>,
    /// Stdin from the host not yet written to the process, at most
    /// [`INPUT_WINDOW`] (the host keeps to its credit).
    pending_input: VecDeque<u8>,
    /// The host ended the input: close `stdin` once `pending_input` is out.
    input_ended: bool,
    /// Input that came after the process closed its stdin: dropped, and
    /// credited back with the next write.
    discarded_input: usize,
    /// The host's credit for stdin: given back as the process takes it.
    input_window: ReceiveWindow,
    /// What its output is read from: stdout and stderr pipes, or the
    /// terminal's master alone (as stdout).
    outputs: Pipes,
    /// What may be sent of each output before the host has written it out:
    /// a pipe is read only while its window is open.
    output_windows: [SendWindow; 2],
    /// The terminal's master, for `Resize`.
    terminal: Option<OwnedFd>,
    /// Its exit code once reaped.
    code: Option<i32>,
}

/// A process that has started.
struct Spawned {
    pid: Pid,
    stdin: Option<fs_err::File>,
    outputs: Pipes,
    terminal: Option<OwnedFd>,
}

/// Runs `request`, sending its output to the host as it comes and taking
/// its stdin and signals from the host, and returns when the process has
/// exited (reaping any orphan on the way: the agent is PID 1). `Started` is
/// sent once the process runs. While it runs, the host may start further
/// processes in the container (`Exec`), list them (`ListProcesses`) and
/// resize their terminals. An `Err` is a failure of the channel, not of the
/// process.
pub(super) fn run(
    request: &RunRequest,
    root: Option<&Path>,
    children: &mut SignalFd,
    port: &mut fs_err::File,
    decoder: &mut FrameDecoder,
    mut dns: Option<&mut crate::dns_relay::GuestDns>,
) -> io::Result<Outcome> {
    let spawned = match (&request.container, root) {
        (Some(spec), Some(root)) => spawn_container(spec, root, request.stdin),
        (Some(_), None) => Err(Finished::failed(
            125,
            "a container needs a root share".to_string(),
        )),
        (None, _) => spawn(request, root),
    };
    let main = match spawned {
        Ok(spawned) => spawned,
        Err(finished) => return Ok(Outcome::Finished(finished)),
    };
    let main_pid = main.pid;
    send_message(
        port,
        &GuestMessage::Started {
            process: MAIN_PROCESS,
            pid: main_pid.as_raw(),
        },
    )?;
    let mut processes = BTreeMap::new();
    processes.insert(MAIN_PROCESS, Process::running(main)?);
    let mut buffer = vec![0u8; 64 * 1024];
    let mut shutdown = false;
    loop {
        if let Some(outcome) = send_exits(&mut processes, port, &mut buffer, shutdown)? {
            return Ok(outcome);
        }
        let mut fds = vec![
            PollFd::new(children.as_fd(), PollFlags::POLLIN),
            PollFd::new(port.as_fd(), PollFlags::POLLIN),
        ];
        let dns_index = dns.as_ref().map(|dns| {
            fds.push(PollFd::new(dns.fd(), PollFlags::POLLIN));
            fds.len() - 1
        });
        let pipes_from = fds.len();
        let mut open = Vec::new();
        for (&id, process) in &processes {
            for (slot, output) in process.outputs.iter().enumerate() {
                if let Some((_, pipe)) = output {
                    if process.output_windows[slot].is_open() {
                        fds.push(PollFd::new(pipe.as_fd(), PollFlags::POLLIN));
                        open.push((id, slot));
                    }
                }
            }
        }
        let inputs_from = fds.len();
        let mut inputs = Vec::new();
        for (&id, process) in &processes {
            if let (Some(stdin), false) = (&process.stdin, process.pending_input.is_empty()) {
                fds.push(PollFd::new(stdin.as_fd(), PollFlags::POLLOUT));
                inputs.push(id);
            }
        }
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => {}
            Err(nix::Error::EINTR) => continue,
            Err(error) => return Err(error.into()),
        }
        let ready = |fd: &PollFd| !fd.revents().unwrap_or(PollFlags::empty()).is_empty();
        let children_ready = ready(&fds[0]);
        let port_ready = ready(&fds[1]);
        let dns_ready = dns_index.is_some_and(|index| ready(&fds[index]));
        let pipes_ready: Vec<(ProcessId, usize)> = open
            .iter()
            .zip(&fds[pipes_from..inputs_from])
            .filter(|(_, fd)| ready(fd))
            .map(|(&slot, _)| slot)
            .collect();
        let inputs_ready: Vec<ProcessId> = inputs
            .iter()
            .zip(&fds[inputs_from..])
            .filter(|(_, fd)| ready(fd))
            .map(|(&id, _)| id)
            .collect();
        drop(fds);
        for (id, slot) in pipes_ready {
            if let Some(process) = processes.get_mut(&id) {
                process.read_output(port, id, slot, &mut buffer)?;
            }
        }
        for id in inputs_ready {
            if let Some(process) = processes.get_mut(&id) {
                process.write_input(port, id)?;
            }
        }
        if port_ready {
            let read = port.read(&mut buffer)?;
            if read == 0 {
                // The host is gone: so is the container.
                let _ = kill(main_pid, Signal::SIGKILL);
                return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
            }
            decoder.push(&buffer[..read]);
            while let Some(frame) = decoder.next_frame().map_err(io::Error::other)? {
                match frame.kind {
                    FrameKind::Stdin => {
                        let (id, bytes) = frame.stream().map_err(io::Error::other)?;
                        if let Some(process) = processes.get_mut(&id) {
                            process.input(bytes);
                            process.write_input(port, id)?;
                        }
                    }
                    FrameKind::Message => {
                        let message = frame.message::<HostMessage>().map_err(io::Error::other)?;
                        let session = Session {
                            main: main_pid,
                            root,
                        };
                        if session.handle(message, &mut processes, port)? {
                            shutdown = true;
                        }
                    }
                    FrameKind::DnsAnswer => {
                        if let Some(dns) = dns.as_deref_mut() {
                            dns.answer(&frame.payload);
                        }
                    }
                    FrameKind::Stdout | FrameKind::Stderr | FrameKind::DnsQuery => {
                        return Err(io::Error::other("output frame from the host"))
                    }
                }
            }
        }
        if dns_ready {
            if let Some(dns) = dns.as_deref_mut() {
                let mut queries = Vec::new();
                dns.take_queries(&mut queries);
                port.write_all(&queries)?;
            }
        }
        if children_ready {
            while children.read_signal().ok().flatten().is_some() {}
            for (pid, code) in reap() {
                if let Some(process) = processes.values_mut().find(|p| p.pid == pid) {
                    process.code = Some(code);
                }
            }
        }
    }
}

/// Sends `Exited` for each exec that has ended (after its output), and when
/// the run's process has ended, for it (last: when it ends, the other
/// processes of its pid namespace were ended, and reaped, before it): the
/// session's outcome then.
fn send_exits(
    processes: &mut BTreeMap<ProcessId, Process>,
    port: &mut fs_err::File,
    buffer: &mut [u8],
    shutdown: bool,
) -> io::Result<Option<Outcome>> {
    let main_ended = processes[&MAIN_PROCESS].code.is_some();
    let ended: Vec<ProcessId> = processes
        .iter()
        .filter(|(&id, process)| id != MAIN_PROCESS && (main_ended || process.code.is_some()))
        .map(|(&id, _)| id)
        .collect();
    for id in ended {
        let mut process = processes.remove(&id).expect("listed above");
        process.drain(port, id, buffer)?;
        // Not reaped yet (only possible once the run's process ended): gone
        // with its pid namespace.
        let code = process.code.unwrap_or(137);
        let exited = GuestMessage::Exited {
            process: id,
            code,
            error: None,
        };
        send_message(port, &exited)?;
    }
    let main = processes
        .get_mut(&MAIN_PROCESS)
        .expect("the run's process stays until the end");
    let Some(code) = main.code else {
        return Ok(None);
    };
    main.drain(port, MAIN_PROCESS, buffer)?;
    // What the container wrote is on the host already, so the host may end
    // the VM at once (`Vm::end_now`): its shares run without a writeback
    // cache (every `write` reaches virtiofsd before it returns), and the
    // kernel writes a shared mapping of a FUSE file back when the mapping
    // goes, which for every process of the container's pid namespace is
    // before its init is reaped. No `sync` here: virtiofsd answers one with
    // `syncfs` of the host's whole file system, which under I/O on the host
    // took 14–440 ms of every exit (docs/VM.md).
    Ok(Some(if shutdown {
        Outcome::Shutdown
    } else {
        Outcome::Finished(Finished { code, error: None })
    }))
}

/// What a control message during a run needs to know.
struct Session<'a> {
    /// The run's process (the container's pid 1).
    main: Pid,
    root: Option<&'a Path>,
}

impl Session<'_> {
    /// Acts on one message from the host; true for `Shutdown`.
    fn handle(
        &self,
        message: HostMessage,
        processes: &mut BTreeMap<ProcessId, Process>,
        port: &mut fs_err::File,
    ) -> io::Result<bool> {
        match message {
            HostMessage::Signal { process, signal } => {
                if let (Some(process), Ok(signal)) =
                    (processes.get(&process), Signal::try_from(signal))
                {
                    let _ = kill(process.pid, signal);
                }
            }
            HostMessage::Resize {
                process,
                rows,
                columns,
            } => {
                if let Some(terminal) = processes.get(&process).and_then(|p| p.terminal.as_ref()) {
                    berth_runtime::console::set_window_size(
                        terminal,
                        &berth_runtime::console::window(rows, columns),
                    );
                }
            }
            HostMessage::Exec { process, request } => {
                if processes.contains_key(&process) {
                    return Err(io::Error::other(format!(
                        "process {process} is already running"
                    )));
                }
                let root = self.root.unwrap_or(Path::new("/"));
                match spawn_exec(self.main, &request, root) {
                    Ok(spawned) => {
                        let pid = spawned.pid.as_raw();
                        processes.insert(process, Process::running(spawned)?);
                        send_message(port, &GuestMessage::Started { process, pid })?;
                    }
                    Err(finished) => {
                        let exited = GuestMessage::Exited {
                            process,
                            code: finished.code,
                            error: finished.error,
                        };
                        send_message(port, &exited)?;
                    }
                }
            }
            HostMessage::OutputCredit {
                process,
                stdout,
                stderr,
            } => {
                if let Some(process) = processes.get_mut(&process) {
                    process.output_windows[0].grant(stdout);
                    process.output_windows[1].grant(stderr);
                }
            }
            HostMessage::ListProcesses => {
                let table = super::processes::table(self.main, self.root);
                send_message(port, &GuestMessage::Processes(table))?;
            }
            HostMessage::ReadStats => {
                let stats = super::processes::stats(self.main);
                send_message(port, &GuestMessage::Stats(stats))?;
            }
            HostMessage::DropCaches => {
                super::boot::drop_caches();
                send_message(port, &GuestMessage::CachesDropped)?;
            }
            message @ (HostMessage::ConnectNetwork { .. }
            | HostMessage::DisconnectNetwork { .. }) => {
                let answer = super::network::change(&message);
                send_message(port, &answer)?;
            }
            HostMessage::Shutdown => {
                let _ = kill(self.main, Signal::SIGKILL);
                return Ok(true);
            }
            HostMessage::Run(_) => return Err(io::Error::other("a second run during a run")),
            HostMessage::StageRoot { .. } => {
                return Err(io::Error::other("a root staged during a run"))
            }
        }
        Ok(false)
    }
}

impl Process {
    fn running(spawned: Spawned) -> io::Result<Process> {
        let outputs = spawned
            .outputs
            .iter()
            .flatten()
            .map(|(_, pipe)| pipe.as_fd());
        for fd in outputs.chain(spawned.stdin.as_ref().map(|stdin| stdin.as_fd())) {
            // The agent's own ends (a terminal's master is the agent's too).
            fcntl(fd.as_raw_fd(), FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
        }
        Ok(Process {
            pid: spawned.pid,
            stdin: spawned.stdin,
            pending_input: VecDeque::new(),
            input_ended: false,
            discarded_input: 0,
            input_window: ReceiveWindow::new(INPUT_WINDOW),
            outputs: spawned.outputs,
            output_windows: [SendWindow::new(OUTPUT_WINDOW); 2],
            terminal: spawned.terminal,
            code: None,
        })
    }

    /// Input from the host, queued for [`Process::write_input`]; empty: the
    /// end of it. A process that closed its stdin loses the rest.
    fn input(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            // A terminal stays open to the end (as Docker's does: the
            // master is the process's output too).
            if self.terminal.is_none() {
                self.input_ended = true;
            }
        } else if self.stdin.is_some() {
            self.pending_input.extend(bytes);
        } else {
            // Taken, as far as the host's credit goes.
            self.discarded_input += bytes.len();
        }
    }

    /// Writes what it can of the pending input without blocking, closes
    /// stdin at its end, and gives the host its credit back.
    fn write_input(&mut self, port: &mut fs_err::File, id: ProcessId) -> io::Result<()> {
        let mut written = std::mem::take(&mut self.discarded_input);
        while let Some(stdin) = &mut self.stdin {
            let (front, _) = self.pending_input.as_slices();
            if front.is_empty() {
                if self.input_ended {
                    self.stdin = None;
                }
                break;
            }
            match stdin.write(front) {
                Ok(count) => {
                    self.pending_input.drain(..count);
                    written += count;
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
                // The process closed its stdin: the rest is lost.
                Err(_) => {
                    written += self.pending_input.len();
                    self.pending_input.clear();
                    self.stdin = None;
                }
            }
        }
        match self.input_window.passed_on(written) {
            Some(bytes) => send_message(port, &GuestMessage::InputCredit { process: id, bytes }),
            None => Ok(()),
        }
    }

    /// One read of output `slot`; sent to the host as that process's.
    fn read_output(
        &mut self,
        port: &mut fs_err::File,
        id: ProcessId,
        slot: usize,
        buffer: &mut [u8],
    ) -> io::Result<()> {
        let output = &mut self.outputs[slot];
        let window = &mut self.output_windows[slot];
        let limit = window.available().min(buffer.len());
        if let (Some((kind, pipe)), true) = (output.as_mut(), limit > 0) {
            match pipe.read(&mut buffer[..limit]) {
                Ok(0) => *output = None,
                Ok(read) => {
                    window.spend(read);
                    send_stream(port, *kind, id, &buffer[..read])?
                }
                Err(error)
                    if matches!(
                        error.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) => {}
                // A terminal's master reads EIO once the last slave closed.
                Err(_) => *output = None,
            }
        }
        Ok(())
    }

    /// The process is gone: sends what it left in its outputs, without
    /// waiting for an orphan that still holds them open, nor for credit (its
    /// `Exited` follows, and a stopped reader must not hold up the
    /// container's end): beyond its window by [`DRAIN_ALLOWANCE`] at most,
    /// what a pipe can hold (an orphan writing on is not followed for ever).
    fn drain(
        &mut self,
        port: &mut fs_err::File,
        id: ProcessId,
        buffer: &mut [u8],
    ) -> io::Result<()> {
        for slot in 0..self.outputs.len() {
            let mut left = self.output_windows[slot].available() + DRAIN_ALLOWANCE as usize;
            while self.outputs[slot].is_some() && left > 0 {
                let (kind, pipe) = self.outputs[slot].as_mut().expect("checked");
                let limit = left.min(buffer.len());
                match pipe.read(&mut buffer[..limit]) {
                    Ok(0) => self.outputs[slot] = None,
                    Ok(read) => {
                        left -= read;
                        send_stream(port, *kind, id, &buffer[..read])?
                    }
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => self.outputs[slot] = None,
                }
            }
        }
        Ok(())
    }
}

fn send_message(port: &mut fs_err::File, message: &GuestMessage) -> io::Result<()> {
    port.write_all(&encode_message(message))
}

fn send_stream(
    port: &mut fs_err::File,
    kind: FrameKind,
    process: ProcessId,
    bytes: &[u8],
) -> io::Result<()> {
    let mut frame = Vec::with_capacity(bytes.len() + 9);
    encode_stream(kind, process, bytes, &mut frame);
    port.write_all(&frame)
}

/// The process's output pipes, as the run loop reads them.
type Pipes = [Option<(FrameKind, Box<dyn Pipe>)>; 2];

/// A process's standard streams before it starts: the child's ends, and
/// the agent's (pipes, or the console socket the process sends its
/// terminal's master over).
struct Streams {
    child: berth_runtime::Stdio,
    stdin: Option<fs_err::File>,
    outputs: Pipes,
    console: Option<OwnedFd>,
}

impl Streams {
    fn new(stdin: bool, tty: bool) -> Result<Streams, Finished> {
        let failed = |error: nix::Error| Finished::failed(125, format!("make the stdio: {error}"));
        if tty {
            let (agent_end, process_end) =
                berth_runtime::console::console_socket_pair().map_err(failed)?;
            return Ok(Streams {
                child: berth_runtime::Stdio {
                    stdin: null_fd()?,
                    stdout: null_fd()?,
                    stderr: null_fd()?,
                    console: Some(process_end),
                },
                stdin: None,
                outputs: [None, None],
                console: Some(agent_end),
            });
        }
        let (child_stdin, stdin) = if stdin {
            let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(failed)?;
            let write = fs_err::File::from_parts(std::fs::File::from(write), "stdin");
            (read, Some(write))
        } else {
            (null_fd()?, None)
        };
        let (out_read, out_write) = nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(failed)?;
        let (err_read, err_write) = nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(failed)?;
        Ok(Streams {
            child: berth_runtime::Stdio {
                stdin: child_stdin,
                stdout: out_write,
                stderr: err_write,
                console: None,
            },
            stdin,
            outputs: [
                Some((FrameKind::Stdout, pipe(out_read))),
                Some((FrameKind::Stderr, pipe(err_read))),
            ],
            console: None,
        })
    }

    /// Hands the child's ends over (to a process that is about to start).
    fn take_child(&mut self) -> Result<berth_runtime::Stdio, Finished> {
        let closed = berth_runtime::Stdio {
            stdin: null_fd()?,
            stdout: null_fd()?,
            stderr: null_fd()?,
            console: None,
        };
        Ok(std::mem::replace(&mut self.child, closed))
    }

    /// The process runs: with a terminal, its master (which it sent before
    /// its `execve`) is both its input and its output.
    fn started(self, pid: Pid) -> Result<Spawned, Finished> {
        let Some(console) = self.console else {
            return Ok(Spawned {
                pid,
                stdin: self.stdin,
                outputs: self.outputs,
                terminal: None,
            });
        };
        let master = berth_runtime::console::receive_fd(console.as_raw_fd()).map_err(|error| {
            let _ = kill(pid, Signal::SIGKILL);
            Finished::failed(125, format!("receive the terminal: {error}"))
        })?;
        let copy = |fd: &OwnedFd| {
            fd.try_clone()
                .map_err(|error| Finished::failed(125, format!("copy the terminal: {error}")))
        };
        let input = fs_err::File::from_parts(std::fs::File::from(copy(&master)?), "terminal");
        let output = pipe(copy(&master)?);
        Ok(Spawned {
            pid,
            stdin: Some(input),
            outputs: [Some((FrameKind::Stdout, output)), None],
            terminal: Some(master),
        })
    }
}

fn pipe(fd: OwnedFd) -> Box<dyn Pipe> {
    Box::new(std::fs::File::from(fd))
}

fn null_fd() -> Result<OwnedFd, Finished> {
    fs_err::File::open("/dev/null")
        .map(|file| OwnedFd::from(file.into_parts().0))
        .map_err(|error| Finished::failed(125, error.to_string()))
}

/// Starts a container's process (see `RunRequest::container`): cloned into
/// new pid and mount namespaces, where berth-runtime's guest half enters the
/// root and execs; its failure comes back over a close-on-exec pipe, and the
/// pipe closing empty means the program runs.
fn spawn_container(
    spec: &berth_runtime::ContainerSpec,
    root: &Path,
    stdin: bool,
) -> Result<Spawned, Finished> {
    let failed = |error: nix::Error| Finished::failed(125, format!("start the process: {error}"));
    let mut streams = Streams::new(stdin, spec.process.tty)?;
    let child = streams.take_child()?;
    let (report_read, report_write) = nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(failed)?;
    let forked = berth_runtime::clone::clone3(libc::CLONE_NEWPID | libc::CLONE_NEWNS, None)
        .map_err(failed)?;
    let pid = match forked {
        berth_runtime::clone::Forked::Child => {
            for (fd, target) in [(&child.stdin, 0), (&child.stdout, 1), (&child.stderr, 2)] {
                // SAFETY: dup2 onto 0..2 in the child, which owns `fd`.
                unsafe { libc::dup2(fd.as_raw_fd(), target) };
            }
            let failure =
                berth_runtime::init::enter_guest_container(spec, root, child.console.as_ref());
            let bytes = serde_json::to_vec(&failure).unwrap_or_default();
            let mut report = std::fs::File::from(report_write);
            let _ = report.write_all(&bytes);
            // SAFETY: _exit ends the cloned child without the agent's destructors.
            unsafe { libc::_exit(125) }
        }
        berth_runtime::clone::Forked::Parent { child, .. } => child,
    };
    drop((child, report_write));
    let mut report = Vec::new();
    let _ = std::fs::File::from(report_read).read_to_end(&mut report);
    if !report.is_empty() {
        let _ = waitpid(pid, None);
        return Err(
            match serde_json::from_slice::<berth_runtime::init::InitFailure>(&report) {
                Ok(failure) => Finished::failed(failure.exit_status(), failure.to_string()),
                Err(_) => Finished::failed(125, "the process failed to start".to_string()),
            },
        );
    }
    streams.started(pid)
}

/// How many times [`rehearse`] starts a process.
const REHEARSALS: usize = 3;

/// Before a warm member's claim: starts the agent's own binary (`/init`,
/// from the initramfs, as a plain process: it prints its version, or that
/// it runs as PID 1 only, to /dev/null) a few times and waits for each.
/// Under TCG, the first fork, exec, page faults and exit a guest runs cost
/// many times what the later ones do (QEMU translates the kernel's code on
/// its first run, and keeps the translation); measured, the claim's own
/// process then starts and ends ≈ 60 ms sooner (docs/VM.md). Nothing of a
/// container is in the guest yet, and nothing of these processes stays.
pub(super) fn rehearse() {
    for _ in 0..REHEARSALS {
        let _ = Command::new("/init")
            .arg("--version")
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Starts an `Exec`'s process in the container whose first process is
/// `main` (berth-runtime's exec, the guest's variant: its pid and mount
/// namespaces, `chroot` into `root`); Docker's exec answers any start
/// failure with 126.
fn spawn_exec(main: Pid, request: &ExecRequest, root: &Path) -> Result<Spawned, Finished> {
    let mut streams = Streams::new(request.stdin, request.process.tty)?;
    let child = streams.take_child()?;
    match berth_runtime::exec::exec_in_guest(main.as_raw(), &request.process, child, root) {
        Ok(pid) => streams.started(pid),
        Err(error) => Err(Finished::failed(126, super::error_chain(&error))),
    }
}

trait Pipe: Read + AsFd {}
impl<T: Read + AsFd> Pipe for T {}

/// Reaps every child that has exited: each one's pid and exit code.
fn reap() -> Vec<(Pid, i32)> {
    let mut reaped = Vec::new();
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, status)) => reaped.push((pid, status)),
            Ok(WaitStatus::Signaled(pid, signal, _)) => reaped.push((pid, 128 + signal as i32)),
            Ok(WaitStatus::StillAlive) | Err(_) => return reaped,
            Ok(_) => {}
        }
    }
}

/// Starts the process, `chroot`ed into `root` when there is one, or says why
/// it cannot be: 127 when the program is not there, 126 when it cannot be
/// run, with Docker's (runc's) words.
fn spawn(request: &RunRequest, root: Option<&Path>) -> Result<Spawned, Finished> {
    let Some(program) = request.args.first() else {
        return Err(Finished::failed(126, "no command specified".to_string()));
    };
    let path_variable = request
        .env
        .iter()
        .find_map(|entry| entry.strip_prefix("PATH="))
        .unwrap_or(DEFAULT_PATH);
    let base = root.unwrap_or(Path::new("/"));
    let executable = resolve(base, program, path_variable)?;
    let cwd = if request.cwd.is_empty() {
        "/"
    } else {
        request.cwd.as_str()
    };
    // Docker creates a missing working directory rather than failing; inside
    // the root, where an image's symlinks cannot lead it out.
    if let Err(error) = super::root::in_root(base, Path::new(cwd)) {
        return Err(Finished::failed(
            126,
            format!(
                "chdir to cwd ({cwd:?}) failed: {}",
                super::error_chain(&error)
            ),
        ));
    }
    let mut command = Command::new(&executable);
    command
        .arg0(program)
        .args(&request.args[1..])
        .env_clear()
        .stdin(if request.stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let cwd_c = CString::new(cwd).map_err(|_| Finished::failed(126, "cwd holds NUL".into()))?;
    let root_c = match root {
        Some(root) => Some(
            CString::new(root.as_os_str().as_bytes())
                .map_err(|_| Finished::failed(126, "root holds NUL".into()))?,
        ),
        None => None,
    };
    // SAFETY: the closure runs in the forked child before exec and calls only
    // chroot and chdir (async-signal-safe) on strings made before the fork.
    unsafe {
        command.pre_exec(move || {
            if let Some(root) = &root_c {
                if libc::chroot(root.as_ptr()) == -1 {
                    return Err(io::Error::last_os_error());
                }
            }
            if libc::chdir(cwd_c.as_ptr()) == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    if !request.env.iter().any(|entry| entry.starts_with("PATH=")) {
        command.env("PATH", DEFAULT_PATH);
    }
    for entry in &request.env {
        match entry.split_once('=') {
            Some((key, value)) if !key.is_empty() => command.env(key, value),
            _ => continue,
        };
    }
    let mut child = command.spawn().map_err(|error| {
        let code = if error.kind() == io::ErrorKind::NotFound {
            127
        } else {
            126
        };
        let reason = match error.kind() {
            io::ErrorKind::PermissionDenied => "permission denied".to_string(),
            io::ErrorKind::NotFound => "no such file or directory".to_string(),
            _ => error.to_string(),
        };
        Finished::failed(code, format!("exec: {program:?}: {reason}"))
    })?;
    let pid = Pid::from_raw(child.id() as i32);
    let outputs = [
        child
            .stdout
            .take()
            .map(|pipe| (FrameKind::Stdout, Box::new(pipe) as Box<dyn Pipe>)),
        child
            .stderr
            .take()
            .map(|pipe| (FrameKind::Stderr, Box::new(pipe) as Box<dyn Pipe>)),
    ];
    let stdin = child
        .stdin
        .take()
        .map(|pipe| fs_err::File::from_parts(std::fs::File::from(OwnedFd::from(pipe)), "stdin"));
    Ok(Spawned {
        pid,
        stdin,
        outputs,
        terminal: None,
    })
}

/// `PATH` lookup as Go's `exec.LookPath`, whose errors runc (and so Docker)
/// prints, inside `root` (symlinks resolved there): the path the program has
/// once `chroot`ed.
fn resolve(root: &Path, program: &str, path_variable: &str) -> Result<PathBuf, Finished> {
    let stat = |path: &Path| {
        berth_runtime::in_root::open_in_root(root, path, libc::O_PATH, 0)
            .ok()
            .and_then(|fd| nix::sys::stat::fstat(fd.as_raw_fd()).ok())
    };
    if program.contains('/') {
        return match stat(Path::new(program)) {
            Some(_) => Ok(PathBuf::from(program)),
            None => Err(Finished::failed(
                127,
                format!("exec: {program:?}: stat {program}: no such file or directory"),
            )),
        };
    }
    path_variable
        .split(':')
        .map(|dir| Path::new(if dir.is_empty() { "." } else { dir }).join(program))
        .find(|candidate| {
            stat(candidate)
                .map(|meta| {
                    meta.st_mode & libc::S_IFMT == libc::S_IFREG && meta.st_mode & 0o111 != 0
                })
                .unwrap_or(false)
        })
        .ok_or_else(|| {
            Finished::failed(
                127,
                format!("exec: {program:?}: executable file not found in $PATH"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_programs_up_as_docker_does() {
        let host = Path::new("/");
        assert_eq!(
            resolve(host, "sh", "/nonexistent:/bin").unwrap(),
            PathBuf::from("/bin/sh")
        );
        assert_eq!(
            resolve(host, "no-such-program", "/bin").unwrap_err(),
            Finished::failed(
                127,
                r#"exec: "no-such-program": executable file not found in $PATH"#.into()
            )
        );
        assert_eq!(
            resolve(host, "/no/such", "/bin").unwrap_err(),
            Finished::failed(
                127,
                r#"exec: "/no/such": stat /no/such: no such file or directory"#.into()
            )
        );
        // Not executable: skipped in PATH, as LookPath does.
        assert!(resolve(host, "passwd", "/etc").is_err());
    }

    #[test]
    fn looks_programs_up_inside_the_root() {
        let root = tempfile::tempdir().unwrap();
        fs_err::create_dir_all(root.path().join("bin")).unwrap();
        fs_err::create_dir_all(root.path().join("opt")).unwrap();
        let tool = root.path().join("opt/tool");
        fs_err::write(&tool, "#!/bin/sh\n").unwrap();
        fs_err::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        // An absolute link inside the image means that path in the image.
        fs_err::os::unix::fs::symlink("/opt/tool", root.path().join("bin/tool")).unwrap();
        assert_eq!(
            resolve(root.path(), "tool", "/bin").unwrap(),
            PathBuf::from("/bin/tool")
        );
        // The host's /bin/sh is not the root's.
        assert!(resolve(root.path(), "sh", "/bin").is_err());
        assert!(resolve(root.path(), "/bin/sh", "/bin").is_err());
    }
}
