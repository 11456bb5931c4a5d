//! How Go prints values, for output that must match the docker CLI byte for byte.
//!
//! The docker CLI is written in Go, so its templates print numbers with `fmt`'s `%v`,
//! its `json` template function uses `encoding/json`, and go-units formats sizes with
//! `%.*g`. Rust's own formatting differs in small, visible ways (`1e6` vs `1e+06`,
//! `1.0` vs `1`, `map[...]`), so the rules are restated here.

use serde_json::Value;

/// The decimal digits of a finite, non-zero float and the position of its decimal point:
/// the value is `0.DIGITS × 10^point`, as in Go's `strconv` internals.
struct Decimal {
    negative: bool,
    digits: Vec<u8>,
    point: i32,
}

impl Decimal {
    /// Digits rounded to `precision` significant digits (half to even on exact ties, as
    /// Go rounds), or the shortest digits that read back as `value` when `None`. Trailing
    /// zeros are dropped, as Go's conversion drops them.
    fn new(value: f64, precision: Option<usize>) -> Decimal {
        let scientific = match precision {
            Some(precision) => format!("{:.*e}", precision.max(1) - 1, value.abs()),
            None => format!("{:e}", value.abs()),
        };
        let (mantissa, exponent) = scientific
            .split_once('e')
            .expect("Rust's {:e} output always has an exponent");
        let exponent: i32 = exponent
            .parse()
            .expect("Rust's {:e} exponent is an integer");
        let mut digits: Vec<u8> = mantissa.bytes().filter(|b| b.is_ascii_digit()).collect();
        while digits.len() > 1 && digits.last() == Some(&b'0') {
            digits.pop();
        }
        Decimal {
            negative: value.is_sign_negative(),
            digits,
            point: exponent + 1,
        }
    }

    fn sign(&self) -> &'static str {
        if self.negative {
            "-"
        } else {
            ""
        }
    }

    /// `d.ddde±XX` with every kept digit, the exponent at least two digits long.
    fn scientific(&self) -> String {
        let mut out = String::from(self.sign());
        out.push(char::from(self.digits[0]));
        if self.digits.len() > 1 {
            out.push('.');
            out.extend(self.digits[1..].iter().map(|&b| char::from(b)));
        }
        let exponent = self.point - 1;
        out.push('e');
        out.push(if exponent < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exponent.unsigned_abs()));
        out
    }

    /// Plain positional notation with every kept digit and no trailing zeros.
    fn positional(&self) -> String {
        let mut out = String::from(self.sign());
        let digits: String = self.digits.iter().map(|&b| char::from(b)).collect();
        let count = self.digits.len() as i32;
        if self.point <= 0 {
            out.push_str("0.");
            out.push_str(&"0".repeat(self.point.unsigned_abs() as usize));
            out.push_str(&digits);
        } else if self.point >= count {
            out.push_str(&digits);
            out.push_str(&"0".repeat((self.point - count) as usize));
        } else {
            let (whole, fraction) = digits.split_at(self.point as usize);
            out.push_str(whole);
            out.push('.');
            out.push_str(fraction);
        }
        out
    }
}

fn special(value: f64) -> Option<String> {
    if value.is_nan() {
        Some("NaN".to_owned())
    } else if value.is_infinite() {
        Some(if value > 0.0 { "+Inf" } else { "-Inf" }.to_owned())
    } else if value == 0.0 {
        Some(if value.is_sign_negative() { "-0" } else { "0" }.to_owned())
    } else {
        None
    }
}

/// Go's `%.<precision>g`, or `%v` (shortest digits) when `precision` is `None`.
///
/// Scientific notation is chosen when the exponent is below -4 or at least the precision
/// (six for the shortest form), which is why Go prints `float64(1000000)` as `1e+06`.
pub fn format_g(value: f64, precision: Option<usize>) -> String {
    if let Some(text) = special(value) {
        return text;
    }
    let decimal = Decimal::new(value, precision);
    let exponent = decimal.point - 1;
    let limit = precision.map_or(6, |p| p.max(1) as i32);
    if exponent < -4 || exponent >= limit {
        decimal.scientific()
    } else {
        decimal.positional()
    }
}

/// A float as Go's `encoding/json` writes it: positional for magnitudes in
/// `[1e-6, 1e21)`, otherwise scientific with the exponent's leading zero removed.
pub fn format_json_float(value: f64) -> String {
    if let Some(text) = special(value) {
        return text;
    }
    let decimal = Decimal::new(value, None);
    let magnitude = value.abs();
    if !(1e-6..1e21).contains(&magnitude) {
        let text = decimal.scientific();
        // Go trims `e-07` to `e-7` (but leaves positive exponents alone).
        match text.rsplit_once("e-0") {
            Some((head, tail)) => format!("{head}e-{tail}"),
            None => text,
        }
    } else {
        decimal.positional()
    }
}

/// A JSON number as Go's `%v` prints the value it decodes to: integers in full,
/// other numbers as `float64`.
pub fn format_number(number: &serde_json::Number) -> String {
    if number.is_f64() {
        format_g(number.as_f64().unwrap_or(f64::NAN), None)
    } else {
        number.to_string()
    }
}

/// A value as Go's `fmt.Sprint` prints the equivalent Go value: strings raw, `null` as
/// `<nil>`, arrays as `[a b]`, objects as `map[k:v]` with keys sorted (Go sorts map keys).
pub fn sprint(value: &Value) -> String {
    let mut out = String::new();
    write_sprint(&mut out, value);
    out
}

fn write_sprint(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Number(number) => out.push_str(&format_number(number)),
        Value::String(text) => out.push_str(text),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(' ');
                }
                write_sprint(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push_str("map[");
            for (index, (key, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(' ');
                }
                out.push_str(key);
                out.push(':');
                write_sprint(out, item);
            }
            out.push(']');
        }
    }
}

/// Compact JSON as Go's `encoding/json` encoder with HTML escaping off writes it, which
/// is what docker's `json` template function prints. Object keys keep their order: berth's
/// values come from structs, which Go also encodes in declaration order.
pub fn json(value: &Value) -> String {
    let mut out = String::new();
    write_json(&mut out, value);
    out
}

fn write_json(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Number(number) if number.is_f64() => {
            out.push_str(&format_json_float(number.as_f64().unwrap_or(f64::NAN)));
        }
        Value::Number(number) => out.push_str(&number.to_string()),
        Value::String(text) => write_json_string(out, text),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_json(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (index, (key, item)) in map.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_json_string(out, key);
                out.push(':');
                write_json(out, item);
            }
            out.push('}');
        }
    }
}

fn write_json_string(out: &mut String, text: &str) {
    out.push('"');
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            // Go always escapes the JavaScript line separators, even with HTML escaping off.
            '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", u32::from(character))),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

pub use berth_types::go::quote;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shortest_g_matches_go_percent_v() {
        // Expected strings are what Go's fmt.Sprint(float64(x)) prints.
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (1.0, "1"),
            (1.5, "1.5"),
            (-2.25, "-2.25"),
            (100000.0, "100000"),
            (1000000.0, "1e+06"),
            (123456789.0, "1.23456789e+08"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e21, "1e+21"),
            (1.5e-300, "1.5e-300"),
        ];
        for (value, expected) in cases {
            assert_eq!(format_g(*value, None), *expected, "value {value}");
        }
    }

    #[test]
    fn fixed_precision_g_matches_go() {
        let cases: &[(f64, usize, &str)] = &[
            (4.26, 3, "4.26"),
            (4.2649, 3, "4.26"),
            (1.0, 3, "1"),
            (100.0, 3, "100"),
            (999.0, 3, "999"),
            (999.9, 3, "1e+03"),
            (12.5, 3, "12.5"),
            (1.125, 3, "1.12"),
            (1.375, 3, "1.38"),
            (0.5, 0, "0.5"),
            (2.0, 4, "2"),
            (1023.9, 4, "1024"),
        ];
        for (value, precision, expected) in cases {
            assert_eq!(
                format_g(*value, Some(*precision)),
                *expected,
                "value {value} precision {precision}"
            );
        }
    }

    #[test]
    fn json_floats_match_encoding_json() {
        assert_eq!(format_json_float(1.0), "1");
        assert_eq!(format_json_float(0.5), "0.5");
        assert_eq!(format_json_float(123456789.0), "123456789");
        assert_eq!(format_json_float(1e20), "100000000000000000000");
        assert_eq!(format_json_float(1e21), "1e+21");
        assert_eq!(format_json_float(0.0000001), "1e-7");
        assert_eq!(format_json_float(1.5e-10), "1.5e-10");
    }

    #[test]
    fn sprint_prints_like_go_fmt() {
        assert_eq!(sprint(&json!(null)), "<nil>");
        assert_eq!(sprint(&json!("raw \"text\"")), "raw \"text\"");
        assert_eq!(sprint(&json!(42)), "42");
        assert_eq!(sprint(&json!(-7)), "-7");
        assert_eq!(sprint(&json!(2.5)), "2.5");
        assert_eq!(sprint(&json!(true)), "true");
        assert_eq!(sprint(&json!(["a", 1, null])), "[a 1 <nil>]");
        assert_eq!(sprint(&json!([])), "[]");
        assert_eq!(
            sprint(&json!({"b": "2", "a": {"c": [1]}})),
            "map[a:map[c:[1]] b:2]"
        );
        assert_eq!(sprint(&json!({})), "map[]");
    }

    #[test]
    fn json_is_compact_and_escapes_like_go() {
        let value = json!({"z": 1, "a": [true, null, 1.0], "s": "<&>\n\t\u{1}\u{2028}é"});
        assert_eq!(
            json(&value),
            r#"{"z":1,"a":[true,null,1],"s":"<&>\n\t\u0001\u2028é"}"#
        );
    }
}
