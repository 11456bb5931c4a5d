//! The request head (parsed by `httparse`) and its body: `Content-Length`
//! or chunked, read with a size limit for JSON and streamed for archives.

use std::io::{BufRead, Read};

/// The largest request head accepted (request line and headers).
pub const MAX_HEAD: usize = 64 * 1024;
/// At most this many headers.
const MAX_HEADERS: usize = 64;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BodyKind {
    Empty,
    Length(u64),
    Chunked,
}

/// A parsed request head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// The path as sent, without the query string (still percent-encoded).
    pub target: String,
    /// Decoded query parameters, in order.
    pub query: Vec<(String, String)>,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: BodyKind,
    /// HTTP/1.0 without keep-alive, or `Connection: close`.
    pub close: bool,
}

/// Why no request could be read.
#[derive(Debug, thiserror::Error)]
pub enum HeadError {
    /// The peer closed the connection between requests.
    #[error("connection closed")]
    Closed,
    #[error("failed to read the request")]
    Io(#[source] std::io::Error),
    /// The head did not arrive within the read-header timeout.
    #[error("timed out reading the request head")]
    TimedOut,
    #[error("request header too large")]
    TooLarge,
    #[error("malformed request: {0}")]
    Malformed(String),
}

impl HeadError {
    /// The status the server answers with before closing the connection
    /// (None: nothing to answer).
    pub fn status(&self) -> Option<u16> {
        match self {
            // Go's net/http closes a timed-out connection without a word.
            Self::Closed | Self::Io(_) | Self::TimedOut => None,
            Self::TooLarge => Some(431),
            Self::Malformed(_) => Some(400),
        }
    }
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    pub fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// Every value of a repeated parameter (`names=a&names=b`).
    pub fn query_all(&self, name: &str) -> Vec<&str> {
        self.query
            .iter()
            .filter(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
            .collect()
    }

    /// Docker's boolean query values: `1`, `true`, `True` (and anything
    /// other than `0`/`false`/`no`/empty, as Go's `httputils.BoolValue`).
    pub fn query_bool(&self, name: &str) -> bool {
        self.query(name).is_some_and(|value| {
            !matches!(
                value.trim().to_ascii_lowercase().as_str(),
                "" | "0" | "no" | "false" | "none"
            )
        })
    }

    /// Asks to switch the connection to a raw stream (`Upgrade: tcp`).
    pub fn wants_upgrade(&self) -> bool {
        self.header("upgrade").is_some()
            || self
                .header("connection")
                .is_some_and(|value| value.to_ascii_lowercase().contains("upgrade"))
    }
}

/// Reads one request head. Returns `Closed` when the peer hung up before
/// sending anything.
pub fn read_head(reader: &mut impl BufRead) -> Result<Request, HeadError> {
    read_head_with(reader, |_| Ok(()))
}

/// As [`read_head`], with `before_fill` run before each wait for more
/// input: the server bounds the time a head may take with it (see
/// `crate::limits`). A read that times out (`WouldBlock`/`TimedOut`, a
/// socket's `SO_RCVTIMEO`) is [`HeadError::TimedOut`].
pub fn read_head_with<R: BufRead>(
    reader: &mut R,
    mut before_fill: impl FnMut(&mut R) -> Result<(), HeadError>,
) -> Result<Request, HeadError> {
    let mut head = Vec::new();
    loop {
        before_fill(reader)?;
        let available = match reader.fill_buf() {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(HeadError::TimedOut)
            }
            Err(error) => return Err(HeadError::Io(error)),
        };
        if available.is_empty() {
            return if head.is_empty() {
                Err(HeadError::Closed)
            } else {
                Err(HeadError::Malformed("truncated request head".to_owned()))
            };
        }
        if head.is_empty() {
            // Blank lines before a request are allowed (RFC 9112 2.2);
            // skipped as they come, however the bytes arrive.
            let blank = available
                .iter()
                .take_while(|byte| matches!(byte, b'\r' | b'\n'))
                .count();
            if blank > 0 {
                reader.consume(blank);
                continue;
            }
        }
        // Take bytes up to and including the blank line, no further (the
        // rest is the body or the next request).
        let start = head.len().saturating_sub(3);
        head.extend_from_slice(available);
        let end = find_head_end(&head, start);
        let taken = match end {
            Some(end) => {
                let extra = head.len() - end;
                head.truncate(end);
                available.len() - extra
            }
            None => available.len(),
        };
        reader.consume(taken);
        if end.is_some() {
            break;
        }
        if head.len() > MAX_HEAD {
            return Err(HeadError::TooLarge);
        }
    }
    if head.len() > MAX_HEAD {
        return Err(HeadError::TooLarge);
    }
    parse_head(&head)
}

fn find_head_end(bytes: &[u8], from: usize) -> Option<usize> {
    bytes[from..]
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .map(|position| from + position + 4)
}

/// Parses a complete head (ending in a blank line).
pub fn parse_head(head: &[u8]) -> Result<Request, HeadError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut headers);
    match parsed.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => {
            return Err(HeadError::Malformed("incomplete request head".to_owned()))
        }
        Err(error) => return Err(HeadError::Malformed(error.to_string())),
    }
    let method = parsed
        .method
        .ok_or_else(|| HeadError::Malformed("no method".to_owned()))?
        .to_owned();
    let target = parsed
        .path
        .ok_or_else(|| HeadError::Malformed("no path".to_owned()))?;
    if !target.starts_with('/') {
        return Err(HeadError::Malformed(format!(
            "unsupported request target {target:?}"
        )));
    }
    let version = parsed.version.unwrap_or(1);
    let mut header_list = Vec::with_capacity(parsed.headers.len());
    for header in parsed.headers.iter() {
        let value = std::str::from_utf8(header.value)
            .map_err(|_| HeadError::Malformed(format!("header {} is not UTF-8", header.name)))?;
        header_list.push((header.name.to_ascii_lowercase(), value.trim().to_owned()));
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let query = parse_query(query)?;
    let mut request = Request {
        method,
        target: path.to_owned(),
        query,
        headers: header_list,
        body: BodyKind::Empty,
        close: false,
    };
    let connection = request
        .header("connection")
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    request.close =
        connection.contains("close") || (version == 0 && !connection.contains("keep-alive"));
    let chunked = request
        .header("transfer-encoding")
        .map(|value| value.to_ascii_lowercase());
    let lengths: Vec<&str> = request
        .headers
        .iter()
        .filter(|(key, _)| key == "content-length")
        .map(|(_, value)| value.as_str())
        .collect();
    request.body = match (chunked, lengths.as_slice()) {
        (Some(encoding), []) if encoding == "chunked" => BodyKind::Chunked,
        (Some(encoding), _) => {
            return Err(HeadError::Malformed(format!(
                "unsupported transfer encoding {encoding:?}"
            )))
        }
        (None, []) => BodyKind::Empty,
        (None, [length]) => match length.parse::<u64>() {
            Ok(0) => BodyKind::Empty,
            Ok(length) => BodyKind::Length(length),
            Err(_) => {
                return Err(HeadError::Malformed(format!(
                    "invalid Content-Length {length:?}"
                )))
            }
        },
        (None, _) => {
            return Err(HeadError::Malformed(
                "several Content-Length headers".to_owned(),
            ))
        }
    };
    Ok(request)
}

/// `a=1&b=x%20y` → pairs; `+` is a space, as Go's `url.ParseQuery`.
pub fn parse_query(query: &str) -> Result<Vec<(String, String)>, HeadError> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            Ok((
                percent_decode(&key.replace('+', " "))?,
                percent_decode(&value.replace('+', " "))?,
            ))
        })
        .collect()
}

/// Decodes `%XX` escapes; the result must be UTF-8 without NUL.
pub fn percent_decode(text: &str) -> Result<String, HeadError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = bytes
                .get(index + 1..index + 3)
                .and_then(|hex| std::str::from_utf8(hex).ok())
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                .ok_or_else(|| HeadError::Malformed(format!("invalid escape in {text:?}")))?;
            out.push(hex);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    if out.contains(&0) {
        return Err(HeadError::Malformed("NUL in the request".to_owned()));
    }
    String::from_utf8(out).map_err(|_| HeadError::Malformed(format!("{text:?} is not UTF-8")))
}

/// Reads a request body as it arrives: `Content-Length` bytes, or chunks.
///
/// Dropped before the end (a tar reader stops at the archive's end marker,
/// before the padding and the last chunk), it reads what is left, up to
/// [`LEFTOVER_LIMIT`], so that the next request on the connection starts
/// where it should; `complete` (when given) says whether it got there.
pub struct BodyReader<'r, R: BufRead> {
    reader: &'r mut R,
    state: BodyState,
    complete: Option<&'r std::cell::Cell<bool>>,
}

/// How much of a body a handler left unread is read away on its behalf;
/// past this the connection closes instead.
pub const LEFTOVER_LIMIT: u64 = 1 << 20;

enum BodyState {
    Length(u64),
    /// Bytes left in the current chunk; None before a chunk-size line.
    Chunk(Option<u64>),
    Done,
}

impl<'r, R: BufRead> BodyReader<'r, R> {
    pub fn new(reader: &'r mut R, kind: &BodyKind) -> Self {
        let state = match kind {
            BodyKind::Empty => BodyState::Done,
            BodyKind::Length(length) => BodyState::Length(*length),
            BodyKind::Chunked => BodyState::Chunk(None),
        };
        Self {
            reader,
            state,
            complete: None,
        }
    }

    /// A reader that records in `complete` whether the whole body was read
    /// by the time it is dropped.
    pub fn reporting(
        reader: &'r mut R,
        kind: &BodyKind,
        complete: &'r std::cell::Cell<bool>,
    ) -> Self {
        let mut body = Self::new(reader, kind);
        body.complete = Some(complete);
        body
    }

    pub fn is_done(&self) -> bool {
        matches!(self.state, BodyState::Done)
    }

    fn read_line(&mut self) -> std::io::Result<String> {
        let mut line = Vec::new();
        // Bounded: a chunk-size line is short.
        (&mut *self.reader)
            .take(4096)
            .read_until(b'\n', &mut line)?;
        if !line.ends_with(b"\n") {
            return Err(invalid("truncated chunked body"));
        }
        String::from_utf8(line).map_err(|_| invalid("chunk size is not text"))
    }
}

fn invalid(message: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, message.to_owned())
}

impl<R: BufRead> Read for BodyReader<'_, R> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        loop {
            match self.state {
                BodyState::Done => return Ok(0),
                BodyState::Length(0) => {
                    self.state = BodyState::Done;
                    return Ok(0);
                }
                BodyState::Length(left) => {
                    let want = buffer
                        .len()
                        .min(usize::try_from(left).unwrap_or(usize::MAX));
                    let read = self.reader.read(&mut buffer[..want])?;
                    if read == 0 {
                        return Err(invalid("body shorter than Content-Length"));
                    }
                    self.state = BodyState::Length(left - read as u64);
                    return Ok(read);
                }
                BodyState::Chunk(None) => {
                    let line = self.read_line()?;
                    let size_text = line.trim().split(';').next().unwrap_or_default().trim();
                    let size = u64::from_str_radix(size_text, 16)
                        .map_err(|_| invalid("invalid chunk size"))?;
                    if size == 0 {
                        // Trailers, then the blank line.
                        loop {
                            let trailer = self.read_line()?;
                            if trailer.trim().is_empty() {
                                break;
                            }
                        }
                        self.state = BodyState::Done;
                        return Ok(0);
                    }
                    self.state = BodyState::Chunk(Some(size));
                }
                BodyState::Chunk(Some(0)) => {
                    let line = self.read_line()?;
                    if !line.trim().is_empty() {
                        return Err(invalid("missing CRLF after a chunk"));
                    }
                    self.state = BodyState::Chunk(None);
                }
                BodyState::Chunk(Some(left)) => {
                    let want = buffer
                        .len()
                        .min(usize::try_from(left).unwrap_or(usize::MAX));
                    let read = self.reader.read(&mut buffer[..want])?;
                    if read == 0 {
                        return Err(invalid("truncated chunk"));
                    }
                    self.state = BodyState::Chunk(Some(left - read as u64));
                    return Ok(read);
                }
            }
        }
    }
}

impl<R: BufRead> Drop for BodyReader<'_, R> {
    fn drop(&mut self) {
        if !self.is_done() {
            let _ = std::io::copy(&mut (&mut *self).take(LEFTOVER_LIMIT), &mut std::io::sink());
            // One more read sees the end of a body that filled the limit exactly.
            let _ = self.read(&mut [0u8; 1]);
        }
        if let Some(complete) = self.complete {
            complete.set(self.is_done());
        }
    }
}

/// Reads the whole body, failing with `Err(None)` past `limit` bytes.
pub fn read_limited(
    reader: &mut impl Read,
    limit: usize,
) -> Result<Vec<u8>, Option<std::io::Error>> {
    let mut body = Vec::new();
    let read = reader
        .take(limit as u64 + 1)
        .read_to_end(&mut body)
        .map_err(Some)?;
    if read > limit {
        return Err(None);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn head(text: &str) -> Result<Request, HeadError> {
        read_head(&mut std::io::BufReader::new(text.as_bytes()))
    }

    #[test]
    fn parses_a_docker_request() {
        let request = head(
            "GET /v1.41/containers/json?all=1&filters=%7B%22status%22%3A%5B%22running%22%5D%7D HTTP/1.1\r\nHost: docker\r\nUser-Agent: Docker-Client/20.10\r\n\r\n",
        )
        .unwrap();
        assert_eq!(request.method, "GET");
        assert_eq!(request.target, "/v1.41/containers/json");
        assert!(request.query_bool("all"));
        assert_eq!(request.query("filters"), Some(r#"{"status":["running"]}"#));
        assert_eq!(request.header("host"), Some("docker"));
        assert_eq!(request.body, BodyKind::Empty);
        assert!(!request.close);
    }

    #[test]
    fn refuses_malformed_heads() {
        for text in [
            "GARBAGE\r\n\r\n",
            "GET\r\n\r\n",
            "GET /x HTTP/1.1\r\nContent-Length: x\r\n\r\n",
            "GET /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "GET /x HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
            "GET http://x/ HTTP/1.1\r\n\r\n",
            "GET /x?a=%zz HTTP/1.1\r\n\r\n",
            "GET /x?a=%00 HTTP/1.1\r\n\r\n",
            "GET /x HTTP/1.1\r\nHost",
        ] {
            assert!(
                matches!(head(text), Err(HeadError::Malformed(_))),
                "{text:?} was accepted"
            );
        }
        assert!(matches!(head(""), Err(HeadError::Closed)));
    }

    #[test]
    fn blank_lines_before_a_request_are_skipped_however_they_arrive() {
        assert_eq!(
            head("\r\n\r\nGET /x HTTP/1.1\r\n\r\n").unwrap().target,
            "/x"
        );
        assert!(matches!(head("\r\n\r\n"), Err(HeadError::Closed)));
        // Found by tests/request_fuzz.rs: the same bytes one at a time.
        let mut reader = std::io::BufReader::with_capacity(1, "\r\n\r\n".as_bytes());
        assert!(matches!(read_head(&mut reader), Err(HeadError::Closed)));
    }

    #[test]
    fn refuses_huge_heads() {
        let text = format!("GET /x HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD));
        assert!(matches!(head(&text), Err(HeadError::TooLarge)));
    }

    #[test]
    fn reads_chunked_and_sized_bodies() {
        let text = "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\nGET /next HTTP/1.1\r\n\r\n";
        let mut reader = std::io::BufReader::new(text.as_bytes());
        let request = read_head(&mut reader).unwrap();
        assert_eq!(request.body, BodyKind::Chunked);
        let mut body = BodyReader::new(&mut reader, &request.body);
        assert_eq!(read_limited(&mut body, 100).unwrap(), b"abcde");
        drop(body);
        assert_eq!(read_head(&mut reader).unwrap().target, "/next");

        // A reader dropped part way reads the rest away, and says so.
        let text = "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\nGET /next HTTP/1.1\r\n\r\n";
        let mut reader = std::io::BufReader::new(text.as_bytes());
        let request = read_head(&mut reader).unwrap();
        let complete = std::cell::Cell::new(false);
        let mut body = BodyReader::reporting(&mut reader, &request.body, &complete);
        let mut first = [0u8; 2];
        body.read_exact(&mut first).unwrap();
        drop(body);
        assert!(complete.get());
        assert_eq!(read_head(&mut reader).unwrap().target, "/next");

        let text = "POST /x HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
        let mut reader = std::io::BufReader::new(text.as_bytes());
        let request = read_head(&mut reader).unwrap();
        let mut body = BodyReader::new(&mut reader, &request.body);
        assert!(matches!(read_limited(&mut body, 4), Err(None)));
    }

    #[test]
    fn bad_chunks_are_errors() {
        for text in [
            "zz\r\nabc\r\n0\r\n\r\n",
            "3\r\nab",
            "3\r\nabcX\r\n0\r\n\r\n",
        ] {
            let full = format!("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n{text}");
            let mut reader = std::io::BufReader::new(full.as_bytes());
            let request = read_head(&mut reader).unwrap();
            let mut body = BodyReader::new(&mut reader, &request.body);
            assert!(
                matches!(read_limited(&mut body, 100), Err(Some(_))),
                "{text:?}"
            );
        }
    }
}
