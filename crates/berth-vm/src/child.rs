//! The processes berth starts for a VM (QEMU, virtiofsd): they inherit only
//! the descriptors named, die with the thread that started them, and are
//! killed and reaped when dropped.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// A running child process, killed and reaped when dropped.
#[derive(Debug)]
pub struct ChildProcess {
    child: Child,
    exited: Option<ExitStatus>,
    /// Readable once the process has exited (`pidfd_open`; None on a
    /// kernel without it).
    pidfd: Option<OwnedFd>,
}

impl ChildProcess {
    /// Starts `command`, which inherits the descriptors `inherit` (made
    /// close-on-exec in berth, so that no other child gets them) besides its
    /// stdio.
    ///
    /// The child gets `PR_SET_PDEATHSIG(SIGKILL)`: it dies with the thread
    /// that started it, so a killed berth leaves nothing running. That thread
    /// must therefore live as long as the VM (the monitor's main thread).
    pub fn spawn(command: &mut Command, inherit: &[RawFd]) -> std::io::Result<ChildProcess> {
        let inherit = inherit.to_vec();
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the closure runs in the forked child before exec and calls
        // only async-signal-safe functions (fcntl, sigemptyset, sigprocmask,
        // prctl, getppid, _exit) on
        // integers; the vector was allocated before the fork and is only read.
        unsafe {
            command.pre_exec(move || {
                for &fd in &inherit {
                    if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                // A VM shim blocks the signals it relays: its QEMU and
                // virtiofsd must not inherit that.
                let mut empty: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut empty);
                libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent may have died before the prctl took effect.
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        let child = command.spawn()?;
        // The child is unreaped: its pid cannot have been reused.
        let pidfd = berth_runtime::clone::pidfd_open(child.id() as i32).ok();
        Ok(ChildProcess {
            child,
            exited: None,
            pidfd,
        })
    }

    /// A descriptor that polls readable once the process has exited.
    pub fn exit_fd(&self) -> Option<BorrowedFd<'_>> {
        self.pidfd.as_ref().map(AsFd::as_fd)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The exit status once it has exited (reaping it), else `None`.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        if self.exited.is_none() {
            self.exited = self.child.try_wait().ok().flatten();
        }
        self.exited
    }

    /// Waits up to `timeout` for the process to exit.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// SIGKILL and reap.
    pub fn kill(&mut self) -> Option<ExitStatus> {
        if self.try_wait().is_none() {
            let _ = self.child.kill();
            self.exited = self.child.wait().ok();
        }
        self.exited
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
