//! One logical line split the way BuildKit's line parser splits it: the
//! instruction name, its leading `--flags`, and its arguments in the form
//! the instruction takes (JSON array, one string, words, `KEY=value` pairs).

use super::ast::Heredoc;
use super::error::ParseErrorKind;
use super::words::{extract_flags, split_first_space, split_line_spaces, split_words};

/// A logical line, before the instruction rules are applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Node {
    /// The instruction name as written (`run`, `Copy`).
    pub command: String,
    /// `--name[=value]` words, quotes removed.
    pub flags: Vec<String>,
    pub args: Args,
    /// The joined line.
    pub original: String,
    pub start_line: usize,
    pub end_line: usize,
    pub heredocs: Vec<Heredoc>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Args {
    /// Nothing after the name (or an instruction BuildKit does not know).
    Empty,
    Json(Vec<String>),
    /// The whole rest of the line, as one argument.
    Text(String),
    Words(Vec<String>),
    /// `ENV`/`LABEL`: (key, value, written with `=`).
    Pairs(Vec<(String, String, bool)>),
    Healthcheck {
        kind: String,
        command: Box<Args>,
    },
    Onbuild(Box<Node>),
}

impl Node {
    pub(crate) fn lowercase_command(&self) -> String {
        self.command.to_ascii_lowercase()
    }

    pub(crate) fn is_json(&self) -> bool {
        match &self.args {
            Args::Json(_) => true,
            Args::Healthcheck { command, .. } => matches!(**command, Args::Json(_)),
            _ => false,
        }
    }

    /// Whether heredocs are looked for (`RUN`/`COPY`/`ADD` in shell form,
    /// also as an `ONBUILD` trigger).
    pub(crate) fn can_contain_heredoc(&self) -> bool {
        let node = match &self.args {
            Args::Onbuild(child) if self.lowercase_command() == "onbuild" => child,
            _ => self,
        };
        matches!(node.lowercase_command().as_str(), "run" | "copy" | "add") && !node.is_json()
    }
}

/// Splits one joined line (`start_line`/`end_line` filled in by the caller).
pub(crate) fn parse_node(line: &str, escape: char) -> Result<Node, ParseErrorKind> {
    let (command, rest) = split_first_space(line.trim());
    let (flags, args) = match rest {
        Some(rest) => {
            let (flags, args) = extract_flags(rest, escape);
            (flags, args.trim())
        }
        None => (Vec::new(), ""),
    };
    let args = match command.to_ascii_lowercase().as_str() {
        "add" | "copy" | "volume" => maybe_json_list(args)?,
        "arg" => words(split_words(args, escape)),
        "cmd" | "entrypoint" | "run" | "shell" => maybe_json(args)?,
        "env" => name_values(args, "ENV", escape)?,
        "label" => name_values(args, "LABEL", escape)?,
        "expose" | "from" => whitespace_list(args),
        "healthcheck" => healthcheck(args)?,
        "maintainer" | "stopsignal" | "user" | "workdir" => text(args),
        "onbuild" if !args.is_empty() => Args::Onbuild(Box::new(parse_node(args, escape)?)),
        _ => Args::Empty,
    };
    Ok(Node {
        command: command.to_string(),
        flags,
        args,
        original: line.to_string(),
        start_line: 0,
        end_line: 0,
        heredocs: Vec::new(),
    })
}

fn words(words: Vec<String>) -> Args {
    if words.is_empty() {
        Args::Empty
    } else {
        Args::Words(words)
    }
}

fn text(args: &str) -> Args {
    if args.is_empty() {
        Args::Empty
    } else {
        Args::Text(args.to_string())
    }
}

fn whitespace_list(args: &str) -> Args {
    if args.is_empty() {
        Args::Empty
    } else {
        Args::Words(split_line_spaces(args))
    }
}

/// A JSON array of strings; `Ok(None)` when the text is not JSON at all
/// (then it is shell form), an error when it is an array of non-strings.
fn json_array(args: &str) -> Result<Option<Vec<String>>, ParseErrorKind> {
    let args = args.trim_start();
    if !args.starts_with('[') {
        return Ok(None);
    }
    let Ok(values) = serde_json::from_str::<Vec<serde_json::Value>>(args) else {
        return Ok(None);
    };
    values
        .into_iter()
        .map(|value| match value {
            serde_json::Value::String(s) => Ok(s),
            _ => Err(ParseErrorKind::NotStringArray),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn maybe_json(args: &str) -> Result<Args, ParseErrorKind> {
    if args.is_empty() {
        return Ok(Args::Empty);
    }
    Ok(match json_array(args)? {
        Some(array) => Args::Json(array),
        None => Args::Text(args.to_string()),
    })
}

fn maybe_json_list(args: &str) -> Result<Args, ParseErrorKind> {
    Ok(match json_array(args)? {
        Some(array) => Args::Json(array),
        None => whitespace_list(args),
    })
}

/// `KEY=value …`, or the legacy `KEY value with spaces` (chosen by whether
/// the first word has a `=`).
fn name_values(args: &str, instruction: &str, escape: char) -> Result<Args, ParseErrorKind> {
    let words = split_words(args, escape);
    let Some(first) = words.first() else {
        return Ok(Args::Empty);
    };
    if !first.contains('=') {
        let (key, value) = split_first_space(args);
        let Some(value) = value else {
            return Err(ParseErrorKind::MissingValue {
                instruction: instruction.to_string(),
            });
        };
        return Ok(Args::Pairs(vec![(
            key.to_string(),
            value.to_string(),
            false,
        )]));
    }
    words
        .into_iter()
        .map(|word| match word.split_once('=') {
            Some((key, value)) => Ok((key.to_string(), value.to_string(), true)),
            None => Err(ParseErrorKind::MissingEquals { word }),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Args::Pairs)
}

/// `HEALTHCHECK TYPE [command]`.
fn healthcheck(args: &str) -> Result<Args, ParseErrorKind> {
    let kind_end = args.find(char::is_whitespace).unwrap_or(args.len());
    if kind_end == 0 {
        return Ok(Args::Empty);
    }
    let command = maybe_json(args[kind_end..].trim_start())?;
    Ok(Args::Healthcheck {
        kind: args[..kind_end].to_string(),
        command: Box::new(command),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(line: &str) -> Node {
        parse_node(line, '\\').unwrap()
    }

    #[test]
    fn json_or_shell() {
        assert_eq!(
            node("RUN [\"a\", \"b\"]").args,
            Args::Json(vec!["a".into(), "b".into()])
        );
        assert_eq!(node("CMD [\"a\" x").args, Args::Text("[\"a\" x".into()));
        assert_eq!(node("run  echo  hi ").args, Args::Text("echo  hi".into()));
        assert_eq!(
            parse_node("CMD [1]", '\\').unwrap_err(),
            ParseErrorKind::NotStringArray
        );
        assert_eq!(
            node("COPY a  b").args,
            Args::Words(vec!["a".into(), "b".into()])
        );
        assert_eq!(node("CMD").args, Args::Empty);
    }

    #[test]
    fn flags_then_arguments() {
        let n = node("COPY --from=x --chmod=644 a b");
        assert_eq!(n.flags, ["--from=x", "--chmod=644"]);
        assert_eq!(n.args, Args::Words(vec!["a".into(), "b".into()]));
    }

    #[test]
    fn env_forms() {
        assert_eq!(
            node("ENV a=1 b=\"x y\"").args,
            Args::Pairs(vec![
                ("a".into(), "1".into(), true),
                ("b".into(), "\"x y\"".into(), true)
            ])
        );
        assert_eq!(
            node("ENV PATH /a b  c").args,
            Args::Pairs(vec![("PATH".into(), "/a b  c".into(), false)])
        );
        assert_eq!(
            parse_node("ENV a", '\\').unwrap_err().to_string(),
            "ENV must have two arguments"
        );
        assert_eq!(
            parse_node("LABEL a=1 b", '\\').unwrap_err().to_string(),
            "Syntax error - can't find = in \"b\". Must be of the form: name=value"
        );
    }

    #[test]
    fn onbuild_and_healthcheck() {
        let n = node("ONBUILD RUN --mount=type=cache,target=/c make");
        let Args::Onbuild(child) = &n.args else {
            panic!("{n:?}")
        };
        assert_eq!(child.flags, ["--mount=type=cache,target=/c"]);
        assert!(node("ONBUILD COPY <<EOF /x").can_contain_heredoc());
        assert!(!node("RUN [\"<<EOF\"]").can_contain_heredoc());
        assert_eq!(
            node("HEALTHCHECK CMD [\"true\"]").args,
            Args::Healthcheck {
                kind: "CMD".into(),
                command: Box::new(Args::Json(vec!["true".into()]))
            }
        );
    }
}
