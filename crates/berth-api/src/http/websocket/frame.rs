//! Websocket frames (RFC 6455 section 5): a streaming decoder of the
//! client's (masked) frames with the checks that close a connection, and
//! the server's (unmasked) frames.

/// The longest data frame accepted. x/net's default limit for a whole
/// message (`DefaultMaxPayloadBytes`, 32 MiB) is a fair bound for one
/// frame; frames are streamed, not held, so it bounds nothing in memory.
pub const MAX_FRAME: u64 = 32 << 20;

/// Control frames carry at most this much (RFC 6455 5.5).
const MAX_CONTROL_PAYLOAD: u64 = 125;

/// Close status codes (RFC 6455 7.4.1).
pub const CLOSE_NORMAL: u16 = 1000;
pub const CLOSE_PROTOCOL_ERROR: u16 = 1002;
pub const CLOSE_INVALID_DATA: u16 = 1007;
pub const CLOSE_TOO_BIG: u16 = 1009;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opcode {
    Continuation,
    Text,
    Binary,
    Close,
    Ping,
    Pong,
}

impl Opcode {
    fn from_bits(bits: u8) -> Option<Self> {
        Some(match bits {
            0x0 => Self::Continuation,
            0x1 => Self::Text,
            0x2 => Self::Binary,
            0x8 => Self::Close,
            0x9 => Self::Ping,
            0xa => Self::Pong,
            _ => return None,
        })
    }

    fn bits(self) -> u8 {
        match self {
            Self::Continuation => 0x0,
            Self::Text => 0x1,
            Self::Binary => 0x2,
            Self::Close => 0x8,
            Self::Ping => 0x9,
            Self::Pong => 0xa,
        }
    }

    fn is_control(self) -> bool {
        matches!(self, Self::Close | Self::Ping | Self::Pong)
    }
}

/// One frame from the client, as far as the server acts on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// Bytes of a text or binary message, as they arrive (a long frame
    /// comes in several pieces; fragments are not joined).
    Data(Vec<u8>),
    Ping(Vec<u8>),
    Pong(Vec<u8>),
    /// The client's close, with its status code when it sent one.
    Close(Option<u16>),
}

/// A frame the server will not take; the connection is closed with
/// [`FrameError::close_code`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("client frame is not masked")]
    Unmasked,
    #[error("frame has reserved bits set (no extension was agreed)")]
    ReservedBits,
    #[error("frame has the unknown opcode {0:#x}")]
    UnknownOpcode(u8),
    #[error("control frame is fragmented")]
    FragmentedControl,
    #[error("control frame of {0} bytes (at most 125)")]
    ControlTooLong(u64),
    #[error("frame length has its most significant bit set")]
    BadLength,
    #[error("frame of {length} bytes is over the limit of {limit}")]
    TooLarge { length: u64, limit: u64 },
    #[error("continuation frame without a message to continue")]
    UnexpectedContinuation,
    #[error("new message before the fragmented one ended")]
    UnfinishedMessage,
    #[error("close frame with a one-byte payload")]
    ShortClose,
    #[error("close frame with the status code {0}, which may not be sent")]
    BadCloseCode(u16),
    #[error("close frame whose reason is not UTF-8")]
    CloseReasonNotUtf8,
}

impl FrameError {
    /// The status the server's close frame carries (RFC 6455 7.4.1).
    pub fn close_code(&self) -> u16 {
        match self {
            Self::TooLarge { .. } => CLOSE_TOO_BIG,
            Self::CloseReasonNotUtf8 => CLOSE_INVALID_DATA,
            _ => CLOSE_PROTOCOL_ERROR,
        }
    }
}

/// The data frame whose payload is being read.
#[derive(Debug)]
struct Payload {
    mask: [u8; 4],
    /// Payload bytes not yet read.
    remaining: u64,
    /// Payload bytes already read (where the mask stands).
    done: u64,
    fin: bool,
}

/// Turns the client's bytes into frames, however they are split across
/// reads. Data payloads are passed on as they come, so memory stays
/// bounded by one read and one control frame whatever the frame length.
#[derive(Debug)]
pub struct Decoder {
    /// Bytes not yet decoded: part of a header or of a control frame.
    pending: Vec<u8>,
    payload: Option<Payload>,
    /// A fragmented message is open (the next data frame must continue it).
    in_message: bool,
    max_frame: u64,
}

/// A frame header, once all of it has arrived.
struct Header {
    fin: bool,
    opcode: Opcode,
    length: u64,
    mask: [u8; 4],
    size: usize,
}

impl Decoder {
    pub fn new(max_frame: u64) -> Self {
        Self {
            pending: Vec::new(),
            payload: None,
            in_message: false,
            max_frame,
        }
    }

    /// Decodes `input`, appending whole control frames and the data bytes
    /// that arrived to `frames`. After an error (or a close frame) the
    /// connection is over; frames decoded before it are still in `frames`.
    pub fn decode(&mut self, input: &[u8], frames: &mut Vec<Frame>) -> Result<(), FrameError> {
        self.pending.extend_from_slice(input);
        let mut start = 0;
        let result = self.decode_pending(&mut start, frames);
        self.pending.drain(..start);
        result
    }

    fn decode_pending(
        &mut self,
        start: &mut usize,
        frames: &mut Vec<Frame>,
    ) -> Result<(), FrameError> {
        loop {
            if let Some(payload) = self.payload.as_mut() {
                let available = (self.pending.len() - *start) as u64;
                let take = available.min(payload.remaining);
                if take == 0 && payload.remaining > 0 {
                    return Ok(());
                }
                // `take` is at most what `pending` holds, so it fits a usize.
                let end = *start + take as usize;
                let mut bytes = self.pending[*start..end].to_vec();
                unmask(&mut bytes, payload.mask, payload.done);
                *start = end;
                payload.remaining -= take;
                payload.done += take;
                if !bytes.is_empty() {
                    frames.push(Frame::Data(bytes));
                }
                if payload.remaining == 0 {
                    self.in_message = !payload.fin;
                    self.payload = None;
                }
                continue;
            }
            let Some(header) = self.header(&self.pending[*start..])? else {
                return Ok(());
            };
            if header.opcode.is_control() {
                let total = header.size + header.length as usize;
                if self.pending.len() - *start < total {
                    return Ok(());
                }
                let mut body = self.pending[*start + header.size..*start + total].to_vec();
                unmask(&mut body, header.mask, 0);
                *start += total;
                let frame = match header.opcode {
                    Opcode::Ping => Frame::Ping(body),
                    Opcode::Pong => Frame::Pong(body),
                    _ => Frame::Close(close_code(&body)?),
                };
                let closed = matches!(frame, Frame::Close(_));
                frames.push(frame);
                if closed {
                    return Ok(());
                }
                continue;
            }
            match (header.opcode, self.in_message) {
                (Opcode::Continuation, false) => return Err(FrameError::UnexpectedContinuation),
                (Opcode::Text | Opcode::Binary, true) => return Err(FrameError::UnfinishedMessage),
                _ => {}
            }
            *start += header.size;
            self.payload = Some(Payload {
                mask: header.mask,
                remaining: header.length,
                done: 0,
                fin: header.fin,
            });
        }
    }

    /// Parses and checks the header at the start of `bytes`; None until
    /// all of it has arrived. Each check is made as soon as its bytes are
    /// there, so a bad frame is refused without waiting for more.
    fn header(&self, bytes: &[u8]) -> Result<Option<Header>, FrameError> {
        let [first, second, ..] = *bytes else {
            return Ok(None);
        };
        let fin = first & 0x80 != 0;
        if first & 0x70 != 0 {
            return Err(FrameError::ReservedBits);
        }
        let opcode =
            Opcode::from_bits(first & 0x0f).ok_or(FrameError::UnknownOpcode(first & 0x0f))?;
        if second & 0x80 == 0 {
            return Err(FrameError::Unmasked);
        }
        let short = u64::from(second & 0x7f);
        if opcode.is_control() {
            if !fin {
                return Err(FrameError::FragmentedControl);
            }
            if short > MAX_CONTROL_PAYLOAD {
                return Err(FrameError::ControlTooLong(short));
            }
        }
        let (length, mask_at) = match short {
            126 => match bytes.get(2..4) {
                Some(&[high, low]) => (u64::from(u16::from_be_bytes([high, low])), 4),
                _ => return Ok(None),
            },
            127 => match bytes.get(2..10) {
                Some(field) => {
                    let mut word = [0u8; 8];
                    word.copy_from_slice(field);
                    let length = u64::from_be_bytes(word);
                    if length >> 63 != 0 {
                        return Err(FrameError::BadLength);
                    }
                    (length, 10)
                }
                None => return Ok(None),
            },
            length => (length, 2),
        };
        if length > self.max_frame {
            return Err(FrameError::TooLarge {
                length,
                limit: self.max_frame,
            });
        }
        let Some(&[a, b, c, d]) = bytes.get(mask_at..mask_at + 4) else {
            return Ok(None);
        };
        Ok(Some(Header {
            fin,
            opcode,
            length,
            mask: [a, b, c, d],
            size: mask_at + 4,
        }))
    }
}

/// XORs `bytes` with the mask, starting `offset` bytes into the payload.
fn unmask(bytes: &mut [u8], mask: [u8; 4], offset: u64) {
    let shift = (offset % 4) as usize;
    for (index, byte) in bytes.iter_mut().enumerate() {
        *byte ^= mask[(index + shift) % 4];
    }
}

/// The status code of a close frame's payload (RFC 6455 5.5.1, 7.4).
fn close_code(body: &[u8]) -> Result<Option<u16>, FrameError> {
    match body {
        [] => Ok(None),
        [_] => Err(FrameError::ShortClose),
        [high, low, reason @ ..] => {
            let code = u16::from_be_bytes([*high, *low]);
            // 1004 is reserved; 1005, 1006 and 1015 only describe a close,
            // they are never sent; below 1000 nothing is defined.
            let allowed = matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999);
            if !allowed {
                return Err(FrameError::BadCloseCode(code));
            }
            if std::str::from_utf8(reason).is_err() {
                return Err(FrameError::CloseReasonNotUtf8);
            }
            Ok(Some(code))
        }
    }
}

/// A whole, unmasked server frame.
pub fn encode(opcode: Opcode, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(payload.len() + 10);
    frame.push(0x80 | opcode.bits());
    let length = payload.len();
    if length < 126 {
        frame.push(length as u8);
    } else if let Ok(short) = u16::try_from(length) {
        frame.push(126);
        frame.extend_from_slice(&short.to_be_bytes());
    } else {
        frame.push(127);
        frame.extend_from_slice(&(length as u64).to_be_bytes());
    }
    frame.extend_from_slice(payload);
    frame
}

/// A close frame with `code` and no reason.
pub fn close_frame(code: u16) -> Vec<u8> {
    encode(Opcode::Close, &code.to_be_bytes())
}

/// A client frame for tests: masked with `mask`, FIN as given.
#[cfg(test)]
pub(crate) fn client_frame(fin: bool, opcode: u8, payload: &[u8], mask: [u8; 4]) -> Vec<u8> {
    let mut frame = vec![if fin { 0x80 } else { 0 } | opcode];
    let length = payload.len();
    if length < 126 {
        frame.push(0x80 | length as u8);
    } else if length <= usize::from(u16::MAX) {
        frame.push(0x80 | 126);
        frame.extend_from_slice(&(length as u16).to_be_bytes());
    } else {
        frame.push(0x80 | 127);
        frame.extend_from_slice(&(length as u64).to_be_bytes());
    }
    frame.extend_from_slice(&mask);
    frame.extend(
        payload
            .iter()
            .enumerate()
            .map(|(index, byte)| byte ^ mask[index % 4]),
    );
    frame
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

    fn decode_all(input: &[u8]) -> (Vec<Frame>, Result<(), FrameError>) {
        let mut decoder = Decoder::new(MAX_FRAME);
        let mut frames = Vec::new();
        let result = decoder.decode(input, &mut frames);
        (frames, result)
    }

    /// Joins consecutive data pieces (how they are split is not the point).
    fn joined(frames: Vec<Frame>) -> Vec<Frame> {
        let mut out: Vec<Frame> = Vec::new();
        for frame in frames {
            match (out.last_mut(), frame) {
                (Some(Frame::Data(previous)), Frame::Data(bytes)) => previous.extend(bytes),
                (_, frame) => out.push(frame),
            }
        }
        out
    }

    #[test]
    fn masked_frames_decode_however_the_bytes_are_split() {
        let payload: Vec<u8> = (0..300u32).map(|n| (n * 7) as u8).collect();
        let mut input = client_frame(true, 0x2, &payload, MASK);
        input.extend(client_frame(true, 0x1, b"hello\n", [1, 2, 3, 4]));
        for chunk in [1, 2, 3, 5, 13, 64, input.len()] {
            let mut decoder = Decoder::new(MAX_FRAME);
            let mut frames = Vec::new();
            for piece in input.chunks(chunk) {
                decoder.decode(piece, &mut frames).unwrap();
            }
            let mut expected = payload.clone();
            expected.extend_from_slice(b"hello\n");
            assert_eq!(joined(frames), [Frame::Data(expected)], "chunk {chunk}");
        }
    }

    #[test]
    fn fragments_pass_on_with_control_frames_between() {
        let mut input = client_frame(false, 0x1, b"frag1-", MASK);
        input.extend(client_frame(true, 0x9, b"ping!", MASK));
        input.extend(client_frame(false, 0x0, b"frag2-", MASK));
        input.extend(client_frame(true, 0x0, b"frag3\n", MASK));
        // An empty final frame is allowed too.
        input.extend(client_frame(true, 0x2, b"", MASK));
        input.extend(client_frame(true, 0xa, b"", MASK));
        let (frames, result) = decode_all(&input);
        result.unwrap();
        assert_eq!(
            frames,
            [
                Frame::Data(b"frag1-".to_vec()),
                Frame::Ping(b"ping!".to_vec()),
                Frame::Data(b"frag2-".to_vec()),
                Frame::Data(b"frag3\n".to_vec()),
                Frame::Pong(Vec::new()),
            ]
        );
    }

    #[test]
    fn bad_fragmentation_is_a_protocol_error() {
        let (_, result) = decode_all(&client_frame(true, 0x0, b"x", MASK));
        assert_eq!(result, Err(FrameError::UnexpectedContinuation));
        let mut input = client_frame(false, 0x1, b"a", MASK);
        input.extend(client_frame(true, 0x1, b"b", MASK));
        let (frames, result) = decode_all(&input);
        assert_eq!(frames, [Frame::Data(b"a".to_vec())]);
        assert_eq!(result, Err(FrameError::UnfinishedMessage));
        let (_, result) = decode_all(&client_frame(false, 0x9, b"", MASK));
        assert_eq!(result, Err(FrameError::FragmentedControl));
        assert_eq!(result.unwrap_err().close_code(), CLOSE_PROTOCOL_ERROR);
    }

    #[test]
    fn malformed_headers_are_refused_from_their_first_bytes() {
        // Unmasked, as x/net refuses it (1002).
        let (_, result) = decode_all(&[0x81, 0x05]);
        assert_eq!(result, Err(FrameError::Unmasked));
        let (_, result) = decode_all(&[0xc1, 0x80]);
        assert_eq!(result, Err(FrameError::ReservedBits));
        let (_, result) = decode_all(&[0x83, 0x80]);
        assert_eq!(result, Err(FrameError::UnknownOpcode(3)));
        let (_, result) = decode_all(&[0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(result, Err(FrameError::BadLength));
    }

    #[test]
    fn oversized_frames_are_refused_before_their_payload() {
        // A control frame of 126 bytes: the RFC's limit is 125.
        let (_, result) = decode_all(&client_frame(true, 0x9, &[0; 126], MASK));
        assert_eq!(result, Err(FrameError::ControlTooLong(126)));
        // A data frame announcing more than the limit: refused from the
        // header alone, with 1009.
        let mut decoder = Decoder::new(1000);
        let mut frames = Vec::new();
        let header = [0x82, 0x80 | 126, 0x03, 0xe9];
        let error = decoder.decode(&header, &mut frames).unwrap_err();
        assert_eq!(
            error,
            FrameError::TooLarge {
                length: 1001,
                limit: 1000
            }
        );
        assert_eq!(error.close_code(), CLOSE_TOO_BIG);
        // At the limit is fine.
        let mut decoder = Decoder::new(1000);
        decoder
            .decode(&client_frame(true, 0x2, &[7; 1000], MASK), &mut frames)
            .unwrap();
        assert_eq!(joined(frames), [Frame::Data(vec![7; 1000])]);
    }

    #[test]
    fn long_frames_stream_without_being_held() {
        let payload = vec![0x5a; 70_000];
        let input = client_frame(true, 0x2, &payload, MASK);
        assert_eq!(&input[..2], [0x82, 0x80 | 127]);
        let mut decoder = Decoder::new(MAX_FRAME);
        let mut received = Vec::new();
        for piece in input.chunks(4096) {
            let mut frames = Vec::new();
            decoder.decode(piece, &mut frames).unwrap();
            assert!(decoder.pending.len() <= 14, "{}", decoder.pending.len());
            for frame in frames {
                let Frame::Data(bytes) = frame else {
                    panic!("unexpected {frame:?}");
                };
                received.extend(bytes);
            }
        }
        assert_eq!(received, payload);
    }

    #[test]
    fn close_frames_and_their_codes() {
        let (frames, result) = decode_all(&client_frame(true, 0x8, b"", MASK));
        result.unwrap();
        assert_eq!(frames, [Frame::Close(None)]);
        let mut body = 1001u16.to_be_bytes().to_vec();
        body.extend_from_slice(b"going away");
        let mut input = client_frame(true, 0x8, &body, MASK);
        // Whatever follows a close is not decoded.
        input.extend(client_frame(true, 0x2, b"late", MASK));
        let (frames, result) = decode_all(&input);
        result.unwrap();
        assert_eq!(frames, [Frame::Close(Some(1001))]);
        let (_, result) = decode_all(&client_frame(true, 0x8, &[3], MASK));
        assert_eq!(result, Err(FrameError::ShortClose));
        let (_, result) = decode_all(&client_frame(true, 0x8, &1005u16.to_be_bytes(), MASK));
        assert_eq!(result, Err(FrameError::BadCloseCode(1005)));
        let mut body = 1000u16.to_be_bytes().to_vec();
        body.extend_from_slice(&[0xff, 0xfe]);
        let (_, result) = decode_all(&client_frame(true, 0x8, &body, MASK));
        assert_eq!(result, Err(FrameError::CloseReasonNotUtf8));
        assert_eq!(result.unwrap_err().close_code(), CLOSE_INVALID_DATA);
    }

    #[test]
    fn server_frames_use_the_shortest_length() {
        assert_eq!(encode(Opcode::Binary, b"hi"), [0x82, 2, b'h', b'i']);
        assert_eq!(&encode(Opcode::Text, &[0; 125])[..2], [0x81, 125]);
        assert_eq!(&encode(Opcode::Binary, &[0; 126])[..4], [0x82, 126, 0, 126]);
        assert_eq!(
            &encode(Opcode::Binary, &[0; 65_535])[..4],
            [0x82, 126, 0xff, 0xff]
        );
        assert_eq!(
            &encode(Opcode::Binary, &[0; 65_536])[..10],
            [0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0]
        );
        assert_eq!(close_frame(1000), [0x88, 2, 0x03, 0xe8]);
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // A seeded xorshift: the same cases on every run.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..2000 {
            let length = (next() % 64) as usize;
            let mut bytes: Vec<u8> = (0..length).map(|_| next() as u8).collect();
            // Often a plausible start, so decoding gets past the first checks.
            if next() % 2 == 0 && bytes.len() > 2 {
                bytes[0] &= 0x8f;
                bytes[1] |= 0x80;
            }
            let mut decoder = Decoder::new(1024);
            let mut frames = Vec::new();
            for piece in bytes.chunks(1 + (next() % 7) as usize) {
                if decoder.decode(piece, &mut frames).is_err() {
                    break;
                }
            }
        }
    }
}
