//! Parser directives: the `# name=value` comments before anything else.
//!
//! As BuildKit reads them: only `syntax`, `escape` and `check` are
//! directives (any case, blanks around `=` allowed); the first line that is
//! not one (another comment, a blank line, an instruction, an unknown name)
//! ends them, and a directive given twice is an error.

use super::error::ParseErrorKind;

#[derive(Debug)]
pub(crate) struct DirectiveParser {
    done: bool,
    seen: Vec<String>,
    pub escape: char,
    pub syntax: Option<String>,
    pub check: Option<String>,
}

impl Default for DirectiveParser {
    fn default() -> Self {
        Self {
            done: false,
            seen: Vec::new(),
            escape: '\\',
            syntax: None,
            check: None,
        }
    }
}

/// Go regexp `\s` (ASCII only: no vertical tab).
fn is_regexp_space(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\x0c' | '\r' | ' ')
}

/// `name = value` after the `#`, as BuildKit's
/// `^([a-zA-Z][a-zA-Z0-9]*)\s*=\s*(.+?)\s*$` reads it.
fn split_directive(text: &str) -> Option<(&str, &str)> {
    let first = text.chars().next()?;
    if !first.is_ascii_alphabetic() {
        return None;
    }
    let name_end = text
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(text.len());
    let name = &text[..name_end];
    let rest = text[name_end..].trim_start_matches(is_regexp_space);
    let rest = rest.strip_prefix('=')?;
    let value = rest.trim_start_matches(is_regexp_space);
    if value.is_empty() {
        // The lazy `.+?` still takes the last blank, if there is one.
        let last = rest.chars().last()?;
        return Some((name, &rest[rest.len() - last.len_utf8()..]));
    }
    Some((name, value.trim_end_matches(is_regexp_space)))
}

impl DirectiveParser {
    /// Looks at one line (newline and leading blanks already removed);
    /// true if it was a directive.
    pub(crate) fn parse_line(&mut self, line: &str) -> Result<bool, ParseErrorKind> {
        if self.done {
            return Ok(false);
        }
        let Some(comment) = line.strip_prefix('#') else {
            self.done = true;
            return Ok(false);
        };
        let Some((name, value)) = split_directive(comment.trim_start()) else {
            self.done = true;
            return Ok(false);
        };
        let name = name.to_ascii_lowercase();
        if !matches!(name.as_str(), "syntax" | "escape" | "check") {
            self.done = true;
            return Ok(false);
        }
        if self.seen.contains(&name) {
            return Err(ParseErrorKind::DuplicateDirective { name });
        }
        match name.as_str() {
            "escape" => match value {
                "`" => self.escape = '`',
                "\\" => self.escape = '\\',
                _ => {
                    return Err(ParseErrorKind::InvalidEscapeToken {
                        value: value.to_string(),
                    })
                }
            },
            "syntax" => self.syntax = Some(value.to_string()),
            _ => self.check = Some(value.to_string()),
        }
        self.seen.push(name);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_until_the_first_other_line() {
        let mut parser = DirectiveParser::default();
        assert!(parser.parse_line("# syntax=docker/dockerfile:1").unwrap());
        assert!(parser.parse_line("#ESCAPE = `").unwrap());
        assert!(parser.parse_line("# check=skip=all").unwrap());
        assert_eq!(parser.escape, '`');
        assert_eq!(parser.syntax.as_deref(), Some("docker/dockerfile:1"));
        assert!(!parser.parse_line("FROM x").unwrap());
        assert!(
            !parser.parse_line("# syntax=y").unwrap(),
            "directives end at an instruction"
        );
    }

    #[test]
    fn duplicate_and_invalid() {
        let mut parser = DirectiveParser::default();
        assert!(parser.parse_line("# escape=`").unwrap());
        assert_eq!(
            parser.parse_line("# escape=\\"),
            Err(ParseErrorKind::DuplicateDirective {
                name: "escape".into()
            })
        );
        let mut parser = DirectiveParser::default();
        let error = parser.parse_line("# escape=x").unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid escape token 'x' does not match ` or \\"
        );
    }

    #[test]
    fn other_comments_end_the_directives() {
        let mut parser = DirectiveParser::default();
        assert!(!parser.parse_line("# a comment").unwrap());
        assert!(!parser.parse_line("# escape=`").unwrap());
        assert_eq!(parser.escape, '\\');
        let mut parser = DirectiveParser::default();
        assert!(!parser.parse_line("# unknown=1").unwrap());
        assert!(!parser.parse_line("# syntax=x").unwrap());
        let mut parser = DirectiveParser::default();
        assert!(!parser.parse_line("").unwrap());
        assert!(!parser.parse_line("# syntax=x").unwrap());
    }

    #[test]
    fn value_edges() {
        assert_eq!(split_directive("syntax = a b  "), Some(("syntax", "a b")));
        assert_eq!(split_directive("escape="), None);
        assert_eq!(split_directive("escape= "), Some(("escape", " ")));
        assert_eq!(split_directive("1x=y"), None);
    }
}
