//! `rm`: a stopped container's files and row; `-f` stops it first.

use std::path::PathBuf;

use berth_store::Store;
use fs_err::os::unix::fs::OpenOptionsExt;
use nix::fcntl::{Flock, FlockArg};

use super::lookup::find_container_unless_removed;
use super::monitor::{read_state, write_state};
use super::paths::ContainerPaths;
use super::state::Status;
use super::stop::kill_and_wait;
use crate::{Engine, EngineError};

/// Removes the anonymous volumes a container record names (`rm -v`, and
/// always with `--rm`), as Docker does; named volumes stay, and so does an
/// anonymous one another container still mounts (`--volumes-from`), as
/// dockerd keeps a volume in use. The record's own row is gone by then.
pub(crate) fn remove_anonymous_volumes(
    store: &Store,
    config: &crate::EngineConfig,
    record: &super::record::ContainerRecord,
) {
    for mount in &record.run.mounts {
        let super::record::MountSource::Volume { name } = &mount.source else {
            continue;
        };
        match store.volume(name) {
            Ok(Some(volume)) if volume.anonymous && !mounted_by_any(store, name) => {
                // One with driver options still mounted (a `cp` uses it)
                // stays: never remove through a mount.
                let uses =
                    crate::volumes::mounts::VolumeUses::new(&config.root, &config.run_root, name);
                if !uses.repair(&crate::volumes::mounts::HostMounter).is_empty()
                    || berth_runtime::rootfs::is_mounted(&uses.data)
                {
                    continue;
                }
                uses.remove();
                let _ = fs_err::remove_dir_all(config.root.join("volumes").join(name));
                if store.delete_volume(name).is_ok() {
                    crate::events::emit_volume(store, "destroy", name);
                }
            }
            _ => {}
        }
    }
}

/// Whether a stored container mounts volume `name`.
fn mounted_by_any(store: &Store, name: &str) -> bool {
    let Ok(rows) = store.containers() else {
        return true; // unknown: keep it
    };
    rows.iter().any(|row| {
        serde_json::from_str::<super::record::ContainerRecord>(&row.record).is_ok_and(|record| {
            record.run.mounts.iter().any(|mount| {
                matches!(&mount.source, super::record::MountSource::Volume { name: used } if used == name)
            })
        })
    })
}

/// Removes the container's directories and its row, marking it `removing`
/// first (see [`remove_files_and_row_checked`]). Idempotent: another
/// process may have removed it already, or be removing it now.
pub(crate) fn remove_files_and_row(store: &Store, paths: &ContainerPaths, id: &str) {
    let lock = match RemovalLock::try_acquire(paths) {
        Ok(Some(lock)) => lock,
        // Another process is removing it.
        Ok(None) => return,
        Err(error) => {
            tracing::warn!(%error, "failed to lock the container for removal");
            return;
        }
    };
    if let Err(error) = remove_files_and_row_checked(store, paths, id, &lock) {
        tracing::warn!(error = %error, "failed to remove the container");
    }
}

/// The intent first: the row says `removing` before any file goes, so a
/// removal killed part way is never shown as a container that can run with
/// some of its files; the next command finishes it
/// ([`super::repair`]). A failure leaves the container `dead` (Docker's
/// state for a container whose removal failed), which `rm` tries again.
pub(crate) fn remove_files_and_row_checked(
    store: &Store,
    paths: &ContainerPaths,
    id: &str,
    lock: &RemovalLock,
) -> Result<(), EngineError> {
    let state = read_state(store, id);
    if let Some(mut state) = state.clone() {
        if state.status != Status::Removing {
            state.status = Status::Removing;
            write_state(store, id, &state);
        }
    }
    if let Err(error) = try_remove_files(store, paths, id) {
        if let Some(mut state) = state {
            state.status = Status::Dead;
            state.error = crate::ErrorChain(&error).to_string();
            write_state(store, id, &state);
        }
        return Err(error);
    }
    // The lock's file goes before the row, so that a kill in between leaves
    // a `removing` row (which the next command finishes) rather than a lock
    // file no row names.
    lock.unlink();
    remove_row(store, id);
    Ok(())
}

/// Removes the container's directories (and network endpoints left by a
/// crash); idempotent.
pub(crate) fn remove_files(store: &Store, paths: &ContainerPaths, id: &str) {
    if let Err(error) = try_remove_files(store, paths, id) {
        tracing::warn!(error = %crate::ErrorChain(&error), "failed to remove container files");
    }
}

fn try_remove_files(store: &Store, paths: &ContainerPaths, id: &str) -> Result<(), EngineError> {
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
    // A mount left by a killed `cp` (or anyone) would make the removal fail
    // with EBUSY half way; detached, it goes once nobody uses it.
    let _ = berth_runtime::rootfs::unmount_rootfs(&paths.rootfs());
    for directory in [&paths.directory, &paths.runtime, &paths.vm] {
        match fs_err::remove_dir_all(directory) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(EngineError::RemoveFiles {
                    id: id.to_owned(),
                    source,
                })
            }
        }
    }
    Ok(())
}

/// Held by whoever removes a container: an exclusive `flock` on
/// `<run-root>/containers/<id>.remove-lock`, which the kernel drops when the
/// holder dies however it dies. A `removing` container whose lock can be
/// taken has no remover left.
pub(crate) struct RemovalLock {
    path: PathBuf,
    unlinked: std::cell::Cell<bool>,
    _lock: Flock<std::fs::File>,
}

impl RemovalLock {
    /// The lock, or `None` when another live process holds it.
    pub(crate) fn path(paths: &ContainerPaths) -> PathBuf {
        paths.runtime.with_extension("remove-lock")
    }

    pub(crate) fn try_acquire(paths: &ContainerPaths) -> Result<Option<Self>, EngineError> {
        let path = Self::path(paths);
        if let Some(parent) = path.parent() {
            berth_store::permissions::create_private_directory_all(parent)?;
        }
        loop {
            let file = fs_err::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(&path)
                .map_err(|error| lock_error(&path, error))?
                .into_parts()
                .0;
            let lock = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(lock) => lock,
                Err((_, nix::errno::Errno::EWOULDBLOCK)) => return Ok(None),
                Err((_, errno)) => return Err(lock_error(&path, errno.into())),
            };
            // The holder before us unlinks the file before it unlocks: a lock
            // on a file no longer at the path guards nothing; take the new one.
            let held = nix::sys::stat::fstat(std::os::fd::AsRawFd::as_raw_fd(&*lock));
            let current = nix::sys::stat::stat(&path);
            if let (Ok(held), Ok(current)) = (held, current) {
                if (held.st_dev, held.st_ino) == (current.st_dev, current.st_ino) {
                    return Ok(Some(Self {
                        path,
                        unlinked: std::cell::Cell::new(false),
                        _lock: lock,
                    }));
                }
            }
        }
    }
}

impl RemovalLock {
    /// Removes the lock's file while the lock is held: whoever takes the
    /// lock after this makes a new one (and reads the row again). Once only:
    /// the path may name someone else's file afterwards.
    pub(crate) fn unlink(&self) {
        if !self.unlinked.replace(true) {
            let _ = fs_err::remove_file(&self.path);
        }
    }
}

impl Drop for RemovalLock {
    fn drop(&mut self) {
        // Before the unlock (when `_lock` drops, after this).
        self.unlink();
    }
}

fn lock_error(path: &std::path::Path, error: std::io::Error) -> EngineError {
    EngineError::Store(berth_store::StoreError::Io {
        path: path.to_owned(),
        source: error,
    })
}

/// Removes the container's row, with Docker's `destroy` event: from then
/// on no command sees the container. Its files, if any remain, are an
/// orphan's (see [`super::orphans`]).
pub(crate) fn remove_row(store: &Store, id: &str) {
    // Warm pool members have no row: only containers users see make events.
    let removed = store.container(id).ok().flatten();
    match store.delete_container(id) {
        Err(error) => tracing::warn!(%error, "failed to remove the container record"),
        // Removed by another process meanwhile, which logged the event.
        Ok(false) => {}
        Ok(true) => {
            if let Some(Ok(container)) = removed.map(|row| super::lookup::parse_row(&row)) {
                crate::events::emit_container(store, "destroy", &container.record);
            }
            crate::images::delete_released_images(store);
        }
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
    let Some(container) = find_container_unless_removed(engine.store(), &config, text)? else {
        // A removal that a killed `rm` began, finished by the lookup.
        return Ok(());
    };
    if container.state.is_running() {
        if !force {
            super::lifecycle::check(
                container.state.status,
                &container.record.id,
                super::lifecycle::Operation::Remove,
            )?;
        }
        kill_and_wait(engine, &container, nix::sys::signal::Signal::SIGKILL)?;
    }
    let id = &container.record.id;
    let paths = ContainerPaths::new(&config.root, &config.run_root, id);
    let Some(lock) = RemovalLock::try_acquire(&paths)? else {
        return Err(EngineError::Conflict(format!(
            "removal of container {text} is already in progress"
        )));
    };
    // Read again under the lock: another `rm` may have removed it, or a
    // `start` started it, since the lookup.
    match read_state(engine.store(), id) {
        None => return Ok(()),
        Some(state) if state.is_running() => {
            super::lifecycle::check(state.status, id, super::lifecycle::Operation::Remove)?
        }
        Some(_) => {}
    }
    remove_files_and_row_checked(engine.store(), &paths, id, &lock)?;
    drop(lock);
    if volumes {
        remove_anonymous_volumes(engine.store(), &config, &container.record);
    }
    Ok(())
}
