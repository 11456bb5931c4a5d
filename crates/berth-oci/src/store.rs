//! The runtime's state directory (`--root`, `/run/berth-runc` by default): one directory per
//! container holding its record and, between `create` and `start`, its exec FIFO. Commands
//! on one container are serialised by an exclusive `flock` of its directory (the root's for
//! creating one), so concurrent `start`/`kill`/`delete` never see a half-written record.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::{OciError, Result};
use crate::state::{Record, Status};

pub const DEFAULT_ROOT: &str = "/run/berth-runc";
const RECORD: &str = "state.json";
pub const EXEC_FIFO: &str = "exec.fifo";

#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

/// An exclusive lock of a directory, released when dropped.
#[derive(Debug)]
pub struct Lock {
    _flock: nix::fcntl::Flock<std::fs::File>,
}

fn lock(path: &Path) -> Result<Lock> {
    let file = fs_err::File::open(path).map_err(|error| {
        if error.kind() == std::io::ErrorKind::NotFound {
            OciError::NotFound
        } else {
            OciError::io("open", path)(error)
        }
    })?;
    let flock = nix::fcntl::Flock::lock(file.into_parts().0, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, source)| OciError::Sys {
        action: "lock the container's state",
        source,
    })?;
    Ok(Lock { _flock: flock })
}

/// runc's rule for ids: letters, digits, `_+-.`, and not `.` or `..`.
pub fn validate_id(id: &str) -> Result<()> {
    let valid = !id.is_empty()
        && id != "."
        && id != ".."
        && id.len() <= 1024
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"_+-.".contains(&byte));
    if valid {
        Ok(())
    } else {
        Err(OciError::InvalidId)
    }
}

impl Store {
    /// The store at `root`, made (0700) when missing.
    pub fn open(root: &Path) -> Result<Store> {
        if !root.is_dir() {
            #[allow(clippy::disallowed_methods)] // the error names the path
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(root)
                .map_err(OciError::io("create the state directory", root))?;
        }
        Ok(Store {
            root: root.to_owned(),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn dir(&self, id: &str) -> PathBuf {
        self.root.join(id)
    }

    pub fn exec_fifo(&self, id: &str) -> PathBuf {
        self.dir(id).join(EXEC_FIFO)
    }

    /// Makes the directory of a new container, locked; `Exists` if there is one.
    pub fn create_dir(&self, id: &str) -> Result<Lock> {
        validate_id(id)?;
        let _root = lock(&self.root)?;
        let dir = self.dir(id);
        #[allow(clippy::disallowed_methods)] // the error names the path
        let make = || std::fs::DirBuilder::new().mode(0o711).create(&dir);
        match make() {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                if !self.is_debris(id) {
                    return Err(OciError::Exists);
                }
                // A `create` killed before it wrote its first record: nothing of it runs and
                // it made nothing else yet (the record comes first), so its directory goes.
                self.remove(id)?;
                make().map_err(OciError::io("create the container's directory", &dir))?;
            }
            Err(error) => return Err(OciError::io("create the container's directory", dir)(error)),
        }
        // The umask may have narrowed it; the init (possibly not root) reopens the FIFO.
        let _ = fs_err::set_permissions(&dir, std::fs::Permissions::from_mode(0o711));
        lock(&dir)
    }

    /// Whether `id`'s directory is what a killed `create` left before its first record: no
    /// record, and no `create` holding its lock.
    fn is_debris(&self, id: &str) -> bool {
        !self.dir(id).join(RECORD).exists() && !self.is_locked(id)
    }

    /// Whether another command holds the container's lock now.
    pub fn is_locked(&self, id: &str) -> bool {
        let Ok(file) = fs_err::File::open(self.dir(id)) else {
            return false;
        };
        nix::fcntl::Flock::lock(
            file.into_parts().0,
            nix::fcntl::FlockArg::LockExclusiveNonblock,
        )
        .is_err()
    }

    /// Locks an existing container and reads its record.
    pub fn lock(&self, id: &str) -> Result<(Lock, Record)> {
        validate_id(id)?;
        let lock = lock(&self.dir(id))?;
        let record = self.load(id)?;
        Ok((lock, record))
    }

    /// Reads a record without locking (`list`, `state`: a read of a complete file).
    pub fn load(&self, id: &str) -> Result<Record> {
        let path = self.dir(id).join(RECORD);
        let bytes = match fs_err::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(OciError::NotFound)
            }
            Err(error) => return Err(OciError::io("read", path)(error)),
        };
        serde_json::from_slice(&bytes).map_err(|source| OciError::Decode { path, source })
    }

    /// Writes a record atomically (a temporary file renamed over the old one).
    pub fn save(&self, record: &Record) -> Result<()> {
        let dir = self.dir(&record.id);
        let temporary = dir.join(format!(".{RECORD}.tmp"));
        let bytes = serde_json::to_vec(record).map_err(OciError::Encode)?;
        fs_err::write(&temporary, bytes).map_err(OciError::io("write", &temporary))?;
        fs_err::rename(&temporary, dir.join(RECORD))
            .map_err(OciError::io("write", dir.join(RECORD)))
    }

    /// Removes a container's directory (its record, FIFO, everything).
    pub fn remove(&self, id: &str) -> Result<()> {
        let dir = self.dir(id);
        match fs_err::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(OciError::io("remove", dir)(error)),
        }
    }

    /// Every container's record, by id.
    pub fn list(&self) -> Result<Vec<Record>> {
        let mut records = Vec::new();
        let entries = fs_err::read_dir(&self.root).map_err(OciError::io("read", &self.root))?;
        for entry in entries.flatten() {
            let Some(id) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if validate_id(&id).is_err() || !entry.path().is_dir() {
                continue;
            }
            if let Ok(record) = self.load(&id) {
                records.push(record);
            }
        }
        records.sort_by(|one, other| one.id.cmp(&other.id));
        Ok(records)
    }

    /// The container's status for a caller that does not hold its lock (`state`, `list`).
    pub fn status(&self, record: &Record) -> Status {
        if record.pid == 0 {
            // Recorded before its init exists: `create` is still at work (it holds the lock),
            // or was killed there (then only `delete` is left to do).
            return if self.is_locked(&record.id) {
                Status::Creating
            } else {
                Status::Stopped
            };
        }
        self.status_held(record)
    }

    /// The status for a caller holding the container's lock (from [`Store::lock`]): no
    /// `create` is at work then, so a record without a pid is one a killed `create` left.
    pub fn status_held(&self, record: &Record) -> Status {
        if record.pid == 0 {
            return Status::Stopped;
        }
        if !record.init_alive() {
            return Status::Stopped;
        }
        if self.exec_fifo(&record.id).exists() {
            return Status::Created;
        }
        if crate::cgroup::is_frozen(&record.cgroup_path) {
            return Status::Paused;
        }
        Status::Running
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Spec;

    fn record(id: &str, pid: i32) -> Record {
        Record {
            id: id.to_owned(),
            bundle: "/b".into(),
            rootfs: "/b/rootfs".into(),
            pid,
            pid_start: if pid > 0 {
                crate::state::process_start(pid).unwrap()
            } else {
                0
            },
            created: crate::state::now_rfc3339(),
            owner: String::new(),
            cgroup_path: "berth-runc-unit-test/none".into(),
            config: Spec::default(),
        }
    }

    #[test]
    fn ids_follow_runcs_rule() {
        for good in ["a", "abc-DEF_1.2+3", "x.y"] {
            assert!(validate_id(good).is_ok(), "{good}");
        }
        for bad in ["", ".", "..", "a/b", "a b", "ä"] {
            assert!(validate_id(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn create_dir_refuses_a_live_id_and_takes_over_debris() {
        let root = tempfile::tempdir().unwrap();
        let store = Store::open(&root.path().join("state")).unwrap();
        let lock = store.create_dir("c").unwrap();
        assert!(store.is_locked("c"));
        // Being made (locked, no record yet): exists.
        assert!(matches!(store.create_dir("c"), Err(OciError::Exists)));
        drop(lock);
        // Not locked, no record: what a killed create left; taken over.
        let lock = store.create_dir("c").unwrap();
        store.save(&record("c", 0)).unwrap();
        drop(lock);
        // A record: exists.
        assert!(matches!(store.create_dir("c"), Err(OciError::Exists)));
        assert_eq!(store.list().unwrap().len(), 1);
        store.remove("c").unwrap();
        assert!(matches!(store.lock("c"), Err(OciError::NotFound)));
    }

    #[test]
    fn a_pidless_record_is_creating_only_while_its_create_holds_the_lock() {
        let root = tempfile::tempdir().unwrap();
        let store = Store::open(root.path()).unwrap();
        let lock = store.create_dir("c").unwrap();
        let pidless = record("c", 0);
        store.save(&pidless).unwrap();
        assert_eq!(store.status(&pidless), Status::Creating);
        drop(lock);
        assert_eq!(store.status(&pidless), Status::Stopped);
        let (_held, loaded) = store.lock("c").unwrap();
        // The lock holder itself: no create is at work.
        assert_eq!(store.status_held(&loaded), Status::Stopped);
    }

    #[test]
    fn a_live_init_is_created_until_the_fifo_goes_then_running() {
        let root = tempfile::tempdir().unwrap();
        let store = Store::open(root.path()).unwrap();
        let lock = store.create_dir("c").unwrap();
        // This test process stands in for the init.
        let live = record("c", std::process::id() as i32);
        store.save(&live).unwrap();
        fs_err::write(store.exec_fifo("c"), "").unwrap();
        assert_eq!(store.status_held(&live), Status::Created);
        fs_err::remove_file(store.exec_fifo("c")).unwrap();
        assert_eq!(store.status_held(&live), Status::Running);
        let mut reused = live.clone();
        reused.pid_start += 1;
        assert_eq!(
            store.status_held(&reused),
            Status::Stopped,
            "a reused pid is not the init"
        );
        drop(lock);
    }
}
