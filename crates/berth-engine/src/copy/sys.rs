//! The file system calls `cp` makes, all relative to directory descriptors.
//!
//! A path inside a container is only ever opened with `openat2(RESOLVE_IN_ROOT)` against
//! a descriptor of the container root, so the kernel resolves every symlink and `..` as
//! if the process were chrooted there (openat2(2), Linux 5.6). Last components are
//! handled with `*at` calls that never follow them (`O_NOFOLLOW`, `AT_SYMLINK_NOFOLLOW`),
//! or through a descriptor pinned to the inode, so a container process swapping a file
//! for a symlink mid-copy cannot redirect a write to the host (CVE-2018-15664).

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::{FileStat, Mode, SFlag};

/// Buffer size for copies that go through user space (tar streams).
pub(crate) const COPY_BUFFER: usize = 1 << 20;

/// An open directory that paths are resolved inside, as if it were `/`.
#[derive(Debug)]
pub(crate) struct RootDir {
    fd: OwnedFd,
}

impl RootDir {
    pub(crate) fn open(path: &Path) -> io::Result<Self> {
        let fd = nix::fcntl::open(
            path,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Self { fd: owned(fd) })
    }

    /// Opens `path` (absolute or relative, read inside the root; `..` stops at the root
    /// and absolute symlinks start again from it).
    pub(crate) fn open_in(&self, path: &[u8], flags: OFlag, mode: Mode) -> io::Result<OwnedFd> {
        let relative = trim_leading_slashes(path);
        let relative: &[u8] = if relative.is_empty() { b"." } else { relative };
        let how = OpenHow::new()
            .flags(flags | OFlag::O_CLOEXEC)
            .mode(mode)
            .resolve(ResolveFlag::RESOLVE_IN_ROOT | ResolveFlag::RESOLVE_NO_MAGICLINKS);
        // openat2 fails with EAGAIN when a concurrent rename could have let a `..` escape;
        // it is safe to retry (openat2(2)).
        let mut attempts = 0;
        loop {
            match nix::fcntl::openat2(self.fd.as_raw_fd(), relative, how) {
                Ok(fd) => return Ok(owned(fd)),
                Err(Errno::EAGAIN | Errno::EINTR) if attempts < 128 => attempts += 1,
                Err(errno) => return Err(errno.into()),
            }
        }
    }

    /// Opens a directory inside the root for `*at` calls.
    pub(crate) fn open_directory(&self, path: &[u8]) -> io::Result<OwnedFd> {
        self.open_in(path, OFlag::O_PATH | OFlag::O_DIRECTORY, Mode::empty())
    }

    /// `lstat` of a path inside the root: the last component is not followed.
    pub(crate) fn lstat(&self, path: &[u8]) -> io::Result<FileStat> {
        let fd = self.open_in(path, OFlag::O_PATH | OFlag::O_NOFOLLOW, Mode::empty())?;
        fstat(fd.as_fd())
    }
}

fn trim_leading_slashes(path: &[u8]) -> &[u8] {
    let start = path
        .iter()
        .position(|byte| *byte != b'/')
        .unwrap_or(path.len());
    &path[start..]
}

fn owned(fd: RawFd) -> OwnedFd {
    // SAFETY: every caller passes a descriptor that a successful open call just returned;
    // nothing else holds it, so the OwnedFd becomes its only owner and closes it once.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

fn c_name(name: &[u8]) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name has a NUL"))
}

/// `openat` of one name in `directory`, never following a symlink there.
pub(crate) fn open_at(
    directory: BorrowedFd<'_>,
    name: &[u8],
    flags: OFlag,
    mode: Mode,
) -> io::Result<OwnedFd> {
    let flags = flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let fd = nix::fcntl::openat(Some(directory.as_raw_fd()), name, flags, mode)?;
    Ok(owned(fd))
}

/// `lstat` of one name in `directory`; `None` when nothing is there.
pub(crate) fn lstat_at(directory: BorrowedFd<'_>, name: &[u8]) -> io::Result<Option<FileStat>> {
    match nix::sys::stat::fstatat(
        Some(directory.as_raw_fd()),
        name,
        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
    ) {
        Ok(stat) => Ok(Some(stat)),
        Err(Errno::ENOENT) => Ok(None),
        Err(errno) => Err(errno.into()),
    }
}

pub(crate) fn fstat(fd: BorrowedFd<'_>) -> io::Result<FileStat> {
    Ok(nix::sys::stat::fstat(fd.as_raw_fd())?)
}

pub(crate) fn read_link_at(directory: BorrowedFd<'_>, name: &[u8]) -> io::Result<Vec<u8>> {
    let target = nix::fcntl::readlinkat(Some(directory.as_raw_fd()), name)?;
    Ok(target.into_encoded_bytes())
}

/// The file type bits of a stat.
pub(crate) fn file_type(stat: &FileStat) -> SFlag {
    SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT
}

/// The `/proc/self/fd` path of a descriptor: opening or changing it reaches exactly the
/// inode the descriptor holds, whatever happens to its name meanwhile.
pub(crate) fn proc_path(fd: BorrowedFd<'_>) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// Opens the inode an `O_PATH` descriptor holds for reading (never a symlink: callers
/// check the type first).
pub(crate) fn reopen(fd: BorrowedFd<'_>, flags: OFlag) -> io::Result<OwnedFd> {
    let fd = nix::fcntl::open(&proc_path(fd), flags | OFlag::O_CLOEXEC, Mode::empty())?;
    Ok(owned(fd))
}

/// The names in a directory (without `.` and `..`), sorted bytewise like Go's
/// `filepath.WalkDir`.
pub(crate) fn list_directory(directory: BorrowedFd<'_>) -> io::Result<Vec<Vec<u8>>> {
    let mut names = Vec::new();
    for entry in fs_err::read_dir(proc_path(directory))? {
        names.push(entry?.file_name().into_encoded_bytes());
    }
    names.sort_unstable();
    Ok(names)
}

/// Copies `len` bytes from the current offset of `source` to `target`, in the kernel
/// where it can: `copy_file_range` (same file system), then `sendfile` (any two files),
/// then a large buffer. Stops early if `source` ends early; returns the bytes copied.
pub(crate) fn copy_file_data(source: &File, target: &File, len: u64) -> io::Result<u64> {
    let mut copied = 0u64;
    let mut use_copy_file_range = true;
    while copied < len {
        let chunk = usize::try_from((len - copied).min(1 << 30)).unwrap_or(1 << 30);
        if use_copy_file_range {
            match copy_file_range(source, target, chunk) {
                Ok(0) => return Ok(copied),
                Ok(written) => copied += written as u64,
                Err(Errno::EINTR) => {}
                // Not supported here (different file systems, old kernel, special files).
                Err(Errno::EXDEV | Errno::EINVAL | Errno::ENOSYS | Errno::EOPNOTSUPP)
                    if copied == 0 =>
                {
                    use_copy_file_range = false;
                }
                Err(errno) => return Err(errno.into()),
            }
            continue;
        }
        match send_file(source, target, chunk) {
            Ok(0) => return Ok(copied),
            Ok(written) => copied += written as u64,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error)
                if copied == 0
                    && matches!(error.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) =>
            {
                let mut reader = source.take(len);
                let mut writer = target;
                return copy_stream(&mut reader, &mut writer, &mut Vec::new());
            }
            Err(error) => return Err(error),
        }
    }
    Ok(copied)
}

fn copy_file_range(source: &File, target: &File, len: usize) -> Result<usize, Errno> {
    // SAFETY: both descriptors are open for the duration of the call (borrowed from
    // `File`s); null offset pointers make the kernel use and advance the files' own
    // offsets, so no memory is passed to it.
    let copied = unsafe {
        libc::copy_file_range(
            source.as_raw_fd(),
            std::ptr::null_mut(),
            target.as_raw_fd(),
            std::ptr::null_mut(),
            len,
            0,
        )
    };
    if copied < 0 {
        return Err(Errno::last());
    }
    Ok(usize::try_from(copied).unwrap_or(0))
}

fn send_file(source: &File, target: &File, len: usize) -> io::Result<usize> {
    // SAFETY: both descriptors are open for the duration of the call (borrowed from
    // `File`s); a null offset pointer makes sendfile use and advance the source's file
    // offset, so no memory is passed to the kernel.
    let written = unsafe {
        libc::sendfile(
            target.as_raw_fd(),
            source.as_raw_fd(),
            std::ptr::null_mut(),
            len,
        )
    };
    if written < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(usize::try_from(written).unwrap_or(0))
}

/// `io::copy` through `buffer`, grown to a size that suits streams of big files (kept by
/// the caller across files, so small files do not each allocate it).
pub(crate) fn copy_stream(
    reader: &mut dyn Read,
    writer: &mut dyn Write,
    buffer: &mut Vec<u8>,
) -> io::Result<u64> {
    if buffer.len() < COPY_BUFFER {
        buffer.resize(COPY_BUFFER, 0);
    }
    let mut copied = 0u64;
    loop {
        let read = match reader.read(buffer) {
            Ok(0) => return Ok(copied),
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        writer.write_all(&buffer[..read])?;
        copied += read as u64;
    }
}

/// The extended attribute `name` of an open file; `None` when it has none.
pub(crate) fn get_xattr(fd: BorrowedFd<'_>, name: &str) -> io::Result<Option<Vec<u8>>> {
    let name = c_name(name.as_bytes())?;
    let mut value = vec![0u8; 256];
    loop {
        // SAFETY: `name` is NUL-terminated and `value` is a live buffer of the length
        // passed; the descriptor is open for the duration of the call.
        let length = unsafe {
            libc::fgetxattr(
                fd.as_raw_fd(),
                name.as_ptr(),
                value.as_mut_ptr().cast(),
                value.len(),
            )
        };
        if length >= 0 {
            value.truncate(usize::try_from(length).unwrap_or(0));
            return Ok(Some(value));
        }
        let error = io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::ENODATA | libc::ENOTSUP) => return Ok(None),
            Some(libc::ERANGE) if value.len() < 1 << 16 => value.resize(value.len() * 4, 0),
            _ => return Err(error),
        }
    }
}

/// Sets an extended attribute on the inode a descriptor (possibly `O_PATH`) holds.
pub(crate) fn set_xattr(fd: BorrowedFd<'_>, name: &[u8], value: &[u8]) -> io::Result<()> {
    let path = c_name(proc_path(fd).as_os_str().as_bytes())?;
    let name = c_name(name)?;
    // SAFETY: `path` and `name` are NUL-terminated and `value` is a live buffer of the
    // length passed. The path is this process's /proc/self/fd link for an open
    // descriptor, so it reaches that exact inode.
    let result = unsafe {
        libc::setxattr(
            path.as_ptr(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    if result < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Changes the mode of the inode an `O_PATH` descriptor holds (never a symlink: callers
/// check the type first, as glibc's `fchmodat(AT_SYMLINK_NOFOLLOW)` does).
pub(crate) fn chmod_fd(fd: BorrowedFd<'_>, mode: u32) -> io::Result<()> {
    nix::sys::stat::fchmodat(
        None,
        &proc_path(fd),
        Mode::from_bits_truncate(mode),
        nix::sys::stat::FchmodatFlags::FollowSymlink,
    )?;
    Ok(())
}

/// Changes the owner of the inode a descriptor (possibly `O_PATH`, possibly a symlink)
/// holds.
pub(crate) fn chown_fd(fd: BorrowedFd<'_>, uid: u32, gid: u32) -> io::Result<()> {
    nix::unistd::fchownat(
        Some(fd.as_raw_fd()),
        OsStr::new(""),
        Some(nix::unistd::Uid::from_raw(uid)),
        Some(nix::unistd::Gid::from_raw(gid)),
        nix::fcntl::AtFlags::AT_EMPTY_PATH,
    )?;
    Ok(())
}

/// Removes `name` from `directory`: a file, a symlink or a whole directory tree, never
/// following a symlink.
pub(crate) fn remove_all_at(directory: BorrowedFd<'_>, name: &[u8]) -> io::Result<()> {
    use nix::unistd::{unlinkat, UnlinkatFlags};
    match unlinkat(
        Some(directory.as_raw_fd()),
        name,
        UnlinkatFlags::NoRemoveDir,
    ) {
        Ok(()) | Err(Errno::ENOENT) => return Ok(()),
        Err(Errno::EISDIR) => {}
        Err(errno) => return Err(errno.into()),
    }
    let child = open_at(
        directory,
        name,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY,
        Mode::empty(),
    )?;
    for entry in list_directory(child.as_fd())? {
        remove_all_at(child.as_fd(), &entry)?;
    }
    match unlinkat(Some(directory.as_raw_fd()), name, UnlinkatFlags::RemoveDir) {
        Ok(()) | Err(Errno::ENOENT) => Ok(()),
        Err(errno) => Err(errno.into()),
    }
}

/// Whether an error means "this path does not exist" in Go's `os.IsNotExist` sense.
pub(crate) fn is_not_found(error: &io::Error) -> bool {
    // Kinds, not errno: errors of fs_err calls carry no raw code.
    error.kind() == io::ErrorKind::NotFound
}

pub(crate) fn display(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}

pub(crate) fn host_path(path: &[u8]) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(path))
}
