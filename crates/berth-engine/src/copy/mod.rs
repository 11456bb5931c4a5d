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
//! | SRC            | DEST                    | result                                        |
//! |----------------|-------------------------|-----------------------------------------------|
//! | file           | missing, no trailing /  | file created as DEST                           |
//! | file           | missing, ends in / or /.| error "no such directory"                     |
//! | file           | existing file           | overwritten                                   |
//! | file           | existing dir            | copied into it as DEST/basename               |
//! | file           | parent missing          | error (host: invalid output path; container: Could not find the file) |
//! | dir            | missing                 | created as DEST with SRC's contents           |
//! | dir            | existing file           | error "cannot copy directory"                 |
//! | dir            | existing dir            | copied into it as DEST/basename               |
//! | dir/.          | existing dir            | contents copied into DEST                     |
//! | dir/.          | missing                 | created as DEST with SRC's contents           |
//! | symlink        | any                     | the link itself (its target with -L, named as the link) |
//! | link/ or link/.| any                     | the directory it points to                    |
//! | DEST symlink   |                         | followed (a dangling one names what to create)|

mod archive;
mod client;
mod entry;
mod error;
mod extract;
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
}

impl<'a> ContainerFs<'a> {
    pub fn new(root: &'a Path, name: &'a str) -> Self {
        Self {
            root,
            name,
            user: None,
        }
    }

    pub fn with_user(self, user: Option<&'a str>) -> Self {
        Self { user, ..self }
    }

    fn open_root(&self) -> Result<sys::RootDir, CopyError> {
        sys::RootDir::open(self.root).map_err(|source| CopyError::OpenRoot {
            root: self.root.to_owned(),
            source,
        })
    }
}
