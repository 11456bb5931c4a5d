//! Advisory `flock(2)` locks shared by every berth process on one root.

use std::fs::File;
use std::path::{Path, PathBuf};

use fs_err::os::unix::fs::OpenOptionsExt;
use nix::fcntl::{Flock, FlockArg};

use crate::StoreError;

/// A held lock; released on drop (or when the process dies, which is what
/// makes flock right here: a killed berth never leaves a lock behind).
pub struct StoreLock {
    /// The content locks' intent mark under `tmp/`: written once the lock
    /// is held, before any content changes, and removed on drop. A process
    /// killed while holding the lock leaves it, and its presence tells the
    /// next command that content may be half written or half removed.
    marker: Option<PathBuf>,
    _lock: Flock<File>,
}

impl StoreLock {
    pub(crate) fn acquire(path: &Path, exclusive: bool) -> Result<Self, StoreError> {
        let file = open(path)?;
        let arg = if exclusive {
            FlockArg::LockExclusive
        } else {
            FlockArg::LockShared
        };
        let lock = Flock::lock(file, arg).map_err(|(_, source)| StoreError::Lock {
            path: path.to_owned(),
            source,
        })?;
        Ok(Self {
            marker: None,
            _lock: lock,
        })
    }

    /// Marks this lock's holder as changing content (see `marker`).
    pub(crate) fn with_marker(mut self, marker: PathBuf) -> Result<Self, StoreError> {
        fs_err::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(crate::permissions::PRIVATE_FILE)
            .open(&marker)
            .map_err(StoreError::io(&marker))?;
        self.marker = Some(marker);
        Ok(self)
    }

    /// Exclusive without waiting: `None` when someone else holds it.
    pub(crate) fn try_exclusive(path: &Path) -> Result<Option<Self>, StoreError> {
        let file = open(path)?;
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => Ok(Some(Self {
                marker: None,
                _lock: lock,
            })),
            Err((_, nix::Error::EWOULDBLOCK)) => Ok(None),
            Err((_, source)) => Err(StoreError::Lock {
                path: path.to_owned(),
                source,
            }),
        }
    }
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        // Before the lock itself goes (fields drop after this): nobody may
        // see the lock free and the mark still there but ours.
        if let Some(marker) = &self.marker {
            match fs_err::remove_file(marker) {
                Ok(()) => {}
                // Garbage collection under this lock clears all of tmp/.
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => {
                    tracing::warn!(path = %marker.display(), %error, "failed to remove a content lock's mark")
                }
            }
        }
    }
}

/// A std `File`: `Flock` takes only std's.
fn open(path: &Path) -> Result<File, StoreError> {
    fs_err::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(crate::permissions::PRIVATE_FILE)
        .open(path)
        .map(fs_err::File::into_file)
        .map_err(StoreError::io(path))
}
