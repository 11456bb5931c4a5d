//! `exec -it`: a process on a terminal that the CLI can detach from
//! (docker/cli's detach keys) while the process runs on, as dockerd's does.
//!
//! The process's parent is a waiter forked as `exec -d`'s is (a session of
//! its own, SIGINT and SIGHUP ignored), which reports the start and the
//! exit to the CLI, logs `exec_die`, and holds a copy of the terminal's
//! master. While the CLI is attached the waiter leaves the master alone;
//! once the CLI says it detached, or its end of the control socket closes
//! (it was killed), the waiter reads and discards what the process writes,
//! so the process neither blocks on a full terminal nor loses its terminal
//! (a last master closing hangs the terminal up and SIGHUPs its session).

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::unistd::{fork, ForkResult, Pid};

use super::error::ContainerError;
use super::exec::{prepare, ExecProcess, ExecRequest};
use super::monitor::protocol::{MonitorMessage, MonitorReceiver};
use crate::{Engine, EngineError};

/// The byte the CLI sends its waiter when the user detached.
const DETACHED: u8 = b'd';

/// A started `exec -it` process.
pub struct TerminalExec {
    pub pid: i32,
    /// The master of the process's terminal (the waiter holds a copy).
    pub master: OwnedFd,
    receiver: MonitorReceiver,
    /// The CLI's end of the socket to the waiter.
    control: OwnedFd,
    waiter: Pid,
}

impl TerminalExec {
    /// Waits for the process's exit (its waiter reports it) and returns its
    /// status, 128 + the signal when killed; 255 when the waiter died
    /// without a report.
    pub fn wait(mut self) -> i32 {
        let code = loop {
            match self.receiver.receive() {
                Some(MonitorMessage::Exited { code }) => break code,
                Some(_) => continue,
                None => break 255,
            }
        };
        let _ = nix::sys::wait::waitpid(self.waiter, None);
        code
    }

    /// The user detached: from now on the waiter drains the terminal, and
    /// the process runs on without this CLI.
    pub fn detach(self) {
        let _ = nix::unistd::write(&self.control, &[DETACHED]);
    }
}

/// Starts `request` (with `tty`) in container `text` under a waiter (see
/// the module's comment). Call it with no other thread running, as
/// [`super::start_container`].
pub fn exec_with_terminal(
    engine: &mut Engine,
    text: &str,
    request: &ExecRequest,
) -> Result<TerminalExec, EngineError> {
    let prepared = prepare(engine, text, request)?;
    let (status_read, status_write) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(ContainerError::Pipe)?;
    let (control, waiter_control) =
        berth_runtime::console::console_socket_pair().map_err(ContainerError::Pipe)?;
    // No SQLite connection may cross the fork (see Store::suspend).
    engine.store_mut().suspend()?;
    // SAFETY: the caller runs no other thread (see above), so the child
    // cannot inherit a lock held by another thread.
    let forked = unsafe { fork() }.map_err(|source| ContainerError::Fork {
        what: "the exec's waiter",
        source,
    })?;
    let ForkResult::Parent { child } = forked else {
        drop((status_read, control));
        let container_id = prepared.record.id.clone();
        super::monitor::run_monitor(status_write, &container_id, |sender| {
            let (console, console_theirs) =
                berth_runtime::console::console_socket_pair().map_err(ContainerError::Pipe)?;
            let null = || -> Result<OwnedFd, EngineError> {
                fs_err::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open("/dev/null")
                    .map(Into::into)
                    .map_err(|error| ContainerError::DevNull(error).into())
            };
            let stdio = berth_runtime::Stdio {
                stdin: null()?,
                stdout: null()?,
                stderr: null()?,
                console: Some(console_theirs),
            };
            let process = match prepared.launch(stdio) {
                Ok(process) => process,
                Err(error) => {
                    sender.send(&MonitorMessage::Failed {
                        message: crate::ErrorChain(&error).to_string(),
                        status: match &error {
                            EngineError::StartFailed(failure) => failure.status,
                            _ => 126,
                        },
                    });
                    return Ok(());
                }
            };
            let master = berth_runtime::console::receive_fd(console.as_raw_fd());
            if let Ok(master) = &master {
                let _ =
                    berth_runtime::console::send_fd(waiter_control.as_raw_fd(), master.as_raw_fd());
            }
            sender.send(&MonitorMessage::Started {
                pid: process.pid.as_raw(),
            });
            super::monitor::release_read_only_pages();
            let code = supervise(process, master.ok(), &waiter_control);
            sender.send(&MonitorMessage::Exited { code });
            Ok(())
        })
    };
    drop((status_write, waiter_control));
    let mut receiver = MonitorReceiver::new(status_read);
    let failure = |message: String, status| {
        let _ = nix::sys::wait::waitpid(child, None);
        Err(EngineError::StartFailed(super::StartFailure {
            message,
            status,
        }))
    };
    // The master comes first; a waiter that failed sends none, and its
    // report says why.
    let master = berth_runtime::console::receive_fd(control.as_raw_fd());
    match (receiver.receive(), master) {
        (Some(MonitorMessage::Started { pid }), Ok(master)) => Ok(TerminalExec {
            pid,
            master,
            receiver,
            control,
            waiter: child,
        }),
        (Some(MonitorMessage::Started { .. }), Err(_)) => {
            failure("the exec's terminal did not reach berth".to_owned(), 126)
        }
        (Some(MonitorMessage::Failed { message, status }), _) => failure(message, status),
        _ => failure("the exec's waiter exited without a report".to_owned(), 126),
    }
}

/// The waiter's part: waits for the process, draining its terminal once
/// the CLI is gone; returns its exit status (and logs `exec_die`).
fn supervise(process: ExecProcess, master: Option<OwnedFd>, control: &OwnedFd) -> i32 {
    let pidfd = super::stop::pidfd_open(process.pid.as_raw());
    let mut attached = true;
    let mut master = master;
    let mut buffer = vec![0u8; 16 * 1024];
    while let Some(pidfd) = &pidfd {
        let mut fds = vec![PollFd::new(pidfd.as_fd(), PollFlags::POLLIN)];
        let watched = if attached {
            Some(control.as_fd())
        } else {
            master.as_ref().map(AsFd::as_fd)
        };
        if let Some(fd) = watched {
            fds.push(PollFd::new(fd, PollFlags::POLLIN));
        }
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => {}
            Err(nix::Error::EINTR) => continue,
            Err(_) => break,
        }
        let ready = |fd: &PollFd<'_>| fd.revents().is_some_and(|events| !events.is_empty());
        let exited = ready(&fds[0]);
        let other = fds.get(1).is_some_and(ready);
        drop(fds);
        if exited {
            break;
        }
        if !other {
            continue;
        }
        if attached {
            // The detach byte, or the CLI's end closing: either way the
            // terminal is ours to drain from now on.
            let _ = nix::unistd::read(control.as_raw_fd(), &mut buffer[..1]);
            attached = false;
        } else if let Some(fd) = &master {
            match nix::unistd::read(fd.as_raw_fd(), &mut buffer) {
                Ok(read) if read > 0 => {}
                Err(nix::Error::EINTR | nix::Error::EAGAIN) => {}
                // EIO: every slave end is closed.
                _ => master = None,
            }
        }
    }
    process.wait()
}
