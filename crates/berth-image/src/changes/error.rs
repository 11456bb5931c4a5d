//! Everything that can go wrong while reading a container's changes.
//!
//! `path` fields hold host paths (the upper dir, a lower layer or the exported root joined
//! with the place inside it); `entry` fields hold a path as written into the tar stream.

use std::io;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ChangesError {
    #[error("failed to open directory {path:?}")]
    OpenDirectory {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to list directory {path:?}")]
    ReadDirectory {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to stat {path:?}")]
    Stat {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to read the extended attributes of {path:?}")]
    ReadXattrs {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to read symlink {path:?}")]
    ReadLink {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to open file {path:?}")]
    OpenFile {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to read file {path:?}")]
    ReadFile {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to archive {path:?}: it changed while it was being read")]
    ChangedWhileReading { path: PathBuf },
    /// An upper dir written with `redirect_dir=on` or `metacopy=on` keeps part of its
    /// changes in the lower layers; berth mounts with both off, so this is not its layout.
    #[error(
        "failed to read {path:?}: it uses the overlayfs {feature} feature, which berth does \
         not support"
    )]
    UnsupportedOverlayFeature {
        path: PathBuf,
        feature: &'static str,
    },
    #[error("failed to write tar entry {entry:?}")]
    WriteEntry {
        entry: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("failed to finish the tar stream")]
    FinishArchive {
        #[source]
        source: io::Error,
    },
}
