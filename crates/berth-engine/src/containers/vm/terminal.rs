//! The host's end of a VM container's terminal (`-t`). The guest process has
//! a pty of the guest's, whose line discipline (echo, ^C, …) is the one
//! that counts; berth expects a pty master from the console socket as a
//! namespace container sends it. So the shim (for the first process) and
//! the exec relay (for an exec) make a host pty, send its master to berth
//! over the console socket, and relay bytes between its slave, put in raw
//! mode so they pass unchanged, and the guest. They are that slave's
//! session leader: a resize of the master sends them SIGWINCH, and they pass
//! the new size on to the guest's pty.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use nix::sys::termios::{cfmakeraw, tcgetattr, tcsetattr, SetArg};

/// A host pty whose master went to berth.
pub(crate) struct HostTerminal {
    pub slave: OwnedFd,
}

impl HostTerminal {
    /// Makes the pty (of `size` rows and columns when given), sends its
    /// master over `console`, and makes its slave this process's
    /// controlling terminal (a new session).
    pub(crate) fn open(
        console: &OwnedFd,
        size: Option<(u16, u16)>,
    ) -> Result<HostTerminal, String> {
        let failed = |what: &str, error: &dyn std::fmt::Display| {
            format!("failed to {what} the container's terminal: {error}")
        };
        let (master, slave) =
            berth_runtime::console::open_pty().map_err(|error| failed("open", &error))?;
        let mut attributes = tcgetattr(&slave).map_err(|error| failed("read", &error))?;
        cfmakeraw(&mut attributes);
        tcsetattr(&slave, SetArg::TCSANOW, &attributes).map_err(|error| failed("set", &error))?;
        if let Some((rows, columns)) = size {
            berth_runtime::console::set_window_size(
                &slave,
                &berth_runtime::console::window(rows, columns),
            );
        }
        nix::unistd::setsid().map_err(|error| failed("own", &error))?;
        // SAFETY: TIOCSCTTY with argument 0 makes the open pty slave the
        // controlling terminal of this process's new session.
        if unsafe { libc::ioctl(slave.as_raw_fd(), libc::TIOCSCTTY, 0) } < 0 {
            return Err(failed("own", &std::io::Error::last_os_error()));
        }
        berth_runtime::console::send_fd(console.as_raw_fd(), master.as_raw_fd())
            .map_err(|error| failed("hand over", &error))?;
        Ok(HostTerminal { slave })
    }

    /// The size berth last gave the master: (rows, columns).
    pub(crate) fn size(&self) -> Option<(u16, u16)> {
        berth_runtime::console::window_size(self.slave.as_fd())
            .map(|size| (size.ws_row, size.ws_col))
    }
}
