//! Builds layer tars for the tests, including hostile ones the `tar` Builder refuses to
//! write (names are copied into the header bytes by hand).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use tar::{EntryType, Header};
use tempfile::TempDir;

use crate::unpack::{unpack_layer, UnpackError, UnpackOutcome};

pub const MTIME: u64 = 1_600_000_000;

/// These tests chown, mknod and set `trusted.*` xattrs, which need root.
pub fn is_root() -> bool {
    let root = nix::unistd::Uid::effective().is_root();
    if !root {
        eprintln!("skipping: unpack tests need root (chown, mknod, trusted.* xattrs)");
    }
    root
}

pub struct Layer {
    builder: tar::Builder<Vec<u8>>,
}

impl Layer {
    pub fn new() -> Self {
        Self {
            builder: tar::Builder::new(Vec::new()),
        }
    }

    pub fn header(entry_type: EntryType, mode: u32) -> Header {
        let mut header = Header::new_gnu();
        header.set_entry_type(entry_type);
        header.set_mode(mode);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(MTIME);
        header.set_size(0);
        header
    }

    /// Appends an entry with `name` and `link` copied verbatim into the header.
    pub fn raw(&mut self, mut header: Header, name: &[u8], link: &[u8], data: &[u8]) -> &mut Self {
        let old = header.as_old_mut();
        old.name.fill(0);
        old.name[..name.len()].copy_from_slice(name);
        old.linkname.fill(0);
        old.linkname[..link.len()].copy_from_slice(link);
        header.set_size(data.len() as u64);
        header.set_cksum();
        self.builder.append(&header, data).unwrap();
        self
    }

    pub fn dir(&mut self, path: &str, mode: u32) -> &mut Self {
        self.raw(
            Self::header(EntryType::Directory, mode),
            path.as_bytes(),
            b"",
            b"",
        )
    }

    pub fn file(&mut self, path: &str, data: &[u8], mode: u32) -> &mut Self {
        self.raw(
            Self::header(EntryType::Regular, mode),
            path.as_bytes(),
            b"",
            data,
        )
    }

    pub fn symlink(&mut self, path: &str, target: &str) -> &mut Self {
        let header = Self::header(EntryType::Symlink, 0o777);
        self.raw(header, path.as_bytes(), target.as_bytes(), b"")
    }

    pub fn hardlink(&mut self, path: &str, target: &str) -> &mut Self {
        let header = Self::header(EntryType::Link, 0o644);
        self.raw(header, path.as_bytes(), target.as_bytes(), b"")
    }

    /// Appends through the Builder's own path handling (GNU long names and the like).
    pub fn append_data(&mut self, mut header: Header, path: &str, data: &[u8]) -> &mut Self {
        header.set_size(data.len() as u64);
        self.builder.append_data(&mut header, path, data).unwrap();
        self
    }

    /// A pax extended header describing the next entry.
    pub fn pax(&mut self, records: &[(&str, &[u8])]) -> &mut Self {
        self.builder
            .append_pax_extensions(records.iter().map(|(key, value)| (*key, *value)))
            .unwrap();
        self
    }

    pub fn bytes(self) -> Vec<u8> {
        self.builder.into_inner().unwrap()
    }
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

pub fn zstd(bytes: &[u8]) -> Vec<u8> {
    zstd::stream::encode_all(bytes, 3).unwrap()
}

pub struct Unpacked {
    pub dir: TempDir,
    pub result: Result<UnpackOutcome, UnpackError>,
}

impl Unpacked {
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn outcome(&self) -> &UnpackOutcome {
        match &self.result {
            Ok(outcome) => outcome,
            Err(error) => panic!("unpack failed: {error:#?}"),
        }
    }

    pub fn error(&self) -> &UnpackError {
        match &self.result {
            Ok(_) => panic!("unpack succeeded where it should have failed"),
            Err(error) => error,
        }
    }

    pub fn metadata(&self, path: &str) -> fs::Metadata {
        fs_err::symlink_metadata(self.root().join(path)).unwrap()
    }

    pub fn exists(&self, path: &str) -> bool {
        fs_err::symlink_metadata(self.root().join(path)).is_ok()
    }

    pub fn mode(&self, path: &str) -> u32 {
        self.metadata(path).mode() & 0o7777
    }
}

pub fn unpack(bytes: &[u8]) -> Unpacked {
    let dir = TempDir::new().unwrap();
    let result = unpack_layer(bytes, dir.path());
    Unpacked { dir, result }
}

pub fn sha256(bytes: &[u8]) -> berth_types::Digest {
    berth_types::Digest::of_bytes(bytes)
}
