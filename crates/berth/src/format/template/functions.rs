//! The functions a docker `--format` template can call: Go's `text/template` built-ins
//! and the ones the docker CLI adds (`json`, `split`, `join`, `title`, `lower`, `upper`,
//! `pad`, `truncate`, from docker/cli `templates/templates.go`).

use serde_json::Value;

use super::printf::sprintf;
use crate::format::gofmt::{json, sprint};

/// A value during execution: a JSON value, or Go's "invalid" value that looking up an
/// absent map key yields (printed as `<no value>`, passed to functions as nil).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Val {
    Missing,
    Json(Value),
}

static NULL: Value = Value::Null;

impl Val {
    pub fn into_json(self) -> Value {
        match self {
            Val::Missing => Value::Null,
            Val::Json(value) => value,
        }
    }

    fn json(&self) -> &Value {
        match self {
            Val::Missing => &NULL,
            Val::Json(value) => value,
        }
    }
}

/// Why a call failed, so the caller can word and place the error as Go does.
#[derive(Debug)]
pub(super) enum FunctionError {
    /// Wrong number of arguments.
    Arity(String),
    /// Argument `index` has the wrong type.
    Argument { index: usize, message: String },
    /// The function itself failed (Go prefixes `error calling NAME: `).
    Call(String),
}

type CallResult = Result<Val, FunctionError>;

const NAMES: &[&str] = &[
    // Go built-ins (and/or are evaluated lazily by the executor).
    "and", "or", "not", "len", "index", "slice", "print", "printf", "println", "eq", "ne", "lt",
    "le", "gt", "ge", // docker CLI additions
    "json", "split", "join", "title", "lower", "upper", "pad", "truncate",
];

/// Docker's header functions replace these with ones returning their first argument, so
/// a table header shows the column name untouched.
const HEADER_IDENTITY: &[&str] = &[
    "json", "split", "join", "title", "lower", "upper", "truncate",
];

pub(super) fn exists(name: &str) -> bool {
    NAMES.contains(&name)
}

/// Go's template truth: false for absent, nil, false, zero, and empty strings or
/// collections.
pub(super) fn truth(value: &Val) -> bool {
    match value {
        Val::Missing => false,
        Val::Json(value) => match value {
            Value::Null => false,
            Value::Bool(flag) => *flag,
            Value::Number(number) => number.as_f64().is_some_and(|n| n != 0.0),
            Value::String(text) => !text.is_empty(),
            Value::Array(items) => !items.is_empty(),
            Value::Object(map) => !map.is_empty(),
        },
    }
}

/// The Go type a JSON value stands for, as Go's error messages name it.
pub(super) fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "interface {}",
        Value::Bool(_) => "bool",
        Value::Number(number) if number.is_f64() => "float64",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

pub(super) fn call(name: &str, args: Vec<Val>, header: bool) -> CallResult {
    if header && HEADER_IDENTITY.contains(&name) {
        let want = match name {
            "split" | "join" | "truncate" => 2,
            _ => 1,
        };
        arity(name, &args, want)?;
        return Ok(string_val(string_arg(&args, 0)?.to_owned()));
    }
    match name {
        "not" => {
            arity(name, &args, 1)?;
            Ok(Val::Json(Value::Bool(!truth(&args[0]))))
        }
        "len" => {
            arity(name, &args, 1)?;
            length(args[0].json())
        }
        "index" => {
            at_least(name, &args, 1)?;
            index(args[0].json(), &args[1..])
        }
        "slice" => {
            at_least(name, &args, 1)?;
            slice(args[0].json(), &args[1..])
        }
        "print" => Ok(string_val(go_sprint(&args))),
        "println" => {
            let parts: Vec<String> = args.iter().map(|arg| sprint(arg.json())).collect();
            Ok(string_val(parts.join(" ") + "\n"))
        }
        "printf" => {
            at_least(name, &args, 1)?;
            let format = string_arg(&args, 0)?;
            let rest: Vec<Value> = args[1..].iter().map(|arg| arg.json().clone()).collect();
            Ok(string_val(sprintf(format, &rest)))
        }
        "eq" => {
            at_least(name, &args, 1)?;
            if args.len() < 2 {
                return Err(FunctionError::Call(
                    "missing argument for comparison".to_owned(),
                ));
            }
            let mut equal = false;
            for other in &args[1..] {
                if equals(&args[0], other)? {
                    equal = true;
                    break;
                }
            }
            Ok(Val::Json(Value::Bool(equal)))
        }
        "ne" => {
            arity(name, &args, 2)?;
            Ok(Val::Json(Value::Bool(!equals(&args[0], &args[1])?)))
        }
        "lt" | "le" | "gt" | "ge" => {
            arity(name, &args, 2)?;
            let less = less_than(&args[0], &args[1])?;
            let result = match name {
                "lt" => less,
                "ge" => !less,
                _ => {
                    let less_or_equal = less || equals(&args[0], &args[1])?;
                    if name == "le" {
                        less_or_equal
                    } else {
                        !less_or_equal
                    }
                }
            };
            Ok(Val::Json(Value::Bool(result)))
        }
        "json" => {
            arity(name, &args, 1)?;
            Ok(string_val(json(args[0].json())))
        }
        "split" => {
            arity(name, &args, 2)?;
            let text = string_arg(&args, 0)?;
            let separator = string_arg(&args, 1)?;
            let parts: Vec<Value> = if separator.is_empty() {
                text.chars().map(|c| Value::String(c.to_string())).collect()
            } else {
                text.split(separator)
                    .map(|part| Value::String(part.to_owned()))
                    .collect()
            };
            Ok(Val::Json(Value::Array(parts)))
        }
        "join" => {
            arity(name, &args, 2)?;
            let separator = string_arg(&args, 1)?;
            join(args[0].json(), separator)
        }
        "title" => {
            arity(name, &args, 1)?;
            Ok(string_val(title(string_arg(&args, 0)?)))
        }
        "lower" => {
            arity(name, &args, 1)?;
            Ok(string_val(map_case(
                string_arg(&args, 0)?,
                char::to_lowercase,
            )))
        }
        "upper" => {
            arity(name, &args, 1)?;
            Ok(string_val(map_case(
                string_arg(&args, 0)?,
                char::to_uppercase,
            )))
        }
        "pad" => {
            arity(name, &args, 3)?;
            let text = string_arg(&args, 0)?;
            let before = int_arg(&args, 1)?;
            let after = int_arg(&args, 2)?;
            if text.is_empty() {
                return Ok(string_val(String::new()));
            }
            let spaces = |count: i64| " ".repeat(usize::try_from(count).unwrap_or(0));
            Ok(string_val(format!(
                "{}{text}{}",
                spaces(before),
                spaces(after)
            )))
        }
        "truncate" => {
            arity(name, &args, 2)?;
            let text = string_arg(&args, 0)?;
            let length = int_arg(&args, 1)?;
            let Ok(length) = usize::try_from(length) else {
                return Err(FunctionError::Call(format!(
                    "runtime error: slice bounds out of range [:{length}]"
                )));
            };
            if text.len() < length {
                return Ok(string_val(text.to_owned()));
            }
            // Go cuts bytes; stop at the character boundary at or before the cut.
            let mut end = length;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            Ok(string_val(text[..end].to_owned()))
        }
        _ => Err(FunctionError::Call(format!(
            "function {name:?} not defined"
        ))),
    }
}

fn string_val(text: String) -> Val {
    Val::Json(Value::String(text))
}

fn arity(name: &str, args: &[Val], want: usize) -> Result<(), FunctionError> {
    if args.len() != want {
        return Err(FunctionError::Arity(format!(
            "wrong number of args for {name}: want {want} got {}",
            args.len()
        )));
    }
    Ok(())
}

fn at_least(name: &str, args: &[Val], want: usize) -> Result<(), FunctionError> {
    if args.len() < want {
        return Err(FunctionError::Arity(format!(
            "wrong number of args for {name}: want at least {want} got {}",
            args.len()
        )));
    }
    Ok(())
}

fn string_arg(args: &[Val], index: usize) -> Result<&str, FunctionError> {
    match &args[index] {
        Val::Json(Value::String(text)) => Ok(text),
        Val::Missing => Err(FunctionError::Argument {
            index,
            message: "invalid value; expected string".to_owned(),
        }),
        Val::Json(other) => Err(FunctionError::Argument {
            index,
            message: format!(
                "wrong type for value; expected string; got {}",
                go_type(other)
            ),
        }),
    }
}

fn int_arg(args: &[Val], index: usize) -> Result<i64, FunctionError> {
    match &args[index] {
        Val::Json(Value::Number(number)) => {
            if let Some(int) = number.as_i64() {
                return Ok(int);
            }
            // Go accepts float constants such as 2.0 where an int is wanted.
            match number.as_f64() {
                Some(float) if float.fract() == 0.0 && float.abs() < 9.2e18 => Ok(float as i64),
                _ => Err(FunctionError::Argument {
                    index,
                    message: format!(
                        "wrong type for value; expected int; got {}",
                        go_type(args[index].json())
                    ),
                }),
            }
        }
        Val::Missing => Err(FunctionError::Argument {
            index,
            message: "invalid value; expected int".to_owned(),
        }),
        Val::Json(other) => Err(FunctionError::Argument {
            index,
            message: format!("wrong type for value; expected int; got {}", go_type(other)),
        }),
    }
}

/// `fmt.Sprint`: a space between operands when neither side is a string.
fn go_sprint(args: &[Val]) -> String {
    let mut out = String::new();
    let mut previous_string = true;
    for (position, arg) in args.iter().enumerate() {
        let value = arg.json();
        let is_string = value.is_string();
        if position > 0 && !is_string && !previous_string {
            out.push(' ');
        }
        out.push_str(&sprint(value));
        previous_string = is_string;
    }
    out
}

fn length(value: &Value) -> CallResult {
    let length = match value {
        Value::String(text) => text.len(),
        Value::Array(items) => items.len(),
        Value::Object(map) => map.len(),
        // Null stands for Go's nil slices and maps, whose length is zero.
        Value::Null => 0,
        other => {
            return Err(FunctionError::Call(format!(
                "len of type {}",
                go_type(other)
            )))
        }
    };
    Ok(Val::Json(Value::from(length)))
}

fn index_number(index: &Value, length: usize, inclusive: bool) -> Result<usize, FunctionError> {
    let position = match index {
        Value::Number(number) => number.as_i64().ok_or_else(|| {
            FunctionError::Call("cannot index slice/array with type float64".to_owned())
        })?,
        Value::Null => {
            return Err(FunctionError::Call(
                "cannot index slice/array with nil".to_owned(),
            ));
        }
        other => {
            return Err(FunctionError::Call(format!(
                "cannot index slice/array with type {}",
                go_type(other)
            )));
        }
    };
    let within = |position: usize| {
        if inclusive {
            position <= length
        } else {
            position < length
        }
    };
    match usize::try_from(position) {
        Ok(position) if within(position) => Ok(position),
        _ => Err(FunctionError::Call(format!(
            "index out of range: {position}"
        ))),
    }
}

/// Go's `index`. A key absent from a map yields the map's zero value; berth's maps come
/// from typed Go-style structs whose maps are almost always `map[string]string` (labels,
/// options), so the zero value is guessed from the other values: `""` for string maps
/// and empty or nil maps, nil otherwise.
fn index(item: &Value, indexes: &[Val]) -> CallResult {
    let mut item = item.clone();
    for index in indexes {
        let index = index.json();
        item = match &item {
            Value::Array(items) => items[index_number(index, items.len(), false)?].clone(),
            Value::String(text) => {
                Value::from(text.as_bytes()[index_number(index, text.len(), false)?])
            }
            Value::Object(map) => {
                let Value::String(key) = index else {
                    return Err(FunctionError::Call(format!(
                        "value has type {}; should be string",
                        go_type(index)
                    )));
                };
                match map.get(key) {
                    Some(value) => value.clone(),
                    None if map.values().all(Value::is_string) => Value::String(String::new()),
                    None => Value::Null,
                }
            }
            Value::Null => match index {
                Value::String(_) => Value::String(String::new()),
                _ => return Err(FunctionError::Call("index of nil pointer".to_owned())),
            },
            other => {
                return Err(FunctionError::Call(format!(
                    "can't index item of type {}",
                    go_type(other)
                )));
            }
        };
    }
    Ok(Val::Json(item))
}

/// Go's `slice x i j`.
fn slice(item: &Value, indexes: &[Val]) -> CallResult {
    if indexes.len() > 3 {
        return Err(FunctionError::Call(format!(
            "too many slice indexes: {}",
            indexes.len()
        )));
    }
    let length = match item {
        Value::String(text) => {
            if indexes.len() == 3 {
                return Err(FunctionError::Call(
                    "cannot 3-index slice a string".to_owned(),
                ));
            }
            text.len()
        }
        Value::Array(items) => items.len(),
        Value::Null => return Err(FunctionError::Call("slice of untyped nil".to_owned())),
        other => {
            return Err(FunctionError::Call(format!(
                "can't slice item of type {}",
                go_type(other)
            )));
        }
    };
    let mut bounds = [0, length, length];
    for (slot, index) in indexes.iter().enumerate() {
        bounds[slot] = index_number(index.json(), length, true)?;
    }
    if bounds[0] > bounds[1] {
        return Err(FunctionError::Call(format!(
            "invalid slice index: {} > {}",
            bounds[0], bounds[1]
        )));
    }
    Ok(Val::Json(match item {
        Value::String(text) => Value::String(
            String::from_utf8_lossy(&text.as_bytes()[bounds[0]..bounds[1]]).into_owned(),
        ),
        Value::Array(items) => Value::Array(items[bounds[0]..bounds[1]].to_vec()),
        _ => unreachable!("only strings and arrays get here"),
    }))
}

/// docker's `join`: slices joined with `fmt.Sprint` of each element, map values sorted
/// and joined, nil as the empty string.
fn join(value: &Value, separator: &str) -> CallResult {
    let joined = match value {
        Value::Null => String::new(),
        Value::Array(items) => items.iter().map(sprint).collect::<Vec<_>>().join(separator),
        Value::Object(map) => {
            let mut values: Vec<String> = map.values().map(sprint).collect();
            values.sort();
            values.join(separator)
        }
        other => {
            return Err(FunctionError::Call(format!(
                "expected slice, got {}",
                go_type(other)
            )));
        }
    };
    Ok(string_val(joined))
}

/// Go's deprecated `strings.Title`: upper-cases the first letter of every word, a word
/// starting after anything but an ASCII letter, digit or underscore (or, beyond ASCII,
/// after a space).
fn title(text: &str) -> String {
    let is_separator = |character: char| {
        if character.is_ascii() {
            !(character.is_ascii_alphanumeric() || character == '_')
        } else if character.is_alphanumeric() {
            false
        } else {
            character.is_whitespace()
        }
    };
    let mut previous = ' ';
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        if is_separator(previous) {
            out.push_str(&map_case(&character.to_string(), char::to_uppercase));
        } else {
            out.push(character);
        }
        previous = character;
    }
    out
}

/// Case mapping one character at a time, as Go's `strings.ToUpper`/`ToLower` do: a
/// character whose mapping is several characters (such as `ß`) stays as it is.
fn map_case<I: Iterator<Item = char>>(text: &str, mapping: fn(char) -> I) -> String {
    text.chars()
        .map(|character| {
            let mut mapped = mapping(character);
            match (mapped.next(), mapped.next()) {
                (Some(single), None) => single,
                _ => character,
            }
        })
        .collect()
}

/// The comparison classes of Go's `eq`/`lt`: values of different classes cannot be
/// compared. Integers and floats share a class here, unlike Go, so comparing a float
/// field with an integer constant works.
#[derive(PartialEq)]
enum Class {
    Bool,
    Number,
    String,
}

fn class(value: &Value) -> Option<Class> {
    match value {
        Value::Bool(_) => Some(Class::Bool),
        Value::Number(_) => Some(Class::Number),
        Value::String(_) => Some(Class::String),
        _ => None,
    }
}

fn compare_numbers(a: &serde_json::Number, b: &serde_json::Number) -> std::cmp::Ordering {
    let exact = |n: &serde_json::Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (exact(a), exact(b)) {
        (Some(a), Some(b)) => a.cmp(&b),
        _ => {
            let a = a.as_f64().unwrap_or(f64::NAN);
            let b = b.as_f64().unwrap_or(f64::NAN);
            a.partial_cmp(&b).unwrap_or(std::cmp::Ordering::Less)
        }
    }
}

fn equals(left: &Val, right: &Val) -> Result<bool, FunctionError> {
    let (left, right) = (left.json(), right.json());
    // Absent and nil values equal each other and nothing else, without error.
    if left.is_null() || right.is_null() {
        return Ok(left.is_null() && right.is_null());
    }
    match (class(left), class(right)) {
        (Some(a), Some(b)) if a == b => Ok(match (left, right) {
            (Value::Number(a), Value::Number(b)) => compare_numbers(a, b).is_eq(),
            _ => left == right,
        }),
        (Some(_), Some(_)) => Err(FunctionError::Call(
            "incompatible types for comparison".to_owned(),
        )),
        _ => Err(FunctionError::Call(format!(
            "non-comparable type {}",
            go_type(if class(left).is_none() { left } else { right })
        ))),
    }
}

fn less_than(left: &Val, right: &Val) -> Result<bool, FunctionError> {
    let (left, right) = (left.json(), right.json());
    let invalid = || FunctionError::Call("invalid type for comparison".to_owned());
    let (left_class, right_class) = (
        class(left).ok_or_else(invalid)?,
        class(right).ok_or_else(invalid)?,
    );
    if left_class != right_class {
        return Err(FunctionError::Call(
            "incompatible types for comparison".to_owned(),
        ));
    }
    match (left, right) {
        (Value::Number(a), Value::Number(b)) => Ok(compare_numbers(a, b).is_lt()),
        (Value::String(a), Value::String(b)) => Ok(a < b),
        _ => Err(invalid()),
    }
}
