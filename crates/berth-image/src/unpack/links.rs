//! Symlinks, hardlinks, device nodes and fifos.

use std::ffi::OsStr;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::AtFlags;
use nix::sys::stat::{Mode, SFlag};
use tar::EntryType;

use super::attributes;
use super::entry::Unpacker;
use super::error::{NodeKind, UnpackError};
use super::metadata::EntryMetadata;
use super::resolve::{raw, Dir, Missing};
use super::safe_path;
use super::sys::{self, Kind};

impl Unpacker {
    /// A symlink's target is stored as written: it is only data here, and every lookup
    /// through it during unpacking is confined by `resolve`.
    pub(super) fn symlink<R: Read>(
        &mut self,
        entry: &tar::Entry<'_, R>,
        parents: &[&[u8]],
        name: &OsStr,
        metadata: &EntryMetadata,
        path: &Path,
    ) -> Result<(), UnpackError> {
        let target = link_name(entry, path)?;
        let target = OsStr::from_bytes(&target);
        let dir = self.parent(parents, path)?;
        let create = |dir: &Dir| nix::unistd::symlinkat(target, Some(raw(dir.fd())), name);
        self.create_replacing(&dir, name, path, NodeKind::Symlink, create)?;
        attributes::apply_at(metadata, &self.place(&dir, name, path), true)
    }

    /// A hardlink names an earlier entry of the archive. It only links: the inode already
    /// carries the owner, mode and times of the entry that created it.
    pub(super) fn hardlink<R: Read>(
        &mut self,
        entry: &tar::Entry<'_, R>,
        parents: &[&[u8]],
        name: &OsStr,
        path: &Path,
    ) -> Result<(), UnpackError> {
        let target_bytes = link_name(entry, path)?;
        let target = PathBuf::from(OsStr::from_bytes(&target_bytes));
        let escape = || UnpackError::HardlinkEscape {
            entry: path.to_owned(),
            target: target.clone(),
        };
        let missing = || UnpackError::HardlinkTargetMissing {
            entry: path.to_owned(),
            target: target.clone(),
        };
        let components = safe_path::hardlink_target_components(&target_bytes).ok_or_else(escape)?;
        let Some((target_name, target_parents)) = components.split_last() else {
            return Err(UnpackError::HardlinkToDirectory {
                entry: path.to_owned(),
                target: target.clone(),
            });
        };
        let target_name = OsStr::from_bytes(target_name);
        let target_dir = self
            .resolver
            .resolve(target_parents, path, Missing::Report)?
            .ok_or_else(missing)?;
        let target_stat = sys::lstat_at(target_dir.fd(), target_name)
            .map_err(|source| UnpackError::Lookup {
                entry: path.to_owned(),
                path: target_dir.relative().join(target_name),
                source,
            })?
            .ok_or_else(missing)?;
        if sys::kind_of(&target_stat) == Kind::Directory {
            return Err(UnpackError::HardlinkToDirectory {
                entry: path.to_owned(),
                target,
            });
        }

        let dir = self.parent(parents, path)?;
        // The entry may already be this very inode (a repeated entry, or a link to itself).
        if let Some(existing) =
            sys::lstat_at(dir.fd(), name).map_err(|source| UnpackError::Lookup {
                entry: path.to_owned(),
                path: dir.relative().join(name),
                source,
            })?
        {
            if existing.st_dev == target_stat.st_dev && existing.st_ino == target_stat.st_ino {
                return Ok(());
            }
        }
        // No AT_SYMLINK_FOLLOW: a link to a symlink links the symlink itself.
        let create = |dir: &Dir| {
            nix::unistd::linkat(
                Some(raw(target_dir.fd())),
                target_name,
                Some(raw(dir.fd())),
                name,
                AtFlags::empty(),
            )
        };
        self.create_replacing(&dir, name, path, NodeKind::Hardlink, create)
    }

    /// Character and block devices and fifos.
    pub(super) fn node(
        &mut self,
        header: &tar::Header,
        entry_type: EntryType,
        parents: &[&[u8]],
        name: &OsStr,
        metadata: &EntryMetadata,
        path: &Path,
    ) -> Result<(), UnpackError> {
        let (kind, node_kind) = match entry_type {
            EntryType::Char => (SFlag::S_IFCHR, NodeKind::Device),
            EntryType::Block => (SFlag::S_IFBLK, NodeKind::Device),
            _ => (SFlag::S_IFIFO, NodeKind::Fifo),
        };
        let device = if node_kind == NodeKind::Device {
            let number = |field: &'static str, value: io::Result<Option<u32>>| {
                value
                    .and_then(|value| {
                        value.ok_or_else(|| {
                            io::Error::new(io::ErrorKind::InvalidData, "missing from header")
                        })
                    })
                    .map_err(|source| UnpackError::InvalidHeader {
                        entry: path.to_owned(),
                        field,
                        source,
                    })
            };
            let major = number("device major", header.device_major())?;
            let minor = number("device minor", header.device_minor())?;
            nix::sys::stat::makedev(u64::from(major), u64::from(minor))
        } else {
            0
        };
        let dir = self.parent(parents, path)?;
        let create = |dir: &Dir| {
            let mode = Mode::from_bits_truncate(0o600);
            nix::sys::stat::mknodat(Some(raw(dir.fd())), name, kind, mode, device)
        };
        self.create_replacing(&dir, name, path, node_kind, create)?;
        attributes::apply_at(metadata, &self.place(&dir, name, path), false)
    }

    /// Runs `create`; if something is already at `name`, removes it and tries once more.
    fn create_replacing(
        &mut self,
        dir: &Dir,
        name: &OsStr,
        entry: &Path,
        kind: NodeKind,
        create: impl Fn(&Dir) -> nix::Result<()>,
    ) -> Result<(), UnpackError> {
        let create_error =
            |errno: Errno| kind.create_error(entry, dir.relative().join(name), errno.into());
        match create(dir) {
            Ok(()) => Ok(()),
            Err(Errno::EEXIST) => {
                self.remove_existing(dir, name, entry)?;
                create(dir).map_err(create_error)
            }
            Err(errno) => Err(create_error(errno)),
        }
    }
}

fn link_name<R: Read>(entry: &tar::Entry<'_, R>, path: &Path) -> Result<Vec<u8>, UnpackError> {
    match entry.link_name_bytes() {
        Some(name) if !name.is_empty() => Ok(name.into_owned()),
        _ => Err(UnpackError::InvalidHeader {
            entry: path.to_owned(),
            field: "link name",
            source: io::Error::new(io::ErrorKind::InvalidData, "empty"),
        }),
    }
}
