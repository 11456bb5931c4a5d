//! Running a parsed Dockerfile: the stages the target needs, as a graph
//! (independent stages at the same time, see [`schedule`]), each step
//! looked up in the cache or run (metadata steps commit a config only;
//! RUN, COPY, ADD and WORKDIR go through a container, see [`container`]),
//! then the tags.
//!
//! Every step leaves an image in the store (untagged, its parent recorded
//! as moby's classic builder records it), which is also what the cache
//! points to.

mod archive;
mod args;
mod cache;
mod container;
mod contexts;
mod copy;
mod emulator;
mod export;
mod fetch;
mod git;
mod image;
mod metadata;
mod mounts;
mod owner;
mod place;
mod root_path;
mod schedule;
mod stages;
mod steps;

use std::path::{Path, PathBuf};

use berth_engine::images::{parse_reference, resolve_image, tag_image};
use berth_engine::Engine;

pub use cache::prune_cache;
pub use export::export_image;

use crate::dockerfile::{self, Dockerfile};
use crate::ignore::IgnoreMatcher;
use crate::{BuildError, BuildOutcome, BuildRequest, DockerfileSource, Progress};
use berth_types::image::Platform;

/// See [`crate::build`].
pub fn build(
    engine: &mut Engine,
    request: &BuildRequest,
    progress: &mut dyn Progress,
) -> Result<BuildOutcome, BuildError> {
    check_request(request)?;
    let (text, dockerfile_path) = read_dockerfile(request)?;
    let parsed =
        dockerfile::parse(&text).map_err(|error| BuildError::Invalid(error.to_string()))?;
    let ignore = read_ignore(&request.context, dockerfile_path.as_deref())?;
    let contexts = contexts::NamedContexts::resolve(&request.build_contexts)?;
    let mut build = stages::Build::new(request, &parsed, ignore, contexts, engine.root());
    build.declare_global_args()?;
    let target = build.target()?;
    let needed = build.needed(target)?;
    schedule::build_stages(engine, progress, &build, &needed)?;
    let image = stages::finish_target(engine, progress, &build, target)?;
    let unconsumed = build.unconsumed_args();
    if !unconsumed.is_empty() {
        progress.warning(&format!(
            "[Warning] One or more build-args [{}] were not consumed",
            unconsumed.join(" ")
        ));
    }
    for tag in &request.tags {
        tag_image(engine.store_mut(), &image.to_string(), tag)?;
    }
    Ok(BuildOutcome {
        image,
        tags: request.tags.clone(),
    })
}

/// What the builder does not do, refused before anything runs; tags
/// checked before the build takes minutes.
fn check_request(request: &BuildRequest) -> Result<(), BuildError> {
    for tag in &request.tags {
        parse_reference(tag)
            .map_err(|error| BuildError::Invalid(format!("invalid tag {tag:?}: {error}")))?;
    }
    target_platform(request)?;
    source_date_epoch(request)?;
    if !request.context.is_dir() {
        return Err(BuildError::Invalid(format!(
            "unable to prepare context: path {:?} not found",
            request.context.display().to_string()
        )));
    }
    Ok(())
}

/// The build's `SOURCE_DATE_EPOCH`: a build arg's, else the request's
/// (the CLI's environment).
pub(crate) fn source_date_epoch(request: &BuildRequest) -> Result<Option<i64>, BuildError> {
    match request.build_args.get(args::SOURCE_DATE_EPOCH) {
        Some(Some(text)) if !text.is_empty() => text.parse::<i64>().map(Some).map_err(|_| {
            BuildError::Invalid(format!(
                "invalid SOURCE_DATE_EPOCH {text:?}: expected seconds since 1970-01-01"
            ))
        }),
        _ => Ok(request.source_date_epoch),
    }
}

/// `--platform` (a Linux platform), else this host's.
pub(crate) fn target_platform(request: &BuildRequest) -> Result<Platform, BuildError> {
    match request.platform.as_deref().filter(|text| !text.is_empty()) {
        Some(text) => parse_linux_platform(text),
        None => Ok(image::host_platform()),
    }
}

/// A platform specifier of a Linux platform (`linux/arm64`, `arm64`).
pub(crate) fn parse_linux_platform(text: &str) -> Result<Platform, BuildError> {
    let platform = berth_types::container::platform::parse_platform(text).map_err(|error| {
        BuildError::Invalid(format!("failed to parse platform {text}: {error}"))
    })?;
    if platform.os != "linux" {
        return Err(BuildError::Unsupported(format!(
            "berth builds images for linux only, not for {text}"
        )));
    }
    Ok(platform)
}

/// The Dockerfile's text and, when it is a file, where it is.
fn read_dockerfile(request: &BuildRequest) -> Result<(String, Option<PathBuf>), BuildError> {
    match &request.dockerfile {
        DockerfileSource::Inline(text) => Ok((text.clone(), None)),
        DockerfileSource::Path(path) => {
            let path = if path.is_absolute() {
                path.clone()
            } else {
                request.context.join(path)
            };
            let text = fs_err::read_to_string(&path).map_err(|source| {
                if source.kind() == std::io::ErrorKind::NotFound {
                    BuildError::Invalid(format!(
                        "failed to read dockerfile: open {}: no such file or directory",
                        path.display()
                    ))
                } else {
                    BuildError::Context {
                        path: path.clone(),
                        source,
                    }
                }
            })?;
            Ok((text, Some(path)))
        }
    }
}

/// `<Dockerfile>.dockerignore` beside the Dockerfile, else the context's
/// `.dockerignore`, else nothing ignored.
fn read_ignore(context: &Path, dockerfile: Option<&Path>) -> Result<IgnoreMatcher, BuildError> {
    let beside = dockerfile.and_then(|path| {
        let name = path.file_name()?.to_string_lossy().into_owned();
        Some(path.with_file_name(format!("{name}.dockerignore")))
    });
    let candidates = beside.into_iter().chain([context.join(".dockerignore")]);
    for candidate in candidates {
        match fs_err::read_to_string(&candidate) {
            Ok(text) => {
                return IgnoreMatcher::parse(&text).map_err(|error| {
                    BuildError::Invalid(format!("{}: {error}", candidate.display()))
                })
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(BuildError::Context {
                    path: candidate,
                    source,
                })
            }
        }
    }
    IgnoreMatcher::parse("").map_err(|error| BuildError::Invalid(error.to_string()))
}

/// An image named by `FROM` or `COPY --from`, from the store or pulled.
fn base_image(
    engine: &mut Engine,
    name: &str,
    build: &BuildRequest,
    platform: &Platform,
    progress: &mut dyn Progress,
) -> Result<berth_types::Digest, BuildError> {
    // A local image of another platform is as good as missing (Docker's
    // rule): the one for `platform` is pulled.
    let mismatch = berth_engine::containers::local_platform_mismatch(engine, name, platform)?;
    if !build.pull && mismatch.is_none() {
        if let Ok(image) = resolve_image(engine.store(), name) {
            return Ok(image.id);
        }
    }
    let mut settings =
        berth_engine::images::pull::RegistrySettings::load(&berth_engine::config_file()).map_err(
            |error| BuildError::Invalid(format!("failed to read the registry settings: {error}")),
        )?;
    settings.credentials = build.registry_credentials.clone();
    let wanted = berth_types::container::platform::format_platform(platform);
    let request = berth_engine::images::pull::PullRequest {
        reference: name.to_owned(),
        platform: Some(wanted.clone()),
        concurrency: 3,
        settings,
    };
    let statuses = std::sync::Mutex::new(Vec::new());
    let collect = |event| {
        if let berth_engine::images::PullEvent::Status(text) = event {
            if let Ok(mut statuses) = statuses.lock() {
                statuses.push(text);
            }
        }
    };
    let pulled = berth_engine::images::pull::pull_image(engine.store_mut(), &request, &collect)
        .map_err(|error| {
            let found = match &mismatch {
                Some(actual) => {
                    format!("the local image {name} is for {actual}, not {wanted}, and ")
                }
                None => String::new(),
            };
            BuildError::Invalid(format!(
                "{found}failed to pull {name}: {}",
                berth_engine::ErrorChain(&error)
            ))
        })?;
    for status in statuses.into_inner().unwrap_or_default() {
        progress.status(&format!("Status: {status}"));
    }
    Ok(pulled.id)
}

/// Parses one ONBUILD trigger as the instruction it is.
fn parse_trigger(trigger: &str) -> Result<dockerfile::Instruction, BuildError> {
    let parsed: Dockerfile =
        dockerfile::parse(&format!("FROM scratch\n{trigger}\n")).map_err(|error| {
            BuildError::Invalid(format!(
                "failed to parse ONBUILD trigger {trigger:?}: {error}"
            ))
        })?;
    parsed
        .stages
        .into_iter()
        .next()
        .and_then(|stage| stage.instructions.into_iter().next())
        .ok_or_else(|| BuildError::Invalid(format!("empty ONBUILD trigger {trigger:?}")))
}
