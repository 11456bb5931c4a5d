//! Entry points for fuzzing what clients send: the targets under
//! `crates/berth-api/fuzz/` and the seeded randomized tests call these.
//! Each runs the server's own parsing on arbitrary bytes and panics only
//! when one of its invariants breaks (a panic is the finding).

use std::io::{BufRead, BufReader, Read};

use crate::http::request::{parse_query, percent_decode, read_limited};
use crate::http::{read_head, BodyKind, BodyReader, Request, MAX_JSON_BODY};

/// One request of a connection, as [`parse_requests`] read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parsed {
    Request {
        request: Request,
        body: Vec<u8>,
    },
    /// A refused head: the server answers `status` and closes the
    /// connection.
    BadHead {
        status: u16,
    },
    /// A head whose body is refused: a handler that reads it answers
    /// `status`, and the connection closes.
    BadBody {
        request: Request,
        status: u16,
    },
}

/// Reads the requests in `bytes` one after another, as a connection does
/// when every handler reads its body as JSON: the head, then the body (at
/// most [`MAX_JSON_BODY`]); it stops at the first refused request or at
/// the end. The reader hands over at most `piece` bytes per read, as a
/// socket may.
pub fn parse_requests(bytes: &[u8], piece: usize) -> Vec<Parsed> {
    let mut reader = BufReader::with_capacity(16 * 1024, Pieces { bytes, piece });
    let mut parsed = Vec::new();
    loop {
        let request = match read_head(&mut reader) {
            Ok(request) => request,
            Err(error) => {
                if let Some(status) = error.status() {
                    parsed.push(Parsed::BadHead { status });
                }
                return parsed;
            }
        };
        match read_body(&mut reader, &request) {
            Ok(body) => parsed.push(Parsed::Request { request, body }),
            Err(status) => {
                parsed.push(Parsed::BadBody { request, status });
                return parsed;
            }
        }
    }
}

/// The body as `Exchange::body_bytes` reads it: 413 past the limit, 400
/// for a broken one.
fn read_body(reader: &mut impl BufRead, request: &Request) -> Result<Vec<u8>, u16> {
    if let BodyKind::Length(length) = request.body {
        if length > MAX_JSON_BODY as u64 {
            return Err(413);
        }
    }
    let mut body = BodyReader::new(reader, &request.body);
    match read_limited(&mut body, MAX_JSON_BODY) {
        Ok(bytes) => Ok(bytes),
        Err(None) => Err(413),
        Err(Some(_)) => Err(400),
    }
}

/// A reader over `bytes` that returns at most `piece` bytes per read.
struct Pieces<'b> {
    bytes: &'b [u8],
    piece: usize,
}

impl Read for Pieces<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let count = buffer.len().min(self.piece.max(1)).min(self.bytes.len());
        buffer[..count].copy_from_slice(&self.bytes[..count]);
        self.bytes = &self.bytes[count..];
        Ok(count)
    }
}

/// The request head again, with the body framed by `Content-Length`.
fn serialize(request: &Request, body: &[u8]) -> Vec<u8> {
    let mut out = format!("{} {}", request.method, request.target).into_bytes();
    for (index, (key, value)) in request.query.iter().enumerate() {
        out.push(if index == 0 { b'?' } else { b'&' });
        out.extend_from_slice(percent_encode(key).as_bytes());
        out.push(b'=');
        out.extend_from_slice(percent_encode(value).as_bytes());
    }
    out.extend_from_slice(b" HTTP/1.1\r\n");
    for (name, value) in &request.headers {
        if name == "content-length" || name == "transfer-encoding" {
            continue;
        }
        out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    if !body.is_empty() {
        out.extend_from_slice(format!("content-length: {}\r\n", body.len()).as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    out
}

fn percent_encode(text: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(text.len() * 3);
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push('%');
            out.push(HEX[usize::from(byte >> 4)] as char);
            out.push(HEX[usize::from(byte & 15)] as char);
        }
    }
    out
}

/// Parses `bytes` as a connection's requests and checks:
/// - refusals are 400, 413 or 431, and end the connection;
/// - no accepted body is over the limit, and its framing agrees with it;
/// - the result does not depend on how the bytes arrive (whole, one byte
///   at a time, in pieces of 7);
/// - an accepted request written out again parses to the same request.
pub fn check_requests(bytes: &[u8]) {
    let parsed = parse_requests(bytes, usize::MAX);
    // One byte at a time is slow for the largest inputs (huge headers).
    let pieces = if bytes.len() <= 16 * 1024 {
        [1, 7]
    } else {
        [1021, 4093]
    };
    for piece in pieces {
        assert_eq!(
            parsed,
            parse_requests(bytes, piece),
            "reading in pieces of {piece} changed the result"
        );
    }
    for (index, item) in parsed.iter().enumerate() {
        match item {
            Parsed::BadHead { status } | Parsed::BadBody { status, .. } => {
                assert!(matches!(status, 400 | 413 | 431), "refused with {status}");
                assert_eq!(index + 1, parsed.len(), "a request after a refusal");
            }
            Parsed::Request { request, body } => {
                assert!(body.len() <= MAX_JSON_BODY);
                assert!(request.target.starts_with('/'));
                assert!(!request.method.is_empty());
                match request.body {
                    BodyKind::Empty => assert!(body.is_empty()),
                    BodyKind::Length(length) => assert_eq!(length, body.len() as u64),
                    BodyKind::Chunked => {}
                }
                let again = serialize(request, body);
                match parse_requests(&again, usize::MAX).as_slice() {
                    [Parsed::Request {
                        request: reparsed,
                        body: reparsed_body,
                    }] => {
                        assert_eq!(reparsed.method, request.method);
                        assert_eq!(reparsed.target, request.target);
                        assert_eq!(reparsed.query, request.query);
                        assert_eq!(reparsed_body, body);
                        let without_framing = |request: &Request| -> Vec<(String, String)> {
                            request
                                .headers
                                .iter()
                                .filter(|(name, _)| {
                                    name != "content-length" && name != "transfer-encoding"
                                })
                                .cloned()
                                .collect()
                        };
                        assert_eq!(without_framing(reparsed), without_framing(request));
                    }
                    other => panic!(
                        "{:?} did not parse back: {other:?}",
                        String::from_utf8_lossy(&again)
                    ),
                }
            }
        }
    }
}

/// The small text parsers of query values: `filters`, reference globs,
/// versioned paths, percent-decoding, query strings, durations. None may
/// panic; a glob with every character escaped matches that text.
pub fn check_text_inputs(bytes: &[u8]) {
    // Query values are bounded by the head's size; longer texts find
    // nothing new and are slow to check.
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(8 * 1024)]);
    if let Ok(pairs) = crate::filters::parse(&text) {
        let _ = crate::filters::check(&pairs, &["label", "name"]);
    }
    let middle = (0..=text.len() / 2)
        .rev()
        .find(|index| text.is_char_boundary(*index))
        .unwrap_or(0);
    let (pattern, subject) = text.split_at(middle);
    // Matching is O(pattern × text) at worst; filters are short.
    let shorten = |text: &str| -> String { text.chars().take(2048).collect() };
    let (pattern, subject) = (shorten(pattern), shorten(subject));
    let (pattern, subject) = (pattern.as_str(), subject.as_str());
    let _ = crate::filters::glob_match(pattern, subject);
    let escaped: String = subject
        .chars()
        .flat_map(|character| {
            let escape = "*?[\\".contains(character).then_some('\\');
            escape.into_iter().chain(std::iter::once(character))
        })
        .collect();
    assert!(
        crate::filters::glob_match(&escaped, subject),
        "{escaped:?} does not match {subject:?}"
    );
    if let Ok((version, rest)) = crate::version::split_version(&text) {
        assert!(((1, 24)..=(1, 43)).contains(&version));
        assert!(text.ends_with(rest) || rest == "/");
    }
    if let Ok(decoded) = percent_decode(&text) {
        assert!(!decoded.contains('\0'));
        assert_eq!(
            percent_decode(&percent_encode(&decoded)).ok(),
            Some(decoded)
        );
    }
    let _ = parse_query(&text);
    let _ = crate::parse_duration(&text);
}
