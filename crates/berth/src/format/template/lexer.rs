//! Splits a template into items the way Go's `text/template/parse` lexer does.
//!
//! Lexing runs ahead of parsing here (Go interleaves them), so a lexical error becomes
//! an [`ItemKind::Error`] item at the point where it occurred; the parser reports it
//! only if no earlier item was already wrong, exactly the order Go reports them in.

use std::fmt;

const LEFT_DELIMITER: &str = "{{";
const RIGHT_DELIMITER: &str = "}}";
const LEFT_COMMENT: &str = "/*";
const RIGHT_COMMENT: &str = "*/";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keyword {
    Block,
    Break,
    Continue,
    Define,
    Else,
    End,
    If,
    Nil,
    Range,
    Template,
    With,
}

impl Keyword {
    fn from_word(word: &str) -> Option<Keyword> {
        Some(match word {
            "block" => Keyword::Block,
            "break" => Keyword::Break,
            "continue" => Keyword::Continue,
            "define" => Keyword::Define,
            "else" => Keyword::Else,
            "end" => Keyword::End,
            "if" => Keyword::If,
            "nil" => Keyword::Nil,
            "range" => Keyword::Range,
            "template" => Keyword::Template,
            "with" => Keyword::With,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum ItemKind {
    /// Plain text outside actions.
    Text,
    LeftDelimiter,
    RightDelimiter,
    /// A run of spaces inside an action (spaces separate arguments).
    Space,
    /// `.Name`
    Field,
    /// `$` or `$name`
    Variable,
    /// A function name.
    Identifier,
    /// `.` alone.
    Dot,
    Bool,
    Number,
    CharConstant,
    /// A double-quoted string, quotes included.
    String,
    /// A back-quoted string, quotes included.
    RawString,
    Pipe,
    /// `=`
    Assign,
    /// `:=`
    Declare,
    LeftParen,
    RightParen,
    /// Any other printable ASCII character, such as `,`.
    Char,
    Keyword(Keyword),
    /// A lexical error; the text is the message.
    Error,
    Eof,
}

#[derive(Debug, Clone)]
pub(super) struct Item {
    pub kind: ItemKind,
    pub text: String,
    /// Byte offset in the template.
    pub position: usize,
    /// 1-based line the item starts on.
    pub line: usize,
}

impl fmt::Display for Item {
    /// As Go's `item.String`, which parse errors quote.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ItemKind::Eof => f.write_str("EOF"),
            ItemKind::Error => f.write_str(&self.text),
            ItemKind::Keyword(_) => write!(f, "<{}>", self.text),
            _ if self.text.chars().count() > 10 => {
                let head: String = self.text.chars().take(10).collect();
                write!(f, "{}...", super::super::gofmt::quote(&head))
            }
            _ => f.write_str(&super::super::gofmt::quote(&self.text)),
        }
    }
}

/// Go's `isSpace`: the characters that separate arguments and that trim markers remove.
fn is_space(character: char) -> bool {
    matches!(character, ' ' | '\t' | '\r' | '\n')
}

/// Go's `isAlphaNumeric`.
pub(super) fn is_alphanumeric(character: char) -> bool {
    character == '_' || character.is_alphabetic() || character.is_numeric()
}

/// `%#U` as Go formats a rune: `U+007D '}'`.
fn describe(character: char) -> String {
    format!("U+{:04X} '{character}'", u32::from(character))
}

struct Lexer<'a> {
    input: &'a str,
    /// Start of the item being scanned.
    start: usize,
    position: usize,
    /// Line of `start`.
    line: usize,
    paren_depth: usize,
    items: Vec<Item>,
}

pub(super) fn lex(input: &str) -> Vec<Item> {
    let mut lexer = Lexer {
        input,
        start: 0,
        position: 0,
        line: 1,
        paren_depth: 0,
        items: Vec::new(),
    };
    lexer.run();
    lexer.items
}

impl Lexer<'_> {
    fn rest(&self) -> &str {
        &self.input[self.position..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn next_character(&mut self) -> Option<char> {
        let character = self.peek()?;
        self.position += character.len_utf8();
        Some(character)
    }

    fn accept(&mut self, valid: &str) -> bool {
        match self.peek() {
            Some(character) if valid.contains(character) => {
                self.position += character.len_utf8();
                true
            }
            _ => false,
        }
    }

    fn accept_run(&mut self, valid: &str) {
        while self.accept(valid) {}
    }

    /// Drops the text scanned so far without making an item of it.
    fn ignore(&mut self) {
        self.line += self.input[self.start..self.position].matches('\n').count();
        self.start = self.position;
    }

    fn emit(&mut self, kind: ItemKind) {
        self.items.push(Item {
            kind,
            text: self.input[self.start..self.position].to_owned(),
            position: self.start,
            line: self.line,
        });
        self.ignore();
    }

    fn error(&mut self, message: String) {
        self.items.push(Item {
            kind: ItemKind::Error,
            text: message,
            position: self.start,
            line: self.line,
        });
    }

    fn run(&mut self) {
        while self.lex_text() {
            if !self.lex_action() {
                return;
            }
        }
    }

    /// Scans text up to the next action; false at the end of input.
    fn lex_text(&mut self) -> bool {
        let Some(offset) = self.rest().find(LEFT_DELIMITER) else {
            self.position = self.input.len();
            if self.position > self.start {
                self.emit(ItemKind::Text);
            }
            self.emit(ItemKind::Eof);
            return false;
        };
        self.position += offset;
        let after_delimiter = &self.input[self.position + LEFT_DELIMITER.len()..];
        let trimmed = if has_left_trim_marker(after_delimiter) {
            self.input[self.start..self.position]
                .trim_end_matches(is_space)
                .len()
                + self.start
        } else {
            self.position
        };
        if trimmed > self.start {
            let end = self.position;
            self.position = trimmed;
            self.emit(ItemKind::Text);
            self.position = end;
        }
        self.ignore();
        true
    }

    /// Scans one action (or comment) starting at its left delimiter; false on error.
    fn lex_action(&mut self) -> bool {
        self.position += LEFT_DELIMITER.len();
        let trim = has_left_trim_marker(self.rest());
        let after_marker = if trim { 2 } else { 0 };
        if self.input[self.position + after_marker..].starts_with(LEFT_COMMENT) {
            self.position += after_marker;
            self.ignore();
            return self.lex_comment();
        }
        self.emit(ItemKind::LeftDelimiter);
        self.position += after_marker;
        self.ignore();
        self.paren_depth = 0;
        loop {
            if let Some(trim) = self.at_right_delimiter() {
                if self.paren_depth > 0 {
                    self.error("unclosed left paren".to_owned());
                    return false;
                }
                self.lex_right_delimiter(trim);
                return true;
            }
            if !self.lex_inside_action() {
                return false;
            }
        }
    }

    fn lex_comment(&mut self) -> bool {
        self.position += LEFT_COMMENT.len();
        let Some(offset) = self.rest().find(RIGHT_COMMENT) else {
            self.error("unclosed comment".to_owned());
            return false;
        };
        self.position += offset + RIGHT_COMMENT.len();
        let Some(trim) = self.at_right_delimiter() else {
            self.error("comment ends before closing delimiter".to_owned());
            return false;
        };
        if trim {
            self.position += 2;
        }
        self.position += RIGHT_DELIMITER.len();
        if trim {
            self.skip_leading_space();
        }
        self.ignore();
        true
    }

    /// `Some(trim)` when a right delimiter, with or without a trim marker, starts here.
    fn at_right_delimiter(&self) -> Option<bool> {
        let rest = self.rest();
        if has_right_trim_marker(rest) && rest[2..].starts_with(RIGHT_DELIMITER) {
            Some(true)
        } else if rest.starts_with(RIGHT_DELIMITER) {
            Some(false)
        } else {
            None
        }
    }

    fn lex_right_delimiter(&mut self, trim: bool) {
        if trim {
            self.position += 2;
            self.ignore();
        }
        self.position += RIGHT_DELIMITER.len();
        self.emit(ItemKind::RightDelimiter);
        if trim {
            self.skip_leading_space();
            self.ignore();
        }
    }

    fn skip_leading_space(&mut self) {
        let rest = self.rest();
        self.position += rest.len() - rest.trim_start_matches(is_space).len();
    }

    /// Scans one item inside an action; false on error.
    fn lex_inside_action(&mut self) -> bool {
        let Some(character) = self.next_character() else {
            self.error("unclosed action".to_owned());
            return false;
        };
        match character {
            c if is_space(c) => {
                self.position -= c.len_utf8();
                self.lex_space();
            }
            '=' => self.emit(ItemKind::Assign),
            ':' => {
                if self.next_character() != Some('=') {
                    self.error("expected :=".to_owned());
                    return false;
                }
                self.emit(ItemKind::Declare);
            }
            '|' => self.emit(ItemKind::Pipe),
            '"' => return self.lex_quote(),
            '`' => return self.lex_raw_quote(),
            '$' => return self.lex_field_or_variable(ItemKind::Variable),
            '\'' => return self.lex_char(),
            // A dot followed by a digit starts a number such as `.5`; Go also lexes a
            // dot at the very end of the input as a (malformed) number.
            '.' if self.peek().is_some_and(|c| !c.is_ascii_digit()) => {
                return self.lex_field_or_variable(ItemKind::Field);
            }
            '.' | '+' | '-' | '0'..='9' => {
                self.position -= 1;
                return self.lex_number();
            }
            c if is_alphanumeric(c) => {
                self.position -= c.len_utf8();
                return self.lex_identifier();
            }
            '(' => {
                self.paren_depth += 1;
                self.emit(ItemKind::LeftParen);
            }
            ')' => {
                if self.paren_depth == 0 {
                    self.error("unexpected right paren".to_owned());
                    return false;
                }
                self.paren_depth -= 1;
                self.emit(ItemKind::RightParen);
            }
            c if c.is_ascii_graphic() || c == ' ' => self.emit(ItemKind::Char),
            c => {
                self.error(format!("unrecognized character in action: {}", describe(c)));
                return false;
            }
        }
        true
    }

    fn lex_space(&mut self) {
        let mut spaces = 0;
        while self.peek().is_some_and(is_space) {
            self.position += 1;
            spaces += 1;
        }
        // A space that starts a " -}}" belongs to the trim marker, not to this run.
        let before = &self.input[self.position - 1..];
        if has_right_trim_marker(before) && before[2..].starts_with(RIGHT_DELIMITER) {
            self.position -= 1;
            if spaces == 1 {
                return;
            }
        }
        self.emit(ItemKind::Space);
    }

    fn lex_quote(&mut self) -> bool {
        loop {
            match self.next_character() {
                Some('\\') => match self.next_character() {
                    Some('\n') | None => {
                        self.error("unterminated quoted string".to_owned());
                        return false;
                    }
                    Some(_) => {}
                },
                Some('\n') | None => {
                    self.error("unterminated quoted string".to_owned());
                    return false;
                }
                Some('"') => break,
                Some(_) => {}
            }
        }
        self.emit(ItemKind::String);
        true
    }

    fn lex_raw_quote(&mut self) -> bool {
        let Some(offset) = self.rest().find('`') else {
            self.error("unterminated raw quoted string".to_owned());
            return false;
        };
        self.position += offset + 1;
        self.emit(ItemKind::RawString);
        true
    }

    fn lex_char(&mut self) -> bool {
        loop {
            match self.next_character() {
                Some('\\') => match self.next_character() {
                    Some('\n') | None => {
                        self.error("unterminated character constant".to_owned());
                        return false;
                    }
                    Some(_) => {}
                },
                Some('\n') | None => {
                    self.error("unterminated character constant".to_owned());
                    return false;
                }
                Some('\'') => break,
                Some(_) => {}
            }
        }
        self.emit(ItemKind::CharConstant);
        true
    }

    /// After `.` or `$`: a field or variable name, or the bare `.` / `$`.
    fn lex_field_or_variable(&mut self, kind: ItemKind) -> bool {
        if self.at_terminator() {
            let kind = if kind == ItemKind::Variable {
                ItemKind::Variable
            } else {
                ItemKind::Dot
            };
            self.emit(kind);
            return true;
        }
        while self.peek().is_some_and(is_alphanumeric) {
            self.next_character();
        }
        if !self.at_terminator() {
            let bad = self.peek().unwrap_or('\u{fffd}');
            self.error(format!("bad character {}", describe(bad)));
            return false;
        }
        self.emit(kind);
        true
    }

    fn lex_identifier(&mut self) -> bool {
        while self.peek().is_some_and(is_alphanumeric) {
            self.next_character();
        }
        if !self.at_terminator() {
            let bad = self.peek().unwrap_or('\u{fffd}');
            self.error(format!("bad character {}", describe(bad)));
            return false;
        }
        let word = &self.input[self.start..self.position];
        let kind = match Keyword::from_word(word) {
            Some(keyword) => ItemKind::Keyword(keyword),
            None if word == "true" || word == "false" => ItemKind::Bool,
            None => ItemKind::Identifier,
        };
        self.emit(kind);
        true
    }

    fn lex_number(&mut self) -> bool {
        self.accept("+-");
        let mut digits = "0123456789_";
        let mut decimal = true;
        if self.accept("0") {
            if self.accept("xX") {
                digits = "0123456789abcdefABCDEF_";
                decimal = false;
            } else if self.accept("oO") {
                digits = "01234567_";
                decimal = false;
            } else if self.accept("bB") {
                digits = "01_";
                decimal = false;
            }
        }
        self.accept_run(digits);
        if self.accept(".") {
            self.accept_run(digits);
        }
        if decimal && self.accept("eE") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        if self.peek().is_some_and(is_alphanumeric) {
            self.next_character();
            let text = self.input[self.start..self.position].to_owned();
            self.error(format!(
                "bad number syntax: {}",
                super::super::gofmt::quote(&text)
            ));
            return false;
        }
        self.emit(ItemKind::Number);
        true
    }

    /// Go's `atTerminator`: whether the next character may follow a word.
    fn at_terminator(&self) -> bool {
        match self.peek() {
            None => true,
            Some(c) if is_space(c) => true,
            Some('.' | ',' | '|' | ':' | ')' | '(') => true,
            Some(_) => self.rest().starts_with(RIGHT_DELIMITER),
        }
    }
}

/// `{{- `: a dash followed by a space trims the text before the action.
fn has_left_trim_marker(text: &str) -> bool {
    let mut characters = text.chars();
    characters.next() == Some('-') && characters.next().is_some_and(is_space)
}

/// ` -}}`: a space followed by a dash trims the text after the action.
fn has_right_trim_marker(text: &str) -> bool {
    let mut characters = text.chars();
    characters.next().is_some_and(is_space) && characters.next() == Some('-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(input: &str) -> Vec<(ItemKind, String)> {
        lex(input)
            .into_iter()
            .map(|item| (item.kind, item.text))
            .collect()
    }

    #[test]
    fn splits_text_and_actions() {
        use ItemKind::*;
        assert_eq!(
            kinds("a {{.Foo.Bar | json}}b"),
            vec![
                (Text, "a ".into()),
                (LeftDelimiter, "{{".into()),
                (Field, ".Foo".into()),
                (Field, ".Bar".into()),
                (Space, " ".into()),
                (Pipe, "|".into()),
                (Space, " ".into()),
                (Identifier, "json".into()),
                (RightDelimiter, "}}".into()),
                (Text, "b".into()),
                (Eof, "".into()),
            ]
        );
    }

    #[test]
    fn trim_markers_remove_surrounding_space() {
        use ItemKind::*;
        assert_eq!(
            kinds("a \n {{- . -}} \n b"),
            vec![
                (Text, "a".into()),
                (LeftDelimiter, "{{".into()),
                (Dot, ".".into()),
                (RightDelimiter, "}}".into()),
                (Text, "b".into()),
                (Eof, "".into()),
            ]
        );
        // Without a space after the dash it is a negative number, not a marker.
        assert_eq!(kinds("{{-3}}")[1], (Number, "-3".into()));
    }

    #[test]
    fn comments_vanish() {
        use ItemKind::*;
        assert_eq!(
            kinds("x {{- /* note */ -}} y"),
            vec![(Text, "x".into()), (Text, "y".into()), (Eof, "".into())]
        );
    }

    #[test]
    fn lexical_errors_become_error_items() {
        let last = |input: &str| lex(input).pop().unwrap();
        assert_eq!(last("{{.Foo").text, "unclosed action");
        assert_eq!(last("{{.Foo}").text, "bad character U+007D '}'");
        assert_eq!(last("{{\"abc}}").text, "unterminated quoted string");
        assert_eq!(last("{{(.A}}").text, "unclosed left paren");
        assert_eq!(last("{{.A)}}").text, "unexpected right paren");
        assert_eq!(last("{{3x}}").text, "bad number syntax: \"3x\"");
        assert_eq!(last("{{/* x }}").text, "unclosed comment");
    }

    #[test]
    fn items_know_their_line() {
        let items = lex("a\nb{{.X}}\n{{.Y}}");
        let field = items.iter().find(|i| i.text == ".Y").unwrap();
        assert_eq!(field.line, 3);
    }
}
