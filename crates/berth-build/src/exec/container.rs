//! The steps that change files go through a container of the engine: a
//! RUN starts one on the step's parent image and reads its output; COPY,
//! ADD and WORKDIR write into a created one's root (the engine's `cp`
//! path, which resolves every name inside that root). Either way the
//! container's writable layer becomes the step's layer, and the container
//! is removed, also when the step fails.

use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use berth_engine::containers::paths::ContainerPaths;
use berth_engine::containers::{
    build_owner, create_container, find_container, kill_container, remove_container,
    start_container, with_copy_root, Attachment, BUILD_OWNER_LABEL,
};
use berth_engine::Engine;
use berth_image::commit::{commit_step, StepCommit};
use berth_types::container::config::ContainerConfig as CreateConfig;
use berth_types::container::host_config::{HostConfig, LogConfig};
use berth_types::container::CreateRequest;
use berth_types::image::History;
use berth_types::Digest;

use super::image::StepImage;
use crate::{BuildError, KeepContainers, OutputStream, Progress, StepId};

/// What a RUN's container runs with.
pub struct RunSettings {
    pub args: Vec<String>,
    pub env: Vec<String>,
    pub network: Option<String>,
    /// `--add-host` entries.
    pub extra_hosts: Vec<String>,
    /// `--shm-size` in bytes; 0 for the default.
    pub shm_size: i64,
    pub resources: berth_types::container::resources::Resources,
    /// `RUN --mount`s: `source:target[:ro]` binds and tmpfs mounts.
    pub binds: Vec<String>,
    pub tmpfs: std::collections::BTreeMap<String, String>,
    /// Whether the container stays after the step (the classic builder's
    /// `rm`/`forcerm`); a kept one has no builder label, so no repair
    /// removes it.
    pub keep: KeepContainers,
}

/// Creates a container on `image` for one step (with `run`, a RUN's
/// process; without, one that is never started: a root to write into),
/// hands it to `action`, and removes it whatever `action` returned.
pub fn with_step_container<T>(
    engine: &mut Engine,
    image: &Digest,
    step: &StepImage,
    run: Option<&RunSettings>,
    action: impl FnOnce(&mut Engine, &str) -> Result<T, BuildError>,
) -> Result<T, BuildError> {
    let keep = run.map_or(KeepContainers::None, |run| run.keep);
    let id = create_step_container(engine, image, step, run)?;
    let result = action(engine, &id);
    let kept = match keep {
        KeepContainers::None => false,
        KeepContainers::Failed => result.is_err(),
        KeepContainers::All => true,
    };
    if !kept {
        if let Err(error) = remove_container(engine, &id, true) {
            tracing::warn!(container = %id, %error, "failed to remove a build container");
        }
    }
    result
}

/// Runs `action` with the roots of `images` mounted on the host (each a
/// created, never started, container's, removed afterwards): what `RUN
/// --mount=…,from=IMAGE` binds from. The roots stay mounted while `action`
/// runs, which gets an engine of its own for the step (the one given
/// holds the mounts).
pub fn with_image_roots<T>(
    engine: &mut Engine,
    images: &[Digest],
    action: impl FnOnce(&mut Engine, &[PathBuf]) -> Result<T, BuildError>,
) -> Result<T, BuildError> {
    if images.is_empty() {
        return action(engine, &[]);
    }
    let scratch = StepImage::scratch();
    let mut ids = Vec::new();
    let mut result = Err(BuildError::Cancelled);
    for image in images {
        match create_step_container(engine, image, &scratch, None) {
            Ok(id) => ids.push(id),
            Err(error) => {
                result = Err(error);
                break;
            }
        }
    }
    if ids.len() == images.len() {
        result = Engine::open(engine.config().clone())
            .map_err(BuildError::from)
            .and_then(|mut step_engine| {
                let mut roots = Vec::new();
                let mut action = Some(action);
                mounted_roots(engine, &ids, &mut roots, &mut |roots| {
                    let action = action
                        .take()
                        .expect("the innermost root runs the action once");
                    action(&mut step_engine, roots)
                })
            });
    }
    for id in &ids {
        if let Err(error) = remove_container(engine, id, true) {
            tracing::warn!(container = %id, %error, "failed to remove a build container");
        }
    }
    result
}

/// The roots of `ids`, one mounted inside the other's action.
fn mounted_roots<T>(
    engine: &Engine,
    ids: &[String],
    roots: &mut Vec<PathBuf>,
    action: &mut dyn FnMut(&[PathBuf]) -> Result<T, BuildError>,
) -> Result<T, BuildError> {
    match ids.split_first() {
        None => action(roots),
        Some((first, rest)) => with_root(engine, first, |root| {
            roots.push(root.to_path_buf());
            let result = mounted_roots(engine, rest, roots, action);
            roots.pop();
            result
        }),
    }
}

fn create_step_container(
    engine: &mut Engine,
    image: &Digest,
    step: &StepImage,
    run: Option<&RunSettings>,
) -> Result<String, BuildError> {
    let config = CreateConfig {
        image: image.to_string(),
        // The image's ENTRYPOINT does not wrap a RUN (`--entrypoint ""`).
        entrypoint: Some(vec![String::new()]),
        cmd: Some(
            run.map(|run| run.args.clone())
                .unwrap_or_else(|| vec!["/bin/true".to_owned()]),
        ),
        env: run.map(|run| run.env.clone()),
        user: step.config.user.clone().unwrap_or_default(),
        working_dir: step.working_dir(),
        // Removed with the step; a builder killed first leaves it to the
        // next command, which sees its owner gone (berth-engine `repair`).
        labels: Some(
            std::iter::once((BUILD_OWNER_LABEL.to_owned(), build_owner()))
                .filter(|_| run.is_none_or(|run| run.keep == KeepContainers::None))
                .collect(),
        ),
        ..CreateConfig::default()
    };
    let host_config = HostConfig {
        log_config: LogConfig {
            r#type: "none".to_owned(),
            config: None,
        },
        network_mode: run
            .and_then(|run| run.network.clone())
            .filter(|mode| mode != "default")
            .unwrap_or_default(),
        extra_hosts: run
            .map(|run| run.extra_hosts.clone())
            .filter(|hosts| !hosts.is_empty()),
        shm_size: run.map_or(0, |run| run.shm_size),
        resources: run.map(|run| run.resources.clone()).unwrap_or_default(),
        binds: run
            .map(|run| run.binds.clone())
            .filter(|binds| !binds.is_empty()),
        tmpfs: run.map(|run| run.tmpfs.clone()).unwrap_or_default(),
        ..HostConfig::default()
    };
    let request = CreateRequest {
        name: None,
        config,
        host_config,
        networking_config: Default::default(),
        // A RUN's programs are for the stage's platform (another one
        // than the host's runs through its emulator, `emulator.rs`).
        platform: run.map(|_| step.platform.clone()),
    };
    Ok(create_container(engine, &request)?)
}

/// Starts the container, sends its output to `progress`, and returns its
/// exit status once it ended; a cancelled build kills it.
pub fn run_container(
    engine: &mut Engine,
    id: &str,
    progress: &mut dyn Progress,
    step: Option<StepId>,
) -> Result<i32, BuildError> {
    let step = step.unwrap_or(StepId(0));
    let (stdout, stdout_writer) = std::io::pipe().map_err(BuildError::Pipe)?;
    let (stderr, stderr_writer) = std::io::pipe().map_err(BuildError::Pipe)?;
    let attachment = Attachment {
        stdin: None,
        stdout: Some(OwnedFd::from(stdout_writer)),
        stderr: Some(OwnedFd::from(stderr_writer)),
    };
    let mut started = start_container(engine, id, Some(attachment))?;
    progress.running_in(step, id);
    let mut streams = [
        (Some(stdout), OutputStream::Stdout),
        (Some(stderr), OutputStream::Stderr),
    ];
    let mut buffer = vec![0u8; 64 * 1024];
    let mut cancelled = false;
    while streams.iter().any(|(reader, _)| reader.is_some()) {
        if !cancelled && progress.cancelled() {
            cancelled = true;
            let _ = kill_container(engine, id, "KILL");
        }
        let mut fds: Vec<PollFd<'_>> = streams
            .iter()
            .filter_map(|(reader, _)| reader.as_ref())
            .map(|reader| PollFd::new(reader.as_fd(), PollFlags::POLLIN))
            .collect();
        match poll(&mut fds, PollTimeout::from(200u16)) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(error) => return Err(BuildError::Pipe(error.into())),
        }
        let ready: Vec<bool> = fds
            .iter()
            .map(|fd| fd.revents().is_some_and(|events| !events.is_empty()))
            .collect();
        drop(fds);
        let mut open = streams.iter_mut().filter(|(reader, _)| reader.is_some());
        for is_ready in ready {
            let Some((reader, stream)) = open.next() else {
                break;
            };
            if !is_ready {
                continue;
            }
            let pipe = reader.as_mut().expect("only open streams are polled");
            match pipe.read(&mut buffer) {
                Ok(0) => *reader = None,
                Ok(count) => progress.output(step, *stream, &buffer[..count]),
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) => return Err(BuildError::Pipe(error)),
            }
        }
    }
    let code = started.wait_exit().unwrap_or(137);
    if cancelled {
        return Err(BuildError::Cancelled);
    }
    Ok(code)
}

/// Runs `action` with the (not running) container's root on the host.
pub fn with_root<T>(
    engine: &Engine,
    id: &str,
    action: impl FnOnce(&Path) -> Result<T, BuildError>,
) -> Result<T, BuildError> {
    let container = find_container(engine.store(), engine.config(), id)?;
    let mut outcome = None;
    with_copy_root(engine, &container, |root| {
        outcome = Some(action(root.path));
        Ok(())
    })?;
    outcome.expect("with_copy_root ran the action")
}

/// Commits what the container changed as a layer on `parent`.
pub fn commit_layer(
    engine: &mut Engine,
    id: &str,
    parent: &Digest,
    step: &StepImage,
    (history, saved_cmd): (History, Vec<String>),
) -> Result<Digest, BuildError> {
    let config = engine.config();
    let paths = ContainerPaths::new(&config.root, &config.run_root, id);
    // Staged under the store's shared lock, with a name that carries this
    // process's pid: a berth process that opens the store meanwhile (the
    // monitor another stage's RUN spawns) leaves it alone.
    let staging_lock = engine
        .store()
        .lock_shared()
        .map_err(berth_engine::EngineError::from)?;
    let staged = engine.store().staging_path("build-layer");
    let write = || -> Result<(), BuildError> {
        let file = fs_err::File::create(&staged).map_err(BuildError::Layer)?;
        let mut writer = std::io::BufWriter::with_capacity(1 << 20, file);
        let upper = paths.rootfs().upper;
        if upper.exists() {
            let clamp = step
                .source_date_epoch
                .and_then(|epoch| u64::try_from(epoch).ok());
            berth_image::changes::layer_from_upper_clamped(&upper, &mut writer, clamp).map_err(
                |error| BuildError::Invalid(format!("failed to write the step's layer: {error}")),
            )?;
        } else {
            tar::Builder::new(&mut writer)
                .finish()
                .map_err(BuildError::Layer)?;
        }
        std::io::Write::flush(&mut writer).map_err(BuildError::Layer)
    };
    let result = write().and_then(|()| {
        store_step(
            engine,
            step,
            (Some(parent), Some(&staged)),
            history,
            Some(container_config(step, saved_cmd)),
        )
    });
    let _ = fs_err::remove_file(&staged);
    drop(staging_lock);
    result
}

/// The step's `container_config`: its config with the step's command.
fn container_config(step: &StepImage, saved_cmd: Vec<String>) -> serde_json::Value {
    let mut config = serde_json::to_value(&step.config).expect("a config always serializes");
    config["Cmd"] = serde_json::json!(saved_cmd);
    config
}

/// What moby's classic builder records as a step's command: the RUN's
/// own (after `|N NAME=value…`, its build args, sorted) or, for another
/// step, the shell and `#(nop) INSTRUCTION`.
pub fn nop_command(step: &StepImage, instruction: &str) -> Vec<String> {
    let mut command = step.shell();
    command.push(format!("#(nop) {instruction}"));
    command
}

/// Stores `step`'s config as an image on `parent` (none: scratch), with
/// `layer` when the step changed files.
fn store_step(
    engine: &mut Engine,
    step: &StepImage,
    (parent, layer): (Option<&Digest>, Option<&Path>),
    mut history: History,
    container_config: Option<serde_json::Value>,
) -> Result<Digest, BuildError> {
    if let Some(epoch) = step.source_date_epoch {
        history.created = super::image::epoch_time(epoch);
    }
    commit_step(
        engine.store_mut(),
        StepCommit {
            parent,
            layer_tar: layer,
            config: step.config.clone(),
            history,
            author: step.author.clone(),
            container_config,
            platform: Some(step.platform.clone()),
        },
    )
    .map(|committed| committed.id)
    .map_err(|error| BuildError::Invalid(format!("failed to commit the step: {error}")))
}

/// A step that needs a container needs its parent in the store: `FROM
/// scratch` with nothing yet gets an empty image first.
pub fn ensure_image(engine: &mut Engine, step: &mut StepImage) -> Result<Digest, BuildError> {
    if let Some(id) = &step.id {
        return Ok(id.clone());
    }
    let history = History {
        created_by: Some("FROM scratch".to_owned()),
        ..History::default()
    };
    let id = store_step(engine, step, (None, None), history, None)?;
    step.id = Some(id.clone());
    Ok(id)
}

/// A step that changes only the config: a new image on the same layers.
pub fn commit_metadata(
    engine: &mut Engine,
    step: &StepImage,
    (history, saved_cmd): (History, Vec<String>),
) -> Result<Digest, BuildError> {
    let parent = step.id.clone();
    store_step(
        engine,
        step,
        (parent.as_ref(), None),
        history,
        Some(container_config(step, saved_cmd)),
    )
}
