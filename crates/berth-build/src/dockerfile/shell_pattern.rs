//! The wildcard patterns of `${VAR#pat}`, `${VAR%pat}` and `${VAR/pat/repl}`,
//! as BuildKit's lexer reads them (`*`, `?` and `\` escapes; no brackets):
//! BuildKit turns them into a Go regexp, berth matches them directly, which
//! gives the same result for every pattern this syntax can express.

use super::expand::ExpandErrorKind;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    /// `*`: any run of characters.
    Star,
    /// `?`: one character.
    Any,
    Literal(char),
}

/// A compiled pattern.
#[derive(Clone, Debug)]
pub(crate) struct ShellPattern {
    tokens: Vec<Token>,
}

impl ShellPattern {
    /// Reads `pattern`, escapes still in it: `\*`, `\?` and `\\` are literal,
    /// `\}` and `\/` lose their backslash (they were escaped for `${}`),
    /// any other escape is refused as BuildKit refuses it.
    pub(crate) fn parse(pattern: &str) -> Result<Self, ExpandErrorKind> {
        let invalid = |reason: String| ExpandErrorKind::InvalidPattern {
            pattern: pattern.to_string(),
            reason,
        };
        let chars: Vec<char> = pattern.chars().collect();
        let mut tokens = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            i += 1;
            match c {
                '*' => tokens.push(Token::Star),
                '?' => tokens.push(Token::Any),
                '\\' => match chars.get(i) {
                    // The next character is then read as itself.
                    Some('}') | Some('/') => {}
                    Some(&next @ ('*' | '?' | '\\')) => {
                        tokens.push(Token::Literal(next));
                        i += 1;
                    }
                    Some(other) => return Err(invalid(format!("invalid escape '\\{other}'"))),
                    None => return Err(invalid("invalid escape '\\'".to_string())),
                },
                c => tokens.push(Token::Literal(c)),
            }
        }
        Ok(Self { tokens })
    }

    /// The same pattern read from its end (for suffix removal).
    pub(crate) fn reversed(&self) -> Self {
        let mut tokens = self.tokens.clone();
        tokens.reverse();
        Self { tokens }
    }

    /// The lengths `n` for which `text[..n]` matches the whole pattern,
    /// as a table indexed by `n`.
    fn prefix_matches(&self, text: &[char]) -> Vec<bool> {
        let mut reach = vec![false; text.len() + 1];
        reach[0] = true;
        for token in &self.tokens {
            let mut next = vec![false; text.len() + 1];
            match token {
                Token::Star => {
                    let mut any = false;
                    for n in 0..=text.len() {
                        any |= reach[n];
                        next[n] = any;
                    }
                }
                Token::Any => {
                    next[1..].copy_from_slice(&reach[..text.len()]);
                }
                Token::Literal(c) => {
                    for n in 0..text.len() {
                        next[n + 1] = reach[n] && text[n] == *c;
                    }
                }
            }
            reach = next;
        }
        reach
    }

    /// The shortest (or, `greedy`, longest) prefix of `text` the pattern
    /// matches: what a Go regexp `^…` with lazy (greedy) stars finds.
    pub(crate) fn match_prefix(&self, text: &[char], greedy: bool) -> Option<usize> {
        let reach = self.prefix_matches(text);
        if greedy {
            reach.iter().rposition(|&r| r)
        } else {
            reach.iter().position(|&r| r)
        }
    }

    /// The leftmost match in `text` at or after `from`, longest there.
    fn find(&self, text: &[char], from: usize) -> Option<(usize, usize)> {
        (from..=text.len()).find_map(|start| {
            self.match_prefix(&text[start..], true)
                .map(|n| (start, start + n))
        })
    }

    /// `${VAR/pat/repl}` (first match) and `${VAR//pat/repl}` (every match,
    /// stepping as Go's `ReplaceAllString` steps past empty matches).
    pub(crate) fn replace(&self, value: &str, replacement: &str, all: bool) -> String {
        let text: Vec<char> = value.chars().collect();
        let mut out = String::new();
        if !all {
            return match self.find(&text, 0) {
                Some((start, end)) => {
                    out.extend(&text[..start]);
                    out.push_str(replacement);
                    out.extend(&text[end..]);
                    out
                }
                None => value.to_string(),
            };
        }
        let mut last_end = 0;
        let mut search = 0;
        while search <= text.len() {
            let Some((start, end)) = self.find(&text, search) else {
                break;
            };
            out.extend(&text[last_end..start]);
            // An empty match right after the previous one is not replaced
            // again (Go's rule; otherwise `x*` would replace twice).
            if end > last_end || start == 0 {
                out.push_str(replacement);
            }
            last_end = end;
            search = if search + 1 > end { search + 1 } else { end };
        }
        if last_end < text.len() {
            out.extend(&text[last_end..]);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    #[test]
    fn prefixes_shortest_and_longest() {
        let p = ShellPattern::parse("*/").unwrap();
        assert_eq!(p.match_prefix(&chars("a/b/c"), false), Some(2));
        assert_eq!(p.match_prefix(&chars("a/b/c"), true), Some(4));
        assert_eq!(p.match_prefix(&chars("abc"), true), None);
        let q = ShellPattern::parse("a?c").unwrap();
        assert_eq!(q.match_prefix(&chars("abcd"), false), Some(3));
    }

    #[test]
    fn escapes() {
        let p = ShellPattern::parse(r"\*x").unwrap();
        assert_eq!(p.match_prefix(&chars("*xy"), false), Some(2));
        assert_eq!(p.match_prefix(&chars("axy"), false), None);
        assert!(ShellPattern::parse(r"\x").is_err());
        assert!(ShellPattern::parse("\\").is_err());
        let slash = ShellPattern::parse(r"\/").unwrap();
        assert_eq!(slash.match_prefix(&chars("/a"), false), Some(1));
    }

    #[test]
    fn replacement_first_and_all() {
        let p = ShellPattern::parse("o").unwrap();
        assert_eq!(p.replace("foo boo", "0", false), "f0o boo");
        assert_eq!(p.replace("foo boo", "0", true), "f00 b00");
        // Go's `.*` replaced everywhere in "abc" gives one replacement.
        let star = ShellPattern::parse("*").unwrap();
        assert_eq!(star.replace("abc", "-", true), "-");
        let literal_then_star = ShellPattern::parse("b*").unwrap();
        assert_eq!(literal_then_star.replace("abcb", "-", false), "a-");
    }
}
