//! Starting a container's first process: the parent side of `clone3`.

use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

use nix::sys::wait::waitpid;
use nix::unistd::Pid;

use crate::cgroups::CgroupManager;
use crate::clone::{clone3, Forked};
use crate::init::{self, InitChannels, InitFailure, InitIo};
use crate::spec::{ContainerSpec, NetworkMode};

#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("failed to create a pipe")]
    Pipe(#[source] nix::Error),
    #[error("failed to create the container's namespaces")]
    Clone(#[source] nix::Error),
    #[error("failed to join the namespace {path:?}")]
    JoinNamespace {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to place the container in its cgroup")]
    Cgroup(#[source] crate::cgroups::CgroupError),
    #[error("failed to read the container's start report")]
    Report(#[source] std::io::Error),
    #[error("failed to make berth's process undumpable before it enters the container")]
    Conceal(#[source] std::io::Error),
    /// The caller's setup between clone and start (its network) failed.
    #[error("{0}")]
    Prepare(String),
    /// The container's own setup failed; the step says where.
    #[error("failed to start container process: {0}")]
    Init(InitFailure),
}

impl LaunchError {
    /// Docker's exit status for a `run` that failed here: 127 when the
    /// command was not found, 126 when it could not be invoked, else 125.
    pub fn exit_status(&self) -> i32 {
        match self {
            LaunchError::Init(failure) => failure.exit_status(),
            _ => 125,
        }
    }
}

/// Waits for the child `pid` and returns its exit status as a shell (and
/// Docker) reports it: the exit code, or 128 + the signal that killed it;
/// 255 when it cannot be waited for.
pub fn wait_exit_code(pid: Pid) -> i32 {
    loop {
        match waitpid(pid, None) {
            Ok(nix::sys::wait::WaitStatus::Exited(_, code)) => return code,
            Ok(nix::sys::wait::WaitStatus::Signaled(_, signal, _)) => return 128 + signal as i32,
            Ok(_) | Err(nix::Error::EINTR) => continue,
            Err(_) => return 255,
        }
    }
}

/// The container's standard streams as the first process gets them.
pub struct Stdio {
    pub stdin: OwnedFd,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
    /// With a terminal (`-t`): the socket over which the process sends the
    /// master of the pty it makes in its own devpts; its stdio is then the
    /// pty and the three descriptors above are unused.
    pub console: Option<OwnedFd>,
}

/// A running container process.
#[derive(Debug)]
pub struct Launched {
    pub pid: Pid,
    pub pidfd: OwnedFd,
}

/// Work done on a container between its clone and its start, given its pid:
/// its namespaces exist, its program has not started (its network is
/// connected here). It runs on a thread of its own while the process joins
/// its cgroup and builds its root.
pub type PrepareHook<'a> = &'a mut (dyn FnMut(Pid) -> Result<(), String> + Send);

/// Clones the container's first process into new namespaces, places it in
/// `cgroup`, runs `prepare`, lets it build its root and exec. Returns once
/// the program is running (or reports why it is not).
pub fn launch(
    spec: &ContainerSpec,
    stdio: Stdio,
    cgroup: &dyn CgroupManager,
    prepare: PrepareHook<'_>,
) -> Result<Launched, LaunchError> {
    let io = InitIo::Now {
        stdin: stdio.stdin,
        stdout: stdio.stdout,
        stderr: stdio.stderr,
        console: stdio.console,
    };
    let child = spawn_init(spec, io, cgroup, prepare, None)?;
    child.finish()
}

/// runc's `create`: as [`launch`], but the process stops before its program, just after
/// the program was found, and waits for `start` at `gate` ([`crate::init::ExecGate`]).
/// Returns once it waits there (or reports why it could not get there).
pub fn launch_gated(
    spec: &ContainerSpec,
    stdio: Stdio,
    cgroup: &dyn CgroupManager,
    prepare: PrepareHook<'_>,
    gate: crate::init::ExecGate,
) -> Result<Launched, LaunchError> {
    let io = InitIo::Now {
        stdin: stdio.stdin,
        stdout: stdio.stdout,
        stderr: stdio.stderr,
        console: stdio.console,
    };
    let child = spawn_init(spec, io, cgroup, prepare, Some(gate))?;
    child.finish()
}

/// A container's first process after `go`: building its root, then exec.
struct Spawned {
    pid: Pid,
    pidfd: OwnedFd,
    report: OwnedFd,
}

impl Spawned {
    /// Waits for the exec (the report pipe closing empty) or the failure.
    fn finish(self) -> Result<Launched, LaunchError> {
        match read_report(self.report) {
            Ok(()) => Ok(Launched {
                pid: self.pid,
                pidfd: self.pidfd,
            }),
            Err(error) => {
                kill_and_reap(self.pid);
                Err(error)
            }
        }
    }
}

fn kill_and_reap(pid: Pid) {
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
    let _ = waitpid(pid, None);
}

fn spawn_init(
    spec: &ContainerSpec,
    io: InitIo,
    cgroup: &dyn CgroupManager,
    prepare: PrepareHook<'_>,
    gate: Option<crate::init::ExecGate>,
) -> Result<Spawned, LaunchError> {
    let (go_read, go_write) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(LaunchError::Pipe)?;
    let (report_read, report_write) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(LaunchError::Pipe)?;

    let mut namespaces = libc::CLONE_NEWNS;
    // `--pid/--ipc/--uts host`: the child stays in the host's namespace of
    // that kind; `container:`: in the one entered here.
    let joined = &spec.joined_namespaces;
    if let Some(path) = &joined.ipc {
        join_namespace(path, nix::sched::CloneFlags::CLONE_NEWIPC)?;
    }
    for (shared, flag) in [
        (
            spec.host_namespaces.pid || joined.pid.is_some(),
            libc::CLONE_NEWPID,
        ),
        (
            spec.host_namespaces.ipc || joined.ipc.is_some(),
            libc::CLONE_NEWIPC,
        ),
        (spec.host_namespaces.uts, libc::CLONE_NEWUTS),
    ] {
        if !shared {
            namespaces |= flag;
        }
    }
    // The cgroup namespace is made by the child once it is in its cgroup.
    match &spec.network {
        NetworkMode::New => namespaces |= libc::CLONE_NEWNET,
        NetworkMode::Host => {}
        NetworkMode::Join(path) => join_namespace(path, nix::sched::CloneFlags::CLONE_NEWNET)?,
    }
    let cgroup_fd = cgroup.open_for_clone_into().map_err(LaunchError::Cgroup)?;
    // Without CLONE_INTO_CGROUP the child moves itself, which on v1 is
    // ~10 ms faster than the parent writing its pid (see `open_self_join`).
    let self_join = || cgroup.open_self_join().map_err(LaunchError::Cgroup);
    let mut cgroup_join = match cgroup_fd {
        Some(_) => Vec::new(),
        None => self_join()?,
    };
    let mut placed_by_clone = cgroup_fd.is_some();
    // The pid namespace only for the clone: a process whose children's pid
    // namespace is not its own cannot start threads (the cgroup placement
    // below may), so the monitor goes back to its own right after.
    let own_pid_namespace = match &joined.pid {
        Some(path) => {
            let own = PathBuf::from("/proc/self/ns/pid");
            let own = fs_err::File::open(&own)
                .map_err(|source| LaunchError::JoinNamespace { path: own, source })?;
            join_namespace(path, nix::sched::CloneFlags::CLONE_NEWPID)?;
            Some(own)
        }
        None => None,
    };
    let forked = match clone3(namespaces, cgroup_fd.as_ref().map(|fd| fd.as_fd())) {
        Ok(forked) => Ok(forked),
        // Kernels before 5.7 lack CLONE_INTO_CGROUP: join after clone.
        Err(nix::Error::EINVAL | nix::Error::E2BIG) if cgroup_fd.is_some() => {
            placed_by_clone = false;
            self_join().and_then(|join| {
                cgroup_join = join;
                clone3(namespaces, None).map_err(LaunchError::Clone)
            })
        }
        Err(error) => Err(LaunchError::Clone(error)),
    };
    // The monitor back in its own pid namespace whether the clone worked or
    // not (the child, if any, stays where it was made).
    if let Some(own) = own_pid_namespace {
        if !matches!(forked, Ok(Forked::Child)) {
            if let Err(error) = nix::sched::setns(own, nix::sched::CloneFlags::CLONE_NEWPID) {
                if let Ok(Forked::Parent { child, .. }) = forked {
                    kill_and_reap(child);
                }
                return Err(LaunchError::JoinNamespace {
                    path: PathBuf::from("/proc/self/ns/pid"),
                    source: error.into(),
                });
            }
        }
    }
    match forked? {
        Forked::Child => {
            drop((go_write, report_read));
            init::run(
                spec,
                InitChannels {
                    go: go_read,
                    report: report_write,
                    cgroup_join,
                    io,
                    gate,
                },
            )
        }
        Forked::Parent { child, pidfd } => {
            drop((go_read, report_write, io, gate));
            let placed = placed_by_clone || !cgroup_join.is_empty();
            drop(cgroup_join);
            match place_and_go(child, go_write, cgroup, placed, prepare) {
                Ok(()) => Ok(Spawned {
                    pid: child,
                    pidfd,
                    report: report_read,
                }),
                Err(error) => {
                    kill_and_reap(child);
                    Err(error)
                }
            }
        }
    }
}

fn place_and_go(
    child: Pid,
    go: OwnedFd,
    cgroup: &dyn CgroupManager,
    placed: bool,
    prepare: PrepareHook<'_>,
) -> Result<(), LaunchError> {
    if placed {
        // Nothing to overlap with: a thread would only cost its own start
        // (a stack mapped and faulted in, ~1 ms here) while the child waits.
        prepare(child).map_err(LaunchError::Prepare)?;
    } else {
        // The parent's cgroup write (slow on v1) overlaps the network setup.
        std::thread::scope(|scope| {
            let prepared = scope.spawn(|| prepare(child));
            let placed = cgroup.add_process(child).map_err(LaunchError::Cgroup);
            let prepared = prepared
                .join()
                .unwrap_or_else(|_| Err("the container's setup panicked".to_owned()));
            placed.and(prepared.map_err(LaunchError::Prepare))
        })?;
    }
    let mut go = std::fs::File::from(go);
    // The child may already have died; its report says why.
    let _ = go.write_all(b"g");
    Ok(())
}

/// Reads the child's report pipe to its end: empty means it exec'd.
fn read_report(report: OwnedFd) -> Result<(), LaunchError> {
    let mut bytes = Vec::new();
    std::fs::File::from(report)
        .read_to_end(&mut bytes)
        .map_err(LaunchError::Report)?;
    if bytes.is_empty() {
        return Ok(());
    }
    let failure = serde_json::from_slice(&bytes).unwrap_or_else(|_| InitFailure {
        step: "start".to_owned(),
        errno: 0,
        message: String::from_utf8_lossy(&bytes).into_owned(),
    });
    Err(LaunchError::Init(failure))
}

/// A pre-built, single-use container (the warm pool): namespaces made,
/// cgroup joined, root and standard mounts built, network connected; its
/// first process waits for the process to run. Dropping it unused ends it.
pub struct Sandbox {
    spawned: Option<Spawned>,
    control: UnixStream,
}

impl Sandbox {
    /// Builds a sandbox for `spec` (its process part is only a placeholder:
    /// the run that claims it brings its own, see [`Sandbox::start`]).
    pub fn prepare(
        spec: &ContainerSpec,
        cgroup: &dyn CgroupManager,
        prepare: PrepareHook<'_>,
    ) -> Result<Sandbox, LaunchError> {
        let (ours, theirs) = UnixStream::pair().map_err(LaunchError::Report)?;
        let io = InitIo::Later {
            control: OwnedFd::from(theirs),
            parent_end: ours.as_raw_fd(),
        };
        let spawned = spawn_init(spec, io, cgroup, prepare, None)?;
        let mut ready = [0u8; 1];
        match (&ours).read(&mut ready) {
            Ok(1) => Ok(Sandbox {
                spawned: Some(spawned),
                control: ours,
            }),
            // It failed before it was ready: its report says why.
            _ => Err(spawned.finish().err().unwrap_or_else(|| {
                LaunchError::Prepare("the sandbox exited before it was ready".to_owned())
            })),
        }
    }

    /// The sandbox's first process (the container's pid 1 once claimed).
    pub fn pid(&self) -> Option<Pid> {
        self.spawned.as_ref().map(|spawned| spawned.pid)
    }

    /// Readable when the sandbox's first process has died.
    pub fn pidfd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.spawned.as_ref().map(|spawned| spawned.pidfd.as_fd())
    }

    /// Runs `spec`'s process in the sandbox with `stdio`. `spec` must
    /// describe the same sandbox (root, mounts, network, hostname) with the
    /// claiming run's process and user mounts. Returns once it runs.
    pub fn start(mut self, spec: &ContainerSpec, stdio: Stdio) -> Result<Launched, LaunchError> {
        let spawned = self
            .spawned
            .take()
            .expect("a sandbox is started at most once (start takes it by value)");
        let body = serde_json::to_vec(spec)
            .map_err(|error| LaunchError::Prepare(format!("failed to encode the spec: {error}")))?;
        let fds: Vec<RawFd> = match &stdio.console {
            Some(console) => vec![console.as_raw_fd()],
            None => vec![
                stdio.stdin.as_raw_fd(),
                stdio.stdout.as_raw_fd(),
                stdio.stderr.as_raw_fd(),
            ],
        };
        let sent = crate::handoff::send_message(&self.control, &body, &fds);
        drop(stdio);
        if let Err(error) = sent {
            kill_and_reap(spawned.pid);
            return Err(LaunchError::Report(error));
        }
        spawned.finish()
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if let Some(spawned) = self.spawned.take() {
            kill_and_reap(spawned.pid);
        }
    }
}

/// `--network/--pid/--ipc container:NAME`: the child inherits the
/// namespace we enter here (the monitor is a throwaway process, so entering
/// it is harmless; a pid namespace is the one of the children it makes).
fn join_namespace(path: &std::path::Path, kind: nix::sched::CloneFlags) -> Result<(), LaunchError> {
    let file = fs_err::File::open(path).map_err(|source| LaunchError::JoinNamespace {
        path: path.to_owned(),
        source,
    })?;
    nix::sched::setns(file, kind).map_err(|error| LaunchError::JoinNamespace {
        path: path.to_owned(),
        source: std::io::Error::from(error),
    })
}
