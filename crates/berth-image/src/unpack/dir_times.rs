//! Directory modification times, set once all entries are written: creating a child
//! changes its parent's mtime, so setting it earlier would not last.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use nix::sys::time::TimeSpec;

use super::error::UnpackError;
use super::resolve::raw;
use super::sys;

#[derive(Default)]
pub(super) struct DirectoryTimes {
    /// Keyed by the path relative to the destination, symlinks resolved; a later entry for
    /// the same directory overwrites the earlier time. Sorted, so parents come before
    /// children and the walk below reuses the open parents.
    times: BTreeMap<PathBuf, TimeSpec>,
}

impl DirectoryTimes {
    pub(super) fn record(&mut self, relative: PathBuf, mtime: TimeSpec) {
        self.times.insert(relative, mtime);
    }

    /// Forgets a removed directory and everything below it.
    pub(super) fn forget_under(&mut self, relative: &Path) {
        self.times.retain(|path, _| !path.starts_with(relative));
    }

    /// Sets every recorded time. Parents are opened without following symlinks; a
    /// directory that is no longer where it was recorded is skipped.
    pub(super) fn apply(&self, root: BorrowedFd<'_>) -> Result<(), UnpackError> {
        let mut open: Vec<(OsString, OwnedFd)> = Vec::new();
        'paths: for (path, mtime) in &self.times {
            let names: Vec<&OsStr> = path
                .components()
                .filter_map(|component| match component {
                    Component::Normal(name) => Some(name),
                    _ => None,
                })
                .collect();
            let Some((name, parents)) = names.split_last() else {
                nix::sys::stat::futimens(raw(root), mtime, mtime).map_err(|errno| {
                    UnpackError::SetTimes {
                        entry: PathBuf::from("."),
                        path: PathBuf::from("."),
                        source: errno.into(),
                    }
                })?;
                continue;
            };
            let common = open
                .iter()
                .zip(parents)
                .take_while(|((open_name, _), wanted)| open_name.as_os_str() == **wanted)
                .count();
            open.truncate(common);
            for parent in &parents[common..] {
                let base = open.last().map_or(root, |(_, fd)| fd.as_fd());
                match sys::open_directory_path(base, parent) {
                    Ok(fd) => open.push(((*parent).to_owned(), fd)),
                    Err(error) => {
                        tracing::debug!(?path, %error, "directory moved before its time was set");
                        open.clear();
                        continue 'paths;
                    }
                }
            }
            let base = open.last().map_or(root, |(_, fd)| fd.as_fd());
            nix::sys::stat::utimensat(
                Some(raw(base)),
                *name,
                mtime,
                mtime,
                nix::sys::stat::UtimensatFlags::NoFollowSymlink,
            )
            .map_err(|errno| UnpackError::SetTimes {
                entry: path.clone(),
                path: path.clone(),
                source: errno.into(),
            })?;
        }
        Ok(())
    }
}
