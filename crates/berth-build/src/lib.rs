//! berth's image builder (`berth build`, `POST /build`).
//!
//! ```text
//! dockerfile::parse(text)            the Dockerfile frontend: directives, instructions,
//!                                    heredocs, words (quotes, escapes, `${…}`) left raw
//! dockerfile::expand_word / words    the variable substitution of the instructions that
//!                                    expand, done as each step runs (its ENV and ARGs)
//! ignore::IgnoreMatcher              `.dockerignore` (`**`, `!` exceptions)
//! build(engine, request, progress)   the stages the target needs, each step cached by
//!                                    content or run through the engine and committed
//! ```

pub mod dockerfile;
pub mod ignore;

mod exec;

pub use exec::{export_image, prune_cache};
mod request;

pub use request::{
    BuildError, BuildOutcome, BuildRequest, DockerfileSource, KeepContainers, NamedContext,
    OutputStream, Progress, StepEnd, StepId, StepStart,
};

/// Builds `request` and returns the image (tagged as asked).
pub fn build(
    engine: &mut berth_engine::Engine,
    request: &BuildRequest,
    progress: &mut dyn Progress,
) -> Result<BuildOutcome, BuildError> {
    exec::build(engine, request, progress)
}
