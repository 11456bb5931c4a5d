//! `.env` and `--env-file`/`env_file:` files: `KEY=value` lines as the compose specification
//! reads them. `#` starts a comment (in an unquoted value, after a blank); `export ` is allowed
//! before a key; single quotes keep text as written; double quotes understand `\n`, `\t`, `\\`,
//! `\"` and interpolate; unquoted values are trimmed and interpolate. A bare `KEY` takes its
//! value from the environment when it is set there, and is left out otherwise.

use std::path::Path;

use crate::interpolate::{substitute, Lookup};

#[derive(Debug, thiserror::Error)]
pub enum DotenvError {
    #[error("failed to read {path:?}")]
    Read {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: unexpected character {found:?} in variable name {name:?}")]
    BadName {
        path: String,
        line: usize,
        name: String,
        found: char,
    },
    #[error("{path}:{line}: unterminated quoted value")]
    Unterminated { path: String, line: usize },
    #[error("{path}:{line}: {source}")]
    Template {
        path: String,
        line: usize,
        #[source]
        source: crate::interpolate::TemplateError,
    },
}

/// The variables of `path` in file order; `outer` resolves `${VAR}` (and bare keys) not
/// defined earlier in the file.
pub fn read(path: &Path, outer: &dyn Lookup) -> Result<Vec<(String, String)>, DotenvError> {
    let text = fs_err::read_to_string(path).map_err(|source| DotenvError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&text, &path.display().to_string(), outer)
}

pub fn parse(
    text: &str,
    path: &str,
    outer: &dyn Lookup,
) -> Result<Vec<(String, String)>, DotenvError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut variables: Vec<(String, String)> = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut index = 0;
    while index < lines.len() {
        let number = index + 1;
        let line = lines[index].trim_start();
        index += 1;
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
        let (name, rest) = match line.find(['=', ':']) {
            Some(at) => (line[..at].trim_end(), Some(&line[at + 1..])),
            None => (line.trim_end(), None),
        };
        if let Some(found) = name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '[' | ']')))
        {
            return Err(DotenvError::BadName {
                path: path.to_owned(),
                line: number,
                name: name.to_owned(),
                found,
            });
        }
        let lookup = |wanted: &str| {
            variables
                .iter()
                .rev()
                .find(|(key, _)| key == wanted)
                .map(|(_, value)| value.clone())
                .or_else(|| outer.lookup(wanted))
        };
        let Some(rest) = rest else {
            if let Some(value) = outer.lookup(name) {
                variables.push((name.to_owned(), value));
            }
            continue;
        };
        let rest = rest.trim_start();
        let template = |text: &str| {
            substitute(text, &lookup, &mut |_| {}).map_err(|source| DotenvError::Template {
                path: path.to_owned(),
                line: number,
                source,
            })
        };
        let value = if let Some(body) = rest.strip_prefix('\'') {
            quoted(body, '\'', &lines, &mut index).ok_or(DotenvError::Unterminated {
                path: path.to_owned(),
                line: number,
            })?
        } else if let Some(body) = rest.strip_prefix('"') {
            let body = quoted(body, '"', &lines, &mut index).ok_or(DotenvError::Unterminated {
                path: path.to_owned(),
                line: number,
            })?;
            template(&unescape(&body))?
        } else {
            let value = match rest.find(" #") {
                Some(at) => &rest[..at],
                None => rest,
            };
            template(value.trim())?
        };
        variables.push((name.to_owned(), value));
    }
    Ok(variables)
}

/// The body of a quoted value up to its closing quote, continuing over following lines.
fn quoted(first: &str, quote: char, lines: &[&str], next: &mut usize) -> Option<String> {
    let mut body = String::new();
    let mut current = first.to_owned();
    loop {
        let mut escaped = false;
        for (at, c) in current.char_indices() {
            if escaped {
                escaped = false;
                continue;
            }
            if c == '\\' && quote == '"' {
                escaped = true;
                continue;
            }
            if c == quote {
                body.push_str(&current[..at]);
                return Some(body);
            }
        }
        body.push_str(&current);
        body.push('\n');
        current = (*lines.get(*next)?).to_owned();
        *next += 1;
    }
}

fn unescape(text: &str) -> String {
    let mut output = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            output.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => output.push('\n'),
            Some('t') => output.push('\t'),
            Some('r') => output.push('\r'),
            Some(other) => output.push(other),
            None => output.push('\\'),
        }
    }
    output
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Vec<(String, String)> {
        let outer = |name: &str| (name == "OUTER").then(|| "o".to_owned());
        parse(text, ".env", &outer).expect("parses")
    }

    #[test]
    fn quoting_comments_and_interpolation() {
        let vars = run(
            "# c\nA=1\nexport B = two words # c\nC='${A} #x'\nD=\"x\\ny ${A}\"\nE=${OUTER}${A}\nOUTER\nMISSING\nF=\n",
        );
        let expected = [
            ("A", "1"),
            ("B", "two words"),
            ("C", "${A} #x"),
            ("D", "x\ny 1"),
            ("E", "o1"),
            ("OUTER", "o"),
            ("F", ""),
        ];
        let got: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn multi_line_quoted_values() {
        assert_eq!(run("A=\"one\ntwo\"\nB=3\n")[0].1, "one\ntwo");
    }

    #[test]
    fn bad_names_are_refused_with_the_line() {
        let error = parse("A=1\nB C=2\n", ".env", &|_: &str| None).expect_err("bad");
        assert!(error.to_string().starts_with(".env:2:"), "{error}");
    }
}
