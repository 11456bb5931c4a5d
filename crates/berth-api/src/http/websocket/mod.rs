//! The server side of RFC 6455 websockets, for Docker's
//! `GET /containers/{id}/attach/ws`: the opening handshake (here), the
//! client's and the server's frames ([`frame`]), and [`serve_stream`],
//! which carries a byte stream over one websocket ([`stream`]).
//!
//! Docker's server is golang.org/x/net/websocket, and berth answers as it
//! does where clients can tell: the handshake's 400 messages, a pong for
//! each ping, a close frame with 1000 in answer to the client's close,
//! 1002 for an unmasked client frame, and data frames passed on as they
//! arrive (a fragmented message is not put back together: the bytes go to
//! a stream either way). Unlike x/net, a malformed frame (reserved bits, an
//! unknown opcode, a fragmented or long control frame, a continuation out
//! of place) also closes the connection with 1002, and a frame longer than
//! the limit with 1009.

pub mod frame;
pub mod stream;

use std::io::Write;
use std::os::unix::net::UnixStream;

use base64::Engine as _;
use serde_json::json;
use sha1::{Digest as _, Sha1};

pub use frame::{Decoder, Frame, FrameError, Opcode, MAX_FRAME};
pub use stream::serve_stream;

use crate::http::{Exchange, Request, Response};

/// The GUID RFC 6455 (section 1.3) appends to the client's key.
const ACCEPT_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// The one protocol version RFC 6455 defines.
const VERSION: &str = "13";

/// Why the opening handshake was refused: x/net's checks and words
/// (`hybiServerHandshaker.ReadHandshake`), all answered with 400.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    #[error("not websocket protocol")]
    NotWebSocket,
    #[error("mismatch challenge/response")]
    MissingKey,
    #[error("missing or bad WebSocket Version")]
    BadVersion,
}

impl HandshakeError {
    /// The 400 answer; a bad version names the one supported
    /// (RFC 6455 4.4).
    pub fn response(&self) -> Response {
        let response = Response::json(400, &json!({ "message": self.to_string() }));
        match self {
            Self::BadVersion => response.with_header("Sec-WebSocket-Version", VERSION),
            _ => response,
        }
    }
}

/// What the server needs to accept a checked handshake.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handshake {
    accept: String,
    protocol: Option<String>,
}

/// Checks the client's opening handshake (RFC 6455 4.2.1).
pub fn check_handshake(request: &Request) -> Result<Handshake, HandshakeError> {
    let upgrade = request.header("upgrade").unwrap_or_default();
    let connection = request.header("connection").unwrap_or_default();
    if !upgrade.trim().eq_ignore_ascii_case("websocket")
        || !connection.to_ascii_lowercase().contains("upgrade")
    {
        return Err(HandshakeError::NotWebSocket);
    }
    let key = request
        .header("sec-websocket-key")
        .map(str::trim)
        .filter(|key| !key.is_empty())
        .ok_or(HandshakeError::MissingKey)?;
    if request.header("sec-websocket-version").map(str::trim) != Some(VERSION) {
        return Err(HandshakeError::BadVersion);
    }
    // Docker offers no subprotocol of its own; like x/net, echo the
    // client's (browsers fail a handshake that ignores the one they sent).
    let protocol = request
        .header("sec-websocket-protocol")
        .and_then(|offered| offered.split(',').map(str::trim).find(|p| !p.is_empty()))
        .map(str::to_owned);
    Ok(Handshake {
        accept: accept_key(key),
        protocol,
    })
}

/// `Sec-WebSocket-Accept`: base64 of the SHA-1 of the key and the GUID.
pub fn accept_key(key: &str) -> String {
    let mut hasher = Sha1::new();
    hasher.update(key.as_bytes());
    hasher.update(ACCEPT_GUID.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(hasher.finalize())
}

/// Answers `101 Switching Protocols` and takes the socket, as
/// [`Exchange::hijack`] does; returns it and what the client sent after
/// its request head (perhaps its first frames).
pub fn upgrade(
    exchange: &mut Exchange<'_>,
    handshake: &Handshake,
) -> std::io::Result<(UnixStream, Vec<u8>)> {
    let mut stream = exchange.connection.stream().try_clone()?;
    let mut head = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n",
        handshake.accept
    );
    if let Some(protocol) = &handshake.protocol {
        head.push_str(&format!("Sec-WebSocket-Protocol: {protocol}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.flush()?;
    let leftover = exchange.connection.reader.buffer().to_vec();
    let length = leftover.len();
    std::io::BufRead::consume(&mut exchange.connection.reader, length);
    Ok((stream, leftover))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn accept_key_is_the_rfc_example() {
        // RFC 6455 section 1.3.
        assert_eq!(
            accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    fn request(headers: &[(&str, &str)]) -> Request {
        let mut text = "GET /containers/x/attach/ws HTTP/1.1\r\nHost: x\r\n".to_owned();
        for (name, value) in headers {
            text.push_str(&format!("{name}: {value}\r\n"));
        }
        text.push_str("\r\n");
        crate::http::request::parse_head(text.as_bytes()).unwrap()
    }

    #[test]
    fn handshake_checks_follow_x_net() {
        let good = [
            ("Upgrade", "websocket"),
            ("Connection", "keep-alive, Upgrade"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
            ("Sec-WebSocket-Version", "13"),
        ];
        let handshake = check_handshake(&request(&good)).unwrap();
        assert_eq!(handshake.accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        assert_eq!(handshake.protocol, None);
        let without = |name: &str| {
            let headers: Vec<_> = good.iter().copied().filter(|(n, _)| *n != name).collect();
            check_handshake(&request(&headers))
        };
        assert_eq!(
            without("Sec-WebSocket-Key"),
            Err(HandshakeError::MissingKey)
        );
        assert_eq!(without("Upgrade"), Err(HandshakeError::NotWebSocket));
        assert_eq!(without("Connection"), Err(HandshakeError::NotWebSocket));
        assert_eq!(
            without("Sec-WebSocket-Version"),
            Err(HandshakeError::BadVersion)
        );
        let response = HandshakeError::BadVersion.response();
        assert_eq!(response.status, 400);
        assert!(response
            .headers
            .contains(&("Sec-WebSocket-Version".to_owned(), "13".to_owned())));
        let mut with_protocol = good.to_vec();
        with_protocol.push(("Sec-WebSocket-Protocol", "chat, superchat"));
        assert_eq!(
            check_handshake(&request(&with_protocol)).unwrap().protocol,
            Some("chat".to_owned())
        );
    }
}
