//! Go's text forms that Docker's and BuildKit's messages print.

/// A string in Go's `strconv.Quote` form (what `%q` prints).
pub fn quote(text: &str) -> String {
    let mut out = String::from('"');
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if u32::from(c) < 0x80 && c.is_control() => {
                out.push_str(&format!("\\x{:02x}", u32::from(c)));
            }
            c if c.is_control() => {
                let code = u32::from(c);
                if code <= 0xffff {
                    out.push_str(&format!("\\u{code:04x}"));
                } else {
                    out.push_str(&format!("\\U{code:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_matches_strconv_quote() {
        assert_eq!(quote("a\"b\\c\n\u{1}é"), r#""a\"b\\c\n\x01é""#);
        assert_eq!(quote("a\"b\\c\td"), r#""a\"b\\c\td""#);
        assert_eq!(quote("\u{7f}\u{85}"), r#""\x7f\u0085""#);
    }
}
