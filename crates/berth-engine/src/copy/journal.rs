//! Crash safety of a copy into a container. Each regular file is written
//! unnamed (`O_TMPFILE`) and linked into place only when complete, so a
//! `cp` killed part way leaves the old file or the new one, never a
//! truncated file under the final name. Replacing an existing file needs a
//! name first (`rename` replaces atomically, `linkat` does not): the file is
//! linked under a temporary name in the same directory and renamed over the
//! old one. The temporary name is written to the copy's *journal* (a file
//! the caller names, one per copy in progress) before it exists, so whoever
//! finds the journal of a copy whose process is gone removes it
//! ([`remove_journaled_temporary`]).

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::path::Path;

use fs_err::os::unix::fs::OpenOptionsExt;
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

use super::paths;
use super::sys::{self, RootDir};

/// The prefix of every temporary name (`.berth-cp-<hex>`): never removed
/// unless it has it, whatever a journal says.
pub(crate) const TEMPORARY_PREFIX: &[u8] = b".berth-cp-";

/// Where a copy records the temporary name it is about to create.
#[derive(Debug)]
pub(crate) struct Journal {
    file: File,
}

impl Journal {
    pub(crate) fn open(path: &Path) -> io::Result<Self> {
        let file = fs_err::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)?
            .into_parts()
            .0;
        Ok(Self { file })
    }

    /// Records `path` (inside the container's root) as the one temporary
    /// file of this copy; it replaces the one before, which has been renamed
    /// into place by then.
    pub(crate) fn record(&self, path: &[u8]) -> io::Result<()> {
        self.file.set_len(0)?;
        self.file.write_all_at(path, 0)
    }
}

/// A fresh temporary name for a file in the directory of `path`.
pub(crate) fn temporary_name() -> Vec<u8> {
    let mut name = TEMPORARY_PREFIX.to_vec();
    name.extend_from_slice(&crate::containers::names::new_id().as_bytes()[..16]);
    name
}

/// Removes the temporary file the journal at `journal` names from the
/// container file system at `root` (its writable layer will do: a file a
/// copy created is always there), resolved inside `root` as every copy
/// path is. A journal that is missing, empty or names anything but a
/// temporary name removes nothing.
pub fn remove_journaled_temporary(journal: &Path, root: &Path) -> io::Result<()> {
    let recorded = match fs_err::read(journal) {
        Ok(recorded) => recorded,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error),
    };
    let base = paths::base(&recorded);
    if recorded.is_empty() || !base.starts_with(TEMPORARY_PREFIX) {
        return Ok(());
    }
    let root = match RootDir::open(root) {
        Ok(root) => root,
        Err(error) if sys::is_not_found(&error) => return Ok(()),
        Err(error) => return Err(error),
    };
    let parent = match root.open_directory(&paths::dir(&recorded)) {
        Ok(parent) => parent,
        Err(error) if sys::is_not_found(&error) => return Ok(()),
        Err(error) => return Err(error),
    };
    // Only ever a regular file (or nothing): a container that put something
    // else under the name keeps it.
    if let Some(stat) = sys::lstat_at(parent.as_fd(), &base)? {
        if sys::file_type(&stat) == nix::sys::stat::SFlag::S_IFREG {
            nix::unistd::unlinkat(
                Some(std::os::fd::AsRawFd::as_raw_fd(&parent)),
                base.as_slice(),
                nix::unistd::UnlinkatFlags::NoRemoveDir,
            )
            .or_else(|errno| match errno {
                nix::errno::Errno::ENOENT => Ok(()),
                errno => Err(io::Error::from(errno)),
            })?;
        }
    }
    Ok(())
}

/// Opens an unnamed regular file in `parent` (`O_TMPFILE`), or `None` where
/// the file system has none.
pub(crate) fn open_unnamed(parent: std::os::fd::BorrowedFd<'_>) -> io::Result<Option<File>> {
    match sys::open_at(
        parent,
        b".",
        OFlag::O_TMPFILE | OFlag::O_WRONLY,
        Mode::from_bits_truncate(0o600),
    ) {
        Ok(fd) => Ok(Some(File::from(fd))),
        // open(2): EISDIR or EOPNOTSUPP where O_TMPFILE is not supported.
        Err(error)
            if matches!(
                error.raw_os_error(),
                Some(libc::EOPNOTSUPP) | Some(libc::EISDIR) | Some(libc::EINVAL)
            ) =>
        {
            Ok(None)
        }
        Err(error) => Err(error),
    }
}

/// Gives the unnamed `file` the name `name` in `parent`; fails with
/// `EEXIST` when something has that name.
pub(crate) fn link_unnamed(
    file: &File,
    parent: std::os::fd::BorrowedFd<'_>,
    name: &[u8],
) -> io::Result<()> {
    use std::ffi::OsStr;
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    let name = OsStr::from_bytes(name);
    let linked = nix::unistd::linkat(
        Some(file.as_raw_fd()),
        OsStr::new(""),
        Some(parent.as_raw_fd()),
        name,
        nix::fcntl::AtFlags::AT_EMPTY_PATH,
    );
    match linked {
        Ok(()) => Ok(()),
        // AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH (linkat(2)); the
        // descriptor's /proc link does not.
        Err(nix::errno::Errno::ENOENT | nix::errno::Errno::EPERM) => {
            let proc_path = sys::proc_path(file.as_fd());
            nix::unistd::linkat(
                None,
                proc_path.as_os_str(),
                Some(parent.as_raw_fd()),
                name,
                nix::fcntl::AtFlags::AT_SYMLINK_FOLLOW,
            )
            .map_err(io::Error::from)
        }
        Err(errno) => Err(errno.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journaled_temporary_is_removed_and_nothing_else() {
        let root = tempfile::tempdir().unwrap();
        let journal = root.path().join("journal");
        fs_err::create_dir(root.path().join("dir")).unwrap();
        let name = String::from_utf8(temporary_name()).unwrap();
        let temporary = root.path().join("dir").join(&name);
        fs_err::write(&temporary, b"partial").unwrap();
        Journal::open(&journal)
            .unwrap()
            .record(format!("/dir/{name}").as_bytes())
            .unwrap();
        remove_journaled_temporary(&journal, root.path()).unwrap();
        assert!(!temporary.exists());
        // Names without the prefix, and paths out of the root, are left.
        fs_err::write(root.path().join("dir/keep"), b"").unwrap();
        fs_err::write(&journal, b"/dir/keep").unwrap();
        remove_journaled_temporary(&journal, root.path()).unwrap();
        fs_err::write(&journal, b"/../../etc/.berth-cp-x").unwrap();
        remove_journaled_temporary(&journal, root.path()).unwrap();
        assert!(root.path().join("dir/keep").exists());
        // A missing journal is nothing to do.
        remove_journaled_temporary(&root.path().join("none"), root.path()).unwrap();
    }

    #[test]
    fn unnamed_files_are_linked_into_place() {
        let directory = tempfile::tempdir().unwrap();
        let parent = fs_err::File::open(directory.path()).unwrap();
        let Some(file) = open_unnamed(parent.as_fd()).unwrap() else {
            eprintln!("skipped: no O_TMPFILE on {:?}", directory.path());
            return;
        };
        std::io::Write::write_all(&mut &file, b"data").unwrap();
        assert!(fs_err::read_dir(directory.path()).unwrap().next().is_none());
        link_unnamed(&file, parent.as_fd(), b"name").unwrap();
        assert_eq!(
            fs_err::read(directory.path().join("name")).unwrap(),
            b"data"
        );
        let again = link_unnamed(&file, parent.as_fd(), b"name").unwrap_err();
        assert_eq!(again.raw_os_error(), Some(libc::EEXIST));
    }
}
