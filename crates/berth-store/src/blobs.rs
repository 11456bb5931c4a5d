//! Content-addressed blobs under `blobs/sha256/<hex>`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use berth_types::Digest;
use fs_err::os::unix::fs::OpenOptionsExt;
use sha2::{Digest as _, Sha256};

use crate::StoreError;

pub struct BlobStore {
    directory: PathBuf,
    staging: PathBuf,
}

impl BlobStore {
    pub(crate) fn new(directory: PathBuf, staging: PathBuf) -> Self {
        Self { directory, staging }
    }

    pub fn path(&self, digest: &Digest) -> PathBuf {
        self.directory.join(digest.hex())
    }

    pub fn contains(&self, digest: &Digest) -> bool {
        self.path(digest).is_file()
    }

    pub fn size(&self, digest: &Digest) -> Result<u64, StoreError> {
        let path = self.path(digest);
        match fs_err::metadata(&path) {
            Ok(metadata) => Ok(metadata.len()),
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                Err(StoreError::BlobNotFound(digest.clone()))
            }
            Err(source) => Err(StoreError::Io { path, source }),
        }
    }

    pub fn read(&self, digest: &Digest) -> Result<Vec<u8>, StoreError> {
        let path = self.path(digest);
        match fs_err::read(&path) {
            Ok(bytes) => Ok(bytes),
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                Err(StoreError::BlobNotFound(digest.clone()))
            }
            Err(source) => Err(StoreError::Io { path, source }),
        }
    }

    pub fn open(&self, digest: &Digest) -> Result<fs_err::File, StoreError> {
        let path = self.path(digest);
        fs_err::File::open(&path).map_err(|source| {
            if source.kind() == io::ErrorKind::NotFound {
                StoreError::BlobNotFound(digest.clone())
            } else {
                StoreError::Io { path, source }
            }
        })
    }

    /// Stores `bytes`, returning their digest.
    pub fn put(&self, bytes: &[u8]) -> Result<Digest, StoreError> {
        let mut writer = self.writer()?;
        writer
            .write_all(bytes)
            .map_err(StoreError::io(&writer.path))?;
        writer.commit(None)
    }

    /// A writer that hashes as it writes into staging.
    pub fn writer(&self) -> Result<BlobWriter, StoreError> {
        let path = self.staging.join(crate::staging_name("blob"));
        let file = fs_err::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(crate::permissions::PRIVATE_FILE)
            .open(&path)
            .map_err(StoreError::io(&path))?;
        Ok(BlobWriter {
            file: Some(io::BufWriter::with_capacity(1 << 20, file)),
            hash: Sha256::new(),
            size: 0,
            path,
            directory: self.directory.clone(),
        })
    }

    /// Moves an already-complete file (e.g. staged by an archive reader) into
    /// the store under its digest, verifying it by hashing.
    pub fn adopt(&self, file: &Path, expected: Option<&Digest>) -> Result<Digest, StoreError> {
        let mut reader = fs_err::File::open(file).map_err(|source| StoreError::Io {
            path: file.to_owned(),
            source,
        })?;
        let mut hash = Sha256::new();
        io::copy(&mut reader, &mut hash).map_err(StoreError::io(file))?;
        let actual = Digest::from_sha256(hash);
        check_expected(expected, &actual)?;
        let target = self.path(&actual);
        fs_err::rename(file, &target).map_err(StoreError::io(&target))?;
        Ok(actual)
    }

    /// Deletes a blob, returning the bytes of disk it held; a missing
    /// blob is not an error (and frees 0).
    pub fn delete(&self, digest: &Digest) -> Result<u64, StoreError> {
        crate::usage::remove_measured(&self.path(digest))
    }

    /// Every blob digest present on disk.
    pub fn list(&self) -> Result<Vec<Digest>, StoreError> {
        let entries = fs_err::read_dir(&self.directory).map_err(StoreError::io(&self.directory))?;
        Ok(entries
            .flatten()
            .filter_map(|entry| Digest::from_hex(entry.file_name().to_str()?))
            .collect())
    }
}

fn check_expected(expected: Option<&Digest>, actual: &Digest) -> Result<(), StoreError> {
    match expected {
        Some(expected) if expected != actual => Err(StoreError::DigestMismatch {
            expected: expected.clone(),
            actual: actual.clone(),
        }),
        _ => Ok(()),
    }
}

/// Writes one blob. Nothing is visible in the store until `commit`; dropping
/// the writer removes the staged file.
pub struct BlobWriter {
    file: Option<io::BufWriter<fs_err::File>>,
    hash: Sha256,
    size: u64,
    path: PathBuf,
    directory: PathBuf,
}

impl BlobWriter {
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Flushes, verifies against `expected` and renames into place.
    pub fn commit(mut self, expected: Option<&Digest>) -> Result<Digest, StoreError> {
        let file = self.file.take().expect("commit consumes the writer once");
        let file = file.into_inner().map_err(|error| StoreError::Io {
            path: self.path.clone(),
            source: error.into_error(),
        })?;
        file.sync_data().map_err(StoreError::io(&self.path))?;
        drop(file);
        let actual = Digest::from_sha256(std::mem::take(&mut self.hash));
        check_expected(expected, &actual)?;
        let target = self.directory.join(actual.hex());
        fs_err::rename(&self.path, &target).map_err(StoreError::io(&target))?;
        Ok(actual)
    }
}

impl Write for BlobWriter {
    fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
        let file = self
            .file
            .as_mut()
            .ok_or_else(|| io::Error::other("blob writer already committed"))?;
        let written = file.write(buffer)?;
        self.hash.update(&buffer[..written]);
        self.size += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.file.as_mut() {
            Some(file) => file.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for BlobWriter {
    fn drop(&mut self) {
        // After a successful commit the staged file has been renamed away and
        // this is a harmless NotFound.
        let _ = fs_err::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;

    #[test]
    fn put_and_read_back() {
        let root = tempfile::tempdir().unwrap();
        let store = Store::open(root.path()).unwrap();
        let blobs = store.blobs();
        let digest = blobs.put(b"hello").unwrap();
        assert_eq!(digest, Digest::of_bytes(b"hello"));
        assert_eq!(blobs.read(&digest).unwrap(), b"hello");
        assert!(blobs.contains(&digest));
        assert_eq!(blobs.list().unwrap(), vec![digest.clone()]);
        blobs.delete(&digest).unwrap();
        assert!(!blobs.contains(&digest));
        assert!(matches!(
            blobs.read(&digest),
            Err(StoreError::BlobNotFound(_))
        ));
    }

    #[test]
    fn mismatched_digest_leaves_nothing() {
        let root = tempfile::tempdir().unwrap();
        let store = Store::open(root.path()).unwrap();
        let blobs = store.blobs();
        let mut writer = blobs.writer().unwrap();
        writer.write_all(b"actual").unwrap();
        let wrong = Digest::of_bytes(b"expected");
        assert!(matches!(
            writer.commit(Some(&wrong)),
            Err(StoreError::DigestMismatch { .. })
        ));
        assert!(blobs.list().unwrap().is_empty());
        assert_eq!(
            fs_err::read_dir(root.path().join("tmp")).unwrap().count(),
            0
        );
    }

    #[test]
    fn dropped_writer_leaves_nothing() {
        let root = tempfile::tempdir().unwrap();
        let store = Store::open(root.path()).unwrap();
        let mut writer = store.blobs().writer().unwrap();
        writer.write_all(b"partial").unwrap();
        drop(writer);
        assert_eq!(
            fs_err::read_dir(root.path().join("tmp")).unwrap().count(),
            0
        );
        assert!(store.blobs().list().unwrap().is_empty());
    }
}
