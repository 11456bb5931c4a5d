//! Framed messages that carry descriptors over a unix stream socket: an
//! 8-byte length sent with the descriptors (`SCM_RIGHTS`), then the body.
//! Used to hand a pooled container its process and stdio, and a pool
//! member the streams of the CLI that claimed it.

use std::io::{IoSlice, IoSliceMut, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

use nix::sys::socket::{recvmsg, sendmsg, ControlMessage, ControlMessageOwned, MsgFlags};

/// Bodies are small JSON documents; anything larger is refused.
pub const MAX_BODY: u64 = 16 << 20;
/// At most this many descriptors per message.
pub const MAX_FDS: usize = 8;

/// Sends `body` with `fds` (which stay open here).
pub fn send_message(socket: &UnixStream, body: &[u8], fds: &[RawFd]) -> std::io::Result<()> {
    let length = (body.len() as u64).to_le_bytes();
    let control = [ControlMessage::ScmRights(fds)];
    let control: &[ControlMessage] = if fds.is_empty() { &[] } else { &control };
    let sent = sendmsg::<()>(
        socket.as_raw_fd(),
        &[IoSlice::new(&length)],
        control,
        MsgFlags::MSG_NOSIGNAL,
        None,
    )?;
    if sent != length.len() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::WriteZero,
            "short write of a message header",
        ));
    }
    let mut writer = socket;
    writer.write_all(body)
}

/// Receives one message; `None` when the peer closed the socket first.
pub fn receive_message(socket: &UnixStream) -> std::io::Result<Option<(Vec<u8>, Vec<OwnedFd>)>> {
    let mut length = [0u8; 8];
    let mut space = nix::cmsg_space!([RawFd; MAX_FDS]);
    let (received, fds) = {
        let mut iov = [IoSliceMut::new(&mut length)];
        let message = recvmsg::<()>(
            socket.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        )?;
        let mut fds = Vec::new();
        for control in message.cmsgs()? {
            if let ControlMessageOwned::ScmRights(raw) = control {
                // SAFETY: the kernel installed these descriptors for us.
                fds.extend(
                    raw.into_iter()
                        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
                );
            }
        }
        (message.bytes, fds)
    };
    if received == 0 {
        return Ok(None);
    }
    let mut reader = socket;
    if received < length.len() {
        reader.read_exact(&mut length[received..])?;
    }
    let length = u64::from_le_bytes(length);
    if length > MAX_BODY {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("message of {length} bytes is too large"),
        ));
    }
    let mut body = vec![0u8; length as usize];
    reader.read_exact(&mut body)?;
    Ok(Some((body, fds)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_and_its_descriptors_arrive_together() {
        let (left, right) = UnixStream::pair().unwrap();
        let (read_end, write_end) = nix::unistd::pipe().unwrap();
        let body = vec![7u8; 100_000];
        let sender = std::thread::spawn(move || {
            send_message(&left, &body, &[write_end.as_raw_fd()]).unwrap();
            drop(write_end);
            left
        });
        let (received, fds) = receive_message(&right).unwrap().unwrap();
        let _left = sender.join().unwrap();
        assert_eq!(received.len(), 100_000);
        assert!(received.iter().all(|byte| *byte == 7));
        assert_eq!(fds.len(), 1);
        // The descriptor is the pipe's write end: what goes in comes out.
        nix::unistd::write(&fds[0], b"x").unwrap();
        let mut byte = [0u8; 1];
        nix::unistd::read(read_end.as_raw_fd(), &mut byte).unwrap();
        assert_eq!(&byte, b"x");
    }

    #[test]
    fn a_closed_peer_is_none_and_a_huge_length_is_refused() {
        let (left, right) = UnixStream::pair().unwrap();
        drop(left);
        assert!(receive_message(&right).unwrap().is_none());

        let (left, right) = UnixStream::pair().unwrap();
        (&left).write_all(&(MAX_BODY + 1).to_le_bytes()).unwrap();
        let error = receive_message(&right).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
    }
}
