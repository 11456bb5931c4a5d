//! Real sockets, all on 127.0.0.1 with ephemeral ports: a client, the server under test
//! and a fake upstream, driven single-threaded by poll as the monitor drives them.

use super::*;
use std::cell::RefCell;
use std::net::Ipv4Addr;

use nix::poll::{poll, PollFd, PollFlags};

use crate::dns::message::{ReplyHead, TYPE_PTR};

const RECOGNISABLE: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 55);
const SPOOFED: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 66);
const TYPE_MX: u16 = 15;

/// Container names as the engine's store would give them, remembering what was asked.
#[derive(Default)]
struct FakeNames {
    asked: RefCell<Vec<String>>,
}

impl Names for FakeNames {
    fn lookup(&self, name: &str) -> Option<Vec<Ipv4Addr>> {
        self.asked.borrow_mut().push(name.to_owned());
        match name {
            "web" | "web.mynet" => Some(vec![Ipv4Addr::new(172, 18, 0, 2)]),
            "db" => Some(vec![
                Ipv4Addr::new(172, 18, 0, 3),
                Ipv4Addr::new(172, 18, 0, 4),
            ]),
            "many" => Some((1..=60).map(|last| Ipv4Addr::new(10, 9, 0, last)).collect()),
            _ => None,
        }
    }

    fn lookup_ipv6(&self, name: &str) -> Vec<std::net::Ipv6Addr> {
        match name {
            "db" => vec!["fd77:5::3".parse().unwrap()],
            _ => Vec::new(),
        }
    }

    fn reverse(&self, address: Ipv4Addr) -> Option<String> {
        (address == Ipv4Addr::new(172, 18, 0, 2)).then(|| "web.mynet".to_owned())
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Behaviour {
    /// Answers every query with one A record of `RECOGNISABLE`.
    Answer,
    /// Answers with 60 records, more than 512 bytes.
    AnswerBig,
    /// First sends a reply with the wrong id, and one with the right id from another
    /// socket, then the genuine answer.
    AnswerAfterSpoofs,
    /// Never answers.
    Silent,
}

struct FakeUpstream {
    socket: UdpSocket,
    behaviour: Behaviour,
    /// Every query received: upstream id and the packet.
    seen: Vec<(u16, Vec<u8>)>,
}

impl FakeUpstream {
    fn new(behaviour: Behaviour) -> Self {
        Self {
            socket: localhost_socket(),
            behaviour,
            seen: Vec::new(),
        }
    }

    fn address(&self) -> SocketAddr {
        self.socket.local_addr().unwrap()
    }

    fn serve(&mut self) {
        let mut buffer = [0u8; 4096];
        while let Ok((length, source)) = self.socket.recv_from(&mut buffer) {
            let packet = buffer[..length].to_vec();
            let mut query = Query::parse(&packet).unwrap();
            self.seen.push((query.header.id, packet));
            let reply = match self.behaviour {
                Behaviour::Silent => continue,
                Behaviour::Answer | Behaviour::AnswerAfterSpoofs => {
                    build_reply(&query, Rcode::NoError, &[RecordData::A(RECOGNISABLE)])
                }
                Behaviour::AnswerBig => {
                    query.udp_payload_size = Some(4096);
                    let records: Vec<_> = (0..60).map(|_| RecordData::A(RECOGNISABLE)).collect();
                    build_reply(&query, Rcode::NoError, &records)
                }
            };
            if self.behaviour == Behaviour::AnswerAfterSpoofs {
                let mut spoofed = build_reply(&query, Rcode::NoError, &[RecordData::A(SPOOFED)]);
                set_id(&mut spoofed, query.header.id.wrapping_add(1));
                self.socket.send_to(&spoofed, source).unwrap();
                set_id(&mut spoofed, query.header.id);
                localhost_socket().send_to(&spoofed, source).unwrap();
            }
            self.socket.send_to(&reply, source).unwrap();
        }
    }
}

fn localhost_socket() -> UdpSocket {
    let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    socket.set_nonblocking(true).unwrap();
    socket
}

fn server(upstream: Option<&FakeUpstream>) -> (DnsServer, SocketAddr) {
    let listen = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let address = listen.local_addr().unwrap();
    let upstreams = upstream.map(FakeUpstream::address).into_iter().collect();
    (DnsServer::new(listen, upstreams).unwrap(), address)
}

/// Polls every socket and lets each side act, until `client` receives a datagram or
/// `rounds` polls of at most 20 ms went by without one.
fn drive(
    server: &mut DnsServer,
    names: &FakeNames,
    client: &UdpSocket,
    mut upstream: Option<&mut FakeUpstream>,
    rounds: usize,
) -> Option<Vec<u8>> {
    let mut buffer = [0u8; 65_535];
    for _ in 0..rounds {
        {
            let mut fds: Vec<_> = server
                .poll_fds()
                .into_iter()
                .chain([client.as_fd()])
                .chain(upstream.as_ref().map(|upstream| upstream.socket.as_fd()))
                .map(|fd| PollFd::new(fd, PollFlags::POLLIN))
                .collect();
            poll(&mut fds, 20u16).unwrap();
        }
        server.handle_ready(names);
        if let Some(upstream) = upstream.as_mut() {
            upstream.serve();
        }
        if let Ok((length, source)) = client.recv_from(&mut buffer) {
            assert_eq!(source, client_peer(server));
            return Some(buffer[..length].to_vec());
        }
    }
    None
}

fn client_peer(server: &DnsServer) -> SocketAddr {
    server.listen.local_addr().unwrap()
}

/// Sends one query and returns the reply, failing the test when none comes within ~2 s.
fn ask(
    server: &mut DnsServer,
    address: SocketAddr,
    names: &FakeNames,
    upstream: Option<&mut FakeUpstream>,
    packet: &[u8],
) -> Vec<u8> {
    let client = localhost_socket();
    client.send_to(packet, address).unwrap();
    drive(server, names, &client, upstream, 100).expect("a reply")
}

fn query(id: u16, name: &str, record_type: u16, edns: Option<u16>) -> Vec<u8> {
    let mut packet = Vec::new();
    packet.extend_from_slice(&id.to_be_bytes());
    packet.extend_from_slice(&0x0100u16.to_be_bytes()); // RD
    packet.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, u8::from(edns.is_some())]);
    for label in name.split('.').filter(|label| !label.is_empty()) {
        packet.push(label.len() as u8);
        packet.extend_from_slice(label.as_bytes());
    }
    packet.push(0);
    packet.extend_from_slice(&record_type.to_be_bytes());
    packet.extend_from_slice(&CLASS_IN.to_be_bytes());
    if let Some(size) = edns {
        packet.extend_from_slice(&[0, 0, 41]);
        packet.extend_from_slice(&size.to_be_bytes());
        packet.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    }
    packet
}

/// The A addresses in a reply (answers only; other records ignored).
fn addresses(reply: &[u8]) -> Vec<Ipv4Addr> {
    let head = ReplyHead::parse(reply).unwrap();
    let mut position = head.question_end;
    let mut found = Vec::new();
    for _ in 0..head.header.answer_count {
        let (_, after_owner) = Name::parse(reply, position).unwrap();
        let fixed = &reply[after_owner..after_owner + 10];
        let record_type = u16::from_be_bytes([fixed[0], fixed[1]]);
        let length = usize::from(u16::from_be_bytes([fixed[8], fixed[9]]));
        let data = &reply[after_owner + 10..after_owner + 10 + length];
        if record_type == TYPE_A {
            found.push(Ipv4Addr::new(data[0], data[1], data[2], data[3]));
        }
        position = after_owner + 10 + length;
    }
    found
}

fn ttl_of_first_answer(reply: &[u8]) -> u32 {
    let head = ReplyHead::parse(reply).unwrap();
    let (_, after_owner) = Name::parse(reply, head.question_end).unwrap();
    let ttl = &reply[after_owner + 4..after_owner + 8];
    u32::from_be_bytes([ttl[0], ttl[1], ttl[2], ttl[3]])
}

#[test]
fn answers_container_names_like_docker() {
    let names = FakeNames::default();
    let (mut server, address) = server(None);
    let reply = ask(
        &mut server,
        address,
        &names,
        None,
        &query(0x5151, "web", TYPE_A, None),
    );
    let head = ReplyHead::parse(&reply).unwrap();
    assert_eq!(head.header.id, 0x5151);
    assert!(head.header.is_response());
    assert_eq!(head.header.rcode(), 0);
    assert_eq!(head.header.flags & 0x0400, 0, "AA clear");
    assert_eq!(head.header.flags & 0x0180, 0x0180, "RD echoed, RA set");
    assert_eq!(addresses(&reply), vec![Ipv4Addr::new(172, 18, 0, 2)]);
    assert_eq!(ttl_of_first_answer(&reply), 600);

    let reply = ask(
        &mut server,
        address,
        &names,
        None,
        &query(2, "db", TYPE_A, None),
    );
    assert_eq!(
        addresses(&reply),
        vec![Ipv4Addr::new(172, 18, 0, 3), Ipv4Addr::new(172, 18, 0, 4)]
    );
}

#[test]
fn matches_names_without_case_and_echoes_the_question() {
    let names = FakeNames::default();
    let (mut server, address) = server(None);
    let packet = query(3, "WeB.MyNet.", TYPE_A, None);
    let reply = ask(&mut server, address, &names, None, &packet);
    assert_eq!(addresses(&reply), vec![Ipv4Addr::new(172, 18, 0, 2)]);
    // Question bytes, mixed case included, come back as sent.
    let question_end = ReplyHead::parse(&reply).unwrap().question_end;
    assert_eq!(reply[12..question_end], packet[12..]);
    assert_eq!(names.asked.borrow().as_slice(), ["web.mynet"]);
}

#[test]
fn answers_aaaa_of_containers_with_no_records() {
    let names = FakeNames::default();
    let (mut server, address) = server(None);
    let reply = ask(
        &mut server,
        address,
        &names,
        None,
        &query(4, "web", TYPE_AAAA, None),
    );
    let head = ReplyHead::parse(&reply).unwrap();
    assert_eq!((head.header.rcode(), head.header.answer_count), (0, 0));
    assert_eq!(head.header.id, 4);
}

/// Docker 20.10 answers AAAA with a container's address on a network with
/// IPv6 (`nslookup -type=AAAA ip6c1 127.0.0.11`).
#[test]
fn answers_aaaa_of_containers_with_ipv6_addresses() {
    let names = FakeNames::default();
    let (mut server, address) = server(None);
    let reply = ask(
        &mut server,
        address,
        &names,
        None,
        &query(6, "db", TYPE_AAAA, None),
    );
    let head = ReplyHead::parse(&reply).unwrap();
    assert_eq!((head.header.rcode(), head.header.answer_count), (0, 1));
    let (_, after_owner) = Name::parse(&reply, head.question_end).unwrap();
    let fixed = &reply[after_owner..after_owner + 10];
    assert_eq!(u16::from_be_bytes([fixed[0], fixed[1]]), TYPE_AAAA);
    assert_eq!(u16::from_be_bytes([fixed[8], fixed[9]]), 16);
    let data: [u8; 16] = reply[after_owner + 10..after_owner + 26]
        .try_into()
        .unwrap();
    assert_eq!(
        std::net::Ipv6Addr::from(data),
        "fd77:5::3".parse::<std::net::Ipv6Addr>().unwrap()
    );
}

#[test]
fn answers_ptr_of_container_addresses() {
    let names = FakeNames::default();
    let (mut server, address) = server(None);
    let packet = query(5, "2.0.18.172.in-addr.arpa", TYPE_PTR, None);
    let reply = ask(&mut server, address, &names, None, &packet);
    let head = ReplyHead::parse(&reply).unwrap();
    assert_eq!((head.header.rcode(), head.header.answer_count), (0, 1));
    let data_start = head.question_end + 12;
    let (target, end) = Name::parse(&reply, data_start).unwrap();
    assert_eq!(end, reply.len());
    assert_eq!(target.lookup_key().as_deref(), Some("web.mynet"));
}

#[test]
fn sets_tc_on_local_answers_over_512_bytes() {
    let names = FakeNames::default();
    let (mut server, address) = server(None);
    let reply = ask(
        &mut server,
        address,
        &names,
        None,
        &query(6, "many", TYPE_A, None),
    );
    let head = ReplyHead::parse(&reply).unwrap();
    assert!(reply.len() <= 512);
    assert!(head.header.is_truncated());
    assert!(head.header.answer_count > 0 && head.header.answer_count < 60);

    let reply = ask(
        &mut server,
        address,
        &names,
        None,
        &query(6, "many", TYPE_A, Some(1232)),
    );
    let head = ReplyHead::parse(&reply).unwrap();
    assert!(!head.header.is_truncated());
    assert_eq!(head.header.answer_count, 60);
}

#[test]
fn forwards_other_names_with_fresh_ids_and_restores_the_client_id() {
    let names = FakeNames::default();
    let mut upstream = FakeUpstream::new(Behaviour::Answer);
    let (mut server, address) = server(Some(&upstream));
    assert_eq!(server.poll_fds().len(), 2);

    // Two clients using the same id at once: each must get its own answer, which needs
    // distinct ids upstream.
    let first = localhost_socket();
    let second = localhost_socket();
    first
        .send_to(&query(0x1234, "example.org", TYPE_A, None), address)
        .unwrap();
    second
        .send_to(&query(0x1234, "Unknownhost", TYPE_A, None), address)
        .unwrap();
    let first_reply = drive(&mut server, &names, &first, Some(&mut upstream), 100).unwrap();
    let second_reply = drive(&mut server, &names, &second, Some(&mut upstream), 100).unwrap();

    assert_eq!(upstream.seen.len(), 2);
    assert_ne!(upstream.seen[0].0, upstream.seen[1].0);
    for (reply, name) in [(first_reply, "example.org"), (second_reply, "unknownhost")] {
        let head = ReplyHead::parse(&reply).unwrap();
        assert_eq!(head.header.id, 0x1234);
        let question = head.question.unwrap();
        assert_eq!(question.name.lookup_key().as_deref(), Some(name));
        assert_eq!(addresses(&reply), vec![RECOGNISABLE]);
    }
    // The upstream got the client's packet unchanged but for the id.
    let (_, forwarded) = &upstream.seen[0];
    assert_eq!(
        forwarded[2..],
        query(0x1234, "example.org", TYPE_A, None)[2..]
    );
    assert_eq!(server.next_timeout(), None);
}

#[test]
fn forwards_what_is_not_about_containers() {
    let names = FakeNames::default();
    let mut upstream = FakeUpstream::new(Behaviour::Answer);
    let (mut server, address) = server(Some(&upstream));
    let questions = [
        query(1, "9.9.9.9.in-addr.arpa", TYPE_PTR, None),
        query(2, "example.org", TYPE_AAAA, None),
        query(3, "web", TYPE_MX, None),
    ];
    for (index, packet) in questions.iter().enumerate() {
        let reply = ask(&mut server, address, &names, Some(&mut upstream), packet);
        assert_eq!(ReplyHead::parse(&reply).unwrap().header.answer_count, 1);
        assert_eq!(upstream.seen.len(), index + 1);
    }
}

#[test]
fn answers_servfail_without_upstream() {
    let names = FakeNames::default();
    let (mut server, address) = server(None);
    assert_eq!(server.poll_fds().len(), 1);
    let reply = ask(
        &mut server,
        address,
        &names,
        None,
        &query(8, "example.org", TYPE_A, None),
    );
    let head = ReplyHead::parse(&reply).unwrap();
    assert_eq!(head.header.id, 8);
    assert_eq!(head.header.rcode(), 2);
    assert_eq!(
        head.question.unwrap().name.lookup_key().as_deref(),
        Some("example.org")
    );
}

#[test]
fn answers_malformed_queries_with_formerr_or_drops_them() {
    let names = FakeNames::default();
    let (mut server, address) = server(None);

    // A truncated question: FORMERR with the client's id.
    let mut packet = query(0x0F0F, "web", TYPE_A, None);
    packet.truncate(15);
    let reply = ask(&mut server, address, &names, None, &packet);
    let head = Header::parse(&reply).unwrap();
    assert_eq!((head.id, head.rcode(), reply.len()), (0x0F0F, 1, 12));

    // Two questions: FORMERR (miekg/dns under Docker does the same).
    let mut packet = query(0x0E0E, "web", TYPE_A, None);
    packet[5] = 2;
    packet.extend_from_slice(&query(0, "db", TYPE_A, None)[12..]);
    let reply = ask(&mut server, address, &names, None, &packet);
    assert_eq!(Header::parse(&reply).unwrap().rcode(), 1);

    // A pointer loop in the question: FORMERR.
    let mut packet = query(0x0D0D, "", TYPE_A, None)[..12].to_vec();
    packet.extend_from_slice(&[1, b'a', 0xC0, 12, 0, 1, 0, 1]);
    let reply = ask(&mut server, address, &names, None, &packet);
    assert_eq!(Header::parse(&reply).unwrap().rcode(), 1);

    // Another opcode (STATUS): NOTIMP.
    let mut packet = query(0x0C0C, "web", TYPE_A, None);
    packet[2] |= 2 << 3;
    let reply = ask(&mut server, address, &names, None, &packet);
    assert_eq!(Header::parse(&reply).unwrap().rcode(), 4);

    // Shorter than a header, or a response: no reply at all.
    let client = localhost_socket();
    client.send_to(&[0x12, 0x34, 0x01], address).unwrap();
    let mut response = query(0x0B0B, "web", TYPE_A, None);
    response[2] |= 0x80;
    client.send_to(&response, address).unwrap();
    client.send_to(&[], address).unwrap();
    assert_eq!(drive(&mut server, &names, &client, None, 10), None);
    assert!(names.asked.borrow().is_empty());
}

#[test]
fn truncates_upstream_replies_the_client_cannot_take() {
    let names = FakeNames::default();
    let mut upstream = FakeUpstream::new(Behaviour::AnswerBig);
    let (mut server, address) = server(Some(&upstream));

    let plain = query(10, "big.example", TYPE_A, None);
    let reply = ask(&mut server, address, &names, Some(&mut upstream), &plain);
    let head = ReplyHead::parse(&reply).unwrap();
    assert!(head.header.is_truncated());
    assert_eq!((head.header.id, head.header.answer_count), (10, 0));
    assert_eq!(reply.len(), plain.len());

    let edns = query(11, "big.example", TYPE_A, Some(4096));
    let reply = ask(&mut server, address, &names, Some(&mut upstream), &edns);
    let head = ReplyHead::parse(&reply).unwrap();
    assert!(reply.len() > 512);
    assert!(!head.header.is_truncated());
    assert_eq!((head.header.id, head.header.answer_count), (11, 60));
}

#[test]
fn ignores_replies_with_a_wrong_id_or_source() {
    let names = FakeNames::default();
    let mut upstream = FakeUpstream::new(Behaviour::AnswerAfterSpoofs);
    let (mut server, address) = server(Some(&upstream));
    let client = localhost_socket();
    client
        .send_to(&query(12, "example.org", TYPE_A, None), address)
        .unwrap();
    let reply = drive(&mut server, &names, &client, Some(&mut upstream), 100).unwrap();
    assert_eq!(addresses(&reply), vec![RECOGNISABLE]);
    assert_eq!(
        drive(&mut server, &names, &client, Some(&mut upstream), 10),
        None
    );
}

#[test]
fn expires_forwards_upstream_never_answers() {
    let names = FakeNames::default();
    let mut upstream = FakeUpstream::new(Behaviour::Silent);
    let (mut server, address) = server(Some(&upstream));
    server.forward_timeout = Duration::from_millis(200);
    assert_eq!(server.next_timeout(), None);

    let client = localhost_socket();
    client
        .send_to(&query(13, "example.org", TYPE_A, None), address)
        .unwrap();
    // Drive until the query reached the upstream (the client gets nothing meanwhile).
    for _ in 0..100 {
        if !upstream.seen.is_empty() {
            break;
        }
        assert_eq!(
            drive(&mut server, &names, &client, Some(&mut upstream), 1),
            None
        );
    }
    assert_eq!(upstream.seen.len(), 1);
    let timeout = server.next_timeout().expect("a pending forward");
    assert!(timeout <= Duration::from_millis(200));

    // Sleep in poll as the monitor would, until the deadline has passed.
    while server.next_timeout().is_some_and(|left| !left.is_zero()) {
        let left = server.next_timeout().unwrap_or_default();
        let wait = u16::try_from(left.as_millis() + 1).unwrap_or(u16::MAX);
        let mut fds: Vec<_> = server
            .poll_fds()
            .into_iter()
            .map(|fd| PollFd::new(fd, PollFlags::POLLIN))
            .collect();
        poll(&mut fds, wait).unwrap();
    }
    server.handle_ready(&names);
    assert_eq!(server.next_timeout(), None);

    // A reply after expiry goes nowhere.
    let (id, packet) = upstream.seen[0].clone();
    let late = build_reply(&Query::parse(&packet).unwrap(), Rcode::NoError, &[]);
    assert_eq!(Header::parse(&late).unwrap().id, id);
    let server_upstream = server
        .upstream
        .as_ref()
        .unwrap()
        .socket
        .local_addr()
        .unwrap();
    let server_upstream = SocketAddr::from((Ipv4Addr::LOCALHOST, server_upstream.port()));
    upstream.socket.send_to(&late, server_upstream).unwrap();
    assert_eq!(drive(&mut server, &names, &client, None, 10), None);
}
