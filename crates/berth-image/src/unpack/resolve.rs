//! Resolves the parent directory of an entry inside the destination, like a chroot.
//!
//! Each component is opened with `O_PATH | O_DIRECTORY | O_NOFOLLOW` relative to the one
//! before, so the kernel never follows a symlink for us. A symlink in the parent path is
//! read and its target walked here instead: an absolute target starts again at the
//! destination (it names a place in the image, not on the host) and a `..` that would
//! climb above the destination is refused. Missing directories are created (root-owned,
//! 0755, as Docker does), because tar streams often omit directory entries.
//!
//! Consecutive entries mostly share their parent, so the last walk is kept: a stack of open
//! directories and, for each component of the last parent path, how deep the stack was
//! after it. A new path only walks the components after the common prefix. Only this
//! unpacker writes into the destination (the caller owns it), so the cache stays true
//! until we remove something ourselves, which calls `invalidate`.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use nix::errno::Errno;
use nix::sys::stat::Mode;

use super::error::{NodeKind, UnpackError};
use super::sys::{self, Kind};

/// The kernel's own limit on symlinks in one lookup (`MAXSYMLINKS`).
const MAX_SYMLINKS: u32 = 40;

/// An open directory inside the destination.
#[derive(Debug)]
pub(super) struct DirHandle {
    fd: OwnedFd,
    /// Path from the destination to this directory, symlinks resolved.
    relative: PathBuf,
}

impl DirHandle {
    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    pub(super) fn relative(&self) -> &Path {
        &self.relative
    }
}

pub(super) type Dir = Rc<DirHandle>;

/// What to do with a directory that does not exist yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Missing {
    Create,
    Report,
}

pub(super) struct Resolver {
    root: Dir,
    /// Directories below the root along the last walk.
    stack: Vec<Dir>,
    /// The components of the last parent path, and the stack depth after each.
    key: Vec<Vec<u8>>,
    depths: Vec<usize>,
}

struct Walk<'a> {
    entry: &'a Path,
    missing: Missing,
    symlinks: u32,
    last_symlink: PathBuf,
}

enum Step {
    Entered,
    Missing,
    Symlink(Vec<u8>),
}

impl Resolver {
    pub(super) fn new(root: OwnedFd) -> Self {
        Self {
            root: Rc::new(DirHandle {
                fd: root,
                relative: PathBuf::new(),
            }),
            stack: Vec::new(),
            key: Vec::new(),
            depths: Vec::new(),
        }
    }

    pub(super) fn root(&self) -> &Dir {
        &self.root
    }

    /// Forgets the cached walk; called after anything was removed.
    pub(super) fn invalidate(&mut self) {
        self.stack.clear();
        self.key.clear();
        self.depths.clear();
    }

    /// Resolves `components` (a parent path from `safe_path`) to an open directory.
    /// Returns `None` only with `Missing::Report`, when some component does not exist.
    pub(super) fn resolve(
        &mut self,
        components: &[&[u8]],
        entry: &Path,
        missing: Missing,
    ) -> Result<Option<Dir>, UnpackError> {
        let common = self
            .key
            .iter()
            .zip(components)
            .take_while(|(cached, wanted)| cached.as_slice() == **wanted)
            .count();
        self.key.truncate(common);
        self.depths.truncate(common);
        self.stack
            .truncate(common.checked_sub(1).map_or(0, |last| self.depths[last]));

        let mut walk = Walk {
            entry,
            missing,
            symlinks: 0,
            last_symlink: PathBuf::new(),
        };
        for component in &components[common..] {
            match self.walk_component(component, &mut walk) {
                Ok(true) => {
                    self.key.push(component.to_vec());
                    self.depths.push(self.stack.len());
                }
                Ok(false) => {
                    self.invalidate();
                    return Ok(None);
                }
                Err(error) => {
                    self.invalidate();
                    return Err(error);
                }
            }
        }
        Ok(Some(Rc::clone(self.current())))
    }

    fn current(&self) -> &Dir {
        self.stack.last().unwrap_or(&self.root)
    }

    /// Walks one component of the entry's path, and every component of the symlink
    /// targets it leads through. Returns `false` if something does not exist.
    fn walk_component(
        &mut self,
        component: &[u8],
        walk: &mut Walk<'_>,
    ) -> Result<bool, UnpackError> {
        // Components still to walk, last first; only symlinks add to it.
        let mut pending: Vec<Vec<u8>> = Vec::new();
        let mut next = Some(Cow::Borrowed(component));
        while let Some(name) = next.take().or_else(|| pending.pop().map(Cow::Owned)) {
            match self.step(&name, walk)? {
                Step::Entered => {}
                Step::Missing => return Ok(false),
                Step::Symlink(target) => {
                    walk.symlinks += 1;
                    if walk.symlinks > MAX_SYMLINKS {
                        return Err(UnpackError::TooManySymlinks {
                            entry: walk.entry.to_owned(),
                        });
                    }
                    if target.first() == Some(&b'/') {
                        self.stack.clear();
                    }
                    pending.extend(
                        target
                            .split(|byte| *byte == b'/')
                            .rev()
                            .filter(|part| !part.is_empty() && *part != b".")
                            .map(<[u8]>::to_vec),
                    );
                }
            }
        }
        Ok(true)
    }

    fn step(&mut self, name: &[u8], walk: &mut Walk<'_>) -> Result<Step, UnpackError> {
        match name {
            b"" | b"." => return Ok(Step::Entered),
            b".." => {
                // Only symlink targets bring `..` here; entry paths with one are refused
                // before they reach the resolver.
                return match self.stack.pop() {
                    Some(_) => Ok(Step::Entered),
                    None => Err(UnpackError::SymlinkEscape {
                        entry: walk.entry.to_owned(),
                        symlink: walk.last_symlink.clone(),
                    }),
                };
            }
            _ => {}
        }
        let name = OsStr::from_bytes(name);
        let parent = Rc::clone(self.current());
        let relative = parent.relative.join(name);
        let open_error = match sys::open_directory_path(parent.fd(), name) {
            Ok(fd) => {
                self.stack.push(Rc::new(DirHandle { fd, relative }));
                return Ok(Step::Entered);
            }
            Err(error) if error.raw_os_error() == Some(Errno::ENOENT as i32) => {
                if walk.missing == Missing::Report {
                    return Ok(Step::Missing);
                }
                let fd = self.create_directory(&parent, name, &relative, walk.entry)?;
                self.stack.push(Rc::new(DirHandle { fd, relative }));
                return Ok(Step::Entered);
            }
            Err(error) => error,
        };
        // Not a directory we can enter: find out whether it is a symlink to follow.
        let lookup_error = |source: io::Error| UnpackError::Lookup {
            entry: walk.entry.to_owned(),
            path: relative.clone(),
            source,
        };
        let stat = sys::lstat_at(parent.fd(), name).map_err(lookup_error)?;
        match stat.as_ref().map(sys::kind_of) {
            Some(Kind::Symlink) => {
                let target =
                    nix::fcntl::readlinkat(Some(raw(parent.fd())), name).map_err(|errno| {
                        UnpackError::ReadLink {
                            entry: walk.entry.to_owned(),
                            path: relative.clone(),
                            source: errno.into(),
                        }
                    })?;
                walk.last_symlink = relative;
                Ok(Step::Symlink(target.into_encoded_bytes()))
            }
            Some(Kind::Other) => Err(UnpackError::ParentNotDirectory {
                entry: walk.entry.to_owned(),
                path: relative,
            }),
            // A directory we could not open (or a name that vanished): report why.
            Some(Kind::Directory) | None => Err(lookup_error(open_error)),
        }
    }

    fn create_directory(
        &self,
        parent: &DirHandle,
        name: &OsStr,
        relative: &Path,
        entry: &Path,
    ) -> Result<OwnedFd, UnpackError> {
        let create_error = |source: io::Error| {
            NodeKind::Directory.create_error(entry, relative.to_owned(), source)
        };
        nix::sys::stat::mkdirat(
            Some(raw(parent.fd())),
            name,
            Mode::from_bits_truncate(0o755),
        )
        .map_err(|errno| create_error(errno.into()))?;
        let directory = sys::open_directory(parent.fd(), name).map_err(create_error)?;
        // mkdir's mode passes through the umask; an implicit parent is always 0755.
        nix::sys::stat::fchmod(raw(directory.as_fd()), Mode::from_bits_truncate(0o755)).map_err(
            |errno| UnpackError::SetMode {
                entry: entry.to_owned(),
                path: relative.to_owned(),
                source: errno.into(),
            },
        )?;
        Ok(OwnedFd::from(directory))
    }
}

pub(super) fn raw(fd: BorrowedFd<'_>) -> std::os::fd::RawFd {
    use std::os::fd::AsRawFd;
    fd.as_raw_fd()
}
