//! From text to logical lines, as BuildKit's `parser.Parse` reads a file:
//! a UTF-8 BOM dropped, directives at the top, comments and blank lines
//! skipped, lines ending in the escape character joined with the next
//! (comment lines and blank lines inside such a run are skipped, as BuildKit
//! allows), and heredoc bodies read after the line that opens them.

use super::directives::DirectiveParser;
use super::error::{ParseError, ParseErrorKind};
use super::heredoc::heredocs_in_line;
use super::node::{parse_node, Node};

/// The file's directives and its lines split into nodes.
#[derive(Debug)]
pub(crate) struct Lines {
    pub escape: char,
    pub syntax: Option<String>,
    pub nodes: Vec<Node>,
}

/// Physical lines, each with its line ending (BuildKit's `scanLines`).
fn physical_lines(source: &str) -> Vec<&str> {
    let source = source.strip_prefix('\u{feff}').unwrap_or(source);
    source.split_inclusive('\n').collect()
}

fn trim_newline(line: &str) -> &str {
    line.trim_end_matches(['\r', '\n'])
}

fn is_comment(line: &str) -> bool {
    line.trim_start().starts_with('#')
}

/// Removes a trailing escape character (and blanks after it) that
/// continues the line: true when the line ends here. An escaped escape
/// (`\\`) does not continue it.
fn trim_continuation(line: &str, escape: char) -> (&str, bool) {
    let body = line.trim_end_matches([' ', '\t']);
    let Some(before) = body.strip_suffix(escape) else {
        return (line, true);
    };
    if before.ends_with(escape) {
        return (line, true);
    }
    (before, false)
}

/// One physical line: newline and (at the start of an instruction) leading
/// blanks removed, shown to the directive parser, a comment made empty.
fn process(
    directives: &mut DirectiveParser,
    raw: &str,
    strip_left: bool,
    number: usize,
) -> Result<String, ParseError> {
    let mut line = trim_newline(raw);
    if strip_left {
        line = line.trim_start();
    }
    directives
        .parse_line(line)
        .map_err(|kind| ParseError::new(number, number, kind))?;
    Ok(if is_comment(line) {
        String::new()
    } else {
        line.to_string()
    })
}

pub(crate) fn parse_lines(source: &str) -> Result<Lines, ParseError> {
    let lines = physical_lines(source);
    let mut directives = DirectiveParser::default();
    let mut nodes = Vec::new();
    // The number of physical lines consumed: the 1-based number of the last.
    let mut consumed = 0;

    while consumed < lines.len() {
        let line = process(&mut directives, lines[consumed], true, consumed + 1)?;
        consumed += 1;
        let start_line = consumed;
        let escape = directives.escape;
        let (text, mut end_of_line) = trim_continuation(&line, escape);
        if end_of_line && text.is_empty() {
            continue;
        }
        let mut joined = text.to_string();
        while !end_of_line && consumed < lines.len() {
            let raw = lines[consumed];
            let line = process(&mut directives, raw, false, consumed + 1)?;
            consumed += 1;
            if is_comment(raw) || line.trim_start().is_empty() {
                continue;
            }
            let (text, end) = trim_continuation(&line, escape);
            joined.push_str(text);
            end_of_line = end;
        }

        let mut node = parse_node(&joined, escape)
            .map_err(|kind| ParseError::new(start_line, consumed, kind))?;
        if node.can_contain_heredoc() && joined.contains("<<") {
            for mut heredoc in heredocs_in_line(&joined) {
                let mut terminated = false;
                while consumed < lines.len() {
                    let raw = lines[consumed];
                    consumed += 1;
                    let mut candidate = trim_newline(raw);
                    if heredoc.chomp {
                        candidate = candidate.trim_start_matches('\t');
                    }
                    if candidate == heredoc.name {
                        terminated = true;
                        break;
                    }
                    heredoc.content.push_str(raw);
                }
                if !terminated {
                    return Err(ParseError::new(
                        start_line,
                        consumed,
                        ParseErrorKind::UnterminatedHeredoc,
                    ));
                }
                node.heredocs.push(heredoc);
            }
        }
        node.start_line = start_line;
        node.end_line = consumed;
        nodes.push(node);
    }

    if nodes.is_empty() {
        return Err(ParseError::new(
            consumed,
            consumed,
            ParseErrorKind::NoInstructions,
        ));
    }
    Ok(Lines {
        escape: directives.escape,
        syntax: directives.syntax,
        nodes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn originals(source: &str) -> Vec<(usize, usize, String)> {
        parse_lines(source)
            .unwrap()
            .nodes
            .into_iter()
            .map(|n| (n.start_line, n.end_line, n.original))
            .collect()
    }

    #[test]
    fn continuations_join_without_the_escape() {
        let got = originals("FROM a\nRUN echo a \\\n  b\\\n c\n");
        assert_eq!(got[1], (2, 4, "RUN echo a   b c".to_string()));
    }

    #[test]
    fn comments_and_blank_lines_inside_a_continuation_are_skipped() {
        let got = originals("RUN a \\\n# note\n\n   \n  # indented\n b\nRUN c");
        assert_eq!(got[0], (1, 6, "RUN a  b".to_string()));
        assert_eq!(got[1], (7, 7, "RUN c".to_string()));
    }

    #[test]
    fn an_escaped_escape_does_not_continue() {
        let got = originals("RUN a\\\\\nRUN b");
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].2, "RUN a\\\\");
    }

    #[test]
    fn continuation_at_end_of_file() {
        let got = originals("FROM a\n\nRUN something \\");
        assert_eq!(got[1], (3, 3, "RUN something ".to_string()));
    }

    #[test]
    fn escape_directive_changes_the_continuation() {
        let got = originals("# escape=`\nFROM a\nRUN dir c:\\ `\n  x\n");
        assert_eq!(got[1].2, "RUN dir c:\\   x");
        let got = originals("# comment first\n# escape=`\nRUN a `\nRUN b");
        assert_eq!(got.len(), 2, "a late escape directive is only a comment");
    }

    #[test]
    fn bom_crlf_and_leading_blanks() {
        let got = originals("\u{feff}FROM a\r\n   RUN b \\\r\n c\r\n");
        assert_eq!(got[0].2, "FROM a");
        assert_eq!(got[1].2, "RUN b  c");
    }

    #[test]
    fn heredoc_bodies_follow_their_line() {
        let lines = parse_lines("RUN <<A cat - <<B\none\nA\ntwo\nB\nRUN x").unwrap();
        let run = &lines.nodes[0];
        assert_eq!((run.start_line, run.end_line), (1, 5));
        assert_eq!(run.heredocs[0].content, "one\n");
        assert_eq!(run.heredocs[1].content, "two\n");
        assert_eq!(lines.nodes[1].start_line, 6);
        let chomped = parse_lines("COPY <<-EOF /f\n\tbody\n\tEOF\n").unwrap();
        assert_eq!(chomped.nodes[0].heredocs[0].content, "\tbody\n");
    }

    #[test]
    fn unterminated_heredoc() {
        let error = parse_lines("FROM a\nRUN <<EOF\necho\n").unwrap_err();
        assert_eq!(error.to_string(), "unterminated heredoc");
        assert_eq!((error.line, error.end_line), (2, 3));
    }

    #[test]
    fn no_instructions() {
        let error = parse_lines("# only\n\n# comments\n").unwrap_err();
        assert_eq!(error.kind, ParseErrorKind::NoInstructions);
        assert!(parse_lines("").is_err());
    }
}
