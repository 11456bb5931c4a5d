//! `clone3(2)`: a child in new namespaces, optionally placed straight into
//! a cgroup v2 directory (`CLONE_INTO_CGROUP`), with a pidfd.

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use nix::unistd::Pid;

#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

const CLONE_PIDFD: u64 = 0x1000;
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// A pidfd for `pid` (`pidfd_open(2)`): readable once the process has
/// exited. The caller must know `pid` is not reused meanwhile (its unreaped
/// child, or a process it just saw alive).
pub fn pidfd_open(pid: i32) -> std::io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor
    // or -1; no memory is passed.
    let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if raw < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a new descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw as RawFd) })
}

pub enum Forked {
    Parent { child: Pid, pidfd: OwnedFd },
    Child,
}

/// Namespace flags (`libc::CLONE_NEW*`) for the new child.
pub fn clone3(namespaces: libc::c_int, cgroup: Option<BorrowedFd<'_>>) -> nix::Result<Forked> {
    let mut pidfd: RawFd = -1;
    let mut args = CloneArgs {
        flags: namespaces as u64 | CLONE_PIDFD,
        pidfd: &mut pidfd as *mut RawFd as u64,
        exit_signal: libc::SIGCHLD as u64,
        ..CloneArgs::default()
    };
    if let Some(cgroup) = cgroup {
        args.flags |= CLONE_INTO_CGROUP;
        args.cgroup = cgroup.as_raw_fd() as u64;
    }
    // SAFETY: clone3 without CLONE_VM behaves like fork: the child gets a
    // copy of this (single-threaded) process. `args` is a valid clone_args
    // of the size passed and `pidfd` outlives the call.
    let result = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &mut args as *mut CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    match result {
        -1 => Err(nix::Error::last()),
        0 => Ok(Forked::Child),
        pid => Ok(Forked::Parent {
            child: Pid::from_raw(pid as i32),
            // SAFETY: with CLONE_PIDFD the kernel stored a new descriptor
            // that nothing else owns.
            pidfd: unsafe { OwnedFd::from_raw_fd(pidfd) },
        }),
    }
}
