//! The stages of a build: global ARGs, the target and the stages it needs
//! (its base and the `COPY --from` / `RUN --mount from=` sources,
//! transitively), and one stage built from its `FROM`.
//!
//! [`Build`] is what every stage of a build shares; it is `Sync`, so the
//! stages [`super::schedule`] builds at the same time each run on a thread
//! of their own ([`StageRun`]: that thread's engine and progress).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use berth_engine::Engine;
use berth_types::Digest;

use super::args::{platform_args, ArgScope, BuildArgs};
use super::cache::{BuildCache, CacheKey};
use super::container::{commit_metadata, ensure_image};
use super::contexts::{ContextSource, NamedContexts};
use super::image::{host_platform, StepImage};
use super::parse_linux_platform;
use super::steps::{run_step, StageState};
use crate::dockerfile::{expand_word, Dockerfile, InstructionKind};
use crate::ignore::IgnoreMatcher;
use crate::{BuildError, BuildRequest, Progress, StepEnd, StepId, StepStart};
use berth_types::image::Platform;

/// What the stages of one build share.
pub struct Build<'a> {
    pub request: &'a BuildRequest,
    pub dockerfile: &'a Dockerfile,
    /// The main context's `.dockerignore`.
    pub ignore: IgnoreMatcher,
    /// `--build-context`s.
    pub contexts: NamedContexts,
    pub cache: BuildCache,
    /// Global ARGs with their values (platform ones first).
    pub global: ArgScope,
    /// The platform built for (`--platform`, else this host's).
    pub target: Platform,
    /// `SOURCE_DATE_EPOCH`, if the build has one.
    pub source_date_epoch: Option<i64>,
    args: Mutex<BuildArgs>,
    /// `--cache-from`'s images and the images they were built on.
    cache_sources: OnceLock<HashSet<Digest>>,
    /// The built stages' last images, by index.
    results: Mutex<Vec<Option<StepImage>>>,
    /// Steps started so far (a step's number).
    started: AtomicUsize,
    /// The steps of the stages the target needs.
    total: usize,
    /// Set when the build stops (a stage failed, or the client is gone):
    /// the stages still running stop at their next step, or kill the RUN
    /// they wait for.
    pub cancel: AtomicBool,
}

impl<'a> Build<'a> {
    pub fn new(
        request: &'a BuildRequest,
        dockerfile: &'a Dockerfile,
        ignore: IgnoreMatcher,
        contexts: NamedContexts,
        root: &std::path::Path,
    ) -> Self {
        Self {
            request,
            dockerfile,
            ignore,
            contexts,
            cache: BuildCache::new(root),
            global: ArgScope::default(),
            target: super::target_platform(request)
                .expect("the platform was checked before the build started"),
            source_date_epoch: super::source_date_epoch(request)
                .expect("SOURCE_DATE_EPOCH was checked before the build started"),
            args: Mutex::new(BuildArgs::new(request.build_args.clone())),
            cache_sources: OnceLock::new(),
            results: Mutex::new(vec![None; dockerfile.stages.len()]),
            started: AtomicUsize::new(0),
            total: 0,
            cancel: AtomicBool::new(false),
        }
    }

    pub fn escape(&self) -> char {
        self.dockerfile.directives.escape
    }

    /// The `--build-arg` value of `name` (marked consumed).
    pub fn take_arg(&self, name: &str) -> Option<String> {
        self.args
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take(name)
    }

    /// The proxy arguments given, which every RUN sees.
    pub fn proxies(&self) -> Vec<(String, String)> {
        self.args
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .proxies()
    }

    pub fn unconsumed_args(&self) -> Vec<String> {
        self.args
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .unconsumed()
    }

    /// A built stage's image.
    pub fn stage_result(&self, index: usize) -> Result<StepImage, BuildError> {
        self.results.lock().unwrap_or_else(PoisonError::into_inner)[index]
            .clone()
            .ok_or_else(|| {
                // The graph is read from the flags as written: a `--from`
                // whose variable named a stage reaches one not built.
                BuildError::Invalid(format!(
                    "stage {} is not built before the step that reads it (a --from through a variable is not resolved before the build)",
                    self.stage_label(index)
                ))
            })
    }

    pub fn set_result(&self, index: usize, image: StepImage) {
        self.results.lock().unwrap_or_else(PoisonError::into_inner)[index] = Some(image);
    }

    /// Whether a cached image may serve: any, unless `--cache-from`
    /// named the images whose steps alone may (the classic builder's rule).
    pub fn may_use_cached(&self, engine: &Engine, id: &Digest) -> bool {
        if self.request.cache_from.is_empty() {
            return true;
        }
        self.cache_sources
            .get_or_init(|| cache_sources(engine, &self.request.cache_from))
            .contains(id)
    }

    pub fn declare_global_args(&mut self) -> Result<(), BuildError> {
        for (name, value) in platform_args(&host_platform(), &self.target) {
            self.global.declare(&name, Some(value));
        }
        let escape = self.escape();
        for declaration in &self.dockerfile.global_args {
            let value = match self.take_arg(&declaration.name) {
                Some(value) => Some(value),
                None => match &declaration.default {
                    Some(default) => {
                        let global = &self.global;
                        let lookup = |name: &str| global.get(name).cloned().flatten();
                        Some(expand_word(default, escape, &lookup).map_err(expand_error)?)
                    }
                    None => None,
                },
            };
            self.global.declare(&declaration.name, value);
        }
        Ok(())
    }

    pub fn target(&self) -> Result<usize, BuildError> {
        let stages = &self.dockerfile.stages;
        if stages.is_empty() {
            return Err(BuildError::Invalid(
                "the Dockerfile has no FROM: no build stage".to_owned(),
            ));
        }
        let target = match self
            .request
            .target
            .as_deref()
            .filter(|target| !target.is_empty())
        {
            None => stages.len() - 1,
            Some(target) => self.stage_index(target, stages.len()).ok_or_else(|| {
                BuildError::Invalid(format!("target stage \"{target}\" could not be found"))
            })?,
        };
        if let Some(name) = self.replaced_stage(target) {
            return Err(BuildError::Unsupported(format!(
                "the target stage {name} is replaced by --build-context {name}: building a named context as the target is not supported by berth's builder"
            )));
        }
        Ok(target)
    }

    /// A stage named `name` (or numbered, for `--from=0`) before `before`.
    pub fn stage_index(&self, name: &str, before: usize) -> Option<usize> {
        self.stage_by_name(name, before)
            .or_else(|| name.parse::<usize>().ok().filter(|index| *index < before))
    }

    /// A base that names an earlier stage (by name only: `FROM 0` is an image).
    fn stage_by_name(&self, name: &str, before: usize) -> Option<usize> {
        let lower = name.to_ascii_lowercase();
        self.dockerfile.stages[..before]
            .iter()
            .position(|stage| stage.name.as_deref() == Some(lower.as_str()))
    }

    /// The name of stage `index` when a `--build-context` of that name
    /// replaces it (BuildKit's rule).
    fn replaced_stage(&self, index: usize) -> Option<&str> {
        let name = self.dockerfile.stages[index].name.as_deref()?;
        self.contexts.get(name).map(|_| name)
    }

    /// What `FROM base` of stage `index` stands on.
    pub fn resolve_base(&self, base: &str, index: usize) -> Source<'_> {
        if let Some(context) = self.contexts.get(base) {
            return Source::Context(context);
        }
        match self.stage_by_name(base, index) {
            Some(stage) => self.stage_source(stage),
            None if base.eq_ignore_ascii_case("scratch") => Source::Scratch,
            None => Source::Image(base.to_owned()),
        }
    }

    /// What `--from=name` (COPY, RUN --mount) in stage `index` reads.
    pub fn resolve_from(&self, name: &str, index: usize) -> Source<'_> {
        if let Some(context) = self.contexts.get(name) {
            return Source::Context(context);
        }
        match self.stage_index(name, index) {
            Some(stage) => self.stage_source(stage),
            None => Source::Image(name.to_owned()),
        }
    }

    fn stage_source(&self, stage: usize) -> Source<'_> {
        match self
            .replaced_stage(stage)
            .and_then(|name| self.contexts.get(name))
        {
            Some(context) => Source::Context(context),
            None => Source::Stage(stage),
        }
    }

    /// A stage's base with the global args expanded.
    /// The platform stage `index` is for: its `FROM --platform` (global
    /// ARGs expanded: `$BUILDPLATFORM`), else the build's target.
    pub fn stage_platform(&self, index: usize) -> Result<Platform, BuildError> {
        let Some(raw) = &self.dockerfile.stages[index].platform else {
            return Ok(self.target.clone());
        };
        let global = &self.global;
        let lookup = |name: &str| global.get(name).cloned().flatten();
        let expanded = expand_word(raw, self.escape(), &lookup).map_err(expand_error)?;
        parse_linux_platform(&expanded)
    }

    pub fn base_name(&self, index: usize) -> Result<String, BuildError> {
        let global = &self.global;
        let lookup = |name: &str| global.get(name).cloned().flatten();
        let base = &self.dockerfile.stages[index].base;
        let expanded = expand_word(base, self.escape(), &lookup).map_err(expand_error)?;
        if expanded.is_empty() {
            return Err(BuildError::Invalid(format!(
                "base name ({base}) should not be blank"
            )));
        }
        Ok(expanded)
    }

    /// The stages `target` needs, in Dockerfile order, and what each needs
    /// (the stages that must be built before it starts).
    pub fn needed(&mut self, target: usize) -> Result<Vec<(usize, Vec<usize>)>, BuildError> {
        let count = self.dockerfile.stages.len();
        let mut dependencies: Vec<Option<Vec<usize>>> = vec![None; count];
        let mut pending = vec![target];
        while let Some(index) = pending.pop() {
            if dependencies[index].is_some() {
                continue;
            }
            let mut needs = Vec::new();
            let base = self.base_name(index)?;
            if let Source::Stage(stage) = self.resolve_base(&base, index) {
                needs.push(stage);
            }
            for from in from_flags(&self.dockerfile.stages[index].instructions) {
                // The stages a step reads are known before the build, so a
                // variable there is not expanded: BuildKit takes the text
                // for an image reference and fails, and so does berth.
                if from.contains('$') {
                    let error = berth_types::Reference::parse_normalized(&from)
                        .err()
                        .map_or_else(|| "invalid reference format".to_owned(), |e| e.to_string());
                    return Err(BuildError::Invalid(format!(
                        "failed to parse stage name {from:?}: {error}"
                    )));
                }
                if let Source::Stage(stage) = self.resolve_from(&from, index) {
                    needs.push(stage);
                }
            }
            needs.sort_unstable();
            needs.dedup();
            pending.extend(needs.iter().copied());
            dependencies[index] = Some(needs);
        }
        let needed: Vec<(usize, Vec<usize>)> = dependencies
            .into_iter()
            .enumerate()
            .filter_map(|(index, needs)| Some((index, needs?)))
            .collect();
        self.total = needed
            .iter()
            .map(|(index, _)| self.stage_total(*index))
            .sum();
        Ok(needed)
    }

    /// A stage's steps: its `FROM` and its instructions.
    fn stage_total(&self, index: usize) -> usize {
        1 + self.dockerfile.stages[index].instructions.len()
    }

    /// A stage as BuildKit's display names it when there are several:
    /// its name, else `stage-N`.
    fn stage_label(&self, index: usize) -> String {
        match &self.dockerfile.stages[index].name {
            Some(name) => name.clone(),
            None => format!("stage-{index}"),
        }
    }

    fn start(&self, index: usize, stage_number: usize, instruction: &str) -> StepStart {
        let number = self.started.fetch_add(1, Ordering::SeqCst) + 1;
        StepStart {
            id: StepId(number),
            number,
            total: self.total,
            stage: (self.dockerfile.stages.len() > 1).then(|| self.stage_label(index)),
            stage_number,
            stage_total: self.stage_total(index),
            instruction: instruction.to_owned(),
        }
    }
}

/// What a `FROM` or a `--from` names.
pub enum Source<'a> {
    Stage(usize),
    Context(&'a ContextSource),
    Image(String),
    Scratch,
}

/// The `--from` values of a stage's COPY and RUN --mount flags, as written.
fn from_flags(instructions: &[crate::dockerfile::Instruction]) -> Vec<String> {
    let mut found = Vec::new();
    for instruction in instructions {
        match &instruction.kind {
            InstructionKind::Copy(copy) | InstructionKind::Add(copy) => found.extend(
                copy.flags
                    .iter()
                    .filter(|flag| flag.name == "from")
                    .filter_map(|flag| flag.value.clone()),
            ),
            InstructionKind::Run(run) => {
                for flag in run.flags.iter().filter(|flag| flag.name == "mount") {
                    let value = flag.value.as_deref().unwrap_or_default();
                    found.extend(value.split(',').filter_map(|field| {
                        let (key, value) = field.trim().split_once('=')?;
                        key.eq_ignore_ascii_case("from").then(|| value.to_owned())
                    }));
                }
            }
            _ => {}
        }
    }
    found
}

/// One thread's view of a build: its engine, its progress, the step it is
/// on.
pub struct StageRun<'r> {
    pub engine: &'r mut Engine,
    pub progress: &'r mut dyn Progress,
    pub build: &'r Build<'r>,
    pub request: &'r BuildRequest,
    /// The platform of the stage being built (its base images and RUNs).
    pub platform: Platform,
    pub global: &'r ArgScope,
    /// The step being run, which the progress events name.
    pub step: Option<StepId>,
}

impl<'r> StageRun<'r> {
    pub fn new(
        engine: &'r mut Engine,
        progress: &'r mut dyn Progress,
        build: &'r Build<'r>,
    ) -> Self {
        Self {
            engine,
            progress,
            request: build.request,
            platform: build.target.clone(),
            global: &build.global,
            build,
            step: None,
        }
    }

    pub fn escape(&self) -> char {
        self.build.escape()
    }

    /// Ends the current step in the progress.
    pub fn end_step(&mut self, end: &StepEnd) {
        if let Some(step) = self.step {
            self.progress.step_end(step, end);
        }
    }

    fn start_step(&mut self, index: usize, stage_number: usize, instruction: &str) {
        let start = self.build.start(index, stage_number, instruction);
        self.step = Some(start.id);
        self.progress.step(&start);
    }

    /// Builds stage `index` (the stages it needs are built).
    pub fn build_stage(&mut self, index: usize) -> Result<StepImage, BuildError> {
        let stage = &self.build.dockerfile.stages[index];
        let base = self.build.base_name(index)?;
        if self.progress.cancelled() {
            return Err(BuildError::Cancelled);
        }
        self.platform = self.build.stage_platform(index)?;
        let from_line = format!("FROM {}", stage_from_text(stage, &base));
        self.start_step(index, 1, &from_line);
        let mut image = match self.build.resolve_base(&base, index) {
            Source::Stage(earlier) => self.build.stage_result(earlier)?,
            Source::Scratch => StepImage::scratch_for(self.platform.clone()),
            Source::Image(name) => {
                let id = super::base_image(
                    self.engine,
                    &name,
                    self.request,
                    &self.platform,
                    &mut *self.progress,
                )?;
                StepImage::load(self.engine, &id)?
            }
            Source::Context(ContextSource::Image(name)) => {
                let id = super::base_image(
                    self.engine,
                    name,
                    self.request,
                    &self.platform,
                    &mut *self.progress,
                )?;
                StepImage::load(self.engine, &id)?
            }
            Source::Context(ContextSource::Directory { .. }) => {
                // The directory's files on nothing, as BuildKit's local
                // source: a COPY of all of it onto scratch.
                let mut scratch = StepImage::scratch_for(self.platform.clone());
                scratch.source_date_epoch = self.build.source_date_epoch;
                let mut state = StageState::new(index, scratch);
                // The FROM step ends below, once.
                let step = self.step.take();
                let copied = super::steps::copy_context_root(self, &mut state, &base);
                self.step = step;
                copied?;
                state.image
            }
        };
        match &image.id {
            Some(id) => self.end_step(&StepEnd::Done(id.clone())),
            None => self.end_step(&StepEnd::Empty),
        }
        image.source_date_epoch = self.build.source_date_epoch;
        let triggers = image.onbuild_triggers();
        image.config.extra.remove("OnBuild");
        let mut state = StageState::new(index, image);
        for trigger in triggers {
            let instruction = super::parse_trigger(&trigger)?;
            run_step(self, &mut state, &instruction)?;
        }
        for (number, instruction) in stage.instructions.iter().enumerate() {
            if self.progress.cancelled() {
                return Err(BuildError::Cancelled);
            }
            self.start_step(index, number + 2, &instruction.original);
            run_step(self, &mut state, instruction)?;
        }
        Ok(state.image)
    }

    /// `--label`s on the final image, as one more metadata step.
    pub fn apply_labels(&mut self, image: &mut StepImage) -> Result<(), BuildError> {
        let labels: Vec<(String, String)> = self
            .request
            .labels
            .iter()
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        super::metadata::labels(image, &labels);
        let mut key = CacheKey::of(image);
        key.add(b"--label");
        key.add(&serde_json::to_vec(&image.config).expect("a config always serializes"));
        let history = berth_types::image::History {
            created_by: Some(format!(
                "LABEL {}",
                labels
                    .iter()
                    .map(|(key, value)| format!("{key}={value}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            )),
            ..Default::default()
        };
        let saved = super::container::nop_command(image, "LABEL");
        let labelled = image.clone();
        let end = self.cached_or_make(key, |run| {
            commit_metadata(run.engine, &labelled, (history, saved))
        })?;
        let (StepEnd::Cached(id) | StepEnd::Done(id)) = end else {
            unreachable!("cached_or_make ends with an image")
        };
        image.id = Some(id);
        Ok(())
    }

    /// The image cached under `key` (unless `--no-cache`, or `--cache-from`
    /// rules it out), or the one `make` makes, then recorded.
    pub fn cached_or_make(
        &mut self,
        key: CacheKey,
        make: impl FnOnce(&mut Self) -> Result<Digest, BuildError>,
    ) -> Result<StepEnd, BuildError> {
        let key = key.finish();
        if !self.request.no_cache {
            if let Some(id) = self
                .build
                .cache
                .lookup(self.engine, &key)
                .filter(|id| self.build.may_use_cached(self.engine, id))
            {
                return Ok(StepEnd::Cached(id));
            }
        }
        let id = make(self)?;
        self.build.cache.record(&key, &id);
        Ok(StepEnd::Done(id))
    }
}

/// Builds the target once its stages are built: `--label`s, and an image
/// in the store even for a `FROM scratch` with no step.
pub fn finish_target(
    engine: &mut Engine,
    progress: &mut dyn Progress,
    build: &Build<'_>,
    target: usize,
) -> Result<Digest, BuildError> {
    let mut last = build.stage_result(target)?;
    if !build.request.labels.is_empty() {
        let mut run = StageRun::new(engine, progress, build);
        run.apply_labels(&mut last)?;
    }
    ensure_image(engine, &mut last)
}

/// The images named and every image each was built on (its `parent`s).
fn cache_sources(engine: &Engine, names: &[String]) -> HashSet<Digest> {
    let store = engine.store();
    let mut found = HashSet::new();
    for name in names {
        let Ok(mut image) = berth_engine::images::resolve_image(store, name) else {
            continue;
        };
        while found.insert(image.id.clone()) {
            let parent = berth_engine::images::image_parent(store, &image).unwrap_or_default();
            let next = Digest::parse(&parent)
                .ok()
                .and_then(|parent| store.image(&parent).ok().flatten());
            match next {
                Some(next) => image = next,
                None => break,
            }
        }
    }
    found
}

/// `FROM`'s text as the step display shows it: the base as expanded, and
/// the stage's name.
fn stage_from_text(stage: &crate::dockerfile::Stage, base: &str) -> String {
    match &stage.name {
        Some(name) => format!("{base} AS {name}"),
        None => base.to_owned(),
    }
}

pub fn expand_error(error: crate::dockerfile::ExpandError) -> BuildError {
    BuildError::Invalid(error.to_string())
}
