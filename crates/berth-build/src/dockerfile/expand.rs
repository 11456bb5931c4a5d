//! Variable substitution and word splitting, as BuildKit's shell lexer
//! (`frontend/dockerfile/shell/lex.go`) does them for the instructions that
//! expand (`ENV`, `ARG`, `LABEL`, `COPY`, `WORKDIR`, `USER`, `EXPOSE`, …).
//!
//! It is not a shell: quotes group and are removed, the escape character
//! escapes, `$NAME` and `${NAME…}` expand with the forms below, and nothing
//! else (no globbing, no command substitution, no arithmetic).
//!
//! ```text
//! ${V:-w} ${V-w}   w if V is unset (or, with `:`, empty)
//! ${V:+w} ${V+w}   w if V is set (and, with `:`, not empty)
//! ${V:?m} ${V?m}   an error "V: m" if V is unset (or, with `:`, empty)
//! ${V#p} ${V##p}   V without its shortest (longest) prefix matching p
//! ${V%p} ${V%%p}   V without its shortest (longest) suffix matching p
//! ${V/p/r} ${V//p/r}  V with its first (every) match of p replaced by r
//! ```

use super::error::go_quote;
use super::shell_pattern::ShellPattern;

/// A word the lexer refused, and why (BuildKit's message).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("failed to process {}: {kind}", go_quote(.word))]
pub struct ExpandError {
    /// The text being expanded.
    pub word: String,
    pub kind: ExpandErrorKind,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExpandErrorKind {
    #[error("unexpected end of statement while looking for matching single-quote")]
    UnterminatedSingleQuote,
    #[error("unexpected end of statement while looking for matching double-quote")]
    UnterminatedDoubleQuote,
    #[error("unexpected end of statement while looking for matching {stop}")]
    UnexpectedEnd { stop: char },
    #[error("syntax error: missing '}}'")]
    MissingBrace,
    #[error("syntax error: missing '/' in ${{}}")]
    MissingSlash,
    #[error("syntax error: bad substitution")]
    BadSubstitution,
    #[error("unsupported modifier ({modifier}) in substitution")]
    UnsupportedModifier { modifier: String },
    /// `${V?message}` / `${V:?message}`.
    #[error("{name}: {message}")]
    Required { name: String, message: String },
    #[error("invalid pattern ({pattern}) in substitution: {reason}")]
    InvalidPattern { pattern: String, reason: String },
}

/// Expands one word: quotes removed, escapes applied, variables replaced;
/// whitespace is kept (`ENV`, `WORKDIR`, `USER`, … values).
pub fn expand_word(
    word: &str,
    escape: char,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ExpandError> {
    Lexer::new(word, escape, lookup, LexOptions::default())
        .run()
        .map(|(word, _)| word)
}

/// Expands `text` and splits it on whitespace that is neither quoted nor
/// escaped; whitespace inside a variable's value splits too, as BuildKit
/// does (`EXPOSE`, `VOLUME`, `COPY` sources). An empty quoted string makes
/// no word (BuildKit drops it too).
pub fn expand_words(
    text: &str,
    escape: char,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<String>, ExpandError> {
    Lexer::new(text, escape, lookup, LexOptions::default())
        .run()
        .map(|(_, words)| words)
}

/// Lexer switches BuildKit's parser sets for its own uses (heredoc names).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LexOptions {
    /// Keep the quote characters in the result.
    pub raw_quotes: bool,
    /// Keep the escape characters in the result.
    pub raw_escapes: bool,
    /// Leave references to unset variables as written.
    pub skip_unset: bool,
}

/// The end of input, as Go's `text/scanner` shows it in messages (`EOF`
/// becomes U+FFFD when printed as a string).
const END: char = '\u{fffd}';

pub(crate) struct Lexer<'a> {
    source: &'a str,
    chars: Vec<char>,
    position: usize,
    escape: char,
    options: LexOptions,
    lookup: &'a dyn Fn(&str) -> Option<String>,
}

/// The words being collected while a text is expanded.
#[derive(Default)]
struct Words {
    buffer: String,
    words: Vec<String>,
    in_word: bool,
}

impl Words {
    fn add_char(&mut self, c: char) {
        if c.is_whitespace() {
            if self.in_word && !self.buffer.is_empty() {
                self.words.push(std::mem::take(&mut self.buffer));
                self.in_word = false;
            }
        } else {
            self.add_raw_char(c);
        }
    }

    fn add_raw_char(&mut self, c: char) {
        self.buffer.push(c);
        self.in_word = true;
    }

    fn add_string(&mut self, s: &str) {
        s.chars().for_each(|c| self.add_char(c));
    }

    fn add_raw_string(&mut self, s: &str) {
        self.buffer.push_str(s);
        self.in_word = true;
    }

    fn finish(mut self) -> Vec<String> {
        if !self.buffer.is_empty() {
            self.words.push(std::mem::take(&mut self.buffer));
        }
        self.words
    }
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(
        source: &'a str,
        escape: char,
        lookup: &'a dyn Fn(&str) -> Option<String>,
        options: LexOptions,
    ) -> Self {
        Self {
            source,
            chars: source.chars().collect(),
            position: 0,
            escape,
            options,
            lookup,
        }
    }

    /// The whole text: its expansion and its words.
    pub(crate) fn run(mut self) -> Result<(String, Vec<String>), ExpandError> {
        let raw_escapes = self.options.raw_escapes;
        self.process_until(None, raw_escapes)
            .map_err(|kind| ExpandError {
                word: self.source.to_string(),
                kind,
            })
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.position).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek();
        if c.is_some() {
            self.position += 1;
        }
        c
    }

    /// Reads up to `stop` (consumed) or the end.
    fn process_until(
        &mut self,
        stop: Option<char>,
        raw_escapes: bool,
    ) -> Result<(String, Vec<String>), ExpandErrorKind> {
        let saved = self.options.raw_escapes;
        self.options.raw_escapes = raw_escapes;
        let result = self.process_until_inner(stop);
        self.options.raw_escapes = saved;
        result
    }

    fn process_until_inner(
        &mut self,
        stop: Option<char>,
    ) -> Result<(String, Vec<String>), ExpandErrorKind> {
        let mut result = String::new();
        let mut words = Words::default();
        while let Some(c) = self.peek() {
            if Some(c) == stop {
                self.next();
                return Ok((result, words.finish()));
            }
            match c {
                '$' => {
                    let value = self.process_dollar()?;
                    result.push_str(&value);
                    // An expanded value splits where it has whitespace.
                    words.add_string(&value);
                }
                '<' => {
                    let text = self.process_possible_heredoc();
                    result.push_str(&text);
                    words.add_raw_string(&text);
                }
                '\'' => {
                    let text = self.process_single_quote()?;
                    result.push_str(&text);
                    words.add_raw_string(&text);
                }
                '"' => {
                    let text = self.process_double_quote()?;
                    result.push_str(&text);
                    words.add_raw_string(&text);
                }
                _ => {
                    self.next();
                    if c == self.escape {
                        if self.options.raw_escapes {
                            words.add_raw_char(c);
                            result.push(c);
                        }
                        // An escape at the very end is dropped.
                        let Some(escaped) = self.next() else { break };
                        words.add_raw_char(escaped);
                        result.push(escaped);
                    } else {
                        words.add_char(c);
                        result.push(c);
                    }
                }
            }
        }
        match stop {
            Some(stop) => Err(ExpandErrorKind::UnexpectedEnd { stop }),
            None => Ok((result, words.finish())),
        }
    }

    fn process_single_quote(&mut self) -> Result<String, ExpandErrorKind> {
        let mut result = String::new();
        let quote = self.next();
        if self.options.raw_quotes {
            result.extend(quote);
        }
        loop {
            match self.next() {
                None => return Err(ExpandErrorKind::UnterminatedSingleQuote),
                Some('\'') => {
                    if self.options.raw_quotes {
                        result.push('\'');
                    }
                    return Ok(result);
                }
                Some(c) => result.push(c),
            }
        }
    }

    fn process_double_quote(&mut self) -> Result<String, ExpandErrorKind> {
        let mut result = String::new();
        let quote = self.next();
        if self.options.raw_quotes {
            result.extend(quote);
        }
        loop {
            match self.peek() {
                None => return Err(ExpandErrorKind::UnterminatedDoubleQuote),
                Some('"') => {
                    self.next();
                    if self.options.raw_quotes {
                        result.push('"');
                    }
                    return Ok(result);
                }
                Some('$') => {
                    let value = self.process_dollar()?;
                    result.push_str(&value);
                }
                Some(c) => {
                    self.next();
                    let mut c = c;
                    if c == self.escape {
                        if self.options.raw_escapes {
                            result.push(c);
                        }
                        match self.peek() {
                            None => continue,
                            // Only these are escaped inside double quotes;
                            // before anything else the escape stays.
                            Some(next) if next == '"' || next == '$' || next == self.escape => {
                                self.next();
                                c = next;
                            }
                            Some(_) => {}
                        }
                    }
                    result.push(c);
                }
            }
        }
    }

    /// `<<` and the blanks after it stay one piece, so `<< EOF` is one word.
    fn process_possible_heredoc(&mut self) -> String {
        self.next();
        if self.peek() != Some('<') {
            return "<".to_string();
        }
        self.next();
        let mut result = "<<".to_string();
        while let Some(c @ ('\t' | '\r' | ' ')) = self.peek() {
            result.push(c);
            self.next();
        }
        result
    }

    fn get(&self, name: &str) -> Option<String> {
        (self.lookup)(name)
    }

    fn process_dollar(&mut self) -> Result<String, ExpandErrorKind> {
        self.next();
        if self.peek() != Some('{') {
            let name = self.process_name();
            if name.is_empty() {
                return Ok("$".to_string());
            }
            return Ok(match self.get(&name) {
                Some(value) => value,
                None if self.options.skip_unset => format!("${name}"),
                None => String::new(),
            });
        }
        self.next();
        match self.peek() {
            None => return Err(ExpandErrorKind::MissingBrace),
            Some('{' | '}' | ':') => return Err(ExpandErrorKind::BadSubstitution),
            Some(_) => {}
        }
        let name = self.process_name();
        let c = self.next().unwrap_or(END);
        let mut modifier = c.to_string();
        match c {
            '}' => Ok(match self.get(&name) {
                Some(value) => value,
                None if self.options.skip_unset => format!("${{{name}}}"),
                None => String::new(),
            }),
            ':' | '+' | '-' | '?' | '#' | '%' => {
                let null_is_unset = c == ':';
                let mut operator = c;
                if null_is_unset {
                    operator = self.next().unwrap_or(END);
                    modifier.push(operator);
                }
                let raw = operator == '#' || operator == '%';
                if null_is_unset && raw {
                    return Err(ExpandErrorKind::UnsupportedModifier { modifier });
                }
                let word = self.process_until(Some('}'), raw).map_err(|error| {
                    if self.peek().is_none() {
                        ExpandErrorKind::MissingBrace
                    } else {
                        error
                    }
                })?;
                let word = word.0;
                let value = self.get(&name);
                if self.options.skip_unset && value.is_none() {
                    return Ok(format!("${{{name}{modifier}{word}}}"));
                }
                let unset = value.is_none() || (null_is_unset && value.as_deref() == Some(""));
                match operator {
                    '-' => Ok(if unset {
                        word
                    } else {
                        value.unwrap_or_default()
                    }),
                    '+' => Ok(if unset { String::new() } else { word }),
                    '?' => {
                        let message = match (&value, word.is_empty()) {
                            (_, false) => word,
                            (None, true) => "is not allowed to be unset".to_string(),
                            (Some(_), true) => "is not allowed to be empty".to_string(),
                        };
                        if unset {
                            Err(ExpandErrorKind::Required { name, message })
                        } else {
                            Ok(value.unwrap_or_default())
                        }
                    }
                    '#' | '%' => {
                        let value = value.unwrap_or_default();
                        let (greedy, pattern) = match word.strip_prefix(operator) {
                            Some(rest) => (true, rest),
                            None => (false, word.as_str()),
                        };
                        let pattern = ShellPattern::parse(pattern)?;
                        let text: Vec<char> = value.chars().collect();
                        Ok(if operator == '#' {
                            match pattern.match_prefix(&text, greedy) {
                                Some(n) => text[n..].iter().collect(),
                                None => value,
                            }
                        } else {
                            let reversed: Vec<char> = text.iter().rev().copied().collect();
                            match pattern.reversed().match_prefix(&reversed, greedy) {
                                Some(n) => text[..text.len() - n].iter().collect(),
                                None => value,
                            }
                        })
                    }
                    _ => Err(ExpandErrorKind::UnsupportedModifier { modifier }),
                }
            }
            '/' => {
                let all = self.peek() == Some('/');
                if all {
                    self.next();
                }
                let pattern = self.process_until(Some('/'), true).map_err(|error| {
                    if self.peek().is_none() {
                        ExpandErrorKind::MissingSlash
                    } else {
                        error
                    }
                })?;
                let replacement = self.process_until(Some('}'), true).map_err(|error| {
                    if self.peek().is_none() {
                        ExpandErrorKind::MissingBrace
                    } else {
                        error
                    }
                })?;
                let (pattern, replacement) = (pattern.0, replacement.0);
                let Some(value) = self.get(&name) else {
                    if self.options.skip_unset {
                        return Ok(format!("${{{name}/{pattern}/{replacement}}}"));
                    }
                    return Ok(String::new());
                };
                let compiled = ShellPattern::parse(&pattern)?;
                Ok(compiled.replace(&value, &replacement, all))
            }
            _ => Err(ExpandErrorKind::UnsupportedModifier { modifier }),
        }
    }

    /// A variable name: letters, digits and `_`; or one run of digits (a
    /// positional parameter); or one special parameter (`$@`, `$#`, …).
    fn process_name(&mut self) -> String {
        let mut name = String::new();
        while let Some(c) = self.peek() {
            if name.is_empty() && is_digit(c) {
                while let Some(d) = self.peek().filter(|&d| is_digit(d)) {
                    name.push(d);
                    self.next();
                }
                return name;
            }
            if name.is_empty() && matches!(c, '@' | '*' | '#' | '?' | '-' | '$' | '!' | '0') {
                self.next();
                return c.to_string();
            }
            if !c.is_alphabetic() && !is_digit(c) && c != '_' {
                break;
            }
            name.push(c);
            self.next();
        }
        name
    }
}

/// Go's `unicode.IsDigit` (decimal digits of any script).
fn is_digit(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && c.is_numeric())
}

#[cfg(test)]
#[path = "expand_tests.rs"]
mod tests;
