//! Unpacks one image layer into a directory, in the form overlayfs stacks.
//!
//! The tar stream is read entry by entry with the `tar` crate, but every file is created
//! here, relative to directory descriptors opened without following symlinks
//! (`resolve.rs`), so that a hostile layer cannot write outside the destination:
//!
//! - entry paths with `..` or a leading `/` are refused (`safe_path.rs`);
//! - symlinks met in an entry's parent path are followed as if the destination were the
//!   root (an absolute target starts at the destination; climbing above it is refused);
//! - the last component is never followed: files are created with
//!   `O_CREAT | O_EXCL | O_NOFOLLOW` after removing what was there, and owner, mode, times
//!   and xattrs are set through descriptors or the `AT_SYMLINK_NOFOLLOW` / `l*` calls;
//! - hardlinks must name an existing non-directory inside the destination.
//!
//! OCI whiteouts become overlayfs whiteouts (`whiteout.rs`). Both digests are computed
//! while streaming (`compression.rs`).

mod attributes;
mod compression;
mod dir_times;
mod entry;
mod error;
mod links;
mod metadata;
mod resolve;
mod safe_path;
mod sys;
mod whiteout;

#[cfg(test)]
mod tests;

use std::io::Read;
use std::path::{Path, PathBuf};

use berth_types::Digest;

pub use compression::Compression;
pub use error::UnpackError;

use compression::LayerStream;
use entry::{Failure, Unpacker};

/// What unpacking a layer produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnpackOutcome {
    /// sha256 of the whole uncompressed tar stream, trailing bytes included.
    pub diff_id: Digest,
    /// Sum of the sizes of the regular files written.
    pub size: u64,
    /// sha256 of the raw input bytes, as given.
    pub compressed_digest: Digest,
    pub compression: Compression,
}

/// Detects compression by magic bytes (gzip `1f 8b`, zstd `28 b5 2f fd`, else plain tar),
/// unpacks into `destination` (an existing empty directory the caller owns; the caller
/// deletes it on error), converting OCI whiteouts to overlayfs form.
///
/// Must run as root (or with `CAP_CHOWN`, `CAP_MKNOD`, `CAP_FOWNER` and `CAP_SYS_ADMIN`
/// for `trusted.*` xattrs) to preserve owners, device nodes and whiteouts.
pub fn unpack_layer(input: impl Read, destination: &Path) -> Result<UnpackOutcome, UnpackError> {
    let mut stream = LayerStream::open(input)?;
    let compression = stream.compression();
    let mut unpacker = Unpacker::new(destination)?;
    if let Err(failure) = unpack_entries(&mut stream, &mut unpacker) {
        return Err(match failure {
            Failure::Unpack(error) => error,
            Failure::Stream { entry, source } => stream.classify(source, entry),
        });
    }
    let size = unpacker.finish()?;
    let digests = stream.finish()?;
    tracing::debug!(
        %compression,
        size,
        diff_id = %digests.diff_id,
        "unpacked layer"
    );
    Ok(UnpackOutcome {
        diff_id: digests.diff_id,
        size,
        compressed_digest: digests.compressed_digest,
        compression,
    })
}

fn unpack_entries<R: Read>(
    stream: &mut LayerStream<R>,
    unpacker: &mut Unpacker,
) -> Result<(), Failure> {
    let mut archive = tar::Archive::new(stream);
    let stream_failure = |entry: Option<PathBuf>| move |source| Failure::Stream { entry, source };
    let entries = archive.entries().map_err(stream_failure(None))?;
    let mut last: Option<PathBuf> = None;
    for entry in entries {
        let mut entry = entry.map_err(stream_failure(last.take()))?;
        last = Some(unpacker.unpack(&mut entry)?);
    }
    Ok(())
}
