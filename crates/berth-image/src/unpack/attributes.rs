//! Applies an entry's owner, mode, xattrs and times, in that order: `chown` clears setuid,
//! setgid and `security.capability`, so it must come before the mode and the xattrs.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::AtFlags;
use nix::sys::stat::{FchmodatFlags, Mode, UtimensatFlags};
use nix::unistd::{Gid, Uid};

use super::error::UnpackError;
use super::metadata::EntryMetadata;
use super::resolve::{raw, DirHandle};

/// Where an entry's attributes go, with what error messages need.
pub(super) struct Place<'a> {
    pub dir: &'a DirHandle,
    pub name: &'a OsStr,
    pub entry: &'a Path,
    pub destination: &'a Path,
}

impl Place<'_> {
    pub(super) fn relative(&self) -> std::path::PathBuf {
        self.dir.relative().join(self.name)
    }
}

/// Owner, mode and xattrs through an open descriptor (regular files, directories).
/// Times are left to the caller: files set them after writing, directories at the end.
pub(super) fn apply_to_open(
    file: &File,
    metadata: &EntryMetadata,
    place: &Place<'_>,
) -> Result<(), UnpackError> {
    let fd = file.as_raw_fd();
    nix::unistd::fchown(
        fd,
        Some(Uid::from_raw(metadata.uid)),
        Some(Gid::from_raw(metadata.gid)),
    )
    .map_err(|errno| UnpackError::SetOwner {
        entry: place.entry.to_owned(),
        path: place.relative(),
        source: errno.into(),
    })?;
    nix::sys::stat::fchmod(fd, Mode::from_bits_truncate(metadata.mode)).map_err(|errno| {
        UnpackError::SetMode {
            entry: place.entry.to_owned(),
            path: place.relative(),
            source: errno.into(),
        }
    })?;
    for (name, value) in &metadata.xattrs {
        let result = xattr::FileExt::set_xattr(file, name, value);
        check_xattr(result, name, place)?;
    }
    Ok(())
}

/// Owner, mode, xattrs and times by name, never following a symlink at `place`
/// (symlinks, device nodes, fifos).
pub(super) fn apply_at(
    metadata: &EntryMetadata,
    place: &Place<'_>,
    is_symlink: bool,
) -> Result<(), UnpackError> {
    let dir = Some(raw(place.dir.fd()));
    nix::unistd::fchownat(
        dir,
        place.name,
        Some(Uid::from_raw(metadata.uid)),
        Some(Gid::from_raw(metadata.gid)),
        AtFlags::AT_SYMLINK_NOFOLLOW,
    )
    .map_err(|errno| UnpackError::SetOwner {
        entry: place.entry.to_owned(),
        path: place.relative(),
        source: errno.into(),
    })?;
    // Linux symlinks have no mode of their own.
    if !is_symlink {
        nix::sys::stat::fchmodat(
            dir,
            place.name,
            Mode::from_bits_truncate(metadata.mode),
            FchmodatFlags::NoFollowSymlink,
        )
        .map_err(|errno| UnpackError::SetMode {
            entry: place.entry.to_owned(),
            path: place.relative(),
            source: errno.into(),
        })?;
    }
    if !metadata.xattrs.is_empty() {
        // There is no `lsetxattrat`. Every directory on this path was opened without
        // following symlinks and only this unpacker writes here, so the path names the
        // same object; `lsetxattr` does not follow the last component.
        let path = place.destination.join(place.relative());
        for (name, value) in &metadata.xattrs {
            check_xattr(xattr::set(&path, name, value), name, place)?;
        }
    }
    set_times_at(place, &metadata.mtime)
}

/// Sets atime and mtime to the entry's mtime (Docker does the same when the archive has
/// no atime), without following a symlink.
pub(super) fn set_times_at(
    place: &Place<'_>,
    mtime: &nix::sys::time::TimeSpec,
) -> Result<(), UnpackError> {
    nix::sys::stat::utimensat(
        Some(raw(place.dir.fd())),
        place.name,
        mtime,
        mtime,
        UtimensatFlags::NoFollowSymlink,
    )
    .map_err(|errno| UnpackError::SetTimes {
        entry: place.entry.to_owned(),
        path: place.relative(),
        source: errno.into(),
    })
}

/// Some file systems take no xattrs, and Linux allows no `user.*` xattrs on symlinks or
/// device nodes; like Docker, such an xattr is skipped with a warning.
fn check_xattr(result: io::Result<()>, name: &OsStr, place: &Place<'_>) -> Result<(), UnpackError> {
    match result {
        Ok(()) => Ok(()),
        Err(error)
            if matches!(
                error.raw_os_error().map(Errno::from_raw),
                Some(Errno::ENOTSUP | Errno::EPERM)
            ) =>
        {
            tracing::warn!(entry = ?place.entry, ?name, %error, "skipping extended attribute");
            Ok(())
        }
        Err(source) => Err(UnpackError::SetXattr {
            entry: place.entry.to_owned(),
            name: name.to_owned(),
            source,
        }),
    }
}
