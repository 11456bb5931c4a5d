//! `${VAR}` substitution in compose files and `.env` files, as the compose specification's
//! "Interpolation" section defines it: `$VAR`, `${VAR}`, `${VAR:-default}` (unset or empty),
//! `${VAR-default}` (unset), `${VAR:?message}`/`${VAR?message}` (an error), `${VAR:+value}`/
//! `${VAR+value}` (a replacement when set), `$$` for a literal `$`. Defaults and replacements
//! may themselves hold substitutions.

use crate::yaml::{Node, Value};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TemplateError {
    #[error("required variable {name} is missing a value{}", message_suffix(.message))]
    Required { name: String, message: String },
    #[error("invalid interpolation format")]
    Invalid { text: String },
}

fn message_suffix(message: &str) -> String {
    if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    }
}

/// Errors of a whole tree, with the dotted path of the value (`services.web.image`).
#[derive(Debug, thiserror::Error)]
pub enum InterpolateError {
    #[error("{at}: error while interpolating {path}: {source}")]
    Required {
        at: crate::yaml::Location,
        path: String,
        #[source]
        source: TemplateError,
    },
    #[error("{at}: invalid interpolation format for {path}.\nYou may need to escape any $ with another $.\n{text}")]
    Invalid {
        at: crate::yaml::Location,
        path: String,
        text: String,
    },
}

/// Looks variables up; unset ones are `None`.
pub trait Lookup {
    fn lookup(&self, name: &str) -> Option<String>;
}

impl<F: Fn(&str) -> Option<String>> Lookup for F {
    fn lookup(&self, name: &str) -> Option<String> {
        self(name)
    }
}

/// Substitutes `text`; `unset` is told each variable used without a value or default.
pub fn substitute(
    text: &str,
    lookup: &dyn Lookup,
    unset: &mut dyn FnMut(&str),
) -> Result<String, TemplateError> {
    let chars: Vec<char> = text.chars().collect();
    let mut output = String::new();
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        if c != '$' {
            output.push(c);
            index += 1;
            continue;
        }
        match chars.get(index + 1) {
            Some('$') => {
                output.push('$');
                index += 2;
            }
            Some('{') => {
                let end = closing_brace(&chars, index + 2).ok_or_else(|| invalid(text))?;
                let inner: String = chars[index + 2..end].iter().collect();
                output.push_str(&braced(&inner, text, lookup, unset)?);
                index = end + 1;
            }
            Some(next) if is_name_start(*next) => {
                let mut end = index + 1;
                while end < chars.len() && is_name_char(chars[end]) {
                    end += 1;
                }
                let name: String = chars[index + 1..end].iter().collect();
                match lookup.lookup(&name) {
                    Some(value) => output.push_str(&value),
                    None => unset(&name),
                }
                index = end;
            }
            // A `$` followed by anything else stays as written (compose does the same).
            _ => {
                output.push('$');
                index += 1;
            }
        }
    }
    Ok(output)
}

fn invalid(text: &str) -> TemplateError {
    TemplateError::Invalid {
        text: text.to_owned(),
    }
}

fn is_name_start(c: char) -> bool {
    c == '_' || c.is_ascii_alphabetic()
}

fn is_name_char(c: char) -> bool {
    c == '_' || c.is_ascii_alphanumeric()
}

/// The index of the `}` closing a `${` whose body starts at `start`, nested ones skipped.
fn closing_brace(chars: &[char], start: usize) -> Option<usize> {
    let mut depth = 0;
    let mut index = start;
    while index < chars.len() {
        match chars[index] {
            '$' if chars.get(index + 1) == Some(&'{') => {
                depth += 1;
                index += 2;
                continue;
            }
            '}' if depth == 0 => return Some(index),
            '}' => depth -= 1,
            _ => {}
        }
        index += 1;
    }
    None
}

fn braced(
    inner: &str,
    whole: &str,
    lookup: &dyn Lookup,
    unset: &mut dyn FnMut(&str),
) -> Result<String, TemplateError> {
    let name_end = inner
        .char_indices()
        .find(|(_, c)| !is_name_char(*c))
        .map_or(inner.len(), |(at, _)| at);
    let name = &inner[..name_end];
    if name.is_empty() || !name.starts_with(is_name_start) {
        return Err(invalid(whole));
    }
    let rest = &inner[name_end..];
    let value = lookup.lookup(name);
    let (operator, argument) = if rest.is_empty() {
        ("", "")
    } else if let Some(argument) = [":-", ":?", ":+"]
        .iter()
        .find_map(|op| rest.strip_prefix(op).map(|arg| (*op, arg)))
    {
        argument
    } else if let Some(argument) = ["-", "?", "+"]
        .iter()
        .find_map(|op| rest.strip_prefix(op).map(|arg| (*op, arg)))
    {
        argument
    } else {
        return Err(invalid(whole));
    };
    let set_and_not_empty = value.as_deref().is_some_and(|value| !value.is_empty());
    match operator {
        "" => Ok(value.unwrap_or_else(|| {
            unset(name);
            String::new()
        })),
        ":-" if set_and_not_empty => Ok(value.unwrap_or_default()),
        ":-" => substitute(argument, lookup, unset),
        "-" => match value {
            Some(value) => Ok(value),
            None => substitute(argument, lookup, unset),
        },
        ":?" if set_and_not_empty => Ok(value.unwrap_or_default()),
        "?" if value.is_some() => Ok(value.unwrap_or_default()),
        ":?" | "?" => Err(TemplateError::Required {
            name: name.to_owned(),
            message: substitute(argument, lookup, unset)?,
        }),
        ":+" if set_and_not_empty => substitute(argument, lookup, unset),
        "+" if value.is_some() => substitute(argument, lookup, unset),
        _ => Ok(String::new()),
    }
}

/// Substitutes every string value of `node` (not keys), `path` naming where it is.
pub fn interpolate_tree(
    node: &mut Node,
    path: &mut Vec<String>,
    lookup: &dyn Lookup,
    unset: &mut dyn FnMut(&str),
) -> Result<(), InterpolateError> {
    match &mut node.value {
        Value::String(text) => {
            if !text.contains('$') {
                return Ok(());
            }
            match substitute(text, lookup, unset) {
                Ok(value) => {
                    // A substituted value is typed as a plain scalar would be, as compose
                    // does for values it converts (`ports: ${P}` with P=80).
                    *text = value;
                }
                Err(TemplateError::Invalid { text }) => {
                    return Err(InterpolateError::Invalid {
                        at: node.at.clone(),
                        path: path.join("."),
                        text,
                    })
                }
                Err(source) => {
                    return Err(InterpolateError::Required {
                        at: node.at.clone(),
                        path: path.join("."),
                        source,
                    })
                }
            }
        }
        Value::Seq(items) => {
            for (index, item) in items.iter_mut().enumerate() {
                path.push(format!("[{index}]"));
                let result = interpolate_tree(item, path, lookup, unset);
                path.pop();
                result?;
            }
        }
        Value::Map(entries) => {
            for (key, value) in entries.iter_mut() {
                path.push(key.clone());
                let result = interpolate_tree(value, path, lookup, unset);
                path.pop();
                result?;
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Result<String, TemplateError> {
        let lookup = |name: &str| match name {
            "SET" => Some("value".to_owned()),
            "EMPTY" => Some(String::new()),
            _ => None,
        };
        substitute(text, &lookup, &mut |_| {})
    }

    #[test]
    fn every_form_of_the_spec() {
        assert_eq!(run("$SET ${SET}").as_deref(), Ok("value value"));
        assert_eq!(run("${UNSET}x").as_deref(), Ok("x"));
        assert_eq!(
            run("${UNSET:-d} ${EMPTY:-d} ${SET:-d}").as_deref(),
            Ok("d d value")
        );
        assert_eq!(
            run("${UNSET-d} ${EMPTY-d} ${SET-d}").as_deref(),
            Ok("d  value")
        );
        assert_eq!(
            run("${UNSET:+x} ${EMPTY:+x} ${SET:+x}").as_deref(),
            Ok("  x")
        );
        assert_eq!(run("${UNSET+x} ${EMPTY+x} ${SET+x}").as_deref(), Ok(" x x"));
        assert_eq!(run("$$SET $$").as_deref(), Ok("$SET $"));
        assert_eq!(run("${UNSET:-${SET}}").as_deref(), Ok("value"));
        assert_eq!(run("${EMPTY?}").as_deref(), Ok(""));
    }

    #[test]
    fn required_variables_carry_their_message() {
        assert_eq!(
            run("${UNSET:?need it}").map_err(|e| e.to_string()),
            Err("required variable UNSET is missing a value: need it".to_owned())
        );
        assert_eq!(
            run("${EMPTY:?}").map_err(|e| e.to_string()),
            Err("required variable EMPTY is missing a value".to_owned())
        );
        assert!(run("${UNSET?}").is_err());
    }

    #[test]
    fn malformed_templates_are_refused() {
        assert!(matches!(run("${X"), Err(TemplateError::Invalid { .. })));
        assert!(matches!(run("${}"), Err(TemplateError::Invalid { .. })));
        assert!(matches!(run("${X%y}"), Err(TemplateError::Invalid { .. })));
    }

    #[test]
    fn unset_variables_are_reported() {
        let mut seen = Vec::new();
        let lookup = |_: &str| None;
        let _ = substitute("$A ${B} ${C:-x}", &lookup, &mut |name| {
            seen.push(name.to_owned())
        });
        assert_eq!(seen, ["A", "B"]);
    }
}
