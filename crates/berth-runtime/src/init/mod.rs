//! The container's first process: runs in the new namespaces between
//! `clone3` and `execve`. Every step that can fail reports which step and
//! why to the parent over a pipe, then exits; success is the pipe closing
//! on `execve` (it is close-on-exec).

mod devices;
pub(crate) mod exec;
mod mounts;
mod network;
mod reaper;

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use serde::{Deserialize, Serialize};

use crate::spec::ContainerSpec;

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

    pub(crate) fn nix(step: &str, error: nix::Error) -> Self {
        Self::new(step, error.desc(), error as i32)
    }

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
    pub stdin: OwnedFd,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
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
        stdin: channels.stdin,
        stdout: channels.stdout,
        stderr: channels.stderr,
    };
    let failure = match setup_and_exec(spec, channels) {
        Ok(never) => match never {},
        Err(failure) => failure,
    };
    report(report_fd, &failure);
    drop(report_keeper);
    // SAFETY: _exit ends this forked child without running the parent's
    // atexit handlers or destructors twice.
    unsafe { libc::_exit(125) }
}

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
    stdin: OwnedFd,
    stdout: OwnedFd,
    stderr: OwnedFd,
}

fn setup_and_exec(spec: &ContainerSpec, channels: SetupChannels) -> InitResult<Never> {
    // The root and the standard mounts are built while the parent places
    // this process in its cgroup (on cgroup v1 that write waits for an RCU
    // grace period; doing both at once hides one behind the other).
    mounts::prepare_root(spec)?;
    network::loopback_up()?;
    nix::unistd::sethostname(&spec.hostname)
        .map_err(|error| InitFailure::nix("sethostname", error))?;

    // Wait for the parent: cgroup joined.
    let mut go = std::fs::File::from(channels.go);
    let mut byte = [0u8; 1];
    let _ = go.read(&mut byte);
    drop(go);
    if spec.cgroup_namespace {
        // Only now, so the namespace's root is the container's cgroup.
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWCGROUP)
            .map_err(|error| InitFailure::nix("create the cgroup namespace", error))?;
    }
    mounts::mount_cgroups(spec)?;

    mounts::pivot_into(&spec.rootfs)?;
    mounts::after_pivot(spec)?;

    set_stdio(
        &channels.stdin,
        &channels.stdout,
        &channels.stderr,
        spec.process.tty,
    )?;
    drop((channels.stdin, channels.stdout, channels.stderr));

    if spec.init {
        // berth's init stays pid 1; the command runs as its child.
        reaper::fork_and_reap(channels.report_fd)?;
    }
    exec::finish_and_exec(&spec.process)
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
