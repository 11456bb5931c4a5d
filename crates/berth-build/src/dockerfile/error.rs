//! The parse error, worded as BuildKit's Dockerfile frontend words it.
//!
//! BuildKit fails in two places: its line parser (`parser.Parse`: directives,
//! continuations, heredocs, the per-instruction word splitting) and its
//! instruction parser (`instructions.Parse`: argument counts, flags, names).
//! Only the second prefixes `dockerfile parse error on line N: `; the first
//! shows the bare message (the line travels beside it). [`ParseError`]'s
//! `Display` does the same, so `docker build` users see the words they know.

use std::fmt;

/// A Dockerfile that BuildKit would refuse, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The 1-based line the failing instruction (or line) starts on.
    pub line: usize,
    /// The 1-based line it ends on (continuations, heredocs).
    pub end_line: usize,
    /// The 1-based column, where known.
    pub column: Option<usize>,
    pub kind: ParseErrorKind,
}

impl ParseError {
    pub(crate) fn new(line: usize, end_line: usize, kind: ParseErrorKind) -> Self {
        Self {
            line,
            end_line: end_line.max(line),
            column: None,
            kind,
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.kind.is_instruction_error() {
            write!(
                f,
                "dockerfile parse error on line {}: {}",
                self.line, self.kind
            )
        } else {
            write!(f, "{}", self.kind)
        }
    }
}

impl std::error::Error for ParseError {}

/// What is wrong. The messages are BuildKit's (capitals and all, where
/// BuildKit has them: `docker build` users search for these words).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    // The line parser's errors (shown without a prefix).
    #[error("file with no instructions")]
    NoInstructions,
    #[error("only one {name} parser directive can be used")]
    DuplicateDirective { name: String },
    #[error("invalid escape token '{value}' does not match ` or \\")]
    InvalidEscapeToken { value: String },
    #[error("unterminated heredoc")]
    UnterminatedHeredoc,
    #[error("when using JSON array syntax, arrays must be comprised of strings only")]
    NotStringArray,
    #[error("{instruction} must have two arguments")]
    MissingValue { instruction: String },
    #[error("Syntax error - can't find = in {}. Must be of the form: name=value", go_quote(.word))]
    MissingEquals { word: String },

    // The stage assembly's errors (shown without a prefix).
    #[error("no build stage in current context")]
    NoBuildStage,
    #[error("dockerfile contains no stages to build")]
    NoStages,

    // The instruction parser's errors (shown after `dockerfile parse error on line N: `).
    #[error("unknown instruction: {instruction}{}", did_you_mean(.suggestion))]
    UnknownInstruction {
        instruction: String,
        suggestion: Option<String>,
    },
    #[error("{instruction} requires at least one argument")]
    AtLeastOneArgument { instruction: String },
    #[error("{instruction} requires exactly one argument")]
    ExactlyOneArgument { instruction: String },
    #[error("{instruction} requires at least two arguments, but only one was provided. Destination could not be determined")]
    NoDestination { instruction: String },
    #[error("{instruction} cannot accept a heredoc as a destination")]
    HeredocDestination { instruction: String },
    #[error("{instruction} names can not be blank")]
    BlankName { instruction: String },
    #[error("FROM requires either one or three arguments")]
    FromArguments,
    #[error("invalid name for build stage: {}, name can't start with a number or contain symbols", go_quote(.name))]
    InvalidStageName { name: String },
    #[error("Chaining ONBUILD via `ONBUILD ONBUILD` isn't allowed")]
    OnbuildChained,
    #[error("{trigger} isn't allowed as an ONBUILD trigger")]
    OnbuildTrigger { trigger: String },
    #[error("HEALTHCHECK NONE takes no arguments")]
    HealthcheckNoneArguments,
    #[error("Missing command after HEALTHCHECK CMD")]
    HealthcheckMissingCommand,
    #[error("Unknown type {} in HEALTHCHECK (try CMD)", go_quote(.kind))]
    HealthcheckType { kind: String },
    #[error("VOLUME specified can not be an empty string")]
    EmptyVolume,
    #[error("{instruction} requires the arguments to be in JSON form")]
    NotJson { instruction: String },
    #[error("unknown flag: {flag}{}", did_you_mean(.suggestion))]
    UnknownFlag {
        flag: String,
        suggestion: Option<String>,
    },
    #[error("duplicate flag specified: {flag}")]
    DuplicateFlag { flag: String },
    #[error("missing a value on flag: {flag}")]
    MissingFlagValue { flag: String },
    #[error("expecting boolean value for flag {flag}, not: {value}")]
    NotBoolean { flag: String, value: String },
}

impl ParseErrorKind {
    /// Whether BuildKit reports this from `instructions.Parse` (prefixed).
    pub fn is_instruction_error(&self) -> bool {
        !matches!(
            self,
            Self::NoInstructions
                | Self::DuplicateDirective { .. }
                | Self::InvalidEscapeToken { .. }
                | Self::UnterminatedHeredoc
                | Self::NotStringArray
                | Self::MissingValue { .. }
                | Self::MissingEquals { .. }
                | Self::NoBuildStage
                | Self::NoStages
        )
    }
}

fn did_you_mean(suggestion: &Option<String>) -> String {
    match suggestion {
        Some(s) => format!(" (did you mean {s}?)"),
        None => String::new(),
    }
}

/// Go's `%q` (`strconv.Quote`): the quoting BuildKit's messages use.
pub(crate) use berth_types::go::quote as go_quote;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instruction_errors_carry_the_line_prefix() {
        let error = ParseError::new(
            3,
            3,
            ParseErrorKind::UnknownInstruction {
                instruction: "FOO".into(),
                suggestion: None,
            },
        );
        assert_eq!(
            error.to_string(),
            "dockerfile parse error on line 3: unknown instruction: FOO"
        );
    }

    #[test]
    fn line_parser_errors_are_bare() {
        let error = ParseError::new(2, 5, ParseErrorKind::UnterminatedHeredoc);
        assert_eq!(error.to_string(), "unterminated heredoc");
        assert_eq!((error.line, error.end_line), (2, 5));
    }

    #[test]
    fn suggestions_and_go_quoting() {
        let kind = ParseErrorKind::UnknownFlag {
            flag: "--chmown".into(),
            suggestion: Some("chown".into()),
        };
        assert_eq!(
            kind.to_string(),
            "unknown flag: --chmown (did you mean chown?)"
        );
        assert_eq!(go_quote("a\"b\\c\td"), r#""a\"b\\c\td""#);
        assert_eq!(go_quote("é\x01"), "\"é\\x01\"");
    }
}
