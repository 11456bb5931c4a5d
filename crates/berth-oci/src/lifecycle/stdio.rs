//! Where a container's (or an exec's) streams come from: inherited from the caller (what
//! containerd's shim and dockerd pass), or a terminal whose master goes to a
//! `--console-socket`, or to berth itself (`run`/`exec` in the foreground with a terminal).

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

use berth_runtime::Stdio;

use crate::error::{OciError, Result};

#[derive(Debug)]
pub enum StdioSource {
    /// The caller's standard streams.
    Inherit,
    /// `process.terminal`: the master is sent over the socket at this path.
    ConsoleSocket(PathBuf),
    /// `process.terminal` with berth relaying: the master is sent over this socket.
    Console(OwnedFd),
}

/// The berth end of a terminal berth relays itself.
#[derive(Debug)]
pub struct Terminal {
    pub socket: OwnedFd,
}

fn duplicate(fd: i32, what: &'static str) -> Result<OwnedFd> {
    // SAFETY: fcntl(F_DUPFD_CLOEXEC) on a standard stream returns a new descriptor or -1.
    let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if copy < 0 {
        return Err(OciError::Sys {
            action: what,
            source: nix::Error::last(),
        });
    }
    // SAFETY: a descriptor fcntl just made, owned by no one else.
    Ok(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(copy) })
}

fn null() -> Result<OwnedFd> {
    fs_err::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .map(|file| OwnedFd::from(file.into_parts().0))
        .map_err(OciError::io("open", "/dev/null"))
}

impl StdioSource {
    /// The streams berth-runtime takes for this source.
    pub(crate) fn into_stdio(self, terminal: bool) -> Result<Stdio> {
        let console = match self {
            StdioSource::Inherit => {
                if terminal {
                    return Err(OciError::invalid(
                        "process.terminal",
                        "cannot allocate tty if berth will detach without setting console socket",
                    ));
                }
                return Ok(Stdio {
                    stdin: duplicate(0, "duplicate stdin")?,
                    stdout: duplicate(1, "duplicate stdout")?,
                    stderr: duplicate(2, "duplicate stderr")?,
                    console: None,
                });
            }
            StdioSource::ConsoleSocket(path) => {
                let stream = UnixStream::connect(&path)
                    .map_err(OciError::io("connect to the console socket", &path))?;
                OwnedFd::from(stream)
            }
            StdioSource::Console(fd) => fd,
        };
        if !terminal {
            return Err(OciError::invalid(
                "process.terminal",
                "a console socket was given but the process has no terminal",
            ));
        }
        let _ = console.as_raw_fd();
        Ok(Stdio {
            stdin: null()?,
            stdout: null()?,
            stderr: null()?,
            console: Some(console),
        })
    }
}
