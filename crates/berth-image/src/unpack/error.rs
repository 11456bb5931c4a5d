//! Everything that can go wrong while unpacking one layer.
//!
//! `entry` fields hold the entry's path as written in the archive; `path` fields hold the
//! place where a file system call failed, relative to the destination and with symlinks
//! in the parent path resolved (so it can differ from `entry`).

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use super::Compression;

/// Why a layer could not be unpacked. The destination is left half-written; the caller
/// removes it.
#[derive(Debug, thiserror::Error)]
pub enum UnpackError {
    // --- the byte stream ---
    #[error("failed to read the layer input")]
    ReadInput {
        #[source]
        source: io::Error,
    },
    #[error("failed to decompress the {compression} layer stream")]
    Decompress {
        compression: Compression,
        #[source]
        source: io::Error,
    },
    #[error("failed to read the layer: the {compression} stream ends early{}", at_entry(.entry))]
    Truncated {
        compression: Compression,
        /// The entry being read, or the last complete one when the stream ended between
        /// entries.
        entry: Option<PathBuf>,
        #[source]
        source: io::Error,
    },
    #[error("failed to parse the layer's tar stream{}", at_entry(.entry))]
    MalformedArchive {
        entry: Option<PathBuf>,
        #[source]
        source: io::Error,
    },

    // --- one entry's header ---
    #[error("failed to parse the pax extended header of entry {entry:?}")]
    MalformedPax {
        entry: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to read the {field} of entry {entry:?}")]
    InvalidHeader {
        entry: PathBuf,
        field: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("unsupported tar entry type {:?} for entry {entry:?}", char::from(*.type_flag))]
    UnsupportedEntryType { entry: PathBuf, type_flag: u8 },

    // --- hostile or invalid paths ---
    #[error("refusing entry {entry:?}: absolute paths are not allowed in a layer")]
    AbsolutePath { entry: PathBuf },
    #[error("refusing entry {entry:?}: its path contains a `..` component")]
    ParentComponent { entry: PathBuf },
    #[error(
        "refusing entry {entry:?}: symlink {symlink:?} in its parent path leads outside the \
         destination"
    )]
    SymlinkEscape { entry: PathBuf, symlink: PathBuf },
    #[error("refusing entry {entry:?}: too many levels of symbolic links in its parent path")]
    TooManySymlinks { entry: PathBuf },
    #[error("refusing entry {entry:?}: {path:?} in its parent path is not a directory")]
    ParentNotDirectory { entry: PathBuf, path: PathBuf },
    #[error("refusing hardlink {entry:?}: its target {target:?} is outside the destination")]
    HardlinkEscape { entry: PathBuf, target: PathBuf },
    #[error("refusing hardlink {entry:?}: its target {target:?} does not exist")]
    HardlinkTargetMissing { entry: PathBuf, target: PathBuf },
    #[error("refusing hardlink {entry:?}: its target {target:?} is a directory")]
    HardlinkToDirectory { entry: PathBuf, target: PathBuf },
    #[error("refusing entry {entry:?}: only a directory may stand for the layer root")]
    ReplaceRoot { entry: PathBuf },
    #[error("refusing entry {entry:?}: not a valid whiteout")]
    InvalidWhiteout { entry: PathBuf },
    #[error("refusing entry {entry:?}: unsupported whiteout metadata name")]
    UnsupportedWhiteoutMeta { entry: PathBuf },

    // --- the file system ---
    #[error("failed to open the destination directory {path:?}")]
    OpenDestination {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to look up {path:?} for entry {entry:?}")]
    Lookup {
        entry: PathBuf,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to read symlink {path:?} for entry {entry:?}")]
    ReadLink {
        entry: PathBuf,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to create directory {path:?} for entry {entry:?}")]
    CreateDirectory {
        entry: PathBuf,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to create file {path:?} for entry {entry:?}")]
    CreateFile {
        entry: PathBuf,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to create symlink {path:?} for entry {entry:?}")]
    CreateSymlink {
        entry: PathBuf,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to create hardlink {path:?} for entry {entry:?}")]
    CreateHardlink {
        entry: PathBuf,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to create device node {path:?} for entry {entry:?}")]
    CreateDevice {
        entry: PathBuf,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to create fifo {path:?} for entry {entry:?}")]
    CreateFifo {
        entry: PathBuf,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to create whiteout {path:?} for entry {entry:?}")]
    CreateWhiteout {
        entry: PathBuf,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to write {path:?} for entry {entry:?}")]
    Write {
        entry: PathBuf,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to remove {path:?} to make room for entry {entry:?}")]
    Remove {
        entry: PathBuf,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to set the owner of {path:?} for entry {entry:?}")]
    SetOwner {
        entry: PathBuf,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to set the mode of {path:?} for entry {entry:?}")]
    SetMode {
        entry: PathBuf,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to set extended attribute {name:?} for entry {entry:?}")]
    SetXattr {
        entry: PathBuf,
        name: OsString,
        #[source]
        source: io::Error,
    },
    #[error("failed to set the times of {path:?} for entry {entry:?}")]
    SetTimes {
        entry: PathBuf,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// What kind of file system object is being created, to pick the error variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NodeKind {
    Directory,
    File,
    Symlink,
    Hardlink,
    Device,
    Fifo,
    Whiteout,
}

impl NodeKind {
    pub(super) fn create_error(
        self,
        entry: &Path,
        path: PathBuf,
        source: io::Error,
    ) -> UnpackError {
        let entry = entry.to_owned();
        match self {
            Self::Directory => UnpackError::CreateDirectory {
                entry,
                path,
                source,
            },
            Self::File => UnpackError::CreateFile {
                entry,
                path,
                source,
            },
            Self::Symlink => UnpackError::CreateSymlink {
                entry,
                path,
                source,
            },
            Self::Hardlink => UnpackError::CreateHardlink {
                entry,
                path,
                source,
            },
            Self::Device => UnpackError::CreateDevice {
                entry,
                path,
                source,
            },
            Self::Fifo => UnpackError::CreateFifo {
                entry,
                path,
                source,
            },
            Self::Whiteout => UnpackError::CreateWhiteout {
                entry,
                path,
                source,
            },
        }
    }
}

fn at_entry(entry: &Option<PathBuf>) -> String {
    entry
        .as_deref()
        .map(|entry: &Path| format!(" at entry {entry:?}"))
        .unwrap_or_default()
}
