//! Unpacked layers under `layers/<chain-id hex>/`, each shared by every image
//! that has it and written exactly once.

use std::io;
use std::path::{Path, PathBuf};

use berth_types::Digest;

use crate::StoreError;

pub struct LayerStore {
    directory: PathBuf,
    staging: PathBuf,
}

impl LayerStore {
    pub(crate) fn new(directory: PathBuf, staging: PathBuf) -> Self {
        Self { directory, staging }
    }

    /// The directory holding the layer's files (an overlayfs lower dir).
    pub fn path(&self, chain_id: &Digest) -> PathBuf {
        self.directory.join(chain_id.hex())
    }

    pub fn exists(&self, chain_id: &Digest) -> bool {
        self.path(chain_id).is_dir()
    }

    /// A fresh empty directory to unpack into; removed on drop unless
    /// committed.
    pub fn stage(&self) -> Result<StagedLayer, StoreError> {
        let path = self.staging.join(crate::staging_name("layer"));
        fs_err::create_dir(&path).map_err(StoreError::io(&path))?;
        // A layer's content is read by containers (an overlayfs lower dir):
        // its top directory is 0755 as dockerd's `diff`, whatever the umask
        // (the private `layers/` above it keeps other users out).
        crate::permissions::set_mode(&path, 0o755)?;
        Ok(StagedLayer {
            path,
            directory: self.directory.clone(),
            committed: false,
        })
    }

    /// Removes a layer's directory, returning the bytes of disk it held
    /// (as `du` counts them); a missing one is not an error (and frees 0).
    pub fn delete(&self, chain_id: &Digest) -> Result<u64, StoreError> {
        crate::usage::remove_measured(&self.path(chain_id))
    }

    /// Every layer directory present on disk.
    pub fn list(&self) -> Result<Vec<Digest>, StoreError> {
        let entries = fs_err::read_dir(&self.directory).map_err(StoreError::io(&self.directory))?;
        Ok(entries
            .flatten()
            .filter_map(|entry| Digest::from_hex(entry.file_name().to_str()?))
            .collect())
    }
}

/// A layer being unpacked.
pub struct StagedLayer {
    path: PathBuf,
    directory: PathBuf,
    committed: bool,
}

impl StagedLayer {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the staged directory to `layers/<chain-id>`. When another
    /// process got there first, its copy is kept and ours is removed.
    pub fn commit(mut self, chain_id: &Digest) -> Result<(), StoreError> {
        let target = self.directory.join(chain_id.hex());
        match fs_err::rename(&self.path, &target) {
            Ok(()) => {
                self.committed = true;
                Ok(())
            }
            // ENOTEMPTY or EEXIST (the kinds std gives exactly those two; fs-err keeps the
            // kind but not the errno).
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::DirectoryNotEmpty | io::ErrorKind::AlreadyExists
                ) =>
            {
                tracing::debug!(%chain_id, "layer already unpacked by another process");
                Ok(())
            }
            Err(source) => Err(StoreError::Io {
                path: target,
                source,
            }),
        }
    }
}

impl Drop for StagedLayer {
    fn drop(&mut self) {
        if !self.committed {
            if let Err(error) = remove_tree(&self.path) {
                tracing::warn!(path = %self.path.display(), %error, "failed to remove staged layer");
            }
        }
    }
}

fn remove_tree(path: &Path) -> Result<(), StoreError> {
    match fs_err::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(StoreError::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;

    #[test]
    fn staged_layer_commits_once() {
        let root = tempfile::tempdir().unwrap();
        let store = Store::open(root.path()).unwrap();
        let layers = store.layers();
        let chain_id = Digest::of_bytes(b"layer");

        let first = layers.stage().unwrap();
        fs_err::write(first.path().join("a"), "first").unwrap();
        let second = layers.stage().unwrap();
        fs_err::write(second.path().join("a"), "second").unwrap();

        first.commit(&chain_id).unwrap();
        second.commit(&chain_id).unwrap();
        assert_eq!(
            fs_err::read_to_string(layers.path(&chain_id).join("a")).unwrap(),
            "first"
        );
        assert_eq!(
            fs_err::read_dir(root.path().join("tmp")).unwrap().count(),
            0
        );
        assert_eq!(layers.list().unwrap(), vec![chain_id]);
    }

    #[test]
    fn dropped_stage_is_removed() {
        let root = tempfile::tempdir().unwrap();
        let store = Store::open(root.path()).unwrap();
        let staged = store.layers().stage().unwrap();
        fs_err::create_dir(staged.path().join("d")).unwrap();
        drop(staged);
        assert_eq!(
            fs_err::read_dir(root.path().join("tmp")).unwrap().count(),
            0
        );
    }
}
