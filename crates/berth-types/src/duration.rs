//! Go's `time.Duration` text, as Docker's flags and Dockerfile options take it
//! (`--health-interval 1m30s`, `HEALTHCHECK --timeout=500ms`).

/// Go's `time.ParseDuration` errors, in its words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("time: invalid duration {0:?}")]
    Invalid(String),
    #[error("time: missing unit in duration {0:?}")]
    MissingUnit(String),
    #[error("time: unknown unit {unit:?} in duration {text:?}")]
    UnknownUnit { unit: String, text: String },
}

/// Go's `time.ParseDuration`, in nanoseconds.
pub fn parse_go_duration(text: &str) -> Result<i64, DurationError> {
    let invalid = || DurationError::Invalid(text.to_owned());
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let integer_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (integer, after) = rest.split_at(integer_end);
        let (fraction, after) = match after.strip_prefix('.') {
            Some(after) => {
                let end = after
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(after.len());
                after.split_at(end)
            }
            None => ("", after),
        };
        if integer.is_empty() && fraction.is_empty() {
            return Err(invalid());
        }
        let unit_end = after
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_end);
        if unit.is_empty() {
            return Err(DurationError::MissingUnit(text.to_owned()));
        }
        let nanos_per_unit: u128 = match unit {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => {
                return Err(DurationError::UnknownUnit {
                    unit: unit.to_owned(),
                    text: text.to_owned(),
                })
            }
        };
        let whole: u128 = if integer.is_empty() {
            0
        } else {
            integer.parse().map_err(|_| invalid())?
        };
        total += whole.checked_mul(nanos_per_unit).ok_or_else(invalid)?;
        // Fractions beyond nanosecond precision are truncated, as Go does.
        let mut scale: u128 = 1;
        let mut numerator: u128 = 0;
        for digit in fraction.chars().take(30) {
            numerator = numerator * 10 + u128::from(digit.to_digit(10).unwrap_or(0));
            scale *= 10;
        }
        total += numerator * nanos_per_unit / scale;
        if total > i64::MAX as u128 + u128::from(negative) {
            return Err(invalid());
        }
        rest = after;
    }
    let signed = if negative {
        -(total as i128)
    } else {
        total as i128
    };
    i64::try_from(signed).map_err(|_| invalid())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_follow_go() {
        let cases: &[(&str, i64)] = &[
            ("0", 0),
            ("10s", 10_000_000_000),
            ("1m30s", 90_000_000_000),
            ("500ms", 500_000_000),
            ("1.5h", 5_400_000_000_000),
            ("1h", 3_600_000_000_000),
            ("-1s", -1_000_000_000),
            ("2us", 2_000),
            ("3\u{b5}s", 3_000),
            (".5s", 500_000_000),
            ("1.s", 1_000_000_000),
            ("100ns", 100),
        ];
        for (text, nanos) in cases {
            assert_eq!(parse_go_duration(text), Ok(*nanos), "{text}");
        }
        let errors = [
            ("5", r#"time: missing unit in duration "5""#),
            ("x", r#"time: invalid duration "x""#),
            ("", r#"time: invalid duration """#),
            ("1x", r#"time: unknown unit "x" in duration "1x""#),
            ("1s2", r#"time: missing unit in duration "1s2""#),
            ("3000000h", r#"time: invalid duration "3000000h""#),
        ];
        for (text, message) in errors {
            assert_eq!(
                parse_go_duration(text).unwrap_err().to_string(),
                message,
                "{text}"
            );
        }
    }
}
