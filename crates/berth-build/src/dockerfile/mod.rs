//! The Dockerfile frontend: [`parse`] turns a Dockerfile into stages of
//! instructions the way BuildKit's Dockerfile frontend (syntax 1.x) reads
//! it, and [`expand_word`]/[`expand_words`] do its variable substitution
//! when a step runs.
//!
//! ```text
//! lines.rs         text → logical lines (directives, comments, continuations, heredoc bodies)
//! node.rs          a line → name, flags, arguments (JSON / words / KEY=value)
//! instructions.rs  nodes → instructions and stages (counts, flags, names)
//! expand.rs        `$VAR`, `${VAR:-…}`, quotes and escapes of one word or a word list
//! ```

pub mod ast;
mod directives;
mod error;
mod expand;
mod flags;
mod heredoc;
mod instructions;
mod lines;
mod node;
mod shell_pattern;
mod suggest;
mod words;

pub use ast::*;
pub use error::{ParseError, ParseErrorKind};
pub use expand::{expand_word, expand_words, ExpandError, ExpandErrorKind};
pub use words::split_words;

/// Parses a Dockerfile. Words stay raw (see [`ast`]); the errors are
/// BuildKit's, with the line they were found on.
pub fn parse(source: &str) -> Result<Dockerfile, ParseError> {
    instructions::build_dockerfile(lines::parse_lines(source)?)
}

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod parse_tests;
