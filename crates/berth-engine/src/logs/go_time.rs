//! The parts of Go's `time` package that `docker logs --since/--until`
//! relies on, with Go's results and error messages: `time.ParseDuration` and
//! `time.Parse` for the few layouts the Docker CLI tries.

use chrono::{DateTime, Duration, FixedOffset, NaiveDate, NaiveTime, TimeZone, Utc};

/// A bad `--since`/`--until` value, in the words of the Docker CLI (which
/// prefixes them with `invalid value for "since": `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeParseError {
    #[error("failed to parse value as time or duration: {}", strconv_quote(.value))]
    NotTimeOrDuration { value: String },
    #[error("parsing time {} as {}: cannot parse {} as {}", time_quote(.value), time_quote(.layout), time_quote(.value_element), time_quote(.layout_element))]
    Layout {
        value: String,
        layout: &'static str,
        value_element: String,
        layout_element: &'static str,
    },
    #[error("parsing time {}: {what} out of range", time_quote(.value))]
    OutOfRange { value: String, what: &'static str },
    #[error("parsing time {}: extra text: {}", time_quote(.value), time_quote(.extra))]
    ExtraText { value: String, extra: String },
}

/// One element of a Go layout.
#[derive(Clone, Copy, Debug)]
enum Element {
    Literal(&'static str),
    /// `2006`
    Year,
    /// `01`
    Month,
    /// `02`
    Day,
    /// `15`
    Hour,
    /// `04`
    Minute,
    /// `05`
    Second,
    /// `.999999999`
    Fraction,
    /// `Z07:00`
    Zone,
}

impl Element {
    fn text(self) -> &'static str {
        match self {
            Self::Literal(text) => text,
            Self::Year => "2006",
            Self::Month => "01",
            Self::Day => "02",
            Self::Hour => "15",
            Self::Minute => "04",
            Self::Second => "05",
            Self::Fraction => ".999999999",
            Self::Zone => "Z07:00",
        }
    }
}

use Element::{Day, Fraction, Hour, Literal, Minute, Month, Second, Year, Zone};

pub(crate) const DATE_LOCAL: &str = "2006-01-02";
pub(crate) const DATE_ZONE: &str = "2006-01-02Z07:00";
pub(crate) const HOUR_LOCAL: &str = "2006-01-02T15";
pub(crate) const HOUR_ZONE: &str = "2006-01-02T15Z07:00";
pub(crate) const MINUTE_LOCAL: &str = "2006-01-02T15:04";
pub(crate) const MINUTE_ZONE: &str = "2006-01-02T15:04Z07:00";
pub(crate) const SECOND_LOCAL: &str = "2006-01-02T15:04:05";
pub(crate) const RFC3339: &str = "2006-01-02T15:04:05Z07:00";
pub(crate) const NANO_LOCAL: &str = "2006-01-02T15:04:05.999999999";
pub(crate) const RFC3339_NANO: &str = "2006-01-02T15:04:05.999999999Z07:00";

/// Splits a layout into elements as Go's `nextStdChunk` does, for the
/// elements the layouts above use; any other character is a literal.
fn elements(layout: &'static str) -> impl Iterator<Item = Element> {
    const NAMED: [Element; 8] = [Year, Month, Day, Hour, Minute, Second, Fraction, Zone];
    let mut rest = layout;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let element = NAMED
            .into_iter()
            .find(|element| rest.starts_with(element.text()))
            .unwrap_or(Literal(&rest[..first.len_utf8()]));
        rest = &rest[element.text().len()..];
        Some(element)
    })
}

/// Go's `time.ParseInLocation(layout, value, local)`: a value without a
/// zone is a time at offset `local`.
pub(crate) fn parse(
    layout: &'static str,
    value: &str,
    local: FixedOffset,
) -> Result<DateTime<Utc>, TimeParseError> {
    let layout_error = |element: Element, rest: &[u8]| TimeParseError::Layout {
        value: value.to_owned(),
        layout,
        value_element: String::from_utf8_lossy(rest).into_owned(),
        layout_element: element.text(),
    };
    let range_error = |what| TimeParseError::OutOfRange {
        value: value.to_owned(),
        what,
    };
    let (mut year, mut month, mut day) = (0, 0, 0);
    let (mut hour, mut minute, mut second, mut nanos) = (0, 0, 0, 0);
    let mut offset = None;
    let mut rest = value.as_bytes();
    let mut elements = elements(layout).peekable();
    while let Some(element) = elements.next() {
        let held = rest;
        let parsed: Option<Option<&'static str>> = match element {
            Literal(text) => match rest.strip_prefix(text.as_bytes()) {
                Some(after) => {
                    rest = after;
                    Some(None)
                }
                None => None,
            },
            Year => (rest.len() >= 4 && rest.iter().take(4).all(u8::is_ascii_digit)).then(|| {
                year = digits_value(&rest[..4]);
                rest = &rest[4..];
                None
            }),
            Month => number(&mut rest, true).map(|value| {
                month = value;
                (!(1..=12).contains(&value)).then_some("month")
            }),
            Day => number(&mut rest, true).map(|value| {
                day = value;
                None
            }),
            Hour => number(&mut rest, false).map(|value| {
                hour = value;
                (value >= 24).then_some("hour")
            }),
            Minute => number(&mut rest, true).map(|value| {
                minute = value;
                (value >= 60).then_some("minute")
            }),
            Second => number(&mut rest, true).map(|value| {
                second = value;
                if value >= 60 {
                    return Some("second");
                }
                // Go takes a fraction after the seconds even when the
                // layout has none.
                let fraction_next = matches!(elements.peek(), Some(Fraction));
                if !fraction_next && starts_fraction(rest) {
                    nanos = fraction(&mut rest);
                }
                None
            }),
            Fraction => {
                if starts_fraction(rest) {
                    nanos = fraction(&mut rest);
                }
                Some(None)
            }
            Zone => zone(&mut rest).map(|(parsed, out_of_range)| {
                offset = Some(parsed);
                out_of_range
            }),
        };
        match parsed {
            None if matches!(element, Literal(_)) => return Err(layout_error(element, rest)),
            None => return Err(layout_error(element, held)),
            Some(Some(what)) => return Err(range_error(what)),
            Some(None) => {}
        }
    }
    if !rest.is_empty() {
        return Err(TimeParseError::ExtraText {
            value: value.to_owned(),
            extra: String::from_utf8_lossy(rest).into_owned(),
        });
    }
    let date =
        NaiveDate::from_ymd_opt(year as i32, month, day).ok_or_else(|| range_error("day"))?;
    let time = NaiveTime::from_hms_nano_opt(hour, minute, second, nanos)
        .ok_or_else(|| range_error("second"))?;
    let offset_seconds = offset.unwrap_or(local.local_minus_utc());
    let utc = date.and_time(time) - Duration::seconds(i64::from(offset_seconds));
    Ok(Utc.from_utc_datetime(&utc))
}

/// Go's `getnum`: one or two digits (`fixed`: exactly two).
fn number(rest: &mut &[u8], fixed: bool) -> Option<u32> {
    let digit = |index: usize| {
        rest.get(index)
            .filter(|byte| byte.is_ascii_digit())
            .map(|byte| u32::from(byte - b'0'))
    };
    let first = digit(0)?;
    match digit(1) {
        Some(second) => {
            *rest = &rest[2..];
            Some(first * 10 + second)
        }
        None if fixed => None,
        None => {
            *rest = &rest[1..];
            Some(first)
        }
    }
}

fn digits_value(digits: &[u8]) -> u32 {
    digits
        .iter()
        .fold(0, |value, digit| value * 10 + u32::from(digit - b'0'))
}

/// A `.` or `,` followed by a digit.
fn starts_fraction(rest: &[u8]) -> bool {
    matches!(rest, [b'.' | b',', digit, ..] if digit.is_ascii_digit())
}

/// Go's `parseNanoseconds` over all the digits after the separator; digits
/// past the ninth are dropped.
fn fraction(rest: &mut &[u8]) -> u32 {
    let count = rest[1..]
        .iter()
        .take_while(|byte| byte.is_ascii_digit())
        .count();
    let kept = count.min(9);
    let value = digits_value(&rest[1..1 + kept]);
    *rest = &rest[1 + count..];
    value * 10u32.pow((9 - kept) as u32)
}

/// `Z07:00`: `Z`, or `±hh:mm`. Returns the offset east of UTC in seconds
/// and a range complaint, which Go reports in preference to a bad sign.
fn zone(rest: &mut &[u8]) -> Option<(i32, Option<&'static str>)> {
    if let Some(after) = rest.strip_prefix(b"Z") {
        *rest = after;
        return Some((0, None));
    }
    if rest.len() < 6 || rest[3] != b':' {
        return None;
    }
    let hours = number(&mut &rest[1..3], true)?;
    let minutes = number(&mut &rest[4..6], true)?;
    let sign = rest[0];
    *rest = &rest[6..];
    let out_of_range = if minutes > 60 {
        Some("time zone offset minute")
    } else if hours > 24 {
        Some("time zone offset hour")
    } else {
        None
    };
    let seconds = (hours * 3600 + minutes * 60) as i32;
    match (sign, out_of_range) {
        (_, Some(what)) => Some((0, Some(what))),
        (b'+', None) => Some((seconds, None)),
        (b'-', None) => Some((-seconds, None)),
        _ => None,
    }
}

/// Go's `time.ParseDuration`, in nanoseconds; None where Go fails.
pub(crate) fn parse_duration(text: &str) -> Option<i64> {
    const LIMIT: u64 = 1 << 63;
    let (negative, mut rest) = match text.as_bytes() {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        rest => (false, rest),
    };
    if rest == b"0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: u64 = 0;
    while !rest.is_empty() {
        if !(rest[0] == b'.' || rest[0].is_ascii_digit()) {
            return None;
        }
        let integer_digits = rest.iter().take_while(|byte| byte.is_ascii_digit()).count();
        let mut whole: u64 = 0;
        for &digit in &rest[..integer_digits] {
            if whole > LIMIT / 10 {
                return None;
            }
            whole = whole * 10 + u64::from(digit - b'0');
            if whole > LIMIT {
                return None;
            }
        }
        rest = &rest[integer_digits..];
        let (mut fraction, mut scale, mut fraction_digits) = (0u64, 1f64, 0);
        if let Some(after) = rest.strip_prefix(b".") {
            fraction_digits = after
                .iter()
                .take_while(|byte| byte.is_ascii_digit())
                .count();
            let mut overflow = false;
            for &digit in &after[..fraction_digits] {
                if overflow || fraction > (LIMIT - 1) / 10 {
                    overflow = true;
                    continue;
                }
                let next = fraction * 10 + u64::from(digit - b'0');
                if next > LIMIT {
                    overflow = true;
                    continue;
                }
                fraction = next;
                scale *= 10.0;
            }
            rest = &after[fraction_digits..];
        }
        if integer_digits == 0 && fraction_digits == 0 {
            return None;
        }
        let unit_length = rest
            .iter()
            .take_while(|&&byte| byte != b'.' && !byte.is_ascii_digit())
            .count();
        let unit: u64 = match &rest[..unit_length] {
            b"ns" => 1,
            // "µs" (micro sign) and "μs" (Greek mu).
            b"us" | [0xc2, 0xb5, b's'] | [0xce, 0xbc, b's'] => 1_000,
            b"ms" => 1_000_000,
            b"s" => 1_000_000_000,
            b"m" => 60_000_000_000,
            b"h" => 3_600_000_000_000,
            _ => return None,
        };
        rest = &rest[unit_length..];
        if whole > LIMIT / unit {
            return None;
        }
        whole *= unit;
        if fraction > 0 {
            // Go's own rounding: float64 is nanosecond-exact up to hours.
            whole += (fraction as f64 * (unit as f64 / scale)) as u64;
            if whole > LIMIT {
                return None;
            }
        }
        total += whole;
        if total > LIMIT {
            return None;
        }
    }
    if negative {
        Some((total as i64).wrapping_neg())
    } else {
        i64::try_from(total).ok()
    }
}

/// Go's `time` package quoting: bytes outside printable ASCII as `\xNN`.
fn time_quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for &byte in text.as_bytes() {
        match byte {
            b'"' | b'\\' => {
                quoted.push('\\');
                quoted.push(char::from(byte));
            }
            0x20..=0x7f => quoted.push(char::from(byte)),
            _ => quoted.push_str(&format!("\\x{byte:02x}")),
        }
    }
    quoted.push('"');
    quoted
}

/// Go's `%q` (`strconv.Quote`) for the texts a command line can carry.
fn strconv_quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for character in text.chars() {
        match character {
            '"' | '\\' => {
                quoted.push('\\');
                quoted.push(character);
            }
            '\u{7}' => quoted.push_str("\\a"),
            '\u{8}' => quoted.push_str("\\b"),
            '\u{c}' => quoted.push_str("\\f"),
            '\n' => quoted.push_str("\\n"),
            '\r' => quoted.push_str("\\r"),
            '\t' => quoted.push_str("\\t"),
            '\u{b}' => quoted.push_str("\\v"),
            ' ' => quoted.push(' '),
            _ if character.is_control() || character.is_whitespace() => {
                let code = u32::from(character);
                if code < 0x80 {
                    quoted.push_str(&format!("\\x{code:02x}"));
                } else if code <= 0xffff {
                    quoted.push_str(&format!("\\u{code:04x}"));
                } else {
                    quoted.push_str(&format!("\\U{code:08x}"));
                }
            }
            _ => quoted.push(character),
        }
    }
    quoted.push('"');
    quoted
}
