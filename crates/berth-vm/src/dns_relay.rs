//! The embedded DNS of a user-defined network, for a container in a VM.
//!
//! A namespace container asks 127.0.0.11:53 in its own network namespace,
//! where its monitor's DNS server listens. A VM container's processes ask
//! 127.0.0.11:53 in the guest, which is the guest's loopback: the agent
//! listens there ([`GuestDns`]) and sends each query over the agent channel
//! (`DnsQuery` frames, a relay id before the datagram); the shim
//! ([`HostDns`]) sends it to 127.0.0.11:53 in its own namespace, where the
//! container's DNS server listens as for a namespace container, and sends
//! the answer back (`DnsAnswer`) for the agent to return to the asker.
//! The guest's `/etc/resolv.conf` is the container's, as Docker writes it.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsFd, BorrowedFd};

use crate::protocol::{encode_frame, FrameKind, EMBEDDED_DNS};

/// The largest DNS datagram relayed (EDNS0 answers can exceed 512 bytes).
const MAX_DATAGRAM: usize = 4096;

/// Queries waiting for an answer, at most; the oldest is dropped beyond
/// (a client that never gets one retries, as over any lossy UDP path).
const MAX_PENDING: usize = 256;

fn relay_frame(kind: FrameKind, id: u32, datagram: &[u8], out: &mut Vec<u8>) {
    let mut payload = Vec::with_capacity(4 + datagram.len());
    payload.extend_from_slice(&id.to_be_bytes());
    payload.extend_from_slice(datagram);
    encode_frame(kind, &payload, out);
}

fn split_relay(payload: &[u8]) -> Option<(u32, &[u8])> {
    let (id, datagram) = payload.split_first_chunk::<4>()?;
    Some((u32::from_be_bytes(*id), datagram))
}

/// A DNS message's id: its first two bytes.
fn message_id(datagram: &[u8]) -> Option<u16> {
    datagram
        .first_chunk::<2>()
        .map(|id| u16::from_be_bytes(*id))
}

/// The guest's end: 127.0.0.11:53 in the guest.
#[derive(Debug)]
pub struct GuestDns {
    socket: UdpSocket,
    askers: HashMap<u32, SocketAddr>,
    next: u32,
}

impl GuestDns {
    /// Binds 127.0.0.11:53 (`lo` must be up).
    pub fn bind() -> io::Result<GuestDns> {
        let socket = UdpSocket::bind(EMBEDDED_DNS)?;
        socket.set_nonblocking(true)?;
        Ok(GuestDns {
            socket,
            askers: HashMap::new(),
            next: 0,
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }

    /// Every waiting query, as `DnsQuery` frames appended to `out`.
    pub fn take_queries(&mut self, out: &mut Vec<u8>) {
        let mut buffer = [0u8; MAX_DATAGRAM];
        while let Ok((length, asker)) = self.socket.recv_from(&mut buffer) {
            if self.askers.len() >= MAX_PENDING {
                if let Some(oldest) = self.askers.keys().min().copied() {
                    self.askers.remove(&oldest);
                }
            }
            let id = self.next;
            self.next = self.next.wrapping_add(1);
            self.askers.insert(id, asker);
            relay_frame(FrameKind::DnsQuery, id, &buffer[..length], out);
        }
    }

    /// A `DnsAnswer` frame's payload, sent to whoever asked.
    pub fn answer(&mut self, payload: &[u8]) {
        let Some((id, datagram)) = split_relay(payload) else {
            return;
        };
        if let Some(asker) = self.askers.remove(&id) {
            let _ = self.socket.send_to(datagram, asker);
        }
    }
}

/// The shim's end: a socket to 127.0.0.11:53 in the shim's namespace.
#[derive(Debug)]
pub struct HostDns {
    socket: UdpSocket,
    /// DNS message id → relay id of the query waiting for it.
    pending: HashMap<u16, u32>,
}

impl HostDns {
    pub fn connect() -> io::Result<HostDns> {
        let socket = UdpSocket::bind("127.0.0.1:0")?;
        socket.connect(EMBEDDED_DNS)?;
        socket.set_nonblocking(true)?;
        Ok(HostDns {
            socket,
            pending: HashMap::new(),
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }

    /// A `DnsQuery` frame's payload, sent on to the DNS server.
    pub fn query(&mut self, payload: &[u8]) {
        let Some((id, datagram)) = split_relay(payload) else {
            return;
        };
        let Some(message_id) = message_id(datagram) else {
            return;
        };
        if self.pending.len() >= MAX_PENDING {
            self.pending.clear();
        }
        self.pending.insert(message_id, id);
        let _ = self.socket.send(datagram);
    }

    /// Every answer that came, as `DnsAnswer` frames appended to `out`.
    pub fn take_answers(&mut self, out: &mut Vec<u8>) {
        let mut buffer = [0u8; MAX_DATAGRAM];
        while let Ok(length) = self.socket.recv(&mut buffer) {
            let datagram = &buffer[..length];
            let Some(message_id) = message_id(datagram) else {
                continue;
            };
            if let Some(id) = self.pending.remove(&message_id) {
                relay_frame(FrameKind::DnsAnswer, id, datagram, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::FrameDecoder;

    #[test]
    fn relay_frames_carry_the_id_before_the_datagram() {
        let mut out = Vec::new();
        relay_frame(FrameKind::DnsQuery, 7, b"\x12\x34query", &mut out);
        let mut decoder = FrameDecoder::default();
        decoder.push(&out);
        let frame = decoder.next_frame().unwrap().unwrap();
        assert_eq!(frame.kind, FrameKind::DnsQuery);
        assert_eq!(
            split_relay(&frame.payload),
            Some((7, &b"\x12\x34query"[..]))
        );
        assert_eq!(split_relay(b"abc"), None);
    }

    #[test]
    fn a_query_and_its_answer_travel_both_relays() {
        // A DNS "server" and both ends on loopback (the guest end bound to a
        // free port instead of 127.0.0.11:53).
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut host = HostDns {
            socket: UdpSocket::bind("127.0.0.1:0").unwrap(),
            pending: HashMap::new(),
        };
        host.socket.connect(server.local_addr().unwrap()).unwrap();
        let guest_socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        guest_socket.set_nonblocking(true).unwrap();
        let mut guest = GuestDns {
            socket: guest_socket,
            askers: HashMap::new(),
            next: 0,
        };
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client
            .send_to(b"\xab\xcdwhere is web", guest.socket.local_addr().unwrap())
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mut frames = Vec::new();
        guest.take_queries(&mut frames);
        let mut decoder = FrameDecoder::default();
        decoder.push(&frames);
        let query = decoder.next_frame().unwrap().unwrap();
        host.query(&query.payload);
        let mut buffer = [0u8; 64];
        let (length, from) = server.recv_from(&mut buffer).unwrap();
        assert_eq!(&buffer[..length], b"\xab\xcdwhere is web");
        server.send_to(b"\xab\xcdhere", from).unwrap();
        host.socket.set_nonblocking(false).unwrap();
        host.socket
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let length = host.socket.peek(&mut buffer).unwrap();
        assert!(length > 0);
        host.socket.set_nonblocking(true).unwrap();
        let mut answers = Vec::new();
        host.take_answers(&mut answers);
        decoder.push(&answers);
        let answer = decoder.next_frame().unwrap().unwrap();
        assert_eq!(answer.kind, FrameKind::DnsAnswer);
        guest.answer(&answer.payload);
        client
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let length = client.recv(&mut buffer).unwrap();
        assert_eq!(&buffer[..length], b"\xab\xcdhere");
    }
}
