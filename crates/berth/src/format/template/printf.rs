//! The `printf` template function: Go's `fmt.Sprintf` for the verbs a format string
//! is likely to use (`%v %s %q %d %x %X %o %b %c %t %e %f %g`), with flags `-+#0`, width
//! and precision, and Go's inline error notation (`%!d(string=x)`, `%!v(MISSING)`).

use serde_json::Value;

use super::functions::go_type;
use crate::format::gofmt::{format_g, quote, sprint};

#[derive(Debug, Default, Clone, Copy)]
struct Spec {
    minus: bool,
    plus: bool,
    sharp: bool,
    zero: bool,
    width: Option<usize>,
    precision: Option<usize>,
}

pub(super) fn sprintf(format: &str, args: &[Value]) -> String {
    let characters: Vec<char> = format.chars().collect();
    let mut out = String::new();
    let mut next_arg = 0;
    let mut position = 0;
    while position < characters.len() {
        let character = characters[position];
        position += 1;
        if character != '%' {
            out.push(character);
            continue;
        }
        let mut spec = Spec::default();
        while let Some(&flag) = characters.get(position) {
            match flag {
                '-' => spec.minus = true,
                '+' => spec.plus = true,
                '#' => spec.sharp = true,
                '0' => spec.zero = true,
                ' ' => {}
                _ => break,
            }
            position += 1;
        }
        spec.width = read_number(&characters, &mut position, args, &mut next_arg, &mut out);
        if characters.get(position) == Some(&'.') {
            position += 1;
            spec.precision = Some(
                read_number(&characters, &mut position, args, &mut next_arg, &mut out).unwrap_or(0),
            );
        }
        let Some(&verb) = characters.get(position) else {
            out.push_str("%!(NOVERB)");
            break;
        };
        position += 1;
        if verb == '%' {
            out.push('%');
            continue;
        }
        let Some(arg) = args.get(next_arg) else {
            out.push_str(&format!("%!{verb}(MISSING)"));
            continue;
        };
        next_arg += 1;
        out.push_str(&format_value(spec, verb, arg));
    }
    if next_arg < args.len() {
        let extra: Vec<String> = args[next_arg..]
            .iter()
            .map(|arg| match arg {
                Value::Null => "<nil>".to_owned(),
                other => format!("{}={}", go_type(other), sprint(other)),
            })
            .collect();
        out.push_str(&format!("%!(EXTRA {})", extra.join(", ")));
    }
    out
}

/// Reads a width or precision: digits, or `*` taking an integer argument.
fn read_number(
    characters: &[char],
    position: &mut usize,
    args: &[Value],
    next_arg: &mut usize,
    out: &mut String,
) -> Option<usize> {
    if characters.get(*position) == Some(&'*') {
        *position += 1;
        let value = args.get(*next_arg).and_then(Value::as_u64);
        *next_arg += 1;
        if value.is_none() {
            out.push_str("%!(BADWIDTH)");
        }
        return value.and_then(|v| usize::try_from(v).ok());
    }
    let start = *position;
    let mut number = 0usize;
    while let Some(digit) = characters.get(*position).and_then(|c| c.to_digit(10)) {
        number = number.saturating_mul(10).saturating_add(digit as usize);
        *position += 1;
    }
    (*position > start).then_some(number)
}

fn format_value(spec: Spec, verb: char, value: &Value) -> String {
    // Go applies the verb to each element of a slice or map.
    match value {
        Value::Array(items) if verb != 'v' || spec.width.is_some() => {
            let parts: Vec<String> = items
                .iter()
                .map(|item| format_value(spec, verb, item))
                .collect();
            return format!("[{}]", parts.join(" "));
        }
        Value::Object(map) if verb != 'v' || spec.width.is_some() => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let parts: Vec<String> = entries
                .into_iter()
                .map(|(key, item)| {
                    let key = Value::String(key.clone());
                    format!(
                        "{}:{}",
                        format_value(spec, verb, &key),
                        format_value(spec, verb, item)
                    )
                })
                .collect();
            return format!("map[{}]", parts.join(" "));
        }
        _ => {}
    }
    let Some((sign, body, numeric)) = format_scalar(spec, verb, value) else {
        return match value {
            Value::Null => format!("%!{verb}(<nil>)"),
            other => format!("%!{verb}({}={})", go_type(other), sprint(other)),
        };
    };
    pad(spec, sign, &body, numeric)
}

/// The sign and digits (or text) for one value, or `None` when the verb does not apply.
fn format_scalar(spec: Spec, verb: char, value: &Value) -> Option<(&'static str, String, bool)> {
    let truncate = |text: &str| match spec.precision {
        Some(precision) => text.chars().take(precision).collect(),
        None => text.to_owned(),
    };
    match (verb, value) {
        ('v', Value::String(text)) | ('s', Value::String(text)) => {
            Some(("", truncate(text), false))
        }
        ('q', Value::String(text)) => Some(("", quote(&truncate(text)), false)),
        ('x' | 'X', Value::String(text)) => {
            let hex: String = text.bytes().map(|b| format!("{b:02x}")).collect();
            let hex = if verb == 'X' { hex.to_uppercase() } else { hex };
            Some(("", hex, false))
        }
        ('t' | 'v', Value::Bool(flag)) => Some(("", flag.to_string(), false)),
        ('v', Value::Null) => Some(("", "<nil>".to_owned(), false)),
        (_, Value::Number(number)) if !number.is_f64() => {
            let integer = number
                .as_i64()
                .map(i128::from)
                .or_else(|| number.as_u64().map(i128::from))?;
            format_integer(spec, verb, integer)
        }
        (_, Value::Number(number)) => format_float(spec, verb, number.as_f64()?),
        ('v', other) => Some(("", sprint(other), false)),
        _ => None,
    }
}

fn format_integer(spec: Spec, verb: char, integer: i128) -> Option<(&'static str, String, bool)> {
    let sign = if integer < 0 {
        "-"
    } else if spec.plus {
        "+"
    } else {
        ""
    };
    let magnitude = integer.unsigned_abs();
    let body = match verb {
        'v' | 'd' => magnitude.to_string(),
        'x' => format!("{}{magnitude:x}", if spec.sharp { "0x" } else { "" }),
        'X' => format!("{}{magnitude:X}", if spec.sharp { "0X" } else { "" }),
        'o' => format!("{}{magnitude:o}", if spec.sharp { "0" } else { "" }),
        'b' => format!("{magnitude:b}"),
        'c' | 'q' => {
            let character = u32::try_from(integer).ok().and_then(char::from_u32)?;
            return Some(if verb == 'c' {
                ("", character.to_string(), false)
            } else {
                let quoted = quote(&character.to_string());
                let inner = &quoted[1..quoted.len() - 1];
                let inner = if inner == "'" { "\\'" } else { inner };
                ("", format!("'{inner}'"), false)
            });
        }
        _ => return None,
    };
    Some((sign, body, true))
}

fn format_float(spec: Spec, verb: char, float: f64) -> Option<(&'static str, String, bool)> {
    let sign = if float.is_sign_negative() && !float.is_nan() {
        "-"
    } else if spec.plus || float.is_infinite() {
        "+"
    } else {
        ""
    };
    let magnitude = float.abs();
    if !magnitude.is_finite() {
        let text = if magnitude.is_nan() { "NaN" } else { "Inf" };
        return Some((sign, text.to_owned(), false));
    }
    let body = match verb {
        'v' | 'g' | 'G' => {
            let text = format_g(magnitude, spec.precision);
            if verb == 'G' {
                text.to_uppercase()
            } else {
                text
            }
        }
        'f' | 'F' => format!("{:.*}", spec.precision.unwrap_or(6), magnitude),
        'e' | 'E' => {
            let text = format!("{:.*e}", spec.precision.unwrap_or(6), magnitude);
            let (mantissa, exponent) = text.split_once('e').expect("{:e} has an exponent");
            let exponent: i32 = exponent.parse().expect("{:e} exponent is an integer");
            let sign = if exponent < 0 { '-' } else { '+' };
            let letter = if verb == 'E' { 'E' } else { 'e' };
            format!("{mantissa}{letter}{sign}{:02}", exponent.unsigned_abs())
        }
        _ => return None,
    };
    Some((sign, body, true))
}

/// Pads to the width: spaces on the left, on the right with `-`, or zeros after the
/// sign with `0` for numbers.
fn pad(spec: Spec, sign: &str, body: &str, numeric: bool) -> String {
    let length = sign.chars().count() + body.chars().count();
    let missing = spec.width.unwrap_or(0).saturating_sub(length);
    if missing == 0 {
        return format!("{sign}{body}");
    }
    if spec.minus {
        format!("{sign}{body}{}", " ".repeat(missing))
    } else if spec.zero && numeric {
        format!("{sign}{}{body}", "0".repeat(missing))
    } else {
        format!("{}{sign}{body}", " ".repeat(missing))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn printf(format: &str, args: Value) -> String {
        let Value::Array(args) = args else {
            panic!("args must be an array")
        };
        sprintf(format, &args)
    }

    #[test]
    fn formats_like_go_fmt() {
        // Expected strings are what Go's fmt.Sprintf prints for the same arguments.
        assert_eq!(printf("%s-%v", json!(["a", 3])), "a-3");
        assert_eq!(printf("%-6s|", json!(["ab"])), "ab    |");
        assert_eq!(printf("%6s|", json!(["ab"])), "    ab|");
        assert_eq!(printf("%.2s", json!(["abc"])), "ab");
        assert_eq!(printf("%q", json!(["a\"b"])), "\"a\\\"b\"");
        assert_eq!(
            printf("%05d|%+d|%x|%#X", json!([-42, 7, 255, 255])),
            "-0042|+7|ff|0XFF"
        );
        assert_eq!(
            printf("%.2f|%e|%g", json!([1.23456, 1234.5, 0.000012])),
            "1.23|1.234500e+03|1.2e-05"
        );
        assert_eq!(printf("%t %v", json!([true, null])), "true <nil>");
        assert_eq!(printf("%d%%", json!([50])), "50%");
        assert_eq!(printf("%c%q", json!([65, 66])), "A'B'");
        assert_eq!(printf("%v", json!([["a", 1]])), "[a 1]");
        assert_eq!(printf("%3d", json!([[1, 22]])), "[  1  22]");
        assert_eq!(printf("%s", json!([{"b": "x", "a": "y"}])), "map[a:y b:x]");
    }

    #[test]
    fn reports_misuse_inline_like_go_fmt() {
        assert_eq!(printf("%d", json!(["x"])), "%!d(string=x)");
        assert_eq!(printf("%s", json!([5])), "%!s(int=5)");
        assert_eq!(printf("%f", json!([5])), "%!f(int=5)");
        assert_eq!(printf("%s", json!([null])), "%!s(<nil>)");
        assert_eq!(printf("%s %s", json!(["a"])), "a %!s(MISSING)");
        assert_eq!(
            printf("%s", json!(["a", 1, null])),
            "a%!(EXTRA int=1, <nil>)"
        );
        assert_eq!(printf("50%", json!([])), "50%!(NOVERB)");
    }
}
