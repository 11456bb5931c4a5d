//! What a container changed in its root file system: the list `docker diff` prints, the
//! layer `docker commit` adds, and the whole root as `docker export` writes it.
//!
//! A container's root is an overlayfs mount: the image's layers (in overlayfs form, as
//! `crate::unpack` writes them) below a per-container upper dir that takes every write.
//! overlayfs must be mounted with `redirect_dir` and `metacopy` off (the kernel defaults),
//! so that the upper dir alone says what changed: a renamed lower directory is then copied
//! whole under its new name, and its old name gets a whiteout.
//!
//! Every walk reads through directory descriptors without following symlinks (`tree.rs`),
//! so a container that is still running cannot lead it outside its tree.

mod archive;
mod diff;
mod error;
mod lowers;
mod overlay;
mod tar_stream;
mod tree;

#[cfg(test)]
mod tests;

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use berth_types::Digest;

pub use error::ChangesError;

/// How a path changed, as `docker diff` marks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChangeKind {
    /// `C`: present before and after, with other attributes or contents, or holding a
    /// change.
    Modified,
    /// `A`: new.
    Added,
    /// `D`: gone.
    Deleted,
}

impl ChangeKind {
    /// The letter `docker diff` prints.
    pub fn letter(self) -> char {
        match self {
            Self::Modified => 'C',
            Self::Added => 'A',
            Self::Deleted => 'D',
        }
    }

    /// The number the Docker Engine API uses (`Kind` in `GET /containers/{id}/changes`).
    pub fn api_kind(self) -> u8 {
        match self {
            Self::Modified => 0,
            Self::Added => 1,
            Self::Deleted => 2,
        }
    }
}

/// One line of `docker diff`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Change {
    pub kind: ChangeKind,
    /// Absolute, as seen inside the container: `/etc/passwd`.
    pub path: String,
}

impl fmt::Display for Change {
    /// `C /etc/passwd`, as `docker diff` prints it.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{} {}", self.kind.letter(), self.path)
    }
}

/// What `layer_from_upper` wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerTarOutcome {
    /// sha256 of the whole tar stream: the layer's diff id.
    pub diff_id: Digest,
    /// Sum of the sizes of the regular files in the layer, as `UnpackOutcome::size`
    /// counts them when the layer is unpacked.
    pub size: u64,
    /// Bytes in the tar stream.
    pub tar_size: u64,
}

/// `docker diff`: what the container whose upper dir is `upper`, over `lowers` (bottom
/// layer first), changed, sorted by path. The rules are Docker 20.10's for overlay2
/// (see `diff.rs`): the container's merged tree compared with the image's, so a file that
/// was only copied up is no change, a directory holding a change is `C`, and below a
/// deleted or replaced directory only the directory itself is listed.
pub fn changes(upper: &Path, lowers: &[PathBuf]) -> Result<Vec<Change>, ChangesError> {
    let changes = diff::collect(upper, lowers)?;
    tracing::debug!(
        ?upper,
        layers = lowers.len(),
        count = changes.len(),
        "read container changes"
    );
    Ok(changes)
}

/// `docker commit`'s new layer: streams the upper dir to `out` as an uncompressed OCI layer
/// tar. Whiteout devices become empty `.wh.<name>` files and opaque directories get a
/// `<dir>/.wh..wh..opq` entry; modes, owners, whole-second mtimes, xattrs (except
/// overlayfs' own), hardlinks, devices and fifos are kept. Entries come in byte order of
/// their names, so the same upper dir always gives the same diff id.
pub fn layer_from_upper(upper: &Path, out: impl Write) -> Result<LayerTarOutcome, ChangesError> {
    layer_from_upper_clamped(upper, out, None)
}

/// [`layer_from_upper`] with no entry's mtime later than `mtime_clamp`
/// (seconds since the epoch): a build's reproducible layers.
pub fn layer_from_upper_clamped(
    upper: &Path,
    out: impl Write,
    mtime_clamp: Option<u64>,
) -> Result<LayerTarOutcome, ChangesError> {
    let totals = archive::write_tree(upper, out, archive::Form::Layer, mtime_clamp)?;
    tracing::debug!(?upper, diff_id = %totals.diff_id, size = totals.size, "wrote layer from upper dir");
    Ok(LayerTarOutcome {
        diff_id: totals.diff_id,
        size: totals.size,
        tar_size: totals.tar_size,
    })
}

/// `docker export`: streams the tree at `root` (a container's mounted root, so no
/// whiteouts show) to `out` as a tar, everything but the root directory itself and
/// sockets, in the same form as a layer. The caller makes sure nothing is mounted below
/// `root` (volumes, `/proc`): the walk does not stop at mount points.
pub fn export_rootfs(root: &Path, out: impl Write) -> Result<(), ChangesError> {
    let totals = archive::write_tree(root, out, archive::Form::Export, None)?;
    tracing::debug!(?root, bytes = totals.tar_size, "exported root file system");
    Ok(())
}
