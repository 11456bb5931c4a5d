//! The container's first process: runs in the new namespaces between
//! `clone3` and `execve`. Every step that can fail reports which step and
//! why to the parent over a pipe, then exits; success is the pipe closing
//! on `execve` (it is close-on-exec).

pub(crate) mod conceal;
mod devices;
pub(crate) mod exec;
mod guest;
mod mounts;
mod network;
mod reaper;

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use serde::{Deserialize, Serialize};

use crate::spec::ContainerSpec;

pub use guest::{
    arrange_shared_root, arrange_shared_root_in_private_namespace, enter_guest_container,
    make_mounts_private,
};

/// Why the container's process could not start.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct InitFailure {
    pub step: String,
    pub errno: i32,
    pub message: String,
}

impl std::fmt::Display for InitFailure {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Exec messages already say `exec: "prog": …`, as runc words them.
        if self.message.starts_with(&format!("{}:", self.step)) {
            write!(formatter, "{}", self.message)
        } else {
            write!(formatter, "{}: {}", self.step, self.message)
        }
    }
}

impl std::error::Error for InitFailure {}

impl InitFailure {
    pub(crate) fn new(step: &str, error: impl std::fmt::Display, errno: i32) -> Self {
        Self {
            step: step.to_owned(),
            errno,
            message: error.to_string(),
        }
    }

    /// Docker's exit status for a start that failed here: 127 when the
    /// command was not found, 126 when it could not be invoked, else 125.
    pub fn exit_status(&self) -> i32 {
        if self.step != "exec" {
            return 125;
        }
        match self.errno {
            libc::ENOENT => 127,
            libc::EACCES | libc::ENOEXEC | libc::EISDIR => 126,
            _ => 125,
        }
    }

    pub(crate) fn nix(step: &str, error: nix::Error) -> Self {
        Self::new(step, error.desc(), error as i32)
    }

    /// `error` should come straight from the OS: its errno goes to the parent (which picks
    /// Docker's exit code from it) and the step already says what failed, so the file
    /// system calls whose errors end here stay on `std::fs` (fs-err would drop the errno).
    pub(crate) fn io(step: &str, error: std::io::Error) -> Self {
        let errno = error.raw_os_error().unwrap_or(0);
        Self::new(step, error, errno)
    }
}

pub(crate) type InitResult<T> = Result<T, InitFailure>;

/// The descriptors the child starts with.
pub struct InitChannels {
    /// Closed by the parent once the cgroup and namespaces are ready.
    pub go: OwnedFd,
    /// Failure reports; close-on-exec.
    pub report: OwnedFd,
    /// Written `0` first thing to join the container's cgroup; empty when
    /// the process was cloned into it or the parent places it.
    pub cgroup_join: Vec<OwnedFd>,
    pub io: InitIo,
    /// runc's create/start split ([`crate::launch::launch_gated`]): the process stops just
    /// before its identity and privileges are set and waits here for `start`.
    pub gate: Option<ExecGate>,
}

/// Where a created container's process waits for `start`: an `O_PATH` descriptor of a FIFO
/// it opens for writing (through `/proc/self/fd`, so the FIFO's host path need not be
/// reachable from the container root), which blocks until `start` opens it for reading;
/// then it writes one byte and goes on to exec.
pub struct ExecGate {
    pub fifo: OwnedFd,
    /// `--preserve-fds`: descriptors 3..3+N the caller passed, kept for the program.
    pub preserve_fds: u32,
}

/// Where the container's process and streams come from.
pub enum InitIo {
    /// Known at clone time: the spec given to [`run`] and these streams.
    Now {
        stdin: OwnedFd,
        stdout: OwnedFd,
        stderr: OwnedFd,
        console: Option<OwnedFd>,
    },
    /// A pooled sandbox: once its root and namespaces are ready, the child
    /// says so on this socket and waits for the final spec and streams
    /// (`launch::Sandbox::start`). The socket closing first ends it.
    /// `parent_end` is the parent's end of that socket, which the child
    /// inherited with the clone and closes (or it would never see the
    /// parent go).
    Later { control: OwnedFd, parent_end: RawFd },
}

/// Entry point in the cloned child. Never returns.
pub fn run(spec: &ContainerSpec, channels: InitChannels) -> ! {
    // Kept open here (not inside setup) so a failure can still be reported
    // after the setup code has dropped its descriptors.
    let report_fd = channels.report.as_raw_fd();
    let report_keeper = channels.report;
    let channels = SetupChannels {
        go: channels.go,
        report_fd,
        cgroup_join: channels.cgroup_join,
        io: channels.io,
        gate: channels.gate,
    };
    let failure = match setup_and_exec(spec, channels) {
        Ok(never) => match never {},
        Err(failure) => failure,
    };
    if failure.step == UNCLAIMED {
        // A pooled sandbox that was never used: nothing to report.
        // SAFETY: see below.
        unsafe { libc::_exit(0) }
    }
    report(report_fd, &failure);
    drop(report_keeper);
    // SAFETY: _exit ends this forked child without running the parent's
    // atexit handlers or destructors twice.
    unsafe { libc::_exit(125) }
}

/// The step of the "failure" that ends a sandbox whose socket closed.
const UNCLAIMED: &str = "unclaimed";

pub(crate) fn report(fd: RawFd, failure: &InitFailure) {
    let bytes = serde_json::to_vec(failure).unwrap_or_default();
    // SAFETY: `fd` is the open report pipe this process owns.
    let mut file = std::mem::ManuallyDrop::new(unsafe {
        <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd)
    });
    let _ = file.write_all(&bytes);
}

pub(crate) enum Never {}

struct SetupChannels {
    go: OwnedFd,
    report_fd: RawFd,
    cgroup_join: Vec<OwnedFd>,
    io: InitIo,
    gate: Option<ExecGate>,
}

/// The container's streams once known.
struct Streams {
    stdin: OwnedFd,
    stdout: OwnedFd,
    stderr: OwnedFd,
    console: Option<OwnedFd>,
}

/// The container starts with every signal at its default disposition and
/// none blocked, whatever the monitor that cloned it had set (an ignored
/// SIGHUP, say, could not even be trapped by a shell script).
pub(crate) fn reset_signals() {
    for signal in nix::sys::signal::Signal::iterator() {
        if matches!(
            signal,
            nix::sys::signal::Signal::SIGKILL | nix::sys::signal::Signal::SIGSTOP
        ) {
            continue;
        }
        // SAFETY: SIG_DFL installs no handler code.
        unsafe {
            let _ = nix::sys::signal::signal(signal, nix::sys::signal::SigHandler::SigDfl);
        }
    }
    // Real-time signals 32..=64 are outside nix's Signal, and glibc's
    // sigaction refuses 32 and 33 (it reserves them), so ask the kernel.
    let default_action = [0u64; 4]; // handler SIG_DFL, no flags, empty mask
    for number in 32..=64 {
        // SAFETY: rt_sigaction reads a kernel sigaction (handler, flags,
        // restorer, 8-byte mask) from `default_action`; SIG_DFL runs no code.
        unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                number,
                default_action.as_ptr(),
                std::ptr::null_mut::<u64>(),
                8usize,
            )
        };
    }
    let _ = nix::sys::signal::SigSet::empty().thread_set_mask();
}

fn setup_and_exec(spec: &ContainerSpec, channels: SetupChannels) -> InitResult<Never> {
    // Before anything else: this process is a clone of a berth command that holds the host
    // user's environment, and it stays berth until execve (for good, as --init's reaper), so
    // nothing in the container may inspect it (init/conceal.rs).
    // It is the first process of a new pid namespace, so nothing sees it before this runs.
    conceal::forbid_inspection().map_err(|error| InitFailure::io("set PR_SET_DUMPABLE", error))?;
    conceal::InheritedStrings::wipe();
    set_container_umask();
    reset_signals();
    // First, so that everything below is charged to the container.
    crate::cgroups::join_self(&channels.cgroup_join)
        .map_err(|error| InitFailure::io("join the container's cgroup", error))?;
    drop(channels.cgroup_join);
    // The root and the standard mounts are built while the parent connects
    // the network.
    mounts::prepare_root(spec)?;
    network::loopback_up()?;
    if !spec.host_namespaces.uts {
        // With `--uts host` the names are the host's, and left alone (Docker's).
        nix::unistd::sethostname(&spec.hostname)
            .map_err(|error| InitFailure::nix("sethostname", error))?;
        set_domainname(&spec.domainname)?;
    }

    // Wait for the parent: network connected (and the cgroup joined, when
    // the parent placed this process).
    let mut go = std::fs::File::from(channels.go);
    let mut byte = [0u8; 1];
    let _ = go.read(&mut byte);
    drop(go);

    let (claimed, streams) = match channels.io {
        InitIo::Now {
            stdin,
            stdout,
            stderr,
            console,
        } => (
            None,
            Streams {
                stdin,
                stdout,
                stderr,
                console,
            },
        ),
        InitIo::Later {
            control,
            parent_end,
        } => {
            // SAFETY: closes this process's copy of the parent's end; no
            // Rust object in this process owns that descriptor number.
            unsafe { libc::close(parent_end) };
            let (claimed, streams) = wait_for_claim(spec, control)?;
            (Some(claimed), streams)
        }
    };
    let spec = claimed.as_ref().unwrap_or(spec);
    mounts::apply_user_mounts(spec)?;
    if spec.cgroup_namespace {
        // Only now, so the namespace's root is the container's cgroup.
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWCGROUP)
            .map_err(|error| InitFailure::nix("create the cgroup namespace", error))?;
    }
    mounts::mount_cgroups(spec)?;

    mounts::pivot_into(&spec.rootfs)?;
    mounts::after_pivot(spec)?;

    match &streams.console {
        Some(console) => {
            let slave = terminal(console, true, spec.process.console_size)?;
            set_stdio(&slave, &slave, &slave, true)?;
        }
        None => set_stdio(
            &streams.stdin,
            &streams.stdout,
            &streams.stderr,
            spec.process.tty,
        )?,
    }
    drop(streams);
    // Nothing berth opened may reach the container (its program or, with --init, the
    // reaper that stays): only the standard streams and the report pipe (close-on-exec) stay.
    let mut keep = vec![channels.report_fd];
    let gate = channels.gate.map(|gate| {
        keep.push(gate.fifo.as_raw_fd());
        // The caller's descriptors 3..3+N (they were open before berth opened any of its own).
        keep.extend((3..3 + gate.preserve_fds).filter_map(|fd| RawFd::try_from(fd).ok()));
        exec::Gate {
            fifo: gate.fifo,
            report_fd: channels.report_fd,
        }
    });
    conceal::close_descriptors_except(&keep);

    if spec.init && gate.is_none() {
        // berth's init stays pid 1; the command runs as its child.
        reaper::fork_and_reap(channels.report_fd)?;
    }
    exec::finish_and_exec(&spec.process, gate)
}

/// `setdomainname(2)`, which nix does not wrap; an empty name is the kernel's default `(none)`
/// and needs no call.
fn set_domainname(name: &str) -> InitResult<()> {
    if name.is_empty() {
        return Ok(());
    }
    // SAFETY: setdomainname reads `name.len()` bytes from the string's buffer.
    if unsafe { libc::setdomainname(name.as_ptr().cast(), name.len()) } != 0 {
        return Err(InitFailure::io(
            "setdomainname",
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// A container's processes start with umask 0022, whatever berth's own (0077 while it writes
/// its private state) or the caller's shell had: runc's default, so files a container creates
/// are as under Docker.
pub(crate) fn set_container_umask() {
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o022));
}

/// A pooled sandbox: says it is ready, then waits for the spec of the run
/// that claimed it and that run's streams.
fn wait_for_claim(
    prepared: &ContainerSpec,
    control: OwnedFd,
) -> InitResult<(ContainerSpec, Streams)> {
    let control = std::os::unix::net::UnixStream::from(control);
    (&control)
        .write_all(b"r")
        .map_err(|error| InitFailure::io(UNCLAIMED, error))?;
    let (body, mut fds) = match crate::handoff::receive_message(&control) {
        Ok(Some(message)) => message,
        Ok(None) => return Err(InitFailure::new(UNCLAIMED, "closed", 0)),
        Err(error) => return Err(InitFailure::io("receive the container's process", error)),
    };
    let claimed: ContainerSpec = serde_json::from_slice(&body)
        .map_err(|error| InitFailure::new("read the container's process", error, libc::EINVAL))?;
    same_sandbox(prepared, &claimed)?;
    let wrong_count = || {
        InitFailure::new(
            "receive the container's streams",
            "wrong number of descriptors",
            libc::EINVAL,
        )
    };
    let streams = if claimed.process.tty {
        let console = fds.pop().ok_or_else(wrong_count)?;
        #[allow(clippy::disallowed_methods)] // bare errno for InitFailure::io
        let stdio = || {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/null")
                .map(OwnedFd::from)
                .map_err(|error| InitFailure::io("open /dev/null", error))
        };
        Streams {
            stdin: stdio()?,
            stdout: stdio()?,
            stderr: stdio()?,
            console: Some(console),
        }
    } else {
        if fds.len() != 3 {
            return Err(wrong_count());
        }
        let stderr = fds.pop().ok_or_else(wrong_count)?;
        let stdout = fds.pop().ok_or_else(wrong_count)?;
        let stdin = fds.pop().ok_or_else(wrong_count)?;
        Streams {
            stdin,
            stdout,
            stderr,
            console: None,
        }
    };
    Ok((claimed, streams))
}

/// What the sandbox already built must be what the claiming run asks for.
fn same_sandbox(prepared: &ContainerSpec, claimed: &ContainerSpec) -> InitResult<()> {
    let same = prepared.rootfs == claimed.rootfs
        && prepared.overlay == claimed.overlay
        && prepared.hostname == claimed.hostname
        && prepared.network == claimed.network
        && prepared.etc_files == claimed.etc_files
        && prepared.privileged == claimed.privileged
        && prepared.shm_size == claimed.shm_size;
    if same {
        Ok(())
    } else {
        Err(InitFailure::new(
            "start the pooled container",
            "the run does not match the prepared sandbox",
            libc::EINVAL,
        ))
    }
}

/// Makes a pty in this mount namespace's devpts, of `size` (rows,
/// columns) when given, sends its master over `console`, and returns the
/// slave. With `console_device`, the slave also appears as /dev/console
/// (runc does the same).
pub(crate) fn terminal(
    console: &OwnedFd,
    console_device: bool,
    size: Option<(u16, u16)>,
) -> InitResult<OwnedFd> {
    let (master, slave) =
        crate::console::open_pty().map_err(|error| InitFailure::io("open a terminal", error))?;
    if let Some((rows, columns)) = size {
        crate::console::set_window_size(&slave, &crate::console::window(rows, columns));
    }
    if console_device {
        #[allow(clippy::disallowed_methods)] // bare errno for InitFailure::io
        let path = std::fs::read_link(format!("/proc/self/fd/{}", slave.as_raw_fd()))
            .map_err(|error| InitFailure::io("find the terminal's name", error))?;
        let console_path = std::path::Path::new("/dev/console");
        if !console_path.exists() {
            let _ = fs_err::File::create(console_path);
        }
        nix::mount::mount(
            Some(&path),
            console_path,
            None::<&str>,
            nix::mount::MsFlags::MS_BIND,
            None::<&str>,
        )
        .map_err(|error| InitFailure::nix("bind /dev/console", error))?;
    }
    crate::console::send_fd(console.as_raw_fd(), master.as_raw_fd())
        .map_err(|error| InitFailure::nix("send the terminal to berth", error))?;
    Ok(slave)
}

pub(crate) fn set_stdio(
    stdin: &OwnedFd,
    stdout: &OwnedFd,
    stderr: &OwnedFd,
    tty: bool,
) -> InitResult<()> {
    if tty {
        nix::unistd::setsid().map_err(|error| InitFailure::nix("setsid", error))?;
    }
    for (fd, target) in [(stdin, 0), (stdout, 1), (stderr, 2)] {
        // SAFETY: dup2 onto 0..2 replaces this process's standard streams
        // with descriptors it owns.
        if unsafe { libc::dup2(fd.as_raw_fd(), target) } < 0 {
            return Err(InitFailure::io(
                "dup2 stdio",
                std::io::Error::last_os_error(),
            ));
        }
    }
    if tty {
        // SAFETY: TIOCSCTTY on fd 0 (the pty slave) with argument 0 makes it
        // the controlling terminal of this new session.
        if unsafe { libc::ioctl(0, libc::TIOCSCTTY, 0) } < 0 {
            return Err(InitFailure::io(
                "set controlling terminal",
                std::io::Error::last_os_error(),
            ));
        }
    }
    Ok(())
}
