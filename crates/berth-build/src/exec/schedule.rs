//! The stages the target needs, built as a graph: a stage starts once the
//! stages it reads (its base, `COPY --from`, `RUN --mount from=`) are
//! built, and stages that do not depend on each other run at the same
//! time, each on a thread of its own with its own engine (the store is a
//! SQLite database in WAL mode: one connection per thread). Their progress
//! comes back over a channel to the caller's thread, which alone talks to
//! the caller's [`Progress`].
//!
//! The first stage that fails stops the build: the others are cancelled
//! (the RUN they wait for is killed, no later step starts; every step's
//! container is removed as it ends) and the build fails with that first
//! error. With a progress that shows one step after another (the classic
//! builder's stream), or a graph where no two stages could run together,
//! the stages are built in Dockerfile order on the caller's thread.

use std::sync::atomic::Ordering;
use std::sync::mpsc;

use berth_engine::{Engine, EngineConfig};

use super::image::StepImage;
use super::stages::{Build, StageRun};
use crate::{BuildError, OutputStream, Progress, StepEnd, StepId, StepStart};

/// Builds every stage of `needed` (index, the stages it needs), in an
/// order its needs allow.
pub fn build_stages(
    engine: &mut Engine,
    progress: &mut dyn Progress,
    build: &Build<'_>,
    needed: &[(usize, Vec<usize>)],
) -> Result<(), BuildError> {
    if !progress.concurrent() || is_chain(needed) {
        return build_in_order(engine, progress, build, needed);
    }
    build_concurrently(engine.config().clone(), progress, build, needed)
}

/// One stage after another, in Dockerfile order (a stage only reads
/// earlier ones, so their order is one the graph allows).
fn build_in_order(
    engine: &mut Engine,
    progress: &mut dyn Progress,
    build: &Build<'_>,
    needed: &[(usize, Vec<usize>)],
) -> Result<(), BuildError> {
    for (index, _) in needed {
        let mut run = StageRun::new(engine, progress, build);
        let result = run.build_stage(*index);
        let step = run.step;
        match result {
            Ok(image) => build.set_result(*index, image),
            Err(error) => {
                if let Some(step) = step {
                    progress.step_failed(step, &error);
                }
                return Err(error);
            }
        }
    }
    Ok(())
}

/// True when no two of the stages can be built at the same time: each
/// longest-path level of the graph holds one stage (two stages of one
/// level never depend on each other).
fn is_chain(needed: &[(usize, Vec<usize>)]) -> bool {
    let mut levels: Vec<(usize, usize)> = Vec::new();
    for (index, needs) in needed {
        // `needed` is in Dockerfile order: what a stage needs comes first.
        let level = needs
            .iter()
            .filter_map(|need| levels.iter().find(|(stage, _)| stage == need))
            .map(|(_, level)| level + 1)
            .max()
            .unwrap_or(0);
        levels.push((*index, level));
    }
    let mut seen = std::collections::HashSet::new();
    levels.iter().all(|(_, level)| seen.insert(*level))
}

/// What a stage's thread tells the caller's.
enum Event {
    Step(StepStart),
    RunningIn(StepId, String),
    Output(StepId, OutputStream, Vec<u8>),
    End(StepId, StepEnd),
    Warning(String),
    Status(String),
    Finished {
        stage: usize,
        /// The step it was on (the one that failed, for an error).
        step: Option<StepId>,
        result: Box<Result<StepImage, BuildError>>,
    },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Waiting,
    Running,
    Built,
}

fn build_concurrently(
    config: EngineConfig,
    progress: &mut dyn Progress,
    build: &Build<'_>,
    needed: &[(usize, Vec<usize>)],
) -> Result<(), BuildError> {
    let (sender, receiver) = mpsc::channel::<Event>();
    let mut states = vec![State::Waiting; needed.len()];
    let mut first_error: Option<BuildError> = None;
    std::thread::scope(|scope| {
        let mut running = 0usize;
        loop {
            if progress.cancelled() {
                build.cancel.store(true, Ordering::SeqCst);
            }
            if first_error.is_none() && !build.cancel.load(Ordering::SeqCst) {
                for position in 0..needed.len() {
                    let (index, needs) = &needed[position];
                    let ready = states[position] == State::Waiting
                        && needs.iter().all(|need| {
                            needed
                                .iter()
                                .position(|(stage, _)| stage == need)
                                .is_some_and(|at| states[at] == State::Built)
                        });
                    if !ready {
                        continue;
                    }
                    states[position] = State::Running;
                    running += 1;
                    let sender = sender.clone();
                    let config = config.clone();
                    let index = *index;
                    let spawned = std::thread::Builder::new()
                        .name(format!("build-stage-{index}"))
                        .spawn_scoped(scope, move || {
                            let outcome =
                                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                    build_on_thread(config, build, index, &sender)
                                }));
                            let (step, result) = outcome.unwrap_or_else(|_| {
                                (
                                    None,
                                    Err(BuildError::Invalid(format!(
                                        "building stage {index} failed: its thread panicked"
                                    ))),
                                )
                            });
                            let _ = sender.send(Event::Finished {
                                stage: index,
                                step,
                                result: Box::new(result),
                            });
                        });
                    if let Err(error) = spawned {
                        states[position] = State::Waiting;
                        running -= 1;
                        build.cancel.store(true, Ordering::SeqCst);
                        first_error.get_or_insert(BuildError::Pipe(error));
                    }
                }
            }
            if running == 0 {
                break;
            }
            let event = match receiver.recv_timeout(std::time::Duration::from_millis(200)) {
                Ok(event) => event,
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                // Cannot happen while this thread holds a sender.
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            };
            match event {
                Event::Step(start) => progress.step(&start),
                Event::RunningIn(step, container) => progress.running_in(step, &container),
                Event::Output(step, stream, bytes) => progress.output(step, stream, &bytes),
                Event::End(step, end) => progress.step_end(step, &end),
                Event::Warning(message) => progress.warning(&message),
                Event::Status(message) => progress.status(&message),
                Event::Finished {
                    stage,
                    step,
                    result,
                } => {
                    running -= 1;
                    let position = needed
                        .iter()
                        .position(|(index, _)| *index == stage)
                        .expect("a finished stage was scheduled");
                    match *result {
                        Ok(image) => {
                            build.set_result(stage, image);
                            states[position] = State::Built;
                        }
                        Err(error) => {
                            if let Some(step) = step {
                                progress.step_failed(step, &error);
                            }
                            build.cancel.store(true, Ordering::SeqCst);
                            // The first error wins; a stage stopped for it
                            // only says it was cancelled.
                            let replaces =
                                matches!(first_error, None | Some(BuildError::Cancelled))
                                    && !matches!(error, BuildError::Cancelled);
                            if first_error.is_none() || replaces {
                                first_error = Some(error);
                            }
                        }
                    }
                }
            }
        }
    });
    match first_error {
        Some(error) => Err(error),
        None if states.iter().all(|state| *state == State::Built) => Ok(()),
        None => Err(BuildError::Cancelled),
    }
}

/// One stage on this thread, with an engine of its own.
fn build_on_thread(
    config: EngineConfig,
    build: &Build<'_>,
    index: usize,
    sender: &mpsc::Sender<Event>,
) -> (Option<StepId>, Result<StepImage, BuildError>) {
    let mut engine = match Engine::open(config) {
        Ok(engine) => engine,
        Err(error) => return (None, Err(error.into())),
    };
    let mut progress = ChannelProgress { sender, build };
    let mut run = StageRun::new(&mut engine, &mut progress, build);
    let result = run.build_stage(index);
    (run.step, result)
}

/// A stage thread's progress: each event sent to the caller's thread.
struct ChannelProgress<'s, 'b> {
    sender: &'s mpsc::Sender<Event>,
    build: &'s Build<'b>,
}

impl ChannelProgress<'_, '_> {
    fn send(&self, event: Event) {
        // The caller's thread receives until every stage has finished.
        let _ = self.sender.send(event);
    }
}

impl Progress for ChannelProgress<'_, '_> {
    fn step(&mut self, step: &StepStart) {
        self.send(Event::Step(step.clone()));
    }

    fn running_in(&mut self, step: StepId, container: &str) {
        self.send(Event::RunningIn(step, container.to_owned()));
    }

    fn output(&mut self, step: StepId, stream: OutputStream, bytes: &[u8]) {
        self.send(Event::Output(step, stream, bytes.to_vec()));
    }

    fn step_end(&mut self, step: StepId, end: &StepEnd) {
        self.send(Event::End(step, end.clone()));
    }

    fn warning(&mut self, message: &str) {
        self.send(Event::Warning(message.to_owned()));
    }

    fn status(&mut self, message: &str) {
        self.send(Event::Status(message.to_owned()));
    }

    fn cancelled(&self) -> bool {
        self.build.cancel.load(Ordering::SeqCst)
    }

    fn concurrent(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_has_one_stage_per_level() {
        // 0 ← 1 ← 2: one after another.
        assert!(is_chain(&[(0, vec![]), (1, vec![0]), (2, vec![1])]));
        // 0 ← 2 and 1 ← 2 (but 2 also reads 0 through 1): a chain.
        assert!(is_chain(&[(0, vec![]), (1, vec![0]), (2, vec![0, 1])]));
        // 0 and 1 independent, 2 reads both.
        assert!(!is_chain(&[(0, vec![]), (1, vec![]), (2, vec![0, 1])]));
        assert!(is_chain(&[(3, vec![])]));
    }
}
