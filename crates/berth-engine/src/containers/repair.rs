//! Crash safety of `rm`, `commit` and `cp`: each writes its intent before
//! its side effect, and whoever looks at the container next (every command,
//! through [`super::reconcile::reconcile`]) finishes or undoes what a killed
//! one left.
//!
//! - `rm` marks the row `removing` before any file goes and holds the
//!   container's [`RemovalLock`] meanwhile. A `removing` container whose
//!   lock is free has lost its remover: its removal is finished here.
//! - `commit` writes `<run-root>/containers/<id>/commit-<pid>-<start time>`
//!   (whether it froze the container, and its staged layer) before it
//!   freezes the container or stages anything. Such a file of a process
//!   that is gone means: thaw (when that commit froze it; a `pause` of the
//!   user's stays) and remove the staged layer.
//! - `cp` writes `…/cp-<pid>-<start time>-<n>` (its journal, see
//!   [`crate::copy::remove_journaled_temporary`]) before it mounts a stopped
//!   container's root on the host. Such a file of a process that is gone
//!   means: remove the temporary file it names and, when no live copy is
//!   left, unmount.
//!
//! An intent of a dead process is first renamed to the repairer's own name,
//! so of two commands repairing at once only one does it, and a repairer
//! killed in turn leaves an intent the next command finds again.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use berth_store::Store;
use fs_err::os::unix::fs::OpenOptionsExt;
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use super::lookup::Container;
use super::monitor::{read_state, write_state};
use super::paths::ContainerPaths;
use super::remove::{remove_files_and_row_checked, RemovalLock};
use super::state::{process_alive, process_start_time, Status};
use crate::{EngineConfig, EngineError};

const COMMIT_PREFIX: &str = "commit-";
const COPY_PREFIX: &str = "cp-";

/// Repairs what a killed `rm`, `commit` or `cp` left of `container`; returns
/// it as it is now (a removal finished here leaves it `removing`, with no
/// row).
pub(crate) fn repair(store: &Store, config: &EngineConfig, mut container: Container) -> Container {
    let id = container.record.id.clone();
    let paths = ContainerPaths::new(&config.root, &config.run_root, &id);
    if container.state.status == Status::Removing {
        finish_removal(store, &paths, &mut container);
        return container;
    }
    // An `rm` killed after it took the lock and before it marked the row
    // leaves the lock's file; the lock, taken and dropped, removes it.
    if RemovalLock::path(&paths).exists() {
        drop(RemovalLock::try_acquire(&paths));
    }
    let intents = intents(&paths.runtime);
    let mut copies_ended = false;
    for intent in intents.iter().filter(|intent| !intent.alive()) {
        let Some(claimed) = claim(intent, &paths.runtime) else {
            continue;
        };
        match intent.kind {
            IntentKind::Commit => undo_commit(store, config, &mut container, &claimed),
            IntentKind::Copy => {
                end_copy(&container, &paths, &claimed);
                copies_ended = true;
            }
        }
    }
    if abandoned_by_its_build(&container) {
        remove_abandoned(store, &paths, &mut container);
        return container;
    }
    if copies_ended {
        let _guard = copy_lock(&paths);
        unmount_unless_copying(&paths);
        // The killed copy's uses of volumes with driver options.
        crate::volumes::mounts::repair_volumes_of(
            &config.root,
            &config.run_root,
            &container.record.run,
        );
    }
    container
}

/// The label on a build step's container: its builder as `pid:start
/// time` (see berth-build), which removes the container when the step
/// ends; a builder killed before that leaves it to the next command.
pub const BUILD_OWNER_LABEL: &str = "io.berth.build.owner";

/// The label's value for this process.
pub fn build_owner() -> String {
    let pid = std::process::id() as i32;
    format!("{pid}:{}", process_start_time(pid).unwrap_or(0))
}

/// A build step's container that is not running and whose builder is gone.
fn abandoned_by_its_build(container: &Container) -> bool {
    let Some(owner) = container.record.run.labels.get(BUILD_OWNER_LABEL) else {
        return false;
    };
    let Some((pid, start)) = owner.split_once(':') else {
        return false;
    };
    let (Ok(pid), Ok(start)) = (pid.parse::<i32>(), start.parse::<u64>()) else {
        return false;
    };
    !container.state.is_running() && !process_alive(pid, start)
}

fn remove_abandoned(store: &Store, paths: &ContainerPaths, container: &mut Container) {
    let Ok(Some(lock)) = RemovalLock::try_acquire(paths) else {
        return;
    };
    tracing::debug!(container = %container.record.id, "removing a killed build's container");
    match remove_files_and_row_checked(store, paths, &container.record.id, &lock) {
        Ok(()) => container.state.status = Status::Removing,
        Err(error) => tracing::warn!(%error, "failed to remove a killed build's container"),
    }
}

/// Docker refuses to start a container being removed, or whose removal
/// failed.
pub(crate) fn refuse_start(container: &Container) -> Result<(), EngineError> {
    super::lifecycle::check(
        container.state.status,
        &container.record.id,
        super::lifecycle::Operation::Start,
    )
}

fn finish_removal(store: &Store, paths: &ContainerPaths, container: &mut Container) {
    let id = container.record.id.clone();
    let lock = match RemovalLock::try_acquire(paths) {
        Ok(Some(lock)) => lock,
        // Its remover is alive (or the lock cannot be had): in progress.
        Ok(None) | Err(_) => return,
    };
    // Read again under the lock: the remover may have finished meanwhile.
    match read_state(store, &id) {
        Some(state) if state.status == Status::Removing => {
            tracing::debug!(container = %id, "finishing the removal a killed rm began");
            if let Err(error) = remove_files_and_row_checked(store, paths, &id, &lock) {
                tracing::warn!(%error, "failed to finish the removal of a container");
            }
        }
        _ => {}
    }
    if let Some(state) = read_state(store, &id) {
        container.state = state;
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IntentKind {
    Commit,
    Copy,
}

/// An intent file: what wrote it, and which process.
#[derive(Debug)]
struct Intent {
    kind: IntentKind,
    path: PathBuf,
    pid: i32,
    start_time: u64,
}

impl Intent {
    fn parse(directory: &Path, name: &str) -> Option<Self> {
        let (kind, rest) = if let Some(rest) = name.strip_prefix(COMMIT_PREFIX) {
            (IntentKind::Commit, rest)
        } else if let Some(rest) = name.strip_prefix(COPY_PREFIX) {
            (IntentKind::Copy, rest)
        } else {
            return None;
        };
        let mut fields = rest.split('-');
        let pid = fields.next()?.parse().ok()?;
        let start_time = fields.next()?.parse().ok()?;
        Some(Self {
            kind,
            path: directory.join(name),
            pid,
            start_time,
        })
    }

    fn alive(&self) -> bool {
        process_alive(self.pid, self.start_time)
    }
}

fn intents(runtime: &Path) -> Vec<Intent> {
    let Ok(entries) = fs_err::read_dir(runtime) else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            Intent::parse(runtime, &name)
        })
        .collect()
}

/// A name for an intent of this process: `<prefix><pid>-<start time>-<n>`.
fn own_intent_path(runtime: &Path, prefix: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let pid = std::process::id() as i32;
    let start_time = process_start_time(pid).unwrap_or(0);
    let sequence = NEXT.fetch_add(1, Ordering::Relaxed);
    runtime.join(format!("{prefix}{pid}-{start_time}-{sequence}"))
}

/// Writes `bytes` to `path`, a file only root may read (as everything
/// under the roots).
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    fs_err::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?
        .write_all(bytes)
}

/// Takes over a dead process's intent (an atomic rename to a name of this
/// process); `None` when another process took it first.
fn claim(intent: &Intent, runtime: &Path) -> Option<PathBuf> {
    let prefix = match intent.kind {
        IntentKind::Commit => COMMIT_PREFIX,
        IntentKind::Copy => COPY_PREFIX,
    };
    let claimed = own_intent_path(runtime, prefix);
    fs_err::rename(&intent.path, &claimed).ok()?;
    Some(claimed)
}

// ------------------------------------------------------------------ commit

/// What a `commit` in progress may have to have undone.
#[derive(Debug, Default, Serialize, Deserialize)]
struct CommitIntent {
    /// The commit froze the container (or is about to).
    froze: bool,
    /// The layer tar it is writing.
    staged: Option<PathBuf>,
}

/// A running `commit`'s intent; removed when dropped.
pub(crate) struct CommitMark {
    path: PathBuf,
}

impl CommitMark {
    /// Records the intent of a commit of the container at `paths`, before
    /// it freezes it (`froze`) or writes `staged`.
    pub(crate) fn write(
        paths: &ContainerPaths,
        froze: bool,
        staged: &Path,
    ) -> Result<Self, EngineError> {
        berth_store::permissions::create_private_directory_all(&paths.runtime)?;
        let mark = Self {
            path: own_intent_path(&paths.runtime, COMMIT_PREFIX),
        };
        mark.update(froze, staged)?;
        Ok(mark)
    }

    /// A freeze that did not happen (the container was paused meanwhile)
    /// must not be undone.
    pub(crate) fn update(&self, froze: bool, staged: &Path) -> Result<(), EngineError> {
        let intent = CommitIntent {
            froze,
            staged: Some(staged.to_owned()),
        };
        let json = serde_json::to_vec(&intent).map_err(super::ContainerError::EncodeIntent)?;
        write_private(&self.path, &json).map_err(|source| {
            EngineError::Store(berth_store::StoreError::Io {
                path: self.path.clone(),
                source,
            })
        })
    }
}

impl Drop for CommitMark {
    fn drop(&mut self) {
        let _ = fs_err::remove_file(&self.path);
    }
}

fn undo_commit(store: &Store, config: &EngineConfig, container: &mut Container, claimed: &Path) {
    let id = container.record.id.clone();
    // A mark cut short was written before anything it names happened.
    let intent: CommitIntent = fs_err::read(claimed)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    tracing::debug!(container = %id, froze = intent.froze, "undoing what a killed commit left");
    if intent.froze {
        let runtime = config.runtime_of(&container.record);
        if let Err(error) = runtime.resume(super::manage::runtime_ref(container)) {
            tracing::debug!(%error, "failed to thaw after a killed commit");
        }
        if let Some(mut state) = read_state(store, &id) {
            if state.status == Status::Paused {
                state.status = Status::Running;
                write_state(store, &id, &state);
                crate::events::emit_container(store, "unpause", &container.record);
                container.state = state;
            }
        }
    }
    if let Some(staged) = &intent.staged {
        let _ = fs_err::remove_file(staged);
    }
    let _ = fs_err::remove_file(claimed);
}

// --------------------------------------------------------------------- cp

/// A `cp` in progress: its journal, which also says a copy needs the root.
pub(crate) struct CopyHold {
    path: PathBuf,
}

impl CopyHold {
    /// Registers a copy of the container at `paths`; with `mount`, mounts
    /// its root on the host (unless mounted) after the registration, so a
    /// copy killed once the root is mounted is always seen.
    pub(crate) fn register(
        paths: &ContainerPaths,
        mount: Option<&dyn Fn() -> Result<(), EngineError>>,
    ) -> Result<Self, EngineError> {
        berth_store::permissions::create_private_directory_all(&paths.runtime)?;
        let _guard = copy_lock(paths);
        let hold = Self {
            path: own_intent_path(&paths.runtime, COPY_PREFIX),
        };
        write_private(&hold.path, b"").map_err(|source| {
            EngineError::Store(berth_store::StoreError::Io {
                path: hold.path.clone(),
                source,
            })
        })?;
        if let Some(mount) = mount {
            // On failure, `hold` drops: its file goes.
            mount()?;
        }
        Ok(hold)
    }

    pub(crate) fn journal(&self) -> &Path {
        &self.path
    }

    /// The copy ended: its journal goes, and the root is unmounted unless
    /// another copy still uses it.
    pub(crate) fn release(self, paths: &ContainerPaths) {
        let _guard = copy_lock(paths);
        // Its file goes with it.
        drop(self);
        unmount_unless_copying(paths);
    }
}

impl Drop for CopyHold {
    fn drop(&mut self) {
        let _ = fs_err::remove_file(&self.path);
    }
}

/// Serialises the copies' mounting and unmounting of a container's root.
fn copy_lock(paths: &ContainerPaths) -> Option<Flock<std::fs::File>> {
    let path = paths.runtime.join("cp.lock");
    let file = fs_err::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .ok()?
        .into_parts()
        .0;
    Flock::lock(file, FlockArg::LockExclusive).ok()
}

/// With the copy lock held: unmounts the root from the host when no live
/// copy is registered.
fn unmount_unless_copying(paths: &ContainerPaths) {
    let copying = intents(&paths.runtime)
        .iter()
        .any(|intent| intent.kind == IntentKind::Copy && intent.alive());
    if !copying {
        if let Err(error) = berth_runtime::rootfs::unmount_rootfs(&paths.rootfs()) {
            tracing::warn!(%error, "failed to unmount a container root a copy mounted");
        }
    }
}

fn end_copy(container: &Container, paths: &ContainerPaths, claimed: &Path) {
    tracing::debug!(container = %container.record.id, "cleaning up after a killed cp");
    // A file a copy creates is in the writable layer, unless it went to a
    // volume of a running container (reached through its own root then).
    let root = if container.state.is_running() && container.state.pid > 0 {
        PathBuf::from(format!("/proc/{}/root", container.state.pid))
    } else {
        paths.rootfs().upper
    };
    if let Err(error) = crate::copy::remove_journaled_temporary(claimed, &root) {
        tracing::warn!(%error, "failed to remove the temporary file of a killed cp");
    }
    let _ = fs_err::remove_file(claimed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intent_names_say_who_wrote_them() {
        let directory = Path::new("/run");
        let intent = Intent::parse(directory, "commit-12-3456-0").unwrap();
        assert_eq!(intent.kind, IntentKind::Commit);
        assert_eq!((intent.pid, intent.start_time), (12, 3456));
        let intent = Intent::parse(directory, "cp-7-8-9").unwrap();
        assert_eq!(intent.kind, IntentKind::Copy);
        assert_eq!(intent.path, directory.join("cp-7-8-9"));
        for other in [
            "attach.sock",
            "stop-requested",
            "cp.lock",
            "cp-x-1",
            "commit-1",
        ] {
            assert!(Intent::parse(directory, other).is_none(), "{other}");
        }
    }

    #[test]
    fn own_intents_are_alive_and_dead_ones_are_claimed_once() {
        let runtime = tempfile::tempdir().unwrap();
        let own = own_intent_path(runtime.path(), COPY_PREFIX);
        fs_err::write(&own, b"").unwrap();
        // pid 0 is never a process.
        fs_err::write(runtime.path().join("commit-0-1-0"), b"{}").unwrap();
        let found = intents(runtime.path());
        assert_eq!(found.len(), 2);
        let dead: Vec<_> = found.iter().filter(|intent| !intent.alive()).collect();
        assert_eq!(dead.len(), 1);
        assert_eq!(dead[0].kind, IntentKind::Commit);
        let claimed = claim(dead[0], runtime.path()).unwrap();
        assert!(claimed.exists());
        assert!(claim(dead[0], runtime.path()).is_none(), "claimed twice");
        // The claimed intent is this process's now: alive.
        assert!(intents(runtime.path()).iter().all(Intent::alive));
    }
}
