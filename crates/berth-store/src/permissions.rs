//! Who may read berth's state: root only.
//!
//! The metadata database holds every container's configuration, `-e`
//! secrets included, so the root directory and everything berth keeps in it
//! is private: directories 0700, files 0600. Docker's or stricter: dockerd
//! makes `/var/lib/docker` and `containers/` 0710 and `volumes/` 0701, the
//! group and other bits there serving user-namespace remapping (a remapped
//! root must traverse), which berth does not have; so berth leaves them out.
//!
//! What is made here is made private from the start (explicit modes, whatever
//! the umask), and a root made by an older berth (0755, a 0644 database) is
//! tightened the first time a newer one opens it. That check costs one `stat`
//! of the root when the root is already right, as it is on every command
//! after the first.
//!
//! Deliberate exceptions, which containers must read and which the private
//! root already hides from other users: the content of layers, a
//! container's root file system and its /etc files, the init layer, a
//! volume's `_data`, and container logs (0640, as dockerd's). They are made
//! by the code that makes them; see berth-engine `permissions`.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::Path;

use fs_err::os::unix::fs::OpenOptionsExt;

use crate::StoreError;

/// Directories under the roots.
pub const PRIVATE_DIRECTORY: u32 = 0o700;
/// Files under the roots.
pub const PRIVATE_FILE: u32 = 0o600;

/// The directories of the root that hold only berth's own state: tightened
/// with the root, together with what is listed for them in [`tighten`].
const PRIVATE_DIRECTORIES: [&str; 8] = [
    "blobs",
    "blobs/sha256",
    "layers",
    "tmp",
    "locks",
    "containers",
    "volumes",
    "cache",
];

/// Makes `root` ready for use: created 0700 when missing, tightened when an
/// older berth left it open. One `stat` when it is already right.
pub fn prepare_root(root: &Path) -> Result<(), StoreError> {
    match fs_err::metadata(root) {
        Ok(metadata) if metadata.is_dir() && metadata.mode() & 0o7777 == PRIVATE_DIRECTORY => {
            Ok(())
        }
        Ok(metadata) if metadata.is_dir() => tighten(root),
        Ok(_) => Err(StoreError::Io {
            path: root.to_owned(),
            source: std::io::Error::new(std::io::ErrorKind::AlreadyExists, "not a directory"),
        }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            create_private_directory_all(root)
        }
        Err(source) => Err(StoreError::Io {
            path: root.to_owned(),
            source,
        }),
    }
}

/// Creates `path` and any missing parents with mode 0700 (the umask may
/// only narrow it; the last one is set exactly).
pub fn create_private_directory_all(path: &Path) -> Result<(), StoreError> {
    // fs-err has no DirBuilder (the mode has to be given at creation); the error names the path.
    #[allow(clippy::disallowed_methods)]
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(PRIVATE_DIRECTORY)
        .create(path)
        .map_err(StoreError::io(path))?;
    set_mode(path, PRIVATE_DIRECTORY)
}

/// Creates the file `path` empty with mode 0600 if it does not exist.
pub(crate) fn create_private_file(path: &Path) -> Result<(), StoreError> {
    match fs_err::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(PRIVATE_FILE)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(source) => Err(StoreError::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

pub fn set_mode(path: &Path, mode: u32) -> Result<(), StoreError> {
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(StoreError::io(path))
}

/// A root an older berth made with the default umask: the database files,
/// the state directories and their entries become private, then the root
/// itself (last, so that an interrupted run is redone by the next command).
/// Layer contents, container roots, volumes' `_data` and the other
/// exceptions keep their modes: nobody else can reach them once the root is
/// 0700.
fn tighten(root: &Path) -> Result<(), StoreError> {
    tracing::info!(root = %root.display(), "making the berth root private (0700)");
    for name in [
        "metadata.db",
        "metadata.db-wal",
        "metadata.db-shm",
        "events.jsonl",
        "events.jsonl.1",
    ] {
        tighten_entry(&root.join(name), PRIVATE_FILE)?;
    }
    for name in PRIVATE_DIRECTORIES {
        tighten_entry(&root.join(name), PRIVATE_DIRECTORY)?;
    }
    // Entries whose content is berth's alone: blobs, locks, staging.
    for (directory, file_mode) in [("blobs/sha256", PRIVATE_FILE), ("locks", PRIVATE_FILE)] {
        for entry in entries(&root.join(directory)) {
            tighten_entry(&entry, file_mode)?;
        }
    }
    // Each container's directory (its files: the log stays 0640 as dockerd
    // makes it, the /etc files and the root file system are the
    // container's) and each volume's (its `_data` is the container's).
    for directory in ["containers", "volumes"] {
        for entry in entries(&root.join(directory)) {
            if entry.is_dir() {
                tighten_entry(&entry, PRIVATE_DIRECTORY)?;
            }
        }
    }
    set_mode(root, PRIVATE_DIRECTORY)
}

/// Sets `path` to 0700 if it is a directory, else to `file_mode`, if it
/// exists (a symbolic link is left alone: chmod would follow it).
fn tighten_entry(path: &Path, file_mode: u32) -> Result<(), StoreError> {
    match fs_err::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => Ok(()),
        Ok(metadata) => {
            let wanted = if metadata.is_dir() {
                PRIVATE_DIRECTORY
            } else {
                file_mode
            };
            if metadata.mode() & 0o7777 == wanted {
                return Ok(());
            }
            set_mode(path, wanted)
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(StoreError::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

fn entries(directory: &Path) -> Vec<std::path::PathBuf> {
    fs_err::read_dir(directory)
        .map(|entries| entries.flatten().map(|entry| entry.path()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn mode(path: &Path) -> u32 {
        fs_err::symlink_metadata(path).unwrap().mode() & 0o7777
    }

    #[test]
    fn a_missing_root_is_made_private_with_its_parents() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("a/b/root");
        prepare_root(&root).unwrap();
        assert_eq!(mode(&root), 0o700);
        assert_eq!(mode(&base.path().join("a")) & 0o077, 0);
    }

    #[test]
    fn an_open_root_is_tightened_and_exceptions_are_kept() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        let open = |path: &Path, mode: u32| set_mode(path, mode).unwrap();
        for directory in ["blobs/sha256", "locks", "containers/c1/upper", "layers/l1"] {
            fs_err::create_dir_all(root.join(directory)).unwrap();
            open(&root.join(directory), 0o755);
        }
        for file in [
            "metadata.db",
            "metadata.db-wal",
            "blobs/sha256/abc",
            "locks/content.lock",
            "containers/c1/hosts",
            "containers/c1/c1-json.log",
        ] {
            fs_err::write(root.join(file), b"").unwrap();
            open(&root.join(file), 0o644);
        }
        open(&root.join("containers/c1/c1-json.log"), 0o640);
        open(root, 0o755);

        prepare_root(root).unwrap();

        assert_eq!(mode(root), 0o700);
        for file in [
            "metadata.db",
            "metadata.db-wal",
            "blobs/sha256/abc",
            "locks/content.lock",
        ] {
            assert_eq!(mode(&root.join(file)), 0o600, "{file}");
        }
        for directory in [
            "blobs",
            "blobs/sha256",
            "locks",
            "containers",
            "containers/c1",
        ] {
            assert_eq!(mode(&root.join(directory)), 0o700, "{directory}");
        }
        // What containers read keeps its mode.
        assert_eq!(mode(&root.join("containers/c1/upper")), 0o755);
        assert_eq!(mode(&root.join("containers/c1/hosts")), 0o644);
        assert_eq!(mode(&root.join("containers/c1/c1-json.log")), 0o640);
        assert_eq!(mode(&root.join("layers/l1")), 0o755);
    }

    #[test]
    fn a_file_where_the_root_should_be_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("root");
        fs_err::write(&root, b"").unwrap();
        assert!(prepare_root(&root).is_err());
    }
}
