//! `exec`: a new process inside a running container — its namespaces, its
//! cgroup, and the same identity/capability/seccomp steps as the first
//! process.

use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use nix::sched::{setns, CloneFlags};
use nix::unistd::{fork, ForkResult, Pid};

use crate::cgroups::CgroupManager;
use crate::init::{self, InitFailure};
use crate::launch::{LaunchError, Stdio};
use crate::spec::ProcessSpec;

/// Namespaces an exec joins, in the order joined (mnt last: joining it
/// changes what /proc paths mean, so all are opened first).
const NAMESPACES: &[(&str, CloneFlags)] = &[
    ("ipc", CloneFlags::CLONE_NEWIPC),
    ("uts", CloneFlags::CLONE_NEWUTS),
    ("net", CloneFlags::CLONE_NEWNET),
    ("cgroup", CloneFlags::CLONE_NEWCGROUP),
    ("mnt", CloneFlags::CLONE_NEWNS),
];

/// Starts `process` in the container whose first process is `container_pid`.
/// The caller becomes the parent (it can `waitpid` the returned pid).
/// Joining the pid namespace affects this process's future children only:
/// the caller must fork nothing else during the call (it runs no other
/// thread), and its children after the call are in its own pid namespace
/// again — the container's monitor runs health probes through here and
/// later clones the container's next run with a pid namespace of its own.
pub fn exec_in(
    container_pid: i32,
    process: &ProcessSpec,
    stdio: Stdio,
    cgroup: &dyn CgroupManager,
) -> Result<Pid, LaunchError> {
    exec_joining(container_pid, process, stdio, Target::Host { cgroup })
}

/// In a microVM's guest (berth-vm's agent): starts `process` in the
/// container whose first process is `container_pid`, which entered its root
/// at `root` with `chroot` (a guest container has pid and mount namespaces
/// of its own, and the guest itself for the rest). As [`exec_in`] otherwise.
pub fn exec_in_guest(
    container_pid: i32,
    process: &ProcessSpec,
    stdio: Stdio,
    root: &std::path::Path,
) -> Result<Pid, LaunchError> {
    exec_joining(container_pid, process, stdio, Target::Guest { root })
}

/// Where an exec's process goes besides the container's pid namespace.
#[derive(Clone, Copy)]
enum Target<'a> {
    /// A namespace container: its cgroup and every namespace of [`NAMESPACES`].
    Host { cgroup: &'a dyn CgroupManager },
    /// A guest container: its mount namespace, then `chroot` into its root
    /// (the namespace's root is the guest's own `/`).
    Guest { root: &'a std::path::Path },
}

impl Target<'_> {
    fn namespaces(&self) -> &'static [(&'static str, CloneFlags)] {
        match self {
            Target::Host { .. } => NAMESPACES,
            Target::Guest { .. } => &NAMESPACES[NAMESPACES.len() - 1..],
        }
    }
}

fn exec_joining(
    container_pid: i32,
    process: &ProcessSpec,
    stdio: Stdio,
    target: Target<'_>,
) -> Result<Pid, LaunchError> {
    let open = |name: &str| {
        fs_err::File::open(format!("/proc/{container_pid}/ns/{name}")).map_err(|source| {
            LaunchError::JoinNamespace {
                path: format!("/proc/{container_pid}/ns/{name}").into(),
                source,
            }
        })
    };
    let pid_namespace = open("pid")?;
    // The caller's own (active) pid namespace, which setns may always re-enter (kernel
    // `pidns_install`: the active namespace or a descendant of it).
    let own_pid_namespace =
        fs_err::File::open("/proc/self/ns/pid").map_err(|source| LaunchError::JoinNamespace {
            path: "/proc/self/ns/pid".into(),
            source,
        })?;
    let others = target
        .namespaces()
        .iter()
        .map(|(name, flags)| open(name).map(|file| (file.into_file(), *flags)))
        .collect::<Result<Vec<_>, _>>()?;
    // The child is inside the container's pid namespace from its first instruction: it must be
    // undumpable from birth (it inherits this), so that no container process ever reads its
    // environment or memory, opens its executable or ptraces it (init/conceal.rs).
    init::conceal::forbid_inspection().map_err(LaunchError::Conceal)?;
    setns(&pid_namespace, CloneFlags::CLONE_NEWPID).map_err(LaunchError::Clone)?;
    let forked = fork_child(process, others, stdio, target);
    // Whatever happened, later children of the caller are its own pid namespace's again.
    if let Err(error) = setns(&own_pid_namespace, CloneFlags::CLONE_NEWPID) {
        if let Ok(child) = &forked {
            // A caller left in the container's namespace must not report a process it
            // could not keep apart from its next clones.
            let _ = nix::sys::signal::kill(*child, nix::sys::signal::Signal::SIGKILL);
            let _ = nix::sys::wait::waitpid(*child, None);
        }
        return Err(LaunchError::Clone(error));
    }
    forked
}

/// The fork of [`exec_in`], with the caller's pid namespace for children already the
/// container's.
fn fork_child(
    process: &ProcessSpec,
    others: Vec<(std::fs::File, CloneFlags)>,
    stdio: Stdio,
    target: Target<'_>,
) -> Result<Pid, LaunchError> {
    let (report_read, report_write) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(LaunchError::Pipe)?;
    let hidden = init::conceal::InheritedStrings::hide();
    // SAFETY: the caller runs no other thread (see `exec_in`), so the child
    // cannot inherit a lock held by another thread.
    match unsafe { fork() }.map_err(LaunchError::Clone)? {
        ForkResult::Child => {
            hidden.discard();
            drop(report_read);
            let failure = match child(process, others, stdio, target, report_write.as_raw_fd()) {
                Ok(never) => match never {},
                Err(failure) => failure,
            };
            init::report(report_write.as_raw_fd(), &failure);
            // SAFETY: leave the forked child without running the parent's
            // destructors.
            unsafe { libc::_exit(126) }
        }
        ForkResult::Parent { child } => {
            drop(hidden);
            drop(report_write);
            drop(stdio);
            let mut bytes = Vec::new();
            std::fs::File::from(report_read)
                .read_to_end(&mut bytes)
                .map_err(LaunchError::Report)?;
            if bytes.is_empty() {
                return Ok(child);
            }
            let _ = nix::sys::wait::waitpid(child, None);
            let failure = serde_json::from_slice(&bytes).unwrap_or_else(|_| InitFailure {
                step: "exec".to_owned(),
                errno: 0,
                message: String::from_utf8_lossy(&bytes).into_owned(),
            });
            Err(LaunchError::Init(failure))
        }
    }
}

fn child(
    process: &ProcessSpec,
    namespaces: Vec<(std::fs::File, CloneFlags)>,
    stdio: Stdio,
    target: Target<'_>,
    report_fd: RawFd,
) -> Result<init::Never, InitFailure> {
    init::set_container_umask();
    init::reset_signals();
    if let Target::Host { cgroup } = target {
        let join = cgroup
            .open_self_join()
            .map_err(|error| InitFailure::new("join the container's cgroup", error, libc::EPERM))?;
        crate::cgroups::join_self(&join)
            .map_err(|error| InitFailure::io("join the container's cgroup", error))?;
    }
    for (file, flags) in namespaces {
        setns(&file, flags).map_err(|error| InitFailure::nix("join namespace", error))?;
    }
    if let Target::Guest { root } = target {
        nix::unistd::chroot(root).map_err(|error| InitFailure::nix("chroot", error))?;
    }
    match &stdio.console {
        Some(console) => {
            let slave = init::terminal(console, false, process.console_size)?;
            init::set_stdio(&slave, &slave, &slave, true)?;
        }
        None => {
            let stdin: &OwnedFd = &stdio.stdin;
            init::set_stdio(stdin, &stdio.stdout, &stdio.stderr, process.tty)?;
        }
    }
    drop(stdio);
    // Whatever the calling berth had open (its store, its sockets) closes now, not at execve.
    init::conceal::close_descriptors_except(&[report_fd]);
    let cwd = if process.cwd.is_empty() {
        "/"
    } else {
        process.cwd.as_str()
    };
    nix::unistd::chdir(cwd).map_err(|error| InitFailure::nix(&format!("chdir to {cwd}"), error))?;
    init::exec::finish_and_exec(process, None)
}
