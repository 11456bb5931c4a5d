//! `commit`: the container's changes as a new layer on its image.

use berth_image::changes::layer_from_upper;
use berth_image::commit::{commit_image, CommitRequest};
use berth_image::parse_change;
use berth_types::image::{ContainerConfig, History};
use berth_types::Digest;

use super::lookup::find_container;
use super::paths::ContainerPaths;
use super::repair::CommitMark;
use super::state::Status;
use crate::images::parse_reference;
use crate::{Engine, EngineError};

#[derive(Clone, Debug, Default)]
pub struct CommitOptions {
    pub reference: Option<String>,
    pub author: Option<String>,
    pub message: Option<String>,
    pub changes: Vec<String>,
    pub pause: bool,
}

pub fn commit_container(
    engine: &mut Engine,
    text: &str,
    options: &CommitOptions,
) -> Result<Digest, EngineError> {
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, text)?;
    // moby's daemon/commit.go.
    match container.state.status {
        Status::Removing => {
            return Err(EngineError::Conflict(format!(
                "You cannot commit container {} which is being removed",
                container.record.id
            )))
        }
        Status::Dead => {
            return Err(EngineError::Conflict(format!(
                "You cannot commit container {} which is Dead",
                container.record.id
            )))
        }
        _ => {}
    }
    let reference = options
        .reference
        .as_deref()
        .map(parse_reference)
        .transpose()?;
    // `name:tag` as Docker names it in the events.
    let image_ref = reference.as_ref().map_or_else(String::new, |reference| {
        crate::images::familiar(&reference.to_string())
    });
    let changes = options
        .changes
        .iter()
        .map(|line| {
            parse_change(line).map_err(|error| EngineError::InvalidArgument(error.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let paths = ContainerPaths::new(&config.root, &config.run_root, &container.record.id);
    let base = Digest::parse(&container.record.image_id)
        .map_err(|error| EngineError::Start(error.to_string()))?;

    // The image config gets the container's runtime settings, as Docker's.
    let run = &container.record.run;
    let mut image_config = ContainerConfig {
        user: Some(run.user.clone()).filter(|user| !user.is_empty()),
        env: Some(run.env.clone()),
        cmd: container
            .record
            .config
            .get("Cmd")
            .and_then(|cmd| serde_json::from_value(cmd.clone()).ok()),
        entrypoint: container
            .record
            .config
            .get("Entrypoint")
            .and_then(|value| serde_json::from_value(value.clone()).ok()),
        working_dir: Some(run.working_dir.clone()).filter(|directory| !directory.is_empty()),
        labels: Some(run.labels.clone()).filter(|labels| !labels.is_empty()),
        stop_signal: Some(run.stop_signal.clone()).filter(|signal| !signal.is_empty()),
        ..ContainerConfig::default()
    };
    for change in &changes {
        change.apply(&mut image_config);
    }

    let wanted = options.pause && container.state.status == Status::Running;
    let staged = config
        .root
        .join("tmp")
        .join(format!("commit-{}", super::names::new_id()));
    // The intent before the freeze and the staged file: a commit killed
    // from here on is undone by the next command (see `super::repair`).
    let mark = CommitMark::write(&paths, wanted, &staged)?;
    // Paused by someone else meanwhile: that pause is not ours to undo.
    let pause = wanted && super::pause_container(engine, &container.record.id).is_ok();
    if wanted && !pause {
        mark.update(false, &staged)?;
    }
    let layer = (|| {
        let file = std::fs::File::create(&staged)
            .map_err(|error| EngineError::Start(format!("failed to create {staged:?}: {error}")))?;
        let mut writer = std::io::BufWriter::with_capacity(1 << 20, file);
        let upper = paths.rootfs().upper;
        if upper.exists() {
            layer_from_upper(&upper, &mut writer).map_err(|error| {
                EngineError::Start(format!("failed to write the layer: {error}"))
            })?;
        } else {
            // Never started: an empty layer, as Docker commits one.
            tar::Builder::new(&mut writer).finish().map_err(|error| {
                EngineError::Start(format!("failed to write the layer: {error}"))
            })?;
        }
        std::io::Write::flush(&mut writer).map_err(|error| EngineError::Start(error.to_string()))
    })();
    if pause {
        let _ = super::unpause_container(engine, &container.record.id);
    }
    let result = layer.and_then(|()| {
        commit_image(
            engine.store_mut(),
            CommitRequest {
                base: &base,
                layer_tar: &staged,
                config: image_config,
                history: History {
                    created_by: Some(run.args.join(" ")),
                    comment: options.message.clone(),
                    author: options.author.clone(),
                    ..History::default()
                },
                author: options.author.clone(),
                reference,
            },
        )
        .map_err(|error| EngineError::Start(format!("failed to commit: {error}")))
    });
    let _ = fs_err::remove_file(&staged);
    drop(mark);
    let id = result?.id;
    // Docker's `tag` of the new image, then the container's `commit`.
    let image_id = id.to_string();
    if !image_ref.is_empty() {
        crate::events::emit_image(engine.store(), "tag", &image_id, &image_ref);
    }
    let comment = options.message.clone().unwrap_or_default();
    let attributes = [
        ("comment", comment.as_str()),
        ("imageID", image_id.as_str()),
        ("imageRef", image_ref.as_str()),
    ];
    crate::events::emit_container_with(&config.root, "commit", &container.record, &attributes);
    Ok(id)
}
