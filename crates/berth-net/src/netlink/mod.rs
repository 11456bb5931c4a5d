//! A small synchronous rtnetlink client: what a container engine needs to
//! wire containers to a bridge (links, veth pairs across namespaces,
//! addresses, routes). One request at a time on one `NETLINK_ROUTE`
//! socket; see netlink(7) and rtnetlink(7).

mod addresses;
mod error;
mod links;
mod message;
mod routes;
#[cfg(test)]
mod tests;

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::sched::{setns, CloneFlags};
use nix::sys::socket::{
    connect, recv, send, socket, AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol,
    SockType,
};

pub use error::NetlinkError;
pub use links::Link;
pub use message::MalformedMessage;

use message::{
    parse_messages, Message, MessageBuilder, NLMSG_DONE, NLMSG_ERROR, NLMSG_NOOP, NLM_F_ACK,
    NLM_F_DUMP, NLM_F_REQUEST,
};

/// The kernel sizes a dump's datagrams after the reader's buffer, up to
/// 32 KiB (`netlink_recvmsg`); twice that leaves room for single replies.
const RECEIVE_BUFFER_LEN: usize = 64 * 1024;

/// A `NETLINK_ROUTE` socket in one network namespace: the one current
/// when it was opened, for its whole life.
pub struct Netlink {
    socket: OwnedFd,
    sequence: u32,
    buffer: Vec<u8>,
}

impl Netlink {
    /// Opens a socket in the calling thread's network namespace.
    pub fn open() -> Result<Self, NetlinkError> {
        let open_error = |errno: Errno| NetlinkError::Open {
            source: io::Error::from(errno),
        };
        let socket = socket(
            AddressFamily::Netlink,
            SockType::Raw,
            SockFlag::SOCK_CLOEXEC,
            SockProtocol::NetlinkRoute,
        )
        .map_err(open_error)?;
        // Port 0 is the kernel: connecting filters out anything else.
        connect(socket.as_raw_fd(), &NetlinkAddr::new(0, 0)).map_err(open_error)?;
        Ok(Self {
            socket,
            sequence: 0,
            buffer: vec![0; RECEIVE_BUFFER_LEN],
        })
    }

    /// Opens a socket in the network namespace `netns` refers to. A socket
    /// stays in the namespace it was created in, so a short-lived thread
    /// joins `netns` and creates it; the calling thread stays where it is.
    pub fn open_in(netns: BorrowedFd<'_>) -> Result<Self, NetlinkError> {
        let opened = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    setns(netns, CloneFlags::CLONE_NEWNET).map_err(|errno| {
                        NetlinkError::EnterNamespace {
                            source: io::Error::from(errno),
                        }
                    })?;
                    Self::open()
                })
                .join()
        });
        match opened {
            Ok(result) => result,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }

    /// Sends a request and collects the replies up to its acknowledgement.
    fn request(
        &mut self,
        operation: &'static str,
        message: MessageBuilder,
    ) -> Result<Vec<Message>, NetlinkError> {
        self.exchange(operation, message, NLM_F_REQUEST | NLM_F_ACK)
    }

    /// Sends a dump request and collects its replies up to `NLMSG_DONE`
    /// (the kernel does not acknowledge dumps).
    fn dump(
        &mut self,
        operation: &'static str,
        message: MessageBuilder,
    ) -> Result<Vec<Message>, NetlinkError> {
        self.exchange(operation, message, NLM_F_REQUEST | NLM_F_DUMP)
    }

    fn exchange(
        &mut self,
        operation: &'static str,
        message: MessageBuilder,
        flags: u16,
    ) -> Result<Vec<Message>, NetlinkError> {
        self.sequence = self.sequence.wrapping_add(1);
        let sequence = self.sequence;
        let datagram = message.finish(sequence, flags);
        let io_error = |errno: Errno| NetlinkError::Io {
            operation,
            source: io::Error::from(errno),
        };
        retry_eintr(|| send(self.socket.as_raw_fd(), &datagram, MsgFlags::empty()))
            .map_err(io_error)?;
        let mut replies = Vec::new();
        loop {
            let length = retry_eintr(|| {
                recv(
                    self.socket.as_raw_fd(),
                    &mut self.buffer,
                    MsgFlags::MSG_TRUNC,
                )
            })
            .map_err(io_error)?;
            let malformed = |source| NetlinkError::Malformed { operation, source };
            if length > self.buffer.len() {
                return Err(malformed(MalformedMessage("reply larger than the buffer")));
            }
            for reply in parse_messages(&self.buffer[..length]).map_err(malformed)? {
                // Left over from an earlier exchange that ended in an error.
                if reply.sequence != sequence {
                    continue;
                }
                match reply.kind {
                    NLMSG_NOOP => {}
                    NLMSG_ERROR | NLMSG_DONE => {
                        return match reply.error_code().map_err(malformed)? {
                            0 => Ok(replies),
                            code => Err(NetlinkError::kernel(operation, code.saturating_neg())),
                        };
                    }
                    _ => replies.push(reply),
                }
            }
        }
    }
}

/// Repeats `call` while a signal interrupts it.
fn retry_eintr<T>(mut call: impl FnMut() -> nix::Result<T>) -> nix::Result<T> {
    loop {
        match call() {
            Err(Errno::EINTR) => continue,
            result => return result,
        }
    }
}
