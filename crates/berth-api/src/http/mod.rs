//! A small synchronous HTTP/1.1 server side: one thread per connection,
//! keep-alive, chunked streams, and hijacking (the handler keeps the
//! socket). No async runtime: the API's streams are few and long-lived,
//! and a blocking thread per stream keeps the idle server tiny.

pub mod request;
pub mod response;
pub mod websocket;

use std::io::{BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;

pub use request::{read_head, BodyKind, BodyReader, HeadError, Request};
pub use response::{start_chunked, write_response, write_upgrade, ChunkedWriter, Response};

use crate::error::ApiError;

/// JSON bodies larger than this are refused (413): a create request with
/// thousands of environment entries is a few hundred KiB.
pub const MAX_JSON_BODY: usize = 4 * 1024 * 1024;

/// One client connection.
pub struct Connection {
    pub reader: BufReader<UnixStream>,
}

impl Connection {
    pub fn new(stream: UnixStream) -> Self {
        Self {
            reader: BufReader::with_capacity(16 * 1024, stream),
        }
    }

    pub fn stream(&self) -> &UnixStream {
        self.reader.get_ref()
    }
}

/// A request being answered on its connection.
pub struct Exchange<'c> {
    pub request: Request,
    pub connection: &'c mut Connection,
    /// The API version the client asked for (`/v1.41/…`), or the newest.
    pub version: (u32, u32),
    body_read: std::cell::Cell<bool>,
}

impl<'c> Exchange<'c> {
    pub fn new(request: Request, connection: &'c mut Connection, version: (u32, u32)) -> Self {
        let body_read = request.body == BodyKind::Empty;
        Self {
            request,
            connection,
            version,
            body_read: std::cell::Cell::new(body_read),
        }
    }

    pub fn query(&self, name: &str) -> Option<&str> {
        self.request.query(name)
    }

    pub fn query_bool(&self, name: &str) -> bool {
        self.request.query_bool(name)
    }

    /// True when the whole body was read (the connection can take the
    /// next request).
    pub fn body_read(&self) -> bool {
        self.body_read.get()
    }

    /// The body as it arrives (archives, image tars). What the caller
    /// leaves unread is read away when the reader is dropped (see
    /// [`BodyReader`]).
    pub fn body(&mut self) -> BodyReader<'_, BufReader<UnixStream>> {
        BodyReader::reporting(
            &mut self.connection.reader,
            &self.request.body,
            &self.body_read,
        )
    }

    /// The whole body, at most [`MAX_JSON_BODY`] bytes.
    pub fn body_bytes(&mut self) -> Result<Vec<u8>, ApiError> {
        let too_large = || {
            ApiError::new(
                413,
                format!("request body too large (over {MAX_JSON_BODY} bytes)"),
            )
        };
        // Refused before reading a byte of it (the connection then closes:
        // the unread body cannot be told from the next request).
        if let BodyKind::Length(length) = self.request.body {
            if length > MAX_JSON_BODY as u64 {
                return Err(too_large());
            }
        }
        let mut reader = self.body();
        let result = request::read_limited(&mut reader, MAX_JSON_BODY);
        drop(reader);
        result.map_err(|error| match error {
            None => too_large(),
            Some(error) => {
                ApiError::bad_request(format!("failed to read the request body: {error}"))
            }
        })
    }

    /// The body decoded as JSON; an empty body is an error.
    pub fn json<T: DeserializeOwned>(&mut self) -> Result<T, ApiError> {
        let bytes = self.body_bytes()?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(ApiError::bad_request("request body is empty".to_owned()));
        }
        serde_json::from_slice(&bytes)
            .map_err(|error| ApiError::bad_request(format!("invalid JSON body: {error}")))
    }

    /// The body decoded as JSON, or the default for an empty body.
    pub fn json_or_default<T: DeserializeOwned + Default>(&mut self) -> Result<T, ApiError> {
        let bytes = self.body_bytes()?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(T::default());
        }
        serde_json::from_slice(&bytes)
            .map_err(|error| ApiError::bad_request(format!("invalid JSON body: {error}")))
    }

    /// Starts a chunked response on this connection.
    pub fn chunked(
        &mut self,
        status: u16,
        content_type: &str,
        headers: &[(&str, String)],
    ) -> std::io::Result<ChunkedWriter<&UnixStream>> {
        start_chunked(self.connection.stream(), status, content_type, headers)
    }

    /// Turns the connection into a raw stream; returns the socket and
    /// any bytes the client sent after the request head.
    ///
    /// Returns once the client has read the response head (or after
    /// [`HEAD_READ_LIMIT`]): a client that reads the head through a
    /// buffered HTTP parser and the stream from the raw socket after it
    /// (docker-py's `attach` and `exec_start`) loses whatever arrived
    /// together with the head, so the stream must not start before.
    pub fn hijack(&mut self, content_type: &str) -> std::io::Result<(UnixStream, Vec<u8>)> {
        let upgrade = self.request.wants_upgrade();
        let mut stream = self.connection.stream().try_clone()?;
        write_upgrade(&mut stream, upgrade, content_type)?;
        wait_until_peer_read(&stream, HEAD_READ_LIMIT);
        let leftover = self.connection.reader.buffer().to_vec();
        let length = leftover.len();
        std::io::BufRead::consume(&mut self.connection.reader, length);
        Ok((stream, leftover))
    }
}

/// How long a hijack waits for the client to read the response head.
pub const HEAD_READ_LIMIT: Duration = Duration::from_millis(500);

/// Waits until the peer has read every byte written to `stream` (a Unix
/// socket's send queue holds what the peer has not read yet), or until
/// `limit` has passed, or the socket fails.
pub fn wait_until_peer_read(stream: &UnixStream, limit: Duration) {
    let deadline = Instant::now() + limit;
    let mut pause = Duration::from_micros(50);
    while unread_bytes(stream).is_some_and(|unread| unread > 0) && Instant::now() < deadline {
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(5));
    }
}

/// What `stream`'s peer has not read yet (`SIOCOUTQ`: the bytes of the
/// kernel buffers still queued, so more than the payload; 0 once read).
fn unread_bytes(stream: &UnixStream) -> Option<usize> {
    let mut unread: libc::c_int = 0;
    // SAFETY: TIOCOUTQ (SIOCOUTQ) writes one c_int through the pointer,
    // which points at a live local; the descriptor is borrowed from
    // `stream`, open for the whole call.
    let result = unsafe { libc::ioctl(stream.as_raw_fd(), libc::TIOCOUTQ, &mut unread) };
    (result == 0).then(|| usize::try_from(unread).unwrap_or(0))
}

/// Writes `bytes` and ignores a client that went away.
pub fn write_quietly(mut stream: &UnixStream, bytes: &[u8]) -> bool {
    stream.write_all(bytes).is_ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::io::Read;

    #[test]
    fn waits_until_the_peer_has_read_what_was_written() {
        let (mut near, mut far) = UnixStream::pair().unwrap();
        near.write_all(b"HTTP/1.1 101 UPGRADED\r\n\r\n").unwrap();
        assert!(unread_bytes(&near).unwrap() > 0);
        let reader = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            let mut head = [0u8; 25];
            far.read_exact(&mut head).unwrap();
            far
        });
        let started = Instant::now();
        wait_until_peer_read(&near, Duration::from_secs(10));
        let waited = started.elapsed();
        assert_eq!(unread_bytes(&near), Some(0));
        assert!(
            waited >= Duration::from_millis(90),
            "returned after {waited:?}"
        );
        assert!(waited < Duration::from_secs(5), "waited {waited:?}");
        drop(reader.join().unwrap());
    }

    #[test]
    fn gives_up_on_a_peer_that_does_not_read() {
        let (mut near, _far) = UnixStream::pair().unwrap();
        near.write_all(b"unread").unwrap();
        let started = Instant::now();
        wait_until_peer_read(&near, Duration::from_millis(100));
        assert!(started.elapsed() >= Duration::from_millis(100));
        // The queue counts the kernel's buffers, not only the six bytes.
        assert!(unread_bytes(&near).unwrap() > 0);
    }
}
