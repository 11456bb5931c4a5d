//! Reads a directory tree through descriptors, never following a symlink.
//!
//! An upper dir or an exported root belongs to a container that may still be running and
//! may swap a directory for a symlink while we walk it. Every directory is opened relative
//! to its parent's descriptor with `O_NOFOLLOW`, files likewise, so such a swap can make an
//! entry vanish or fail but never leads outside the tree (the race behind CVE-2018-15664 in
//! `docker cp`).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{FileStat, Mode, SFlag};

use super::error::ChangesError;

const PROC_FDS: &str = "/proc/self/fd";

/// What sits at a name, by its `st_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Directory,
    Regular,
    Symlink,
    CharDevice,
    BlockDevice,
    Fifo,
    Socket,
}

pub(super) fn kind_of(stat: &FileStat) -> Kind {
    match SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT {
        SFlag::S_IFDIR => Kind::Directory,
        SFlag::S_IFLNK => Kind::Symlink,
        SFlag::S_IFCHR => Kind::CharDevice,
        SFlag::S_IFBLK => Kind::BlockDevice,
        SFlag::S_IFIFO => Kind::Fifo,
        SFlag::S_IFSOCK => Kind::Socket,
        _ => Kind::Regular,
    }
}

/// Extended attributes of one entry, sorted by name.
pub(super) type Xattrs = Vec<(OsString, Vec<u8>)>;

/// An open directory of the tree, with the host path it was opened at for messages.
#[derive(Debug)]
pub(super) struct DirHandle {
    file: File,
    path: PathBuf,
}

impl DirHandle {
    /// Opens the root of a walk. The caller chose this path, so symlinks in it are followed.
    pub(super) fn open_root(path: &Path) -> Result<Self, ChangesError> {
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let fd = nix::fcntl::open(path, flags, Mode::empty()).map_err(|errno| {
            ChangesError::OpenDirectory {
                path: path.to_owned(),
                source: errno.into(),
            }
        })?;
        Ok(Self {
            file: owned(fd),
            path: path.to_owned(),
        })
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    pub(super) fn child_path(&self, name: &OsStr) -> PathBuf {
        self.path.join(name)
    }

    /// Opens the directory `name`; fails with `ENOTDIR` or `ELOOP` if it is not one (any
    /// more).
    pub(super) fn open_directory(&self, name: &OsStr) -> Result<Self, ChangesError> {
        let path = self.child_path(name);
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY;
        match self.open_at(name, flags) {
            Ok(file) => Ok(Self { file, path }),
            Err(source) => Err(ChangesError::OpenDirectory { path, source }),
        }
    }

    /// Opens the regular file `name` for reading. `O_NONBLOCK` keeps a fifo swapped in
    /// after the `lstat` from blocking the walk; the caller checks the type with `fstat`.
    pub(super) fn open_file(&self, name: &OsStr) -> Result<File, ChangesError> {
        let flags = OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY;
        self.open_at(name, flags)
            .map_err(|source| ChangesError::OpenFile {
                path: self.child_path(name),
                source,
            })
    }

    fn open_at(&self, name: &OsStr, flags: OFlag) -> io::Result<File> {
        let flags = flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let fd = nix::fcntl::openat(Some(self.file.as_raw_fd()), name, flags, Mode::empty())?;
        Ok(owned(fd))
    }

    /// The names in this directory (`read_dir` leaves out `.` and `..`), sorted by their
    /// bytes, the order Go's `filepath.Walk` gives Docker.
    pub(super) fn names(&self) -> Result<Vec<OsString>, ChangesError> {
        let list_error = |source: io::Error| ChangesError::ReadDirectory {
            path: self.path.clone(),
            source,
        };
        // Through `/proc/self/fd/N`, which names this very directory (see `proc_path`).
        let proc_path = Path::new(PROC_FDS).join(self.file.as_raw_fd().to_string());
        let mut names = Vec::new();
        for entry in fs_err::read_dir(proc_path).map_err(list_error)? {
            names.push(entry.map_err(list_error)?.file_name());
        }
        names.sort_unstable_by(|left, right| left.as_bytes().cmp(right.as_bytes()));
        Ok(names)
    }

    /// `lstat` of `name`; `None` if it is gone.
    pub(super) fn stat(&self, name: &OsStr) -> Result<Option<FileStat>, ChangesError> {
        match nix::sys::stat::fstatat(
            Some(self.file.as_raw_fd()),
            name,
            AtFlags::AT_SYMLINK_NOFOLLOW,
        ) {
            Ok(stat) => Ok(Some(stat)),
            Err(Errno::ENOENT) => Ok(None),
            Err(errno) => Err(ChangesError::Stat {
                path: self.child_path(name),
                source: errno.into(),
            }),
        }
    }

    /// `fstat` of this directory itself.
    pub(super) fn stat_self(&self) -> Result<FileStat, ChangesError> {
        nix::sys::stat::fstat(self.file.as_raw_fd()).map_err(|errno| ChangesError::Stat {
            path: self.path.clone(),
            source: errno.into(),
        })
    }

    pub(super) fn read_link(&self, name: &OsStr) -> Result<OsString, ChangesError> {
        nix::fcntl::readlinkat(Some(self.file.as_raw_fd()), name).map_err(|errno| {
            ChangesError::ReadLink {
                path: self.child_path(name),
                source: errno.into(),
            }
        })
    }

    /// One extended attribute of this directory itself.
    pub(super) fn own_xattr(&self, key: &str) -> Result<Option<Vec<u8>>, ChangesError> {
        read_value(xattr::FileExt::get_xattr(&self.file, key), &self.path)
    }

    /// All extended attributes of this directory itself.
    pub(super) fn own_xattrs(&self) -> Result<Xattrs, ChangesError> {
        file_xattrs(&self.file, &self.path)
    }

    /// One extended attribute of the entry `name`, without following a symlink there.
    pub(super) fn entry_xattr(
        &self,
        name: &OsStr,
        key: &str,
    ) -> Result<Option<Vec<u8>>, ChangesError> {
        read_value(
            xattr::get(self.proc_path(name), key),
            &self.child_path(name),
        )
    }

    /// All extended attributes of the entry `name`, without following a symlink there.
    pub(super) fn entry_xattrs(&self, name: &OsStr) -> Result<Xattrs, ChangesError> {
        let proc_path = self.proc_path(name);
        read_all(
            || xattr::list(&proc_path),
            |key| xattr::get(&proc_path, key),
            &self.child_path(name),
        )
    }

    /// There is no `lgetxattrat`. `/proc/self/fd/N` names this very directory (the
    /// descriptor pins it), and the `l*xattr` calls do not follow `name`, so the lookup
    /// cannot leave the directory however the tree changes meanwhile.
    fn proc_path(&self, name: &OsStr) -> PathBuf {
        Path::new(PROC_FDS)
            .join(self.file.as_raw_fd().to_string())
            .join(name)
    }
}

/// All extended attributes of an open file, sorted by name.
pub(super) fn file_xattrs(file: &File, path: &Path) -> Result<Xattrs, ChangesError> {
    read_all(
        || xattr::FileExt::list_xattr(file),
        |key| xattr::FileExt::get_xattr(file, key),
        path,
    )
}

fn read_all(
    list: impl FnOnce() -> io::Result<xattr::XAttrs>,
    get: impl Fn(&OsStr) -> io::Result<Option<Vec<u8>>>,
    path: &Path,
) -> Result<Xattrs, ChangesError> {
    let names = match list() {
        Ok(names) => names,
        Err(error) if nothing_to_read(&error) => return Ok(Vec::new()),
        Err(source) => {
            return Err(ChangesError::ReadXattrs {
                path: path.to_owned(),
                source,
            })
        }
    };
    let mut xattrs = Vec::new();
    for name in names {
        // Removed between the list and the read: as if it never was.
        if let Some(value) = read_value(get(&name), path)? {
            xattrs.push((name, value));
        }
    }
    xattrs.sort_unstable_by(|(left, _), (right, _)| left.as_bytes().cmp(right.as_bytes()));
    Ok(xattrs)
}

/// `xattr` already maps `ENODATA` to `None`.
fn read_value(
    result: io::Result<Option<Vec<u8>>>,
    path: &Path,
) -> Result<Option<Vec<u8>>, ChangesError> {
    match result {
        Ok(value) => Ok(value),
        Err(error) if nothing_to_read(&error) => Ok(None),
        Err(source) => Err(ChangesError::ReadXattrs {
            path: path.to_owned(),
            source,
        }),
    }
}

/// A file system without xattrs holds none, and an entry that vanished since it was
/// listed (`ENOENT` through the `/proc` path) is treated as never seen.
fn nothing_to_read(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error().map(Errno::from_raw),
        Some(Errno::EOPNOTSUPP | Errno::ENOENT)
    )
}

fn owned(fd: std::os::fd::RawFd) -> File {
    // SAFETY: `fd` was just returned by a successful `open`/`openat`; nothing else owns
    // it, so the `OwnedFd` becomes its only owner and closes it exactly once.
    File::from(unsafe { OwnedFd::from_raw_fd(fd) })
}
