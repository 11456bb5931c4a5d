//! `berth cp` and the archive endpoints (`HEAD`/`GET`/`PUT /containers/{id}/archive`).
//!
//! A container's root file system is a directory on the host. Everything resolved in it
//! behaves as if chrooted there: paths are opened with `openat2(RESOLVE_IN_ROOT)`, so no
//! symlink (absolute or relative) and no `..` — in the container's own files or in a tar
//! stream being extracted — can reach outside the root, and last components are never
//! followed where Docker does not follow them.
//!
//! - [`stat_path`], [`archive_from_container`], [`extract_into_container`]: the daemon
//!   side, as moby's `daemon/archive_unix.go`.
//! - [`copy_container_to_host`], [`copy_host_to_container`] and the `-` forms: the
//!   client side, as docker/cli's `cp.go` and go-archive's `copy.go` decide names, but
//!   copying in-process without a tar stream in between.
//!
//! `docker cp`'s path rules, as implemented here (each row checked against Docker 20.10
//! with CLI 28.2; the tests under `tests/` encode the observed results):
//!
//! | SRC              | DEST                       | result                                  |
//! |------------------|----------------------------|-----------------------------------------|
//! | file             | missing                    | created as DEST                          |
//! | file             | missing, ends in `/`/`/.`  | "no such directory"                      |
//! | file             | existing file              | replaced                                 |
//! | file             | existing dir (`/`, `/.`)   | DEST/basename                            |
//! | file             | `existing-file/`           | host: "stat …: not a directory"; container: "no such directory" |
//! | file             | parent missing             | host: "invalid output path: directory … does not exist"; container: "Could not find the file PARENT in container NAME" |
//! | file             | `existing-file/x`          | host: "stat …: not a directory"; container: "extraction point is not a directory" |
//! | dir              | missing (with or without `/`) | created as DEST with SRC's contents  |
//! | dir, `dir/.`     | existing file              | "cannot copy directory"                  |
//! | dir, `dir/`      | existing dir               | DEST/basename                            |
//! | `dir/.`          | existing dir               | the contents merged into DEST            |
//! | `dir/.`          | missing                    | created as DEST with SRC's contents      |
//! | symlink          | any                        | the link itself; with `-L` its target, named as the link |
//! | `link/`, `link/.`| any                        | the directory it points to               |
//! | `file/`          | any                        | container: "lstat /file/: not a directory"; host: "not a directory" |
//! | missing          | any                        | container: "Could not find the file SRC in container NAME"; host: "lstat SRC: no such file or directory" |
//! | any              | DEST is a symlink          | followed (a dangling one names what to create) |
//! | any              | DEST is a device           | "destination \"NAME:DEST\" must be a directory or a regular file: got a device" |
//! | `-` (tar stdin)  | not an existing dir        | "destination \"NAME:DEST\" must be a directory" |
//! | `CTR:SRC`        | `-`                        | the daemon's tar as is (with `-L`, named after the target) |
//!
//! Owners: to the host, files belong to the caller (`-a` changes nothing); into a
//! container they keep their ids, or with `-a` take the container's configured user.

mod archive;
mod client;
mod entry;
mod error;
mod extract;
mod journal;
mod paths;
mod resolve;
mod stat;
mod sys;
mod tar_read;
mod tar_write;
mod user;
mod walk;

#[cfg(test)]
mod tests;

use std::path::Path;

pub use archive::{archive_from_container, extract_into_container, ExtractOptions};
pub use client::{
    copy_container_to_host, copy_container_to_stream, copy_host_to_container,
    copy_stream_to_container, CopyReport,
};
pub use error::{CopyError, IrregularKind};
pub use journal::remove_journaled_temporary;
pub use stat::{file_mode, stat_path, PathStat};

/// A container's file system as `cp` sees it.
#[derive(Debug, Clone, Copy)]
pub struct ContainerFs<'a> {
    /// The container's root file system on the host (its overlay mount).
    pub root: &'a Path,
    /// The name shown in errors: "Could not find the file /x in container NAME".
    pub name: &'a str,
    /// The container's configured user (`Config.User`), which `cp -a` gives copied files.
    pub user: Option<&'a str>,
    /// Where this copy records a temporary name before making it, so that
    /// a copy killed part way leaves nothing behind (see [`journal`]).
    pub journal: Option<&'a Path>,
}

impl<'a> ContainerFs<'a> {
    pub fn new(root: &'a Path, name: &'a str) -> Self {
        Self {
            root,
            name,
            user: None,
            journal: None,
        }
    }

    pub fn with_journal(self, journal: Option<&'a Path>) -> Self {
        Self { journal, ..self }
    }

    pub fn with_user(self, user: Option<&'a str>) -> Self {
        Self { user, ..self }
    }

    fn open_journal(&self) -> Result<Option<journal::Journal>, CopyError> {
        self.journal
            .map(|path| {
                journal::Journal::open(path).map_err(|source| CopyError::OpenJournal {
                    path: path.to_owned(),
                    source,
                })
            })
            .transpose()
    }

    fn open_root(&self) -> Result<sys::RootDir, CopyError> {
        sys::RootDir::open(self.root).map_err(|source| CopyError::OpenRoot {
            root: self.root.to_owned(),
            source,
        })
    }
}
