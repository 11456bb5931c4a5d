//! Advisory `flock(2)` locks shared by every berth process on one root.

use std::fs::File;
use std::path::Path;

use nix::fcntl::{Flock, FlockArg};

use crate::StoreError;

/// A held lock; released on drop (or when the process dies, which is what
/// makes flock right here: a killed berth never leaves a lock behind).
pub struct StoreLock {
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
        Ok(Self { _lock: lock })
    }

    /// Exclusive without waiting: `None` when someone else holds it.
    pub(crate) fn try_exclusive(path: &Path) -> Result<Option<Self>, StoreError> {
        let file = open(path)?;
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => Ok(Some(Self { _lock: lock })),
            Err((_, nix::Error::EWOULDBLOCK)) => Ok(None),
            Err((_, source)) => Err(StoreError::Lock {
                path: path.to_owned(),
                source,
            }),
        }
    }
}

fn open(path: &Path) -> Result<File, StoreError> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(crate::permissions::PRIVATE_FILE)
        .open(path)
        .map_err(StoreError::io(path))
}
