//! `.dockerignore`, read as moby's `ignorefile.ReadAll` reads it and matched
//! as `patternmatcher.MatchesOrParentMatches` matches (what BuildKit's
//! context transfer uses):
//!
//! - lines starting with `#` are comments, blank lines are skipped, each
//!   pattern is trimmed, cleaned (`path.Clean`) and loses a leading `/`;
//! - `!pattern` is an exception: it re-includes what it matches;
//! - `*` is any run of characters but `/`, `?` one character but `/`,
//!   `**` any number of directories (also none), `[…]` a class, `\` escapes;
//! - the last pattern that matches a path or one of its parent directories
//!   decides.

/// A `.dockerignore` that moby would refuse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IgnoreError {
    /// moby's words (the pattern is `!` alone).
    #[error("illegal exclusion pattern: \"!\"")]
    IllegalExclusion,
    /// Go's `filepath.ErrBadPattern`, which is all moby says.
    #[error("syntax error in pattern")]
    BadPattern { pattern: String },
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Literal(char),
    /// `*`: characters other than `/`.
    Star,
    /// `?`: one character other than `/`.
    One,
    /// `**` followed by more: `(.*/)?`.
    Directories,
    /// A final `**`: anything.
    Rest,
    /// `[…]` (as moby passes it to Go's regexp: a negated class also
    /// matches `/`).
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

#[derive(Clone, Debug)]
enum Matcher {
    /// A pattern starting with `**` and nothing special after: moby
    /// matches it as a plain suffix (so `**foo` matches `barfoo`).
    Suffix(String),
    Tokens(Vec<Token>),
}

#[derive(Clone, Debug)]
struct Pattern {
    exception: bool,
    matcher: Matcher,
}

/// The patterns of a `.dockerignore`, in order.
#[derive(Clone, Debug, Default)]
pub struct IgnoreMatcher {
    patterns: Vec<Pattern>,
}

/// Go's `path.Clean`.
fn clean(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                _ if rooted => {}
                _ => parts.push(".."),
            },
            part => parts.push(part),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    }
}

/// The `.dockerignore` lines as patterns (`ignorefile.ReadAll`).
fn read_patterns(text: &str) -> Vec<String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut patterns = Vec::new();
    for line in text.lines() {
        // A comment only at the very start of the line, before trimming.
        if line.starts_with('#') {
            continue;
        }
        let mut pattern = line.trim();
        if pattern.is_empty() {
            continue;
        }
        let exception = pattern.starts_with('!');
        if exception {
            pattern = pattern[1..].trim();
        }
        let mut cleaned = String::new();
        if !pattern.is_empty() {
            cleaned = clean(pattern);
            if cleaned.len() > 1 && cleaned.starts_with('/') {
                cleaned.remove(0);
            }
        }
        patterns.push(if exception {
            format!("!{cleaned}")
        } else {
            cleaned
        });
    }
    patterns
}

/// Reads a `[…]` class starting after its `[` (Go `filepath.Match` syntax:
/// at least one range, `\` escapes, no empty class).
fn parse_class(chars: &[char], mut i: usize) -> Option<(Token, usize)> {
    let negated = chars.get(i) == Some(&'^');
    if negated {
        i += 1;
    }
    let escaped = |i: &mut usize| -> Option<char> {
        let c = *chars.get(*i)?;
        if c == '-' || c == ']' {
            return None;
        }
        *i += 1;
        if c == '\\' {
            let c = *chars.get(*i)?;
            *i += 1;
            return Some(c);
        }
        Some(c)
    };
    let mut ranges = Vec::new();
    loop {
        if chars.get(i) == Some(&']') && !ranges.is_empty() {
            return Some((Token::Class { negated, ranges }, i + 1));
        }
        let low = escaped(&mut i)?;
        let mut high = low;
        if chars.get(i) == Some(&'-') {
            i += 1;
            high = escaped(&mut i)?;
        }
        ranges.push((low, high));
    }
}

/// Compiles one cleaned pattern (patternmatcher's `compile`).
fn compile(pattern: &str) -> Result<Matcher, IgnoreError> {
    let bad = || IgnoreError::BadPattern {
        pattern: pattern.to_string(),
    };
    let chars: Vec<char> = pattern.chars().collect();
    let mut tokens = Vec::new();
    let mut suffix = false;
    let mut special = false;
    let mut i = 0;
    let mut first = true;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '*' if chars.get(i) == Some(&'*') => {
                i += 1;
                // `**/` is `**`.
                if chars.get(i) == Some(&'/') {
                    i += 1;
                }
                if i == chars.len() {
                    tokens.push(Token::Rest);
                } else {
                    tokens.push(Token::Directories);
                    special = true;
                }
                if first {
                    suffix = true;
                    special = false;
                }
            }
            '*' => {
                tokens.push(Token::Star);
                special = true;
            }
            '?' => {
                tokens.push(Token::One);
                special = true;
            }
            '\\' => match chars.get(i) {
                Some(&next) => {
                    tokens.push(Token::Literal(next));
                    i += 1;
                    special = true;
                }
                None => tokens.push(Token::Literal('\\')),
            },
            '[' => {
                let (class, next) = parse_class(&chars, i).ok_or_else(bad)?;
                tokens.push(class);
                i = next;
                special = true;
            }
            c => tokens.push(Token::Literal(c)),
        }
        first = false;
    }
    if suffix && !special {
        return Ok(Matcher::Suffix(pattern.get(2..).unwrap_or("").to_string()));
    }
    Ok(Matcher::Tokens(tokens))
}

impl Token {
    fn matches_char(&self, c: char) -> bool {
        match self {
            Token::Literal(l) => *l == c,
            Token::One => c != '/',
            Token::Class { negated, ranges } => {
                ranges.iter().any(|&(low, high)| low <= c && c <= high) != *negated
            }
            Token::Star | Token::Directories | Token::Rest => false,
        }
    }
}

/// For each token count `k`, which prefixes of `text` `tokens[..k]` match.
fn reach_table(tokens: &[Token], text: &[char]) -> Vec<Vec<bool>> {
    let n = text.len();
    let mut table = Vec::with_capacity(tokens.len() + 1);
    let mut reach = vec![false; n + 1];
    reach[0] = true;
    for token in tokens {
        let mut next = vec![false; n + 1];
        match token {
            Token::Star => {
                let mut alive = false;
                for p in 0..=n {
                    alive |= reach[p];
                    next[p] = alive;
                    if p < n && text[p] == '/' {
                        alive = false;
                    }
                }
            }
            Token::Rest => {
                let mut alive = false;
                for p in 0..=n {
                    alive |= reach[p];
                    next[p] = alive;
                }
            }
            Token::Directories => {
                let mut alive = false;
                for p in 0..=n {
                    next[p] |= reach[p];
                    alive |= reach[p];
                    if p < n && text[p] == '/' && alive {
                        next[p + 1] = true;
                    }
                }
            }
            single => {
                for p in 0..n {
                    next[p + 1] = reach[p] && single.matches_char(text[p]);
                }
            }
        }
        table.push(reach);
        reach = next;
    }
    table.push(reach);
    table
}

impl Pattern {
    fn matches(&self, path: &str) -> bool {
        match &self.matcher {
            Matcher::Suffix(suffix) => {
                path.ends_with(suffix.as_str())
                    || suffix.strip_prefix('/').is_some_and(|rest| path == rest)
            }
            Matcher::Tokens(tokens) => {
                let text: Vec<char> = path.chars().collect();
                reach_table(tokens, &text)
                    .last()
                    .is_some_and(|reach| reach[text.len()])
            }
        }
    }

    /// Whether the pattern could match some path below `dir`.
    fn may_match_below(&self, dir: &str) -> bool {
        let Matcher::Tokens(tokens) = &self.matcher else {
            return true;
        };
        let text: Vec<char> = format!("{dir}/").chars().collect();
        let table = reach_table(tokens, &text);
        let n = text.len();
        // Either a run of tokens takes all of `dir/` (the rest can match
        // whatever follows), or a `**` can take it.
        table.iter().any(|reach| reach[n])
            || tokens.iter().zip(&table).any(|(token, reach)| {
                matches!(token, Token::Directories | Token::Rest) && reach.iter().any(|&r| r)
            })
    }
}

/// A context-relative path as moby compares it: `/`-separated, cleaned.
fn normalize(path: &str) -> String {
    let cleaned = clean(path);
    cleaned.trim_start_matches('/').to_string()
}

/// The parent directories of `path`, shortest first (`a`, `a/b` for `a/b/c`).
fn parents(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/').map(move |(at, _)| &path[..at])
}

impl IgnoreMatcher {
    /// Reads a `.dockerignore`.
    pub fn parse(text: &str) -> Result<Self, IgnoreError> {
        let mut patterns = Vec::new();
        for pattern in read_patterns(text) {
            let (exception, pattern) = match pattern.strip_prefix('!') {
                Some("") => return Err(IgnoreError::IllegalExclusion),
                Some(rest) => (true, rest.to_string()),
                None => (false, pattern),
            };
            patterns.push(Pattern {
                exception,
                matcher: compile(&pattern)?,
            });
        }
        Ok(Self { patterns })
    }

    /// Whether there are no patterns: nothing is left out.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Whether there are `!` exceptions at all.
    pub fn has_exceptions(&self) -> bool {
        self.patterns.iter().any(|p| p.exception)
    }

    /// Whether `path` (relative to the context, `/`-separated) is left out
    /// of the context. The context itself never is.
    pub fn is_excluded(&self, path: &str) -> bool {
        let path = normalize(path);
        if path == "." || path.is_empty() {
            return false;
        }
        let mut excluded = false;
        for pattern in &self.patterns {
            // Only an exception can change an exclusion and only an
            // exclusion a non-exclusion (moby skips the others).
            if pattern.exception != excluded {
                continue;
            }
            let matched = pattern.matches(&path) || parents(&path).any(|dir| pattern.matches(dir));
            if matched {
                excluded = !pattern.exception;
            }
        }
        excluded
    }

    /// Whether an exception could re-include something under the excluded
    /// directory `dir`: a walker must then descend into it instead of
    /// skipping it whole.
    pub fn may_include_inside(&self, dir: &str) -> bool {
        let dir = normalize(dir);
        if dir == "." || dir.is_empty() {
            return self.has_exceptions();
        }
        self.patterns
            .iter()
            .any(|p| p.exception && p.may_match_below(&dir))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matcher(text: &str) -> IgnoreMatcher {
        IgnoreMatcher::parse(text).unwrap()
    }

    #[test]
    fn reading_the_file() {
        assert_eq!(
            read_patterns("\u{feff}# comment\n\n  /abs/path  \n!/keep\n ./a/../b/\n # not a comment\n! spaced\n"),
            ["abs/path", "!keep", "b", "# not a comment", "!spaced"]
        );
        assert_eq!(clean("a//b/./c/.."), "a/b");
        assert_eq!(clean("../../x"), "../../x");
        assert_eq!(clean("/.."), "/");
        assert_eq!(clean(""), ".");
    }

    #[test]
    fn plain_names_and_parents() {
        let m = matcher("node_modules\n*.log\n");
        assert!(m.is_excluded("node_modules"));
        assert!(m.is_excluded("node_modules/x/y.js"));
        assert!(m.is_excluded("error.log"));
        assert!(!m.is_excluded("logs/error.log"), "* does not cross /");
        assert!(!m.is_excluded("src/node_modules"));
        assert!(!m.is_excluded("."));
    }

    #[test]
    fn double_star() {
        let m = matcher("**/*.tmp\nbuild/**\n");
        assert!(m.is_excluded("a.tmp"));
        assert!(m.is_excluded("x/y/z.tmp"));
        assert!(m.is_excluded("build/out/bin"));
        assert!(!m.is_excluded("builder"));
        let suffix = matcher("**foo");
        assert!(suffix.is_excluded("barfoo"), "moby's suffix match");
        let middle = matcher("a/**/b");
        assert!(middle.is_excluded("a/b"));
        assert!(middle.is_excluded("a/x/y/b"));
        assert!(!middle.is_excluded("a/xb"));
        assert!(matcher("**").is_excluded("anything/at/all"));
    }

    #[test]
    fn classes_question_marks_and_escapes() {
        let m = matcher("file?.txt\n[a-c]*.md\n\\*star\n");
        assert!(m.is_excluded("file1.txt"));
        assert!(!m.is_excluded("file/.txt"));
        assert!(m.is_excluded("b-notes.md"));
        assert!(!m.is_excluded("d.md"));
        assert!(m.is_excluded("*star"));
        assert!(!m.is_excluded("xstar"));
        assert!(matcher("[^a]").is_excluded("b"));
        assert_eq!(
            IgnoreMatcher::parse("[a-").unwrap_err(),
            IgnoreError::BadPattern {
                pattern: "[a-".into()
            }
        );
        assert!(IgnoreMatcher::parse("[]").is_err());
        assert_eq!(
            IgnoreMatcher::parse("!").unwrap_err().to_string(),
            "illegal exclusion pattern: \"!\""
        );
    }

    #[test]
    fn exceptions_last_match_wins() {
        let m = matcher("*.md\n!README.md\nREADME*.md\n");
        assert!(m.is_excluded("CHANGES.md"));
        assert!(m.is_excluded("README.md"), "re-excluded by the last line");
        let m = matcher("docs\n!docs/keep.txt\n");
        assert!(m.is_excluded("docs/other.txt"));
        assert!(!m.is_excluded("docs/keep.txt"));
        assert!(m.is_excluded("docs"));
        assert!(m.may_include_inside("docs"));
        assert!(!m.may_include_inside("other"));
    }

    #[test]
    fn may_include_inside_follows_the_exceptions() {
        let m = matcher("*\n!src/**/*.rs\n!**/Cargo.toml\n");
        assert!(m.may_include_inside("src"));
        assert!(m.may_include_inside("src/a/b"));
        assert!(
            m.may_include_inside("target"),
            "**/Cargo.toml can be anywhere"
        );
        let m = matcher("*\n!src/*.rs\n");
        assert!(m.may_include_inside("src"));
        assert!(!m.may_include_inside("src/deep"), "* does not cross /");
        assert!(!m.may_include_inside("target"));
        assert!(!matcher("target\n").may_include_inside("target"));
    }
}
