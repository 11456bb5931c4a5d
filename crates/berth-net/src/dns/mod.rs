//! Docker's embedded DNS server for containers on user-defined networks.
//!
//! The container's monitor binds a UDP socket to 127.0.0.11:53 inside the container's
//! network namespace and hands it to a [`DnsServer`], which it drives from its poll loop:
//! container names and aliases are answered from [`Names`], everything else is forwarded
//! to the host's resolvers from a socket in the monitor's own namespace (so a host
//! resolver on 127.0.0.53 stays reachable). The behaviour follows moby's
//! `libnetwork/resolver.go`:
//!
//! - A for a known name: its addresses, TTL 600, RD echoed, RA set, AA clear.
//! - AAAA for a known name: its IPv6 addresses (on networks with IPv6), else NOERROR
//!   without answers, so clients do not fail over.
//! - PTR under in-addr.arpa for a container address: its name.
//! - Anything else, unknown single-label names included: forwarded to the first
//!   upstream, with a fresh random id; SERVFAIL when there is no upstream.
//! - Queries with other than one question: FORMERR; opcodes other than QUERY: NOTIMP;
//!   responses (QR set) and packets shorter than a header: dropped.
//! - Replies larger than the client accepts (512 bytes, or its EDNS size): TC set.
//!
//! Only UDP is served; a client told to retry over TCP gets no answer there.

mod message;
mod resolv_conf;
mod server;

pub use resolv_conf::upstreams_from_resolv_conf;
pub use server::{DnsError, DnsServer};

/// What the resolver knows locally (implemented by the engine over its store).
pub trait Names {
    /// IPv4 addresses for `name` (lowercase, no trailing dot), None when the name is not a
    /// container's.
    fn lookup(&self, name: &str) -> Option<Vec<std::net::Ipv4Addr>>;
    /// IPv6 addresses for a name `lookup` knows (its endpoints on networks with IPv6).
    fn lookup_ipv6(&self, _name: &str) -> Vec<std::net::Ipv6Addr> {
        Vec::new()
    }
    /// The name for a container address (PTR queries of in-addr.arpa), None when not a
    /// container's.
    fn reverse(&self, address: std::net::Ipv4Addr) -> Option<String>;
}
