//! Everything that can go wrong in `cp` and the archive endpoints. Messages a Docker user
//! knows keep Docker's words (moby `go-archive/copy.go`, `daemon/archive*.go`, docker/cli
//! `cli/command/container/cp.go`, `cli/command/utils.go`).
//!
//! `path` fields hold the path as the user sees it: a path inside the container for
//! container-side failures, a host path for host-side ones.

use std::io;
use std::path::PathBuf;

use crate::ErrorKind;

#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    // --- the daemon side (stat / archive / extract) ---
    /// HTTP 404 in the API.
    #[error("Could not find the file {path} in container {container}")]
    NotFound { path: String, container: String },
    #[error("extraction point is not a directory")]
    ExtractionPointNotDirectory { path: String },
    #[error("lstat {path}")]
    StatInContainer {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("failed to look up user {user:?} in container")]
    UnknownUser { user: String },
    #[error("failed to look up group {group:?} in container")]
    UnknownGroup { group: String },
    #[error("failed to read {path} in the container")]
    ReadUserDatabase {
        path: &'static str,
        #[source]
        source: io::Error,
    },
    /// moby `ErrVolumeReadonly`.
    #[error("mounted volume is marked read-only")]
    VolumeReadOnly,
    /// moby `ErrRootFSReadOnly`.
    #[error("container rootfs is marked read-only")]
    RootfsReadOnly,
    #[error("unsupported archive compression {format}: send an uncompressed tar stream")]
    CompressedArchive { format: &'static str },

    // --- the client side of `docker cp` (path rules) ---
    #[error("cannot copy directory")]
    CannotCopyDirectory,
    #[error("no such directory")]
    NoSuchDirectory,
    #[error("not a directory")]
    NotADirectory,
    #[error("destination \"{container}:{path}\" must be a directory")]
    DestinationMustBeDirectory { container: String, path: String },
    #[error("destination \"{container}:{path}\" must be a directory or a regular file: {kind}")]
    DestinationNotFileOrDirectory {
        container: String,
        path: String,
        kind: IrregularKind,
    },
    #[error("invalid output path: directory {dir:?} does not exist")]
    OutputDirectoryMissing { dir: PathBuf },
    #[error("invalid output path: {path:?} must be a directory or a regular file: {kind}")]
    OutputNotFileOrDirectory { path: PathBuf, kind: IrregularKind },
    #[error("too many symlinks in {path}")]
    TooManySymlinks { path: PathBuf },
    #[error("{operation} {path}")]
    HostPath {
        operation: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to find the current directory")]
    CurrentDirectory {
        #[source]
        source: io::Error,
    },

    // --- unpacking entries ---
    #[error("invalid entry name {name:?}")]
    InvalidEntryName { name: String },
    #[error("invalid hardlink target {target:?}")]
    InvalidHardlinkTarget { target: String },
    #[error("cannot overwrite directory {path:?} with non-directory {destination:?}")]
    OverwriteDirectory { path: String, destination: String },
    #[error("cannot overwrite non-directory {path:?} with directory {destination:?}")]
    OverwriteNonDirectory { path: String, destination: String },
    #[error("unhandled tar header type {type_flag} for {name:?}")]
    UnsupportedEntryType { name: String, type_flag: u8 },
    #[error("failed to {operation} {path}")]
    Extract {
        operation: &'static str,
        path: String,
        #[source]
        source: io::Error,
    },

    // --- reading the source tree ---
    #[error("failed to {operation} {path}")]
    Source {
        operation: &'static str,
        path: String,
        #[source]
        source: io::Error,
    },

    // --- the streams ---
    #[error("failed to read the tar stream")]
    ReadArchive {
        #[source]
        source: io::Error,
    },
    #[error("failed to write the tar stream")]
    WriteArchive {
        #[source]
        source: io::Error,
    },
    #[error("failed to open the container root {root}")]
    OpenRoot {
        root: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to open the copy journal {path}")]
    OpenJournal {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Why a path is neither a directory nor a regular file (docker/cli
/// `ValidateOutputPathFileMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IrregularKind {
    Device,
    Irregular,
}

impl std::fmt::Display for IrregularKind {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            Self::Device => "got a device",
            Self::Irregular => "got an irregular file",
        })
    }
}

impl CopyError {
    /// Docker's kinds (moby `daemon/archive*.go`): a missing path is a 404;
    /// a path, user or archive the request got wrong a 400
    /// (`errdefs.InvalidParameter`); a file system or stream that failed
    /// under the copy is the daemon's failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::NotFound { .. } => ErrorKind::NotFound,
            Self::VolumeReadOnly | Self::RootfsReadOnly => ErrorKind::Forbidden,
            Self::ExtractionPointNotDirectory { .. }
            | Self::UnknownUser { .. }
            | Self::UnknownGroup { .. }
            | Self::CompressedArchive { .. }
            | Self::CannotCopyDirectory
            | Self::NoSuchDirectory
            | Self::NotADirectory
            | Self::DestinationMustBeDirectory { .. }
            | Self::DestinationNotFileOrDirectory { .. }
            | Self::OutputDirectoryMissing { .. }
            | Self::OutputNotFileOrDirectory { .. }
            | Self::TooManySymlinks { .. }
            | Self::InvalidEntryName { .. }
            | Self::InvalidHardlinkTarget { .. }
            | Self::OverwriteDirectory { .. }
            | Self::OverwriteNonDirectory { .. }
            | Self::UnsupportedEntryType { .. } => ErrorKind::InvalidArgument,
            Self::StatInContainer { .. }
            | Self::ReadUserDatabase { .. }
            | Self::HostPath { .. }
            | Self::CurrentDirectory { .. }
            | Self::Extract { .. }
            | Self::Source { .. }
            | Self::ReadArchive { .. }
            | Self::WriteArchive { .. }
            | Self::OpenRoot { .. }
            | Self::OpenJournal { .. } => ErrorKind::Internal,
        }
    }

    /// Docker answers these with 404.
    pub fn is_not_found(&self) -> bool {
        self.kind() == ErrorKind::NotFound
    }
}

#[cfg(test)]
mod kind_tests {
    use super::*;
    use crate::ErrorChain;

    #[test]
    fn copy_errors_have_dockers_kinds_and_their_cause() {
        let missing = CopyError::NotFound {
            path: "/nope".to_owned(),
            container: "web".to_owned(),
        };
        assert!(missing.is_not_found());
        assert_eq!(
            missing.to_string(),
            "Could not find the file /nope in container web"
        );
        let compressed = CopyError::CompressedArchive { format: "gzip" };
        assert_eq!(compressed.kind(), ErrorKind::InvalidArgument);
        let stat = CopyError::StatInContainer {
            path: "/etc".to_owned(),
            source: io::Error::from_raw_os_error(libc::EACCES),
        };
        assert_eq!(stat.kind(), ErrorKind::Internal);
        assert_eq!(stat.to_string(), "lstat /etc");
        assert_eq!(
            ErrorChain(&stat).to_string(),
            "lstat /etc: Permission denied (os error 13)"
        );
    }
}
