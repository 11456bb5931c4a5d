//! The loopback interface of a new network namespace starts down; Docker's
//! containers (even `--network none`) have it up.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::{InitFailure, InitResult};

pub(super) fn loopback_up() -> InitResult<()> {
    // SAFETY: socket() takes integer arguments and returns a new descriptor.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(InitFailure::io(
            "open a socket for lo",
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: the descriptor was just created and nothing else owns it.
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: ifreq is plain data; all-zero is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
        *slot = *byte as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS fills the flags of the named interface in `request`.
    if unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCGIFFLAGS, &mut request) } < 0 {
        return Err(InitFailure::io(
            "read lo flags",
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: the flags member of the union was just written by the kernel.
    let flags = unsafe { request.ifr_ifru.ifru_flags };
    if flags & libc::IFF_UP as libc::c_short != 0 {
        return Ok(());
    }
    request.ifr_ifru.ifru_flags = flags | libc::IFF_UP as libc::c_short;
    // SAFETY: SIOCSIFFLAGS reads the name and flags from `request`.
    if unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCSIFFLAGS, &request) } < 0 {
        return Err(InitFailure::io(
            "bring lo up",
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}
