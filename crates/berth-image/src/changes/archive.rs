//! Tar streams of a directory tree: an overlayfs upper dir as an OCI layer (`docker
//! commit`) or a container's merged root as it is (`docker export`).
//!
//! As Docker's `TarWithOptions` writes them: names in byte order, depth first, the root
//! itself left out, directories named with a trailing `/`, sockets skipped, a further name
//! of an inode written as a hardlink to the first.

use std::ffi::OsStr;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use tar::EntryType;

use super::error::ChangesError;
use super::overlay::{check_xattrs, is_opaque, is_private_xattr, is_whiteout};
use super::tar_stream::{Entry, TarStream, Totals};
use super::tree::{file_xattrs, kind_of, DirHandle, Kind, Xattrs};

const WHITEOUT_PREFIX: &[u8] = b".wh.";
const OPAQUE_MARKER: &[u8] = b".wh..wh..opq";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    /// An overlayfs upper dir: whiteouts and opaque directories in OCI form.
    Layer,
    /// A tree written as it is.
    Export,
}

pub(super) fn write_tree(
    root: &Path,
    out: impl Write,
    form: Form,
    mtime_clamp: Option<u64>,
) -> Result<Totals, ChangesError> {
    let root = DirHandle::open_root(root)?;
    let root_device = root.stat_self()?.st_dev;
    let mut walk = Walk {
        stream: TarStream::new(out).clamping_mtimes(mtime_clamp),
        form,
        root_device,
    };
    walk.directory(&root, b"")?;
    walk.stream.finish()
}

struct Walk<W: Write> {
    stream: TarStream<W>,
    form: Form,
    /// Directories on another file system are mount points (a running
    /// container's /proc, /sys, /dev, volumes): listed, not entered, as
    /// Docker exports only the container's root file system.
    root_device: u64,
}

impl<W: Write> Walk<W> {
    /// Writes everything in `directory`, whose entries are named `<prefix><name>`.
    fn directory(&mut self, directory: &DirHandle, prefix: &[u8]) -> Result<(), ChangesError> {
        for name in directory.names()? {
            let Some(stat) = directory.stat(&name)? else {
                continue;
            };
            let mut entry_name = prefix.to_vec();
            entry_name.extend_from_slice(name.as_bytes());
            let kind = kind_of(&stat);
            match kind {
                Kind::Directory => self.subdirectory(directory, &name, entry_name)?,
                Kind::CharDevice if self.form == Form::Layer && is_whiteout(&stat) => {
                    let mut whiteout = prefix.to_vec();
                    whiteout.extend_from_slice(WHITEOUT_PREFIX);
                    whiteout.extend_from_slice(name.as_bytes());
                    self.stream.whiteout(&whiteout, &stat)?;
                }
                Kind::Socket => {
                    // A socket is only meaningful to a live process (Docker skips them too).
                    tracing::debug!(path = ?directory.child_path(&name), "skipping socket");
                }
                Kind::Regular => self.regular(directory, &name, &entry_name)?,
                Kind::Symlink | Kind::CharDevice | Kind::BlockDevice | Kind::Fifo => {
                    let entry = Entry {
                        name: &entry_name,
                        stat: &stat,
                        xattrs: &Xattrs::new(),
                    };
                    if let Some(first) = self.stream.earlier_name(&stat, &entry_name) {
                        self.stream.link(&entry, EntryType::Link, &first)?;
                        continue;
                    }
                    let path = directory.child_path(&name);
                    let xattrs = self.keep_xattrs(directory.entry_xattrs(&name)?, &path)?;
                    let entry = Entry {
                        xattrs: &xattrs,
                        ..entry
                    };
                    match kind {
                        Kind::Symlink => {
                            let target = directory.read_link(&name)?;
                            self.stream
                                .link(&entry, EntryType::Symlink, target.as_bytes())?;
                        }
                        Kind::CharDevice => self.stream.node(&entry, EntryType::Char)?,
                        Kind::BlockDevice => self.stream.node(&entry, EntryType::Block)?,
                        _ => self.stream.node(&entry, EntryType::Fifo)?,
                    }
                }
            }
        }
        Ok(())
    }

    fn subdirectory(
        &mut self,
        parent: &DirHandle,
        name: &OsStr,
        mut entry_name: Vec<u8>,
    ) -> Result<(), ChangesError> {
        let directory = parent.open_directory(name)?;
        // Describe what was opened, not what the listing saw a moment before.
        let stat = directory.stat_self()?;
        let xattrs = self.keep_xattrs(directory.own_xattrs()?, directory.path())?;
        entry_name.push(b'/');
        let entry = Entry {
            name: &entry_name,
            stat: &stat,
            xattrs: &xattrs,
        };
        self.stream.directory(&entry)?;
        if self.form == Form::Layer && is_opaque(&directory)? {
            let mut marker = entry_name.clone();
            marker.extend_from_slice(OPAQUE_MARKER);
            self.stream.opaque(&marker, &stat)?;
        }
        if stat.st_dev != self.root_device {
            return Ok(());
        }
        self.directory(&directory, &entry_name)
    }

    fn regular(
        &mut self,
        parent: &DirHandle,
        name: &OsStr,
        entry_name: &[u8],
    ) -> Result<(), ChangesError> {
        let path = parent.child_path(name);
        let mut file = parent.open_file(name)?;
        // The header must describe the file being read, so its `fstat` decides.
        let stat = nix::sys::stat::fstat(file.as_raw_fd()).map_err(|errno| ChangesError::Stat {
            path: path.clone(),
            source: errno.into(),
        })?;
        if kind_of(&stat) != Kind::Regular {
            return Err(ChangesError::ChangedWhileReading { path });
        }
        if let Some(first) = self.stream.earlier_name(&stat, entry_name) {
            let entry = Entry {
                name: entry_name,
                stat: &stat,
                xattrs: &Xattrs::new(),
            };
            return self.stream.link(&entry, EntryType::Link, &first);
        }
        let xattrs = self.keep_xattrs(file_xattrs(&file, &path)?, &path)?;
        let entry = Entry {
            name: entry_name,
            stat: &stat,
            xattrs: &xattrs,
        };
        self.stream.regular(&entry, &mut file, &path)
    }

    /// Drops overlayfs' private xattrs; in a layer, refuses what only overlayfs can read.
    fn keep_xattrs(&self, xattrs: Xattrs, path: &Path) -> Result<Xattrs, ChangesError> {
        if self.form == Form::Layer {
            check_xattrs(&xattrs, path)?;
        }
        Ok(xattrs
            .into_iter()
            .filter(|(name, _)| !is_private_xattr(name))
            .collect())
    }
}
