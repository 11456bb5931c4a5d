//! Reads a file or directory tree inside a root and hands it to a sink entry by entry, in
//! the order and with the names and metadata Docker's tar writer uses (go-archive
//! `Tarballer` and `FileInfoHeader`):
//!
//! - pre-order, each directory's names sorted bytewise (`filepath.WalkDir`);
//! - directories named with a trailing `/`; symlinks archived, never followed;
//! - mtimes truncated to whole seconds, no atime; owner ids as on disk;
//! - a second name of an inode already seen (nlink > 1) becomes a hardlink to the first;
//! - only the `security.capability` xattr is carried (revision 3 turned into 2);
//! - sockets are skipped (tar cannot hold them).
//!
//! Every name is opened relative to its parent's descriptor without following symlinks,
//! so a container changing its tree meanwhile can at worst change what is copied, never
//! make the walk leave the root. Names that vanish mid-walk are skipped.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};

use nix::fcntl::OFlag;
use nix::sys::stat::{FileStat, Mode, SFlag};

use super::entry::{Data, Entry, EntryKind, Sink, Timestamp};
use super::error::CopyError;
use super::paths::Rebase;
use super::sys::{self, RootDir};

/// What to walk and how to name it.
pub(crate) struct WalkSpec<'a> {
    /// The source path inside the root.
    pub path: &'a [u8],
    /// Follow a final symlink in `path`: set when the source was found to be a directory
    /// (reached through a trailing `/` or `/.`); anything else is archived as itself.
    pub follow: bool,
    /// The archive name of the source; its descendants are `top/…`. Empty for an
    /// archive of `/`, whose entries are then named `/` and `/…` as Docker names them.
    pub top: Vec<u8>,
    /// Renames applied to every name afterwards, in order (the client's rebases).
    pub renames: &'a [Rebase],
    /// How the source path is shown in errors.
    pub shown_as: &'a [u8],
}

/// Walks the source into `sink`; returns the total size of the regular files.
pub(crate) fn walk(
    root: &RootDir,
    spec: &WalkSpec<'_>,
    sink: &mut dyn Sink,
) -> Result<u64, CopyError> {
    let source_error = |operation, rel: &[u8]| source_error(spec, operation, rel);
    let mut flags = OFlag::O_PATH;
    if !spec.follow {
        flags |= OFlag::O_NOFOLLOW;
    }
    let top = root
        .open_in(spec.path, flags, Mode::empty())
        .map_err(source_error("open", b""))?;
    let stat = sys::fstat(top.as_fd()).map_err(source_error("stat", b""))?;
    let mut walker = Walker {
        spec,
        seen: HashMap::new(),
        total: 0,
    };
    if sys::file_type(&stat) != SFlag::S_IFDIR {
        walker.add_node(sink, &top, &stat, b"")?;
        return Ok(walker.total);
    }
    let mut stack = vec![walker.descend(sink, &top, &stat, Vec::new())?];
    while let Some(level) = stack.last_mut() {
        let Some(name) = level.names.next() else {
            stack.pop();
            continue;
        };
        let rel = join_rel(&level.rel, &name);
        let flags = OFlag::O_PATH;
        let node = match sys::open_at(level.directory.as_fd(), &name, flags, Mode::empty()) {
            Ok(node) => node,
            Err(error) if sys::is_not_found(&error) => continue,
            Err(error) => return Err(source_error("open", &rel)(error)),
        };
        let stat = sys::fstat(node.as_fd()).map_err(source_error("stat", &rel))?;
        if sys::file_type(&stat) == SFlag::S_IFDIR {
            let level = walker.descend(sink, &node, &stat, rel)?;
            stack.push(level);
        } else {
            walker.add_node(sink, &node, &stat, &rel)?;
        }
    }
    Ok(walker.total)
}

struct Level {
    directory: OwnedFd,
    names: std::vec::IntoIter<Vec<u8>>,
    rel: Vec<u8>,
}

struct Walker<'a> {
    spec: &'a WalkSpec<'a>,
    /// (device, inode) of files with several links → the archive name of the first.
    seen: HashMap<(u64, u64), Vec<u8>>,
    total: u64,
}

impl Walker<'_> {
    /// The archive name of the file at `rel` below the source.
    fn name(&self, rel: &[u8], directory: bool) -> Vec<u8> {
        let mut name = self.spec.top.clone();
        if !rel.is_empty() {
            name.push(b'/');
            name.extend_from_slice(rel);
        }
        if directory && name.last() != Some(&b'/') {
            name.push(b'/');
        }
        for rename in self.spec.renames {
            name = rename.apply(&name);
        }
        name
    }

    /// Adds a directory (`node`, an `O_PATH` descriptor of it) and opens it for reading.
    fn descend(
        &mut self,
        sink: &mut dyn Sink,
        node: &OwnedFd,
        stat: &FileStat,
        rel: Vec<u8>,
    ) -> Result<Level, CopyError> {
        let error = |operation| source_error(self.spec, operation, &rel);
        self.emit(
            sink,
            entry_for(stat, self.name(&rel, true), EntryKind::Directory),
            Data::None,
        )?;
        let directory = reopen_directory(node).map_err(error("open"))?;
        let names = sys::list_directory(directory.as_fd()).map_err(error("read"))?;
        Ok(Level {
            directory,
            names: names.into_iter(),
            rel,
        })
    }

    fn emit(&mut self, sink: &mut dyn Sink, entry: Entry, data: Data<'_>) -> Result<(), CopyError> {
        if let EntryKind::Regular { size } = entry.kind {
            self.total += size;
        }
        sink.add(&entry, data)
    }

    /// Adds a non-directory; `node` is an `O_PATH` descriptor of it.
    fn add_node(
        &mut self,
        sink: &mut dyn Sink,
        node: &OwnedFd,
        stat: &FileStat,
        rel: &[u8],
    ) -> Result<(), CopyError> {
        let error = |operation| source_error(self.spec, operation, rel);
        let kind = sys::file_type(stat);
        if kind == SFlag::S_IFSOCK {
            // Go's tar.FileInfoHeader refuses sockets; Docker logs and skips them.
            let shown = shown_path(self.spec.shown_as, rel);
            tracing::debug!(path = %sys::display(&shown), "skipping a socket");
            return Ok(());
        }
        let archive_name = self.name(rel, false);
        let mut entry = entry_for(stat, archive_name.clone(), EntryKind::Fifo);
        if stat.st_nlink > 1 {
            let key = (stat.st_dev, stat.st_ino);
            if let Some(first) = self.seen.get(&key) {
                entry.kind = EntryKind::HardLink {
                    target: first.clone(),
                };
                return self.emit(sink, entry, Data::None);
            }
            self.seen.insert(key, archive_name);
        }
        entry.kind = match kind {
            SFlag::S_IFREG => {
                let file = reopen_file(node).map_err(error("open"))?;
                let stat = sys::fstat(file.as_fd()).map_err(error("stat"))?;
                entry.kind = EntryKind::Regular {
                    size: u64::try_from(stat.st_size).unwrap_or(0),
                };
                if let Some(capability) =
                    sys::get_xattr(file.as_fd(), CAPABILITY).map_err(error("read xattrs of"))?
                {
                    entry
                        .xattrs
                        .push((CAPABILITY.as_bytes().to_vec(), capability_v2(capability)));
                }
                return self.emit(sink, entry, Data::File(&file));
            }
            SFlag::S_IFLNK => EntryKind::Symlink {
                target: sys::read_link_at(node.as_fd(), b"").map_err(error("read link"))?,
            },
            SFlag::S_IFCHR => EntryKind::CharDevice {
                major: device_major(stat.st_rdev),
                minor: device_minor(stat.st_rdev),
            },
            SFlag::S_IFBLK => EntryKind::BlockDevice {
                major: device_major(stat.st_rdev),
                minor: device_minor(stat.st_rdev),
            },
            _ => EntryKind::Fifo,
        };
        self.emit(sink, entry, Data::None)
    }
}

const CAPABILITY: &str = "security.capability";

/// File capabilities of revision 3 carry a namespace root uid that means nothing outside
/// the user namespace they were set in; Docker stores them as revision 2
/// (`ReadSecurityXattrToTarHeader`).
fn capability_v2(mut value: Vec<u8>) -> Vec<u8> {
    const VERSION_OFFSET: usize = 3;
    const REVISION_2: u8 = 2;
    const REVISION_3: u8 = 3;
    const REVISION_2_SIZE: usize = 20;
    if value.len() > VERSION_OFFSET && value[VERSION_OFFSET] == REVISION_3 {
        value[VERSION_OFFSET] = REVISION_2;
        value.truncate(REVISION_2_SIZE);
    }
    value
}

/// An entry with the metadata Docker's `FileInfoHeader` takes from a stat: permission
/// and special bits, owner ids, the mtime in whole seconds, no atime.
fn entry_for(stat: &FileStat, name: Vec<u8>, kind: EntryKind) -> Entry {
    Entry {
        name,
        kind,
        mode: stat.st_mode & 0o7777,
        uid: stat.st_uid,
        gid: stat.st_gid,
        modified: Timestamp {
            seconds: stat.st_mtime,
            nanoseconds: 0,
        },
        accessed: None,
        xattrs: Vec::new(),
    }
}

fn reopen_file(node: &OwnedFd) -> io::Result<File> {
    let fd = sys::reopen(node.as_fd(), OFlag::O_RDONLY | OFlag::O_NOCTTY)?;
    Ok(File::from(fd))
}

fn reopen_directory(node: &OwnedFd) -> io::Result<OwnedFd> {
    sys::reopen(node.as_fd(), OFlag::O_RDONLY | OFlag::O_DIRECTORY)
}

fn device_major(rdev: u64) -> u32 {
    u32::try_from(nix::sys::stat::major(rdev)).unwrap_or(u32::MAX)
}

fn device_minor(rdev: u64) -> u32 {
    u32::try_from(nix::sys::stat::minor(rdev)).unwrap_or(u32::MAX)
}

fn join_rel(parent: &[u8], name: &[u8]) -> Vec<u8> {
    let mut rel = parent.to_vec();
    if !rel.is_empty() {
        rel.push(b'/');
    }
    rel.extend_from_slice(name);
    rel
}

fn source_error(
    spec: &WalkSpec<'_>,
    operation: &'static str,
    rel: &[u8],
) -> impl FnOnce(io::Error) -> CopyError {
    let path = sys::display(&shown_path(spec.shown_as, rel));
    move |source| CopyError::Source {
        operation,
        path,
        source,
    }
}

fn shown_path(source: &[u8], rel: &[u8]) -> Vec<u8> {
    if rel.is_empty() {
        return source.to_vec();
    }
    let mut shown = source.to_vec();
    if shown.last() != Some(&b'/') {
        shown.push(b'/');
    }
    shown.extend_from_slice(rel);
    shown
}
