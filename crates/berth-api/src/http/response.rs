//! Writing responses: whole ones with a length, chunked streams, and the
//! `101 UPGRADED` that turns a connection into a raw stream (attach, exec).

use std::io::Write;

use serde_json::Value;

use crate::version::{API_VERSION, SERVER_HEADER};

/// A complete response.
#[derive(Clone, Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(status: u16, value: &Value) -> Self {
        let mut body = serde_json::to_vec(value).unwrap_or_else(|_| b"null".to_vec());
        body.push(b'\n');
        Self {
            status,
            headers: vec![("Content-Type".to_owned(), "application/json".to_owned())],
            body,
        }
    }

    pub fn empty(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    pub fn text(status: u16, text: &str) -> Self {
        Self {
            status,
            headers: vec![(
                "Content-Type".to_owned(),
                "text/plain; charset=utf-8".to_owned(),
            )],
            body: text.as_bytes().to_vec(),
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

pub fn reason(status: u16) -> &'static str {
    match status {
        101 => "UPGRADED",
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Payload Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "Unknown",
    }
}

/// The headers Docker puts on every response.
fn common_headers(out: &mut Vec<u8>) {
    out.extend_from_slice(
        format!(
            "Api-Version: {API_VERSION}\r\nDocker-Experimental: false\r\nOstype: linux\r\nServer: {SERVER_HEADER}\r\n"
        )
        .as_bytes(),
    );
}

/// Writes `response`; `head_only` for HEAD requests.
pub fn write_response(
    stream: &mut impl Write,
    response: &Response,
    keep_alive: bool,
    head_only: bool,
) -> std::io::Result<()> {
    let mut out = Vec::with_capacity(256 + response.body.len());
    out.extend_from_slice(
        format!(
            "HTTP/1.1 {} {}\r\n",
            response.status,
            reason(response.status)
        )
        .as_bytes(),
    );
    common_headers(&mut out);
    for (name, value) in &response.headers {
        out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    // 204 and 304 carry no body and no length (RFC 9110 8.6).
    if !matches!(response.status, 204 | 304) {
        out.extend_from_slice(format!("Content-Length: {}\r\n", response.body.len()).as_bytes());
    }
    if !keep_alive {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    if !head_only && !matches!(response.status, 204 | 304) {
        out.extend_from_slice(&response.body);
    }
    stream.write_all(&out)?;
    stream.flush()
}

/// Starts a chunked response; the returned writer sends each write as one
/// chunk, and `finish` ends the stream.
pub fn start_chunked<W: Write>(
    mut stream: W,
    status: u16,
    content_type: &str,
    headers: &[(&str, String)],
) -> std::io::Result<ChunkedWriter<W>> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(format!("HTTP/1.1 {status} {}\r\n", reason(status)).as_bytes());
    common_headers(&mut out);
    out.extend_from_slice(format!("Content-Type: {content_type}\r\n").as_bytes());
    for (name, value) in headers {
        out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    out.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
    stream.write_all(&out)?;
    stream.flush()?;
    Ok(ChunkedWriter {
        stream,
        finished: false,
    })
}

pub struct ChunkedWriter<W: Write> {
    stream: W,
    finished: bool,
}

impl<W: Write> ChunkedWriter<W> {
    /// Writes the last chunk. Dropping without it leaves the client
    /// waiting: callers finish, then close the connection on errors.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.finished = true;
        self.stream.write_all(b"0\r\n\r\n")?;
        self.stream.flush()
    }

    /// One JSON value and a newline, as one chunk (Docker's JSON streams).
    pub fn json_line(&mut self, value: &Value) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(value).unwrap_or_default();
        line.extend_from_slice(b"\r\n");
        self.write_all(&line)?;
        self.flush()
    }
}

impl<W: Write> Write for ChunkedWriter<W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if bytes.is_empty() || self.finished {
            return Ok(bytes.len());
        }
        let mut chunk = Vec::with_capacity(bytes.len() + 16);
        chunk.extend_from_slice(format!("{:x}\r\n", bytes.len()).as_bytes());
        chunk.extend_from_slice(bytes);
        chunk.extend_from_slice(b"\r\n");
        self.stream.write_all(&chunk)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.stream.flush()
    }
}

/// Switches to a raw stream: `101 UPGRADED` when the client asked to
/// upgrade, else `200 OK` with the raw stream as body (Docker does both).
pub fn write_upgrade(
    stream: &mut impl Write,
    upgrade: bool,
    content_type: &str,
) -> std::io::Result<()> {
    let mut out = Vec::with_capacity(256);
    if upgrade {
        out.extend_from_slice(b"HTTP/1.1 101 UPGRADED\r\n");
    } else {
        out.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
    }
    common_headers(&mut out);
    out.extend_from_slice(format!("Content-Type: {content_type}\r\n").as_bytes());
    if upgrade {
        out.extend_from_slice(b"Connection: Upgrade\r\nUpgrade: tcp\r\n");
    }
    out.extend_from_slice(b"\r\n");
    stream.write_all(&out)?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn chunked_stream_is_well_formed() {
        let mut out = Vec::new();
        let mut writer = start_chunked(&mut out, 200, "application/json", &[]).unwrap();
        writer.write_all(b"hello").unwrap();
        writer.write_all(b"").unwrap();
        writer.finish().unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(text.contains("Transfer-Encoding: chunked\r\n"));
        assert!(text.ends_with("\r\n\r\n5\r\nhello\r\n0\r\n\r\n"));
    }

    #[test]
    fn no_content_has_no_length() {
        let mut out = Vec::new();
        write_response(&mut out, &Response::empty(204), true, false).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 204 No Content\r\n"));
        assert!(!text.contains("Content-Length"));
    }
}
