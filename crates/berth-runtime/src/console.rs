//! Terminals for `-t`: the pseudo-terminal is made inside the container's
//! own devpts (so `tty` and `/dev/pts/N` mean something there), and the
//! master end is handed back to berth over a unix socket (SCM_RIGHTS), as
//! runc's console socket does.

use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};

use nix::sys::socket::{
    recvmsg, sendmsg, socketpair, AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags,
    SockFlag, SockType,
};

/// A connected pair: the container end sends, berth's end receives.
pub fn console_socket_pair() -> nix::Result<(OwnedFd, OwnedFd)> {
    socketpair(
        AddressFamily::Unix,
        SockType::Stream,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
}

/// Opens a new pty from `/dev/ptmx` of the current mount namespace; returns
/// (master, slave).
pub fn open_pty() -> std::io::Result<(OwnedFd, OwnedFd)> {
    // SAFETY: posix_openpt takes flags and returns a new descriptor.
    let master = unsafe { libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC) };
    if master < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the descriptor was just created and nothing else owns it.
    let master = unsafe { OwnedFd::from_raw_fd(master) };
    // SAFETY: grantpt takes an open pty master.
    let granted = unsafe { libc::grantpt(master.as_raw_fd()) } == 0;
    // SAFETY: unlockpt takes an open pty master.
    if !granted || unsafe { libc::unlockpt(master.as_raw_fd()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // TIOCGPTPEER opens the slave through the master, with no path lookup
    // (so it is the right devpts instance whatever /dev/pts is).
    // SAFETY: TIOCGPTPEER takes open flags and returns a new descriptor.
    let slave = unsafe {
        libc::ioctl(
            master.as_raw_fd(),
            libc::TIOCGPTPEER,
            libc::O_RDWR | libc::O_NOCTTY,
        )
    };
    if slave < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the descriptor was just created and nothing else owns it.
    Ok((master, unsafe { OwnedFd::from_raw_fd(slave) }))
}

pub fn send_fd(socket: RawFd, fd: RawFd) -> nix::Result<()> {
    let fds = [fd];
    let control = [ControlMessage::ScmRights(&fds)];
    sendmsg::<()>(
        socket,
        &[IoSlice::new(b"m")],
        &control,
        MsgFlags::empty(),
        None,
    )
    .map(|_| ())
}

pub fn receive_fd(socket: RawFd) -> nix::Result<OwnedFd> {
    let mut byte = [0u8; 1];
    let mut iov = [IoSliceMut::new(&mut byte)];
    let mut space = nix::cmsg_space!(RawFd);
    let message = recvmsg::<()>(
        socket,
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC,
    )?;
    for control in message.cmsgs()? {
        if let ControlMessageOwned::ScmRights(fds) = control {
            if let Some(fd) = fds.first() {
                // SAFETY: the kernel installed this descriptor for us.
                return Ok(unsafe { OwnedFd::from_raw_fd(*fd) });
            }
        }
    }
    Err(nix::Error::ENOMSG)
}

/// A window of `rows` by `columns` characters.
pub fn window(rows: u16, columns: u16) -> libc::winsize {
    libc::winsize {
        ws_row: rows,
        ws_col: columns,
        ws_xpixel: 0,
        ws_ypixel: 0,
    }
}

/// The window size of a terminal, if `fd` is one.
pub fn window_size(fd: impl AsFd) -> Option<libc::winsize> {
    let mut size = std::mem::MaybeUninit::<libc::winsize>::uninit();
    // SAFETY: TIOCGWINSZ fills one winsize struct.
    let result =
        unsafe { libc::ioctl(fd.as_fd().as_raw_fd(), libc::TIOCGWINSZ, size.as_mut_ptr()) };
    // SAFETY: on success the kernel initialised the struct.
    (result == 0).then(|| unsafe { size.assume_init() })
}

/// Sets a terminal's window size (its foreground process gets SIGWINCH).
pub fn set_window_size(fd: impl AsFd, size: &libc::winsize) {
    // SAFETY: TIOCSWINSZ reads one winsize struct.
    unsafe {
        libc::ioctl(
            fd.as_fd().as_raw_fd(),
            libc::TIOCSWINSZ,
            size as *const libc::winsize,
        )
    };
}
