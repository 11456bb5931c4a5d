//! `rm`: a stopped container's files and row; `-f` stops it first.

use berth_store::Store;

use super::lookup::find_container;
use super::paths::ContainerPaths;
use super::stop::kill_and_wait;
use crate::{Engine, EngineError};

/// Removes the anonymous volumes a container record names (`rm -v`, and
/// always with `--rm`), as Docker does; named volumes stay.
pub(crate) fn remove_anonymous_volumes(
    store: &Store,
    root: &std::path::Path,
    record: &super::record::ContainerRecord,
) {
    for mount in &record.run.mounts {
        let super::record::MountSource::Volume { name } = &mount.source else {
            continue;
        };
        match store.volume(name) {
            Ok(Some(volume)) if volume.anonymous => {
                let _ = std::fs::remove_dir_all(root.join("volumes").join(name));
                if store.delete_volume(name).is_ok() {
                    crate::events::emit_volume(store, "destroy", name);
                }
            }
            _ => {}
        }
    }
}

/// Removes the container's directories and its row. Idempotent: another
/// process may have removed it already.
pub(crate) fn remove_files_and_row(store: &Store, paths: &ContainerPaths, id: &str) {
    remove_files(store, paths, id);
    remove_row(store, id);
}

/// Removes the container's directories (and network endpoints left by a
/// crash); idempotent.
pub(crate) fn remove_files(store: &Store, paths: &ContainerPaths, id: &str) {
    // Normally done when the container stopped; after a crash, here.
    if !store
        .endpoints(None, Some(id))
        .unwrap_or_default()
        .is_empty()
    {
        crate::networks::disconnect_container(
            store,
            &mut berth_net::kernel::HostKernel::new(),
            id,
            None,
        );
    }
    let _ = berth_runtime::rootfs::unmount_rootfs(&paths.rootfs());
    for directory in [&paths.directory, &paths.runtime] {
        if let Err(error) = std::fs::remove_dir_all(directory) {
            if error.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(path = %directory.display(), %error, "failed to remove container files");
            }
        }
    }
}

/// Removes the container's row, with Docker's `destroy` event: from then
/// on no command sees the container. Its files, if any remain, are an
/// orphan's (see [`super::orphans`]).
pub(crate) fn remove_row(store: &Store, id: &str) {
    // Warm pool members have no row: only containers users see make events.
    let removed = store.container(id).ok().flatten();
    if let Err(error) = store.delete_container(id) {
        tracing::warn!(%error, "failed to remove the container record");
    } else if let Some(Ok(container)) = removed.map(|row| super::lookup::parse_row(&row)) {
        crate::events::emit_container(store, "destroy", &container.record);
    }
}

/// `rm [-f] NAME`; returns the name as given, as Docker prints it.
pub fn remove_container(engine: &mut Engine, text: &str, force: bool) -> Result<(), EngineError> {
    remove_container_with(engine, text, force, false)
}

/// `rm [-f] [-v]`.
pub fn remove_container_with(
    engine: &mut Engine,
    text: &str,
    force: bool,
    volumes: bool,
) -> Result<(), EngineError> {
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, text)?;
    if container.state.is_running() {
        if !force {
            return Err(EngineError::ContainerRunning {
                id: container.record.id.clone(),
            });
        }
        kill_and_wait(engine, &container, nix::sys::signal::Signal::SIGKILL)?;
    }
    let paths = ContainerPaths::new(&config.root, &config.run_root, &container.record.id);
    remove_files_and_row(engine.store(), &paths, &container.record.id);
    if volumes {
        remove_anonymous_volumes(engine.store(), &config.root, &container.record);
    }
    Ok(())
}
