//! YAML into a tree that remembers where each value came from (file, line, column), so every
//! later error can name them.
//!
//! The parser is `yaml-rust2` (crates.io): a maintained pure-Rust YAML 1.2 parser whose event
//! API hands out a [`yaml_rust2::scanner::Marker`] (line and column) with every event, has no
//! `unsafe` in its parsing path and no C library. `serde_yaml` is archived and loses positions
//! once values are deserialized; `serde_yml` is an unmaintained fork; libyaml bindings would add
//! C. Building our own tree from events also lets scalars be typed the way compose (go-yaml v3,
//! the YAML 1.2 core schema) types them, and keeps quoted scalars strings.
//!
//! Anchors, aliases and merge keys (`<<: *base`, common in compose files' `x-` blocks) are
//! resolved here, so the rest of the crate sees plain trees.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// Where a value was written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Location {
    pub file: Arc<PathBuf>,
    /// 1-based.
    pub line: usize,
    /// 1-based.
    pub column: usize,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file.display())
        } else {
            write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)
        }
    }
}

/// A value and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub value: Value,
    pub at: Location,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    String(String),
    Seq(Vec<Node>),
    /// Entries in the order written; keys are unique.
    Map(Vec<(String, Node)>),
}

impl Node {
    pub fn new(value: Value, at: Location) -> Self {
        Self { value, at }
    }

    pub fn as_map(&self) -> Option<&Vec<(String, Node)>> {
        match &self.value {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }

    pub fn as_map_mut(&mut self) -> Option<&mut Vec<(String, Node)>> {
        match &mut self.value {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::String(text) => Some(text),
            _ => None,
        }
    }

    /// The entry `key` of a map.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_map()?
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, node)| node)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node> {
        self.as_map_mut()?
            .iter_mut()
            .find(|(name, _)| name == key)
            .map(|(_, node)| node)
    }

    /// Sets `key` of a map (replacing it in place, or appending it).
    pub fn set(&mut self, key: &str, value: Node) {
        if let Some(entries) = self.as_map_mut() {
            match entries.iter_mut().find(|(name, _)| name == key) {
                Some(entry) => entry.1 = value,
                None => entries.push((key.to_owned(), value)),
            }
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<Node> {
        let entries = self.as_map_mut()?;
        let index = entries.iter().position(|(name, _)| name == key)?;
        Some(entries.remove(index).1)
    }

    /// The scalar as compose reads a scalar where it wants text (numbers and booleans as
    /// written in YAML 1.2's canonical form); `None` for null, sequences and maps.
    pub fn scalar_text(&self) -> Option<String> {
        match &self.value {
            Value::String(text) => Some(text.clone()),
            Value::Bool(value) => Some(value.to_string()),
            Value::Int(value) => Some(value.to_string()),
            Value::Float(value) => Some(format_float(*value)),
            _ => None,
        }
    }

    /// What kind of value this is, in the words of compose's schema errors.
    pub fn kind(&self) -> &'static str {
        match self.value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "integer",
            Value::Float(_) => "number",
            Value::String(_) => "string",
            Value::Seq(_) => "array",
            Value::Map(_) => "object",
        }
    }
}

/// A float as Go's `strconv.FormatFloat(f, 'g', -1, 64)` writes it for the values compose
/// files hold (`1.5`, `0.5`, `1e+21`).
pub fn format_float(value: f64) -> String {
    if value.is_infinite() {
        return if value > 0.0 { "+Inf" } else { "-Inf" }.to_owned();
    }
    if value.is_nan() {
        return "NaN".to_owned();
    }
    let text = format!("{value}");
    if value != 0.0 && (value.abs() >= 1e21 || value.abs() < 1e-4) {
        let exponent = format!("{value:e}");
        if let Some((mantissa, power)) = exponent.split_once('e') {
            let (sign, digits) = match power.strip_prefix('-') {
                Some(digits) => ('-', digits),
                None => ('+', power),
            };
            return format!("{mantissa}e{sign}{digits:0>2}");
        }
    }
    text
}

#[derive(Debug, thiserror::Error)]
pub enum YamlError {
    #[error("{at}: {message}")]
    Syntax { at: Location, message: String },
    #[error("{at}: mapping key {key:?} already defined at line {first_line}")]
    DuplicateKey {
        at: Location,
        key: String,
        first_line: usize,
    },
    #[error("{at}: unknown anchor referenced by an alias")]
    UnknownAlias { at: Location },
    #[error("{at}: a merge key (<<) takes a mapping or a sequence of mappings")]
    BadMerge { at: Location },
    #[error("{at}: a mapping key must be a scalar")]
    ComplexKey { at: Location },
    #[error("{at}: more than one YAML document in a compose file is not supported")]
    SeveralDocuments { at: Location },
}

/// Parses one file's text; an empty document is `Null`.
pub fn parse(text: &str, file: &Path) -> Result<Node, YamlError> {
    let file = Arc::new(file.to_path_buf());
    let mut builder = Builder {
        file: file.clone(),
        stack: Vec::new(),
        anchors: HashMap::new(),
        documents: Vec::new(),
        error: None,
    };
    let mut parser = Parser::new_from_str(text);
    if let Err(error) = parser.load(&mut builder, true) {
        let marker = error.marker();
        return Err(YamlError::Syntax {
            at: location(&file, marker),
            message: error.info().to_owned(),
        });
    }
    if let Some(error) = builder.error {
        return Err(error);
    }
    let mut documents = builder.documents.into_iter();
    let first = documents.next();
    if let Some(second) = documents.next() {
        return Err(YamlError::SeveralDocuments { at: second.at });
    }
    Ok(first.unwrap_or(Node::new(
        Value::Null,
        Location {
            file,
            line: 0,
            column: 0,
        },
    )))
}

fn location(file: &Arc<PathBuf>, marker: &Marker) -> Location {
    Location {
        file: file.clone(),
        line: marker.line(),
        column: marker.col() + 1,
    }
}

enum Frame {
    Seq {
        anchor: usize,
        at: Location,
        items: Vec<Node>,
    },
    Map {
        anchor: usize,
        at: Location,
        entries: Vec<(String, Node)>,
        /// Lines where each explicit key was first written.
        lines: HashMap<String, usize>,
        /// Entries from merge keys, applied under the explicit ones at the end.
        merged: Vec<(String, Node)>,
        pending_key: Option<Node>,
    },
}

struct Builder {
    file: Arc<PathBuf>,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Node>,
    documents: Vec<Node>,
    error: Option<YamlError>,
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, event: Event, marker: Marker) {
        if self.error.is_some() {
            return;
        }
        let at = location(&self.file, &marker);
        match event {
            Event::Scalar(text, style, anchor, tag) => {
                let node = Node::new(scalar(text, style, tag.as_ref()), at);
                if anchor > 0 {
                    self.anchors.insert(anchor, node.clone());
                }
                self.push(node);
            }
            Event::Alias(anchor) => match self.anchors.get(&anchor) {
                Some(node) => {
                    let mut node = node.clone();
                    node.at = at;
                    self.push(node);
                }
                None => self.error = Some(YamlError::UnknownAlias { at }),
            },
            Event::SequenceStart(anchor, _) => self.stack.push(Frame::Seq {
                anchor,
                at,
                items: Vec::new(),
            }),
            Event::MappingStart(anchor, _) => self.stack.push(Frame::Map {
                anchor,
                at,
                entries: Vec::new(),
                lines: HashMap::new(),
                merged: Vec::new(),
                pending_key: None,
            }),
            Event::SequenceEnd | Event::MappingEnd => {
                let Some(frame) = self.stack.pop() else {
                    return;
                };
                let (anchor, node) = match frame {
                    Frame::Seq { anchor, at, items } => (anchor, Node::new(Value::Seq(items), at)),
                    Frame::Map {
                        anchor,
                        at,
                        mut entries,
                        merged,
                        ..
                    } => {
                        for (key, value) in merged {
                            if !entries.iter().any(|(name, _)| *name == key) {
                                entries.push((key, value));
                            }
                        }
                        (anchor, Node::new(Value::Map(entries), at))
                    }
                };
                if anchor > 0 {
                    self.anchors.insert(anchor, node.clone());
                }
                self.push(node);
            }
            Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart
            | Event::DocumentEnd
            | Event::Nothing => {}
        }
    }
}

impl Builder {
    /// Adds a finished node to the frame on top (as a key or a value), or as a document.
    fn push(&mut self, node: Node) {
        match self.stack.last_mut() {
            None => self.documents.push(node),
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map {
                entries,
                lines,
                merged,
                pending_key,
                ..
            }) => match pending_key.take() {
                None => *pending_key = Some(node),
                Some(key) => {
                    let key_at = key.at.clone();
                    let Some(name) = key_text(&key) else {
                        self.error = Some(YamlError::ComplexKey { at: key_at });
                        return;
                    };
                    if name == "<<" {
                        if let Err(error) = merge_into(merged, node) {
                            self.error = Some(error);
                        }
                        return;
                    }
                    if let Some(first_line) = lines.get(&name) {
                        self.error = Some(YamlError::DuplicateKey {
                            at: key_at,
                            key: name,
                            first_line: *first_line,
                        });
                        return;
                    }
                    lines.insert(name.clone(), key_at.line);
                    entries.push((name, node));
                }
            },
        }
    }
}

/// A scalar key's text (`80:` and `true:` are keys too); `null` is the empty key.
fn key_text(key: &Node) -> Option<String> {
    match &key.value {
        Value::Null => Some(String::new()),
        Value::Seq(_) | Value::Map(_) => None,
        _ => key.scalar_text(),
    }
}

/// `<<: *a` or `<<: [*a, *b]`: earlier maps win over later ones, explicit keys over all.
fn merge_into(merged: &mut Vec<(String, Node)>, value: Node) -> Result<(), YamlError> {
    let maps = match value.value {
        Value::Map(_) => vec![value],
        Value::Seq(items) => items,
        _ => return Err(YamlError::BadMerge { at: value.at }),
    };
    for map in maps {
        let Value::Map(entries) = map.value else {
            return Err(YamlError::BadMerge { at: map.at });
        };
        for (key, value) in entries {
            if !merged.iter().any(|(name, _)| *name == key) {
                merged.push((key, value));
            }
        }
    }
    Ok(())
}

fn scalar(text: String, style: TScalarStyle, tag: Option<&Tag>) -> Value {
    if let Some(tag) = tag {
        if tag.handle == "tag:yaml.org,2002:" || tag.handle == "!!" {
            match tag.suffix.as_str() {
                "str" => return Value::String(text),
                "null" => return Value::Null,
                _ => {}
            }
        }
    }
    if style != TScalarStyle::Plain {
        return Value::String(text);
    }
    resolve_plain(&text).unwrap_or(Value::String(text))
}

/// The type a plain scalar resolves to under YAML 1.2's core schema as go-yaml v3 applies it
/// (`None`: a string). Also used to decide whether a string must be quoted on output.
pub fn resolve_plain(text: &str) -> Option<Value> {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Some(Value::Null),
        "true" | "True" | "TRUE" => return Some(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Some(Value::Bool(false)),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Some(Value::Float(f64::INFINITY))
        }
        "-.inf" | "-.Inf" | "-.INF" => return Some(Value::Float(f64::NEG_INFINITY)),
        ".nan" | ".NaN" | ".NAN" => return Some(Value::Float(f64::NAN)),
        _ => {}
    }
    let first = text.as_bytes()[0];
    if !(first.is_ascii_digit() || matches!(first, b'-' | b'+' | b'.')) {
        return None;
    }
    if let Some(value) = parse_go_int(text) {
        return Some(Value::Int(value));
    }
    if is_yaml_float(text) {
        return text.parse::<f64>().ok().map(Value::Float);
    }
    None
}

/// Go's `strconv.ParseInt(text, 0, 64)`: decimal, `0x`, `0o`, `0b`, a leading `0` for octal,
/// `_` between digits.
fn parse_go_int(text: &str) -> Option<i64> {
    let (negative, body) = match text.as_bytes()[0] {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if body.is_empty() {
        return None;
    }
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(rest) = lower.strip_prefix("0x") {
        (16, rest.to_owned())
    } else if let Some(rest) = lower.strip_prefix("0o") {
        (8, rest.to_owned())
    } else if let Some(rest) = lower.strip_prefix("0b") {
        (2, rest.to_owned())
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, lower[1..].to_owned())
    } else {
        (10, lower.clone())
    };
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
    {
        return None;
    }
    let digits: String = digits.chars().filter(|c| *c != '_').collect();
    let magnitude = i128::from_str_radix(&digits, radix).ok()?;
    let value = if negative { -magnitude } else { magnitude };
    i64::try_from(value).ok()
}

/// YAML 1.2 core's float: `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`.
fn is_yaml_float(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut index = 0;
    if matches!(bytes.first(), Some(b'-' | b'+')) {
        index += 1;
    }
    let start_digits = index;
    while index < bytes.len() && bytes[index].is_ascii_digit() {
        index += 1;
    }
    let integer_digits = index - start_digits;
    let mut fraction_digits = 0;
    if index < bytes.len() && bytes[index] == b'.' {
        index += 1;
        let start = index;
        while index < bytes.len() && bytes[index].is_ascii_digit() {
            index += 1;
        }
        fraction_digits = index - start;
    }
    if integer_digits == 0 && fraction_digits == 0 {
        return false;
    }
    if index < bytes.len() && matches!(bytes[index], b'e' | b'E') {
        index += 1;
        if index < bytes.len() && matches!(bytes[index], b'-' | b'+') {
            index += 1;
        }
        let start = index;
        while index < bytes.len() && bytes[index].is_ascii_digit() {
            index += 1;
        }
        if index == start {
            return false;
        }
    }
    index == bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Node {
        parse(text, Path::new("/c.yaml")).expect("parses")
    }

    #[test]
    fn scalars_are_typed_as_yaml_1_2_core() {
        let node = load("a: 0x10\nb: yes\nc: 1.50\nd: ~\ne: '1'\nf: 0755\ng: true\nh: 1e3\n");
        assert_eq!(node.get("a").map(|n| &n.value), Some(&Value::Int(16)));
        assert_eq!(
            node.get("b").map(|n| &n.value),
            Some(&Value::String("yes".into()))
        );
        assert_eq!(node.get("c").map(|n| &n.value), Some(&Value::Float(1.5)));
        assert_eq!(node.get("d").map(|n| &n.value), Some(&Value::Null));
        assert_eq!(
            node.get("e").map(|n| &n.value),
            Some(&Value::String("1".into()))
        );
        assert_eq!(node.get("f").map(|n| &n.value), Some(&Value::Int(493)));
        assert_eq!(node.get("g").map(|n| &n.value), Some(&Value::Bool(true)));
        assert_eq!(node.get("h").map(|n| &n.value), Some(&Value::Float(1000.0)));
    }

    #[test]
    fn positions_are_one_based_lines_and_columns() {
        let node = load("services:\n  web:\n    image: x\n");
        let image = node
            .get("services")
            .and_then(|s| s.get("web"))
            .and_then(|w| w.get("image"))
            .expect("image");
        assert_eq!((image.at.line, image.at.column), (3, 12));
    }

    #[test]
    fn anchors_aliases_and_merge_keys_resolve() {
        let node = load("x: &base\n  a: 1\n  b: 2\ny:\n  <<: *base\n  b: 3\n");
        let y = node.get("y").expect("y");
        assert_eq!(y.get("a").map(|n| &n.value), Some(&Value::Int(1)));
        assert_eq!(y.get("b").map(|n| &n.value), Some(&Value::Int(3)));
    }

    #[test]
    fn duplicate_keys_name_both_lines() {
        let error = parse("a: 1\nb: 2\na: 3\n", Path::new("/c.yaml")).expect_err("dup");
        assert_eq!(
            error.to_string(),
            "/c.yaml:3:1: mapping key \"a\" already defined at line 1"
        );
    }

    #[test]
    fn syntax_errors_name_file_and_line() {
        let error = parse("a:\n  b: 1\n c: [\n", Path::new("/c.yaml")).expect_err("bad");
        assert!(error.to_string().starts_with("/c.yaml:"), "{error}");
    }

    #[test]
    fn floats_print_as_go_does() {
        assert_eq!(format_float(1.5), "1.5");
        assert_eq!(format_float(0.5), "0.5");
        assert_eq!(format_float(1000.0), "1000");
    }
}
