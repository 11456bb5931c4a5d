//! Image layers written as tar files on disk, hashed while they are written
//! (the diff id of the tar, and the digest of the stored file when it is
//! gzip-compressed). Deterministic: fixed mtime, owner root, entries in the
//! order they are added (trees are walked sorted).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use sha2::{Digest, Sha256};
use tar::{EntryType, Header};

/// 2024-01-01T00:00:00Z, as scripts/make-fixtures.sh.
pub const EPOCH: u64 = 1_704_067_200;

/// A finished layer file.
#[derive(Clone, Debug)]
pub struct LayerFile {
    pub path: PathBuf,
    /// sha256 of the uncompressed tar.
    pub diff_id: String,
    /// sha256 of the file as stored (= diff_id when not compressed).
    pub digest: String,
    pub size: u64,
    pub gzip: bool,
}

/// A writer that hashes and counts what passes through it.
pub struct HashWriter<W: Write> {
    inner: W,
    hasher: Sha256,
    count: u64,
}

impl<W: Write> HashWriter<W> {
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
            count: 0,
        }
    }

    /// The inner writer, `sha256:<hex>` and the byte count.
    pub fn finish(self) -> (W, String, u64) {
        (
            self.inner,
            format!("sha256:{}", hex::encode(self.hasher.finalize())),
            self.count,
        )
    }
}

impl<W: Write> Write for HashWriter<W> {
    fn write(&mut self, buffer: &[u8]) -> std::io::Result<usize> {
        let written = self.inner.write(buffer)?;
        self.hasher.update(&buffer[..written]);
        self.count += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

enum Sink {
    Plain(HashWriter<BufWriter<File>>),
    Gzip(GzEncoder<HashWriter<BufWriter<File>>>),
}

impl Write for Sink {
    fn write(&mut self, buffer: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Plain(writer) => writer.write(buffer),
            Sink::Gzip(writer) => writer.write(buffer),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Plain(writer) => writer.flush(),
            Sink::Gzip(writer) => writer.flush(),
        }
    }
}

pub struct LayerWriter {
    builder: tar::Builder<HashWriter<Sink>>,
    path: PathBuf,
    gzip: bool,
}

fn header(kind: EntryType, mode: u32, size: u64) -> Header {
    let mut header = Header::new_gnu();
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_size(size);
    header.set_mtime(EPOCH);
    header.set_uid(0);
    header.set_gid(0);
    header
}

impl LayerWriter {
    pub fn create(path: &Path, gzip: bool) -> std::io::Result<Self> {
        let file = BufWriter::with_capacity(1 << 20, fs_err::File::create(path)?.into_parts().0);
        let hashed = HashWriter::new(file);
        let sink = if gzip {
            Sink::Gzip(GzEncoder::new(hashed, flate2::Compression::default()))
        } else {
            Sink::Plain(hashed)
        };
        let mut builder = tar::Builder::new(HashWriter::new(sink));
        builder.mode(tar::HeaderMode::Deterministic);
        Ok(Self {
            builder,
            path: path.to_owned(),
            gzip,
        })
    }

    pub fn directory(&mut self, path: &str, mode: u32) -> std::io::Result<()> {
        let mut header = header(EntryType::Directory, mode, 0);
        self.builder.append_data(
            &mut header,
            format!("{}/", path.trim_end_matches('/')),
            std::io::empty(),
        )
    }

    pub fn file(&mut self, path: &str, mode: u32, data: &[u8]) -> std::io::Result<()> {
        let mut header = header(EntryType::Regular, mode, data.len() as u64);
        self.builder.append_data(&mut header, path, data)
    }

    pub fn file_from(
        &mut self,
        path: &str,
        mode: u32,
        size: u64,
        data: impl Read,
    ) -> std::io::Result<()> {
        let mut header = header(EntryType::Regular, mode, size);
        self.builder.append_data(&mut header, path, data.take(size))
    }

    pub fn symlink(&mut self, path: &str, target: &str) -> std::io::Result<()> {
        let mut header = header(EntryType::Symlink, 0o777, 0);
        self.builder.append_link(&mut header, path, target)
    }

    pub fn hardlink(&mut self, path: &str, target: &str) -> std::io::Result<()> {
        let mut header = header(EntryType::Link, 0o644, 0);
        self.builder.append_link(&mut header, path, target)
    }

    /// Adds everything under `root` (not `root` itself), sorted by name.
    /// Hard links become tar hard links; sockets, fifos and devices are
    /// left out (no package the suite uses ships one).
    pub fn tree(&mut self, root: &Path) -> std::io::Result<()> {
        let mut inodes: HashMap<(u64, u64), String> = HashMap::new();
        self.walk(root, root, &mut inodes)
    }

    fn walk(
        &mut self,
        root: &Path,
        directory: &Path,
        inodes: &mut HashMap<(u64, u64), String>,
    ) -> std::io::Result<()> {
        let mut entries: Vec<_> = fs_err::read_dir(directory)?
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .map(|entry| entry.path())
            .collect();
        entries.sort();
        for path in entries {
            let relative = path
                .strip_prefix(root)
                .map_err(|error| std::io::Error::other(error.to_string()))?
                .to_string_lossy()
                .into_owned();
            let metadata = fs_err::symlink_metadata(&path)?;
            let mode = metadata.permissions().mode() & 0o7777;
            let kind = metadata.file_type();
            if kind.is_symlink() {
                let target = fs_err::read_link(&path)?;
                self.symlink(&relative, &target.to_string_lossy())?;
            } else if kind.is_dir() {
                self.directory(&relative, mode)?;
                self.walk(root, &path, inodes)?;
            } else if kind.is_file() {
                let key = (metadata.dev(), metadata.ino());
                if metadata.nlink() > 1 {
                    if let Some(first) = inodes.get(&key) {
                        let first = first.clone();
                        self.hardlink(&relative, &first)?;
                        continue;
                    }
                    inodes.insert(key, relative.clone());
                }
                let file = fs_err::File::open(&path)?;
                self.file_from(&relative, mode, metadata.len(), file)?;
            }
        }
        Ok(())
    }

    pub fn finish(self) -> std::io::Result<LayerFile> {
        let hashed = self.builder.into_inner()?;
        let (sink, diff_id, _) = hashed.finish();
        let (file, digest, size) = match sink {
            Sink::Plain(writer) => writer.finish(),
            Sink::Gzip(encoder) => encoder.finish()?.finish(),
        };
        file.into_inner()
            .map_err(|error| error.into_error())?
            .sync_all()?;
        Ok(LayerFile {
            path: self.path,
            diff_id,
            digest,
            size,
            gzip: self.gzip,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha256(bytes: &[u8]) -> String {
        format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
    }

    #[test]
    fn digests_match_the_bytes_written() {
        let directory = tempfile::tempdir().unwrap();
        for gzip in [false, true] {
            let path = directory.path().join(format!("layer-{gzip}"));
            let mut writer = LayerWriter::create(&path, gzip).unwrap();
            writer.directory("etc", 0o755).unwrap();
            writer
                .file("etc/passwd", 0o644, b"root:x:0:0::/root:/bin/sh\n")
                .unwrap();
            writer.symlink("bin/sh", "busybox").unwrap();
            let long = format!("deep/{}/file", "d".repeat(150));
            writer.file(&long, 0o600, b"long name").unwrap();
            let layer = writer.finish().unwrap();
            let stored = fs_err::read(&path).unwrap();
            assert_eq!(layer.digest, sha256(&stored));
            assert_eq!(layer.size, stored.len() as u64);
            let plain = if gzip {
                let mut out = Vec::new();
                flate2::read::GzDecoder::new(&stored[..])
                    .read_to_end(&mut out)
                    .unwrap();
                out
            } else {
                assert_eq!(layer.diff_id, layer.digest);
                stored
            };
            assert_eq!(layer.diff_id, sha256(&plain));
            let mut archive = tar::Archive::new(&plain[..]);
            let names: Vec<String> = archive
                .entries()
                .unwrap()
                .map(|entry| entry.unwrap().path().unwrap().display().to_string())
                .collect();
            assert_eq!(names, vec!["etc/", "etc/passwd", "bin/sh", long.as_str()]);
        }
    }

    #[test]
    fn trees_are_sorted_with_links_kept() {
        let directory = tempfile::tempdir().unwrap();
        let root = directory.path().join("root");
        fs_err::create_dir_all(root.join("usr/bin")).unwrap();
        fs_err::write(root.join("usr/bin/b"), b"b").unwrap();
        fs_err::write(root.join("usr/bin/a"), b"a").unwrap();
        fs_err::hard_link(root.join("usr/bin/a"), root.join("usr/bin/c")).unwrap();
        fs_err::os::unix::fs::symlink("usr/bin", root.join("bin")).unwrap();
        let write = |name: &str| {
            let path = directory.path().join(name);
            let mut writer = LayerWriter::create(&path, false).unwrap();
            writer.tree(&root).unwrap();
            writer.finish().unwrap()
        };
        let first = write("one.tar");
        assert_eq!(first.diff_id, write("two.tar").diff_id, "deterministic");
        let bytes = fs_err::read(&first.path).unwrap();
        let mut archive = tar::Archive::new(&bytes[..]);
        let entries: Vec<(String, EntryType)> = archive
            .entries()
            .unwrap()
            .map(|entry| {
                let entry = entry.unwrap();
                (
                    entry.path().unwrap().display().to_string(),
                    entry.header().entry_type(),
                )
            })
            .collect();
        assert_eq!(
            entries,
            vec![
                ("bin".to_owned(), EntryType::Symlink),
                ("usr/".to_owned(), EntryType::Directory),
                ("usr/bin/".to_owned(), EntryType::Directory),
                ("usr/bin/a".to_owned(), EntryType::Regular),
                ("usr/bin/b".to_owned(), EntryType::Regular),
                ("usr/bin/c".to_owned(), EntryType::Link),
            ]
        );
    }
}
