//! Flag values read the way the docker CLI's flag library (spf13/pflag on Go's
//! `strconv` and `time`) reads them, with Go's error wording, so that
//! `invalid argument "x" for "-c, --cpu-shares" flag: …` reads exactly as Docker's.

use crate::format::units::{parse_size, UnitsError};

/// Why one flag value could not be read; printed after Docker's
/// `invalid argument "…" for "…" flag` prefix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("strconv.ParseBool: parsing {0:?}: invalid syntax")]
    Bool(String),
    #[error("strconv.{function}: parsing {text:?}: {problem}")]
    Number {
        function: &'static str,
        text: String,
        problem: NumberProblem,
    },
    #[error("time: invalid duration {0:?}")]
    Duration(String),
    #[error("time: missing unit in duration {0:?}")]
    DurationUnitMissing(String),
    #[error("time: unknown unit {unit:?} in duration {text:?}")]
    DurationUnit { unit: String, text: String },
    #[error("failed to parse {0} as a rational number")]
    Rational(String),
    #[error("value is too precise")]
    TooPrecise,
    #[error(transparent)]
    Size(#[from] UnitsError),
    /// A message of Docker's own for a value of a particular flag.
    #[error("{0}")]
    Docker(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NumberProblem {
    #[error("invalid syntax")]
    Syntax,
    #[error("value out of range")]
    Range,
}

/// Go's `strconv.ParseBool`.
pub fn parse_bool(text: &str) -> Result<bool, ValueError> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(ValueError::Bool(text.to_owned())),
    }
}

/// Digits after an optional sign in base 0 (`0x`, `0o`, `0b`, leading `0`), as pflag
/// reads integer flags. Returns the magnitude, or which problem Go would report.
fn parse_magnitude(digits: &str, base_prefixes: bool) -> Result<u128, NumberProblem> {
    let lower = digits.to_ascii_lowercase();
    let (radix, body) = if !base_prefixes {
        (10, lower.as_str())
    } else if let Some(rest) = lower.strip_prefix("0x") {
        (16, rest)
    } else if let Some(rest) = lower.strip_prefix("0o") {
        (8, rest)
    } else if let Some(rest) = lower.strip_prefix("0b") {
        (2, rest)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    if body.is_empty() || !body.chars().all(|c| c.is_digit(radix)) {
        return Err(NumberProblem::Syntax);
    }
    u128::from_str_radix(body, radix).map_err(|_| NumberProblem::Range)
}

/// Go's `strconv.ParseInt(text, 0, 64)`, as pflag reads `int` flags.
pub fn parse_i64(text: &str) -> Result<i64, ValueError> {
    parse_signed(text, true)
}

/// Go's `strconv.ParseInt(text, 10, 64)`.
pub fn parse_i64_decimal(text: &str) -> Result<i64, ValueError> {
    parse_signed(text, false)
}

fn parse_signed(text: &str, base_prefixes: bool) -> Result<i64, ValueError> {
    let error = |problem| ValueError::Number {
        function: "ParseInt",
        text: text.to_owned(),
        problem,
    };
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let magnitude = parse_magnitude(digits, base_prefixes).map_err(error)?;
    let value = if negative {
        -(magnitude as i128)
    } else {
        magnitude as i128
    };
    i64::try_from(value).map_err(|_| error(NumberProblem::Range))
}

/// Go's `strconv.ParseUint(text, 0, bits)`.
pub fn parse_unsigned(text: &str, bits: u32) -> Result<u64, ValueError> {
    let error = |problem| ValueError::Number {
        function: "ParseUint",
        text: text.to_owned(),
        problem,
    };
    let magnitude = parse_magnitude(text, true).map_err(error)?;
    let limit = if bits >= 64 {
        u64::MAX as u128
    } else {
        (1_u128 << bits) - 1
    };
    if magnitude > limit {
        return Err(error(NumberProblem::Range));
    }
    Ok(magnitude as u64)
}

/// go-units `RAMInBytes` as an `int64` (docker's `MemBytes`).
pub fn parse_bytes(text: &str) -> Result<i64, ValueError> {
    let bytes = parse_size(text)?;
    // parse_size refuses anything at or past i64::MAX, as Go's conversion would wrap.
    Ok(i64::try_from(bytes).map_err(|_| UnitsError::InvalidSize(text.to_owned()))?)
}

/// Go's `time.ParseDuration`, in nanoseconds.
pub fn parse_duration(text: &str) -> Result<i64, ValueError> {
    use berth_types::duration::{parse_go_duration, DurationError};
    parse_go_duration(text).map_err(|error| match error {
        DurationError::Invalid(text) => ValueError::Duration(text),
        DurationError::MissingUnit(text) => ValueError::DurationUnitMissing(text),
        DurationError::UnknownUnit { unit, text } => ValueError::DurationUnit { unit, text },
    })
}

/// docker's `--cpus`: a rational number (`1.5`, `3/2`, `1e-1`) times 10⁹, which must
/// come out whole (Go's `big.Rat`).
pub fn parse_nano_cpus(text: &str) -> Result<i64, ValueError> {
    let rational = || ValueError::Rational(text.to_owned());
    let (numerator, denominator) = match text.split_once('/') {
        Some((top, bottom)) => {
            let top = parse_decimal_integer(top).ok_or_else(rational)?;
            let bottom = parse_decimal_integer(bottom).ok_or_else(rational)?;
            if bottom <= 0 {
                return Err(rational());
            }
            (top, bottom)
        }
        None => parse_decimal(text).ok_or_else(rational)?,
    };
    let scaled = numerator.checked_mul(1_000_000_000).ok_or_else(rational)?;
    if scaled % denominator != 0 {
        return Err(ValueError::TooPrecise);
    }
    i64::try_from(scaled / denominator).map_err(|_| rational())
}

fn parse_decimal_integer(text: &str) -> Option<i128> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) || digits.len() > 30 {
        return None;
    }
    text.parse().ok()
}

/// `[sign]digits[.digits][e[sign]digits]` as numerator / power of ten.
fn parse_decimal(text: &str) -> Option<(i128, i128)> {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(index) => (&text[..index], text[index + 1..].parse::<i32>().ok()?),
        None => (text, 0),
    };
    let (negative, mantissa) = match mantissa.as_bytes().first() {
        Some(b'-') => (true, &mantissa[1..]),
        Some(b'+') => (false, &mantissa[1..]),
        _ => (false, mantissa),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{whole}{fraction}");
    if digits.is_empty() || digits.len() > 30 || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let mut numerator: i128 = digits.parse().ok()?;
    if negative {
        numerator = -numerator;
    }
    let power = exponent - i32::try_from(fraction.len()).ok()?;
    if power.unsigned_abs() > 30 {
        return None;
    }
    let ten = 10_i128.pow(power.unsigned_abs());
    if power >= 0 {
        Some((numerator.checked_mul(ten)?, 1))
    } else {
        Some((numerator, ten))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bools_follow_strconv() {
        for text in ["1", "t", "T", "TRUE", "true", "True"] {
            assert_eq!(parse_bool(text), Ok(true));
        }
        for text in ["0", "f", "F", "FALSE", "false", "False"] {
            assert_eq!(parse_bool(text), Ok(false));
        }
        let error = parse_bool("maybe").unwrap_err().to_string();
        assert_eq!(
            error,
            r#"strconv.ParseBool: parsing "maybe": invalid syntax"#
        );
    }

    #[test]
    fn integers_follow_pflag() {
        assert_eq!(parse_i64("512").unwrap(), 512);
        assert_eq!(parse_i64("-1").unwrap(), -1);
        assert_eq!(parse_i64("+7").unwrap(), 7);
        assert_eq!(parse_i64("0x10").unwrap(), 16);
        assert_eq!(parse_i64("010").unwrap(), 8);
        assert_eq!(parse_i64("0").unwrap(), 0);
        assert_eq!(parse_i64_decimal("010").unwrap(), 10);
        assert!(parse_i64_decimal("0x10").is_err());
        let cases = [
            ("x", r#"strconv.ParseInt: parsing "x": invalid syntax"#),
            ("", r#"strconv.ParseInt: parsing "": invalid syntax"#),
            ("1.5", r#"strconv.ParseInt: parsing "1.5": invalid syntax"#),
            (
                "9223372036854775808",
                r#"strconv.ParseInt: parsing "9223372036854775808": value out of range"#,
            ),
        ];
        for (text, message) in cases {
            assert_eq!(parse_i64(text).unwrap_err().to_string(), message);
        }
        assert_eq!(parse_unsigned("1000", 16).unwrap(), 1000);
        assert_eq!(
            parse_unsigned("70000", 16).unwrap_err().to_string(),
            r#"strconv.ParseUint: parsing "70000": value out of range"#
        );
        assert_eq!(
            parse_unsigned("-1", 16).unwrap_err().to_string(),
            r#"strconv.ParseUint: parsing "-1": invalid syntax"#
        );
    }

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
            assert_eq!(parse_duration(text), Ok(*nanos), "{text}");
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
                parse_duration(text).unwrap_err().to_string(),
                message,
                "{text}"
            );
        }
    }

    #[test]
    fn nano_cpus_follow_big_rat() {
        let cases: &[(&str, i64)] = &[
            ("1.5", 1_500_000_000),
            ("0.5", 500_000_000),
            ("2", 2_000_000_000),
            ("3/2", 1_500_000_000),
            ("1e-1", 100_000_000),
            ("0.000000001", 1),
            ("-1", -1_000_000_000),
            ("0", 0),
        ];
        for (text, nanos) in cases {
            assert_eq!(parse_nano_cpus(text), Ok(*nanos), "{text}");
        }
        assert_eq!(
            parse_nano_cpus("1.0000000001").unwrap_err().to_string(),
            "value is too precise"
        );
        assert_eq!(
            parse_nano_cpus("x").unwrap_err().to_string(),
            "failed to parse x as a rational number"
        );
        assert_eq!(
            parse_nano_cpus("1/0").unwrap_err().to_string(),
            "failed to parse 1/0 as a rational number"
        );
    }

    #[test]
    fn byte_sizes_are_go_units() {
        assert_eq!(parse_bytes("512m"), Ok(512 * 1024 * 1024));
        assert_eq!(
            parse_bytes("-1").unwrap_err().to_string(),
            "invalid size: '-1'"
        );
    }
}
