//! The normalised project as `docker compose config` prints it: YAML the way go-yaml v3
//! writes it (two-space indent, sequences indented under their key, strings quoted only when
//! they would read back as something else), or JSON the way Go's `json.MarshalIndent` does.

use serde_json::{Map, Value as Json};

use crate::yaml::{format_float, resolve_plain};

pub fn yaml(model: &Json) -> String {
    let mut out = String::new();
    match model {
        Json::Object(map) if !map.is_empty() => write_map(&mut out, map, 0),
        other => {
            out.push_str(&scalar(other, 0));
            out.push('\n');
        }
    }
    out
}

fn write_map(out: &mut String, map: &Map<String, Json>, indent: usize) {
    let mut first = true;
    for (key, value) in map {
        // Every line after the first starts at the indent; the caller wrote the first line's
        // prefix (`- ` when the map is a sequence item).
        if !first {
            out.push_str(&" ".repeat(indent));
        }
        first = false;
        out.push_str(&string(key, indent));
        out.push(':');
        write_value_after_key(out, value, indent);
    }
}

fn write_value_after_key(out: &mut String, value: &Json, indent: usize) {
    match value {
        Json::Object(map) if !map.is_empty() => {
            out.push('\n');
            out.push_str(&" ".repeat(indent + 2));
            write_map(out, map, indent + 2);
        }
        Json::Array(items) if !items.is_empty() => {
            out.push('\n');
            write_seq(out, items, indent + 2);
        }
        other => {
            out.push(' ');
            out.push_str(&scalar(other, indent + 2));
            out.push('\n');
        }
    }
}

fn write_seq(out: &mut String, items: &[Json], indent: usize) {
    for item in items {
        out.push_str(&" ".repeat(indent));
        out.push_str("- ");
        match item {
            Json::Object(map) if !map.is_empty() => write_map(out, map, indent + 2),
            Json::Array(inner) if !inner.is_empty() => {
                out.push('\n');
                write_seq(out, inner, indent + 2);
            }
            other => {
                out.push_str(&scalar(other, indent + 2));
                out.push('\n');
            }
        }
    }
}

fn scalar(value: &Json, indent: usize) -> String {
    match value {
        Json::Null => "null".to_owned(),
        Json::Bool(value) => value.to_string(),
        Json::Number(number) => match number.as_i64() {
            Some(int) => int.to_string(),
            None => number
                .as_f64()
                .map(format_float)
                .unwrap_or_else(|| number.to_string()),
        },
        Json::String(text) => string(&escape_dollars(text), indent),
        Json::Object(_) => "{}".to_owned(),
        Json::Array(_) => "[]".to_owned(),
    }
}

/// compose prints a `$` of a value as `$$`, so that the output, read again, interpolates to
/// the same values.
fn escape_dollars(text: &str) -> String {
    text.replace('$', "$$")
}

/// Strings of a value tree with their `$` escaped (for JSON).
fn escape_tree(value: &mut Json) {
    match value {
        Json::String(text) => *text = escape_dollars(text),
        Json::Array(items) => items.iter_mut().for_each(escape_tree),
        Json::Object(map) => map.values_mut().for_each(escape_tree),
        _ => {}
    }
}

/// YAML 1.1's booleans, which go-yaml v3 still quotes so older readers see strings.
fn is_old_bool(text: &str) -> bool {
    matches!(
        text,
        "y" | "Y"
            | "yes"
            | "Yes"
            | "YES"
            | "n"
            | "N"
            | "no"
            | "No"
            | "NO"
            | "on"
            | "On"
            | "ON"
            | "off"
            | "Off"
            | "OFF"
    )
}

/// YAML 1.1's sexagesimal numbers (`1:20`), quoted for the same reason.
fn is_base60_float(text: &str) -> bool {
    let body = text.trim_start_matches(['-', '+']);
    let mut parts = body.split(':');
    let Some(first) = parts.next() else {
        return false;
    };
    let rest: Vec<&str> = parts.collect();
    if rest.is_empty() || first.is_empty() || !first.chars().all(|c| c.is_ascii_digit() || c == '_')
    {
        return false;
    }
    let Some((last, middle)) = rest.split_last() else {
        return false;
    };
    let sixty = |part: &str| {
        !part.is_empty() && part.len() <= 2 && part.chars().all(|c| c.is_ascii_digit()) && {
            part.parse::<u32>().is_ok_and(|v| v < 60)
        }
    };
    let last_whole = last.split('.').next().unwrap_or("");
    middle.iter().all(|part| sixty(part)) && sixty(last_whole)
}

/// Whether libyaml's emitter allows `text` as a plain scalar in block context.
fn plain_allowed(text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    let Some(&first) = chars.first() else {
        return false;
    };
    if first == ' ' || chars.last() == Some(&' ') {
        return false;
    }
    if text.starts_with("---") || text.starts_with("...") {
        return false;
    }
    for (index, &c) in chars.iter().enumerate() {
        let next = chars.get(index + 1).copied();
        let followed_by_blank = next.is_none_or(|n| n == ' ');
        if index == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => return false,
                '?' | ':' | '-' if followed_by_blank => return false,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_blank => return false,
                '#' if chars[index - 1] == ' ' => return false,
                _ => {}
            }
        }
    }
    true
}

fn needs_double_quotes(text: &str) -> bool {
    text.chars().any(|c| {
        let code = c as u32;
        !(c == ' '
            || (0x21..=0x7e).contains(&code)
            || code == 0x85
            || (0xa0..=0xd7ff).contains(&code)
            || (0xe000..=0xfffd).contains(&code) && code != 0xfeff
            || (0x10000..=0x10ffff).contains(&code))
    })
}

fn double_quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02X}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn single_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn literal(text: &str, indent: usize) -> String {
    let chomp = if text.ends_with("\n\n") {
        "+"
    } else if text.ends_with('\n') {
        ""
    } else {
        "-"
    };
    let indicator = if text.starts_with(' ') { "2" } else { "" };
    let mut out = format!("|{indicator}{chomp}");
    let body = text.strip_suffix('\n').unwrap_or(text);
    for line in body.split('\n') {
        out.push('\n');
        if !line.is_empty() {
            out.push_str(&" ".repeat(indent));
            out.push_str(line);
        }
    }
    out
}

fn string(text: &str, indent: usize) -> String {
    if text.is_empty() {
        return "\"\"".to_owned();
    }
    if text.contains('\n') {
        let trailing_space = text.split('\n').any(|line| line.ends_with(' '));
        if needs_double_quotes(&text.replace('\n', "")) || trailing_space {
            return double_quoted(text);
        }
        return literal(text, indent);
    }
    if needs_double_quotes(text) {
        return double_quoted(text);
    }
    if resolve_plain(text).is_some() {
        return double_quoted(text);
    }
    // `<<` would read back as a merge key.
    if text == "<<" || is_old_bool(text) || is_base60_float(text) || !plain_allowed(text) {
        return single_quoted(text);
    }
    text.to_owned()
}

/// `config --format json`: Go marshals the project struct, so the top level is sorted, each
/// service carries `command` and `entrypoint` (null when unset) and each network an `ipam`.
pub fn json(model: &Json) -> String {
    let mut model = model.clone();
    escape_tree(&mut model);
    if let Some(services) = model.get_mut("services").and_then(Json::as_object_mut) {
        for service in services.values_mut() {
            if let Some(map) = service.as_object_mut() {
                // JSON omits zero soft and hard limits (`omitempty`), YAML does not.
                if let Some(ulimits) = map.get_mut("ulimits").and_then(Json::as_object_mut) {
                    for limit in ulimits.values_mut() {
                        if let Some(pair) = limit.as_object_mut() {
                            pair.retain(|_, value| value.as_i64() != Some(0));
                        }
                    }
                }
                // The deploy struct's sub-structs are not omitted in JSON.
                if let Some(deploy) = map.get_mut("deploy").and_then(Json::as_object_mut) {
                    deploy.insert("resources".into(), Json::Object(Map::new()));
                    deploy.insert("placement".into(), Json::Object(Map::new()));
                }
                let mut ordered = Map::new();
                for key in crate::normalize::service::ORDER {
                    if let Some(value) = map.get(*key) {
                        ordered.insert((*key).to_owned(), value.clone());
                    } else if matches!(*key, "command" | "entrypoint") {
                        ordered.insert((*key).to_owned(), Json::Null);
                    }
                }
                for (key, value) in map.iter() {
                    // Service extensions are YAML-only (`json:"-"` in compose's model).
                    if !ordered.contains_key(key) && !key.starts_with("x-") {
                        ordered.insert(key.clone(), value.clone());
                    }
                }
                *map = ordered;
            }
        }
    }
    if let Some(networks) = model.get_mut("networks").and_then(Json::as_object_mut) {
        for network in networks.values_mut() {
            if let Some(map) = network.as_object_mut() {
                if !map.contains_key("ipam") {
                    let mut ordered = Map::new();
                    let mut inserted = false;
                    for (key, value) in std::mem::take(map) {
                        if !inserted && !matches!(key.as_str(), "name" | "driver" | "driver_opts") {
                            ordered.insert("ipam".into(), Json::Object(Map::new()));
                            inserted = true;
                        }
                        ordered.insert(key, value);
                    }
                    if !inserted {
                        ordered.insert("ipam".into(), Json::Object(Map::new()));
                    }
                    *map = ordered;
                }
            }
        }
    }
    if let Json::Object(map) = &mut model {
        let mut entries: Vec<(String, Json)> = std::mem::take(map).into_iter().collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        map.extend(entries);
    }
    let text = serde_json::to_string_pretty(&model).unwrap_or_default();
    // Go's encoder escapes these for HTML safety.
    text.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_are_quoted_as_go_yaml_quotes_them() {
        for (input, output) in [
            ("16", "\"16\""),
            ("yes", "'yes'"),
            ("n", "'n'"),
            ("it's", "it's"),
            ("a: b", "'a: b'"),
            ("- x", "'- x'"),
            ("#x", "'#x'"),
            (" sp", "' sp'"),
            ("*", "'*'"),
            ("null", "\"null\""),
            ("tab\there", "\"tab\\there\""),
            ("é", "é"),
            ("a\"b", "a\"b"),
            ("{x}", "'{x}'"),
            ("a #b", "'a #b'"),
            ("<<", "'<<'"),
            ("1000:1000", "1000:1000"),
            ("1:20", "'1:20'"),
            ("", "\"\""),
        ] {
            assert_eq!(string(input, 0), output, "{input}");
        }
    }

    #[test]
    fn nested_values_indent_by_two() {
        let text = yaml(&json!({"a": {"b": [1, {"c": "d", "e": []}], "f": {}}, "g": null}));
        assert_eq!(
            text,
            "a:\n  b:\n    - 1\n    - c: d\n      e: []\n  f: {}\ng: null\n"
        );
    }

    #[test]
    fn multi_line_strings_are_literal_blocks() {
        let text = yaml(&json!({"e": "multi\nline\n"}));
        assert_eq!(text, "e: |\n  multi\n  line\n");
    }
}
