//! `--init`: berth's own pid 1. It forks the command, forwards every
//! catchable signal to it, reaps all zombies (orphans reparent to pid 1 in a
//! pid namespace), and exits with the command's status.

use std::os::fd::RawFd;

use nix::sys::signal::{kill, SigSet, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{fork, ForkResult, Pid};

use super::{InitFailure, InitResult};

/// Returns in the child (which goes on to exec the command); the parent
/// never returns.
pub(super) fn fork_and_reap(report_fd: RawFd) -> InitResult<()> {
    let mut all = SigSet::all();
    all.remove(Signal::SIGKILL);
    all.remove(Signal::SIGSTOP);
    // Block first so no signal is lost between fork and sigwait.
    all.thread_block()
        .map_err(|error| InitFailure::nix("block signals", error))?;
    // SAFETY: this process is single-threaded (a clone of the monitor), so
    // fork cannot leave another thread's locks held in the child.
    match unsafe { fork() }.map_err(|error| InitFailure::nix("fork --init child", error))? {
        ForkResult::Child => {
            all.thread_unblock()
                .map_err(|error| InitFailure::nix("unblock signals", error))?;
            Ok(())
        }
        ForkResult::Parent { child } => {
            // The report pipe belongs to the child's exec now.
            let _ = nix::unistd::close(report_fd);
            let status = reap_until(child, &all);
            // SAFETY: _exit ends pid 1 (and with it the namespace) without
            // running destructors inherited from the monitor.
            unsafe { libc::_exit(status) }
        }
    }
}

fn reap_until(child: Pid, signals: &SigSet) -> i32 {
    loop {
        let Ok(signal) = signals.wait() else {
            continue;
        };
        if signal != Signal::SIGCHLD {
            let _ = kill(child, signal);
            continue;
        }
        loop {
            match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, code)) if pid == child => return code,
                Ok(WaitStatus::Signaled(pid, signal, _)) if pid == child => {
                    return 128 + signal as i32
                }
                Ok(WaitStatus::StillAlive) | Err(_) => break,
                Ok(_) => continue,
            }
        }
    }
}
