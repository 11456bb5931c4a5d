//! What the parser makes of a Dockerfile. Words are kept as written (quotes,
//! escapes and `$` references in them): what expands, and with which
//! variables, is decided as each step runs (see [`super::expand`]).

/// A parsed Dockerfile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dockerfile {
    pub directives: Directives,
    /// `ARG`s before the first `FROM` (usable in `FROM` lines, and in a
    /// stage after a bare `ARG name` there).
    pub global_args: Vec<ArgDeclaration>,
    pub stages: Vec<Stage>,
}

/// The parser directives of the first lines (`# escape=`, `# syntax=`, `# check=`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Directives {
    /// `\` unless `# escape=`` ` ``.
    pub escape: char,
    pub syntax: Option<String>,
}

impl Default for Directives {
    fn default() -> Self {
        Self {
            escape: '\\',
            syntax: None,
        }
    }
}

/// One `FROM` and the instructions up to the next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stage {
    /// The image (raw: may hold `$` references to global args), or `scratch`.
    pub base: String,
    /// `AS name`, lowercased as BuildKit does.
    pub name: Option<String>,
    /// `--platform=` (raw).
    pub platform: Option<String>,
    /// The 1-based line of the `FROM`.
    pub line: usize,
    pub instructions: Vec<Instruction>,
}

/// One instruction as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instruction {
    /// The 1-based line the instruction starts on.
    pub line: usize,
    /// The instruction's text, continuation lines joined (as BuildKit shows
    /// it in its step display and `history`'s `created_by`), without heredoc
    /// bodies.
    pub original: String,
    pub kind: InstructionKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InstructionKind {
    Run(Run),
    Cmd(Command),
    Entrypoint(Command),
    Copy(Copy),
    Add(Copy),
    /// `ENV a=b c=d` (and the legacy `ENV a b`): raw words, in order.
    Env(Vec<KeyValue>),
    Arg(Vec<ArgDeclaration>),
    Label(Vec<KeyValue>),
    Workdir(String),
    User(String),
    /// Raw words (`80/tcp`, `$PORT`).
    Expose(Vec<String>),
    /// Paths (JSON array or words).
    Volume(Vec<String>),
    StopSignal(String),
    Healthcheck(Healthcheck),
    /// `SHELL ["executable", "parameters"]` (JSON form only).
    Shell(Vec<String>),
    /// The trigger instruction's text, as stored in the image's `OnBuild`.
    Onbuild(String),
    Maintainer(String),
}

/// A shell-form or exec-form command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// The text after the instruction (not expanded: the shell does that).
    Shell(String),
    /// A JSON array.
    Exec(Vec<String>),
}

/// A `<<EOF` document of a `RUN` or `COPY`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Heredoc {
    /// The word after `<<` (`EOF`), its quotes removed.
    pub name: String,
    /// The body as written, with its final newline (`chomp` not applied:
    /// see [`Heredoc::chomped_content`]).
    pub content: String,
    /// False when the name was quoted (`<<"EOF"`, `<<'EOF'`): no expansion.
    pub expand: bool,
    /// `<<-EOF`: leading tabs removed from each line.
    pub chomp: bool,
    /// The file descriptor before `<<` (`3<<EOF`), if any.
    pub file_descriptor: Option<u32>,
}

/// A `--name=value` (or bare `--name`) flag of an instruction: the name
/// checked against the instruction's flags as BuildKit checks it, the value
/// with its quotes and escapes removed (as BuildKit's line parser does) but
/// `$` references left for the builder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flag {
    pub name: String,
    /// None for a bare `--name`.
    pub value: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    pub command: Command,
    /// `--mount`, `--network`, `--security` (raw; validated by the builder,
    /// which refuses what it does not implement).
    pub flags: Vec<Flag>,
    /// Heredocs in the command (`RUN <<EOF`), in order.
    pub heredocs: Vec<Heredoc>,
}

/// `COPY`/`ADD`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Copy {
    /// Raw source words (JSON form or words); a heredoc source appears as
    /// its `<<NAME` word and in `heredocs`.
    pub sources: Vec<String>,
    /// The raw destination word.
    pub destination: String,
    /// `--from`, `--chown`, `--chmod`, `--link`, `--exclude`, `--parents`,
    /// `--checksum`, `--keep-git-dir` (raw; validated by the builder).
    pub flags: Vec<Flag>,
    pub heredocs: Vec<Heredoc>,
}

/// `KEY=value` with both sides raw (quotes kept).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    pub value: String,
}

/// `ARG name[=default]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgDeclaration {
    pub name: String,
    /// Raw default (quotes kept), if given.
    pub default: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Healthcheck {
    /// `HEALTHCHECK NONE`.
    None,
    Check {
        /// `CMD` in shell form becomes `CMD-SHELL` as Docker stores it.
        test: Command,
        /// `--interval`, `--timeout`, `--start-period`, `--start-interval`,
        /// `--retries` (raw).
        flags: Vec<Flag>,
    },
}
