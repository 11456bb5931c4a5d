//! The stages of a build: global ARGs, the target and the stages it needs
//! (its base and `COPY --from` sources, transitively), each built in
//! order from its `FROM`.

use berth_engine::Engine;
use berth_types::Digest;

use super::args::{platform_args, ArgScope, BuildArgs};
use super::cache::{BuildCache, CacheKey};
use super::container::{commit_metadata, ensure_image};
use super::image::StepImage;
use super::steps::{run_step, StageState};
use crate::dockerfile::{expand_word, Dockerfile, InstructionKind};
use crate::ignore::IgnoreMatcher;
use crate::{BuildError, BuildRequest, Progress, StepEnd};

/// One build's running state.
pub struct StageRun<'a> {
    pub engine: &'a mut Engine,
    pub request: &'a BuildRequest,
    pub progress: &'a mut dyn Progress,
    pub dockerfile: &'a Dockerfile,
    pub ignore: IgnoreMatcher,
    pub args: BuildArgs,
    pub cache: BuildCache,
    /// Global ARGs with their values (platform ones first).
    pub global: ArgScope,
    /// The built stages' last images, by index.
    pub results: Vec<Option<StepImage>>,
    /// `--cache-from`'s images and the images they were built on.
    cache_sources: Option<std::collections::HashSet<Digest>>,
    step: usize,
    total: usize,
}

impl<'a> StageRun<'a> {
    pub fn new(
        engine: &'a mut Engine,
        request: &'a BuildRequest,
        progress: &'a mut dyn Progress,
        dockerfile: &'a Dockerfile,
        ignore: IgnoreMatcher,
    ) -> Self {
        let cache = BuildCache::new(&engine.config().root);
        Self {
            engine,
            request,
            progress,
            dockerfile,
            ignore,
            args: BuildArgs::new(request.build_args.clone()),
            cache,
            global: ArgScope::default(),
            results: vec![None; dockerfile.stages.len()],
            cache_sources: None,
            step: 0,
            total: 0,
        }
    }

    /// Whether a cached image may serve: any, unless `--cache-from`
    /// named the images whose steps alone may (the classic builder's rule).
    pub fn may_use_cached(&mut self, id: &Digest) -> bool {
        if self.request.cache_from.is_empty() {
            return true;
        }
        let allowed = self
            .cache_sources
            .get_or_insert_with(|| cache_sources(self.engine, &self.request.cache_from));
        allowed.contains(id)
    }

    pub fn escape(&self) -> char {
        self.dockerfile.directives.escape
    }

    pub fn unconsumed_args(&self) -> Vec<String> {
        self.args.unconsumed()
    }

    /// Builds the target and what it needs; returns the target's image.
    pub fn build(&mut self) -> Result<Digest, BuildError> {
        self.declare_global_args()?;
        let target = self.target()?;
        let needed = self.needed(target)?;
        self.total = needed
            .iter()
            .map(|index| 1 + self.dockerfile.stages[*index].instructions.len())
            .sum();
        for index in needed {
            let built = self.build_stage(index)?;
            self.results[index] = Some(built);
        }
        let mut last = self.results[target].clone().expect("the target was built");
        if !self.request.labels.is_empty() {
            self.apply_labels(&mut last)?;
        }
        ensure_image(self.engine, &mut last)
    }

    fn declare_global_args(&mut self) -> Result<(), BuildError> {
        let architecture = berth_image::host_architecture();
        for (name, value) in platform_args("linux", architecture, None) {
            self.global.declare(&name, Some(value));
        }
        let escape = self.escape();
        for declaration in &self.dockerfile.global_args {
            let value = match self.args.take(&declaration.name) {
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

    fn target(&self) -> Result<usize, BuildError> {
        let stages = &self.dockerfile.stages;
        if stages.is_empty() {
            return Err(BuildError::Invalid(
                "the Dockerfile has no FROM: no build stage".to_owned(),
            ));
        }
        match self
            .request
            .target
            .as_deref()
            .filter(|target| !target.is_empty())
        {
            None => Ok(stages.len() - 1),
            Some(target) => self.stage_index(target, stages.len()).ok_or_else(|| {
                BuildError::Invalid(format!("target stage \"{target}\" could not be found"))
            }),
        }
    }

    /// A stage named `name` (or numbered, for `--from=0`) before `before`.
    pub fn stage_index(&self, name: &str, before: usize) -> Option<usize> {
        let lower = name.to_ascii_lowercase();
        let stages = &self.dockerfile.stages[..before];
        if let Some(index) = stages
            .iter()
            .position(|stage| stage.name.as_deref() == Some(lower.as_str()))
        {
            return Some(index);
        }
        name.parse::<usize>().ok().filter(|index| *index < before)
    }

    /// A stage's base with the global args expanded.
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

    /// The stages `target` needs, in Dockerfile order.
    fn needed(&self, target: usize) -> Result<Vec<usize>, BuildError> {
        let mut wanted = vec![false; self.dockerfile.stages.len()];
        let mut pending = vec![target];
        while let Some(index) = pending.pop() {
            if std::mem::replace(&mut wanted[index], true) {
                continue;
            }
            let base = self.base_name(index)?;
            if let Some(dependency) = self.stage_by_name(&base, index) {
                pending.push(dependency);
            }
            for instruction in &self.dockerfile.stages[index].instructions {
                let (InstructionKind::Copy(copy) | InstructionKind::Add(copy)) = &instruction.kind
                else {
                    continue;
                };
                let from = copy
                    .flags
                    .iter()
                    .find(|flag| flag.name == "from")
                    .and_then(|flag| flag.value.as_deref());
                if let Some(dependency) = from.and_then(|from| self.stage_index(from, index)) {
                    pending.push(dependency);
                }
            }
        }
        Ok((0..wanted.len()).filter(|index| wanted[*index]).collect())
    }

    /// A base that names an earlier stage (by name only: `FROM 0` is an image).
    fn stage_by_name(&self, base: &str, before: usize) -> Option<usize> {
        let lower = base.to_ascii_lowercase();
        self.dockerfile.stages[..before]
            .iter()
            .position(|stage| stage.name.as_deref() == Some(lower.as_str()))
    }

    fn build_stage(&mut self, index: usize) -> Result<StepImage, BuildError> {
        let stage = &self.dockerfile.stages[index];
        let base = self.base_name(index)?;
        self.step += 1;
        let from_line = format!("FROM {}", stage_from_text(stage, &base));
        self.progress.step(self.step, self.total, &from_line);
        let mut image = match self.stage_by_name(&base, index) {
            Some(earlier) => self.results[earlier]
                .clone()
                .expect("a stage's base stage is built before it"),
            None if base.eq_ignore_ascii_case("scratch") => StepImage::scratch(),
            None => {
                let id =
                    super::base_image(self.engine, &base, self.request.pull, &mut *self.progress)?;
                StepImage::load(self.engine, &id)?
            }
        };
        if let Some(id) = &image.id {
            self.progress.step_end(&StepEnd::Done(id.clone()));
        }
        let triggers = image.onbuild_triggers();
        image.config.extra.remove("OnBuild");
        let mut state = StageState::new(index, image);
        for trigger in triggers {
            let instruction = super::parse_trigger(&trigger)?;
            run_step(self, &mut state, &instruction)?;
        }
        for instruction in &stage.instructions {
            if self.progress.cancelled() {
                return Err(BuildError::Cancelled);
            }
            self.step += 1;
            self.progress
                .step(self.step, self.total, &instruction.original);
            run_step(self, &mut state, instruction)?;
        }
        Ok(state.image)
    }

    /// `--label`s on the final image, as one more metadata step.
    fn apply_labels(&mut self, image: &mut StepImage) -> Result<(), BuildError> {
        let labels: Vec<(String, String)> = self
            .request
            .labels
            .iter()
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        super::metadata::labels(image, &labels);
        let mut key = CacheKey::new(image.id.as_ref());
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
        let (StepEnd::Cached(id) | StepEnd::Done(id)) = end;
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
                .cache
                .lookup(self.engine, &key)
                .filter(|id| self.may_use_cached(id))
            {
                return Ok(StepEnd::Cached(id));
            }
        }
        let id = make(self)?;
        self.cache.record(&key, &id);
        Ok(StepEnd::Done(id))
    }
}

/// The images named and every image each was built on (its `parent`s).
fn cache_sources(engine: &Engine, names: &[String]) -> std::collections::HashSet<Digest> {
    let store = engine.store();
    let mut found = std::collections::HashSet::new();
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
