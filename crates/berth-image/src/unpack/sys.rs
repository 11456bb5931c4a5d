//! Directory-relative file system calls that never follow a symlink in the last component.
//!
//! Every call takes the directory as a descriptor and one plain name, so the kernel walks
//! no path that we have not checked ourselves.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{FileStat, Mode, SFlag};

/// What sits at a name, as far as unpacking cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Directory,
    Symlink,
    Other,
}

pub(super) fn kind_of(stat: &FileStat) -> Kind {
    match SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT {
        SFlag::S_IFDIR => Kind::Directory,
        SFlag::S_IFLNK => Kind::Symlink,
        _ => Kind::Other,
    }
}

fn open_at(
    directory: BorrowedFd<'_>,
    name: &OsStr,
    flags: OFlag,
    mode: Mode,
) -> io::Result<OwnedFd> {
    let flags = flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let raw = nix::fcntl::openat(Some(directory.as_raw_fd()), name, flags, mode)?;
    // SAFETY: `openat` just returned `raw` as a new descriptor; nothing else owns it, so
    // the `OwnedFd` becomes its only owner and closes it exactly once.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Opens a directory for use as the base of further `*at` calls. Fails with `ENOTDIR` or
/// `ELOOP` on anything that is not a real directory, symlinks included.
pub(super) fn open_directory_path(directory: BorrowedFd<'_>, name: &OsStr) -> io::Result<OwnedFd> {
    open_at(
        directory,
        name,
        OFlag::O_PATH | OFlag::O_DIRECTORY,
        Mode::empty(),
    )
}

/// Opens a directory for reading, so that its owner, mode and xattrs can be set through
/// the descriptor.
pub(super) fn open_directory(directory: BorrowedFd<'_>, name: &OsStr) -> io::Result<File> {
    open_at(
        directory,
        name,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY,
        Mode::empty(),
    )
    .map(File::from)
}

/// Creates a new regular file; fails with `EEXIST` if anything is at `name`.
pub(super) fn create_file(directory: BorrowedFd<'_>, name: &OsStr) -> io::Result<File> {
    let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL;
    open_at(directory, name, flags, Mode::from_bits_truncate(0o600)).map(File::from)
}

/// `lstat` relative to a directory; `None` when nothing is there.
pub(super) fn lstat_at(directory: BorrowedFd<'_>, name: &OsStr) -> io::Result<Option<FileStat>> {
    match nix::sys::stat::fstatat(
        Some(directory.as_raw_fd()),
        name,
        AtFlags::AT_SYMLINK_NOFOLLOW,
    ) {
        Ok(stat) => Ok(Some(stat)),
        Err(Errno::ENOENT) => Ok(None),
        Err(errno) => Err(errno.into()),
    }
}
