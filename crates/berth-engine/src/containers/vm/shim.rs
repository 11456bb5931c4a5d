//! `berth __vm-shim`: one VM container's stand-in on the host (see the
//! module doc of `vm`). Started by [`super::launch`] with the container's
//! stdio as its own 0–2, its request on [`REQUEST_FD`] and the start report
//! to write on [`STATUS_FD`]; it
//!
//! 1. blocks the signals it relays (so none is lost during the boot),
//! 2. enters private mount and network namespaces and builds the root the
//!    guest gets (berth-runtime's `arrange_shared_root`): these mounts and
//!    QEMU's empty network go away with the shim and its children, so a
//!    killed shim leaves no mount behind,
//! 3. boots the VM with that root shared over virtio-fs,
//! 4. runs the container's process through the agent with the whole spec
//!    (the settings are applied again in the guest), relaying stdin,
//!    stdout, stderr and signals, reports `Started` once the process runs,
//! 5. ends the VM and exits with the process's exit code.

use std::io::{Read, Write};
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::path::PathBuf;

use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use serde::{Deserialize, Serialize};

use berth_runtime::ContainerSpec;
use berth_vm::initramfs::AgentBinary;
use berth_vm::{GuestRoot, RunRequest, Share, Vm, VmConfig};

/// The name of the hidden subcommand.
pub const SHIM_COMMAND: &str = "__vm-shim";
/// Where the shim reads its [`ShimRequest`] (JSON, to end of file).
pub const REQUEST_FD: i32 = 3;
/// Where the shim writes one [`ShimStatus`] (JSON) and closes.
pub const STATUS_FD: i32 = 4;
/// With `-t`: the console socket the terminal's master goes to.
pub const CONSOLE_FD: i32 = 5;

/// The virtio-fs tag of the container's root.
const ROOT_TAG: &str = "root";

/// What the monitor asks of a shim.
#[derive(Debug, Serialize, Deserialize)]
pub struct ShimRequest {
    pub spec: ContainerSpec,
    /// Where the guest kernel and initramfs are cached (`<root>/vm`).
    pub cache: PathBuf,
    /// Where the VM's private directory is made (the container's run
    /// directory).
    pub run_dir: PathBuf,
    pub memory_mib: u32,
    /// The container's first network, connected into the shim's network
    /// namespace as `eth0` before this request was written.
    #[serde(default)]
    pub network: Option<ShimNetwork>,
}

/// The address the guest takes over from the container's `eth0`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShimNetwork {
    pub guest: berth_vm::protocol::GuestNetwork,
    /// The MAC of the container's endpoint (`inspect`'s `MacAddress`).
    pub mac: String,
}

/// How the start went, as the shim reports it once.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ShimStatus {
    /// The process runs in the guest.
    Started,
    /// Nothing runs: the message and Docker's exit status for it (125 for
    /// berth's failures, 126/127 for a program that cannot run).
    Failed { message: String, status: i32 },
}

/// The signals relayed to the container's process: every one a process can
/// catch except those the shim needs itself (SIGCHLD: its QEMU and
/// virtiofsd) and the synchronous faults.
fn relayed_signals() -> SigSet {
    let mut set = SigSet::empty();
    for signal in Signal::iterator() {
        if !matches!(
            signal,
            Signal::SIGKILL
                | Signal::SIGSTOP
                | Signal::SIGCHLD
                | Signal::SIGSEGV
                | Signal::SIGBUS
                | Signal::SIGFPE
                | Signal::SIGILL
                | Signal::SIGTRAP
                | Signal::SIGSYS
        ) {
            set.add(signal);
        }
    }
    set
}

/// The shim's whole life; the exit code is the container's.
pub fn run() -> i32 {
    // First: a signal that comes while the VM boots waits for the process.
    let signals = relayed_signals();
    let _ = signals.thread_block();
    // Nothing the monitor left open may reach QEMU or virtiofsd (a pipe's
    // write end held there would keep its reader waiting), and the two
    // descriptors of the start are this process's alone.
    // SAFETY: close_range and fcntl act on descriptor numbers only; no
    // object of this process owns any of them yet.
    let console_open = unsafe {
        libc::syscall(libc::SYS_close_range, CONSOLE_FD + 1, u32::MAX, 0);
        for fd in [REQUEST_FD, STATUS_FD, CONSOLE_FD] {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
        libc::fcntl(CONSOLE_FD, libc::F_GETFD) >= 0
    };
    // SAFETY: the starter placed these descriptors at these numbers for
    // this process alone.
    let (request, status, console) = unsafe {
        (
            std::fs::File::from_raw_fd(REQUEST_FD),
            std::fs::File::from(OwnedFd::from_raw_fd(STATUS_FD)),
            console_open.then(|| OwnedFd::from_raw_fd(CONSOLE_FD)),
        )
    };
    let mut reporter = Reporter {
        status: Some(status),
    };
    let request = match read_request(request) {
        Ok(request) => request,
        Err(message) => return reporter.failed(message, 125),
    };
    match serve(&request, signals, console, &mut reporter) {
        Ok(code) => code,
        Err(message) => reporter.failed(message, 125),
    }
}

fn clone_fd(fd: &OwnedFd) -> Result<OwnedFd, String> {
    fd.try_clone()
        .map_err(|error| format!("failed to copy the container's terminal: {error}"))
}

fn read_request(mut file: std::fs::File) -> Result<ShimRequest, String> {
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|error| format!("failed to read the VM request: {error}"))?;
    serde_json::from_slice(&bytes).map_err(|error| format!("malformed VM request: {error}"))
}

/// Writes the one start report.
struct Reporter {
    status: Option<std::fs::File>,
}

impl Reporter {
    fn send(&mut self, status: &ShimStatus) {
        if let Some(mut file) = self.status.take() {
            let _ = file.write_all(&serde_json::to_vec(status).unwrap_or_default());
        }
    }

    /// Reports a failure if nothing was reported yet; the exit code.
    fn failed(&mut self, message: String, status: i32) -> i32 {
        tracing::debug!(%message, status, "VM container failed");
        self.send(&ShimStatus::Failed { message, status });
        status
    }
}

fn serve(
    request: &ShimRequest,
    signals: SigSet,
    console: Option<OwnedFd>,
    reporter: &mut Reporter,
) -> Result<i32, String> {
    // With `-t`, the terminal comes first: berth waits for its master
    // before anything else of the start.
    let terminal = console
        .map(|console| {
            super::terminal::HostTerminal::open(&console, request.spec.process.console_size)
        })
        .transpose()?;
    // The network namespace came with the shim's birth (`launch`).
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS)
        .map_err(|error| format!("failed to create the VM's mount namespace: {error}"))?;
    let spec = &request.spec;
    berth_runtime::init::arrange_shared_root(spec)
        .map_err(|failure| format!("failed to build the container's root for the VM: {failure}"))?;
    // The guest agent is berth itself (one binary, the design);
    // `BERTH_VM_AGENT=small` packs the 2 MB agent instead, a smaller
    // initramfs that a TCG guest unpacks faster (docs/VM.md).
    let guest = berth_vm::guest::prepare(
        &request.cache,
        &AgentBinary::from_env_or(AgentBinary::Berth),
    )
    .map_err(|error| crate::ErrorChain(&error).to_string())?;
    let mut config = VmConfig::new(guest.kernel.vmlinux.clone(), guest.initramfs.clone())
        .map_err(|error| crate::ErrorChain(&error).to_string())?;
    config.memory_mib = request.memory_mib;
    berth_store::permissions::create_private_directory_all(&request.run_dir).map_err(|error| {
        format!(
            "failed to create {}: {}",
            request.run_dir.display(),
            crate::ErrorChain(&error)
        )
    })?;
    config.run_dir = request.run_dir.clone();
    config.shares = vec![Share::root(ROOT_TAG, &spec.rootfs, false)];
    let _tap = match &request.network {
        Some(network) => {
            let tap = super::network::bridge_to_tap(&network.mac)?;
            config.network = Some(std::sync::Arc::new(berth_vm::qemu::NetworkDevice {
                tap_fd: std::os::fd::AsRawFd::as_raw_fd(&tap.fd),
                mac: tap.guest_mac.clone(),
            }));
            Some(tap)
        }
        None => None,
    };
    let mut vm = Vm::boot(&config).map_err(|error| {
        format!(
            "failed to boot the container's VM: {}",
            crate::ErrorChain(&error)
        )
    })?;
    tracing::debug!(ready = ?vm.boot_times().ready, "VM booted");
    let mut signalfd =
        SignalFd::with_flags(&signals, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
            .map_err(|error| format!("failed to watch for signals: {error}"))?;
    let run = RunRequest {
        args: spec.process.args.clone(),
        env: spec.process.env.clone(),
        cwd: spec.process.cwd.clone(),
        root: Some(GuestRoot {
            tag: ROOT_TAG.to_owned(),
            read_only: spec.readonly_rootfs,
        }),
        mounts: Vec::new(),
        container: Some(Box::new(spec.clone())),
        stdin: true,
        network: request
            .network
            .as_ref()
            .map(|network| network.guest.clone()),
    };
    let mut dns = match &request.network {
        Some(network) if network.guest.embedded_dns => Some(
            berth_vm::dns_relay::HostDns::connect()
                .map_err(|error| format!("failed to reach the embedded DNS: {error}"))?,
        ),
        _ => None,
    };
    let listener = super::relay::ExecListener::bind(&super::exec::socket_path(&request.run_dir))?;
    // SAFETY: 0, 1 and 2 are this process's standard streams, open for its
    // whole life; the borrow ends with the run.
    let stdin = unsafe { std::os::fd::BorrowedFd::borrow_raw(0) };
    let (mut stdout, mut stderr) = (std::io::stdout().lock(), std::io::stderr().lock());
    let (mut terminal_out, mut terminal_err);
    let main = match &terminal {
        Some(terminal) => {
            terminal_out = fs_err::File::from_parts(
                std::fs::File::from(clone_fd(&terminal.slave)?),
                "terminal",
            );
            terminal_err = fs_err::File::from_parts(
                std::fs::File::from(clone_fd(&terminal.slave)?),
                "terminal",
            );
            super::relay::MainStreams {
                stdin: terminal.slave.as_fd(),
                stdout: &mut terminal_out,
                stderr: &mut terminal_err,
                terminal: Some(terminal),
            }
        }
        None => super::relay::MainStreams {
            stdin,
            stdout: &mut stdout,
            stderr: &mut stderr,
            terminal: None,
        },
    };
    let mut started = false;
    let exit = super::relay::run_container(
        &mut vm,
        &run,
        main,
        &mut signalfd,
        dns.as_mut(),
        &listener,
        &mut || {
            started = true;
            reporter.send(&ShimStatus::Started);
        },
    );
    let code = match exit {
        Ok(exit) if started => exit.code,
        Ok(exit) => {
            // In the namespace runtime's words (`LaunchError`).
            let message = format!(
                "failed to start container process: {}",
                exit.error
                    .unwrap_or_else(|| format!("it exited with {}", exit.code))
            );
            reporter.failed(message, exit.code.clamp(125, 127))
        }
        Err(error) => {
            // The VM ended under the process (QEMU killed, the guest
            // crashed): a container killed from outside.
            let message = crate::ErrorChain(&error).to_string();
            if started {
                tracing::warn!(%message, "the container's VM ended");
                137
            } else {
                reporter.failed(message, 125)
            }
        }
    };
    drop(vm);
    Ok(code)
}
