use super::*;

/// A query as a stub resolver sends it: RD set, one question, optionally an OPT record.
fn query_packet(id: u16, name: &str, record_type: u16, edns: Option<u16>) -> Vec<u8> {
    let mut packet = Vec::new();
    packet.extend_from_slice(&id.to_be_bytes());
    packet.extend_from_slice(&FLAG_RECURSION_DESIRED.to_be_bytes());
    packet.extend_from_slice(&1u16.to_be_bytes());
    packet.extend_from_slice(&[0, 0, 0, 0]);
    packet.extend_from_slice(&u16::from(edns.is_some()).to_be_bytes());
    Name::from_text(name).unwrap().write(&mut packet);
    packet.extend_from_slice(&record_type.to_be_bytes());
    packet.extend_from_slice(&CLASS_IN.to_be_bytes());
    if let Some(size) = edns {
        packet.push(0); // root owner
        packet.extend_from_slice(&TYPE_OPT.to_be_bytes());
        packet.extend_from_slice(&size.to_be_bytes());
        packet.extend_from_slice(&[0, 0, 0, 0, 0, 0]); // extended rcode/flags, rdlength 0
    }
    packet
}

fn header_only(id: u16, flags: u16, counts: [u16; 4]) -> Vec<u8> {
    let mut packet = Vec::new();
    packet.extend_from_slice(&id.to_be_bytes());
    packet.extend_from_slice(&flags.to_be_bytes());
    for count in counts {
        packet.extend_from_slice(&count.to_be_bytes());
    }
    packet
}

/// The answers of a reply built by `build_reply` (owner pointer, fixed fields, data).
fn answers(reply: &[u8]) -> Vec<(u16, u32, Vec<u8>)> {
    let head = ReplyHead::parse(reply).unwrap();
    let mut position = head.question_end;
    let mut found = Vec::new();
    for _ in 0..head.header.answer_count {
        assert_eq!(reply[position..position + 2], QUESTION_NAME_POINTER);
        let mut reader = Reader::at(reply, position + 2);
        let record_type = reader.u16().unwrap();
        assert_eq!(reader.u16().unwrap(), CLASS_IN);
        let ttl = reader.u32().unwrap();
        let length = usize::from(reader.u16().unwrap());
        let data = reply[reader.position..reader.position + length].to_vec();
        position = reader.position + length;
        found.push((record_type, ttl, data));
    }
    assert_eq!(position, reply.len());
    found
}

#[test]
fn parses_a_plain_query() {
    let query = Query::parse(&query_packet(0xBEEF, "Web.MyNet", TYPE_A, None)).unwrap();
    assert_eq!(query.header.id, 0xBEEF);
    assert!(!query.header.is_response());
    assert_eq!(query.header.opcode(), 0);
    assert_eq!(query.question.record_type, TYPE_A);
    assert_eq!(query.question.class, CLASS_IN);
    assert_eq!(
        query.question.name.lookup_key().as_deref(),
        Some("web.mynet")
    );
    assert_eq!(query.udp_payload_size, None);
    assert_eq!(query.reply_limit(), 512);
}

#[test]
fn reads_the_edns_payload_size() {
    let query = Query::parse(&query_packet(1, "web", TYPE_A, Some(1232))).unwrap();
    assert_eq!(query.udp_payload_size, Some(1232));
    assert_eq!(query.reply_limit(), 1232);
    let small = Query::parse(&query_packet(1, "web", TYPE_A, Some(100))).unwrap();
    assert_eq!(small.reply_limit(), 512);
}

#[test]
fn builds_an_answer_like_docker() {
    let query = Query::parse(&query_packet(7, "Web", TYPE_A, None)).unwrap();
    let addresses = [Ipv4Addr::new(172, 18, 0, 2), Ipv4Addr::new(172, 18, 0, 3)];
    let records: Vec<_> = addresses.iter().copied().map(RecordData::A).collect();
    let reply = build_reply(&query, Rcode::NoError, &records);

    let head = ReplyHead::parse(&reply).unwrap();
    assert_eq!(head.header.id, 7);
    assert!(head.header.is_response());
    assert!(!head.header.is_truncated());
    assert_eq!(head.header.rcode(), 0);
    assert_eq!(
        head.header.flags & FLAG_RECURSION_DESIRED,
        FLAG_RECURSION_DESIRED
    );
    assert_eq!(
        head.header.flags & FLAG_RECURSION_AVAILABLE,
        FLAG_RECURSION_AVAILABLE
    );
    assert_eq!(head.header.flags & 0x0400, 0, "AA must not be set");
    // The question is echoed with the case the client used (0x20 randomisation).
    assert_eq!(head.question, Some(query.question.clone()));
    let found = answers(&reply);
    assert_eq!(
        found,
        vec![
            (TYPE_A, 600, vec![172, 18, 0, 2]),
            (TYPE_A, 600, vec![172, 18, 0, 3])
        ]
    );
}

#[test]
fn builds_an_empty_answer_and_a_ptr_answer() {
    let query = Query::parse(&query_packet(9, "web", TYPE_AAAA, None)).unwrap();
    let reply = build_reply(&query, Rcode::NoError, &[]);
    let head = ReplyHead::parse(&reply).unwrap();
    assert_eq!((head.header.rcode(), head.header.answer_count), (0, 0));
    assert_eq!(head.question_end, reply.len());

    let query = Query::parse(&query_packet(9, "2.0.18.172.in-addr.arpa", TYPE_PTR, None)).unwrap();
    let target = Name::from_text("web.mynet").unwrap();
    let reply = build_reply(&query, Rcode::NoError, &[RecordData::Ptr(target)]);
    let found = answers(&reply);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, TYPE_PTR);
    assert_eq!(found[0].2, b"\x03web\x05mynet\x00".to_vec());
}

#[test]
fn sets_tc_when_answers_do_not_fit() {
    let query = Query::parse(&query_packet(3, "many", TYPE_A, None)).unwrap();
    let records: Vec<_> = (0..100u8)
        .map(|last| RecordData::A(Ipv4Addr::new(10, 0, 0, last)))
        .collect();
    let reply = build_reply(&query, Rcode::NoError, &records);
    assert!(reply.len() <= 512);
    let head = ReplyHead::parse(&reply).unwrap();
    assert!(head.header.is_truncated());
    // 12 header + 10 question ("many" + root + type + class), 16 bytes per answer.
    assert_eq!(usize::from(head.header.answer_count), (512 - 12 - 10) / 16);
    assert_eq!(answers(&reply).len(), usize::from(head.header.answer_count));

    let query = Query::parse(&query_packet(3, "many", TYPE_A, Some(4096))).unwrap();
    let reply = build_reply(&query, Rcode::NoError, &records);
    let head = ReplyHead::parse(&reply).unwrap();
    assert!(!head.header.is_truncated());
    assert_eq!(head.header.answer_count, 100);
}

#[test]
fn builds_header_only_error_replies() {
    let header = Header::parse(&header_only(0x4242, 0x2900, [2, 0, 0, 0])).unwrap();
    assert_eq!(header.opcode(), 5);
    let reply = build_error_reply(&header, Rcode::FormatError);
    let parsed = Header::parse(&reply).unwrap();
    assert_eq!(reply.len(), HEADER_LEN);
    assert_eq!(parsed.id, 0x4242);
    assert!(parsed.is_response());
    assert_eq!(parsed.opcode(), 5);
    assert_eq!(parsed.rcode(), 1);
    assert_eq!(
        parsed.flags & FLAG_RECURSION_DESIRED,
        FLAG_RECURSION_DESIRED
    );
    assert_eq!(parsed.question_count, 0);
}

#[test]
fn truncates_an_upstream_reply_to_its_question() {
    let query = Query::parse(&query_packet(5, "example.org", TYPE_A, None)).unwrap();
    let records: Vec<_> = (0..3u8)
        .map(|last| RecordData::A(Ipv4Addr::new(192, 0, 2, last)))
        .collect();
    let reply = build_reply(&query, Rcode::NoError, &records);
    let head = ReplyHead::parse(&reply).unwrap();
    let cut = truncate_reply(&head);
    assert_eq!(cut.len(), head.question_end);
    let cut_head = ReplyHead::parse(&cut).unwrap();
    assert!(cut_head.header.is_truncated());
    assert_eq!(cut_head.header.answer_count, 0);
    assert_eq!(cut_head.question, head.question);
}

#[test]
fn sets_the_id_in_place() {
    let mut packet = query_packet(1, "web", TYPE_A, None);
    set_id(&mut packet, 0xA1B2);
    assert_eq!(Header::parse(&packet).unwrap().id, 0xA1B2);
    let mut short = vec![0u8; 1];
    set_id(&mut short, 7);
    assert_eq!(short, vec![0]);
}

#[test]
fn encodes_names_from_text() {
    let with_dot = Name::from_text("web.mynet.").unwrap();
    assert_eq!(with_dot, Name::from_text("web.mynet").unwrap());
    assert_eq!(Name::from_text(".").unwrap().wire_len(), 1);
    assert_eq!(Name::from_text("").unwrap().lookup_key(), None);
    assert!(matches!(
        Name::from_text("a..b"),
        Err(MessageError::EmptyLabel { .. })
    ));
    let long_label = "x".repeat(64);
    assert!(matches!(
        Name::from_text(&long_label),
        Err(MessageError::LabelTooLong { .. })
    ));
    let label = "x".repeat(63);
    let long_name = [label.as_str(); 4].join(".");
    assert!(matches!(
        Name::from_text(&long_name),
        Err(MessageError::NameTooLong { .. })
    ));
    let fits = [label.as_str(), &label, &label, &"y".repeat(61)].join(".");
    assert_eq!(Name::from_text(&fits).unwrap().wire_len(), 255);
}

#[test]
fn lookup_keys_refuse_ambiguous_labels() {
    let dotted = Name {
        labels: vec![b"a.b".to_vec()],
    };
    assert_eq!(dotted.lookup_key(), None);
    let binary = Name {
        labels: vec![vec![b'w', 0xC3, 0xA9]],
    };
    assert_eq!(binary.lookup_key(), None);
    let spaced = Name {
        labels: vec![b"a b".to_vec()],
    };
    assert_eq!(spaced.lookup_key(), None);
}

#[test]
fn reads_ipv4_reverse_names() {
    let name = |text| Name::from_text(text).unwrap();
    assert_eq!(
        name("4.3.18.172.in-addr.arpa").reverse_ipv4(),
        Some(Ipv4Addr::new(172, 18, 3, 4))
    );
    assert_eq!(
        name("4.3.18.172.IN-ADDR.Arpa.").reverse_ipv4(),
        Some(Ipv4Addr::new(172, 18, 3, 4))
    );
    for bad in [
        "04.3.18.172.in-addr.arpa",
        "256.3.18.172.in-addr.arpa",
        "-1.3.18.172.in-addr.arpa",
        "3.18.172.in-addr.arpa",
        "5.4.3.18.172.in-addr.arpa",
        "4.3.18.172.ip6.arpa",
        "web",
    ] {
        assert_eq!(name(bad).reverse_ipv4(), None, "{bad}");
    }
}

#[test]
fn compares_questions_without_case() {
    let lower = Query::parse(&query_packet(1, "web.example", TYPE_A, None)).unwrap();
    let mixed = Query::parse(&query_packet(1, "wEb.EXAMPLE", TYPE_A, None)).unwrap();
    let other_type = Query::parse(&query_packet(1, "web.example", TYPE_AAAA, None)).unwrap();
    assert!(lower.question.same_as(&mixed.question));
    assert!(!lower.question.same_as(&other_type.question));
}

#[test]
fn follows_backward_compression_pointers() {
    // Question "a.example" then an answer owned by a pointer to "example" in the question.
    let mut packet = header_only(1, 0, [1, 1, 0, 0]);
    packet.extend_from_slice(b"\x01a\x07example\x00\x00\x01\x00\x01");
    packet.extend_from_slice(&[0xC0, 14]);
    packet.extend_from_slice(&[0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 1, 2, 3, 4]);
    let (name, end) = Name::parse(&packet, 27).unwrap();
    assert_eq!(end, 29);
    assert_eq!(name.lookup_key().as_deref(), Some("example"));
    assert!(Query::parse(&packet).is_ok());
}

#[test]
fn rejects_truncated_packets() {
    let packet = query_packet(1, "web.mynet", TYPE_A, Some(1232));
    for length in 0..packet.len() {
        let result = Query::parse(&packet[..length]);
        assert!(
            matches!(result, Err(MessageError::Truncated { .. })),
            "{length}: {result:?}"
        );
    }
    assert!(Header::parse(&packet[..11]).is_err());
    // A record whose data length runs past the end.
    let mut packet = query_packet(1, "web", TYPE_A, None);
    packet[11] = 1; // one additional record
    packet.extend_from_slice(&[0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 9, 1, 2]);
    assert!(matches!(
        Query::parse(&packet),
        Err(MessageError::Truncated { .. })
    ));
}

#[test]
fn rejects_pointer_loops() {
    // A pointer to itself.
    let mut packet = header_only(1, 0, [1, 0, 0, 0]);
    packet.extend_from_slice(&[0xC0, 12, 0, 1, 0, 1]);
    assert!(matches!(
        Query::parse(&packet),
        Err(MessageError::ForwardPointer { offset: 12 })
    ));
    // A pointer forwards.
    let mut packet = header_only(1, 0, [1, 0, 0, 0]);
    packet.extend_from_slice(&[0xC0, 20, 0, 1, 0, 1, 0, 0, 0]);
    assert!(matches!(
        Query::parse(&packet),
        Err(MessageError::ForwardPointer { .. })
    ));
    // A label followed by a pointer back to that label: an endless "a.a.a…".
    let mut packet = header_only(1, 0, [1, 0, 0, 0]);
    packet.extend_from_slice(&[1, b'a', 0xC0, 12, 0, 1, 0, 1]);
    assert!(matches!(
        Query::parse(&packet),
        Err(MessageError::NameTooLong { .. } | MessageError::PointerLoop { .. })
    ));
    // A long chain of pointers, each to the one before, ending in the root.
    let mut chain = vec![0u8, 0];
    for index in 1..200u16 {
        let target = (index - 1) * 2;
        chain.extend_from_slice(&(0xC000 | target).to_be_bytes());
    }
    assert!(matches!(
        Name::parse(&chain, 199 * 2),
        Err(MessageError::PointerLoop { .. })
    ));
    assert!(Name::parse(&chain, 100 * 2).is_ok());
}

#[test]
fn rejects_over_long_labels_and_names() {
    for byte in [0x40u8, 0x7F, 0x80, 0xBF] {
        let mut packet = header_only(1, 0, [1, 0, 0, 0]);
        packet.push(byte);
        packet.extend_from_slice(&[b'x'; 200]);
        packet.extend_from_slice(&[0, 0, 1, 0, 1]);
        assert!(
            matches!(
                Query::parse(&packet),
                Err(MessageError::UnsupportedLabel { offset: 12, .. })
            ),
            "{byte:#x}"
        );
    }
    // Four labels of 63 bytes: 257 bytes on the wire.
    let mut packet = header_only(1, 0, [1, 0, 0, 0]);
    for _ in 0..4 {
        packet.push(63);
        packet.extend_from_slice(&[b'x'; 63]);
    }
    packet.extend_from_slice(&[0, 0, 1, 0, 1]);
    assert!(matches!(
        Query::parse(&packet),
        Err(MessageError::NameTooLong { .. })
    ));
    // A label longer than what is left.
    let mut packet = header_only(1, 0, [1, 0, 0, 0]);
    packet.extend_from_slice(&[30, b'x', b'y']);
    assert!(matches!(
        Query::parse(&packet),
        Err(MessageError::Truncated { .. })
    ));
}

#[test]
fn counts_questions() {
    let mut none = header_only(1, 0, [0, 0, 0, 0]);
    none.extend_from_slice(&[0, 0, 1, 0, 1]);
    assert_eq!(
        Query::parse(&none),
        Err(MessageError::QuestionCount { count: 0 })
    );
    let mut two = query_packet(1, "a", TYPE_A, None);
    two[5] = 2;
    two.extend_from_slice(b"\x01b\x00\x00\x01\x00\x01");
    assert_eq!(
        Query::parse(&two),
        Err(MessageError::QuestionCount { count: 2 })
    );
    assert_eq!(
        ReplyHead::parse(&two),
        Err(MessageError::QuestionCount { count: 2 })
    );
    let head = ReplyHead::parse(&header_only(1, 0x8182, [0, 0, 0, 0])).unwrap();
    assert_eq!((head.question, head.question_end), (None, HEADER_LEN));
}

/// Random and mutated input must produce errors or values, never panics.
#[test]
fn survives_garbage() {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        // xorshift64: deterministic, so a failure reproduces.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let valid = query_packet(0x1234, "web.mynet", TYPE_A, Some(1232));
    for _ in 0..20_000 {
        let length = (next() % 80) as usize;
        let random: Vec<u8> = (0..length).map(|_| next() as u8).collect();
        let _ = Query::parse(&random);
        let _ = ReplyHead::parse(&random);

        let mut mutated = valid.clone();
        for _ in 0..(next() % 4 + 1) {
            let index = (next() as usize) % mutated.len();
            mutated[index] = next() as u8;
        }
        mutated.truncate((next() as usize) % (valid.len() + 1));
        if let Ok(query) = Query::parse(&mutated) {
            let reply = build_reply(&query, Rcode::NoError, &[]);
            assert!(ReplyHead::parse(&reply).is_ok());
        }
        if let Ok(head) = ReplyHead::parse(&mutated) {
            let cut = truncate_reply(&head);
            assert_eq!(ReplyHead::parse(&cut).unwrap().question, head.question);
        }
    }
}
