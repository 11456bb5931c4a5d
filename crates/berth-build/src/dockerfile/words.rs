//! Splitting an instruction's text into words before any expansion, as
//! BuildKit's line parser does: flags off the front, `KEY=value` words with
//! their quotes kept, and plain whitespace splits.

/// Splits `text` into words at unquoted, unescaped whitespace, keeping the
/// quotes and escapes in each word (they are removed when the word expands).
/// What `ENV`, `LABEL` and `ARG` words are made of (BuildKit's `parseWords`);
/// an empty quoted word (`""`) is kept.
pub fn split_words(text: &str, escape: char) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut words = Vec::new();
    let mut word = String::new();
    // Whether the word had quotes, so that an empty one still counts.
    let mut blank_ok = false;
    let mut quote: Option<char> = None;
    let mut in_word = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let last = i + 1 == chars.len();
        i += 1;
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            // Single quotes escape nothing.
            if c == escape && q != '\'' {
                if last {
                    quote = None;
                    continue;
                }
                word.push(c);
                word.push(chars[i]);
                i += 1;
                continue;
            }
            word.push(c);
            continue;
        }
        if !in_word {
            if c.is_whitespace() {
                continue;
            }
            in_word = true;
        }
        if c.is_whitespace() {
            if blank_ok || !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            blank_ok = false;
            in_word = false;
            continue;
        }
        if c == '\'' || c == '"' {
            quote = Some(c);
            blank_ok = true;
        }
        if c == escape {
            if last {
                continue;
            }
            word.push(c);
            word.push(chars[i]);
            i += 1;
            continue;
        }
        word.push(c);
    }
    if in_word && (blank_ok || !word.is_empty()) {
        words.push(word);
    }
    words
}

/// Takes the leading `--flag[=value]` words off `line` (quotes removed and
/// escapes applied in them, as BuildKit does), returning them and the rest.
/// A bare `--` ends the flags.
pub(crate) fn extract_flags(line: &str, escape: char) -> (Vec<String>, &str) {
    let mut flags = Vec::new();
    let mut word = String::new();
    let mut blank_ok = false;
    let mut quote: Option<char> = None;
    let mut in_word = false;
    let mut iter = line.char_indices().peekable();
    while let Some((at, c)) = iter.next() {
        let last = iter.peek().is_none();
        if let Some(q) = quote {
            if c == q {
                quote = None;
                continue;
            }
            if c == escape {
                if last {
                    quote = None;
                    continue;
                }
                if let Some((_, next)) = iter.next() {
                    word.push(next);
                }
                continue;
            }
            word.push(c);
            continue;
        }
        if !in_word {
            if c.is_whitespace() {
                continue;
            }
            // Only a word starting with `--` is a flag.
            if !line[at..].starts_with("--") {
                return (flags, &line[at..]);
            }
            in_word = true;
        }
        if c.is_whitespace() {
            if word == "--" {
                return (flags, &line[at..]);
            }
            if blank_ok || !word.is_empty() {
                flags.push(std::mem::take(&mut word));
            }
            word.clear();
            blank_ok = false;
            in_word = false;
            continue;
        }
        if c == '\'' || c == '"' {
            quote = Some(c);
            blank_ok = true;
            continue;
        }
        if c == escape {
            if last {
                continue;
            }
            if let Some((_, next)) = iter.next() {
                word.push(next);
            }
            continue;
        }
        word.push(c);
    }
    if in_word && word != "--" && (blank_ok || !word.is_empty()) {
        flags.push(word);
    }
    (flags, "")
}

/// BuildKit's whitespace for splitting command lines (`[\t\v\f\r ]`: no
/// newline, none is left in a joined line).
pub(crate) fn is_line_space(c: char) -> bool {
    matches!(c, '\t' | '\x0b' | '\x0c' | '\r' | ' ')
}

/// Splits on runs of [`is_line_space`], as Go's `regexp.Split(s, -1)`:
/// leading and trailing runs give empty words.
pub(crate) fn split_line_spaces(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_space = false;
    for c in text.chars() {
        if is_line_space(c) {
            if !in_space {
                words.push(std::mem::take(&mut current));
            }
            in_space = true;
        } else {
            in_space = false;
            current.push(c);
        }
    }
    words.push(current);
    words
}

/// Splits at the first run of [`is_line_space`] (Go's `Split(s, 2)`).
pub(crate) fn split_first_space(text: &str) -> (&str, Option<&str>) {
    match text.find(is_line_space) {
        Some(start) => {
            let rest = &text[start..];
            let rest = rest.trim_start_matches(is_line_space);
            (&text[..start], Some(rest))
        }
        None => (text, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_keep_quotes_and_escapes() {
        assert_eq!(split_words("a=1 b=\"x y\"", '\\'), ["a=1", "b=\"x y\""]);
        assert_eq!(split_words("a\\ b c", '\\'), ["a\\ b", "c"]);
        assert_eq!(split_words("'it''s' \"\"", '\\'), ["'it''s'", "\"\""]);
        assert_eq!(split_words("  x  ", '\\'), ["x"]);
        assert_eq!(split_words("a=\"q\\\" r\"", '\\'), ["a=\"q\\\" r\""]);
        assert_eq!(split_words("'a\\' b", '\\'), ["'a\\'", "b"]);
        assert_eq!(split_words("end\\", '\\'), ["end"]);
        assert_eq!(split_words("a`  b", '`'), ["a` ", "b"]);
        assert!(split_words("", '\\').is_empty());
    }

    #[test]
    fn flags_come_off_the_front() {
        let (flags, rest) = extract_flags("--from=build --chown=\"a b\" src dst", '\\');
        assert_eq!(flags, ["--from=build", "--chown=a b"]);
        assert_eq!(rest, "src dst");
        let (flags, rest) = extract_flags("--link", '\\');
        assert_eq!(flags, ["--link"]);
        assert_eq!(rest, "");
        let (flags, rest) = extract_flags("-- --not-a-flag", '\\');
        assert!(flags.is_empty());
        assert_eq!(rest, " --not-a-flag");
        let (flags, rest) = extract_flags("echo --x", '\\');
        assert!(flags.is_empty());
        assert_eq!(rest, "echo --x");
        let (flags, _) = extract_flags("--mount=type=cache,target=/a\\ b x", '\\');
        assert_eq!(flags, ["--mount=type=cache,target=/a b"]);
    }

    #[test]
    fn line_space_splits() {
        assert_eq!(split_line_spaces("a  b\tc"), ["a", "b", "c"]);
        assert_eq!(split_first_space("RUN  echo  x"), ("RUN", Some("echo  x")));
        assert_eq!(split_first_space("RUN"), ("RUN", None));
    }
}
