//! `commit`: the container's changes as a new layer on its image.

use std::path::PathBuf;

use berth_image::changes::layer_from_upper;
use berth_image::commit::{commit_image, CommitRequest};
use berth_image::import::ChangeError;
use berth_image::parse_change;
use berth_types::image::{ContainerConfig, History};
use berth_types::{Digest, DigestError};

use super::lookup::find_container;
use super::paths::ContainerPaths;
use super::repair::CommitMark;
use super::state::Status;
use crate::images::parse_reference;
use crate::{Engine, EngineError, ErrorKind};

/// What can stop a commit; the container states are moby's words
/// (`daemon/commit.go`).
#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    #[error("You cannot commit container {id} which is being removed")]
    Removing { id: String },
    #[error("You cannot commit container {id} which is Dead")]
    Dead { id: String },
    /// A `--change` line; the parser's words are Docker's.
    #[error(transparent)]
    Change(#[from] ChangeError),
    #[error("invalid image id {id:?} in the container record")]
    ImageId {
        id: String,
        #[source]
        source: DigestError,
    },
    #[error("failed to create {path:?}")]
    CreateLayer {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to write the layer")]
    WriteLayer(#[source] berth_image::changes::ChangesError),
    #[error("failed to write the layer")]
    WriteLayerFile(#[source] std::io::Error),
    #[error("failed to commit")]
    Commit(#[source] berth_image::commit::CommitError),
}

impl CommitError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Removing { .. } | Self::Dead { .. } => ErrorKind::Conflict,
            Self::Change(_) => ErrorKind::InvalidArgument,
            Self::ImageId { .. }
            | Self::CreateLayer { .. }
            | Self::WriteLayer(_)
            | Self::WriteLayerFile(_)
            | Self::Commit(_) => ErrorKind::Internal,
        }
    }
}

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
            return Err(CommitError::Removing {
                id: container.record.id,
            }
            .into())
        }
        Status::Dead => {
            return Err(CommitError::Dead {
                id: container.record.id,
            }
            .into())
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
        .map(|line| parse_change(line).map_err(CommitError::from))
        .collect::<Result<Vec<_>, _>>()?;
    let paths = ContainerPaths::new(&config.root, &config.run_root, &container.record.id);
    let base =
        Digest::parse(&container.record.image_id).map_err(|source| CommitError::ImageId {
            id: container.record.image_id.clone(),
            source,
        })?;

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
    // The container's health check goes into the image, as moby's commit
    // merges the container's config in (`HEALTHCHECK` changes apply over it).
    if let Some(health) = container
        .record
        .config
        .get("Healthcheck")
        .filter(|health| !health.is_null())
    {
        image_config
            .extra
            .insert("Healthcheck".to_owned(), health.clone());
    }
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
        let file = fs_err::File::create(&staged).map_err(|source| CommitError::CreateLayer {
            path: staged.clone(),
            source,
        })?;
        let mut writer = std::io::BufWriter::with_capacity(1 << 20, file);
        let upper = paths.rootfs().upper;
        if upper.exists() {
            layer_from_upper(&upper, &mut writer).map_err(CommitError::WriteLayer)?;
        } else {
            // Never started: an empty layer, as Docker commits one.
            tar::Builder::new(&mut writer)
                .finish()
                .map_err(CommitError::WriteLayerFile)?;
        }
        std::io::Write::flush(&mut writer).map_err(CommitError::WriteLayerFile)
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
                container: Some((container.record.id.clone(), container.record.config.clone())),
            },
        )
        .map_err(CommitError::Commit)
    });
    let _ = fs_err::remove_file(&staged);
    drop(mark);
    let id = result.map_err(EngineError::from)?.id;
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ErrorChain;

    #[test]
    fn commit_errors_have_mobys_words_and_kinds() {
        let removing = EngineError::from(CommitError::Removing {
            id: "abc".to_owned(),
        });
        assert!(removing.is_conflict());
        assert_eq!(
            removing.to_string(),
            "You cannot commit container abc which is being removed"
        );
        let change = CommitError::from(parse_change("FROM busybox").unwrap_err());
        assert_eq!(change.kind(), ErrorKind::InvalidArgument);
        assert_eq!(
            change.to_string(),
            parse_change("FROM busybox").unwrap_err().to_string(),
            "the parser's words pass through"
        );
        let layer = CommitError::CreateLayer {
            path: PathBuf::from("/root/tmp/commit-1"),
            source: std::io::Error::from_raw_os_error(libc::ENOSPC),
        };
        assert_eq!(layer.kind(), ErrorKind::Internal);
        assert_eq!(
            ErrorChain(&layer).to_string(),
            "failed to create \"/root/tmp/commit-1\": No space left on device (os error 28)"
        );
    }
}
