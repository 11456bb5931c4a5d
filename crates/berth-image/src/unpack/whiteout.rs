//! OCI whiteouts, written in the form overlayfs reads.
//!
//! The image spec (`layer.md`, "Whiteouts") marks a deleted `dir/name` with an empty entry
//! `dir/.wh.name`, and a directory whose lower contents are hidden with
//! `dir/.wh..wh..opq`. overlayfs wants a 0:0 character device at `dir/name` and the xattr
//! `trusted.overlay.opaque=y` on `dir` (Documentation/filesystems/overlayfs.rst).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::fcntl::AtFlags;
use nix::sys::stat::{Mode, SFlag};
use nix::unistd::{Gid, Uid};

use super::entry::{Failure, Unpacker};
use super::error::{NodeKind, UnpackError};
use super::metadata::EntryMetadata;
use super::resolve::raw;

const PREFIX: &[u8] = b".wh.";
const META_PREFIX: &[u8] = b".wh..wh.";
const OPAQUE: &[u8] = b".wh..wh..opq";
const OPAQUE_XATTR: &str = "trusted.overlay.opaque";

/// What an entry path means with respect to whiteouts.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Whiteout<'a> {
    /// An ordinary entry.
    None,
    /// Hide the lower contents of the parent directory.
    Opaque,
    /// Hide the lower `name` in the parent directory.
    Remove(&'a [u8]),
}

/// Classifies an entry by its components. Whiteout names anywhere but the last component,
/// AUFS metadata (`.wh..wh.plnk`, `.wh..wh.aufs`) and whiteouts of `.`, `..` or nothing
/// are refused, so no `.wh.` name ever reaches the output.
pub(super) fn classify<'a>(
    components: &[&'a [u8]],
    entry: &Path,
) -> Result<Whiteout<'a>, UnpackError> {
    let Some((last, parents)) = components.split_last() else {
        return Ok(Whiteout::None);
    };
    for parent in parents {
        if parent.starts_with(META_PREFIX) {
            return Err(UnpackError::UnsupportedWhiteoutMeta {
                entry: entry.to_owned(),
            });
        }
        if parent.starts_with(PREFIX) {
            return Err(UnpackError::InvalidWhiteout {
                entry: entry.to_owned(),
            });
        }
    }
    if *last == OPAQUE {
        return Ok(Whiteout::Opaque);
    }
    if last.starts_with(META_PREFIX) {
        return Err(UnpackError::UnsupportedWhiteoutMeta {
            entry: entry.to_owned(),
        });
    }
    match last.strip_prefix(PREFIX) {
        None => Ok(Whiteout::None),
        Some(b"" | b"." | b"..") => Err(UnpackError::InvalidWhiteout {
            entry: entry.to_owned(),
        }),
        Some(name) => Ok(Whiteout::Remove(name)),
    }
}

impl Unpacker {
    /// `dir/.wh..wh..opq`: mark `dir` opaque, creating it if the layer did not.
    pub(super) fn opaque(&mut self, parents: &[&[u8]], entry: &Path) -> Result<(), Failure> {
        let dir = self.parent(parents, entry)?;
        let place = dir.relative().to_owned();
        let directory =
            super::sys::open_directory(dir.fd(), OsStr::new(".")).map_err(|source| {
                UnpackError::Lookup {
                    entry: entry.to_owned(),
                    path: place.clone(),
                    source,
                }
            })?;
        xattr::FileExt::set_xattr(&directory, OPAQUE_XATTR, b"y").map_err(|source| {
            UnpackError::SetXattr {
                entry: entry.to_owned(),
                name: OPAQUE_XATTR.into(),
                source,
            }
        })?;
        Ok(())
    }

    /// `dir/.wh.name`: replace `dir/name` with a 0:0 character device, owned as the
    /// whiteout entry was (containerd does the same).
    pub(super) fn whiteout(
        &mut self,
        parents: &[&[u8]],
        name: &[u8],
        metadata: &EntryMetadata,
        entry: &Path,
    ) -> Result<(), Failure> {
        let dir = self.parent(parents, entry)?;
        let name = OsStr::from_bytes(name);
        self.remove_existing(&dir, name, entry)?;
        let create_error = |errno: nix::errno::Errno| {
            NodeKind::Whiteout.create_error(entry, dir.relative().join(name), errno.into())
        };
        let fd = Some(raw(dir.fd()));
        nix::sys::stat::mknodat(fd, name, SFlag::S_IFCHR, Mode::empty(), 0)
            .map_err(create_error)?;
        nix::unistd::fchownat(
            fd,
            name,
            Some(Uid::from_raw(metadata.uid)),
            Some(Gid::from_raw(metadata.gid)),
            AtFlags::AT_SYMLINK_NOFOLLOW,
        )
        .map_err(|errno| UnpackError::SetOwner {
            entry: entry.to_owned(),
            path: dir.relative().join(name),
            source: errno.into(),
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classify_path(path: &str) -> Result<Whiteout<'_>, UnpackError> {
        let components = super::super::safe_path::entry_components(path.as_bytes()).unwrap();
        classify(&components, Path::new(path))
    }

    #[test]
    fn whiteout_names_are_classified() {
        assert_eq!(classify_path("a/b").unwrap(), Whiteout::None);
        assert_eq!(classify_path("a/.wh..wh..opq").unwrap(), Whiteout::Opaque);
        assert_eq!(classify_path("a/.wh.b").unwrap(), Whiteout::Remove(b"b"));
        assert_eq!(classify_path(".wh.x").unwrap(), Whiteout::Remove(b"x"));
        assert_eq!(classify_path("a/b.wh.c").unwrap(), Whiteout::None);
    }

    #[test]
    fn bad_whiteouts_are_refused() {
        for path in [".wh..wh.plnk", "a/.wh..wh.aufs", ".wh..wh.plnk/1234"] {
            assert!(
                matches!(
                    classify_path(path),
                    Err(UnpackError::UnsupportedWhiteoutMeta { .. })
                ),
                "{path}"
            );
        }
        for path in ["a/.wh.", "a/.wh..", "a/.wh...", ".wh.a/b"] {
            assert!(
                matches!(
                    classify_path(path),
                    Err(UnpackError::InvalidWhiteout { .. })
                ),
                "{path}"
            );
        }
    }
}
