//! The Go parsers dockerd 20.10 reads `--log-opt` values with, and their error texts, so a bad
//! value gets the words Docker prints: `strconv.Atoi`, `strconv.ParseBool`, and go-units
//! v0.4.0's `FromHumanSize` (the version vendored by moby 20.10, whose errors differ from
//! later ones).

/// `strconv.Atoi` (64-bit `int`): an optional sign and decimal digits, nothing else.
pub(crate) fn atoi(text: &str) -> Result<i64, String> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(format!(
            "strconv.Atoi: parsing {}: invalid syntax",
            go_quote(text)
        ));
    }
    text.parse::<i64>().map_err(|_| {
        format!(
            "strconv.Atoi: parsing {}: value out of range",
            go_quote(text)
        )
    })
}

/// `strconv.ParseBool`.
pub(crate) fn parse_bool(text: &str) -> Result<bool, String> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(format!(
            "strconv.ParseBool: parsing {}: invalid syntax",
            go_quote(text)
        )),
    }
}

/// go-units v0.4.0 `FromHumanSize`: `^(\d+(\.\d+)*) ?([kKmMgGtTpP])?[iI]?[bB]?$` with decimal
/// multipliers (`1k` is 1000, `1KiB` too), the number read by `strconv.ParseFloat` (so
/// `1.5.3` matches the pattern and then fails there), the product truncated to an `int64`.
/// A product past `int64`'s range is what Go's conversion makes of it on amd64, the most
/// negative number; callers refuse it as not positive, as dockerd does.
pub(crate) fn from_human_size(text: &str) -> Result<i64, String> {
    let invalid = || format!("invalid size: '{text}'");
    let bytes = text.as_bytes();
    let mut index = 0;
    // (\d+(\.\d+)*)
    let digits = |index: &mut usize| {
        let start = *index;
        while bytes.get(*index).is_some_and(u8::is_ascii_digit) {
            *index += 1;
        }
        *index > start
    };
    if !digits(&mut index) {
        return Err(invalid());
    }
    while bytes.get(index) == Some(&b'.') {
        let mut after = index + 1;
        if !digits(&mut after) {
            break;
        }
        index = after;
    }
    let number = &text[..index];
    if bytes.get(index) == Some(&b' ') {
        index += 1;
    }
    let mut multiplier = 1.0;
    if let Some(&unit) = bytes.get(index) {
        let power = match unit.to_ascii_lowercase() {
            b'k' => Some(1),
            b'm' => Some(2),
            b'g' => Some(3),
            b't' => Some(4),
            b'p' => Some(5),
            _ => None,
        };
        if let Some(power) = power {
            multiplier = 1000f64.powi(power);
            index += 1;
        }
    }
    if matches!(bytes.get(index), Some(b'i' | b'I')) {
        index += 1;
    }
    if matches!(bytes.get(index), Some(b'b' | b'B')) {
        index += 1;
    }
    if index != bytes.len() {
        return Err(invalid());
    }
    // Only digits and dots reach here; Rust and Go read the ones the pattern lets through
    // alike, and both refuse a second dot.
    let size: f64 = number.parse().map_err(|_| {
        format!(
            "strconv.ParseFloat: parsing {}: invalid syntax",
            go_quote(number)
        )
    })?;
    let product = size * multiplier;
    if product >= i64::MAX as f64 {
        return Ok(i64::MIN);
    }
    // Truncation toward zero, as Go's conversion.
    Ok(product as i64)
}

/// Go's `%q` of a string, for the printable text option values are.
fn go_quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for character in text.chars() {
        match character {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            '\t' => quoted.push_str("\\t"),
            '\r' => quoted.push_str("\\r"),
            control if control.is_control() => {
                quoted.push_str(&format!("\\x{:02x}", u32::from(control)));
            }
            other => quoted.push(other),
        }
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes_as_dockerd_20_10_reads_them() {
        // Each value was given to Docker 20.10 as `--log-opt max-size=`.
        for (text, bytes) in [
            ("1k", 1000),
            ("1KiB", 1000),
            ("1kb", 1000),
            ("1 k", 1000),
            ("1i", 1),
            ("1.5m", 1_500_000),
            ("10", 10),
            ("0.5", 0),
            ("2g", 2_000_000_000),
            ("1 ", 1),
        ] {
            assert_eq!(from_human_size(text), Ok(bytes), "{text}");
        }
        assert_eq!(from_human_size("99999999999999999999"), Ok(i64::MIN));
        for bad in ["-1", "1x", "", "1e3", "+1", "1.", ".5", "1  k", "k"] {
            assert_eq!(
                from_human_size(bad),
                Err(format!("invalid size: '{bad}'")),
                "{bad}"
            );
        }
        assert_eq!(
            from_human_size("1.5.3"),
            Err("strconv.ParseFloat: parsing \"1.5.3\": invalid syntax".to_owned())
        );
    }

    #[test]
    fn integers_and_booleans_with_gos_errors() {
        assert_eq!(atoi("3"), Ok(3));
        assert_eq!(atoi("+3"), Ok(3));
        assert_eq!(atoi("-1"), Ok(-1));
        assert_eq!(
            atoi("a"),
            Err("strconv.Atoi: parsing \"a\": invalid syntax".to_owned())
        );
        assert_eq!(
            atoi(" 3"),
            Err("strconv.Atoi: parsing \" 3\": invalid syntax".to_owned())
        );
        assert_eq!(
            atoi("99999999999999999999"),
            Err("strconv.Atoi: parsing \"99999999999999999999\": value out of range".to_owned())
        );
        assert_eq!(parse_bool("True"), Ok(true));
        assert_eq!(parse_bool("0"), Ok(false));
        assert_eq!(
            parse_bool("maybe"),
            Err("strconv.ParseBool: parsing \"maybe\": invalid syntax".to_owned())
        );
    }
}
