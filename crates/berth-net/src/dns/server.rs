//! The embedded DNS server: two non-blocking UDP sockets driven by the monitor's poll
//! loop, a table of queries forwarded upstream, nothing that blocks or spawns.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, RandomState};
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

use super::message::{
    build_error_reply, build_reply, set_id, truncate_reply, Header, Name, Query, Question, Rcode,
    RecordData, ReplyHead, CLASS_IN, TYPE_A, TYPE_AAAA, TYPE_PTR,
};
use super::Names;

/// How long a forwarded query waits for its upstream reply. Stub resolvers retry after
/// about 5 s themselves (resolv.conf(5) `timeout`), so a later reply is of no use.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(5);
/// Most forwarded queries in flight, as Docker's resolver (`maxConcurrent`).
const MAX_PENDING: usize = 1024;
/// Datagrams read from one socket per `handle_ready`, so a flood on one socket cannot
/// starve the other; poll reports the rest as still readable.
const DATAGRAMS_PER_CALL: usize = 64;
/// Largest UDP payload.
const BUFFER_LEN: usize = 65_535;
const OPCODE_QUERY: u8 = 0;

/// Why the DNS server could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum DnsError {
    #[error("failed to make the dns listen socket non-blocking")]
    ListenSocket {
        #[source]
        source: io::Error,
    },
    #[error("failed to open a socket to the upstream dns server {upstream}")]
    UpstreamSocket {
        upstream: SocketAddr,
        #[source]
        source: io::Error,
    },
}

/// Docker's embedded DNS server over one listen socket. See the [module](super) docs for
/// what it answers.
pub struct DnsServer {
    listen: UdpSocket,
    upstream: Option<Upstream>,
    /// Forwarded queries by the id they were sent upstream with.
    pending: HashMap<u16, PendingForward>,
    forward_timeout: Duration,
    ids: IdGenerator,
    buffer: Vec<u8>,
}

/// The upstream resolver and the socket, in the creating thread's namespace, that talks
/// to it.
#[derive(Debug)]
struct Upstream {
    socket: UdpSocket,
    address: SocketAddr,
}

/// A query waiting for its upstream reply.
#[derive(Debug)]
struct PendingForward {
    client: SocketAddr,
    client_id: u16,
    question: Question,
    reply_limit: usize,
    deadline: Instant,
}

impl DnsServer {
    /// `listen`: bound UDP socket (any namespace). `upstreams`: host resolvers. The
    /// upstream socket is created here, in the calling thread's namespace.
    ///
    /// Only the first upstream is used, as the brief for the monitor asks; queries it
    /// leaves unanswered expire and the client's own retry tries again.
    pub fn new(listen: UdpSocket, upstreams: Vec<SocketAddr>) -> Result<Self, DnsError> {
        listen
            .set_nonblocking(true)
            .map_err(|source| DnsError::ListenSocket { source })?;
        let upstream = upstreams.first().copied().map(Upstream::open).transpose()?;
        if upstreams.len() > 1 {
            tracing::debug!(
                ?upstreams,
                "forwarding dns queries to the first upstream only"
            );
        }
        Ok(Self {
            listen,
            upstream,
            pending: HashMap::new(),
            forward_timeout: FORWARD_TIMEOUT,
            ids: IdGenerator::new(),
            buffer: vec![0; BUFFER_LEN],
        })
    }

    /// Descriptors to poll for readability (the listen socket and the upstream socket).
    pub fn poll_fds(&self) -> Vec<BorrowedFd<'_>> {
        let mut fds = vec![self.listen.as_fd()];
        if let Some(upstream) = &self.upstream {
            fds.push(upstream.socket.as_fd());
        }
        fds
    }

    /// Drains whatever is readable on both sockets without blocking: answers local names,
    /// forwards the rest, relays upstream replies back to the asking client (matching by
    /// a fresh upstream query id, restoring the client's id), drops pending forwards
    /// older than the forward timeout (5 s). Never panics on malformed input (malformed →
    /// FORMERR reply when a header could be read, else dropped).
    pub fn handle_ready(&mut self, names: &dyn Names) {
        let mut buffer = std::mem::take(&mut self.buffer);
        // Replies first: they may complete forwards that would otherwise expire below.
        self.drain_upstream(&mut buffer);
        self.drain_clients(&mut buffer, names);
        self.buffer = buffer;
        self.expire(Instant::now());
    }

    /// How long until the next pending forward expires (for the poll timeout), None when
    /// nothing pending.
    pub fn next_timeout(&self) -> Option<Duration> {
        let now = Instant::now();
        self.pending
            .values()
            .map(|pending| pending.deadline)
            .min()
            .map(|deadline| deadline.saturating_duration_since(now))
    }

    fn drain_clients(&mut self, buffer: &mut [u8], names: &dyn Names) {
        for _ in 0..DATAGRAMS_PER_CALL {
            match self.listen.recv_from(buffer) {
                Ok((length, client)) => {
                    let packet = buffer.get(..length).unwrap_or_default();
                    self.handle_query(packet, client, names);
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => return,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => {
                    tracing::debug!(%error, "failed to receive a dns query");
                    return;
                }
            }
        }
    }

    fn drain_upstream(&mut self, buffer: &mut [u8]) {
        for _ in 0..DATAGRAMS_PER_CALL {
            let Some(upstream) = &self.upstream else {
                return;
            };
            match upstream.socket.recv_from(buffer) {
                Ok((length, source)) => {
                    let packet = buffer.get(..length).unwrap_or_default();
                    self.relay(packet, source);
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => return,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => {
                    tracing::debug!(%error, "failed to receive a dns reply from upstream");
                    return;
                }
            }
        }
    }

    fn handle_query(&mut self, packet: &[u8], client: SocketAddr, names: &dyn Names) {
        let Ok(header) = Header::parse(packet) else {
            tracing::debug!(%client, length = packet.len(), "dropping dns packet shorter than a header");
            return;
        };
        if header.is_response() {
            // Answering responses could start a loop between two servers.
            tracing::debug!(%client, "dropping dns response sent to the server");
            return;
        }
        if header.opcode() != OPCODE_QUERY {
            self.send_to_client(client, &build_error_reply(&header, Rcode::NotImplemented));
            return;
        }
        let query = match Query::parse(packet) {
            Ok(query) => query,
            Err(error) => {
                tracing::debug!(%client, %error, "malformed dns query");
                self.send_to_client(client, &build_error_reply(&header, Rcode::FormatError));
                return;
            }
        };
        match answer_locally(&query, names) {
            Some(reply) => self.send_to_client(client, &reply),
            None => self.forward(packet, query, client),
        }
    }

    fn forward(&mut self, packet: &[u8], query: Query, client: SocketAddr) {
        if self.upstream.is_none() {
            return self.fail(client, &query);
        }
        if self.pending.len() >= MAX_PENDING {
            tracing::warn!(%client, "too many dns queries waiting for upstream");
            return self.fail(client, &query);
        }
        let Some(id) = self.fresh_id() else {
            return self.fail(client, &query);
        };
        let mut forwarded = packet.to_vec();
        set_id(&mut forwarded, id);
        let sent = match &self.upstream {
            Some(upstream) => upstream.socket.send_to(&forwarded, upstream.address),
            None => return,
        };
        if let Err(error) = sent {
            tracing::debug!(%client, %error, "failed to forward a dns query upstream");
            return self.fail(client, &query);
        }
        self.pending.insert(
            id,
            PendingForward {
                client,
                client_id: query.header.id,
                reply_limit: query.reply_limit(),
                question: query.question,
                deadline: Instant::now() + self.forward_timeout,
            },
        );
    }

    /// An id no pending forward uses. Giving up after a few tries is only possible when
    /// nearly all ids are taken, which `MAX_PENDING` rules out.
    fn fresh_id(&mut self) -> Option<u16> {
        (0..16)
            .map(|_| self.ids.next())
            .find(|id| !self.pending.contains_key(id))
    }

    fn relay(&mut self, packet: &[u8], source: SocketAddr) {
        let Some(upstream) = &self.upstream else {
            return;
        };
        if source.ip() != upstream.address.ip() || source.port() != upstream.address.port() {
            tracing::debug!(%source, "dropping dns reply from an unexpected source");
            return;
        }
        let head = match ReplyHead::parse(packet) {
            Ok(head) if head.header.is_response() => head,
            Ok(_) => return,
            Err(error) => {
                tracing::debug!(%source, %error, "dropping malformed dns reply");
                return;
            }
        };
        let id = head.header.id;
        let Some(pending) = self.pending.get(&id) else {
            tracing::debug!(id, "dropping dns reply to no pending query");
            return;
        };
        if let Some(question) = &head.question {
            if !question.same_as(&pending.question) {
                tracing::debug!(id, "dropping dns reply to another question");
                return;
            }
        }
        let Some(pending) = self.pending.remove(&id) else {
            return;
        };
        tracing::trace!(
            id,
            client = %pending.client,
            rcode = head.header.rcode(),
            truncated = head.header.is_truncated(),
            "relaying dns reply"
        );
        let mut reply = if packet.len() > pending.reply_limit {
            truncate_reply(&head)
        } else {
            packet.to_vec()
        };
        set_id(&mut reply, pending.client_id);
        self.send_to_client(pending.client, &reply);
    }

    fn expire(&mut self, now: Instant) {
        let before = self.pending.len();
        self.pending.retain(|_, pending| pending.deadline > now);
        let expired = before - self.pending.len();
        if expired > 0 {
            tracing::debug!(expired, "dropped dns queries upstream did not answer");
        }
    }

    fn fail(&self, client: SocketAddr, query: &Query) {
        self.send_to_client(client, &build_reply(query, Rcode::ServerFailure, &[]));
    }

    fn send_to_client(&self, client: SocketAddr, reply: &[u8]) {
        // A full send buffer drops the reply; the client retries, as with any UDP loss.
        if let Err(error) = self.listen.send_to(reply, client) {
            tracing::debug!(%client, %error, "failed to send a dns reply");
        }
    }
}

impl fmt::Debug for DnsServer {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("DnsServer")
            .field("listen", &self.listen)
            .field("upstream", &self.upstream)
            .field("pending", &self.pending.len())
            .field("forward_timeout", &self.forward_timeout)
            .finish_non_exhaustive()
    }
}

impl Upstream {
    fn open(address: SocketAddr) -> Result<Self, DnsError> {
        let any = match address {
            SocketAddr::V4(_) => SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)),
            SocketAddr::V6(_) => SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0)),
        };
        let socket = UdpSocket::bind(any)
            .and_then(|socket| socket.set_nonblocking(true).map(|()| socket))
            .map_err(|source| DnsError::UpstreamSocket {
                upstream: address,
                source,
            })?;
        Ok(Self { socket, address })
    }
}

/// The answer to `query` from the container names, None when it is not about one.
fn answer_locally(query: &Query, names: &dyn Names) -> Option<Vec<u8>> {
    let question = &query.question;
    if question.class != CLASS_IN {
        return None;
    }
    match question.record_type {
        TYPE_A => {
            let addresses = names.lookup(&question.name.lookup_key()?)?;
            let records: Vec<_> = addresses.into_iter().map(RecordData::A).collect();
            Some(build_reply(query, Rcode::NoError, &records))
        }
        // A container without IPv6: "no AAAA" rather than NXDOMAIN keeps clients from
        // trying the next nameserver, where the name is unknown.
        TYPE_AAAA => {
            let key = question.name.lookup_key()?;
            names.lookup(&key)?;
            let records: Vec<_> = names
                .lookup_ipv6(&key)
                .into_iter()
                .map(RecordData::Aaaa)
                .collect();
            Some(build_reply(query, Rcode::NoError, &records))
        }
        TYPE_PTR => {
            let address = question.name.reverse_ipv4()?;
            let target = names.reverse(address)?;
            match Name::from_text(&target) {
                Ok(name) => Some(build_reply(query, Rcode::NoError, &[RecordData::Ptr(name)])),
                Err(error) => {
                    tracing::warn!(%address, name = target, %error, "container name is not a dns name");
                    None
                }
            }
        }
        _ => None,
    }
}

/// Upstream query ids. They must be unguessable so that an off-path host cannot forge
/// replies (RFC 5452): SipHash of a counter, keyed by `RandomState` from the operating
/// system's random source once per process, which needs neither a syscall per query nor
/// unsafe code.
#[derive(Debug)]
struct IdGenerator {
    keys: RandomState,
    counter: u64,
}

impl IdGenerator {
    fn new() -> Self {
        Self {
            keys: RandomState::new(),
            counter: 0,
        }
    }

    fn next(&mut self) -> u16 {
        self.counter = self.counter.wrapping_add(1);
        // The low 16 bits of a keyed hash are as unpredictable as any 16 bits of it.
        self.keys.hash_one(self.counter) as u16
    }
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
