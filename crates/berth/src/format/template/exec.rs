//! Runs a parsed template over a JSON value, following Go's `text/template/exec.go`:
//! what `.Field` yields for each kind of value, Go truthiness, variable scopes, and the
//! wording of execution errors.

use serde_json::Value;

use super::functions::{self, go_type, truth, FunctionError, Val};
use super::parser::{Command, Control, Node, Operand, OperandKind, Pipeline};
use super::{Method, RenderOptions};
use crate::format::gofmt::sprint;

/// An execution failure: where (byte offset and Go's text of the node) and why.
#[derive(Debug)]
pub(super) struct ExecError {
    pub position: usize,
    pub node: String,
    pub message: String,
}

type ExecResult<T> = Result<T, ExecError>;

/// How a list of nodes finished: normally, or by `{{break}}` / `{{continue}}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Normal,
    Break,
    Continue,
}

pub(super) struct State<'a> {
    options: &'a RenderOptions<'a>,
    /// Variables in scope, innermost last; `$` (the data) is always first.
    variables: Vec<(String, Val)>,
    pub output: String,
}

impl<'a> State<'a> {
    pub fn new(data: &Value, options: &'a RenderOptions<'a>) -> State<'a> {
        State {
            options,
            variables: vec![("$".to_owned(), Val::Json(data.clone()))],
            output: String::new(),
        }
    }

    pub fn run(&mut self, data: &Value, nodes: &[Node]) -> ExecResult<()> {
        self.walk_list(&Val::Json(data.clone()), nodes).map(|_| ())
    }

    fn walk_list(&mut self, dot: &Val, nodes: &[Node]) -> ExecResult<Flow> {
        for node in nodes {
            let flow = self.walk(dot, node)?;
            if flow != Flow::Normal {
                return Ok(flow);
            }
        }
        Ok(Flow::Normal)
    }

    fn walk(&mut self, dot: &Val, node: &Node) -> ExecResult<Flow> {
        match node {
            Node::Text(text) => self.output.push_str(text),
            Node::Action(pipeline) => {
                let value = self.eval_pipeline(dot, pipeline)?;
                if pipeline.declarations.is_empty() {
                    self.print(&value);
                }
            }
            Node::If(control) => return self.walk_if_or_with(dot, control, false),
            Node::With(control) => return self.walk_if_or_with(dot, control, true),
            Node::Range(control) => return self.walk_range(dot, control),
            Node::Break => return Ok(Flow::Break),
            Node::Continue => return Ok(Flow::Continue),
        }
        Ok(Flow::Normal)
    }

    fn print(&mut self, value: &Val) {
        match value {
            // Go prints an absent map entry this way.
            Val::Missing => self.output.push_str("<no value>"),
            Val::Json(value) => self.output.push_str(&sprint(value)),
        }
    }

    fn walk_if_or_with(&mut self, dot: &Val, control: &Control, with: bool) -> ExecResult<Flow> {
        let mark = self.variables.len();
        let value = self.eval_pipeline(dot, &control.pipeline)?;
        let flow = if truth(&value) {
            let dot = if with { &value } else { dot };
            self.walk_list(dot, &control.list)?
        } else if let Some(else_list) = &control.else_list {
            self.walk_list(dot, else_list)?
        } else {
            Flow::Normal
        };
        self.variables.truncate(mark);
        Ok(flow)
    }

    fn walk_range(&mut self, dot: &Val, control: &Control) -> ExecResult<Flow> {
        let mark = self.variables.len();
        let value = self.eval_pipeline(dot, &control.pipeline)?;
        let body_mark = self.variables.len();
        let pairs: Vec<(Value, Value)> = match &value {
            Val::Json(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(index, item)| (Value::from(index), item.clone()))
                .collect(),
            Val::Json(Value::Object(map)) => {
                // Go ranges over maps in sorted key order.
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                entries
                    .into_iter()
                    .map(|(key, item)| (Value::from(key.as_str()), item.clone()))
                    .collect()
            }
            Val::Json(Value::Number(number)) if number.as_i64().is_some() => {
                if control.pipeline.declarations.len() > 1 {
                    return Err(self.error_at_pipeline(
                        &control.pipeline,
                        format!("can't use {number} to iterate over more than one variable"),
                    ));
                }
                let count = number.as_i64().expect("checked to be an integer").max(0);
                (0..count)
                    .map(|i| (Value::from(i), Value::from(i)))
                    .collect()
            }
            // Absent and null collections (Go's nil maps and slices) have no elements.
            Val::Missing | Val::Json(Value::Null) => Vec::new(),
            Val::Json(other) => {
                return Err(self.error_at_pipeline(
                    &control.pipeline,
                    format!("range can't iterate over {}", sprint(other)),
                ));
            }
        };
        if pairs.is_empty() {
            self.variables.truncate(mark);
            return match &control.else_list {
                Some(else_list) => {
                    let flow = self.walk_list(dot, else_list)?;
                    self.variables.truncate(mark);
                    Ok(flow)
                }
                None => Ok(Flow::Normal),
            };
        }
        let declarations = &control.pipeline.declarations;
        for (key, element) in pairs {
            let (key, element) = (Val::Json(key), Val::Json(element));
            if control.pipeline.is_assign {
                match declarations.as_slice() {
                    [only] => self.set_variable(only, element.clone()),
                    [first, second, ..] => {
                        self.set_variable(first, key);
                        self.set_variable(second, element.clone());
                    }
                    [] => {}
                }
            } else {
                // The declared variables are the newest ones: element on top, key below.
                let top = body_mark;
                match declarations.len() {
                    1 => self.variables[top - 1].1 = element.clone(),
                    2 => {
                        self.variables[top - 1].1 = element.clone();
                        self.variables[top - 2].1 = key;
                    }
                    _ => {}
                }
            }
            let flow = self.walk_list(&element, &control.list)?;
            self.variables.truncate(body_mark);
            if flow == Flow::Break {
                break;
            }
        }
        self.variables.truncate(mark);
        Ok(Flow::Normal)
    }

    fn error_at_pipeline(&self, pipeline: &Pipeline, message: String) -> ExecError {
        let position = pipeline
            .commands
            .first()
            .map_or(0, |command| command.position);
        ExecError {
            position,
            node: pipeline.to_string(),
            message,
        }
    }

    fn variable(&self, name: &str) -> Val {
        self.variables
            .iter()
            .rev()
            .find(|(variable, _)| variable == name)
            .map(|(_, value)| value.clone())
            // The parser rejects undeclared variables, so this is unreachable.
            .unwrap_or(Val::Missing)
    }

    fn set_variable(&mut self, name: &str, value: Val) {
        if let Some(slot) = self
            .variables
            .iter_mut()
            .rev()
            .find(|(variable, _)| variable == name)
        {
            slot.1 = value;
        }
    }

    fn eval_pipeline(&mut self, dot: &Val, pipeline: &Pipeline) -> ExecResult<Val> {
        let mut value = None;
        for command in &pipeline.commands {
            value = Some(self.eval_command(dot, command, value)?);
        }
        let value = value.expect("the parser rejects empty pipelines");
        for name in &pipeline.declarations {
            if pipeline.is_assign {
                self.set_variable(name, value.clone());
            } else {
                self.variables.push((name.clone(), value.clone()));
            }
        }
        Ok(value)
    }

    /// Evaluates one command; `last` is the previous command's value, which Go passes as
    /// the final argument.
    fn eval_command(&mut self, dot: &Val, command: &Command, last: Option<Val>) -> ExecResult<Val> {
        let first = &command.args[0];
        let rest = &command.args[1..];
        match &first.kind {
            OperandKind::Field(names) => {
                self.eval_field_chain(dot, dot.clone(), names, first, rest, last)
            }
            OperandKind::Chain(inner, names) => {
                if matches!(inner.kind, OperandKind::Nil) {
                    return Err(error_at(
                        first,
                        format!("indirection through explicit nil in {first}"),
                    ));
                }
                let receiver = self.eval_arg(dot, inner)?;
                self.eval_field_chain(dot, receiver, names, first, rest, last)
            }
            OperandKind::Function(name) => {
                self.eval_function(dot, name, first, rest, last, Some(command))
            }
            OperandKind::Variable(name, names) => {
                let value = self.variable(name);
                if names.is_empty() {
                    not_a_function(first, rest, &last)?;
                    return Ok(value);
                }
                self.eval_field_chain(dot, value, names, first, rest, last)
            }
            OperandKind::Pipeline(pipeline) => {
                not_a_function(first, rest, &last)?;
                self.eval_pipeline(dot, pipeline)
            }
            OperandKind::Nil => Err(error_at(first, "nil is not a command".to_owned())),
            _ => {
                not_a_function(first, rest, &last)?;
                self.eval_arg(dot, first)
            }
        }
    }

    /// The value of an operand used as an argument.
    fn eval_arg(&mut self, dot: &Val, operand: &Operand) -> ExecResult<Val> {
        Ok(match &operand.kind {
            OperandKind::Dot => dot.clone(),
            OperandKind::Nil => Val::Json(Value::Null),
            OperandKind::Bool(value) => Val::Json(Value::Bool(*value)),
            OperandKind::String { value, .. } => Val::Json(Value::String(value.clone())),
            OperandKind::Number(number) => {
                let value = match (number.float_syntax, number.int, number.float) {
                    (false, Some(int), _) => Value::from(int),
                    (_, _, Some(float)) => serde_json::Number::from_f64(float)
                        .map(Value::Number)
                        .unwrap_or(Value::Null),
                    (_, Some(int), None) => Value::from(int),
                    (_, None, None) => Value::Null,
                };
                Val::Json(value)
            }
            OperandKind::Field(names) => {
                self.eval_field_chain(dot, dot.clone(), names, operand, &[], None)?
            }
            OperandKind::Variable(name, names) => {
                let value = self.variable(name);
                if names.is_empty() {
                    value
                } else {
                    self.eval_field_chain(dot, value, names, operand, &[], None)?
                }
            }
            OperandKind::Chain(inner, names) => {
                if matches!(inner.kind, OperandKind::Nil) {
                    return Err(error_at(
                        operand,
                        format!("indirection through explicit nil in {operand}"),
                    ));
                }
                let receiver = self.eval_arg(dot, inner)?;
                self.eval_field_chain(dot, receiver, names, operand, &[], None)?
            }
            OperandKind::Pipeline(pipeline) => self.eval_pipeline(dot, pipeline)?,
            OperandKind::Function(name) => {
                self.eval_function(dot, name, operand, &[], None, None)?
            }
        })
    }

    /// `.A.B.C`: every name but the last is a plain lookup; the last may take arguments
    /// (a method call) when methods are registered.
    fn eval_field_chain(
        &mut self,
        dot: &Val,
        receiver: Val,
        names: &[String],
        node: &Operand,
        args: &[Operand],
        last: Option<Val>,
    ) -> ExecResult<Val> {
        let (final_name, leading) = names.split_last().expect("a field chain has a name");
        let mut receiver = receiver;
        for name in leading {
            receiver = self.eval_field(dot, name, node, &[], None, receiver)?;
        }
        self.eval_field(dot, final_name, node, args, last, receiver)
    }

    fn eval_field(
        &mut self,
        dot: &Val,
        name: &str,
        node: &Operand,
        args: &[Operand],
        last: Option<Val>,
        receiver: Val,
    ) -> ExecResult<Val> {
        let has_args = !args.is_empty() || last.is_some();
        let map = match &receiver {
            // Go yields "no value" for anything looked up in an absent map entry.
            Val::Missing => return Ok(Val::Missing),
            Val::Json(Value::Object(map)) => map,
            Val::Json(Value::Null) => {
                return Err(error_at(
                    node,
                    format!("nil pointer evaluating interface {{}}.{name}"),
                ));
            }
            Val::Json(other) => {
                return Err(error_at(
                    node,
                    format!("can't evaluate field {name} in type {}", go_type(other)),
                ));
            }
        };
        // Go resolves methods before map keys.
        let method = self.find_method(name);
        if method.is_some() || (self.options.header && has_args && !map.contains_key(name)) {
            let mut values = Vec::with_capacity(args.len() + 1);
            for arg in args {
                values.push(self.eval_arg(dot, arg)?.into_json());
            }
            if let Some(last) = last {
                values.push(last.into_json());
            }
            let receiver_value = receiver.into_json();
            let result = match method {
                Some(method) => method(&receiver_value, &values),
                None => Ok(header_label(&values)),
            };
            return result
                .map(Val::Json)
                .map_err(|message| error_at(node, format!("error calling {name}: {message}")));
        }
        if has_args {
            return Err(error_at(
                node,
                format!("{name} is not a method but has arguments"),
            ));
        }
        match map.get(name) {
            Some(value) => Ok(Val::Json(value.clone())),
            None if self.options.missing_key_error => {
                Err(error_at(node, format!("map has no entry for key {name:?}")))
            }
            None => Ok(Val::Missing),
        }
    }

    fn find_method(&self, name: &str) -> Option<Method> {
        self.options
            .methods
            .iter()
            .find(|(method, _)| *method == name)
            .map(|(_, method)| *method)
    }

    fn eval_function(
        &mut self,
        dot: &Val,
        name: &str,
        identifier: &Operand,
        args: &[Operand],
        last: Option<Val>,
        command: Option<&Command>,
    ) -> ExecResult<Val> {
        // Errors in a call name the whole command, or the function alone when it was
        // used as an argument without one.
        let whole = |message: String| match command {
            Some(command) => command_error(command, message),
            None => error_at(identifier, message),
        };
        if name == "and" || name == "or" {
            // These stop at the first argument that decides the result (Go 1.18+), so
            // `and .A .A.B` is safe when .A is nil.
            if args.is_empty() && last.is_none() {
                return Err(error_at(
                    identifier,
                    format!("wrong number of args for {name}: want at least 1 got 0"),
                ));
            }
            let want = name == "or";
            let mut value = Val::Missing;
            for arg in args {
                value = self.eval_arg(dot, arg)?;
                if truth(&value) == want {
                    return Ok(value);
                }
            }
            if let Some(last) = last {
                value = last;
            }
            return Ok(value);
        }
        let mut values = Vec::with_capacity(args.len() + 1);
        for arg in args {
            values.push(self.eval_arg(dot, arg)?);
        }
        if let Some(last) = last {
            values.push(last);
        }
        functions::call(name, values, self.options.header).map_err(|error| match error {
            FunctionError::Arity(message) => error_at(identifier, message),
            FunctionError::Argument { index, message } => match args.get(index) {
                Some(arg) => error_at(arg, message),
                None => whole(message),
            },
            FunctionError::Call(message) => whole(format!("error calling {name}: {message}")),
        })
    }
}

/// What a table header prints for a method call such as `{{.Label "com.example.x"}}`:
/// docker's header context answers every such call with the last dot-separated part of
/// the argument, dashes and underscores turned into spaces.
fn header_label(args: &[Value]) -> Value {
    let name = args.first().and_then(Value::as_str).unwrap_or_default();
    let last = name.rsplit('.').next().unwrap_or_default();
    Value::String(last.replace(['-', '_'], " "))
}

fn not_a_function(first: &Operand, rest: &[Operand], last: &Option<Val>) -> ExecResult<()> {
    if !rest.is_empty() || last.is_some() {
        return Err(error_at(
            first,
            format!("can't give argument to non-function {first}"),
        ));
    }
    Ok(())
}

fn error_at(operand: &Operand, message: String) -> ExecError {
    ExecError {
        position: operand.position,
        node: operand.to_string(),
        message,
    }
}

fn command_error(command: &Command, message: String) -> ExecError {
    ExecError {
        position: command.position,
        node: command.to_string(),
        message,
    }
}
