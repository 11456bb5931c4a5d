//! Builds the syntax tree of a template from its items, following Go's
//! `text/template/parse` grammar and error wording.

use std::fmt;

use super::functions;
use super::lexer::{lex, Item, ItemKind, Keyword};
use super::literal::{parse_go_int, unquote};
use crate::format::gofmt::quote;

/// A parse failure: the line it was found on and Go's description of it.
#[derive(Debug)]
pub(super) struct ParseError {
    pub line: usize,
    pub message: String,
}

type ParseResult<T> = Result<T, ParseError>;

#[derive(Debug)]
pub(super) enum Node {
    Text(String),
    /// `{{pipeline}}`: prints the value unless the pipeline declares variables.
    Action(Pipeline),
    If(Control),
    Range(Control),
    With(Control),
    Break,
    Continue,
}

/// The parts of `{{if}}`, `{{range}}` and `{{with}}`.
#[derive(Debug)]
pub(super) struct Control {
    pub pipeline: Pipeline,
    pub list: Vec<Node>,
    pub else_list: Option<Vec<Node>>,
}

#[derive(Debug)]
pub(super) struct Pipeline {
    pub declarations: Vec<String>,
    /// `$x = …` assigns to existing variables; `$x := …` declares new ones.
    pub is_assign: bool,
    pub commands: Vec<Command>,
}

#[derive(Debug)]
pub(super) struct Command {
    pub position: usize,
    pub args: Vec<Operand>,
}

#[derive(Debug)]
pub(super) struct Operand {
    pub position: usize,
    pub kind: OperandKind,
}

#[derive(Debug)]
pub(super) enum OperandKind {
    /// `.A.B` (never empty; a bare `.` is `Dot`).
    Field(Vec<String>),
    /// `$name.A.B`
    Variable(String, Vec<String>),
    /// Fields of a parenthesised pipeline or other term: `(…).A.B`.
    Chain(Box<Operand>, Vec<String>),
    Function(String),
    Pipeline(Box<Pipeline>),
    Dot,
    Nil,
    Bool(bool),
    Number(Number),
    String {
        quoted: String,
        value: String,
    },
}

/// A numeric constant, with the interpretations Go allows it.
#[derive(Debug)]
pub(super) struct Number {
    pub text: String,
    pub int: Option<i64>,
    pub float: Option<f64>,
    /// Spelled like a float (`1.0`, `2e3`), so Go treats it as `float64` where it is
    /// not required to be an integer.
    pub float_syntax: bool,
}

impl fmt::Display for Operand {
    /// Go's `Node.String`, which execution errors quote.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            OperandKind::Field(names) => names.iter().try_for_each(|name| write!(f, ".{name}")),
            OperandKind::Variable(name, names) => {
                f.write_str(name)?;
                names.iter().try_for_each(|name| write!(f, ".{name}"))
            }
            OperandKind::Chain(inner, names) => {
                if let OperandKind::Pipeline(pipeline) = &inner.kind {
                    write!(f, "({pipeline})")?;
                } else {
                    write!(f, "{inner}")?;
                }
                names.iter().try_for_each(|name| write!(f, ".{name}"))
            }
            OperandKind::Function(name) => f.write_str(name),
            OperandKind::Pipeline(pipeline) => write!(f, "({pipeline})"),
            OperandKind::Dot => f.write_str("."),
            OperandKind::Nil => f.write_str("nil"),
            OperandKind::Bool(value) => write!(f, "{value}"),
            OperandKind::Number(number) => f.write_str(&number.text),
            OperandKind::String { quoted, .. } => f.write_str(quoted),
        }
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, arg) in self.args.iter().enumerate() {
            if index > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{arg}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Pipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.declarations.is_empty() {
            f.write_str(&self.declarations.join(", "))?;
            f.write_str(if self.is_assign { " = " } else { " := " })?;
        }
        for (index, command) in self.commands.iter().enumerate() {
            if index > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{command}")?;
        }
        Ok(())
    }
}

/// What `textOrAction` found: a node, or the `{{end}}` / `{{else}}` closing a list.
enum Parsed {
    Node(Node),
    End,
    Else,
}

struct Parser {
    items: Vec<Item>,
    index: usize,
    /// Line of the item read last, which errors report.
    line: usize,
    /// Variables in scope; `$` always is.
    variables: Vec<String>,
    range_depth: usize,
}

pub(super) fn parse(input: &str) -> ParseResult<Vec<Node>> {
    let mut parser = Parser {
        items: lex(input),
        index: 0,
        line: 1,
        variables: vec!["$".to_owned()],
        range_depth: 0,
    };
    parser.parse_root()
}

impl Parser {
    fn error(&self, message: impl Into<String>) -> ParseError {
        ParseError {
            line: self.line,
            message: message.into(),
        }
    }

    fn unexpected(&self, item: &Item, context: &str) -> ParseError {
        if item.kind == ItemKind::Error {
            self.error(item.text.clone())
        } else {
            self.error(format!("unexpected {item} in {context}"))
        }
    }

    /// The item at `index`; past the end, the final `Eof` or `Error` item repeats.
    fn item(&self, index: usize) -> &Item {
        &self.items[index.min(self.items.len() - 1)]
    }

    fn peek(&self) -> &Item {
        self.item(self.index)
    }

    fn next(&mut self) -> Item {
        let item = self.item(self.index).clone();
        self.index += 1;
        self.line = item.line;
        item
    }

    fn backup(&mut self) {
        self.index -= 1;
    }

    fn next_non_space(&mut self) -> Item {
        loop {
            let item = self.next();
            if item.kind != ItemKind::Space {
                return item;
            }
        }
    }

    /// Skips spaces for good and returns the item after them without consuming it.
    fn peek_non_space(&mut self) -> Item {
        let item = self.next_non_space();
        self.backup();
        item
    }

    fn parse_root(&mut self) -> ParseResult<Vec<Node>> {
        let mut list = Vec::new();
        while self.peek().kind != ItemKind::Eof {
            match self.text_or_action()? {
                Parsed::Node(node) => list.push(node),
                Parsed::End => return Err(self.error("unexpected {{end}}")),
                Parsed::Else => return Err(self.error("unexpected {{else}}")),
            }
        }
        Ok(list)
    }

    fn text_or_action(&mut self) -> ParseResult<Parsed> {
        let item = self.next_non_space();
        match item.kind {
            ItemKind::Text => Ok(Parsed::Node(Node::Text(item.text))),
            ItemKind::LeftDelimiter => self.action(),
            _ => Err(self.unexpected(&item, "input")),
        }
    }

    /// The nodes up to the `{{end}}` or `{{else}}` that closes them.
    fn item_list(&mut self) -> ParseResult<(Vec<Node>, Parsed)> {
        let mut list = Vec::new();
        while self.peek_non_space().kind != ItemKind::Eof {
            match self.text_or_action()? {
                Parsed::Node(node) => list.push(node),
                closing => return Ok((list, closing)),
            }
        }
        Err(self.error("unexpected EOF"))
    }

    fn action(&mut self) -> ParseResult<Parsed> {
        let item = self.next_non_space();
        match item.kind {
            ItemKind::Keyword(Keyword::Block | Keyword::Define | Keyword::Template) => {
                Err(self.error(format!("{{{{{}}}}} is not supported", item.text)))
            }
            ItemKind::Keyword(Keyword::Break) => self.loop_control("{{break}}", Node::Break),
            ItemKind::Keyword(Keyword::Continue) => {
                self.loop_control("{{continue}}", Node::Continue)
            }
            ItemKind::Keyword(Keyword::Else) => {
                // `{{else if …}}` and `{{else with …}}` leave the keyword for the caller.
                let next = self.peek_non_space();
                if !matches!(next.kind, ItemKind::Keyword(Keyword::If | Keyword::With)) {
                    self.expect(ItemKind::RightDelimiter, "else")?;
                }
                Ok(Parsed::Else)
            }
            ItemKind::Keyword(Keyword::End) => {
                self.expect(ItemKind::RightDelimiter, "end")?;
                Ok(Parsed::End)
            }
            ItemKind::Keyword(Keyword::If) => Ok(Parsed::Node(Node::If(self.control("if")?))),
            ItemKind::Keyword(Keyword::Range) => {
                Ok(Parsed::Node(Node::Range(self.control("range")?)))
            }
            ItemKind::Keyword(Keyword::With) => Ok(Parsed::Node(Node::With(self.control("with")?))),
            _ => {
                self.backup();
                // Variables declared here stay in scope until the enclosing {{end}}.
                let pipeline = self.pipeline("command", ItemKind::RightDelimiter)?;
                Ok(Parsed::Node(Node::Action(pipeline)))
            }
        }
    }

    fn expect(&mut self, kind: ItemKind, context: &str) -> ParseResult<Item> {
        let item = self.next_non_space();
        if item.kind != kind {
            return Err(self.unexpected(&item, context));
        }
        Ok(item)
    }

    fn loop_control(&mut self, name: &str, node: Node) -> ParseResult<Parsed> {
        let item = self.next_non_space();
        if item.kind != ItemKind::RightDelimiter {
            return Err(self.unexpected(&item, name));
        }
        if self.range_depth == 0 {
            return Err(self.error(format!("{name} outside {{{{range}}}}")));
        }
        Ok(Parsed::Node(node))
    }

    fn control(&mut self, context: &str) -> ParseResult<Control> {
        let scope = self.variables.len();
        let result = self.control_in_scope(context);
        self.variables.truncate(scope);
        result
    }

    fn control_in_scope(&mut self, context: &str) -> ParseResult<Control> {
        let pipeline = self.pipeline(context, ItemKind::RightDelimiter)?;
        if context == "range" {
            self.range_depth += 1;
        }
        let listed = self.item_list();
        if context == "range" {
            self.range_depth -= 1;
        }
        let (list, closing) = listed?;
        let else_list = match closing {
            Parsed::Else => {
                let chained = match self.peek().kind {
                    ItemKind::Keyword(Keyword::If) if context == "if" => Some(Keyword::If),
                    ItemKind::Keyword(Keyword::With) if context == "with" => Some(Keyword::With),
                    _ => None,
                };
                match chained {
                    // `{{else if b}}…{{end}}` is `{{else}}{{if b}}…{{end}}{{end}}`: the
                    // nested control consumes the one {{end}}.
                    Some(Keyword::If) => {
                        self.next();
                        Some(vec![Node::If(self.control("if")?)])
                    }
                    Some(_) => {
                        self.next();
                        Some(vec![Node::With(self.control("with")?)])
                    }
                    None => {
                        let (else_list, closing) = self.item_list()?;
                        if !matches!(closing, Parsed::End) {
                            return Err(self.error("expected end; found {{else}}"));
                        }
                        Some(else_list)
                    }
                }
            }
            _ => None,
        };
        Ok(Control {
            pipeline,
            list,
            else_list,
        })
    }

    fn pipeline(&mut self, context: &str, end: ItemKind) -> ParseResult<Pipeline> {
        let mut pipeline = Pipeline {
            declarations: Vec::new(),
            is_assign: false,
            commands: Vec::new(),
        };
        self.declarations(&mut pipeline, context)?;
        loop {
            let item = self.next_non_space();
            if item.kind == end {
                self.check_pipeline(&pipeline, context)?;
                return Ok(pipeline);
            }
            match item.kind {
                ItemKind::Bool
                | ItemKind::CharConstant
                | ItemKind::Dot
                | ItemKind::Field
                | ItemKind::Identifier
                | ItemKind::Number
                | ItemKind::Keyword(Keyword::Nil)
                | ItemKind::RawString
                | ItemKind::String
                | ItemKind::Variable
                | ItemKind::LeftParen => {
                    self.backup();
                    let command = self.command()?;
                    pipeline.commands.push(command);
                }
                _ => return Err(self.unexpected(&item, context)),
            }
        }
    }

    /// `$x :=`, `$x =`, or in a range `$i, $x :=`.
    fn declarations(&mut self, pipeline: &mut Pipeline, context: &str) -> ParseResult<()> {
        loop {
            let variable = self.peek_non_space();
            if variable.kind != ItemKind::Variable {
                return Ok(());
            }
            let start = self.index;
            self.next();
            let next = self.peek_non_space();
            match next.kind {
                ItemKind::Assign | ItemKind::Declare => {
                    pipeline.is_assign = next.kind == ItemKind::Assign;
                    self.next_non_space();
                    pipeline.declarations.push(variable.text.clone());
                    self.variables.push(variable.text);
                    return Ok(());
                }
                ItemKind::Char if next.text == "," => {
                    self.next_non_space();
                    pipeline.declarations.push(variable.text.clone());
                    self.variables.push(variable.text);
                    if context == "range" && pipeline.declarations.len() < 2 {
                        match self.peek_non_space().kind {
                            ItemKind::Variable
                            | ItemKind::RightDelimiter
                            | ItemKind::RightParen => continue,
                            _ => return Err(self.error("range can only initialize variables")),
                        }
                    }
                    return Err(self.error(format!("too many declarations in {context}")));
                }
                _ => {
                    // A variable used as an operand, not declared: read it again later.
                    self.index = start;
                    return Ok(());
                }
            }
        }
    }

    fn check_pipeline(&self, pipeline: &Pipeline, context: &str) -> ParseResult<()> {
        if pipeline.commands.is_empty() {
            return Err(self.error(format!("missing value for {context}")));
        }
        for (index, command) in pipeline.commands.iter().enumerate().skip(1) {
            if matches!(
                command.args[0].kind,
                OperandKind::Bool(_)
                    | OperandKind::Dot
                    | OperandKind::Nil
                    | OperandKind::Number(_)
                    | OperandKind::String { .. }
            ) {
                return Err(self.error(format!(
                    "non executable command in pipeline stage {}",
                    index + 1
                )));
            }
        }
        Ok(())
    }

    fn command(&mut self) -> ParseResult<Command> {
        let position = self.peek_non_space().position;
        let mut args = Vec::new();
        loop {
            self.peek_non_space();
            if let Some(operand) = self.operand()? {
                args.push(operand);
            }
            let item = self.next();
            match item.kind {
                ItemKind::Space => continue,
                ItemKind::RightDelimiter | ItemKind::RightParen => self.backup(),
                ItemKind::Pipe => {}
                _ => return Err(self.unexpected(&item, "operand")),
            }
            break;
        }
        if args.is_empty() {
            return Err(self.error("empty command"));
        }
        Ok(Command { position, args })
    }

    fn operand(&mut self) -> ParseResult<Option<Operand>> {
        let Some(term) = self.term()? else {
            return Ok(None);
        };
        if self.peek().kind != ItemKind::Field {
            return Ok(Some(term));
        }
        let position = self.peek().position;
        let mut fields = Vec::new();
        while self.peek().kind == ItemKind::Field {
            fields.push(self.next().text[1..].to_owned());
        }
        let kind = match term.kind {
            OperandKind::Field(mut names) => {
                names.extend(fields);
                OperandKind::Field(names)
            }
            OperandKind::Variable(name, mut names) => {
                names.extend(fields);
                OperandKind::Variable(name, names)
            }
            OperandKind::Bool(_)
            | OperandKind::String { .. }
            | OperandKind::Number(_)
            | OperandKind::Nil
            | OperandKind::Dot => {
                return Err(self.error(format!(
                    "unexpected . after term {}",
                    quote(&term.to_string())
                )));
            }
            _ => OperandKind::Chain(Box::new(term), fields),
        };
        Ok(Some(Operand { position, kind }))
    }

    fn term(&mut self) -> ParseResult<Option<Operand>> {
        let item = self.next_non_space();
        let kind = match item.kind {
            ItemKind::Identifier => {
                if !functions::exists(&item.text) {
                    return Err(self.error(format!("function {} not defined", quote(&item.text))));
                }
                OperandKind::Function(item.text.clone())
            }
            ItemKind::Dot => OperandKind::Dot,
            ItemKind::Keyword(Keyword::Nil) => OperandKind::Nil,
            ItemKind::Variable => {
                if !self.variables.contains(&item.text) {
                    return Err(self.error(format!("undefined variable {}", quote(&item.text))));
                }
                OperandKind::Variable(item.text.clone(), Vec::new())
            }
            ItemKind::Field => OperandKind::Field(vec![item.text[1..].to_owned()]),
            ItemKind::Bool => OperandKind::Bool(item.text == "true"),
            ItemKind::Number => OperandKind::Number(self.number(&item.text)?),
            ItemKind::CharConstant => {
                let value = unquote(&item.text).map_err(|message| self.error(message))?;
                let mut characters = value.chars();
                let code = match (characters.next(), characters.next()) {
                    (Some(character), None) => i64::from(u32::from(character)),
                    _ => return Err(self.error("invalid syntax")),
                };
                OperandKind::Number(Number {
                    text: item.text.clone(),
                    int: Some(code),
                    float: Some(code as f64),
                    float_syntax: false,
                })
            }
            ItemKind::LeftParen => OperandKind::Pipeline(Box::new(
                self.pipeline("parenthesized pipeline", ItemKind::RightParen)?,
            )),
            ItemKind::String | ItemKind::RawString => {
                let value = unquote(&item.text).map_err(|message| self.error(message))?;
                OperandKind::String {
                    quoted: item.text.clone(),
                    value,
                }
            }
            _ => {
                self.backup();
                return Ok(None);
            }
        };
        Ok(Some(Operand {
            position: item.position,
            kind,
        }))
    }

    /// Go's `newNumber` for integer and float constants.
    fn number(&self, text: &str) -> ParseResult<Number> {
        let illegal = || self.error(format!("illegal number syntax: {}", quote(text)));
        let int = parse_go_int(text);
        let hex = text
            .trim_start_matches(['+', '-'])
            .to_ascii_lowercase()
            .starts_with("0x");
        let float_syntax = !hex && text.contains(['.', 'e', 'E']);
        if let Some(int) = int {
            return Ok(Number {
                text: text.to_owned(),
                int: Some(int),
                float: Some(int as f64),
                float_syntax,
            });
        }
        if hex {
            return Err(illegal());
        }
        let cleaned: String = text.chars().filter(|&c| c != '_').collect();
        let float: f64 = cleaned.parse().map_err(|_| illegal())?;
        if !float_syntax {
            return Err(self.error(format!("integer overflow: {}", quote(text))));
        }
        let int = (float.fract() == 0.0 && float.abs() < 9.2e18).then_some(float as i64);
        Ok(Number {
            text: text.to_owned(),
            int,
            float: Some(float),
            float_syntax,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(input: &str) -> String {
        let error = parse(input).expect_err(input);
        format!("{}: {}", error.line, error.message)
    }

    #[test]
    fn reports_errors_as_go_does() {
        let cases: &[(&str, &str)] = &[
            ("{{.Foo }", "1: unexpected \"}\" in operand"),
            ("{{.Foo}", "1: bad character U+007D '}'"),
            ("{{.Foo", "1: unclosed action"),
            ("{{}}", "1: missing value for command"),
            ("{{if}}{{end}}", "1: missing value for if"),
            ("{{end}}", "1: unexpected {{end}}"),
            ("{{else}}", "1: unexpected {{else}}"),
            ("{{if .A}}", "1: unexpected EOF"),
            ("a\n{{range .A}}\n", "3: unexpected EOF"),
            ("{{nope .A}}", "1: function \"nope\" not defined"),
            ("{{$x}}", "1: undefined variable \"$x\""),
            ("{{break}}", "1: {{break}} outside {{range}}"),
            (
                "{{.A | \"x\"}}",
                "1: non executable command in pipeline stage 2",
            ),
            ("{{\"x\".A}}", "1: unexpected . after term \"\\\"x\\\"\""),
            ("{{template \"x\"}}", "1: {{template}} is not supported"),
            (
                "{{if .A}}{{else}}{{else}}{{end}}",
                "1: expected end; found {{else}}",
            ),
            ("{{$a, $b := .X}}", "1: too many declarations in command"),
            ("{{\"\\q\"}}", "1: invalid syntax"),
            (
                "{{99999999999999999999}}",
                "1: integer overflow: \"99999999999999999999\"",
            ),
            ("{{end a}}", "1: unexpected \"a\" in end"),
            ("{{ | x}}", "1: unexpected \"|\" in command"),
        ];
        for (input, expected) in cases {
            assert_eq!(error(input), *expected, "template {input:?}");
        }
    }

    #[test]
    fn displays_nodes_like_go() {
        let nodes = parse("{{$v := index .M \"k\" | printf \"%s\" }}{{(.A).B}}").unwrap();
        let Node::Action(pipeline) = &nodes[0] else {
            panic!("expected an action")
        };
        assert_eq!(pipeline.to_string(), "$v := index .M \"k\" | printf \"%s\"");
        let Node::Action(pipeline) = &nodes[1] else {
            panic!("expected an action")
        };
        assert_eq!(pipeline.to_string(), "(.A).B");
    }

    #[test]
    fn numbers_follow_go_rules() {
        let number = |text: &str| {
            let nodes = parse(&format!("{{{{{text}}}}}")).unwrap();
            let Node::Action(pipeline) = &nodes[0] else {
                panic!("expected an action")
            };
            match &pipeline.commands[0].args[0].kind {
                OperandKind::Number(number) => (number.int, number.float, number.float_syntax),
                other => panic!("not a number: {other:?}"),
            }
        };
        assert_eq!(number("42"), (Some(42), Some(42.0), false));
        assert_eq!(number("-7"), (Some(-7), Some(-7.0), false));
        assert_eq!(number("0x1F"), (Some(31), Some(31.0), false));
        assert_eq!(number("010"), (Some(8), Some(8.0), false));
        assert_eq!(number("1.0"), (Some(1), Some(1.0), true));
        assert_eq!(number("2.5"), (None, Some(2.5), true));
        assert_eq!(number("1e3"), (Some(1000), Some(1000.0), true));
        assert_eq!(number("'a'"), (Some(97), Some(97.0), false));
    }
}
