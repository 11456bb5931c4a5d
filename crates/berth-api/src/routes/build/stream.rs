//! The classic builder's answer to `POST /build`: a chunked stream of JSON
//! messages, as moby's `builder/dockerfile` writes them through
//! `streamformatter` (one `{"stream": …}` per write, `\r\n` after each).
//!
//! ```text
//! {"stream":"Step 1/3 : FROM busybox"}  {"stream":"\n"}   (two writes, as moby's printCommand)
//! {"stream":" ---> 9a43934664de\n"}
//! {"stream":" ---> Using cache\n"}                      a cached step, then its image
//! {"stream":" ---> Running in 3f4a5b6c7d8e\n"}          a RUN step's container
//! {"stream":"hi\n"}                                     its output
//! {"stream":"Removing intermediate container 3f4a5b6c7d8e\n"}
//! {"aux":{"ID":"sha256:…"}}                             API 1.30 and later
//! {"stream":"Successfully built 9a43934664de\n"}
//! {"stream":"Successfully tagged x:latest\n"}
//! {"errorDetail":{"message":"…","code":1},"error":"…"}  a build that failed once streaming
//! ```
//!
//! The stream starts with its first message, so an error before any (a bad
//! Dockerfile, a missing base image before the first step prints) is still
//! a plain HTTP error, as moby's `output.Flushed()` decides. With `q=1`
//! every message is held back; a success writes only
//! `{"stream":"sha256:…\n"}`, a failure what was held back and the error.
//! ("Removing intermediate container" is Docker 24's wording, API 1.43;
//! Docker 25 says " ---> Removed intermediate container".)

use std::io::Write;

use berth_build::{BuildError, BuildOutcome, OutputStream, Progress, StepEnd, StepId, StepStart};
use berth_types::Digest;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::http::{start_chunked, ChunkedWriter};
use crate::server::Outcome;

/// `{"stream": text}`.
pub fn stream_message(text: &str) -> Value {
    json!({ "stream": text })
}

/// moby's `printCommand`: the step line, then its newline as a second write.
pub fn step_messages(number: usize, total: usize, instruction: &str) -> [Value; 2] {
    [
        stream_message(&format!("Step {number}/{total} : {instruction}")),
        stream_message("\n"),
    ]
}

/// ` ---> 9a43934664de`: an image by its 12-hex short id.
pub fn image_message(image: &Digest) -> Value {
    stream_message(&format!(" ---> {}\n", image.short()))
}

pub fn using_cache_message() -> Value {
    stream_message(" ---> Using cache\n")
}

pub fn running_in_message(container: &str) -> Value {
    stream_message(&format!(" ---> Running in {}\n", short_id(container)))
}

pub fn removing_message(container: &str) -> Value {
    stream_message(&format!(
        "Removing intermediate container {}\n",
        short_id(container)
    ))
}

/// moby's classic builder's warnings (`[Warning] One or more build-args
/// [X] were not consumed`).
pub fn warning_message(message: &str) -> Value {
    let newline = if message.ends_with('\n') { "" } else { "\n" };
    stream_message(&format!("[Warning] {message}{newline}"))
}

/// `{"aux":{"ID":"sha256:…"}}` (moby `emitImageID`).
pub fn aux_message(image: &Digest) -> Value {
    json!({ "aux": { "ID": image.to_string() } })
}

pub fn built_message(image: &Digest) -> Value {
    stream_message(&format!("Successfully built {}\n", image.short()))
}

pub fn tagged_message(tag: &str) -> Value {
    stream_message(&format!("Successfully tagged {tag}\n"))
}

/// `q=1`'s only line: the full id.
pub fn quiet_message(image: &Digest) -> Value {
    stream_message(&format!("{image}\n"))
}

/// moby's `FormatError`: `code` only when there is one (a RUN's exit code).
pub fn error_message(message: &str, code: Option<i32>) -> Value {
    let mut detail = json!({ "message": message });
    if let Some(code) = code.filter(|code| *code != 0) {
        detail["code"] = json!(code);
    }
    json!({ "errorDetail": detail, "error": message })
}

/// A build error in the classic builder's words, with its code.
pub fn classic_error(error: &BuildError) -> (String, Option<i32>) {
    match error {
        BuildError::StepFailed { command, code } => (
            format!("The command '{command}' returned a non-zero code: {code}"),
            Some(*code),
        ),
        other => (berth_engine::ErrorChain(other).to_string(), None),
    }
}

/// A build error as a plain HTTP error (before the stream started).
pub fn api_error(error: &BuildError) -> ApiError {
    let (message, _) = classic_error(error);
    let status = match error {
        BuildError::Unsupported(_) => 501,
        BuildError::Invalid(_) => 400,
        BuildError::StepFailed { .. }
        | BuildError::Cancelled
        | BuildError::Pipe(_)
        | BuildError::Layer(_)
        | BuildError::Context { .. } => 500,
        BuildError::Engine(engine) => crate::error::status_for(engine),
    };
    ApiError::new(status, message)
}

/// Container ids are shown by their first 12 characters.
fn short_id(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// The response as the build reports; see the module's documentation.
pub struct BuildStream<'s, W: Write> {
    state: State<W>,
    quiet: bool,
    /// `{"aux": …}` for clients of API 1.30 and later.
    aux: bool,
    /// Messages held back under `q=1`.
    held: Vec<Value>,
    /// The current step's container, removed when the step ends.
    container: Option<String>,
    /// The start of a UTF-8 character split between two outputs.
    partial: Vec<u8>,
    /// True once the client is gone (poll of the socket).
    gone: Option<Box<dyn Fn() -> bool + 's>>,
    /// `rm=0`: step containers are not removed.
    keeps_containers: bool,
}

enum State<W: Write> {
    /// Nothing written yet.
    Pending(W),
    Started(ChunkedWriter<W>),
    /// The client went away, or the stream was finished.
    Closed,
}

impl<'s, W: Write> BuildStream<'s, W> {
    pub fn new(out: W, quiet: bool, aux: bool) -> Self {
        Self {
            state: State::Pending(out),
            quiet,
            aux,
            held: Vec::new(),
            container: None,
            partial: Vec::new(),
            gone: None,
            keeps_containers: false,
        }
    }

    /// With `rm=0` the steps' containers stay: no "Removing intermediate
    /// container" then.
    pub fn keeping_containers(mut self, keeps: bool) -> Self {
        self.keeps_containers = keeps;
        self
    }

    /// How to tell that the client went away while nothing is written.
    pub fn with_gone_check(mut self, gone: impl Fn() -> bool + 's) -> Self {
        self.gone = Some(Box::new(gone));
        self
    }

    /// True once the client has gone (a write failed, or the socket hung
    /// up): the build is no longer wanted, and the builder stops
    /// (`Progress::cancelled`).
    pub fn cancelled(&self) -> bool {
        matches!(self.state, State::Closed) || self.gone.as_ref().is_some_and(|gone| gone())
    }

    fn send(&mut self, message: Value) {
        if self.quiet {
            self.held.push(message);
        } else {
            self.write(&message);
        }
    }

    fn write(&mut self, message: &Value) {
        let state = std::mem::replace(&mut self.state, State::Closed);
        let mut writer = match state {
            State::Pending(out) => match start_chunked(out, 200, "application/json", &[]) {
                Ok(writer) => writer,
                Err(_) => return,
            },
            State::Started(writer) => writer,
            State::Closed => return,
        };
        if writer.json_line(message).is_ok() {
            self.state = State::Started(writer);
        }
    }

    fn flush_partial(&mut self) {
        if !self.partial.is_empty() {
            let text = String::from_utf8_lossy(&self.partial).into_owned();
            self.partial.clear();
            self.send(stream_message(&text));
        }
    }

    /// Ends a successful build: the id, "Successfully built", the tags.
    pub fn succeed(mut self, outcome: &BuildOutcome) -> Outcome {
        self.flush_partial();
        if self.aux {
            self.send(aux_message(&outcome.image));
        }
        self.send(built_message(&outcome.image));
        for tag in &outcome.tags {
            self.send(tagged_message(tag));
        }
        if self.quiet {
            self.held.clear();
            self.write(&quiet_message(&outcome.image));
        }
        self.finish()
    }

    /// Ends a failed build with the error in the stream; None when nothing
    /// was written (nor held back), so the error can be a plain HTTP one.
    pub fn fail(mut self, error: &BuildError) -> Option<Outcome> {
        self.flush_partial();
        let held = std::mem::take(&mut self.held);
        for message in &held {
            self.write(message);
        }
        if matches!(self.state, State::Pending(_)) {
            return None;
        }
        let (message, code) = classic_error(error);
        self.write(&error_message(&message, code));
        Some(self.finish())
    }

    fn finish(mut self) -> Outcome {
        match std::mem::replace(&mut self.state, State::Closed) {
            State::Started(writer) => Outcome::Streamed {
                keep_alive: writer.finish().is_ok(),
            },
            State::Pending(_) | State::Closed => Outcome::Streamed { keep_alive: false },
        }
    }
}

impl<W: Write> Progress for BuildStream<'_, W> {
    // The classic builder's stream tells one step after another (the
    // default `concurrent() == false`): every event is the current step's.
    fn step(&mut self, step: &StepStart) {
        self.flush_partial();
        self.container = None;
        for message in step_messages(step.number, step.total, &step.instruction) {
            self.send(message);
        }
    }

    fn running_in(&mut self, _step: StepId, container: &str) {
        self.flush_partial();
        self.container = Some(container.to_owned());
        self.send(running_in_message(container));
    }

    fn output(&mut self, _step: StepId, stream: OutputStream, bytes: &[u8]) {
        if stream == OutputStream::Stderr {
            // The classic builder sends each write to stderr whole, in
            // red (moby's `streamformatter` stderr writer).
            self.flush_partial();
            let text = String::from_utf8_lossy(bytes);
            return self.send(stream_message(&format!("\x1b[91m{text}\x1b[0m")));
        }
        self.partial.extend_from_slice(bytes);
        let text = match std::str::from_utf8(&self.partial) {
            Ok(text) => text.to_owned(),
            Err(error) if error.error_len().is_none() => {
                // The tail starts a character the next output completes.
                let complete = error.valid_up_to();
                let text = String::from_utf8_lossy(&self.partial[..complete]).into_owned();
                self.partial.drain(..complete);
                if text.is_empty() {
                    return;
                }
                return self.send(stream_message(&text));
            }
            Err(_) => String::from_utf8_lossy(&self.partial).into_owned(),
        };
        self.partial.clear();
        if !text.is_empty() {
            self.send(stream_message(&text));
        }
    }

    fn step_end(&mut self, _step: StepId, end: &StepEnd) {
        self.flush_partial();
        match end {
            StepEnd::Cached(image) => {
                self.send(using_cache_message());
                self.send(image_message(image));
            }
            StepEnd::Done(image) => {
                if let Some(container) = self.container.take() {
                    if !self.keeps_containers {
                        self.send(removing_message(&container));
                    }
                }
                self.send(image_message(image));
            }
            StepEnd::Empty => {}
        }
    }

    fn warning(&mut self, message: &str) {
        self.flush_partial();
        self.send(warning_message(message));
    }

    fn cancelled(&self) -> bool {
        BuildStream::cancelled(self)
    }

    fn status(&mut self, message: &str) {
        self.flush_partial();
        self.send(serde_json::json!({ "status": message }));
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
