//! Creates entries below a destination directory inside a root, as go-archive's
//! `Unpack` does for `docker cp`:
//!
//! - names lose leading `/`s and are cleaned; `.` is skipped; a name that climbs out of
//!   the destination (`..`) is refused ("invalid entry name"), as is such a hardlink
//!   target;
//! - an existing file is replaced; an existing directory is merged into by a directory
//!   entry; with `no_overwrite_dir_non_dir` a directory may not replace a non-directory
//!   or the reverse;
//! - missing parents are created 0755, owned by root;
//! - owner (unless the caller says not to chown), xattrs, mode (after chown, which
//!   clears setuid), then times — directories' times last, once nothing more is
//!   created in them.
//!
//! Every parent directory is opened with `openat2(RESOLVE_IN_ROOT)`: symlinks in the
//! destination, whether already there or created by earlier entries, are followed as if
//! the root were `/` and can never lead outside it. The last component is never followed.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use nix::fcntl::OFlag;
use nix::sys::stat::{Mode, SFlag, UtimensatFlags};
use nix::sys::time::TimeSpec;

use super::entry::{Data, Entry, EntryKind, Sink, Timestamp};
use super::error::CopyError;
use super::journal::{self, Journal};
use super::paths;
use super::resolve::{self, Missing};
use super::sys::{self, RootDir};

/// Who owns extracted files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner {
    /// The ids in the entries (the API's default, and Docker's).
    FromEntries,
    /// Fixed ids (`cp -a` into a container with a configured user).
    Fixed { uid: u32, gid: u32 },
    /// Leave files owned by whoever creates them (`docker cp` to the host).
    Creator,
}

pub(crate) struct Extractor<'a> {
    root: &'a RootDir,
    /// The destination directory inside the root, resolved (no symlinks), absolute.
    destination: Vec<u8>,
    owner: Owner,
    no_overwrite_dir_non_dir: bool,
    /// Directories whose times are set at the end: path inside the root, atime, mtime.
    directories: Vec<(Vec<u8>, TimeSpec, TimeSpec)>,
    /// For copying file data out of a stream.
    buffer: Vec<u8>,
    /// Where a temporary name is recorded before it exists (see
    /// [`super::journal`]); none for a copy to the host.
    journal: Option<Journal>,
}

impl<'a> Extractor<'a> {
    pub(crate) fn new(
        root: &'a RootDir,
        destination: Vec<u8>,
        owner: Owner,
        no_overwrite_dir_non_dir: bool,
    ) -> Self {
        Self {
            root,
            destination,
            owner,
            no_overwrite_dir_non_dir,
            directories: Vec::new(),
            buffer: Vec::new(),
            journal: None,
        }
    }

    /// Records temporary names in `journal` (a copy into a container).
    pub(crate) fn with_journal(mut self, journal: Option<Journal>) -> Self {
        self.journal = journal;
        self
    }

    /// Sets the directories' times; call once every entry is in.
    pub(crate) fn finish(self) -> Result<(), CopyError> {
        for (path, accessed, modified) in &self.directories {
            let (parent, name) = self.parent_of(path)?;
            set_times(parent.as_fd(), &name, accessed, modified)
                .map_err(extract_error("set times of", path))?;
        }
        Ok(())
    }

    fn parent_of(&self, path: &[u8]) -> Result<(OwnedFd, Vec<u8>), CopyError> {
        let parent_path = paths::dir(path);
        let parent = self
            .root
            .open_directory(&parent_path)
            .map_err(extract_error("open", &parent_path))?;
        Ok((parent, paths::base(path)))
    }

    fn extract(&mut self, entry: &Entry, data: Data<'_>) -> Result<(), CopyError> {
        let trimmed = entry
            .name
            .iter()
            .position(|byte| *byte != b'/')
            .unwrap_or(entry.name.len());
        let name = paths::clean(&entry.name[trimmed..]);
        if name == b"." {
            return Ok(());
        }
        if !paths::is_local(&name) {
            return Err(CopyError::InvalidEntryName {
                name: sys::display(&entry.name),
            });
        }
        let link_target = match &entry.kind {
            EntryKind::HardLink { target } => Some(self.hardlink_target(target)?),
            _ => None,
        };
        let path = paths::join(&self.destination, &name);
        let base = paths::base(&path);
        let parent = self.ensure_directory(&paths::dir(&path))?;
        let parent = parent.as_fd();
        let is_directory = entry.kind == EntryKind::Directory;

        let existing = sys::lstat_at(parent, &base).map_err(extract_error("lstat", &path))?;
        let mut merge = false;
        if let Some(existing) = existing {
            let existing_directory = sys::file_type(&existing) == SFlag::S_IFDIR;
            if self.no_overwrite_dir_non_dir && existing_directory && !is_directory {
                return Err(CopyError::OverwriteDirectory {
                    path: sys::display(&path),
                    destination: sys::display(&self.destination),
                });
            }
            if self.no_overwrite_dir_non_dir && !existing_directory && is_directory {
                return Err(CopyError::OverwriteNonDirectory {
                    path: sys::display(&path),
                    destination: sys::display(&self.destination),
                });
            }
            merge = existing_directory && is_directory;
            // A regular file replaces what is there only once it is complete.
            if !merge && !matches!(entry.kind, EntryKind::Regular { .. }) {
                sys::remove_all_at(parent, &base).map_err(extract_error("remove", &path))?;
            }
        }

        let place = Place {
            parent,
            base: &base,
            path: &path,
        };
        if let EntryKind::Regular { size } = entry.kind {
            let file = self.create_file(&place, data, size)?;
            let temporary = file.temporary.clone();
            let node = OwnedFd::from(file.file);
            let placed = node
                .try_clone()
                .map_err(extract_error("duplicate the descriptor of", &path))
                .and_then(|pinned| self.apply_metadata(entry, &place, Some(pinned)))
                .and_then(|()| self.place_file(&place, &node, file.temporary, existing.as_ref()));
            if placed.is_err() {
                // A file that failed never gets a name (an unnamed one goes
                // with its descriptor).
                if let Some(name) = temporary {
                    remove_temporary(parent, &name);
                }
            }
            return placed;
        }
        let node = self.create(entry, &place, merge, link_target)?;
        self.apply_metadata(entry, &place, node)
    }

    /// Writes a regular file's data to a file with no name yet (or, where
    /// the file system has no `O_TMPFILE`, a temporary name recorded first).
    fn create_file(
        &mut self,
        place: &Place<'_, '_>,
        data: Data<'_>,
        size: u64,
    ) -> Result<NewFile, CopyError> {
        let Place { parent, path, .. } = *place;
        let creation = |operation| extract_error(operation, path);
        let (file, temporary) = match journal::open_unnamed(parent).map_err(creation("create"))? {
            Some(file) => (file, None),
            None => {
                let name = journal::temporary_name();
                self.record_temporary(path, &name)?;
                let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL;
                let fd = sys::open_at(parent, &name, flags, Mode::from_bits_truncate(0o600))
                    .map_err(creation("create"))?;
                (File::from(fd), Some(name))
            }
        };
        let written = match data {
            Data::File(source) => sys::copy_file_data(source, &file, size),
            Data::Stream(reader) => {
                sys::copy_stream(&mut reader.take(size), &mut &file, &mut self.buffer)
            }
            Data::None => Ok(0),
        }
        .map_err(creation("write"));
        let written = match written {
            Ok(written) => written,
            Err(error) => {
                if let Some(name) = &temporary {
                    remove_temporary(parent, name);
                }
                return Err(error);
            }
        };
        if written < size {
            tracing::warn!(path = %sys::display(path), written, size, "source ended early");
        }
        Ok(NewFile { file, temporary })
    }

    /// Puts a complete file under its name: linked there when nothing has
    /// it, else renamed over what is there (a directory, which may not be
    /// renamed over, is removed first), so the name always holds the old
    /// file or the new one.
    fn place_file(
        &self,
        place: &Place<'_, '_>,
        node: &OwnedFd,
        temporary: Option<Vec<u8>>,
        existing: Option<&nix::sys::stat::FileStat>,
    ) -> Result<(), CopyError> {
        let Place { parent, base, path } = *place;
        let parent_raw = Some(parent.as_raw_fd());
        let existing_directory =
            existing.is_some_and(|stat| sys::file_type(stat) == SFlag::S_IFDIR);
        if existing_directory {
            sys::remove_all_at(parent, base).map_err(extract_error("remove", path))?;
        }
        let temporary = match temporary {
            Some(name) => name,
            None => {
                let file = File::from(
                    node.try_clone()
                        .map_err(extract_error("duplicate the descriptor of", path))?,
                );
                match journal::link_unnamed(&file, parent, base) {
                    Ok(()) => return Ok(()),
                    Err(error) if error.raw_os_error() == Some(libc::EEXIST) => {}
                    Err(error) => return Err(extract_error("link", path)(error)),
                }
                let name = journal::temporary_name();
                self.record_temporary(path, &name)?;
                journal::link_unnamed(&file, parent, &name).map_err(extract_error("link", path))?;
                let renamed = nix::fcntl::renameat(parent_raw, name.as_slice(), parent_raw, base);
                if renamed.is_err() {
                    remove_temporary(parent, &name);
                }
                return renamed
                    .map_err(|errno| extract_error("rename into place", path)(errno.into()));
            }
        };
        // The caller removes a named temporary file that failed.
        nix::fcntl::renameat(parent_raw, temporary.as_slice(), parent_raw, base)
            .map_err(|errno| extract_error("rename into place", path)(errno.into()))
    }

    /// Records the temporary name `name` beside `path` in the journal.
    fn record_temporary(&self, path: &[u8], name: &[u8]) -> Result<(), CopyError> {
        let Some(journal) = &self.journal else {
            return Ok(());
        };
        let temporary = paths::join(&paths::dir(path), name);
        journal
            .record(&temporary)
            .map_err(extract_error("record the temporary name of", path))
    }

    /// Creates the file system object; returns a descriptor pinned to it, or `None` for
    /// a symlink (which is only ever touched by name, without following it).
    fn create(
        &mut self,
        entry: &Entry,
        place: &Place<'_, '_>,
        merge: bool,
        link_target: Option<Vec<u8>>,
    ) -> Result<Option<OwnedFd>, CopyError> {
        let Place { parent, base, path } = *place;
        let creation = |operation| extract_error(operation, path);
        let parent_raw = Some(parent.as_raw_fd());
        match &entry.kind {
            EntryKind::Directory => {
                if !merge {
                    nix::sys::stat::mkdirat(parent_raw, base, Mode::from_bits_truncate(0o700))
                        .map_err(|errno| creation("create directory")(errno.into()))?;
                }
                let fd = sys::open_at(
                    parent,
                    base,
                    OFlag::O_RDONLY | OFlag::O_DIRECTORY,
                    Mode::empty(),
                )
                .map_err(creation("open"))?;
                Ok(Some(fd))
            }
            EntryKind::Regular { .. } => unreachable!("regular files are made by create_file"),
            EntryKind::Symlink { target } => {
                nix::unistd::symlinkat(target.as_slice(), parent_raw, base)
                    .map_err(|errno| creation("create symlink")(errno.into()))?;
                Ok(None)
            }
            EntryKind::HardLink { .. } => {
                let target = link_target.unwrap_or_default();
                let (target_parent, target_name) = self.parent_of(&target)?;
                nix::unistd::linkat(
                    Some(target_parent.as_raw_fd()),
                    target_name.as_slice(),
                    parent_raw,
                    base,
                    nix::fcntl::AtFlags::empty(),
                )
                .map_err(|errno| creation("create hardlink")(errno.into()))?;
                self.pin(parent, base, path).map(Some)
            }
            EntryKind::CharDevice { major, minor } | EntryKind::BlockDevice { major, minor } => {
                let kind = if matches!(entry.kind, EntryKind::CharDevice { .. }) {
                    SFlag::S_IFCHR
                } else {
                    SFlag::S_IFBLK
                };
                let device = nix::sys::stat::makedev(u64::from(*major), u64::from(*minor));
                nix::sys::stat::mknodat(
                    parent_raw,
                    base,
                    kind,
                    Mode::from_bits_truncate(0o600),
                    device,
                )
                .map_err(|errno| creation("create device")(errno.into()))?;
                self.pin(parent, base, path).map(Some)
            }
            EntryKind::Fifo => {
                nix::sys::stat::mknodat(
                    parent_raw,
                    base,
                    SFlag::S_IFIFO,
                    Mode::from_bits_truncate(0o600),
                    0,
                )
                .map_err(|errno| creation("create fifo")(errno.into()))?;
                self.pin(parent, base, path).map(Some)
            }
        }
    }

    fn pin(&self, parent: BorrowedFd<'_>, base: &[u8], path: &[u8]) -> Result<OwnedFd, CopyError> {
        sys::open_at(parent, base, OFlag::O_PATH, Mode::empty())
            .map_err(extract_error("open", path))
    }

    fn apply_metadata(
        &mut self,
        entry: &Entry,
        place: &Place<'_, '_>,
        node: Option<OwnedFd>,
    ) -> Result<(), CopyError> {
        let Place { parent, base, path } = *place;
        let ids = match self.owner {
            Owner::FromEntries => Some((entry.uid, entry.gid)),
            Owner::Fixed { uid, gid } => Some((uid, gid)),
            Owner::Creator => None,
        };
        let modified = bound(entry.modified);
        let accessed = match entry.accessed {
            Some(accessed) if later(accessed, entry.modified) => bound(accessed),
            _ => modified,
        };
        let Some(node) = node else {
            // A symlink: owner and times of the link itself; no mode on Linux.
            if let Some((uid, gid)) = ids {
                nix::unistd::fchownat(
                    Some(parent.as_raw_fd()),
                    base,
                    Some(nix::unistd::Uid::from_raw(uid)),
                    Some(nix::unistd::Gid::from_raw(gid)),
                    nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
                )
                .map_err(|errno| extract_error("chown", path)(errno.into()))?;
            }
            return set_times(parent, base, &accessed, &modified)
                .map_err(extract_error("set times of", path));
        };
        let node = node.as_fd();
        if let Some((uid, gid)) = ids {
            sys::chown_fd(node, uid, gid).map_err(extract_error("chown", path))?;
        }
        // A hardlink to a symlink is a symlink: no mode, no times through it.
        let is_symlink = sys::file_type(&sys::fstat(node).map_err(extract_error("stat", path))?)
            == SFlag::S_IFLNK;
        if !is_symlink {
            for (name, value) in &entry.xattrs {
                match sys::set_xattr(node, name, value) {
                    Ok(()) => {}
                    // Not allowed here (a user namespace, say); Docker logs and goes on.
                    Err(error) if error.raw_os_error() == Some(libc::EPERM) => {
                        tracing::warn!(
                            path = %sys::display(path),
                            xattr = %sys::display(name),
                            "ignored xattr in archive: not permitted"
                        );
                    }
                    Err(error) => return Err(extract_error("set xattrs of", path)(error)),
                }
            }
            sys::chmod_fd(node, entry.mode & 0o7777).map_err(extract_error("chmod", path))?;
        }
        match entry.kind {
            EntryKind::Directory => {
                self.directories.push((path.to_vec(), accessed, modified));
                Ok(())
            }
            _ if is_symlink => Ok(()),
            // Not linked in yet: through its descriptor.
            EntryKind::Regular { .. } => {
                nix::sys::stat::futimens(node.as_raw_fd(), &accessed, &modified)
                    .map_err(|errno| extract_error("set times of", path)(errno.into()))
            }
            _ => set_times(parent, base, &accessed, &modified)
                .map_err(extract_error("set times of", path)),
        }
    }

    /// The path inside the root a hardlink entry links to (go-archive
    /// `resolveHardlinkTarget`: an absolute target is read below the destination).
    fn hardlink_target(&self, target: &[u8]) -> Result<Vec<u8>, CopyError> {
        let mut cleaned = paths::clean(target);
        if cleaned.first() == Some(&b'/') {
            let start = target
                .iter()
                .position(|byte| *byte != b'/')
                .unwrap_or(target.len());
            cleaned = paths::clean(&target[start..]);
        }
        if cleaned == b"." || !paths::is_local(&cleaned) {
            return Err(CopyError::InvalidHardlinkTarget {
                target: sys::display(target),
            });
        }
        Ok(paths::join(&self.destination, &cleaned))
    }

    /// Opens the directory at `path` inside the root, creating what is missing of it
    /// (0755, root-owned), with symlinks on the way followed inside the root.
    fn ensure_directory(&self, path: &[u8]) -> Result<OwnedFd, CopyError> {
        match self.root.open_directory(path) {
            Ok(fd) => return Ok(fd),
            Err(error) if sys::is_not_found(&error) => {}
            Err(error) => return Err(extract_error("open", path)(error)),
        }
        let resolved = resolve::resolve(self.root, path, Missing::Keep)
            .map_err(extract_error("resolve", path))?;
        let mut current = b"/".to_vec();
        let mut directory = self
            .root
            .open_directory(&current)
            .map_err(extract_error("open", &current))?;
        for component in resolved
            .split(|byte| *byte == b'/')
            .filter(|part| !part.is_empty())
        {
            current = paths::join(&current, component);
            match nix::sys::stat::mkdirat(
                Some(directory.as_raw_fd()),
                component,
                Mode::from_bits_truncate(0o755),
            ) {
                Ok(()) => {
                    let created =
                        sys::open_at(directory.as_fd(), component, OFlag::O_PATH, Mode::empty())
                            .map_err(extract_error("open", &current))?;
                    // mkdir's mode went through the umask; implied parents are 0755.
                    sys::chmod_fd(created.as_fd(), 0o755)
                        .map_err(extract_error("chmod", &current))?;
                }
                Err(nix::errno::Errno::EEXIST) => {}
                Err(errno) => {
                    return Err(extract_error("create directory", &current)(errno.into()))
                }
            }
            directory = sys::open_at(
                directory.as_fd(),
                component,
                OFlag::O_PATH | OFlag::O_DIRECTORY,
                Mode::empty(),
            )
            .map_err(extract_error("open", &current))?;
        }
        Ok(directory)
    }
}

/// Removes a temporary file of this copy that will not be put in place.
fn remove_temporary(parent: BorrowedFd<'_>, name: &[u8]) {
    let _ = nix::unistd::unlinkat(
        Some(parent.as_raw_fd()),
        name,
        nix::unistd::UnlinkatFlags::NoRemoveDir,
    );
}

/// A regular file's data written, not yet under its name.
struct NewFile {
    file: File,
    /// The temporary name it has, where it could not be made unnamed.
    temporary: Option<Vec<u8>>,
}

/// Where an entry goes: its parent directory, its name there, its path in the root.
#[derive(Clone, Copy)]
struct Place<'fd, 'name> {
    parent: BorrowedFd<'fd>,
    base: &'name [u8],
    path: &'name [u8],
}

impl Sink for Extractor<'_> {
    fn add(&mut self, entry: &Entry, data: Data<'_>) -> Result<(), CopyError> {
        self.extract(entry, data)
    }
}

fn extract_error(operation: &'static str, path: &[u8]) -> impl FnOnce(io::Error) -> CopyError {
    let path = sys::display(path);
    move |source| CopyError::Extract {
        operation,
        path,
        source,
    }
}

fn set_times(
    parent: BorrowedFd<'_>,
    name: &[u8],
    accessed: &TimeSpec,
    modified: &TimeSpec,
) -> io::Result<()> {
    nix::sys::stat::utimensat(
        Some(parent.as_raw_fd()),
        name,
        accessed,
        modified,
        UtimensatFlags::NoFollowSymlink,
    )?;
    Ok(())
}

fn later(first: Timestamp, second: Timestamp) -> bool {
    (first.seconds, first.nanoseconds) > (second.seconds, second.nanoseconds)
}

/// Times before the epoch become the epoch (go-archive `boundTime`).
fn bound(time: Timestamp) -> TimeSpec {
    if time.seconds < 0 {
        return TimeSpec::new(0, 0);
    }
    TimeSpec::new(time.seconds, i64::from(time.nanoseconds))
}
