//! BuildKit's plain progress (`--progress plain`, and `auto` in a pipe):
//! `#N [n/total] INSTRUCTION`, the step's output lines with their time,
//! `#N DONE 0.1s` or `#N CACHED`, on stderr.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::time::Instant;

use berth_build::{BuildError, OutputStream, Progress, StepEnd, StepId, StepStart};

/// BuildKit's plain progress on stderr: each step's lines carry its `#N`,
/// so the steps of stages built at the same time interleave whole lines.
pub struct PlainProgress {
    quiet: bool,
    /// The last `#N` given.
    vertex: usize,
    build_started: Instant,
    open: BTreeMap<StepId, OpenStep>,
}

/// A step shown and not ended yet.
struct OpenStep {
    vertex: usize,
    started: Instant,
    /// Output not yet ended by a newline.
    partial: Vec<u8>,
}

impl PlainProgress {
    pub fn new(quiet: bool) -> Self {
        Self {
            quiet,
            vertex: 0,
            build_started: Instant::now(),
            open: BTreeMap::new(),
        }
    }

    fn write(&self, text: &str) {
        if !self.quiet {
            let mut stderr = std::io::stderr().lock();
            let _ = stderr.write_all(text.as_bytes());
        }
    }

    pub fn line(&mut self, text: &str) {
        self.vertex += 1;
        self.write(&format!("#{} {text}\n", self.vertex));
    }

    fn elapsed(&self) -> f64 {
        self.build_started.elapsed().as_secs_f64()
    }

    /// Ends `step`'s display: its last partial line, then `last`.
    fn close(&mut self, step: StepId, last: impl FnOnce(&OpenStep) -> String) {
        let Some(open) = self.open.remove(&step) else {
            return;
        };
        if !open.partial.is_empty() {
            let text = String::from_utf8_lossy(&open.partial).into_owned();
            self.write(&format!("#{} {:.3} {text}\n", open.vertex, self.elapsed()));
        }
        self.write(&last(&open));
    }

    fn done(open: &OpenStep) -> String {
        format!(
            "#{} DONE {:.1}s\n\n",
            open.vertex,
            open.started.elapsed().as_secs_f64()
        )
    }

    /// Ends every step still shown (a build that succeeded).
    pub fn finish_step(&mut self) {
        let open: Vec<StepId> = self.open.keys().copied().collect();
        for step in open {
            self.close(step, Self::done);
        }
    }

    /// A failed build: steps still shown were stopped with it.
    pub fn fail_step(&mut self) {
        let open: Vec<StepId> = self.open.keys().copied().collect();
        for step in open {
            self.close(step, |open| format!("#{} CANCELED\n", open.vertex));
        }
    }
}

/// BuildKit's `[stage k/n]`: the stage's name when there are several, the
/// step's number padded to the width of the count.
pub fn step_label(step: &StepStart) -> String {
    let width = step.stage_total.to_string().len();
    let stage = step
        .stage
        .as_deref()
        .map(|stage| format!("{stage} "))
        .unwrap_or_default();
    format!(
        "[{stage}{:>width$}/{}]",
        step.stage_number, step.stage_total
    )
}

impl Progress for PlainProgress {
    fn step(&mut self, step: &StepStart) {
        self.vertex += 1;
        self.open.insert(
            step.id,
            OpenStep {
                vertex: self.vertex,
                started: Instant::now(),
                partial: Vec::new(),
            },
        );
        self.write(&format!(
            "#{} {} {}\n",
            self.vertex,
            step_label(step),
            step.instruction
        ));
    }

    fn output(&mut self, step: StepId, _stream: OutputStream, bytes: &[u8]) {
        let elapsed = self.elapsed();
        let Some(open) = self.open.get_mut(&step) else {
            return;
        };
        open.partial.extend_from_slice(bytes);
        let vertex = open.vertex;
        let mut lines = Vec::new();
        while let Some(end) = open.partial.iter().position(|byte| *byte == b'\n') {
            let line: Vec<u8> = open.partial.drain(..=end).collect();
            lines.push(String::from_utf8_lossy(&line[..line.len() - 1]).into_owned());
        }
        for text in lines {
            self.write(&format!("#{vertex} {elapsed:.3} {text}\n"));
        }
    }

    fn step_end(&mut self, step: StepId, end: &StepEnd) {
        match end {
            StepEnd::Cached(_) => self.close(step, |open| format!("#{} CACHED\n\n", open.vertex)),
            StepEnd::Done(_) | StepEnd::Empty => self.close(step, Self::done),
        }
    }

    fn step_failed(&mut self, step: StepId, error: &BuildError) {
        match error {
            BuildError::Cancelled => {
                self.close(step, |open| format!("#{} CANCELED\n", open.vertex))
            }
            error => self.close(step, |open| format!("#{} ERROR: {error}\n", open.vertex)),
        }
    }

    fn warning(&mut self, message: &str) {
        if !self.quiet || std::io::stderr().is_terminal() {
            eprintln!("{message}");
        }
    }

    fn concurrent(&self) -> bool {
        true
    }
}
