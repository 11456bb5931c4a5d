//! Go's `path.Match`, the pattern language of Docker's `reference`
//! filters (images, and the API's image list): shared by the engine and
//! the API server.

/// Go's `path.Match`, as Docker matches `reference` filters: `*` is any
/// run of characters but `/`, `?` one such character, `[a-z]` / `[^a-z]`
/// a class, a backslash escapes. A malformed pattern matches nothing.
///
/// Linear in practice, whatever the pattern: only a literal `/` matches a
/// `/`, so pattern and text are compared segment by segment, and within a
/// segment a mismatch backtracks to the last `*` only (a pattern like
/// `*a*a*a*b` costs no more than O(pattern × text)).
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let Some(tokens) = glob_tokens(pattern) else {
        return false;
    };
    let segments: Vec<&[GlobToken]> = tokens
        .split(|token| *token == GlobToken::Literal('/'))
        .collect();
    let parts: Vec<Vec<char>> = text.split('/').map(|part| part.chars().collect()).collect();
    segments.len() == parts.len()
        && segments
            .iter()
            .zip(&parts)
            .all(|(segment, part)| glob_segment(segment, part))
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum GlobToken {
    Star,
    Any,
    Literal(char),
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

impl GlobToken {
    /// Whether a single-character token matches `character` (never `/`
    /// except as a literal).
    fn matches(&self, character: char) -> bool {
        match self {
            Self::Star => false,
            Self::Any => character != '/',
            Self::Literal(literal) => *literal == character,
            Self::Class { negated, ranges } => {
                character != '/'
                    && ranges
                        .iter()
                        .any(|(low, high)| (*low..=*high).contains(&character))
                        != *negated
            }
        }
    }
}

/// The pattern's tokens; None when it is malformed (an unclosed class, a
/// trailing backslash, an empty class).
fn glob_tokens(pattern: &str) -> Option<Vec<GlobToken>> {
    let mut characters = pattern.chars().peekable();
    let mut tokens = Vec::new();
    while let Some(character) = characters.next() {
        tokens.push(match character {
            '*' => GlobToken::Star,
            '?' => GlobToken::Any,
            '\\' => GlobToken::Literal(characters.next()?),
            '[' => {
                let negated = characters.next_if_eq(&'^').is_some();
                let mut ranges = Vec::new();
                loop {
                    let mut low = characters.next()?;
                    if low == ']' && !ranges.is_empty() {
                        break;
                    }
                    if low == '\\' {
                        low = characters.next()?;
                    }
                    let mut high = low;
                    if characters.next_if_eq(&'-').is_some() {
                        high = characters.next()?;
                        if high == ']' {
                            // `[a-]`: the dash is literal.
                            ranges.push((low, low));
                            ranges.push(('-', '-'));
                            break;
                        }
                        if high == '\\' {
                            high = characters.next()?;
                        }
                    }
                    ranges.push((low, high));
                }
                GlobToken::Class { negated, ranges }
            }
            literal => GlobToken::Literal(literal),
        });
    }
    Some(tokens)
}

/// One `/`-free segment: greedy, backtracking to the last `*` only.
fn glob_segment(tokens: &[GlobToken], text: &[char]) -> bool {
    let (mut token, mut index) = (0, 0);
    // (the token after the last `*`, the text index it was tried at)
    let mut star: Option<(usize, usize)> = None;
    while index < text.len() {
        match tokens.get(token) {
            Some(GlobToken::Star) => {
                star = Some((token + 1, index));
                token += 1;
                continue;
            }
            Some(single) if single.matches(text[index]) => {
                token += 1;
                index += 1;
                continue;
            }
            _ => {}
        }
        match star {
            Some((after, tried)) => {
                token = after;
                index = tried + 1;
                star = Some((after, tried + 1));
            }
            None => return false,
        }
    }
    tokens[token..]
        .iter()
        .all(|token| *token == GlobToken::Star)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_as_go_path_match() {
        for (pattern, text) in [
            ("busybox", "busybox"),
            ("busy*", "busybox"),
            ("*:latest", "busybox:latest"),
            ("pybox:*", "pybox:v1"),
            ("b?sybox", "busybox"),
            ("[a-c]usybox", "busybox"),
            ("[^x]usybox", "busybox"),
            ("a\\*b", "a*b"),
            ("*/*", "library/busybox"),
            ("", ""),
        ] {
            assert!(glob_match(pattern, text), "{pattern} {text}");
        }
        for (pattern, text) in [
            ("busy", "busybox"),
            ("*", "library/busybox"),
            ("pybox:*", "busybox:latest"),
            ("b?sybox", "b/sybox"),
            ("[^b]usybox", "busybox"),
            ("[a-", "a"),
            ("a\\", "a"),
            ("[]", "a"),
        ] {
            assert!(!glob_match(pattern, text), "{pattern} {text}");
        }
        // No exponential backtracking.
        let text = "a".repeat(5000);
        let pattern = format!("{}b", "*a".repeat(50));
        let started = std::time::Instant::now();
        assert!(!glob_match(&pattern, &text));
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }
}
