//! The start record: `<run-root>/containers/<id>/monitor.lock`, created
//! (already locked) by the command that starts the container before it
//! forks the monitor, inherited by the monitor, held for the monitor's whole
//! life and unlinked by it when it is done. So:
//!
//! - no file: no start was cut short (nothing to repair);
//! - a file whose `flock(2)` is held: a start or a monitor is at work (a
//!   kill -9 releases the lock: the kernel drops it with the last
//!   descriptor);
//! - a file whose lock can be taken: whoever started the container died
//!   before it was done (between the fork and the container's end), and the
//!   taker repairs what it left (see `reconcile`).
//!
//! The container's first process holds a copy of the descriptor from its
//! clone until it closes every descriptor before `execve`: once the lock is
//! free, that process is either gone or in its cgroup (it joins it first).

use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use berth_store::StoreError;
use fs_err::File;

use super::super::paths::ContainerPaths;

const LOCK_FILE: &str = "monitor.lock";

/// A held start record.
#[derive(Debug)]
pub(crate) struct MonitorLock {
    path: PathBuf,
    file: File,
    /// True when the file was there before: left by a start or monitor that
    /// died, whose leftovers the holder repairs.
    pub(crate) leftover: bool,
}

/// What trying to take a container's start record found.
#[derive(Debug)]
pub(crate) enum Taken {
    /// No record: nothing was cut short.
    NoRecord,
    /// A live start or monitor holds it.
    Busy,
    /// Taken: whoever held it died.
    Held(MonitorLock),
}

fn lock_path(paths: &ContainerPaths) -> PathBuf {
    paths.runtime.join(LOCK_FILE)
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Takes the lock on `file` without waiting; false when someone holds it.
fn try_lock(file: &File, path: &Path) -> Result<bool, StoreError> {
    match file.try_lock() {
        Ok(()) => Ok(true),
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(source)) => Err(StoreError::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

/// True when `path` still names the file `file` is open on (the holder
/// before us may have unlinked it, and a new start made another).
fn still_named(file: &File, path: &Path) -> bool {
    match (file.metadata(), fs_err::symlink_metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

impl MonitorLock {
    /// For a start, before the monitor is forked: the record, made or
    /// taken. None while another start or a live monitor holds it.
    pub(crate) fn take_for_start(paths: &ContainerPaths) -> Result<Option<Self>, StoreError> {
        let path = lock_path(paths);
        loop {
            match Self::try_take_at(&path)? {
                Taken::Held(lock) => return Ok(Some(lock)),
                Taken::Busy => return Ok(None),
                Taken::NoRecord => {}
            }
            // Made under a temporary name and locked before it is linked
            // into place, so no one ever sees it unlocked.
            // Per thread: the API server starts containers from many
            // threads of one process.
            let temporary = paths.runtime.join(format!(
                "{LOCK_FILE}.{}.{}",
                std::process::id(),
                nix::unistd::gettid()
            ));
            let _ = fs_err::remove_file(&temporary);
            let file = File::options()
                .write(true)
                .create_new(true)
                .open(&temporary)
                .map_err(io_error(&temporary))?;
            let linked = try_lock(&file, &temporary)
                .and_then(|_| fs_err::hard_link(&temporary, &path).map_err(io_error(&path)));
            let _ = fs_err::remove_file(&temporary);
            match linked {
                Ok(()) => {
                    return Ok(Some(Self {
                        path,
                        file,
                        leftover: false,
                    }))
                }
                // Another start linked its record first: look again.
                Err(StoreError::Io { source, .. }) if source.kind() == ErrorKind::AlreadyExists => {
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Takes the record if there is one and nobody holds it.
    pub(crate) fn try_take(paths: &ContainerPaths) -> Taken {
        Self::try_take_at(&lock_path(paths)).unwrap_or_else(|error| {
            tracing::warn!(error = %format!("{error:#}"), "failed to read a start record");
            Taken::Busy
        })
    }

    /// As [`try_take`](Self::try_take), waiting up to `timeout` while it is
    /// busy: for a caller that knows the monitor is dead, whose container's
    /// first process may hold it a few milliseconds more.
    pub(crate) fn take_waiting(paths: &ContainerPaths, timeout: Duration) -> Taken {
        let deadline = Instant::now() + timeout;
        loop {
            match Self::try_take(paths) {
                Taken::Busy if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                taken => return taken,
            }
        }
    }

    fn try_take_at(path: &Path) -> Result<Taken, StoreError> {
        loop {
            let file = match File::options().write(true).open(path) {
                Ok(file) => file,
                Err(error) if error.kind() == ErrorKind::NotFound => return Ok(Taken::NoRecord),
                Err(error) => return Err(io_error(path)(error)),
            };
            if !try_lock(&file, path)? {
                return Ok(Taken::Busy);
            }
            if still_named(&file, path) {
                return Ok(Taken::Held(Self {
                    path: path.to_owned(),
                    file,
                    leftover: true,
                }));
            }
            // Unlinked by its holder meanwhile: look again.
        }
    }

    /// The record a started monitor inherited as `file` (an open file
    /// description the starting command locked, see `launch.rs`).
    pub(crate) fn inherited(paths: &ContainerPaths, file: std::fs::File) -> Self {
        let file = File::from_parts(file, lock_path(paths));
        Self {
            path: lock_path(paths),
            file,
            leftover: false,
        }
    }

    /// The locked file, for handing to the monitor.
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// Marks the record as not a leftover (its holder repaired what the
    /// dead one left, and now starts the container itself).
    pub(crate) fn repaired(&mut self) {
        self.leftover = false;
    }

    /// Ends the record: the work it covered is done (or repaired).
    pub(crate) fn release(self) {
        if let Err(error) = fs_err::remove_file(&self.path) {
            if error.kind() != ErrorKind::NotFound {
                tracing::warn!(path = %self.path.display(), %error, "failed to remove a start record");
            }
        }
        drop(self.file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(directory: &Path) -> ContainerPaths {
        let paths = ContainerPaths::new(directory, directory, &"a".repeat(64));
        fs_err::create_dir_all(&paths.runtime).unwrap();
        paths
    }

    #[test]
    fn a_held_record_is_busy_and_a_dead_holders_is_a_leftover() {
        let directory = tempfile::tempdir().unwrap();
        let paths = paths(directory.path());
        assert!(matches!(MonitorLock::try_take(&paths), Taken::NoRecord));
        let held = MonitorLock::take_for_start(&paths).unwrap().unwrap();
        assert!(!held.leftover);
        // flock conflicts between open files, within one process too.
        assert!(matches!(MonitorLock::try_take(&paths), Taken::Busy));
        assert!(MonitorLock::take_for_start(&paths).unwrap().is_none());
        // Its holder dies (closes it) without ending it: a leftover.
        drop(held);
        let Taken::Held(mut leftover) = MonitorLock::try_take(&paths) else {
            panic!("a record nobody holds is taken");
        };
        assert!(leftover.leftover);
        leftover.repaired();
        assert!(!leftover.leftover);
        leftover.release();
        assert!(matches!(MonitorLock::try_take(&paths), Taken::NoRecord));
        // Only the record itself is left behind by a start: no temporary.
        let left: Vec<_> = fs_err::read_dir(&paths.runtime).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn the_lock_passes_to_a_forked_child_with_the_descriptor() {
        let directory = tempfile::tempdir().unwrap();
        let paths = paths(directory.path());
        let held = MonitorLock::take_for_start(&paths).unwrap().unwrap();
        let (read, write) = nix::unistd::pipe().unwrap();
        // SAFETY: the child only reads a pipe and exits (no allocation, no
        // destructor), so no lock another thread of the harness held at the
        // fork is ever needed.
        match unsafe { nix::unistd::fork() }.unwrap() {
            nix::unistd::ForkResult::Child => {
                drop(write);
                let mut byte = [0u8; 1];
                let _ = nix::unistd::read(std::os::fd::AsRawFd::as_raw_fd(&read), &mut byte);
                // No destructor (no allocator call) after a fork of a
                // threaded process: _exit closes the descriptor.
                std::mem::forget(held);
                // SAFETY: _exit ends the forked child without unwinding.
                unsafe { libc::_exit(0) }
            }
            nix::unistd::ForkResult::Parent { child } => {
                drop(read);
                // The parent's copy closed: the child's keeps the lock.
                drop(held);
                assert!(matches!(MonitorLock::try_take(&paths), Taken::Busy));
                drop(write);
                nix::sys::wait::waitpid(child, None).unwrap();
                assert!(matches!(MonitorLock::try_take(&paths), Taken::Held(_)));
            }
        }
    }
}
