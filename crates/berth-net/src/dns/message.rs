//! The part of the DNS wire format (RFC 1035 §4) that the embedded resolver needs:
//! reading a query's header, question and EDNS payload size, reading the head of an
//! upstream reply, and building answers and error replies.
//!
//! Everything here reads untrusted bytes: every access is bounds-checked and returns
//! [`MessageError`] instead of panicking, names are capped at 255 bytes and compression
//! pointers must point backwards, with a jump limit on top (RFC 1035 §4.1.4, RFC 9267).

use std::net::Ipv4Addr;

/// Length of the fixed message header.
pub(crate) const HEADER_LEN: usize = 12;
/// Largest UDP message a client accepts without EDNS (RFC 1035 §4.2.1).
pub(crate) const PLAIN_UDP_LIMIT: usize = 512;
/// TTL of local answers, as Docker's embedded DNS (`respTTL`).
pub(crate) const LOCAL_TTL: u32 = 600;

pub(crate) const TYPE_A: u16 = 1;
pub(crate) const TYPE_PTR: u16 = 12;
pub(crate) const TYPE_AAAA: u16 = 28;
pub(crate) const TYPE_OPT: u16 = 41;
pub(crate) const CLASS_IN: u16 = 1;

const MAX_NAME_WIRE_LEN: usize = 255;
const MAX_LABEL_LEN: usize = 63;
/// A name of 255 bytes has at most 127 labels; more jumps than that means a loop.
const MAX_POINTER_JUMPS: usize = 128;
/// Offset of the question name in every message: the pointer answers use for their owner.
const QUESTION_NAME_POINTER: [u8; 2] = [0xC0, 0x0C];

const FLAG_RESPONSE: u16 = 0x8000;
const MASK_OPCODE: u16 = 0x7800;
const FLAG_TRUNCATED: u16 = 0x0200;
const FLAG_RECURSION_DESIRED: u16 = 0x0100;
const FLAG_RECURSION_AVAILABLE: u16 = 0x0080;
const FLAG_CHECKING_DISABLED: u16 = 0x0010;

/// Why a message could not be read or a name could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum MessageError {
    #[error("message of {length} bytes ends inside a field")]
    Truncated { length: usize },
    #[error("label type {byte:#04x} at offset {offset} is not supported")]
    UnsupportedLabel { offset: usize, byte: u8 },
    #[error("compression pointer at offset {offset} does not point backwards")]
    ForwardPointer { offset: usize },
    #[error("name at offset {offset} follows too many compression pointers")]
    PointerLoop { offset: usize },
    #[error("name at offset {offset} is longer than 255 bytes")]
    NameTooLong { offset: usize },
    #[error("label {label:?} is longer than 63 bytes")]
    LabelTooLong { label: String },
    #[error("name {name:?} has an empty label")]
    EmptyLabel { name: String },
    #[error("message has {count} questions, expected 1")]
    QuestionCount { count: u16 },
}

/// Response codes this server sends (RFC 1035 §4.1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rcode {
    NoError = 0,
    FormatError = 1,
    ServerFailure = 2,
    NotImplemented = 4,
}

/// The fixed 12-byte header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) id: u16,
    pub(crate) flags: u16,
    pub(crate) question_count: u16,
    pub(crate) answer_count: u16,
    pub(crate) authority_count: u16,
    pub(crate) additional_count: u16,
}

impl Header {
    pub(crate) fn parse(packet: &[u8]) -> Result<Self, MessageError> {
        let mut reader = Reader::new(packet);
        Ok(Self {
            id: reader.u16()?,
            flags: reader.u16()?,
            question_count: reader.u16()?,
            answer_count: reader.u16()?,
            authority_count: reader.u16()?,
            additional_count: reader.u16()?,
        })
    }

    pub(crate) fn is_response(&self) -> bool {
        self.flags & FLAG_RESPONSE != 0
    }

    pub(crate) fn opcode(&self) -> u8 {
        // Four bits after the shift, so the cast cannot lose anything.
        ((self.flags & MASK_OPCODE) >> 11) as u8
    }

    pub(crate) fn is_truncated(&self) -> bool {
        self.flags & FLAG_TRUNCATED != 0
    }

    pub(crate) fn rcode(&self) -> u8 {
        (self.flags & 0x000F) as u8
    }

    fn write(&self, out: &mut Vec<u8>) {
        for field in [
            self.id,
            self.flags,
            self.question_count,
            self.answer_count,
            self.authority_count,
            self.additional_count,
        ] {
            out.extend_from_slice(&field.to_be_bytes());
        }
    }

    /// Flags of a reply to this query: QR and RA set, opcode, RD and CD echoed, AA clear
    /// (Docker's resolver never claims authority).
    fn reply_flags(&self, rcode: Rcode, truncated: bool) -> u16 {
        let echoed = self.flags & (MASK_OPCODE | FLAG_RECURSION_DESIRED | FLAG_CHECKING_DISABLED);
        let truncated = if truncated { FLAG_TRUNCATED } else { 0 };
        FLAG_RESPONSE | FLAG_RECURSION_AVAILABLE | echoed | truncated | rcode as u16
    }
}

/// A domain name as its labels, with the bytes (and so the case) the sender used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Name {
    labels: Vec<Vec<u8>>,
}

impl Name {
    /// Encodes a dotted name ("web.mynet", with or without the final dot; "" or "." is
    /// the root).
    pub(crate) fn from_text(text: &str) -> Result<Self, MessageError> {
        let trimmed = text.strip_suffix('.').unwrap_or(text);
        let mut labels = Vec::new();
        if !trimmed.is_empty() {
            for label in trimmed.split('.') {
                if label.is_empty() {
                    return Err(MessageError::EmptyLabel {
                        name: text.to_owned(),
                    });
                }
                if label.len() > MAX_LABEL_LEN {
                    return Err(MessageError::LabelTooLong {
                        label: label.to_owned(),
                    });
                }
                labels.push(label.as_bytes().to_vec());
            }
        }
        let name = Self { labels };
        if name.wire_len() > MAX_NAME_WIRE_LEN {
            return Err(MessageError::NameTooLong { offset: 0 });
        }
        Ok(name)
    }

    /// Reads the name at `offset`, following compression pointers. Returns the name and
    /// the offset just past it in the original position.
    pub(crate) fn parse(packet: &[u8], offset: usize) -> Result<(Self, usize), MessageError> {
        let mut labels = Vec::new();
        let mut wire_len = 1; // the root label
        let mut position = offset;
        let mut end = None;
        let mut jumps = 0;
        loop {
            let length = *packet.get(position).ok_or(MessageError::Truncated {
                length: packet.len(),
            })?;
            match length & 0xC0 {
                0x00 if length == 0 => {
                    let end = end.unwrap_or(position + 1);
                    return Ok((Self { labels }, end));
                }
                0x00 => {
                    let start = position + 1;
                    let stop = start + usize::from(length);
                    let label = packet.get(start..stop).ok_or(MessageError::Truncated {
                        length: packet.len(),
                    })?;
                    wire_len += 1 + label.len();
                    if wire_len > MAX_NAME_WIRE_LEN {
                        return Err(MessageError::NameTooLong { offset });
                    }
                    labels.push(label.to_vec());
                    position = stop;
                }
                0xC0 => {
                    let low = *packet.get(position + 1).ok_or(MessageError::Truncated {
                        length: packet.len(),
                    })?;
                    let target = usize::from(u16::from_be_bytes([length & 0x3F, low]));
                    if target >= position {
                        return Err(MessageError::ForwardPointer { offset: position });
                    }
                    jumps += 1;
                    if jumps > MAX_POINTER_JUMPS {
                        return Err(MessageError::PointerLoop { offset });
                    }
                    end.get_or_insert(position + 2);
                    position = target;
                }
                _ => {
                    return Err(MessageError::UnsupportedLabel {
                        offset: position,
                        byte: length,
                    })
                }
            }
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        for label in &self.labels {
            // Labels are at most 63 bytes: checked by `from_text`, and `parse` only reads
            // lengths below 64.
            out.push(label.len() as u8);
            out.extend_from_slice(label);
        }
        out.push(0);
    }

    fn wire_len(&self) -> usize {
        self.labels
            .iter()
            .map(|label| 1 + label.len())
            .sum::<usize>()
            + 1
    }

    /// The name as the store knows names: lowercase, dotted, no final dot. None for the
    /// root and for names whose labels hold dots or bytes outside printable ASCII, which
    /// no container name has and which could not be told apart once joined.
    pub(crate) fn lookup_key(&self) -> Option<String> {
        if self.labels.is_empty() {
            return None;
        }
        let mut key = String::with_capacity(self.wire_len());
        for (index, label) in self.labels.iter().enumerate() {
            if index > 0 {
                key.push('.');
            }
            for &byte in label {
                if !byte.is_ascii_graphic() || byte == b'.' {
                    return None;
                }
                key.push(char::from(byte.to_ascii_lowercase()));
            }
        }
        Some(key)
    }

    /// The address of an IPv4 reverse name (`4.3.2.10.in-addr.arpa` is 10.2.3.4).
    pub(crate) fn reverse_ipv4(&self) -> Option<Ipv4Addr> {
        let [d, c, b, a, in_addr, arpa] = self.labels.as_slice() else {
            return None;
        };
        if !in_addr.eq_ignore_ascii_case(b"in-addr") || !arpa.eq_ignore_ascii_case(b"arpa") {
            return None;
        }
        let octet = |label: &Vec<u8>| -> Option<u8> {
            // Decimal without sign or leading zeros, as written by resolvers.
            if label.is_empty() || label.len() > 3 || (label.len() > 1 && label[0] == b'0') {
                return None;
            }
            std::str::from_utf8(label).ok()?.parse::<u8>().ok()
        };
        Some(Ipv4Addr::new(octet(a)?, octet(b)?, octet(c)?, octet(d)?))
    }

    fn eq_ignore_case(&self, other: &Self) -> bool {
        self.labels.len() == other.labels.len()
            && self
                .labels
                .iter()
                .zip(&other.labels)
                .all(|(left, right)| left.eq_ignore_ascii_case(right))
    }
}

/// One entry of the question section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Question {
    pub(crate) name: Name,
    pub(crate) record_type: u16,
    pub(crate) class: u16,
}

impl Question {
    fn parse(packet: &[u8], offset: usize) -> Result<(Self, usize), MessageError> {
        let (name, end) = Name::parse(packet, offset)?;
        let mut reader = Reader::at(packet, end);
        let record_type = reader.u16()?;
        let class = reader.u16()?;
        let question = Self {
            name,
            record_type,
            class,
        };
        Ok((question, reader.position))
    }

    fn write(&self, out: &mut Vec<u8>) {
        self.name.write(out);
        out.extend_from_slice(&self.record_type.to_be_bytes());
        out.extend_from_slice(&self.class.to_be_bytes());
    }

    /// Whether `other` asks the same thing, ignoring case (DNS names are case-insensitive,
    /// RFC 4343).
    pub(crate) fn same_as(&self, other: &Self) -> bool {
        self.record_type == other.record_type
            && self.class == other.class
            && self.name.eq_ignore_case(&other.name)
    }
}

/// A client's query: exactly one question, and the UDP payload size of its EDNS OPT
/// record when it has one (RFC 6891 §6.1.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Query {
    pub(crate) header: Header,
    pub(crate) question: Question,
    pub(crate) udp_payload_size: Option<u16>,
}

impl Query {
    /// Reads a whole query. More (or fewer) than one question is an error, as in the
    /// miekg/dns server under Docker's resolver, which answers those with FORMERR.
    pub(crate) fn parse(packet: &[u8]) -> Result<Self, MessageError> {
        let header = Header::parse(packet)?;
        if header.question_count != 1 {
            return Err(MessageError::QuestionCount {
                count: header.question_count,
            });
        }
        let (question, mut position) = Question::parse(packet, HEADER_LEN)?;
        let records_before_additional =
            usize::from(header.answer_count) + usize::from(header.authority_count);
        for _ in 0..records_before_additional {
            position = skip_record(packet, position)?.end;
        }
        let mut udp_payload_size = None;
        for _ in 0..header.additional_count {
            let record = skip_record(packet, position)?;
            if record.record_type == TYPE_OPT && record.owner_is_root {
                // The class field of OPT carries the requestor's UDP payload size.
                udp_payload_size = Some(record.class);
            }
            position = record.end;
        }
        Ok(Self {
            header,
            question,
            udp_payload_size,
        })
    }

    /// The largest reply this client accepts over UDP: 512 bytes, or more when it said so
    /// with EDNS (values below 512 are treated as 512, RFC 6891 §6.2.5).
    pub(crate) fn reply_limit(&self) -> usize {
        usize::from(self.udp_payload_size.unwrap_or(0)).max(PLAIN_UDP_LIMIT)
    }
}

/// The start of an upstream reply: its header and its question, when it has one (error
/// replies may carry none), and where the question section ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReplyHead {
    pub(crate) header: Header,
    pub(crate) question: Option<Question>,
    pub(crate) question_end: usize,
}

impl ReplyHead {
    pub(crate) fn parse(packet: &[u8]) -> Result<Self, MessageError> {
        let header = Header::parse(packet)?;
        let (question, question_end) = match header.question_count {
            0 => (None, HEADER_LEN),
            1 => {
                let (question, end) = Question::parse(packet, HEADER_LEN)?;
                (Some(question), end)
            }
            count => return Err(MessageError::QuestionCount { count }),
        };
        Ok(Self {
            header,
            question,
            question_end,
        })
    }
}

/// Data of a record this server answers with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RecordData {
    A(Ipv4Addr),
    Aaaa(std::net::Ipv6Addr),
    Ptr(Name),
}

impl RecordData {
    fn record_type(&self) -> u16 {
        match self {
            Self::A(_) => TYPE_A,
            Self::Aaaa(_) => TYPE_AAAA,
            Self::Ptr(_) => TYPE_PTR,
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Self::A(address) => out.extend_from_slice(&address.octets()),
            Self::Aaaa(address) => out.extend_from_slice(&address.octets()),
            Self::Ptr(name) => name.write(out),
        }
    }
}

/// A header-only reply with `rcode` (for queries whose question could not be read, or
/// that this server refuses as a whole).
pub(crate) fn build_error_reply(query: &Header, rcode: Rcode) -> Vec<u8> {
    let header = Header {
        id: query.id,
        flags: query.reply_flags(rcode, false),
        question_count: 0,
        answer_count: 0,
        authority_count: 0,
        additional_count: 0,
    };
    let mut out = Vec::with_capacity(HEADER_LEN);
    header.write(&mut out);
    out
}

/// A reply to `query` echoing its question, with `answers` owned by the question name.
/// Answers that would push the reply past `query.reply_limit()` are left out and TC is
/// set instead.
pub(crate) fn build_reply(query: &Query, rcode: Rcode, answers: &[RecordData]) -> Vec<u8> {
    let limit = query.reply_limit();
    let mut body = Vec::new();
    query.question.write(&mut body);
    let mut written: u16 = 0;
    let mut truncated = false;
    for answer in answers {
        let mut record = Vec::new();
        record.extend_from_slice(&QUESTION_NAME_POINTER);
        record.extend_from_slice(&answer.record_type().to_be_bytes());
        record.extend_from_slice(&CLASS_IN.to_be_bytes());
        record.extend_from_slice(&LOCAL_TTL.to_be_bytes());
        let mut data = Vec::new();
        answer.write(&mut data);
        // Record data here is an address or a name of at most 255 bytes.
        record.extend_from_slice(&(data.len() as u16).to_be_bytes());
        record.extend_from_slice(&data);
        if HEADER_LEN + body.len() + record.len() > limit || written == u16::MAX {
            truncated = true;
            break;
        }
        body.extend_from_slice(&record);
        written += 1;
    }
    let header = Header {
        id: query.header.id,
        flags: query.header.reply_flags(rcode, truncated),
        question_count: 1,
        answer_count: written,
        authority_count: 0,
        additional_count: 0,
    };
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    header.write(&mut out);
    out.extend_from_slice(&body);
    out
}

/// Cuts an over-long upstream reply down to its header and question with TC set, the
/// classic way of telling a UDP client to retry over TCP (RFC 2181 §9). The question is
/// written out again rather than copied, so no compression pointer can dangle.
pub(crate) fn truncate_reply(head: &ReplyHead) -> Vec<u8> {
    let header = Header {
        flags: head.header.flags | FLAG_TRUNCATED,
        answer_count: 0,
        authority_count: 0,
        additional_count: 0,
        ..head.header
    };
    let mut out = Vec::with_capacity(head.question_end);
    header.write(&mut out);
    if let Some(question) = &head.question {
        question.write(&mut out);
    }
    out
}

/// Sets the id of a message in place (the first two bytes; shorter input is left alone).
pub(crate) fn set_id(packet: &mut [u8], id: u16) {
    if let Some(field) = packet.get_mut(0..2) {
        field.copy_from_slice(&id.to_be_bytes());
    }
}

/// What the server needs to know of a record it steps over.
struct SkippedRecord {
    record_type: u16,
    class: u16,
    owner_is_root: bool,
    end: usize,
}

fn skip_record(packet: &[u8], offset: usize) -> Result<SkippedRecord, MessageError> {
    let (owner, after_owner) = Name::parse(packet, offset)?;
    let mut reader = Reader::at(packet, after_owner);
    let record_type = reader.u16()?;
    let class = reader.u16()?;
    let _ttl = reader.u32()?;
    let data_len = usize::from(reader.u16()?);
    reader.skip(data_len)?;
    Ok(SkippedRecord {
        record_type,
        class,
        owner_is_root: owner.labels.is_empty(),
        end: reader.position,
    })
}

/// Bounds-checked big-endian reads.
struct Reader<'packet> {
    packet: &'packet [u8],
    position: usize,
}

impl<'packet> Reader<'packet> {
    fn new(packet: &'packet [u8]) -> Self {
        Self::at(packet, 0)
    }

    fn at(packet: &'packet [u8], position: usize) -> Self {
        Self { packet, position }
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N], MessageError> {
        let bytes = self
            .packet
            .get(self.position..self.position + N)
            .and_then(|slice| <[u8; N]>::try_from(slice).ok())
            .ok_or(MessageError::Truncated {
                length: self.packet.len(),
            })?;
        self.position += N;
        Ok(bytes)
    }

    fn u16(&mut self) -> Result<u16, MessageError> {
        self.take::<2>().map(u16::from_be_bytes)
    }

    fn u32(&mut self) -> Result<u32, MessageError> {
        self.take::<4>().map(u32::from_be_bytes)
    }

    fn skip(&mut self, count: usize) -> Result<(), MessageError> {
        let end = self.position + count;
        if end > self.packet.len() {
            return Err(MessageError::Truncated {
                length: self.packet.len(),
            });
        }
        self.position = end;
        Ok(())
    }
}

#[cfg(test)]
#[path = "message_tests.rs"]
mod tests;
