//! Go's spelling of literals in templates: integers as `strconv.ParseInt(s, 0, 64)`
//! reads them and quoted strings as `strconv.Unquote` does.

/// Go's `strconv.ParseInt(text, 0, 64)`: optional sign, `0x`/`0o`/`0b` prefixes, a
/// leading `0` meaning octal, and underscores between digits when a prefix is present.
pub(super) fn parse_go_int(text: &str) -> Option<i64> {
    let (negative, digits) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let lower = digits.to_ascii_lowercase();
    let (radix, body, prefixed) = if let Some(rest) = lower.strip_prefix("0x") {
        (16, rest.to_owned(), true)
    } else if let Some(rest) = lower.strip_prefix("0o") {
        (8, rest.to_owned(), true)
    } else if let Some(rest) = lower.strip_prefix("0b") {
        (2, rest.to_owned(), true)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, lower[1..].to_owned(), true)
    } else {
        (10, lower.clone(), false)
    };
    if body.contains('_') && !prefixed {
        return None;
    }
    let body: String = body.chars().filter(|&c| c != '_').collect();
    if body.is_empty() || !body.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = i128::from_str_radix(&body, radix).ok()?;
    let value = if negative { -magnitude } else { magnitude };
    i64::try_from(value).ok()
}

/// Go's `strconv.Unquote` for `"…"`, `` `…` `` and `'…'` literals.
pub(super) fn unquote(text: &str) -> Result<String, String> {
    let invalid = || "invalid syntax".to_owned();
    let quote_character = text.chars().next().ok_or_else(invalid)?;
    if text.len() < 2 || !text.ends_with(quote_character) {
        return Err(invalid());
    }
    let body = &text[1..text.len() - 1];
    if quote_character == '`' {
        // Go drops carriage returns from raw strings.
        return Ok(body.replace('\r', ""));
    }
    let mut bytes = Vec::with_capacity(body.len());
    let mut characters = body.chars().peekable();
    while let Some(character) = characters.next() {
        if character != '\\' {
            if character == quote_character {
                return Err(invalid());
            }
            let mut buffer = [0; 4];
            bytes.extend_from_slice(character.encode_utf8(&mut buffer).as_bytes());
            continue;
        }
        let escape = characters.next().ok_or_else(invalid)?;
        let mut take_hex = |count: usize| -> Result<u32, String> {
            let mut value = 0;
            for _ in 0..count {
                let digit = characters.next().and_then(|c| c.to_digit(16));
                value = value * 16 + digit.ok_or_else(invalid)?;
            }
            Ok(value)
        };
        let simple = match escape {
            'a' => Some(0x07),
            'b' => Some(0x08),
            'f' => Some(0x0c),
            'n' => Some(b'\n'),
            'r' => Some(b'\r'),
            't' => Some(b'\t'),
            'v' => Some(0x0b),
            '\\' => Some(b'\\'),
            '\'' | '"' if escape == quote_character => Some(escape as u8),
            _ => None,
        };
        if let Some(byte) = simple {
            bytes.push(byte);
            continue;
        }
        match escape {
            'x' => bytes.push(take_hex(2)? as u8),
            'u' | 'U' => {
                let code = take_hex(if escape == 'u' { 4 } else { 8 })?;
                let character = char::from_u32(code).ok_or_else(invalid)?;
                let mut buffer = [0; 4];
                bytes.extend_from_slice(character.encode_utf8(&mut buffer).as_bytes());
            }
            '0'..='7' => {
                let mut value = escape.to_digit(8).expect("matched an octal digit");
                for _ in 0..2 {
                    let digit = characters.next().and_then(|c| c.to_digit(8));
                    value = value * 8 + digit.ok_or_else(invalid)?;
                }
                bytes.push(u8::try_from(value).map_err(|_| invalid())?);
            }
            _ => return Err(invalid()),
        }
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unquotes_go_strings() {
        assert_eq!(
            unquote(r#""a\tb\n\"\\\x41\u00e9\101""#).unwrap(),
            "a\tb\n\"\\Aé".to_owned() + "A"
        );
        assert_eq!(unquote("`raw\\n`").unwrap(), "raw\\n");
        assert!(unquote(r#""\'""#).is_err());
    }

    #[test]
    fn parses_go_integers() {
        assert_eq!(parse_go_int("42"), Some(42));
        assert_eq!(parse_go_int("-0x1f"), Some(-31));
        assert_eq!(parse_go_int("0b101"), Some(5));
        assert_eq!(parse_go_int("0o17"), Some(15));
        assert_eq!(parse_go_int("017"), Some(15));
        assert_eq!(parse_go_int("0x_ff"), Some(255));
        assert_eq!(parse_go_int("1_000"), None);
        assert_eq!(parse_go_int("1.5"), None);
        assert_eq!(parse_go_int("99999999999999999999"), None);
    }
}
