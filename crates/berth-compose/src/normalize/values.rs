//! Reading values of the shapes compose's schema allows, with errors naming path and line.

use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value as Json};

use crate::error::ComposeError;
use crate::yaml::{Node, Value};

pub type Result<T> = std::result::Result<T, ComposeError>;

pub fn must_be(node: &Node, path: &str, kind: &str) -> ComposeError {
    ComposeError::schema(&node.at, path, format!("must be a {kind}"))
}

/// A string-typed field: scalars are taken as their text (compose casts numbers).
pub fn string(node: &Node, path: &str) -> Result<String> {
    node.scalar_text()
        .ok_or_else(|| must_be(node, path, "string"))
}

pub fn boolean(node: &Node, path: &str) -> Result<bool> {
    match &node.value {
        Value::Bool(value) => Ok(*value),
        Value::String(text) => match text.as_str() {
            "true" | "True" | "TRUE" | "yes" | "y" | "on" => Ok(true),
            "false" | "False" | "FALSE" | "no" | "n" | "off" => Ok(false),
            _ => Err(must_be(node, path, "boolean")),
        },
        _ => Err(must_be(node, path, "boolean")),
    }
}

pub fn integer(node: &Node, path: &str) -> Result<i64> {
    match &node.value {
        Value::Int(value) => Ok(*value),
        Value::String(text) => text
            .trim()
            .parse()
            .map_err(|_| must_be(node, path, "integer")),
        _ => Err(must_be(node, path, "integer")),
    }
}

pub fn map<'a>(node: &'a Node, path: &str) -> Result<&'a Vec<(String, Node)>> {
    node.as_map().ok_or_else(|| must_be(node, path, "object"))
}

pub fn seq<'a>(node: &'a Node, path: &str) -> Result<&'a Vec<Node>> {
    match &node.value {
        Value::Seq(items) => Ok(items),
        _ => Err(must_be(node, path, "array")),
    }
}

/// A string or a list of strings, as a list.
pub fn string_or_list(node: &Node, path: &str) -> Result<Vec<String>> {
    match &node.value {
        Value::Seq(items) => items
            .iter()
            .enumerate()
            .map(|(index, item)| string(item, &format!("{path}.{index}")))
            .collect(),
        _ => Ok(vec![string(node, path)?]),
    }
}

pub fn string_list(node: &Node, path: &str) -> Result<Vec<String>> {
    seq(node, path)?
        .iter()
        .enumerate()
        .map(|(index, item)| string(item, &format!("{path}.{index}")))
        .collect()
}

pub fn json_strings(items: Vec<String>) -> Json {
    Json::Array(items.into_iter().map(Json::String).collect())
}

/// `KEY=VALUE` lists and maps as a map of strings (Go maps print sorted); with
/// `bare_is_null`, a list item `KEY` and a map value `null` are kept as null, else as "".
pub fn key_value_map(
    node: &Node,
    path: &str,
    separator: char,
    bare: &dyn Fn(&str) -> Option<Json>,
) -> Result<Vec<(String, Json)>> {
    let mut entries: Vec<(String, Json)> = Vec::new();
    match &node.value {
        Value::Seq(items) => {
            for (index, item) in items.iter().enumerate() {
                let text = string(item, &format!("{path}.{index}"))?;
                match text.split_once(separator) {
                    Some((key, value)) => {
                        upsert(&mut entries, key.to_owned(), Json::String(value.to_owned()))
                    }
                    None => {
                        if let Some(value) = bare(&text) {
                            upsert(&mut entries, text, value);
                        }
                    }
                }
            }
        }
        Value::Map(items) => {
            for (key, value) in items {
                let value = match &value.value {
                    Value::Null => match bare(key) {
                        Some(value) => value,
                        None => continue,
                    },
                    _ => Json::String(string(value, &format!("{path}.{key}"))?),
                };
                upsert(&mut entries, key.clone(), value);
            }
        }
        _ => return Err(must_be(node, path, "object")),
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

fn upsert(entries: &mut Vec<(String, Json)>, key: String, value: Json) {
    match entries.iter_mut().find(|(name, _)| *name == key) {
        Some(entry) => entry.1 = value,
        None => entries.push((key, value)),
    }
}

pub fn object(entries: Vec<(String, Json)>) -> Json {
    Json::Object(entries.into_iter().collect::<Map<_, _>>())
}

/// Refuses keys of `node` outside `known` (compose's "additional properties" error), and keys
/// in `refused` (compose knows them, berth does not implement them). `x-` keys are allowed.
pub fn check_keys(node: &Node, path: &str, known: &[&str], refused: &[&str]) -> Result<()> {
    for (key, value) in map(node, path)? {
        if key.starts_with("x-") {
            continue;
        }
        if refused.contains(&key.as_str()) {
            return Err(ComposeError::unsupported(
                &value.at,
                &format!("{path}.{key}"),
                format!("'{key}'"),
            ));
        }
        if !known.contains(&key.as_str()) {
            return Err(ComposeError::schema(
                &value.at,
                path,
                format!("additional properties '{key}' not allowed"),
            ));
        }
    }
    Ok(())
}

/// A Go duration (`1m30s`, `500ms`, `2h`), in nanoseconds.
pub fn parse_duration(text: &str) -> Option<i64> {
    let text = text.trim();
    if text == "0" {
        return Some(0);
    }
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if number_end == 0 {
            return None;
        }
        let number: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total += number * scale;
    }
    let value = total.round() as i64;
    Some(if negative { -value } else { value })
}

/// Go's `time.Duration.String()`.
pub fn format_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".to_owned();
    }
    let negative = nanos < 0;
    let value = nanos.unsigned_abs();
    let mut text = if value < 1_000 {
        format!("{value}ns")
    } else if value < 1_000_000 {
        format!("{}µs", trim_fraction(value, 1_000))
    } else if value < 1_000_000_000 {
        format!("{}ms", trim_fraction(value, 1_000_000))
    } else {
        let hours = value / 3_600_000_000_000;
        let minutes = (value / 60_000_000_000) % 60;
        let seconds = value % 60_000_000_000;
        let seconds = trim_fraction(seconds, 1_000_000_000);
        if hours > 0 {
            format!("{hours}h{minutes}m{seconds}s")
        } else if minutes > 0 {
            format!("{minutes}m{seconds}s")
        } else {
            format!("{seconds}s")
        }
    };
    if negative {
        text.insert(0, '-');
    }
    text
}

fn trim_fraction(value: u64, unit: u64) -> String {
    let whole = value / unit;
    let fraction = value % unit;
    if fraction == 0 {
        return whole.to_string();
    }
    let width = unit.to_string().len() - 1;
    let digits = format!("{fraction:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

pub fn duration(node: &Node, path: &str) -> Result<i64> {
    let text = string(node, path)?;
    parse_duration(&text)
        .ok_or_else(|| ComposeError::schema(&node.at, path, format!("invalid duration {text:?}")))
}

/// docker's `units.RAMInBytes`: `64m`, `1g`, `1000`, `1.5kb` (powers of 1024).
pub fn parse_bytes(text: &str) -> Option<i64> {
    let lower = text.trim().to_ascii_lowercase();
    let number_end = lower
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(lower.len());
    let number: f64 = lower[..number_end].parse().ok()?;
    let unit = lower[number_end..].trim();
    let unit = unit.strip_suffix('b').unwrap_or(unit);
    let unit = unit.strip_suffix('i').unwrap_or(unit);
    let scale: f64 = match unit {
        "" => 1.0,
        "k" => 1024.0,
        "m" => 1024.0 * 1024.0,
        "g" => 1024.0 * 1024.0 * 1024.0,
        "t" => 1024f64.powi(4),
        "p" => 1024f64.powi(5),
        _ => return None,
    };
    Some((number * scale) as i64)
}

pub fn bytes(node: &Node, path: &str) -> Result<i64> {
    if let Value::Int(value) = node.value {
        return Ok(value);
    }
    let text = string(node, path)?;
    parse_bytes(&text)
        .ok_or_else(|| ComposeError::schema(&node.at, path, format!("invalid size {text:?}")))
}

/// A command line split as a POSIX shell splits words (quotes and backslashes), which is how
/// compose turns `command: echo "a b"` into a list.
pub fn shell_split(text: &str, node: &Node, path: &str) -> Result<Vec<String>> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' | '\r' => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => current.push(c),
                        None => {
                            return Err(ComposeError::schema(
                                &node.at,
                                path,
                                "has an unterminated quote",
                            ))
                        }
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => current.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                current.push('\\');
                                current.push(c);
                            }
                            None => break,
                        },
                        Some(c) => current.push(c),
                        None => {
                            return Err(ComposeError::schema(
                                &node.at,
                                path,
                                "has an unterminated quote",
                            ))
                        }
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(next) = chars.next() {
                    if next != '\n' {
                        current.push(next);
                    }
                }
            }
            c => {
                in_word = true;
                current.push(c);
            }
        }
    }
    if in_word {
        words.push(current);
    }
    Ok(words)
}

/// `path` made absolute against `base` and cleaned (`~` is the home directory), as compose
/// resolves relative paths against the project directory.
pub fn resolve_path(base: &Path, path: &str, home: Option<&str>) -> PathBuf {
    let joined = if let Some(rest) = path.strip_prefix('~') {
        if rest.is_empty() || rest.starts_with('/') {
            PathBuf::from(format!("{}{rest}", home.unwrap_or("")))
        } else {
            base.join(path)
        }
    } else {
        base.join(path)
    };
    clean(&joined)
}

/// Go's `filepath.Clean`: no `.`, `..` resolved lexically, no trailing `/`.
pub fn clean(path: &Path) -> PathBuf {
    let mut out: Vec<Component> = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match out.last() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir) => {}
                _ => out.push(component),
            },
            other => out.push(other),
        }
    }
    if out.is_empty() {
        return PathBuf::from(".");
    }
    out.iter().collect()
}

/// Cleans a container path given as text (`/etc/configs/` → `/etc/configs`).
pub fn clean_text(path: &str) -> String {
    clean(Path::new(path)).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_trip_as_go_prints_them() {
        for (input, output) in [
            ("90s", "1m30s"),
            ("1s", "1s"),
            ("500ms", "500ms"),
            ("1h", "1h0m0s"),
            ("1.5s", "1.5s"),
            ("2m", "2m0s"),
        ] {
            let nanos = parse_duration(input).expect("parses");
            assert_eq!(format_duration(nanos), output, "{input}");
        }
        assert_eq!(parse_duration("5x"), None);
    }

    #[test]
    fn byte_sizes_use_powers_of_1024() {
        assert_eq!(parse_bytes("64m"), Some(67_108_864));
        assert_eq!(parse_bytes("50M"), Some(52_428_800));
        assert_eq!(parse_bytes("1000"), Some(1000));
        assert_eq!(parse_bytes("1kb"), Some(1024));
        assert_eq!(parse_bytes("lots"), None);
    }

    #[test]
    fn commands_split_like_a_shell() {
        let node = Node::new(Value::Null, Default::default());
        let words =
            shell_split(r#"sh -c "echo \"hi there\" && ls 'a b'""#, &node, "c").expect("splits");
        assert_eq!(words, ["sh", "-c", r#"echo "hi there" && ls 'a b'"#]);
        assert!(shell_split("echo 'x", &node, "c").is_err());
    }

    #[test]
    fn paths_resolve_and_clean() {
        let base = Path::new("/p");
        assert_eq!(resolve_path(base, "./a/../b/", None), PathBuf::from("/p/b"));
        assert_eq!(
            resolve_path(base, "~/c", Some("/root")),
            PathBuf::from("/root/c")
        );
        assert_eq!(resolve_path(base, "/abs", None), PathBuf::from("/abs"));
        assert_eq!(clean_text("/etc/configs/"), "/etc/configs");
    }
}
