//! The host side of one microVM: boot it, run processes in it through the
//! agent, pause it, shut it down. Dropping a [`Vm`] shuts it down too and
//! leaves nothing behind: no QEMU, no virtiofsd, no socket (the channels are
//! socket pairs, the vhost-user sockets lose their names at once), no file
//! (its directory is removed).

use std::collections::BTreeMap;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use fs_err as fs;

use crate::accel::{self, Accelerator};
pub use nix::poll::PollFlags;
use nix::poll::{poll, PollFd, PollTimeout};
use nix::sys::signalfd::SignalFd;

use crate::flow::{ReceiveWindow, SendWindow};
use crate::protocol::{
    encode_message, encode_stream, ExecRequest, FrameDecoder, FrameKind, GuestMessage,
    GuestNetwork, GuestRoot, GuestStats, HostMessage, ProcessId, ProcessTable, ProtocolError,
    Ready, RunRequest, DRAIN_ALLOWANCE, INPUT_WINDOW, MAIN_PROCESS, OUTPUT_WINDOW,
    PROTOCOL_VERSION,
};
use crate::qemu::{self, FilesystemDevice, QemuArgs, QemuError, QemuProcess};
use crate::qmp::{Qmp, QmpError};
use crate::virtiofs::{self, Share, VirtiofsDaemon, VirtiofsError};

/// How one VM is made.
#[derive(Debug, Clone)]
pub struct VmConfig {
    pub qemu: PathBuf,
    pub accelerator: Accelerator,
    /// The uncompressed kernel (`GuestKernel::vmlinux`).
    pub kernel: PathBuf,
    pub initramfs: PathBuf,
    pub memory_mib: u32,
    pub cpus: u32,
    /// Where the VM's private directory (console log, QEMU's log) is made.
    pub run_dir: PathBuf,
    /// From starting QEMU to the agent's `Ready`.
    pub boot_timeout: Duration,
    /// Words added to the kernel command line (`loglevel=7` to see the
    /// boot in the console log).
    pub kernel_cmdline_extra: Vec<String>,
    /// Host directories the guest can mount (the container's root, its
    /// volumes and binds), each served by a virtiofsd of its own. Fixed at
    /// boot: microvm has no hotplug.
    pub shares: Vec<Share>,
    /// virtiofsd; `None`: [`virtiofs::find_virtiofsd`] when there are shares.
    pub virtiofsd: Option<PathBuf>,
    /// Network cards, each on its tap (QEMU inherits the descriptors; the
    /// caller keeps them open until the boot). Fixed at boot: microvm has
    /// no hotplug.
    pub networks: Vec<qemu::NetworkDevice>,
    /// The balloon device with free page reporting: what the guest frees
    /// goes back to the host (see [`crate::qemu`]). On unless
    /// `BERTH_VM_BALLOON=off` (to measure what it saves).
    pub free_page_reporting: bool,
}

/// `off` leaves the balloon device out of the VMs berth boots.
pub const BALLOON_ENV: &str = "BERTH_VM_BALLOON";

/// Whether VMs get free page reporting: `BERTH_VM_BALLOON` unset, empty or
/// `on`; `off` turns it off.
pub fn free_page_reporting_from_env() -> Result<bool, VmError> {
    free_page_reporting(std::env::var_os(BALLOON_ENV))
}

fn free_page_reporting(value: Option<std::ffi::OsString>) -> Result<bool, VmError> {
    match value {
        None => Ok(true),
        Some(value) => match value.to_str() {
            Some("" | "on") => Ok(true),
            Some("off") => Ok(false),
            _ => Err(VmError::BadSetting {
                name: BALLOON_ENV,
                value: value.to_string_lossy().into_owned(),
                expected: "on or off",
            }),
        },
    }
}

impl VmConfig {
    /// Defaults: QEMU from `PATH`, the detected accelerator, 256 MiB, one
    /// CPU, the system's temporary directory, a minute to boot (TCG on a
    /// loaded two-core host needs seconds).
    pub fn new(kernel: PathBuf, initramfs: PathBuf) -> Result<VmConfig, VmError> {
        Ok(VmConfig {
            qemu: qemu::find_qemu()?,
            accelerator: accel::detect().accelerator,
            kernel,
            initramfs,
            memory_mib: 256,
            cpus: 1,
            run_dir: std::env::temp_dir(),
            boot_timeout: Duration::from_secs(60),
            kernel_cmdline_extra: Vec::new(),
            shares: Vec::new(),
            virtiofsd: None,
            networks: Vec::new(),
            free_page_reporting: free_page_reporting_from_env()?,
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum VmError {
    #[error(transparent)]
    Qemu(#[from] QemuError),
    #[error(transparent)]
    Qmp(#[from] QmpError),
    #[error(transparent)]
    Virtiofs(#[from] VirtiofsError),
    #[error("{name}={value:?} is not valid (expected {expected})")]
    BadSetting {
        name: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error("the VM has no share tagged {tag:?}")]
    UnknownShare { tag: String },
    #[error("failed to set up the container's files in the guest: {message}")]
    GuestSetup { message: String },
    #[error("{what} {path:?} does not exist")]
    MissingInput { what: &'static str, path: PathBuf },
    #[error("failed to create the VM directory {path:?}")]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to create a socket pair for QEMU")]
    SocketPair {
        #[source]
        source: std::io::Error,
    },
    #[error("the guest agent did not report ready within {timeout:?}{}", diagnostics(.console, .qemu_log))]
    BootTimeout {
        timeout: Duration,
        console: String,
        qemu_log: String,
    },
    #[error("QEMU exited ({status}) before the guest agent was ready{}", diagnostics(.console, .qemu_log))]
    BootFailed {
        status: String,
        console: String,
        qemu_log: String,
    },
    #[error("the guest agent speaks protocol {found}, berth {PROTOCOL_VERSION}")]
    ProtocolVersion { found: u32 },
    #[error("the guest agent went away (QEMU: {status}){}", diagnostics(.console, .qemu_log))]
    AgentGone {
        status: String,
        console: String,
        qemu_log: String,
    },
    #[error("a virtiofsd serving the VM's shares {tags:?} exited")]
    ShareEnded { tags: Vec<String> },
    #[error("unexpected message from the guest agent: {message}")]
    Unexpected { message: String },
    #[error("failed to talk to the guest agent")]
    Channel {
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
}

fn diagnostics(console: &str, qemu_log: &str) -> String {
    let mut text = String::new();
    for (name, body) in [("console", console), ("qemu", qemu_log)] {
        if !body.trim().is_empty() {
            text.push_str(&format!(
                "\n--- {name} (last lines) ---\n{}",
                body.trim_end()
            ));
        }
    }
    text
}

/// Which output stream a piece of output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputStream {
    Stdout,
    Stderr,
}

impl OutputStream {
    fn index(self) -> usize {
        match self {
            OutputStream::Stdout => 0,
            OutputStream::Stderr => 1,
        }
    }
}

/// One running process's windows (see [`crate::flow`]).
#[derive(Debug)]
struct ProcessFlow {
    /// Its stdout's and stderr's: what the guest sent and the caller has
    /// not yet said it wrote out ([`Vm::acknowledge`]).
    outputs: [ReceiveWindow; 2],
    /// Its stdin's: what may be sent to it now.
    input: SendWindow,
}

impl ProcessFlow {
    fn new() -> ProcessFlow {
        ProcessFlow {
            outputs: [ReceiveWindow::new(OUTPUT_WINDOW); 2],
            input: SendWindow::new(INPUT_WINDOW),
        }
    }
}

/// How a process in the guest ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exit {
    /// The exit code, 128 + signal, or 126/127 when it could not start.
    pub code: i32,
    /// Why it could not start, in Docker's words.
    pub error: Option<String>,
}

/// A finished process with its whole output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit: Exit,
}

/// When the boot's steps were done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BootTimes {
    /// From starting QEMU to the agent's `Ready`, on the host's clock.
    pub ready: Duration,
    /// The guest kernel's time when `/init` started (its own boot).
    pub guest_init: Duration,
    /// The guest's time at `Ready` (after mounts, modules, the port).
    pub guest_ready: Duration,
}

/// How a VM ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// QEMU exited by itself: the guest powered off when asked (or had
    /// already ended).
    Guest,
    /// QEMU quit on QMP's `quit`.
    Quit,
    /// QEMU was killed.
    Killed,
}

/// Adds `fd` to a poll set, waiting for input; its index there.
fn watch<'a>(fds: &mut Vec<PollFd<'a>>, fd: BorrowedFd<'a>) -> usize {
    fds.push(PollFd::new(fd, PollFlags::POLLIN));
    fds.len() - 1
}

/// One of the caller's descriptors for [`Vm::next_event`] to wait on, with
/// what for: `POLLIN`, or `POLLOUT` (an output with bytes waiting).
pub type Watched<'a> = (BorrowedFd<'a>, PollFlags);

/// What [`Vm::next_event`] saw.
#[derive(Debug)]
pub enum Event {
    /// A piece of a process's output; the caller says when it has written
    /// it out ([`Vm::acknowledge`]), and the guest sends at most
    /// [`OUTPUT_WINDOW`] of a stream ahead of that.
    Output {
        process: ProcessId,
        stream: OutputStream,
        bytes: Vec<u8>,
    },
    /// A process runs (its pid in the guest).
    Started { process: ProcessId, pid: i32 },
    /// A process ended, or could not start (`exit.error` says why).
    Exited { process: ProcessId, exit: Exit },
    /// The answer to [`Vm::list_processes`].
    Processes(ProcessTable),
    /// The answer to [`Vm::read_stats`].
    Stats(GuestStats),
    /// The answer to [`Vm::drop_caches`].
    CachesDropped,
    /// The answer to [`Vm::stage_root`]'s request.
    RootStaged,
    /// The answer to [`Vm::connect_network`] or [`Vm::disconnect_network`]:
    /// done, or why not.
    NetworkChanged { error: Option<String> },
    /// The process took some of its stdin: [`Vm::input_window`] is larger.
    InputCredit { process: ProcessId },
    /// One of the caller's descriptors is ready: its index among them.
    Ready(usize),
}

/// The host side of a relayed run (`Vm::run_relayed`).
pub struct Relay<'a> {
    /// Where the process's stdin comes from, read until end of file.
    pub stdin: Option<BorrowedFd<'a>>,
    /// Each signal read here is sent to the process.
    pub signals: Option<&'a mut SignalFd>,
    /// Called with the process's pid in the guest once it runs.
    pub started: &'a mut dyn FnMut(i32),
    /// Where the guest's DNS queries go (the container's embedded DNS).
    pub dns: Option<&'a mut crate::dns_relay::HostDns>,
    pub output: &'a mut dyn FnMut(OutputStream, &[u8]),
}

/// A booted microVM with its agent ready.
pub struct Vm {
    qemu: Option<QemuProcess>,
    /// After `qemu`: they end when QEMU's side of their socket closes.
    virtiofs: Vec<VirtiofsDaemon>,
    qmp: Qmp,
    agent: UnixStream,
    decoder: FrameDecoder,
    /// The running processes' windows.
    flows: BTreeMap<ProcessId, ProcessFlow>,
    /// What the agent's bytes are read into.
    read_buffer: Vec<u8>,
    dir: VmDir,
    ready: Ready,
    boot_times: BootTimes,
}

impl Vm {
    /// Starts QEMU and waits for the agent's `Ready`.
    pub fn boot(config: &VmConfig) -> Result<Vm, VmError> {
        for (what, path) in [
            ("guest kernel", &config.kernel),
            ("initramfs", &config.initramfs),
        ] {
            if !path.is_file() {
                return Err(VmError::MissingInput {
                    what,
                    path: path.clone(),
                });
            }
        }
        virtiofs::validate(&config.shares)?;
        let virtiofsd = match (&config.virtiofsd, config.shares.is_empty()) {
            (_, true) => None,
            (Some(path), false) => Some(path.clone()),
            (None, false) => Some(virtiofs::find_virtiofsd()?),
        };
        let dir = VmDir::create(&config.run_dir)?;
        let mut daemons = Vec::new();
        if let Some(virtiofsd) = &virtiofsd {
            for (index, share) in config.shares.iter().enumerate() {
                daemons.push(VirtiofsDaemon::start(virtiofsd, share, &dir.path, index)?);
            }
        }
        let filesystems: Vec<FilesystemDevice> = daemons
            .iter()
            .filter_map(|daemon| {
                daemon.qemu_fd().map(|fd| FilesystemDevice {
                    tag: daemon.tag.clone(),
                    fd,
                })
            })
            .collect();
        let pair = || UnixStream::pair().map_err(|source| VmError::SocketPair { source });
        let (agent, guest_agent) = pair()?;
        let (qmp, guest_qmp) = pair()?;
        let arguments = qemu::arguments(&QemuArgs {
            accelerator: config.accelerator,
            memory_mib: config.memory_mib,
            cpus: config.cpus,
            kernel: &config.kernel,
            initramfs: &config.initramfs,
            console_log: &dir.console_log(),
            agent_fd: guest_agent.as_raw_fd(),
            qmp_fd: guest_qmp.as_raw_fd(),
            kernel_cmdline_extra: &config.kernel_cmdline_extra,
            filesystems: &filesystems,
            networks: &config.networks,
            free_page_reporting: config.free_page_reporting,
        });
        let mut inherit = vec![guest_agent.as_raw_fd(), guest_qmp.as_raw_fd()];
        inherit.extend(config.networks.iter().map(|network| network.tap_fd));
        inherit.extend(filesystems.iter().map(|filesystem| filesystem.fd));
        let started = Instant::now();
        let mut process = qemu::spawn(&config.qemu, &arguments, &inherit, &dir.qemu_log())?;
        // Only QEMU holds these now, so its exit is our end of file, and the
        // daemons' end of theirs.
        drop(guest_agent);
        drop(guest_qmp);
        for daemon in &mut daemons {
            daemon.release_qemu_end();
        }
        tracing::debug!(pid = process.pid(), dir = %dir.path.display(), "started QEMU");

        let qmp = match Qmp::handshake(qmp, Duration::from_secs(30)) {
            Ok(qmp) => qmp,
            Err(error) => {
                if let Some(status) = process.wait_timeout(Duration::from_millis(500)) {
                    return Err(VmError::BootFailed {
                        status: status.to_string(),
                        console: dir.console_tail(),
                        qemu_log: dir.qemu_log_tail(),
                    });
                }
                return Err(error.into());
            }
        };
        // The Vm exists before the agent is ready so that every failure from
        // here on goes through its Drop: QEMU stopped, directory removed.
        let mut vm = Vm {
            qemu: Some(process),
            virtiofs: daemons,
            qmp,
            agent,
            decoder: FrameDecoder::default(),
            flows: BTreeMap::new(),
            read_buffer: vec![0u8; 64 * 1024],
            dir,
            ready: Ready {
                protocol: 0,
                kernel_release: String::new(),
                init_started_ns: 0,
                ready_ns: 0,
            },
            boot_times: BootTimes {
                ready: Duration::ZERO,
                guest_init: Duration::ZERO,
                guest_ready: Duration::ZERO,
            },
        };
        let ready = vm.wait_ready(started + config.boot_timeout, config.boot_timeout)?;
        if ready.protocol != PROTOCOL_VERSION {
            return Err(VmError::ProtocolVersion {
                found: ready.protocol,
            });
        }
        vm.boot_times = BootTimes {
            ready: started.elapsed(),
            guest_init: Duration::from_nanos(ready.init_started_ns),
            guest_ready: Duration::from_nanos(ready.ready_ns),
        };
        vm.ready = ready;
        Ok(vm)
    }

    /// The guest's `uname -r`, as its agent reported it.
    pub fn kernel_release(&self) -> &str {
        &self.ready.kernel_release
    }

    pub fn boot_times(&self) -> BootTimes {
        self.boot_times
    }

    /// QEMU's pid, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.qemu.as_ref().map(QemuProcess::pid)
    }

    /// Descriptors that poll readable once QEMU or one of the VM's
    /// virtiofsd processes has exited: a VM waiting for work (a warm pool
    /// member) watches them to notice that it died.
    pub fn exit_fds(&self) -> Vec<BorrowedFd<'_>> {
        let qemu = self.qemu.as_ref().and_then(|qemu| qemu.exit_fd());
        qemu.into_iter()
            .chain(self.virtiofs.iter().filter_map(VirtiofsDaemon::exit_fd))
            .collect()
    }

    /// The pids of the virtiofsd processes berth started, one per share.
    pub fn virtiofsd_pids(&self) -> Vec<u32> {
        self.virtiofs.iter().map(VirtiofsDaemon::pid).collect()
    }

    /// The VM's private directory (removed when it ends).
    pub fn dir(&self) -> &Path {
        &self.dir.path
    }

    /// What the guest wrote to its serial console so far.
    pub fn console(&self) -> String {
        tail(&self.dir.console_log(), usize::MAX)
    }

    /// Runs a process in the guest and collects its output.
    pub fn run(&mut self, request: &RunRequest) -> Result<RunOutput, VmError> {
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        let exit = self.run_streaming(request, &mut |stream, data| match stream {
            OutputStream::Stdout => stdout.extend_from_slice(data),
            OutputStream::Stderr => stderr.extend_from_slice(data),
        })?;
        Ok(RunOutput {
            stdout,
            stderr,
            exit,
        })
    }

    /// Runs a process in the guest, handing its output to `output` as it
    /// arrives.
    pub fn run_streaming(
        &mut self,
        request: &RunRequest,
        output: &mut dyn FnMut(OutputStream, &[u8]),
    ) -> Result<Exit, VmError> {
        self.run_relayed(
            request,
            Relay {
                stdin: None,
                signals: None,
                started: &mut |_| {},
                dns: None,
                output,
            },
        )
    }

    /// Runs a process in the guest with its stdin and signals coming from
    /// `relay` while it runs (tests, and callers with one process only).
    pub fn run_relayed(&mut self, request: &RunRequest, relay: Relay<'_>) -> Result<Exit, VmError> {
        let Relay {
            mut stdin,
            mut signals,
            started,
            mut dns,
            output,
        } = relay;
        let mut request = request.clone();
        request.stdin = stdin.is_some();
        self.start(&request)?;
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            let mut watched = Vec::new();
            let input_open = self.input_window(MAIN_PROCESS) > 0;
            let stdin_index = stdin.filter(|_| input_open).map(|fd| {
                watched.push((fd, PollFlags::POLLIN));
                watched.len() - 1
            });
            let signals_index = signals.as_ref().map(|signals| {
                watched.push((signals.as_fd(), PollFlags::POLLIN));
                watched.len() - 1
            });
            match self.next_event(&watched, dns.as_deref_mut())? {
                Event::Output {
                    process: MAIN_PROCESS,
                    stream,
                    bytes,
                } => {
                    output(stream, &bytes);
                    self.acknowledge(MAIN_PROCESS, stream, bytes.len())?;
                }
                Event::InputCredit { .. } => {}
                Event::Started {
                    process: MAIN_PROCESS,
                    pid,
                } => started(pid),
                Event::Exited {
                    process: MAIN_PROCESS,
                    exit,
                } => return Ok(exit),
                Event::Ready(index) if Some(index) == stdin_index => {
                    let fd = stdin.expect("watched only while open");
                    let limit = self.input_window(MAIN_PROCESS).min(buffer.len());
                    let read = match nix::unistd::read(fd.as_raw_fd(), &mut buffer[..limit]) {
                        Ok(read) => read,
                        Err(nix::Error::EINTR | nix::Error::EAGAIN) => continue,
                        Err(_) => 0,
                    };
                    if read == 0 {
                        stdin = None;
                    }
                    self.send_input(MAIN_PROCESS, &buffer[..read])?;
                }
                Event::Ready(index) if Some(index) == signals_index => {
                    let signalfd = signals.as_deref_mut().expect("watched only when given");
                    while let Ok(Some(info)) = signalfd.read_signal() {
                        self.signal(MAIN_PROCESS, info.ssi_signo as i32)?;
                    }
                }
                other => {
                    return Err(VmError::Unexpected {
                        message: format!("{other:?} during a run of one process"),
                    })
                }
            }
        }
    }

    /// Starts `request` as process 0 ([`MAIN_PROCESS`]); what it does comes
    /// from [`Vm::next_event`].
    pub fn start(&mut self, request: &RunRequest) -> Result<(), VmError> {
        let request = self.checked(request)?;
        self.flows.clear();
        self.flows.insert(MAIN_PROCESS, ProcessFlow::new());
        self.deliver(&encode_message(&HostMessage::Run(request)))?;
        self.agent
            .set_read_timeout(None)
            .map_err(|source| VmError::Channel { source })
    }

    /// Starts a further process in the running container as `process` (a
    /// number no running process has): `Started` or `Exited` follows.
    pub fn exec(&mut self, process: ProcessId, request: ExecRequest) -> Result<(), VmError> {
        let message = HostMessage::Exec {
            process,
            request: Box::new(request),
        };
        self.flows.insert(process, ProcessFlow::new());
        self.deliver(&encode_message(&message))
    }

    /// How many bytes of input `process` may be sent now: its stdin's
    /// source is read only while this is not 0, at most this much at once
    /// ([`Event::InputCredit`] says when it grew).
    pub fn input_window(&self, process: ProcessId) -> usize {
        self.flows
            .get(&process)
            .map_or(0, |flow| flow.input.available())
    }

    /// The caller wrote `bytes` of `process`'s `stream` out (or dropped
    /// them): the guest may send as many more.
    pub fn acknowledge(
        &mut self,
        process: ProcessId,
        stream: OutputStream,
        bytes: usize,
    ) -> Result<(), VmError> {
        let Some(flow) = self.flows.get_mut(&process) else {
            return Ok(());
        };
        let Some(credit) = flow.outputs[stream.index()].passed_on(bytes) else {
            return Ok(());
        };
        let (stdout, stderr) = match stream {
            OutputStream::Stdout => (credit, 0),
            OutputStream::Stderr => (0, credit),
        };
        let message = HostMessage::OutputCredit {
            process,
            stdout,
            stderr,
        };
        self.deliver(&encode_message(&message))
    }

    /// Input for a running process, within [`Vm::input_window`]; empty: the
    /// end of it.
    pub fn send_input(&mut self, process: ProcessId, bytes: &[u8]) -> Result<(), VmError> {
        if let Some(flow) = self.flows.get_mut(&process) {
            flow.input.spend(bytes.len());
        }
        let mut frame = Vec::with_capacity(bytes.len() + 9);
        encode_stream(FrameKind::Stdin, process, bytes, &mut frame);
        self.deliver(&frame)
    }

    pub fn signal(&mut self, process: ProcessId, signal: i32) -> Result<(), VmError> {
        self.deliver(&encode_message(&HostMessage::Signal { process, signal }))
    }

    /// A process's terminal has a new size.
    pub fn resize(&mut self, process: ProcessId, rows: u16, columns: u16) -> Result<(), VmError> {
        let message = HostMessage::Resize {
            process,
            rows,
            columns,
        };
        self.deliver(&encode_message(&message))
    }

    /// Asks for the container's processes: [`Event::Processes`] follows.
    pub fn list_processes(&mut self) -> Result<(), VmError> {
        self.deliver(&encode_message(&HostMessage::ListProcesses))
    }

    /// Asks for the guest's counters: [`Event::Stats`] follows.
    pub fn read_stats(&mut self) -> Result<(), VmError> {
        self.deliver(&encode_message(&HostMessage::ReadStats))
    }

    /// Asks the guest to drop its clean caches: [`Event::CachesDropped`]
    /// follows.
    pub fn drop_caches(&mut self) -> Result<(), VmError> {
        self.deliver(&encode_message(&HostMessage::DropCaches))
    }

    /// Gives the spare card `network.mac` the network, named `name` in the
    /// guest: [`Event::NetworkChanged`] follows.
    pub fn connect_network(&mut self, name: &str, network: &GuestNetwork) -> Result<(), VmError> {
        self.deliver(&encode_message(&HostMessage::ConnectNetwork {
            name: name.to_owned(),
            network: network.clone(),
        }))
    }

    /// Takes the card `network.mac` off `network` (down, its addresses
    /// gone), a spare again: [`Event::NetworkChanged`] follows.
    pub fn disconnect_network(&mut self, network: &GuestNetwork) -> Result<(), VmError> {
        self.deliver(&encode_message(&HostMessage::DisconnectNetwork {
            network: network.clone(),
        }))
    }

    /// A warm member's root share and the filesystems of a container root,
    /// mounted in the guest before its claim, and its network cards given
    /// their addresses (`HostMessage::StageRoot`); the claim's `Run` must
    /// name the same share, subdir and networks. Waits for the guest's
    /// answer.
    pub fn stage_root(
        &mut self,
        root: &GuestRoot,
        networks: &[GuestNetwork],
    ) -> Result<(), VmError> {
        self.deliver(&encode_message(&HostMessage::StageRoot {
            root: root.clone(),
            networks: networks.to_vec(),
        }))?;
        match self.next_event(&[], None)? {
            Event::RootStaged => Ok(()),
            other => Err(VmError::Unexpected {
                message: format!("{other:?}"),
            }),
        }
    }

    /// Waits for what happens next in the guest, or for one of `watched`
    /// (the caller's descriptors) to be ready. On the way it relays the
    /// guest's DNS queries to `dns` and their answers back; a share's daemon
    /// ending is an error (the guest would wait on its files for ever).
    pub fn next_event(
        &mut self,
        watched: &[Watched<'_>],
        dns: Option<&mut crate::dns_relay::HostDns>,
    ) -> Result<Event, VmError> {
        let mut buffer = std::mem::take(&mut self.read_buffer);
        let event = self.next_event_into(watched, dns, &mut buffer);
        self.read_buffer = buffer;
        event
    }

    fn next_event_into(
        &mut self,
        watched: &[Watched<'_>],
        mut dns: Option<&mut crate::dns_relay::HostDns>,
        buffer: &mut [u8],
    ) -> Result<Event, VmError> {
        loop {
            while let Some(frame) = self.decoder.next_frame()? {
                if let Some(event) = self.event(frame, dns.as_deref_mut())? {
                    return Ok(event);
                }
            }
            let mut fds = vec![PollFd::new(self.agent.as_fd(), PollFlags::POLLIN)];
            let dns_index = dns.as_ref().map(|dns| watch(&mut fds, dns.fd()));
            let daemons_from = fds.len();
            for daemon in &self.virtiofs {
                if let Some(fd) = daemon.exit_fd() {
                    fds.push(PollFd::new(fd, PollFlags::POLLIN));
                }
            }
            let watched_from = fds.len();
            for &(fd, events) in watched {
                fds.push(PollFd::new(fd, events));
            }
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) => {}
                Err(nix::Error::EINTR) => continue,
                Err(error) => {
                    return Err(VmError::Channel {
                        source: error.into(),
                    })
                }
            }
            let ready: Vec<bool> = fds
                .iter()
                .map(|fd| !fd.revents().unwrap_or(PollFlags::empty()).is_empty())
                .collect();
            drop(fds);
            if let (Some(index), Some(dns)) = (dns_index, dns.as_deref_mut()) {
                if ready[index] {
                    let mut answers = Vec::new();
                    dns.take_answers(&mut answers);
                    self.deliver(&answers)?;
                }
            }
            if ready[daemons_from..watched_from].iter().any(|&ended| ended) {
                let tags = self
                    .virtiofs
                    .iter()
                    .map(|daemon| daemon.tag.clone())
                    .collect();
                return Err(VmError::ShareEnded { tags });
            }
            if ready[0] {
                if !self.receive(buffer)? {
                    return Err(self.agent_gone());
                }
                continue;
            }
            if let Some(index) = ready[watched_from..].iter().position(|&ready| ready) {
                return Ok(Event::Ready(index));
            }
        }
    }

    /// What a frame from the guest means to the caller, if anything.
    fn event(
        &mut self,
        frame: crate::protocol::Frame,
        dns: Option<&mut crate::dns_relay::HostDns>,
    ) -> Result<Option<Event>, VmError> {
        let stream = match frame.kind {
            FrameKind::Stdout => OutputStream::Stdout,
            FrameKind::Stderr => OutputStream::Stderr,
            FrameKind::DnsQuery => {
                if let Some(dns) = dns {
                    dns.query(&frame.payload);
                }
                return Ok(None);
            }
            FrameKind::Stdin | FrameKind::DnsAnswer => {
                return Err(VmError::Unexpected {
                    message: format!("a {:?} frame from the guest", frame.kind),
                })
            }
            FrameKind::Message => {
                return match frame.message::<GuestMessage>()? {
                    GuestMessage::Started { process, pid } => {
                        Ok(Some(Event::Started { process, pid }))
                    }
                    GuestMessage::Exited {
                        process,
                        code,
                        error,
                    } => {
                        self.flows.remove(&process);
                        Ok(Some(Event::Exited {
                            process,
                            exit: Exit { code, error },
                        }))
                    }
                    GuestMessage::InputCredit { process, bytes } => {
                        if let Some(flow) = self.flows.get_mut(&process) {
                            flow.input.grant(bytes);
                        }
                        Ok(Some(Event::InputCredit { process }))
                    }
                    GuestMessage::Processes(table) => Ok(Some(Event::Processes(table))),
                    GuestMessage::Stats(stats) => Ok(Some(Event::Stats(stats))),
                    GuestMessage::CachesDropped => Ok(Some(Event::CachesDropped)),
                    GuestMessage::RootStaged => Ok(Some(Event::RootStaged)),
                    GuestMessage::NetworkChanged { error } => {
                        Ok(Some(Event::NetworkChanged { error }))
                    }
                    GuestMessage::SetupFailed { error } => {
                        Err(VmError::GuestSetup { message: error })
                    }
                    other @ GuestMessage::Ready(_) => Err(VmError::Unexpected {
                        message: format!("{other:?}"),
                    }),
                }
            }
        };
        let (process, bytes) = frame.stream()?;
        if let Some(flow) = self.flows.get_mut(&process) {
            if !flow.outputs[stream.index()].received(bytes.len(), DRAIN_ALLOWANCE) {
                return Err(VmError::Unexpected {
                    message: format!(
                        "more {stream:?} of process {process} than the {OUTPUT_WINDOW} bytes granted"
                    ),
                });
            }
        }
        Ok(Some(Event::Output {
            process,
            stream,
            bytes: bytes.to_vec(),
        }))
    }

    /// Writes `frame` to the agent; QEMU's end gone is the agent gone.
    fn deliver(&mut self, frame: &[u8]) -> Result<(), VmError> {
        self.write_frame(frame)
            .map_err(|error| self.send_failed(error))
    }

    /// A write to the agent failed: QEMU's end gone is the agent gone.
    fn send_failed(&mut self, error: VmError) -> VmError {
        match error {
            VmError::Channel { source }
                if matches!(
                    source.kind(),
                    std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
                ) =>
            {
                self.agent_gone()
            }
            error => error,
        }
    }

    /// `request` with its shares checked against this VM's: each tag must be
    /// one, and a share virtiofsd serves read-only is mounted read-only too.
    fn checked(&self, request: &RunRequest) -> Result<RunRequest, VmError> {
        let mut request = request.clone();
        let share_read_only = |tag: &str| {
            self.virtiofs
                .iter()
                .find(|daemon| daemon.tag == tag)
                .map(|daemon| daemon.read_only)
                .ok_or_else(|| VmError::UnknownShare {
                    tag: tag.to_string(),
                })
        };
        if let Some(root) = &mut request.root {
            root.read_only |= share_read_only(&root.tag)?;
        }
        for mount in &mut request.mounts {
            mount.read_only |= share_read_only(&mount.tag)?;
        }
        Ok(request)
    }

    /// Pauses the whole VM (its vCPUs stop; QMP `stop`).
    pub fn pause(&mut self) -> Result<(), VmError> {
        self.qmp.execute("stop", None)?;
        Ok(())
    }

    /// Resumes a paused VM (QMP `cont`).
    pub fn resume(&mut self) -> Result<(), VmError> {
        self.qmp.execute("cont", None)?;
        Ok(())
    }

    /// QEMU's run state: `running`, `paused`, …
    pub fn status(&mut self) -> Result<String, VmError> {
        Ok(self.qmp.status()?)
    }

    /// Ends the VM: asks the guest to power off, then QEMU to quit, then
    /// kills it; removes its directory.
    pub fn shutdown(mut self) -> Shutdown {
        self.stop()
    }

    /// Ends the VM at once: QEMU is killed, then its virtiofsd processes
    /// stop and its directory goes. For a guest with nothing left to write:
    /// once the run's process is `Exited`, what the container wrote is with
    /// virtiofsd already (no writeback cache; shared mappings are written
    /// back as they go, before the process is reaped), so nothing of the
    /// container's is lost, and the power-off (≈ 0.1 s under TCG) is not
    /// waited for.
    pub fn end_now(mut self) {
        if let Some(mut process) = self.qemu.take() {
            process.kill();
        }
        self.stop_daemons();
    }

    fn stop(&mut self) -> Shutdown {
        let Some(mut process) = self.qemu.take() else {
            return Shutdown::Killed;
        };
        let ended = if process.try_wait().is_some() {
            Shutdown::Guest
        } else {
            let _ = self.send(&HostMessage::Shutdown);
            if process.wait_timeout(Duration::from_secs(5)).is_some() {
                Shutdown::Guest
            } else if self.qmp.quit().is_ok()
                && process.wait_timeout(Duration::from_secs(2)).is_some()
            {
                Shutdown::Quit
            } else {
                process.kill();
                Shutdown::Killed
            }
        };
        drop(process);
        self.stop_daemons();
        ended
    }

    /// After QEMU's end: each daemon's client has disconnected.
    fn stop_daemons(&mut self) {
        for daemon in &mut self.virtiofs {
            if !daemon.stop(Duration::from_secs(2)) {
                tracing::warn!(tag = %daemon.tag, "virtiofsd did not exit with QEMU; killed");
            }
        }
        self.virtiofs.clear();
        self.dir.remove();
    }

    fn send(&mut self, message: &HostMessage) -> Result<(), VmError> {
        self.write_frame(&encode_message(message))
    }

    /// Writes `frame` to the agent, reading what it sends meanwhile into
    /// the decoder (its frames wait there for [`Vm::next_event`]): the
    /// agent's own writes block while nobody reads them, and it reads the
    /// channel only between them, so a host that only waited to write would
    /// wait for ever once both directions are full (a process's stdin and
    /// its output at once).
    fn write_frame(&mut self, frame: &[u8]) -> Result<(), VmError> {
        let channel = |error: nix::Error| VmError::Channel {
            source: error.into(),
        };
        let mut written = 0;
        while written < frame.len() {
            match nix::sys::socket::send(
                self.agent.as_raw_fd(),
                &frame[written..],
                nix::sys::socket::MsgFlags::MSG_DONTWAIT | nix::sys::socket::MsgFlags::MSG_NOSIGNAL,
            ) {
                Ok(count) => written += count,
                Err(nix::Error::EINTR) => {}
                Err(nix::Error::EAGAIN) => {
                    let mut fds = [PollFd::new(
                        self.agent.as_fd(),
                        PollFlags::POLLIN | PollFlags::POLLOUT,
                    )];
                    match poll(&mut fds, PollTimeout::NONE) {
                        Ok(_) | Err(nix::Error::EINTR) => {}
                        Err(error) => return Err(channel(error)),
                    }
                    let readable = fds[0].revents().is_some_and(|events| {
                        events.intersects(PollFlags::POLLIN | PollFlags::POLLHUP)
                    });
                    // (Not `read_buffer`: a caller in `next_event` holds it.)
                    let mut buffer = [0u8; 16 * 1024];
                    if readable && !self.receive(&mut buffer)? {
                        return Err(channel(nix::Error::EPIPE));
                    }
                }
                Err(error) => return Err(channel(error)),
            }
        }
        Ok(())
    }

    fn wait_ready(&mut self, deadline: Instant, timeout: Duration) -> Result<Ready, VmError> {
        match self.next_frame(Some(deadline))? {
            Some(frame) => match frame.message::<GuestMessage>()? {
                GuestMessage::Ready(ready) => Ok(ready),
                other => Err(VmError::Unexpected {
                    message: format!("{other:?}"),
                }),
            },
            None if Instant::now() >= deadline => Err(VmError::BootTimeout {
                timeout,
                console: self.dir.console_tail(),
                qemu_log: self.dir.qemu_log_tail(),
            }),
            None => {
                let status = self.exit_status(Duration::from_secs(2));
                Err(VmError::BootFailed {
                    status,
                    console: self.dir.console_tail(),
                    qemu_log: self.dir.qemu_log_tail(),
                })
            }
        }
    }

    /// The next frame from the agent; `None` at end of file or, with a
    /// deadline, when it passes.
    fn next_frame(
        &mut self,
        deadline: Option<Instant>,
    ) -> Result<Option<crate::protocol::Frame>, VmError> {
        let mut buffer = [0u8; 64 * 1024];
        loop {
            if let Some(frame) = self.decoder.next_frame()? {
                return Ok(Some(frame));
            }
            let timeout = match deadline {
                Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => return Ok(None),
                },
                None => None,
            };
            self.agent
                .set_read_timeout(timeout)
                .map_err(|source| VmError::Channel { source })?;
            if !self.receive(&mut buffer)? {
                return Ok(None);
            }
        }
    }

    /// One read from the agent into the decoder; false at end of file (QEMU
    /// gone: its end closed, or reset with data unread). A read that timed out
    /// or was interrupted is no end.
    fn receive(&mut self, buffer: &mut [u8]) -> Result<bool, VmError> {
        match self.agent.read(buffer) {
            Ok(0) => Ok(false),
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => Ok(false),
            Ok(read) => {
                self.decoder.push(&buffer[..read]);
                Ok(true)
            }
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                Ok(true)
            }
            Err(source) => Err(VmError::Channel { source }),
        }
    }

    fn agent_gone(&mut self) -> VmError {
        VmError::AgentGone {
            status: self.exit_status(Duration::from_secs(2)),
            console: self.dir.console_tail(),
            qemu_log: self.dir.qemu_log_tail(),
        }
    }

    fn exit_status(&mut self, wait: Duration) -> String {
        let status: Option<ExitStatus> = self
            .qemu
            .as_mut()
            .and_then(|process| process.wait_timeout(wait));
        match status {
            Some(status) => status.to_string(),
            None => "still running".to_string(),
        }
    }
}

impl Drop for Vm {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `<run_dir>/berth-vm-<pid>-<n>`, mode 0700, removed when dropped.
struct VmDir {
    path: PathBuf,
    removed: bool,
}

impl VmDir {
    fn create(run_dir: &Path) -> Result<VmDir, VmError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = run_dir.join(format!(
            "berth-vm-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        // The mode at creation (fs_err has no DirBuilder); the error names the path.
        #[allow(clippy::disallowed_methods)]
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(|source| VmError::CreateDir {
                path: path.clone(),
                source,
            })?;
        Ok(VmDir {
            path,
            removed: false,
        })
    }

    fn console_log(&self) -> PathBuf {
        self.path.join("console.log")
    }

    fn qemu_log(&self) -> PathBuf {
        self.path.join("qemu.log")
    }

    fn console_tail(&self) -> String {
        tail(&self.console_log(), 30)
    }

    /// QEMU's log, then each virtiofsd's.
    fn qemu_log_tail(&self) -> String {
        let mut text = tail(&self.qemu_log(), 10);
        for index in 0.. {
            let log = self.path.join(format!("virtiofsd-{index}.log"));
            if !log.exists() {
                break;
            }
            let body = tail(&log, 10);
            if !body.trim().is_empty() {
                text.push_str(&format!("\n--- virtiofsd {index} ---\n{body}"));
            }
        }
        text
    }

    fn remove(&mut self) {
        if !self.removed {
            self.removed = true;
            if let Err(error) = fs::remove_dir_all(&self.path) {
                tracing::warn!(%error, "failed to remove the VM directory");
            }
        }
    }
}

impl Drop for VmDir {
    fn drop(&mut self) {
        self.remove();
    }
}

/// The last `lines` lines of a log file, or nothing.
fn tail(path: &Path, lines: usize) -> String {
    let text = fs::read(path).map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
    let text = text.unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_balloon_is_on_unless_turned_off() {
        for (value, expected) in [
            (None, true),
            (Some(""), true),
            (Some("on"), true),
            (Some("off"), false),
        ] {
            let result = free_page_reporting(value.map(Into::into)).unwrap();
            assert_eq!(result, expected, "{value:?}");
        }
        let error = free_page_reporting(Some("no".into())).unwrap_err();
        assert_eq!(
            error.to_string(),
            "BERTH_VM_BALLOON=\"no\" is not valid (expected on or off)"
        );
    }

    #[test]
    fn missing_inputs_are_named_before_qemu_starts() {
        let dir = tempfile::tempdir().unwrap();
        let config = VmConfig {
            qemu: PathBuf::from("/nonexistent/qemu"),
            accelerator: Accelerator::Tcg,
            kernel: dir.path().join("vmlinux"),
            initramfs: dir.path().join("initramfs"),
            memory_mib: 256,
            cpus: 1,
            run_dir: dir.path().to_path_buf(),
            boot_timeout: Duration::from_secs(1),
            kernel_cmdline_extra: Vec::new(),
            shares: Vec::new(),
            virtiofsd: None,
            networks: Vec::new(),
            free_page_reporting: true,
        };
        let error = Vm::boot(&config).err().unwrap();
        assert!(
            matches!(
                error,
                VmError::MissingInput {
                    what: "guest kernel",
                    ..
                }
            ),
            "{error}"
        );
    }

    #[test]
    fn a_missing_qemu_is_reported_as_such_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("vmlinux"), b"").unwrap();
        fs::write(dir.path().join("initramfs"), b"").unwrap();
        let runs = dir.path().join("runs");
        fs::create_dir(&runs).unwrap();
        let config = VmConfig {
            qemu: PathBuf::from("/nonexistent/qemu-system-x86_64"),
            accelerator: Accelerator::Tcg,
            kernel: dir.path().join("vmlinux"),
            initramfs: dir.path().join("initramfs"),
            memory_mib: 256,
            cpus: 1,
            run_dir: runs.clone(),
            boot_timeout: Duration::from_secs(1),
            kernel_cmdline_extra: Vec::new(),
            shares: Vec::new(),
            virtiofsd: None,
            networks: Vec::new(),
            free_page_reporting: true,
        };
        let error = Vm::boot(&config).err().unwrap();
        assert!(
            matches!(error, VmError::Qemu(QemuError::NotInstalled)),
            "{error}"
        );
        assert!(
            error
                .to_string()
                .contains("apt-get install qemu-system-x86"),
            "{error}"
        );
        assert_eq!(fs::read_dir(&runs).unwrap().count(), 0);
    }

    #[test]
    fn diagnostics_show_only_what_there_is() {
        assert_eq!(diagnostics("", " \n"), "");
        assert_eq!(
            diagnostics("Kernel panic\n", ""),
            "\n--- console (last lines) ---\nKernel panic"
        );
    }
}
