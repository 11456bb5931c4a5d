//! Turns tar entries into files: dispatch by entry type, directories and regular files.
//! Links and device nodes are in `links.rs`, whiteouts in `whiteout.rs`.

use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;
use nix::unistd::UnlinkatFlags;
use tar::EntryType;

use super::attributes::{self, Place};
use super::dir_times::DirectoryTimes;
use super::error::{NodeKind, UnpackError};
use super::metadata::EntryMetadata;
use super::resolve::{raw, Dir, Missing, Resolver};
use super::safe_path::{self, PathProblem};
use super::sys::{self, Kind};
use super::whiteout::{self, Whiteout};

/// Big enough that a large file is copied in few syscalls, small enough to stay in cache.
const COPY_BUFFER: usize = 1024 * 1024;

/// Why an entry failed: a decided error, or a read error from the layer stream that
/// `LayerStream::classify` must name once the tar reader has let go of the stream.
pub(super) enum Failure {
    Unpack(UnpackError),
    Stream {
        entry: Option<PathBuf>,
        source: io::Error,
    },
}

impl From<UnpackError> for Failure {
    fn from(error: UnpackError) -> Self {
        Self::Unpack(error)
    }
}

pub(super) struct Unpacker {
    pub(super) destination: PathBuf,
    pub(super) resolver: Resolver,
    directory_times: DirectoryTimes,
    buffer: Vec<u8>,
    written: u64,
}

impl Unpacker {
    pub(super) fn new(destination: &Path) -> Result<Self, UnpackError> {
        let open_error = |source: io::Error| UnpackError::OpenDestination {
            path: destination.to_owned(),
            source,
        };
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let root = nix::fcntl::open(destination, flags, Mode::empty())
            .map_err(|errno| open_error(errno.into()))?;
        // SAFETY: `open` just returned `root` as a new descriptor that nothing else owns.
        let root = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(root) };
        Ok(Self {
            destination: destination.to_owned(),
            resolver: Resolver::new(root),
            directory_times: DirectoryTimes::default(),
            buffer: vec![0; COPY_BUFFER],
            written: 0,
        })
    }

    /// Sets the directory times and returns the bytes written to regular files.
    pub(super) fn finish(self) -> Result<u64, UnpackError> {
        self.directory_times.apply(self.resolver.root().fd())?;
        Ok(self.written)
    }

    /// Unpacks one entry and returns its path as written in the archive.
    pub(super) fn unpack<R: Read>(
        &mut self,
        entry: &mut tar::Entry<'_, R>,
    ) -> Result<PathBuf, Failure> {
        let path = PathBuf::from(OsString::from_vec(entry.path_bytes().into_owned()));
        let entry_type = entry.header().entry_type();
        if entry_type == EntryType::XGlobalHeader {
            // Archive-wide pax defaults (often a git commit id); Docker ignores them too.
            tracing::debug!(entry = ?path, "ignoring pax global header");
            return Ok(path);
        }
        let metadata = EntryMetadata::read(entry, &path)?;
        self.place_entry(entry, entry_type, &metadata, &path)?;
        Ok(path)
    }

    fn place_entry<R: Read>(
        &mut self,
        entry: &mut tar::Entry<'_, R>,
        entry_type: EntryType,
        metadata: &EntryMetadata,
        path: &Path,
    ) -> Result<(), Failure> {
        let components =
            safe_path::entry_components(path.as_os_str().as_bytes()).map_err(|problem| {
                let entry = path.to_owned();
                match problem {
                    PathProblem::Absolute => UnpackError::AbsolutePath { entry },
                    PathProblem::ParentComponent => UnpackError::ParentComponent { entry },
                }
            })?;
        let whiteout = whiteout::classify(&components, path)?;
        let Some((name, parents)) = components.split_last() else {
            if entry_type != EntryType::Directory {
                return Err(UnpackError::ReplaceRoot {
                    entry: path.to_owned(),
                }
                .into());
            }
            return Ok(self.root_directory(metadata, path)?);
        };
        match whiteout {
            Whiteout::Opaque => return self.opaque(parents, path),
            Whiteout::Remove(hidden) => return self.whiteout(parents, hidden, metadata, path),
            Whiteout::None => {}
        }
        let name = OsStr::from_bytes(name);
        match entry_type {
            EntryType::Directory => Ok(self.directory(parents, name, metadata, path)?),
            EntryType::Regular | EntryType::Continuous | EntryType::GNUSparse => {
                self.regular_file(entry, parents, name, metadata, path)
            }
            EntryType::Symlink => {
                // Docker's layer size counts a symlink as the length of its
                // target (lstat's st_size), so `images` sizes agree.
                let target_length = entry
                    .link_name_bytes()
                    .map_or(0, |target| target.len() as u64);
                self.symlink(entry, parents, name, metadata, path)?;
                self.written += target_length;
                Ok(())
            }
            EntryType::Link => Ok(self.hardlink(entry, parents, name, path)?),
            EntryType::Char | EntryType::Block | EntryType::Fifo => {
                Ok(self.node(entry.header(), entry_type, parents, name, metadata, path)?)
            }
            other => Err(UnpackError::UnsupportedEntryType {
                entry: path.to_owned(),
                type_flag: other.as_byte(),
            }
            .into()),
        }
    }

    /// The directory that will hold the entry, created if missing.
    pub(super) fn parent(&mut self, parents: &[&[u8]], entry: &Path) -> Result<Dir, UnpackError> {
        self.resolver
            .resolve(parents, entry, Missing::Create)?
            .ok_or_else(|| UnpackError::Lookup {
                entry: entry.to_owned(),
                path: parents.iter().map(|name| OsStr::from_bytes(name)).collect(),
                source: io::ErrorKind::NotFound.into(),
            })
    }

    pub(super) fn place<'a>(&'a self, dir: &'a Dir, name: &'a OsStr, entry: &'a Path) -> Place<'a> {
        Place {
            dir,
            name,
            entry,
            destination: &self.destination,
        }
    }

    /// Removes whatever is at `name`, so that a later entry replaces an earlier one. A
    /// directory goes with all its contents.
    pub(super) fn remove_existing(
        &mut self,
        dir: &Dir,
        name: &OsStr,
        entry: &Path,
    ) -> Result<(), UnpackError> {
        let relative = dir.relative().join(name);
        let remove_error = |source: io::Error| UnpackError::Remove {
            entry: entry.to_owned(),
            path: relative.clone(),
            source,
        };
        let Some(stat) = sys::lstat_at(dir.fd(), name).map_err(remove_error)? else {
            return Ok(());
        };
        if sys::kind_of(&stat) == Kind::Directory {
            // std's `remove_dir_all` does not follow symlinks inside the tree
            // (CVE-2022-21658); the parents on this path are real directories.
            fs_err::remove_dir_all(self.destination.join(&relative)).map_err(remove_error)?;
            self.directory_times.forget_under(&relative);
        } else {
            nix::unistd::unlinkat(Some(raw(dir.fd())), name, UnlinkatFlags::NoRemoveDir)
                .map_err(|errno| remove_error(errno.into()))?;
        }
        // Only a child of the resolver's deepest directory is ever removed, so its cached
        // walk stays true; starting afresh after a (rare) removal keeps that from being
        // something the next reader has to prove.
        self.resolver.invalidate();
        Ok(())
    }

    fn root_directory(
        &mut self,
        metadata: &EntryMetadata,
        entry: &Path,
    ) -> Result<(), UnpackError> {
        let root = std::rc::Rc::clone(self.resolver.root());
        let name = OsStr::new(".");
        let place = self.place(&root, name, entry);
        let directory =
            sys::open_directory(root.fd(), name).map_err(|source| UnpackError::Lookup {
                entry: entry.to_owned(),
                path: place.relative(),
                source,
            })?;
        attributes::apply_to_open(&directory, metadata, &place)?;
        self.directory_times.record(PathBuf::new(), metadata.mtime);
        Ok(())
    }

    /// A directory entry over an existing directory merges into it; over anything else it
    /// replaces it.
    fn directory(
        &mut self,
        parents: &[&[u8]],
        name: &OsStr,
        metadata: &EntryMetadata,
        entry: &Path,
    ) -> Result<(), UnpackError> {
        let dir = self.parent(parents, entry)?;
        let create = |dir: BorrowedFd<'_>| {
            nix::sys::stat::mkdirat(Some(raw(dir)), name, Mode::from_bits_truncate(0o700))
        };
        let create_error = |source: Errno| {
            NodeKind::Directory.create_error(entry, dir.relative().join(name), source.into())
        };
        match create(dir.fd()) {
            Ok(()) => {}
            Err(Errno::EEXIST) => {
                let existing =
                    sys::lstat_at(dir.fd(), name).map_err(|source| UnpackError::Lookup {
                        entry: entry.to_owned(),
                        path: dir.relative().join(name),
                        source,
                    })?;
                if existing.as_ref().map(sys::kind_of) != Some(Kind::Directory) {
                    self.remove_existing(&dir, name, entry)?;
                    create(dir.fd()).map_err(create_error)?;
                }
            }
            Err(errno) => return Err(create_error(errno)),
        }
        let place = self.place(&dir, name, entry);
        let directory =
            sys::open_directory(dir.fd(), name).map_err(|source| UnpackError::Lookup {
                entry: entry.to_owned(),
                path: place.relative(),
                source,
            })?;
        attributes::apply_to_open(&directory, metadata, &place)?;
        let relative = place.relative();
        self.directory_times.record(relative, metadata.mtime);
        Ok(())
    }

    fn regular_file<R: Read>(
        &mut self,
        entry: &mut tar::Entry<'_, R>,
        parents: &[&[u8]],
        name: &OsStr,
        metadata: &EntryMetadata,
        path: &Path,
    ) -> Result<(), Failure> {
        let dir = self.parent(parents, path)?;
        let create_error = |source: io::Error| {
            NodeKind::File.create_error(path, dir.relative().join(name), source)
        };
        let mut file = match sys::create_file(dir.fd(), name) {
            Ok(file) => file,
            Err(error) if error.raw_os_error() == Some(Errno::EEXIST as i32) => {
                self.remove_existing(&dir, name, path)?;
                sys::create_file(dir.fd(), name).map_err(create_error)?
            }
            Err(error) => return Err(create_error(error).into()),
        };

        let expected = entry.size();
        let mut written: u64 = 0;
        loop {
            let count = match entry.read(&mut self.buffer) {
                Ok(0) => break,
                Ok(count) => count,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(Failure::Stream {
                        entry: Some(path.to_owned()),
                        source,
                    })
                }
            };
            file.write_all(&self.buffer[..count])
                .map_err(|source| UnpackError::Write {
                    entry: path.to_owned(),
                    path: dir.relative().join(name),
                    source,
                })?;
            written += count as u64;
        }
        if written != expected {
            return Err(Failure::Stream {
                entry: Some(path.to_owned()),
                source: io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("file data ends after {written} of {expected} bytes"),
                ),
            });
        }
        self.written += written;

        let place = self.place(&dir, name, path);
        attributes::apply_to_open(&file, metadata, &place)?;
        nix::sys::stat::futimens(file.as_fd().as_raw_fd(), &metadata.mtime, &metadata.mtime)
            .map_err(|errno| UnpackError::SetTimes {
                entry: path.to_owned(),
                path: place.relative(),
                source: errno.into(),
            })?;
        Ok(())
    }
}
