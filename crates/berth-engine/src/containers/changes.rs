//! `diff` and `export`: what a container changed, and its whole root; the
//! root as `cp` reaches it.

use std::io::Write;

use berth_image::changes::{changes, export_rootfs, Change};
use berth_runtime::rootfs::{is_mounted, mount_rootfs, RootfsError};

use super::copy_mounts::{has_copy_mounts, mount_copy_mounts, PrivateMounts};
use super::lookup::{find_container, Container};
use super::paths::ContainerPaths;
use super::repair::CopyHold;
use crate::{Engine, EngineError, ErrorKind};

/// What can stop `diff`, `export`, or reaching a stopped container's root.
#[derive(Debug, thiserror::Error)]
pub enum ChangesError {
    #[error("failed to compute changes")]
    Diff(#[source] berth_image::changes::ChangesError),
    #[error("failed to mount the root of container {id}")]
    Mount {
        id: String,
        #[source]
        source: RootfsError,
    },
    #[error("failed to export")]
    Export(#[source] berth_image::changes::ChangesError),
    #[error("failed to make a mount namespace for the copy")]
    PrivateNamespace(#[source] nix::Error),
    #[error("failed to mount {source_path:?} at {destination} for the copy")]
    MountVolume {
        source_path: std::path::PathBuf,
        destination: String,
        #[source]
        source: std::io::Error,
    },
}

impl ChangesError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Diff(_)
            | Self::Mount { .. }
            | Self::Export(_)
            | Self::PrivateNamespace(_)
            | Self::MountVolume { .. } => ErrorKind::Internal,
        }
    }
}

/// `diff`: Docker's A/C/D list, sorted by path.
pub fn container_diff(engine: &Engine, text: &str) -> Result<Vec<Change>, EngineError> {
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, text)?;
    let paths = ContainerPaths::new(&config.root, &config.run_root, &container.record.id);
    let lowers = super::start::container_layers(engine.store(), &container.record)?;
    let upper = paths.rootfs().upper;
    if !upper.exists() {
        return Ok(Vec::new());
    }
    Ok(changes(&upper, &lowers).map_err(ChangesError::Diff)?)
}

/// Runs `action` with the container's root as a host path: the running
/// container's own view (`/proc/PID/root`), or, when it is stopped, its
/// overlay mounted on the host for the duration (without its volumes:
/// what `export` sends).
pub fn with_container_root<T>(
    engine: &Engine,
    container: &Container,
    action: impl FnOnce(&std::path::Path) -> Result<T, EngineError>,
) -> Result<T, EngineError> {
    with_root(engine, container, false, |root| action(root.path))
}

/// The container's root as a copy sees it, and the journal the copy
/// records its temporary names in (see [`crate::copy::ContainerFs::with_journal`]).
#[derive(Clone, Copy, Debug)]
pub struct CopyRoot<'a> {
    pub path: &'a std::path::Path,
    pub journal: &'a std::path::Path,
}

/// [`with_container_root`] for a copy, which sees the container's volumes
/// and bind mounts as Docker's does, running or not (a stopped container's
/// are mounted over its root in a mount namespace of the copy's own, see
/// [`super::copy_mounts`]). The copy is registered (its journal) before
/// the root is mounted, so a copy killed at any point leaves nothing the
/// next command does not remove: the host mount of a stopped container's
/// root, or a temporary file (see [`super::repair`]).
pub fn with_copy_root<T>(
    engine: &Engine,
    container: &Container,
    action: impl FnOnce(&CopyRoot<'_>) -> Result<T, EngineError>,
) -> Result<T, EngineError> {
    with_root(engine, container, true, action)
}

fn with_root<T>(
    engine: &Engine,
    container: &Container,
    with_mounts: bool,
    action: impl FnOnce(&CopyRoot<'_>) -> Result<T, EngineError>,
) -> Result<T, EngineError> {
    let config = engine.config();
    let paths = ContainerPaths::new(&config.root, &config.run_root, &container.record.id);
    if container.state.is_running() && container.state.pid > 0 {
        let hold = CopyHold::register(&paths, None)?;
        let root = config
            .runtime_of(&container.record)
            .root(super::manage::runtime_ref(container));
        let result = action(&CopyRoot {
            path: &root,
            journal: hold.journal(),
        });
        hold.release(&paths);
        return result;
    }
    let rootfs = paths.rootfs();
    let mount = || {
        if is_mounted(&rootfs.merged) {
            return Ok(());
        }
        let layers = super::start::container_layers(engine.store(), &container.record)?;
        mount_rootfs(&layers, &rootfs).map_err(|source| {
            EngineError::from(ChangesError::Mount {
                id: container.record.id.clone(),
                source,
            })
        })
    };
    let hold = CopyHold::register(&paths, Some(&mount))?;
    let with_mounts = with_mounts && has_copy_mounts(&container.record.run);
    let result = (|| {
        if !with_mounts {
            return action(&CopyRoot {
                path: &rootfs.merged,
                journal: hold.journal(),
            });
        }
        // A volume with driver options is mounted on the host for the copy,
        // as for a start (Docker mounts it so too): the copy sees, and
        // writes to, what the container would.
        let _volumes = crate::volumes::mounts::HeldVolumes::take(
            &config.root,
            &config.run_root,
            &container.record.run,
            &copy_holder(),
        )?;
        // Docker fills a new volume from the image before anything reaches
        // it; berth does at the first start or copy, whichever comes first.
        let layers = super::start::container_layers(engine.store(), &container.record)?;
        super::start::populate_new_volumes(
            &config.root,
            &container.record,
            &paths,
            &layers,
            &|_| true,
        )?;
        // Left (and its mounts gone) before the root is unmounted below.
        let _namespace = PrivateMounts::enter()?;
        mount_copy_mounts(&rootfs.merged, &config.root, &container.record)?;
        action(&CopyRoot {
            path: &rootfs.merged,
            journal: hold.journal(),
        })
    })();
    // The last copy out unmounts.
    hold.release(&paths);
    result
}

/// A copy's name among a volume's users: unique among this process's
/// copies (the API server runs several at once).
fn copy_holder() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let count = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("cp-{}-{count}", std::process::id())
}

/// Which way a `cp` went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyDirection {
    FromContainer,
    IntoContainer,
}

/// Logs Docker's event for a finished `cp`: `archive-path` when it read
/// from the container, `extract-to-dir` when it wrote into it (a stat
/// alone logs nothing, as with Docker).
pub fn container_copied(engine: &Engine, container: &Container, direction: CopyDirection) {
    let action = match direction {
        CopyDirection::FromContainer => "archive-path",
        CopyDirection::IntoContainer => "extract-to-dir",
    };
    if direction == CopyDirection::IntoContainer && container.state.is_running() {
        let runtime = engine.config().runtime_of(&container.record);
        if let Err(error) = runtime.root_changed(super::manage::runtime_ref(container)) {
            // The copy is done; the guest may still show what it cached.
            tracing::warn!(%error, "the container may not see the copied files at once");
        }
    }
    crate::events::emit_container(engine.store(), action, &container.record);
}

/// `export`: the container's root as a tar stream.
pub fn export_container(engine: &Engine, text: &str, out: impl Write) -> Result<(), EngineError> {
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, text)?;
    with_container_root(engine, &container, |root| {
        crate::events::emit_container(engine.store(), "export", &container.record);
        Ok(export_rootfs(root, out).map_err(ChangesError::Export)?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorChain;

    #[test]
    fn changes_errors_are_internal_and_keep_their_cause() {
        let error = EngineError::from(ChangesError::Diff(
            berth_image::changes::ChangesError::OpenDirectory {
                path: "/c/upper".into(),
                source: std::io::Error::from_raw_os_error(libc::EACCES),
            },
        ));
        assert_eq!(error.kind(), ErrorKind::Internal);
        assert_eq!(error.to_string(), "failed to compute changes");
        assert!(
            ErrorChain(&error)
                .to_string()
                .starts_with("failed to compute changes: failed to open directory \"/c/upper\""),
            "{}",
            ErrorChain(&error)
        );
    }
}
