//! Disk usage as `du` counts it: the blocks each file, directory and
//! symlink holds (`st_blocks`, 512-byte units), every inode counted once
//! however many hard links it has. `image prune` reports what removing a
//! tree freed and `system df` what content uses, so both are this number
//! rather than the file sizes an image's metadata records (which left out
//! the kept blobs, directories and block rounding, and every orphan).

use std::collections::HashSet;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::StoreError;

/// What a [`UsageCounter`] adds up for each inode.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// The disk blocks every file, directory and symlink holds (`du`).
    #[default]
    Blocks,
    /// The sizes of regular files only (moby's `directory.Size`: `docker ps -s`, `SizeRw`).
    FileBytes,
}

/// Counts inodes once across several calls, as one `du` over several
/// paths does.
#[derive(Debug, Default)]
pub struct UsageCounter {
    seen: HashSet<(u64, u64)>,
    measure: Measure,
}

impl UsageCounter {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_measure(measure: Measure) -> Self {
        Self {
            measure,
            ..Self::default()
        }
    }

    /// Bytes of disk `path` (a file or a whole tree) holds that this
    /// counter has not counted yet; a missing path is 0. Symlinks are not
    /// followed.
    pub fn measure(&mut self, path: &Path) -> Result<u64, StoreError> {
        let metadata = match fs_err::symlink_metadata(path) {
            Ok(metadata) => metadata,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(source) => {
                return Err(StoreError::Io {
                    path: path.to_owned(),
                    source,
                })
            }
        };
        let mut total = self.count(&metadata);
        if metadata.is_dir() {
            let entries = match fs_err::read_dir(path) {
                Ok(entries) => entries,
                Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(total),
                Err(source) => {
                    return Err(StoreError::Io {
                        path: path.to_owned(),
                        source,
                    })
                }
            };
            for entry in entries {
                let entry = entry.map_err(StoreError::io(path))?;
                total += self.measure(&entry.path())?;
            }
        }
        Ok(total)
    }

    fn count(&mut self, metadata: &std::fs::Metadata) -> u64 {
        if metadata.nlink() > 1
            && !metadata.is_dir()
            && !self.seen.insert((metadata.dev(), metadata.ino()))
        {
            return 0;
        }
        match self.measure {
            Measure::Blocks => metadata.blocks() * 512,
            Measure::FileBytes if metadata.is_file() => metadata.len(),
            Measure::FileBytes => 0,
        }
    }
}

/// What `path` holds on disk (see [`UsageCounter`]).
pub fn disk_usage(path: &Path) -> Result<u64, StoreError> {
    UsageCounter::new().measure(path)
}

/// The bytes of the regular files under `path`, each inode once ([`Measure::FileBytes`]).
pub fn file_bytes(path: &Path) -> Result<u64, StoreError> {
    UsageCounter::with_measure(Measure::FileBytes).measure(path)
}

/// Removes a file or a tree, returning the bytes of disk it held; a
/// missing path frees 0.
pub(crate) fn remove_measured(path: &Path) -> Result<u64, StoreError> {
    let freed = disk_usage(path)?;
    let is_dir = match fs_err::symlink_metadata(path) {
        Ok(metadata) => metadata.is_dir(),
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(source) => {
            return Err(StoreError::Io {
                path: path.to_owned(),
                source,
            })
        }
    };
    let result = if is_dir {
        fs_err::remove_dir_all(path)
    } else {
        fs_err::remove_file(path)
    };
    match result {
        Ok(()) => Ok(freed),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(0),
        Err(source) => Err(StoreError::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn counts_blocks_and_hard_links_once() {
        let directory = tempfile::tempdir().unwrap();
        let tree = directory.path().join("tree");
        fs_err::create_dir(&tree).unwrap();
        fs_err::write(tree.join("a"), vec![7u8; 100_000]).unwrap();
        fs_err::hard_link(tree.join("a"), tree.join("b")).unwrap();
        fs_err::os::unix::fs::symlink("a", tree.join("c")).unwrap();
        let file = fs_err::metadata(tree.join("a")).unwrap().blocks() * 512;
        let own = fs_err::metadata(&tree).unwrap().blocks() * 512;
        let link = fs_err::symlink_metadata(tree.join("c")).unwrap().blocks() * 512;
        assert!(file >= 100_000);
        assert_eq!(disk_usage(&tree).unwrap(), own + file + link);
        assert_eq!(disk_usage(&directory.path().join("missing")).unwrap(), 0);
        assert_eq!(remove_measured(&tree).unwrap(), own + file + link);
        assert!(!tree.exists());
        assert_eq!(remove_measured(&tree).unwrap(), 0);
    }

    #[test]
    fn file_bytes_count_a_hard_link_once_and_directories_not_at_all() {
        let root = tempfile::tempdir().unwrap();
        fs_err::create_dir_all(root.path().join("a/b")).unwrap();
        fs_err::write(root.path().join("a/b/one"), vec![0u8; 1000]).unwrap();
        fs_err::hard_link(root.path().join("a/b/one"), root.path().join("a/link")).unwrap();
        fs_err::write(root.path().join("two"), vec![0u8; 234]).unwrap();
        fs_err::os::unix::fs::symlink("two", root.path().join("s")).unwrap();
        assert_eq!(file_bytes(root.path()).unwrap(), 1234);
        assert_eq!(file_bytes(&root.path().join("missing")).unwrap(), 0);
    }
}
