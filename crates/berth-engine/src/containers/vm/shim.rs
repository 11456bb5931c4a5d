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
//!
//! A warm pool member's shim (`--member`) does 1 and 3 with an empty root
//! share, reports `Booted`, and waits; its claim brings the request and
//! the container's stdio, and it does 2 and 4–5 then: [`serve`] and
//! [`serve_member`] differ in their order only, the part after the boot
//! ([`run_container`]) is one function.

use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;

use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use serde::{Deserialize, Serialize};

use berth_runtime::ContainerSpec;
use berth_vm::initramfs::AgentBinary;
use berth_vm::{GuestRoot, RunRequest, Share, Vm, VmConfig};

/// The name of the hidden subcommand.
pub const SHIM_COMMAND: &str = "__vm-shim";
// Its descriptors: `super::StartDescriptors` (the request is a
// [`ShimRequest`], or a member's channel; the report one [`ShimStatus`]; a
// pool member gets its console socket with its claim instead).

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
    /// The container's networks, in its order, connected into the shim's
    /// network namespace (`eth0`, `eth1`, …) before this request was
    /// written: one guest card each.
    #[serde(default)]
    pub networks: Vec<ShimNetwork>,
    /// One of them is user-defined: the guest's 127.0.0.11 relays to the
    /// container's embedded DNS server in the shim's namespace.
    #[serde(default)]
    pub embedded_dns: bool,
}

/// `berth __vm-shim --member`: a warm pool member's shim, whose
/// [`REQUEST_FD`] is a socket: a [`MemberBoot`] first, the claim's
/// [`ShimRequest`] with the container's stdio later.
pub const MEMBER_FLAG: &str = "--member";

/// What a warm pool member's shim boots with, before any container is
/// known: everything of a [`ShimRequest`] but the container.
#[derive(Debug, Serialize, Deserialize)]
pub struct MemberBoot {
    pub cache: PathBuf,
    pub run_dir: PathBuf,
    pub memory_mib: u32,
    /// The root share's directory, empty until the claim builds the
    /// container's root on it (the member's container's `rootfs`, which
    /// the claimed container, taking the member's id, has too).
    pub root: PathBuf,
    /// The member's network (a pool member has one), connected into the
    /// shim's namespace before the boot (as a namespace member's sandbox is
    /// connected before its claim).
    #[serde(default)]
    pub networks: Vec<ShimNetwork>,
}

/// One of the container's endpoints, whose address the guest takes over.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShimNetwork {
    /// The container's veth in the shim's namespace (`eth0`, …), which the
    /// shim bridges to this card's tap.
    pub veth: String,
    /// The network's id: how a `network disconnect` names the card.
    #[serde(default)]
    pub network_id: String,
    /// The guest card: its MAC (`network::guest_mac` of the endpoint's),
    /// address, and the default route's gateway on the first network.
    pub guest: berth_vm::protocol::GuestNetwork,
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
    /// A pool member's VM booted (its agent `Ready`); a line of its own,
    /// before the start report of its claim.
    Booted,
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
/// `init_diagnostics` sets up its tracing (the binary's choice), called
/// once the descriptors it inherited are sorted out, so that the log file
/// it opens is not among those closed.
pub fn run(init_diagnostics: fn()) -> i32 {
    // First: a signal that comes while the VM boots waits for the process.
    let signals = relayed_signals();
    let _ = signals.thread_block();
    let super::StartDescriptors {
        request,
        status,
        console,
    } = super::StartDescriptors::take();
    init_diagnostics();
    let mut reporter = Reporter {
        status: Some(status),
    };
    if std::env::args_os().nth(2).as_deref() == Some(std::ffi::OsStr::new(MEMBER_FLAG)) {
        let channel = std::os::unix::net::UnixStream::from(request);
        return match serve_member(&channel, signals, &mut reporter) {
            Ok(code) => code,
            Err(message) => reporter.failed(message, 125),
        };
    }
    let request = match read_request(std::fs::File::from(request)) {
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

/// Writes the one start report (after a member's `Booted` line).
struct Reporter {
    status: Option<std::fs::File>,
}

impl Reporter {
    fn send(&mut self, status: &ShimStatus) {
        if let Some(mut file) = self.status.take() {
            let _ = file.write_all(&serde_json::to_vec(status).unwrap_or_default());
        }
    }

    /// A member's first line: booted and waiting for its claim. The start
    /// report comes after it, on the same pipe.
    fn booted(&mut self) -> Result<(), String> {
        let Some(file) = self.status.as_mut() else {
            return Ok(());
        };
        let mut line = serde_json::to_vec(&ShimStatus::Booted).unwrap_or_default();
        line.push(b'\n');
        file.write_all(&line)
            .map_err(|error| format!("failed to report the VM booted: {error}"))
    }

    /// Reports a failure if nothing was reported yet; the exit code.
    fn failed(&mut self, message: String, status: i32) -> i32 {
        tracing::debug!(%message, status, "VM container failed");
        self.send(&ShimStatus::Failed { message, status });
        status
    }
}

/// With `-t`, the terminal first: berth waits for its master before
/// anything else of the start.
fn open_terminal(
    console: Option<OwnedFd>,
    spec: &ContainerSpec,
) -> Result<Option<super::terminal::HostTerminal>, String> {
    console
        .map(|console| super::terminal::HostTerminal::open(&console, spec.process.console_size))
        .transpose()
}

/// A cold start: the container's root first, then the VM that shares it.
fn serve(
    request: &ShimRequest,
    signals: SigSet,
    console: Option<OwnedFd>,
    reporter: &mut Reporter,
) -> Result<i32, String> {
    let terminal = open_terminal(console, &request.spec)?;
    enter_mount_namespace()?;
    arrange_root(&request.spec)?;
    let booted = boot(&BootSettings {
        cache: &request.cache,
        run_dir: &request.run_dir,
        memory_mib: request.memory_mib,
        root: &request.spec.rootfs,
        networks: &request.networks,
    })?;
    let root = GuestRoot {
        tag: ROOT_TAG.to_owned(),
        read_only: request.spec.readonly_rootfs,
        subdir: None,
    };
    run_container(booted, request, root, signals, terminal, reporter)
}

/// A warm pool member (`--member`): the VM boots with an empty root
/// share; the claim (a [`ShimRequest`] and the container's stdio, over the
/// `channel`) builds the container's root there and runs its process in
/// the booted guest, through the cold start's [`run_container`]. The
/// channel's end (the member monitor ended it) or the VM's death ends the
/// shim before a claim.
fn serve_member(
    channel: &std::os::unix::net::UnixStream,
    signals: SigSet,
    reporter: &mut Reporter,
) -> Result<i32, String> {
    let member: MemberBoot = match berth_runtime::handoff::receive_message(channel) {
        Ok(Some((body, _))) => serde_json::from_slice(&body)
            .map_err(|error| format!("malformed VM member request: {error}"))?,
        Ok(None) => return Ok(0),
        Err(error) => return Err(format!("failed to read the VM member request: {error}")),
    };
    enter_mount_namespace()?;
    let share = MemberShare::make(&member.run_dir)?;
    let mut booted = boot(&BootSettings {
        cache: &member.cache,
        run_dir: &member.run_dir,
        memory_mib: member.memory_mib,
        root: &share.dir,
        networks: &member.networks,
    })?;
    let networks: Vec<_> = member
        .networks
        .iter()
        .map(|network| network.guest.clone())
        .collect();
    booted
        .vm
        .stage_root(&member_root(false), &networks)
        .map_err(|error| {
            format!(
                "failed to stage the pool member's root: {}",
                crate::ErrorChain(&error)
            )
        })?;
    tracing::debug!("member's root staged in the guest");
    reporter.booted()?;
    let Some((request, mut stdio)) = wait_for_claim(channel, &booted.vm)? else {
        // Retired, expired or discarded before any claim: nothing ran.
        return Ok(0);
    };
    if request.spec.rootfs != member.root {
        return Err(format!(
            "the claimed container's root {} is not this VM's share {}",
            request.spec.rootfs.display(),
            member.root.display()
        ));
    }
    // The claimed container's streams become this process's, as a cold
    // shim's are from its start; a fourth descriptor is its console socket.
    let console = (stdio.len() == 4).then(|| stdio.remove(3));
    let terminal = open_terminal(console, &request.spec)?;
    for (fd, target) in stdio.iter().zip(0..) {
        nix::unistd::dup2(std::os::fd::AsRawFd::as_raw_fd(fd), target)
            .map_err(|error| format!("failed to take the container's stdio: {error}"))?;
    }
    drop(stdio);
    tracing::debug!("pool member claimed");
    berth_runtime::init::arrange_shared_root_in_private_namespace(&request.spec)
        .map_err(|failure| format!("failed to build the container's root for the VM: {failure}"))?;
    share.receive(&request.spec.rootfs)?;
    tracing::debug!("container root arranged on the share");
    let root = member_root(request.spec.readonly_rootfs);
    run_container(booted, &request, root, signals, terminal, reporter)
}

/// The directory of a member's share under which the claimed root appears.
const MEMBER_ROOT: &str = "root";

/// A member's root as the guest mounts it: [`MEMBER_ROOT`] of its share.
fn member_root(read_only: bool) -> GuestRoot {
    GuestRoot {
        tag: ROOT_TAG.to_owned(),
        read_only,
        subdir: Some(MEMBER_ROOT.to_owned()),
    }
}

/// A warm member's root share: `<run_dir>/share`, a mount of its own made
/// shared in the shim's (otherwise private) mount namespace, with an empty
/// `root` directory. virtiofsd starts with its own namespace sandbox on it
/// (a slave copy, `pivot_root`ed into the share), so the claim's bind of the
/// container's root onto `share/root` propagates into virtiofsd's view,
/// and virtiofsd never sees more of the host than the share.
struct MemberShare {
    dir: PathBuf,
}

impl MemberShare {
    fn make(run_dir: &std::path::Path) -> Result<MemberShare, String> {
        use nix::mount::{mount, MsFlags};
        let failed = |what: &str, error: &dyn std::fmt::Display| {
            format!("failed to {what} the pool member's share: {error}")
        };
        berth_runtime::init::make_mounts_private()
            .map_err(|failure| failed("isolate", &failure))?;
        let dir = run_dir.join("share");
        berth_store::permissions::create_private_directory_all(&dir.join(MEMBER_ROOT))
            .map_err(|error| failed("create", &crate::ErrorChain(&error)))?;
        mount(
            Some(&dir),
            &dir,
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        )
        .map_err(|error| failed("mount", &error))?;
        mount(
            None::<&str>,
            &dir,
            None::<&str>,
            MsFlags::MS_SHARED,
            None::<&str>,
        )
        .map_err(|error| failed("share", &error))?;
        Ok(MemberShare { dir })
    }

    /// The claimed container's root (mounted at `rootfs`, with its `-v`
    /// mounts) bound onto `share/root`, where virtiofsd receives it.
    fn receive(&self, rootfs: &std::path::Path) -> Result<(), String> {
        use nix::mount::{mount, MsFlags};
        let target = self.dir.join(MEMBER_ROOT);
        mount(
            Some(rootfs),
            &target,
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        )
        .map_err(|error| format!("failed to hand the container's root to the VM: {error}"))
    }
}

/// Waits for the claim on `channel`: the request and the container's
/// stdin, stdout and stderr. None when the channel ends first; an error
/// when the VM dies first (QEMU or virtiofsd killed: the member is
/// discarded, never repaired).
fn wait_for_claim(
    channel: &std::os::unix::net::UnixStream,
    vm: &Vm,
) -> Result<Option<(ShimRequest, Vec<OwnedFd>)>, String> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    loop {
        let exits = vm.exit_fds();
        let mut fds: Vec<PollFd<'_>> = std::iter::once(channel.as_fd())
            .chain(exits.iter().copied())
            .map(|fd| PollFd::new(fd, PollFlags::POLLIN))
            .collect();
        match poll(&mut fds, PollTimeout::NONE) {
            Err(nix::Error::EINTR) => continue,
            Err(error) => return Err(format!("failed to wait for a claim: {error}")),
            Ok(_) => {}
        }
        if fds[1..].iter().any(|fd| fd.any().unwrap_or(false)) {
            return Err("the pool member's VM ended before its claim".to_owned());
        }
        if !fds[0].any().unwrap_or(false) {
            continue;
        }
        return match berth_runtime::handoff::receive_message(channel) {
            Ok(Some((body, fds))) if matches!(fds.len(), 3 | 4) => {
                let request = serde_json::from_slice(&body)
                    .map_err(|error| format!("malformed VM request: {error}"))?;
                Ok(Some((request, fds)))
            }
            Ok(Some(_)) => Err("a VM claim without the container's stdio".to_owned()),
            Ok(None) | Err(_) => Ok(None),
        };
    }
}

/// The mount namespace the container's root is built in: nothing outside
/// shares it, and it goes away with the shim's processes (a killed shim
/// leaves no mount). virtiofsd, started after, is in it too.
fn enter_mount_namespace() -> Result<(), String> {
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS)
        .map_err(|error| format!("failed to create the VM's mount namespace: {error}"))
}

/// The container's root on `spec.rootfs` (the root share's directory):
/// the overlay, the /etc files, the `-v` mounts (the cold path's code).
fn arrange_root(spec: &ContainerSpec) -> Result<(), String> {
    berth_runtime::init::arrange_shared_root(spec)
        .map_err(|failure| format!("failed to build the container's root for the VM: {failure}"))
}

/// What a VM boots with, before any container process.
struct BootSettings<'a> {
    cache: &'a std::path::Path,
    run_dir: &'a std::path::Path,
    memory_mib: u32,
    /// The root share's directory.
    root: &'a std::path::Path,
    networks: &'a [ShimNetwork],
}

/// A booted VM (its agent `Ready`) and its network cards' taps.
struct Booted {
    vm: Vm,
    cards: super::network::Cards,
}

/// The VM up to its agent's `Ready`: guest kernel and initramfs, the
/// root share, each network's tap and bridge (the container's veths are
/// in this namespace already), QEMU with a card on each tap.
fn boot(settings: &BootSettings<'_>) -> Result<Booted, String> {
    // The guest agent is berth itself (one binary, the design);
    // `BERTH_VM_AGENT=small` packs the 2 MB agent instead, a smaller
    // initramfs that a TCG guest unpacks faster (docs/VM.md).
    let guest = berth_vm::guest::prepare(
        settings.cache,
        &AgentBinary::from_env_or(AgentBinary::Berth),
    )
    .map_err(|error| crate::ErrorChain(&error).to_string())?;
    let mut config = VmConfig::new(guest.kernel.vmlinux.clone(), guest.initramfs.clone())
        .map_err(|error| crate::ErrorChain(&error).to_string())?;
    config.memory_mib = settings.memory_mib;
    berth_store::permissions::create_private_directory_all(settings.run_dir).map_err(|error| {
        format!(
            "failed to create {}: {}",
            settings.run_dir.display(),
            crate::ErrorChain(&error)
        )
    })?;
    config.run_dir = settings.run_dir.to_path_buf();
    config.shares = vec![Share::root(ROOT_TAG, settings.root, false)];
    let spares = super::network::spare_cards(settings.networks.len())?;
    let cards = super::network::Cards::make(settings.networks, spares)?;
    config.networks = cards.devices();
    let vm = Vm::boot(&config).map_err(|error| {
        format!(
            "failed to boot the container's VM: {}",
            crate::ErrorChain(&error)
        )
    })?;
    tracing::debug!(ready = ?vm.boot_times().ready, "VM booted");
    Ok(Booted { vm, cards })
}

/// Runs the container's process in the booted VM and relays its stdio
/// and signals until it exits (cold and warm starts alike); the exit code
/// is the container's.
fn run_container(
    booted: Booted,
    request: &ShimRequest,
    root: GuestRoot,
    signals: SigSet,
    terminal: Option<super::terminal::HostTerminal>,
    reporter: &mut Reporter,
) -> Result<i32, String> {
    let Booted { mut vm, mut cards } = booted;
    let spec = &request.spec;
    let mut signalfd =
        SignalFd::with_flags(&signals, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
            .map_err(|error| format!("failed to watch for signals: {error}"))?;
    let run = RunRequest {
        args: spec.process.args.clone(),
        env: spec.process.env.clone(),
        cwd: spec.process.cwd.clone(),
        root: Some(root),
        mounts: Vec::new(),
        container: Some(Box::new(spec.clone())),
        stdin: true,
        networks: request
            .networks
            .iter()
            .map(|network| network.guest.clone())
            .collect(),
        embedded_dns: request.embedded_dns && !request.networks.is_empty(),
    };
    let mut dns = if run.embedded_dns {
        Some(
            berth_vm::dns_relay::HostDns::connect()
                .map_err(|error| format!("failed to reach the embedded DNS: {error}"))?,
        )
    } else {
        None
    };
    let listener = super::relay::ExecListener::bind(&super::exec::socket_path(&request.run_dir))?;
    // SAFETY: 0, 1 and 2 are this process's standard streams, open for its
    // whole life; the borrow ends with the run.
    let stdin = unsafe { std::os::fd::BorrowedFd::borrow_raw(0) };
    let main = match &terminal {
        Some(terminal) => super::relay::MainStreams {
            stdin: terminal.slave.as_fd(),
            stdout: clone_fd(&terminal.slave)?,
            stderr: clone_fd(&terminal.slave)?,
            terminal: Some(terminal),
        },
        None => {
            let copy = |fd: i32| {
                // SAFETY: as above: 1 and 2 are open for the process's life.
                unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }
                    .try_clone_to_owned()
                    .map_err(|error| format!("failed to copy the container's stdio: {error}"))
            };
            super::relay::MainStreams {
                stdin,
                stdout: copy(1)?,
                stderr: copy(2)?,
                terminal: None,
            }
        }
    };
    let mut started = false;
    let exit = super::relay::run_container(
        &mut vm,
        &run,
        main,
        &mut signalfd,
        super::relay::Services {
            dns: dns.as_mut(),
            listener: &listener,
            cards: &mut cards,
        },
        &mut || {
            started = true;
            tracing::debug!("process started in the guest");
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
    tracing::debug!(code, "process exited, ending the VM");
    // The agent synced before it said `Exited`: no power-off to wait for.
    // (A VM that ended under the process is gone already.)
    vm.end_now();
    tracing::debug!("VM ended");
    Ok(code)
}
