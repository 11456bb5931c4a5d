//! Human-readable sizes and durations as docker prints and parses them.
//!
//! Behaviour follows github.com/docker/go-units (`size.go`, `duration.go`), which the
//! docker CLI uses for `SIZE`, `CREATED`, `STATUS`, `stats` and `--memory`-style flags.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::gofmt::format_g;

const DECIMAL_UNITS: [&str; 9] = ["B", "kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"];
const BINARY_UNITS: [&str; 9] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"];

/// A size parse failure, worded as go-units words it (docker prints these after the flag
/// name, e.g. `invalid argument "x" for "-m, --memory" flag: invalid size: 'x'`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitsError {
    #[error("invalid size: '{0}'")]
    InvalidSize(String),
    #[error("invalid suffix: '{0}'")]
    InvalidSuffix(String),
    /// The number part is not a number; Go's `strconv.ParseFloat` wording.
    #[error("strconv.ParseFloat: parsing \"{0}\": invalid syntax")]
    InvalidNumber(String),
    #[error("strconv.ParseFloat: parsing \"{0}\": value out of range")]
    OutOfRange(String),
}

/// Divides by `base` until the value is below it, returning the value and its unit.
fn scale(size: f64, base: f64, units: &[&'static str]) -> (f64, &'static str) {
    let mut size = size;
    let mut index = 0;
    while size >= base && index < units.len() - 1 {
        size /= base;
        index += 1;
    }
    (size, units[index])
}

/// A size in decimal units with `precision` significant digits, e.g. `4.26MB`
/// (go-units `HumanSizeWithPrecision`). Note that values just under a unit boundary
/// round up without moving to the next unit: 999 999 bytes prints as `1e+03kB`, exactly
/// as docker prints it.
pub fn human_size_with_precision(bytes: u64, precision: usize) -> String {
    let (size, unit) = scale(bytes as f64, 1000.0, &DECIMAL_UNITS);
    format!("{}{unit}", format_g(size, Some(precision)))
}

/// The `SIZE` column of `docker images` / `docker ps -s`: three significant digits in
/// decimal units, e.g. `512B`, `1kB`, `4.26MB`.
pub fn human_size(bytes: u64) -> String {
    human_size_with_precision(bytes, 3)
}

/// A size in binary units with four significant digits, e.g. `1.5MiB`, as `docker stats`
/// prints memory (go-units `BytesSize`).
pub fn bytes_size(bytes: u64) -> String {
    bytes_size_f64(bytes as f64)
}

/// [`bytes_size`] for a fractional byte count (stats averages are floats in docker).
pub fn bytes_size_f64(bytes: f64) -> String {
    let (size, unit) = scale(bytes, 1024.0, &BINARY_UNITS);
    format!("{}{unit}", format_g(size, Some(4)))
}

/// An approximate duration in words, e.g. `About a minute`, `3 days` (go-units
/// `HumanDuration`); docker's `STATUS` prints `Up <this>`.
pub fn human_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    if seconds < 1 {
        return "Less than a second".to_owned();
    }
    if seconds == 1 {
        return "1 second".to_owned();
    }
    if seconds < 60 {
        return format!("{seconds} seconds");
    }
    let minutes = seconds / 60;
    if minutes == 1 {
        return "About a minute".to_owned();
    }
    if minutes < 60 {
        return format!("{minutes} minutes");
    }
    // Hours round to nearest, unlike seconds and minutes, which truncate.
    let exact_hours = duration.as_secs_f64() / 3600.0;
    let hours = (exact_hours + 0.5) as u64;
    if hours == 1 {
        return "About an hour".to_owned();
    }
    if hours < 48 {
        return format!("{hours} hours");
    }
    if hours < 24 * 7 * 2 {
        return format!("{} days", hours / 24);
    }
    if hours < 24 * 30 * 2 {
        return format!("{} weeks", hours / 24 / 7);
    }
    if hours < 24 * 365 * 2 {
        return format!("{} months", hours / 24 / 30);
    }
    // Years use truncated hours, not the rounded ones above.
    format!("{} years", (exact_hours as u64) / 24 / 365)
}

/// The `CREATED` column: [`human_duration`] of `now - then` plus ` ago`. A `then` in the
/// future counts as no time at all, as Go's negative durations do.
pub fn human_duration_since(then: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let elapsed = (now - then).to_std().unwrap_or(Duration::ZERO);
    format!("{} ago", human_duration(elapsed))
}

/// Parses a memory size such as `512m`, `1.5GiB`, `100` or `2 g` into bytes with binary
/// multipliers (go-units `RAMInBytes`): suffixes `b k m g t p` in any case, optionally
/// followed by `b` or `ib`, with or without one space before them.
pub fn parse_size(text: &str) -> Result<u64, UnitsError> {
    parse_size_with(text, 1024)
}

/// Parses a size with decimal multipliers (`1kB` = 1000), go-units
/// `FromHumanSize` (kept for `--storage-opt size=` and the API's sizes).
#[cfg(test)]
pub fn parse_decimal_size(text: &str) -> Result<u64, UnitsError> {
    parse_size_with(text, 1000)
}

fn parse_size_with(text: &str, base: u64) -> Result<u64, UnitsError> {
    let (number, suffix) = match text.split_once(' ') {
        Some(parts) => parts,
        None => {
            // The suffix is whatever follows the last digit or dot.
            let Some(last) = text.rfind(|c: char| c.is_ascii_digit() || c == '.') else {
                return Err(UnitsError::InvalidSize(text.to_owned()));
            };
            text.split_at(last + 1)
        }
    };
    let size = parse_go_float(number)?;
    if size < 0.0 {
        return Err(UnitsError::InvalidSize(text.to_owned()));
    }
    if suffix.is_empty() {
        return to_bytes(size, text);
    }
    if suffix.len() > 3 {
        return Err(UnitsError::InvalidSuffix(suffix.to_owned()));
    }
    let lower = suffix.to_ascii_lowercase();
    let bad_suffix = || UnitsError::InvalidSuffix(lower.clone());
    let mut characters = lower.chars();
    let multiplier_character = characters.next().ok_or_else(bad_suffix)?;
    if multiplier_character == 'b' {
        return if lower.len() == 1 {
            to_bytes(size, text)
        } else {
            Err(bad_suffix())
        };
    }
    let power = match multiplier_character {
        'k' => 1,
        'm' => 2,
        'g' => 3,
        't' => 4,
        'p' => 5,
        _ => return Err(bad_suffix()),
    };
    let rest = characters.as_str();
    if !matches!(rest, "" | "b" | "ib") {
        return Err(bad_suffix());
    }
    to_bytes(size * (base.pow(power) as f64), text)
}

/// Go's `strconv.ParseFloat` for the plain decimal forms a size can take.
fn parse_go_float(number: &str) -> Result<f64, UnitsError> {
    // Rust accepts words such as "inf" that Go would too, but never reach here: the
    // number part always ends in a digit or dot.
    let value: f64 = number
        .parse()
        .map_err(|_| UnitsError::InvalidNumber(number.to_owned()))?;
    if value.is_infinite() {
        return Err(UnitsError::OutOfRange(number.to_owned()));
    }
    Ok(value)
}

fn to_bytes(size: f64, text: &str) -> Result<u64, UnitsError> {
    // Go truncates toward zero; past i64::MAX its conversion yields garbage, so refuse.
    if size >= i64::MAX as f64 {
        return Err(UnitsError::InvalidSize(text.to_owned()));
    }
    Ok(size as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn human_size_matches_docker_images() {
        let cases: &[(u64, &str)] = &[
            (0, "0B"),
            (1, "1B"),
            (512, "512B"),
            (999, "999B"),
            (1000, "1kB"),
            (1024, "1.02kB"),
            (999_999, "1e+03kB"),
            (1_000_000, "1MB"),
            (4_261_412, "4.26MB"),
            (77_800_000, "77.8MB"),
            (123_456_789, "123MB"),
            (1_234_567_890, "1.23GB"),
            (5_000_000_000_000, "5TB"),
            (u64::MAX, "18.4EB"),
        ];
        for (bytes, expected) in cases {
            assert_eq!(human_size(*bytes), *expected, "bytes {bytes}");
        }
        assert_eq!(human_size_with_precision(1_234_567, 4), "1.235MB");
        assert_eq!(human_size_with_precision(2_746_000, 4), "2.746MB");
    }

    #[test]
    fn bytes_size_uses_binary_units() {
        assert_eq!(bytes_size(0), "0B");
        assert_eq!(bytes_size(1023), "1023B");
        assert_eq!(bytes_size(1024), "1KiB");
        assert_eq!(bytes_size(1536 * 1024), "1.5MiB");
        assert_eq!(bytes_size(17 * 1024 * 1024), "17MiB");
        assert_eq!(bytes_size(1024 * 1024 * 1024 - 1), "1024MiB");
        assert_eq!(bytes_size(3 * 1024 * 1024 * 1024 * 1024), "3TiB");
        assert_eq!(bytes_size_f64(1.5), "1.5B");
    }

    #[test]
    fn human_duration_thresholds_match_go_units() {
        let minute = 60;
        let hour = 60 * minute;
        let day = 24 * hour;
        let cases: &[(u64, &str)] = &[
            (0, "Less than a second"),
            (1, "1 second"),
            (2, "2 seconds"),
            (59, "59 seconds"),
            (60, "About a minute"),
            (119, "About a minute"),
            (120, "2 minutes"),
            (59 * minute + 59, "59 minutes"),
            (hour, "About an hour"),
            (hour + 29 * minute, "About an hour"),
            (hour + 30 * minute, "2 hours"),
            (47 * hour + 29 * minute, "47 hours"),
            (47 * hour + 30 * minute, "2 days"),
            (13 * day, "13 days"),
            (14 * day, "2 weeks"),
            (59 * day, "8 weeks"),
            (60 * day, "2 months"),
            (729 * day, "24 months"),
            (730 * day, "2 years"),
            (3 * 365 * day + 10 * day, "3 years"),
        ];
        for (seconds, expected) in cases {
            assert_eq!(
                human_duration(Duration::from_secs(*seconds)),
                *expected,
                "seconds {seconds}"
            );
        }
        assert_eq!(
            human_duration(Duration::from_millis(999)),
            "Less than a second"
        );
        // 59.5 minutes: truncated minutes say 59, although hours would round to one.
        assert_eq!(human_duration(Duration::from_secs(3570)), "59 minutes");
    }

    #[test]
    fn duration_since_appends_ago_and_clamps_the_future() {
        let now = Utc.with_ymd_and_hms(2024, 5, 1, 12, 0, 0).unwrap();
        let then = Utc.with_ymd_and_hms(2024, 4, 28, 12, 0, 0).unwrap();
        assert_eq!(human_duration_since(then, now), "3 days ago");
        assert_eq!(
            human_duration_since(now + chrono::Duration::seconds(30), now),
            "Less than a second ago"
        );
        let five_minutes = now - chrono::Duration::minutes(5);
        assert_eq!(human_duration_since(five_minutes, now), "5 minutes ago");
    }

    #[test]
    fn parse_size_accepts_go_units_forms() {
        let kib = 1024;
        let mib = 1024 * kib;
        let gib = 1024 * mib;
        let cases: &[(&str, u64)] = &[
            ("32", 32),
            ("32b", 32),
            ("32B", 32),
            ("32k", 32 * kib),
            ("32K", 32 * kib),
            ("32kb", 32 * kib),
            ("32Kb", 32 * kib),
            ("32Kib", 32 * kib),
            ("32KIB", 32 * kib),
            ("512m", 512 * mib),
            ("512 MiB", 512 * mib),
            ("32mb", 32 * mib),
            ("32Gb", 32 * gib),
            ("32G", 32 * gib),
            ("32Tb", 32 * 1024 * gib),
            ("32Pb", 32 * 1024 * 1024 * gib),
            ("0.3m", 314_572),
            ("1.5g", 1_610_612_736),
            (".5k", 512),
            ("3.", 3),
            ("1e3", 1000),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_size(text), Ok(*expected), "input {text:?}");
        }
        assert_eq!(parse_decimal_size("32kB"), Ok(32_000));
        assert_eq!(parse_decimal_size("1.5MB"), Ok(1_500_000));
    }

    #[test]
    fn parse_size_rejects_like_go_units() {
        let cases: &[(&str, &str)] = &[
            ("", "invalid size: ''"),
            ("hello", "invalid size: 'hello'"),
            ("-32", "invalid size: '-32'"),
            ("-1m", "invalid size: '-1m'"),
            ("32bb", "invalid suffix: 'bb'"),
            ("32kbb", "invalid suffix: 'kbb'"),
            ("32KiBb", "invalid suffix: 'KiBb'"),
            ("32Ki", "invalid suffix: 'ki'"),
            ("32kk", "invalid suffix: 'kk'"),
            ("32x", "invalid suffix: 'x'"),
            ("32 kib ", "invalid suffix: 'kib '"),
            ("32mibs", "invalid suffix: 'mibs'"),
            ("1a2", "strconv.ParseFloat: parsing \"1a2\": invalid syntax"),
            ("..3", "strconv.ParseFloat: parsing \"..3\": invalid syntax"),
            ("99999999999p", "invalid size: '99999999999p'"),
        ];
        for (text, expected) in cases {
            let error = parse_size(text).expect_err(text);
            assert_eq!(error.to_string(), *expected, "input {text:?}");
        }
    }
}
