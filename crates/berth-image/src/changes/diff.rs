//! `docker diff`, computed as Docker 20.10's overlay2 driver does it: mount the container's
//! layer and its parent, compare the two merged trees (`NaiveDiffDriver.Changes` →
//! `archive.ChangesDirs` → `FileInfo.addChanges` in moby's `pkg/archive/changes.go`).
//!
//! Here the merged trees are read from the upper dir and the lower layers directly. Only a
//! directory the upper dir holds can differ between the two views, so only those are
//! walked; every other name shows the same lower entry in both. The rules:
//!
//! - a name only in the container's view is `A`, and so is everything below it;
//! - a name only in the image's view is `D`, and nothing below it is listed;
//! - a name in both is `C` when its mode (type and permission bits), owner, group, device
//!   number or `security.capability` differ or, for non-directories, its size or mtime
//!   (`statDifferent`). Mtimes compare equal when the seconds agree and either side has no
//!   nanoseconds, because layers store whole seconds (`sameFsTime`). So a file that was
//!   only copied up (opened for writing, written nothing) is no change;
//! - a directory holding any change is `C` itself, unless already `A` or `C`; the root
//!   is never listed.
//!
//! Docker returns the list in Go's random map order (parents before children); berth sorts
//! it by path, bytewise, which keeps that property.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::sys::stat::FileStat;

use super::error::ChangesError;
use super::lowers::LowerDir;
use super::overlay::{check_directory, is_opaque, is_whiteout};
use super::tree::{kind_of, DirHandle, Kind};
use super::{Change, ChangeKind};

const CAPABILITY_XATTR: &str = "security.capability";

pub(super) fn collect(upper: &Path, lowers: &[PathBuf]) -> Result<Vec<Change>, ChangesError> {
    let upper = DirHandle::open_root(upper)?;
    let lowers = LowerDir::root(lowers)?;
    let mut walk = Walk::default();
    walk.directory(&upper, Some(&lowers), true, b"", true)?;
    let mut changes = walk.changes;
    changes.sort_unstable_by(|(left, _), (right, _)| left.cmp(right));
    Ok(changes
        .into_iter()
        .map(|(path, kind)| Change {
            kind,
            // Docker's API carries Go strings as JSON, which turns invalid UTF-8 into
            // U+FFFD the same way.
            path: String::from_utf8_lossy(&path).into_owned(),
        })
        .collect())
}

#[derive(Default)]
struct Walk {
    changes: Vec<(Vec<u8>, ChangeKind)>,
}

impl Walk {
    /// Compares the container's directory at `path` (`upper`, over the image's layers when
    /// `lowers_visible`) with the image's directory there (`old`, if it is one). `listed`
    /// says whether `path` is already `A` or `C`, or is the root.
    fn directory(
        &mut self,
        upper: &DirHandle,
        old: Option<&LowerDir>,
        lowers_visible: bool,
        path: &[u8],
        listed: bool,
    ) -> Result<(), ChangesError> {
        check_directory(upper)?;
        let start = self.changes.len();
        // overlayfs ignores `opaque` on the upper root, as on the lower ones.
        let merged = match old {
            Some(old) if lowers_visible && (path.is_empty() || !is_opaque(upper)?) => Some(old),
            _ => None,
        };
        // With the lowers showing through, a name the upper dir lacks is the same in both
        // views. Without, every image name the upper dir lacks is gone: those left here
        // once the upper names are matched.
        let mut unmatched = match (old, merged) {
            (Some(old), None) => old.list()?,
            _ => BTreeMap::new(),
        };
        for name in upper.names()? {
            let Some(stat) = upper.stat(&name)? else {
                continue;
            };
            let child = join(path, &name);
            let before = match (old, merged) {
                (Some(old), Some(_)) => old.lookup(&name)?.map(|entry| (old, entry)),
                (Some(old), None) => unmatched.remove(&name).map(|entry| (old, entry)),
                (None, _) => None,
            };
            if is_whiteout(&stat) {
                if before.is_some() {
                    self.changes.push((child, ChangeKind::Deleted));
                }
                continue;
            }
            let Some((old, before)) = before else {
                self.changes.push((child.clone(), ChangeKind::Added));
                if kind_of(&stat) == Kind::Directory {
                    let directory = upper.open_directory(&name)?;
                    self.directory(&directory, None, false, &child, true)?;
                }
                continue;
            };
            let modified = stat_different(&before.stat, &stat)
                || old.entry_xattr(&name, &before, CAPABILITY_XATTR)?
                    != upper.entry_xattr(&name, CAPABILITY_XATTR)?;
            if modified {
                self.changes.push((child.clone(), ChangeKind::Modified));
            }
            if kind_of(&stat) == Kind::Directory {
                let directory = upper.open_directory(&name)?;
                let old_directory = match kind_of(&before.stat) {
                    Kind::Directory => Some(old.open_directory(&name, &before)?),
                    _ => None,
                };
                let visible = merged.is_some();
                self.directory(
                    &directory,
                    old_directory.as_ref(),
                    visible,
                    &child,
                    modified,
                )?;
            }
        }
        for name in unmatched.into_keys() {
            self.changes.push((join(path, &name), ChangeKind::Deleted));
        }
        // Docker inserts it before its contents; the final sort puts it there anyway.
        if self.changes.len() > start && !listed {
            self.changes.push((path.to_vec(), ChangeKind::Modified));
        }
        Ok(())
    }
}

fn join(parent: &[u8], name: &OsStr) -> Vec<u8> {
    let mut path = Vec::with_capacity(parent.len() + 1 + name.len());
    path.extend_from_slice(parent);
    path.push(b'/');
    path.extend_from_slice(name.as_bytes());
    path
}

/// moby's `statDifferent` (`pkg/archive/changes_unix.go`): directories' sizes and mtimes
/// change with every entry added or removed, so only their mode and owner count.
fn stat_different(old: &FileStat, new: &FileStat) -> bool {
    old.st_mode != new.st_mode
        || old.st_uid != new.st_uid
        || old.st_gid != new.st_gid
        || old.st_rdev != new.st_rdev
        || (kind_of(old) != Kind::Directory
            && (!same_mtime(old, new) || old.st_size != new.st_size))
}

/// moby's `sameFsTime`.
fn same_mtime(old: &FileStat, new: &FileStat) -> bool {
    old.st_mtime == new.st_mtime
        && (old.st_mtime_nsec == new.st_mtime_nsec
            || old.st_mtime_nsec == 0
            || new.st_mtime_nsec == 0)
}
