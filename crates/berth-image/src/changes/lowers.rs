//! The merged view of the lower layers, assembled the way overlayfs does it
//! (Documentation/filesystems/overlayfs.rst, "Directories"), without mounting anything.
//!
//! A merged directory is a stack of real directories, topmost layer first. A name belongs
//! to the topmost layer that has it; a whiteout there hides it. A directory continues into
//! the same-named directories of the layers below until one of them is opaque or a layer
//! holds a whiteout or a non-directory under that name.
//!
//! Unlike the upper dir, the layers are read by path: they are berth's own unpacked image
//! layers, never written again, and every step down was seen to be a real directory by
//! `lstat` first, so no path here passes through a symlink. Descriptors would cost one per
//! layer per level of the walk, past the descriptor limit for images with many layers.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::sys::stat::FileStat;

use super::error::ChangesError;
use super::overlay::{is_whiteout, OPAQUE_XATTR};
use super::tree::{kind_of, Kind};

/// One directory of the lower layers' merged view.
pub(super) struct LowerDir {
    stack: Vec<PathBuf>,
}

/// An entry of the merged view, and the layer of the stack that supplies it.
pub(super) struct LowerEntry {
    pub stat: FileStat,
    layer: usize,
}

impl LowerDir {
    /// The merged root of `lowers`, given bottom layer first. overlayfs ignores `opaque` on
    /// a layer's root, so every root joins the stack.
    pub(super) fn root(lowers: &[PathBuf]) -> Result<Self, ChangesError> {
        for layer in lowers {
            match lstat(layer)? {
                Some(stat) if kind_of(&stat) == Kind::Directory => {}
                _ => {
                    return Err(ChangesError::OpenDirectory {
                        path: layer.clone(),
                        source: Errno::ENOTDIR.into(),
                    })
                }
            }
        }
        Ok(Self {
            stack: lowers.iter().rev().cloned().collect(),
        })
    }

    /// `name` as the merged view shows it; `None` if no layer has it or a whiteout hides it.
    pub(super) fn lookup(&self, name: &OsStr) -> Result<Option<LowerEntry>, ChangesError> {
        for (layer, directory) in self.stack.iter().enumerate() {
            match lstat(&directory.join(name))? {
                None => continue,
                Some(stat) if is_whiteout(&stat) => return Ok(None),
                Some(stat) => return Ok(Some(LowerEntry { stat, layer })),
            }
        }
        Ok(None)
    }

    /// Everything the merged directory lists, by name.
    pub(super) fn list(&self) -> Result<BTreeMap<OsString, LowerEntry>, ChangesError> {
        let mut entries = BTreeMap::new();
        let mut hidden = BTreeSet::new();
        for (layer, directory) in self.stack.iter().enumerate() {
            for name in names(directory)? {
                if entries.contains_key(&name) || hidden.contains(&name) {
                    continue;
                }
                match lstat(&directory.join(&name))? {
                    None => {}
                    Some(stat) if is_whiteout(&stat) => {
                        hidden.insert(name);
                    }
                    Some(stat) => {
                        entries.insert(name, LowerEntry { stat, layer });
                    }
                }
            }
        }
        Ok(entries)
    }

    /// The merged directory `name`, which `lookup` or `list` found as `entry`, a directory.
    pub(super) fn open_directory(
        &self,
        name: &OsStr,
        entry: &LowerEntry,
    ) -> Result<Self, ChangesError> {
        let top = self.stack[entry.layer].join(name);
        let mut opaque = is_opaque(&top)?;
        let mut stack = vec![top];
        for directory in &self.stack[entry.layer + 1..] {
            if opaque {
                break;
            }
            let below = directory.join(name);
            match lstat(&below)? {
                None => continue,
                Some(stat) if kind_of(&stat) == Kind::Directory => {
                    opaque = is_opaque(&below)?;
                    stack.push(below);
                }
                // A whiteout or a non-directory ends the merge.
                Some(_) => break,
            }
        }
        Ok(Self { stack })
    }

    /// One extended attribute of `entry`, as its layer holds it.
    pub(super) fn entry_xattr(
        &self,
        name: &OsStr,
        entry: &LowerEntry,
        key: &str,
    ) -> Result<Option<Vec<u8>>, ChangesError> {
        xattr_of(&self.stack[entry.layer].join(name), key)
    }
}

fn lstat(path: &Path) -> Result<Option<FileStat>, ChangesError> {
    match nix::sys::stat::lstat(path) {
        Ok(stat) => Ok(Some(stat)),
        Err(Errno::ENOENT) => Ok(None),
        Err(errno) => Err(ChangesError::Stat {
            path: path.to_owned(),
            source: errno.into(),
        }),
    }
}

/// The names in a layer's directory, sorted by their bytes.
fn names(directory: &Path) -> Result<Vec<OsString>, ChangesError> {
    let list_error = |source: io::Error| ChangesError::ReadDirectory {
        path: directory.to_owned(),
        source,
    };
    let mut names = Vec::new();
    for entry in fs_err::read_dir(directory).map_err(list_error)? {
        names.push(entry.map_err(list_error)?.file_name());
    }
    names.sort_unstable_by(|left, right| left.as_bytes().cmp(right.as_bytes()));
    Ok(names)
}

fn is_opaque(directory: &Path) -> Result<bool, ChangesError> {
    Ok(xattr_of(directory, OPAQUE_XATTR)?.as_deref() == Some(b"y"))
}

/// `lgetxattr`; a file system without xattrs holds none.
fn xattr_of(path: &Path, key: &str) -> Result<Option<Vec<u8>>, ChangesError> {
    match xattr::get(path, key) {
        Ok(value) => Ok(value),
        Err(error) if error.raw_os_error() == Some(Errno::EOPNOTSUPP as i32) => Ok(None),
        Err(source) => Err(ChangesError::ReadXattrs {
            path: path.to_owned(),
            source,
        }),
    }
}
