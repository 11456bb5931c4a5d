//! Converging a project through the engine: `up` creates what is missing, recreates what
//! changed (by config hash) and starts services level by level, the services of a level in
//! parallel, each after its dependencies' conditions hold; `down`, `stop`, `start`, `rm` and
//! `ps` work on the containers carrying the project's labels.

pub mod containers;
pub mod down;
pub mod labels;
pub mod lifecycle;
pub mod request;
pub mod resources;
pub mod up;
pub mod wait;

use berth_engine::{EngineConfig, EngineError};

/// Progress as docker compose prints it without a terminal: ` Container p-web-1 Started `.
pub trait Reporter: Sync {
    fn progress(&self, kind: &str, name: &str, status: &str);
    fn warn(&self, message: &str);
}

/// A warning as compose's logger writes it: `WARN[0000] …` on a terminal, else logfmt
/// (`time="…" level=warning msg="…"`).
pub fn warning_line(message: &str, terminal: bool) -> String {
    if terminal {
        format!("WARN[0000] {message}")
    } else {
        let time = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let escaped = message.replace('\\', "\\\\").replace('"', "\\\"");
        format!("time=\"{time}\" level=warning msg=\"{escaped}\"")
    }
}

/// Prints progress lines on stderr, as docker compose v2 does without a terminal (its plain
/// progress writer leaves the trailing space).
pub struct StderrReporter;

impl Reporter for StderrReporter {
    fn progress(&self, kind: &str, name: &str, status: &str) {
        eprintln!(" {kind} {name} {status} ");
    }

    fn warn(&self, message: &str) {
        use std::io::IsTerminal;
        eprintln!("{}", warning_line(message, std::io::stderr().is_terminal()));
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConvergeError {
    #[error(transparent)]
    Compose(#[from] crate::ComposeError),
    #[error("{context}")]
    Engine {
        context: String,
        #[source]
        source: Box<EngineError>,
    },
    #[error("{0}")]
    Failed(String),
}

pub(crate) fn engine_error(
    context: impl Into<String>,
) -> impl FnOnce(EngineError) -> ConvergeError {
    let context = context.into();
    move |source| ConvergeError::Engine {
        context,
        source: Box::new(source),
    }
}

/// A fresh engine for a worker thread (the engine is not shared across threads).
pub(crate) fn open(config: &EngineConfig) -> Result<berth_engine::Engine, ConvergeError> {
    berth_engine::Engine::open(config.clone()).map_err(engine_error("failed to open the engine"))
}
