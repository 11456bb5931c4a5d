//! Byte-level encoders shared by the writer and the reader: dockerd's JSON
//! string escaping and its two timestamp layouts. They append to a caller's
//! buffer so the monitor's hot path never allocates.

use chrono::{DateTime, Datelike, Timelike, Utc};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `bytes` as a quoted JSON string, escaped as dockerd's jsonlog
/// marshaller does (it is not Go's `encoding/json`): `"` and `\` get a
/// backslash, `\n` and `\r` their short escapes, every other control byte and
/// `<`, `>`, `&` become `\u00XX`; each byte that does not start a valid UTF-8
/// sequence becomes `\ufffd` on its own (Go's `utf8.DecodeRune` rule, so
/// `\xe2\x82` is two replacements, not one); U+2028 and U+2029 are escaped;
/// everything else, DEL and tab's neighbours included, is copied as is.
pub(crate) fn push_json_string(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    let mut start = 0;
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        if byte < 0x80 {
            if byte >= 0x20 && !matches!(byte, b'\\' | b'"' | b'<' | b'>' | b'&') {
                index += 1;
                continue;
            }
            out.extend_from_slice(&bytes[start..index]);
            match byte {
                b'\\' | b'"' => out.extend_from_slice(&[b'\\', byte]),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                _ => out.extend_from_slice(&[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[usize::from(byte >> 4)],
                    HEX[usize::from(byte & 0xf)],
                ]),
            }
            index += 1;
            start = index;
            continue;
        }
        match decode_char(&bytes[index..]) {
            None => {
                out.extend_from_slice(&bytes[start..index]);
                out.extend_from_slice(b"\\ufffd");
                index += 1;
                start = index;
            }
            Some((separator @ ('\u{2028}' | '\u{2029}'), width)) => {
                out.extend_from_slice(&bytes[start..index]);
                out.extend_from_slice(if separator == '\u{2028}' {
                    b"\\u2028"
                } else {
                    b"\\u2029"
                });
                index += width;
                start = index;
            }
            Some((_, width)) => index += width,
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Appends `text` as Go's `encoding/json` writes a string (what `json.Marshal`
/// makes of a record's `attrs`): `"`, `\\`, `\n`, `\r` and `\t` get short escapes,
/// other control characters and `<`, `>`, `&` become `\u00XX`, U+2028 and U+2029
/// are escaped, the rest is copied.
pub(crate) fn push_go_json_string(out: &mut Vec<u8>, text: &str) {
    out.push(b'"');
    for character in text.chars() {
        match character {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\u{2028}' => out.extend_from_slice(b"\\u2028"),
            '\u{2029}' => out.extend_from_slice(b"\\u2029"),
            escaped if escaped < ' ' || matches!(escaped, '<' | '>' | '&') => {
                // ASCII, so the code fits a byte.
                let byte = escaped as u8;
                out.extend_from_slice(&[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[usize::from(byte >> 4)],
                    HEX[usize::from(byte & 0xf)],
                ]);
            }
            other => {
                let mut buffer = [0; 4];
                out.extend_from_slice(other.encode_utf8(&mut buffer).as_bytes());
            }
        }
    }
    out.push(b'"');
}

/// The UTF-8 character at the start of `bytes` and its width, or None when
/// the leading byte does not begin a complete, valid sequence.
fn decode_char(bytes: &[u8]) -> Option<(char, usize)> {
    let width = match bytes.first()? {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return None,
    };
    let sequence = bytes.get(..width)?;
    let text = std::str::from_utf8(sequence).ok()?;
    text.chars().next().map(|character| (character, width))
}

/// Appends `time` as Go's `time.RFC3339Nano` in UTC: trailing zeros of the
/// fraction are dropped, and the dot too when the fraction is zero. This is
/// the `time` field of a record.
pub(crate) fn push_rfc3339_nano(out: &mut Vec<u8>, time: DateTime<Utc>) {
    push_date_time(out, time);
    let mut nanos = clamped_nanos(time);
    if nanos != 0 {
        let mut digits = 9;
        while nanos.is_multiple_of(10) {
            nanos /= 10;
            digits -= 1;
        }
        out.push(b'.');
        push_padded(out, nanos, digits);
    }
    out.push(b'Z');
}

/// Appends `time` with exactly nine fraction digits, as `docker logs -t`
/// prints it (`jsonmessage.RFC3339NanoFixed`).
pub(crate) fn push_rfc3339_nano_fixed(out: &mut Vec<u8>, time: DateTime<Utc>) {
    push_date_time(out, time);
    out.push(b'.');
    push_padded(out, clamped_nanos(time), 9);
    out.push(b'Z');
}

fn push_date_time(out: &mut Vec<u8>, time: DateTime<Utc>) {
    // Years outside 0..=9999 cannot come from a clock; Go refuses them too.
    push_padded(out, time.year().clamp(0, 9999).unsigned_abs(), 4);
    out.push(b'-');
    push_padded(out, time.month(), 2);
    out.push(b'-');
    push_padded(out, time.day(), 2);
    out.push(b'T');
    push_padded(out, time.hour(), 2);
    out.push(b':');
    push_padded(out, time.minute(), 2);
    out.push(b':');
    push_padded(out, time.second(), 2);
}

/// chrono keeps a leap second as nanoseconds past 999_999_999; Go has none.
fn clamped_nanos(time: DateTime<Utc>) -> u32 {
    time.nanosecond().min(999_999_999)
}

fn push_padded(out: &mut Vec<u8>, value: u32, digits: u32) {
    let mut divisor = 10u32.pow(digits - 1);
    while divisor > 0 {
        // The quotient is a single decimal digit, so the cast cannot truncate.
        out.push(b'0' + (value / divisor % 10) as u8);
        divisor /= 10;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(bytes: &[u8]) -> String {
        let mut out = Vec::new();
        push_json_string(&mut out, bytes);
        String::from_utf8(out).unwrap()
    }

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap().to_utc()
    }

    #[test]
    fn escapes_like_dockerd() {
        // Each expectation is the `log` field dockerd 20.10 wrote for the
        // same bytes (printf in a busybox container).
        assert_eq!(escaped(b"<>&\n"), r#""\u003c\u003e\u0026\n""#);
        assert_eq!(escaped(b"\xff\n"), r#""\ufffd\n""#);
        assert_eq!(
            escaped(b"x\xffy\xc0\x80z\xed\xa0\x80w\n"),
            r#""x\ufffdy\ufffd\ufffdz\ufffd\ufffd\ufffdw\n""#
        );
        assert_eq!(
            escaped(b"a\xe2\x82b\xf0\x9f\x98\n"),
            r#""a\ufffd\ufffdb\ufffd\ufffd\ufffd\n""#
        );
        assert_eq!(
            escaped(
                "tab\there \"q\" back\\ \u{1}\u{1f}\u{7f} \u{2028} \u{2029} é 😀 \u{fffd}\n"
                    .as_bytes()
            ),
            "\"tab\\u0009here \\\"q\\\" back\\\\ \\u0001\\u001f\u{7f} \\u2028 \\u2029 é 😀 \u{fffd}\\n\""
        );
        assert_eq!(escaped(b"cr\r\n"), r#""cr\r\n""#);
        assert_eq!(escaped(b"\0"), r#""\u0000""#);
        assert_eq!(escaped(b""), r#""""#);
    }

    #[test]
    fn attributes_escape_like_gos_encoding_json() {
        let mut out = Vec::new();
        // dockerd 20.10 stored `"b":"x\u0026y"` for the label b=x&y.
        push_go_json_string(&mut out, "x&y <tab\there> \"q\" \\ \u{1} é \u{2028}");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#""x\u0026y \u003ctab\there\u003e \"q\" \\ \u0001 é \u2028""#
        );
    }

    #[test]
    fn a_truncated_sequence_at_the_end_is_one_replacement_per_byte() {
        assert_eq!(escaped(b"ok\xf0\x9f\x98"), r#""ok\ufffd\ufffd\ufffd""#);
        assert_eq!(escaped(b"\xc3"), r#""\ufffd""#);
    }

    #[test]
    fn record_time_drops_trailing_zeros() {
        let mut out = Vec::new();
        push_rfc3339_nano(&mut out, at("2026-11-30T03:14:37.805861310Z"));
        out.push(b' ');
        push_rfc3339_nano(&mut out, at("2024-01-01T00:00:00Z"));
        out.push(b' ');
        push_rfc3339_nano(&mut out, at("2024-01-01T00:00:00.5Z"));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "2026-11-30T03:14:37.80586131Z 2024-01-01T00:00:00Z 2024-01-01T00:00:00.5Z"
        );
    }

    #[test]
    fn printed_time_keeps_nine_digits() {
        let mut out = Vec::new();
        push_rfc3339_nano_fixed(&mut out, at("2026-11-30T03:15:46.1323123Z"));
        out.push(b' ');
        push_rfc3339_nano_fixed(&mut out, at("0999-01-02T03:04:05Z"));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "2026-11-30T03:15:46.132312300Z 0999-01-02T03:04:05.000000000Z"
        );
    }
}
