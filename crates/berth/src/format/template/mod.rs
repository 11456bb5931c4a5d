//! The subset of Go's `text/template` that `docker … --format` accepts, over JSON values.
//!
//! Supported: text; `{{.Field}}`, `{{.A.B}}`, `{{.}}`, `$`, `$var.Field`; string, raw
//! string, number, char, bool and `nil` constants; pipelines `a | b`; parenthesised
//! pipelines; `{{if}}`/`{{else if}}`/`{{else}}`, `{{range}}` (with `$i, $v :=`, `{{else}}`,
//! `{{break}}`, `{{continue}}`), `{{with}}`/`{{else with}}`; variables `:=` and `=`;
//! comments; `{{- ` / ` -}}` trimming; Go's built-in functions except `call`, `html`, `js`
//! and `urlquery`; and docker's `json`, `split`, `join`, `title`, `lower`, `upper`, `pad`,
//! `truncate`. Not supported: `{{define}}`, `{{template}}`, `{{block}}`.
//!
//! Values print as Go prints the equivalent Go values (see [`crate::format::gofmt`]); a
//! key absent from an object prints `<no value>`, as Go prints a missing map entry.
//! Errors read like docker's: `template parsing error: template: :1: …`.

mod exec;
mod functions;
mod lexer;
mod literal;
mod parser;
mod printf;

use serde_json::Value;

/// A "method" callable from a template as `{{.Name arg…}}`, given the object it was
/// looked up on and the arguments. Docker's list contexts have such methods (for
/// example `{{.Label "com.docker.compose.project"}}` on `docker ps`), which plain JSON
/// cannot express. The error is Go's "error calling NAME: …" message tail.
pub type Method = fn(receiver: &Value, args: &[Value]) -> Result<Value, String>;

/// How to render: extra methods, and whether this is a table header.
#[derive(Debug, Default, Clone, Copy)]
pub struct RenderOptions<'a> {
    /// Methods by name; they take precedence over object keys, as Go methods do.
    pub methods: &'a [(&'a str, Method)],
    /// Render a table header: docker's header functions (`json`, `upper`, `truncate`, …
    /// return their first argument unchanged) and every method call answered with the
    /// column label of its argument.
    pub header: bool,
    /// Go's `missingkey=error`: a key an object lacks is an error (`map has no entry for key
    /// "X"`) rather than `<no value>`. docker inspect runs its templates this way on the raw
    /// JSON, so a mistyped field fails the command.
    pub missing_key_error: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// The template text is malformed.
    #[error("template parsing error: template: :{line}: {message}")]
    Parse { line: usize, message: String },
    /// The template failed while running on a value. (Docker words these as parsing
    /// errors too.)
    #[error(
        "template parsing error: template: :{line}:{column}: executing \"\" at <{node}>: {message}"
    )]
    Execute {
        line: usize,
        column: usize,
        node: String,
        message: String,
    },
}

/// A parsed template, ready to render any number of values.
#[derive(Debug)]
pub struct Template {
    source: String,
    nodes: Vec<parser::Node>,
}

impl Template {
    pub fn parse(source: &str) -> Result<Template, TemplateError> {
        let nodes = parser::parse(source).map_err(|error| TemplateError::Parse {
            line: error.line,
            message: error.message,
        })?;
        Ok(Template {
            source: source.to_owned(),
            nodes,
        })
    }

    /// With Go's defaults (the tests' shorthand; commands pass their options).
    #[cfg(test)]
    pub fn render(&self, data: &Value) -> Result<String, TemplateError> {
        self.render_with(data, &RenderOptions::default())
    }

    pub fn render_with(
        &self,
        data: &Value,
        options: &RenderOptions<'_>,
    ) -> Result<String, TemplateError> {
        let (output, error) = self.render_partial(data, options);
        match error {
            Some(error) => Err(error),
            None => Ok(output),
        }
    }

    /// Renders as far as possible: the output written before any error, and the error.
    /// Docker prints table headers this way, ignoring the error.
    pub fn render_partial(
        &self,
        data: &Value,
        options: &RenderOptions<'_>,
    ) -> (String, Option<TemplateError>) {
        let mut state = exec::State::new(data, options);
        let result = state.run(data, &self.nodes);
        let error = result.err().map(|error| {
            let (line, column) = self.location(error.position);
            // Go shortens long node texts in error messages.
            let node = if error.node.len() > 20 {
                let mut end = 20;
                while !error.node.is_char_boundary(end) {
                    end -= 1;
                }
                format!("{}...", &error.node[..end])
            } else {
                error.node
            };
            TemplateError::Execute {
                line,
                column,
                node,
                message: error.message,
            }
        });
        (state.output, error)
    }

    /// Go's error position: 1-based line and the byte offset within that line.
    fn location(&self, position: usize) -> (usize, usize) {
        let before = &self.source[..position.min(self.source.len())];
        let line = 1 + before.matches('\n').count();
        let column = match before.rfind('\n') {
            Some(newline) => position - newline - 1,
            None => position,
        };
        (line, column)
    }
}

#[cfg(test)]
mod tests;
