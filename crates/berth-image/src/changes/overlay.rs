//! What overlayfs leaves in a layer or an upper dir (Documentation/filesystems/overlayfs.rst).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::sys::stat::FileStat;

use super::error::ChangesError;
use super::tree::{kind_of, DirHandle, Kind, Xattrs};

pub(super) const OPAQUE_XATTR: &str = "trusted.overlay.opaque";
const REDIRECT_XATTR: &str = "trusted.overlay.redirect";
const METACOPY_XATTR: &str = "trusted.overlay.metacopy";

/// overlayfs keeps its own state in `trusted.overlay.*`, or in `user.overlay.*` when
/// mounted with `userxattr` (rootless). It ties an upper dir to its lower layers (origin
/// file handles, `impure`, `opaque`, the mount's uuid) and means nothing in a layer.
const PRIVATE_XATTR_PREFIXES: [&[u8]; 2] = [b"trusted.overlay.", b"user.overlay."];

/// A whiteout: a character device 0:0 hides the lower entry of the same name.
pub(super) fn is_whiteout(stat: &FileStat) -> bool {
    kind_of(stat) == Kind::CharDevice && stat.st_rdev == 0
}

/// An opaque directory hides everything below it in the lower layers. Only `y` means
/// opaque: since Linux 6.7 `x` marks a lower dir holding "xwhiteouts" (data-only layers,
/// composefs), which is not opaque and not a form berth writes.
pub(super) fn is_opaque(directory: &DirHandle) -> Result<bool, ChangesError> {
    Ok(directory.own_xattr(OPAQUE_XATTR)?.as_deref() == Some(b"y"))
}

pub(super) fn is_private_xattr(name: &OsStr) -> bool {
    PRIVATE_XATTR_PREFIXES
        .iter()
        .any(|prefix| name.as_bytes().starts_with(prefix))
}

/// With `redirect_dir=on` a renamed directory is stored under its new name with a pointer
/// to its old lower path, and with `metacopy=on` a copied-up file may hold metadata only,
/// its data staying below. Neither can be read from the upper dir alone; berth mounts with
/// both off (the kernel's defaults), so meeting one means the dir came from elsewhere.
pub(super) fn check_directory(directory: &DirHandle) -> Result<(), ChangesError> {
    if directory.own_xattr(REDIRECT_XATTR)?.is_some() {
        return Err(unsupported(directory.path(), "redirect_dir"));
    }
    Ok(())
}

/// The same check on xattrs already read.
pub(super) fn check_xattrs(xattrs: &Xattrs, path: &Path) -> Result<(), ChangesError> {
    for (name, _) in xattrs {
        if name == REDIRECT_XATTR {
            return Err(unsupported(path, "redirect_dir"));
        }
        if name == METACOPY_XATTR {
            return Err(unsupported(path, "metacopy"));
        }
    }
    Ok(())
}

fn unsupported(path: &Path, feature: &'static str) -> ChangesError {
    ChangesError::UnsupportedOverlayFeature {
        path: path.to_owned(),
        feature,
    }
}
