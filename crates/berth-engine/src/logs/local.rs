//! Docker's `local` log format (moby `daemon/logger/local`): each record is a protobuf
//! `LogEntry` (`api/types/plugins/logdriver/entry.proto`) between two copies of its length
//! as a big-endian `u32`, so the file can be read forwards and backwards.
//!
//! ```text
//! message LogEntry {
//!   string source = 1; int64 time_nano = 2; bytes line = 3; bool partial = 4;
//!   PartialLogEntryMetadata partial_log_metadata = 5;
//! }
//! message PartialLogEntryMetadata { bool last = 1; string id = 2; int32 ordinal = 3; }
//! ```
//!
//! The line is stored without its newline; the reader adds it back to every record that is
//! not partial (a long line's pieces, its last one included, get none: dockerd prints such
//! a line without its newline, and so does berth).

use std::borrow::Cow;

use chrono::{DateTime, Utc};

use super::record::Record;
use super::Stream;

/// The size of each length copy around a record.
pub(crate) const LENGTH_BYTES: usize = 4;

/// moby's decoder refuses records longer than this (`maxMsgLen`).
pub(crate) const MAX_RECORD: usize = 1_000_000;

/// A long line's piece: which line it belongs to and where in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Partial<'a> {
    pub id: &'a str,
    pub ordinal: u32,
    pub last: bool,
}

/// Appends one framed record.
pub(crate) fn encode(
    out: &mut Vec<u8>,
    stream: Stream,
    line: &[u8],
    time: DateTime<Utc>,
    partial: Option<&Partial<'_>>,
) {
    let start = out.len();
    out.extend_from_slice(&[0; LENGTH_BYTES]);
    push_bytes_field(out, 1, stream.as_str().as_bytes());
    let nanos = time.timestamp_nanos_opt().unwrap_or(i64::MAX);
    push_key(out, 2, 0);
    // A negative int64 is its two's complement as a varint, as protobuf says.
    push_varint(out, u64::from_ne_bytes(nanos.to_ne_bytes()));
    if !line.is_empty() {
        push_bytes_field(out, 3, line);
    }
    if let Some(partial) = partial {
        push_key(out, 4, 0);
        push_varint(out, 1);
        let mut metadata = Vec::with_capacity(80);
        if partial.last {
            push_key(&mut metadata, 1, 0);
            push_varint(&mut metadata, 1);
        }
        if !partial.id.is_empty() {
            push_bytes_field(&mut metadata, 2, partial.id.as_bytes());
        }
        if partial.ordinal != 0 {
            push_key(&mut metadata, 3, 0);
            push_varint(&mut metadata, u64::from(partial.ordinal));
        }
        push_bytes_field(out, 5, &metadata);
    }
    let length = u32::try_from(out.len() - start - LENGTH_BYTES).unwrap_or(u32::MAX);
    out[start..start + LENGTH_BYTES].copy_from_slice(&length.to_be_bytes());
    out.extend_from_slice(&length.to_be_bytes());
}

/// The payload of the first whole record at the start of `bytes` and the bytes the record
/// takes with its framing; None while it is incomplete. A length past moby's limit, or two
/// copies that differ, is a corrupt file: `Err` with the bytes to skip (all of them).
pub(crate) fn next_frame(bytes: &[u8]) -> Result<Option<(&[u8], usize)>, usize> {
    let Some(head) = bytes.get(..LENGTH_BYTES) else {
        return Ok(None);
    };
    let length = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
    if length > MAX_RECORD {
        return Err(bytes.len());
    }
    let total = LENGTH_BYTES + length + LENGTH_BYTES;
    let Some(frame) = bytes.get(..total) else {
        return Ok(None);
    };
    if frame[LENGTH_BYTES + length..] != head[..] {
        return Err(bytes.len());
    }
    Ok(Some((&frame[LENGTH_BYTES..LENGTH_BYTES + length], total)))
}

/// Decodes a record's payload. Unknown fields are skipped, as protobuf readers do.
pub(crate) fn decode(payload: &[u8]) -> Option<Record<'_>> {
    let mut source: &[u8] = b"";
    let mut nanos: i64 = 0;
    let mut line: &[u8] = b"";
    let mut partial = false;
    let mut reader = Fields { rest: payload };
    while let Some((number, value)) = reader.next()? {
        match (number, value) {
            (1, Value::Bytes(bytes)) => source = bytes,
            (2, Value::Varint(value)) => nanos = i64::from_ne_bytes(value.to_ne_bytes()),
            (3, Value::Bytes(bytes)) => line = bytes,
            (4, Value::Varint(value)) => partial = value != 0,
            _ => {}
        }
    }
    let mut log = Cow::Borrowed(line);
    if !partial {
        log.to_mut().push(b'\n');
    }
    Some(Record {
        log,
        stream: String::from_utf8_lossy(source),
        time: DateTime::from_timestamp_nanos(nanos),
        attrs: Default::default(),
    })
}

enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Other,
}

struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    /// The next field; `Some(None)` at the end, None when the payload is malformed.
    fn next(&mut self) -> Option<Option<(u64, Value<'a>)>> {
        if self.rest.is_empty() {
            return Some(None);
        }
        let key = self.varint()?;
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => {
                self.rest = self.rest.get(8..)?;
                Value::Other
            }
            2 => {
                let length = usize::try_from(self.varint()?).ok()?;
                let bytes = self.rest.get(..length)?;
                self.rest = &self.rest[length..];
                Value::Bytes(bytes)
            }
            5 => {
                self.rest = self.rest.get(4..)?;
                Value::Other
            }
            _ => return None,
        };
        Some(Some((key >> 3, value)))
    }

    fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for (index, byte) in self.rest.iter().enumerate().take(10) {
            value |= u64::from(byte & 0x7f) << (7 * index);
            if byte & 0x80 == 0 {
                self.rest = &self.rest[index + 1..];
                return Some(value);
            }
        }
        None
    }
}

fn push_key(out: &mut Vec<u8>, number: u64, wire_type: u64) {
    push_varint(out, number << 3 | wire_type);
}

fn push_bytes_field(out: &mut Vec<u8>, number: u64, bytes: &[u8]) {
    push_key(out, number, 2);
    push_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn push_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        // The low seven bits with the continuation bit; the cast keeps exactly those.
        out.push((value & 0x7f) as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nanos(value: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_nanos(value)
    }

    /// The bytes dockerd 20.10 wrote to `local-logs/container.log` for
    /// `echo hello; echo err >&2; printf partial`.
    fn dockerd_file() -> Vec<u8> {
        let hex = concat!(
            "000000190a067374646f757410b59a81f4c29ccaf6181a0568656c6c6f000000",
            "19000000170a06737464657272108f839cf4c29ccaf6181a0365727200000017",
            "000000630a067374646f757410f5f5fa8fc39ccaf6181a077061727469616c20",
            "012a441240643333626465663535616431623266653235333061356230343932",
            "3465393766343739373964363236353265313864316566373961346534363836",
            "6363353035180100000063",
        );
        (0..hex.len())
            .step_by(2)
            .map(|index| u8::from_str_radix(&hex[index..index + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn encodes_records_as_dockerd_does() {
        let file = dockerd_file();
        let (first, used) = next_frame(&file).unwrap().unwrap();
        let record = decode(first).unwrap();
        let time = record.time;
        let mut out = Vec::new();
        encode(&mut out, Stream::Stdout, b"hello", time, None);
        assert_eq!(out, file[..used]);
        // The third: an unfinished last line, partial with a random id.
        let rest = &file[used..];
        let (_, second) = next_frame(rest).unwrap().unwrap();
        let (third, _) = next_frame(&rest[second..]).unwrap().unwrap();
        let record = decode(third).unwrap();
        assert_eq!(record.log.as_ref(), b"partial");
        let mut out = Vec::new();
        let id = "d33bdef55ad1b2fe2530a5b04924e97f47979d62652e18d1ef79a4e4686cc505";
        encode(
            &mut out,
            Stream::Stdout,
            b"partial",
            record.time,
            Some(&Partial {
                id,
                ordinal: 1,
                last: false,
            }),
        );
        assert_eq!(out, rest[second..]);
    }

    #[test]
    fn decodes_lines_with_their_newline_unless_partial() {
        let file = dockerd_file();
        let mut rest = &file[..];
        let mut decoded = Vec::new();
        while let Some((payload, used)) = next_frame(rest).unwrap() {
            let record = decode(payload).unwrap();
            decoded.push((record.stream.into_owned(), record.log.into_owned()));
            rest = &rest[used..];
        }
        assert_eq!(
            decoded,
            [
                ("stdout".to_owned(), b"hello\n".to_vec()),
                ("stderr".to_owned(), b"err\n".to_vec()),
                ("stdout".to_owned(), b"partial".to_vec()),
            ]
        );
    }

    #[test]
    fn round_trips_times_and_empty_lines() {
        for time in [nanos(0), nanos(1_796_136_722_123_456_789), nanos(-5)] {
            let mut out = Vec::new();
            let partial = Partial {
                id: "x",
                ordinal: 2,
                last: true,
            };
            encode(&mut out, Stream::Stderr, b"", time, Some(&partial));
            let (payload, used) = next_frame(&out).unwrap().unwrap();
            assert_eq!(used, out.len());
            let record = decode(payload).unwrap();
            assert_eq!(record.time, time);
            assert_eq!(record.log.as_ref(), b"");
            assert_eq!(record.stream, "stderr");
        }
    }

    #[test]
    fn incomplete_and_corrupt_frames() {
        let mut out = Vec::new();
        encode(&mut out, Stream::Stdout, b"abc", nanos(1), None);
        for cut in 0..out.len() {
            assert_eq!(next_frame(&out[..cut]), Ok(None), "cut at {cut}");
        }
        let mut bad = out.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert_eq!(next_frame(&bad), Err(bad.len()));
        assert_eq!(next_frame(&[0xff, 0xff, 0xff, 0xff]), Err(4));
        assert!(decode(&[0x0a, 0x05, b'a']).is_none());
    }
}
