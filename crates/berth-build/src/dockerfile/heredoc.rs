//! Heredocs (`<<EOF`) in `RUN`, `COPY` and `ADD`, found as BuildKit finds
//! them: the joined line is lexed into words (quotes and escapes kept, `\`
//! as escape whatever the directive says), and each word of the form
//! `[fd]<<[-]NAME` (no further `<`) opens one, read in order after the line.

use super::ast::Heredoc;
use super::expand::{LexOptions, Lexer};

fn no_variables(_: &str) -> Option<String> {
    None
}

fn lex_words(text: &str, options: LexOptions) -> Option<Vec<String>> {
    Lexer::new(text, '\\', &no_variables, options)
        .run()
        .ok()
        .map(|(_, words)| words)
}

/// The heredoc a word opens, if it is one (its body still empty).
pub(crate) fn parse_heredoc(word: &str) -> Option<Heredoc> {
    let digits = word.len() - word.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let rest = word[digits..].strip_prefix("<<")?;
    let (chomp, rest) = match rest.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, rest),
    };
    let rest = rest.trim_start_matches(['\t', '\n', '\x0c', '\r', ' ']);
    if rest.is_empty() || rest.contains('<') {
        return None;
    }
    let plain = lex_words(
        rest,
        LexOptions {
            skip_unset: true,
            ..LexOptions::default()
        },
    )?;
    let [name] = plain.as_slice() else {
        return None;
    };
    let raw = lex_words(
        rest,
        LexOptions {
            skip_unset: true,
            raw_quotes: true,
            ..LexOptions::default()
        },
    )?;
    let [raw_name] = raw.as_slice() else {
        return None;
    };
    // Any quote in the name (`<<"EOF"`, `<<E'O'F`) turns expansion off.
    let quotes = |s: &str| s.chars().filter(|&c| c == '\'' || c == '"').count();
    Some(Heredoc {
        name: name.clone(),
        content: String::new(),
        expand: quotes(name) == quotes(raw_name),
        chomp,
        file_descriptor: if digits == 0 {
            None
        } else {
            word[..digits].parse().ok()
        },
    })
}

/// The heredocs a (joined) instruction line opens, in order.
pub(crate) fn heredocs_in_line(line: &str) -> Vec<Heredoc> {
    let options = LexOptions {
        raw_quotes: true,
        raw_escapes: true,
        skip_unset: true,
    };
    lex_words(line, options)
        .unwrap_or_default()
        .iter()
        .filter_map(|word| parse_heredoc(word))
        .collect()
}

impl Heredoc {
    /// The body as the builder uses it: with `<<-`, each line's leading
    /// tabs removed (BuildKit keeps the body raw and chomps when it uses it).
    pub fn chomped_content(&self) -> String {
        if !self.chomp {
            return self.content.clone();
        }
        self.content
            .split_inclusive('\n')
            .map(|line| line.trim_start_matches('\t'))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heredoc_words() {
        let h = parse_heredoc("<<EOF").unwrap();
        assert_eq!(
            (h.name.as_str(), h.expand, h.chomp, h.file_descriptor),
            ("EOF", true, false, None)
        );
        let h = parse_heredoc("<<-'END'").unwrap();
        assert_eq!((h.name.as_str(), h.expand, h.chomp), ("END", false, true));
        let h = parse_heredoc("3<<\"X\"").unwrap();
        assert_eq!(
            (h.name.as_str(), h.expand, h.file_descriptor),
            ("X", false, Some(3))
        );
        let h = parse_heredoc("<<E'O'F").unwrap();
        assert_eq!((h.name.as_str(), h.expand), ("EOF", false));
        assert!(parse_heredoc("<<").is_none());
        assert!(parse_heredoc("a<<EOF").is_none());
        assert!(parse_heredoc("<<<EOF").is_none());
        assert!(parse_heredoc("<<A B").is_none());
    }

    #[test]
    fn heredocs_of_a_line() {
        let docs = heredocs_in_line("RUN <<A cat - <<'B' > out");
        let names: Vec<&str> = docs.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["A", "B"]);
        assert!(
            heredocs_in_line("RUN echo '<<EOF'").is_empty(),
            "quoted: not a heredoc"
        );
        assert_eq!(heredocs_in_line("COPY << EOF /x")[0].name, "EOF");
    }

    #[test]
    fn chomping() {
        let h = Heredoc {
            name: "E".into(),
            content: "\t\ta\n\tb\nc\t\n".into(),
            expand: true,
            chomp: true,
            file_descriptor: None,
        };
        assert_eq!(h.chomped_content(), "a\nb\nc\t\n");
    }
}
