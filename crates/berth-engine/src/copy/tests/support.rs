//! A fake container (a temporary directory as its root) and a host directory laid out as
//! in the runs against the real Docker that the expectations come from:
//!
//! ```text
//! container                                host
//! /src/file      "hello\n" 0644, 2001-02-03   s/file      "hello\n" 0640 1234:5678, 2001-02-03 04:05:06.5
//! /src/dir/a     "inner\n" 04755              s/dir/a     "inner\n" 04755
//! /src/dir/hard  hardlink of a                s/dir/hard  hardlink of a
//! /src/dir/sub/b "deep\n" 1234:5678           s/dir/sub/b "deep\n" 1234:5678
//! /src/link -> file                           s/link -> file
//! /src/dirlink -> dir                         s/dirlink -> dir
//! /src/abslink -> /src/file                   s/abslink -> <host>/s/file
//! /dst/existdir/  /dst/existfile "old\n"      h/existdir/  h/existfile "old\n"
//! /dst/dirsymlink -> existdir                 h/dirsymlink -> existdir
//! /dst/filesymlink -> existfile               h/filesymlink -> existfile
//! /dst/dangling -> nowhere                    h/dangling -> nowhere
//! /dst/abssym -> /dst/existdir
//! ```

use fs_err::os::unix::fs::{chown, symlink};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::copy::ContainerFs;

pub const NAME: &str = "cpt";

/// 2001-02-03T04:05:06Z
pub const OLD_TIME: i64 = 981_173_106;

pub struct Fixture {
    pub temp: tempfile::TempDir,
    /// The container root.
    pub root: PathBuf,
    /// Host source tree (`s`).
    pub source: PathBuf,
    /// Host destination directory (`h`).
    pub host: PathBuf,
}

impl Fixture {
    pub fn new() -> Self {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().join("root");
        let source = temp.path().join("s");
        let host = temp.path().join("h");
        for directory in [&root, &source, &host] {
            fs_err::create_dir(directory).unwrap();
        }

        // The container.
        write(&root.join("src/file"), "hello\n", 0o644);
        set_mtime(&root.join("src/file"), OLD_TIME, 0);
        write(&root.join("src/dir/a"), "inner\n", 0o4755);
        fs_err::hard_link(root.join("src/dir/a"), root.join("src/dir/hard")).unwrap();
        write(&root.join("src/dir/sub/b"), "deep\n", 0o644);
        chown(root.join("src/dir/sub/b"), Some(1234), Some(5678)).unwrap();
        symlink("file", root.join("src/link")).unwrap();
        symlink("dir", root.join("src/dirlink")).unwrap();
        symlink("/src/file", root.join("src/abslink")).unwrap();
        fs_err::create_dir_all(root.join("dst/existdir")).unwrap();
        write(&root.join("dst/existfile"), "old\n", 0o644);
        symlink("existdir", root.join("dst/dirsymlink")).unwrap();
        symlink("existfile", root.join("dst/filesymlink")).unwrap();
        symlink("nowhere", root.join("dst/dangling")).unwrap();
        symlink("/dst/existdir", root.join("dst/abssym")).unwrap();

        // The host.
        write(&source.join("file"), "hello\n", 0o640);
        chown(source.join("file"), Some(1234), Some(5678)).unwrap();
        set_mtime(&source.join("file"), OLD_TIME, 500_000_000);
        write(&source.join("dir/a"), "inner\n", 0o4755);
        fs_err::hard_link(source.join("dir/a"), source.join("dir/hard")).unwrap();
        write(&source.join("dir/sub/b"), "deep\n", 0o644);
        chown(source.join("dir/sub/b"), Some(1234), Some(5678)).unwrap();
        symlink("file", source.join("link")).unwrap();
        symlink("dir", source.join("dirlink")).unwrap();
        symlink(source.join("file"), source.join("abslink")).unwrap();
        fs_err::create_dir(host.join("existdir")).unwrap();
        write(&host.join("existfile"), "old\n", 0o644);
        symlink("existdir", host.join("dirsymlink")).unwrap();
        symlink("existfile", host.join("filesymlink")).unwrap();
        symlink("nowhere", host.join("dangling")).unwrap();

        Self {
            temp,
            root,
            source,
            host,
        }
    }

    pub fn container(&self) -> ContainerFs<'_> {
        ContainerFs::new(&self.root, NAME)
    }

    /// A path in the container, on the host.
    pub fn inside(&self, path: &str) -> PathBuf {
        self.root.join(path.trim_start_matches('/'))
    }
}

pub fn write(path: &Path, content: &str, mode: u32) {
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(path, content).unwrap();
    fs_err::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

pub fn set_mtime(path: &Path, seconds: i64, nanoseconds: i64) {
    let time = nix::sys::time::TimeSpec::new(seconds, nanoseconds);
    nix::sys::stat::utimensat(
        None,
        path,
        &time,
        &time,
        nix::sys::stat::UtimensatFlags::NoFollowSymlink,
    )
    .unwrap();
}

/// One line per file below `base` (sorted; `base` itself excluded):
/// `path kind mode uid:gid detail`, where detail is a file's content or a link's target.
pub fn listing(base: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    collect(base, base, &mut lines);
    lines.sort();
    lines
}

/// `listing` without the fixture's own files.
pub fn new_files(base: &Path, fixtures: &[&str]) -> Vec<String> {
    listing(base)
        .into_iter()
        .filter(|line| {
            !fixtures
                .iter()
                .any(|fixture| line.split(' ').next() == Some(fixture))
        })
        .collect()
}

pub const HOST_FIXTURES: &[&str] = &[
    "existdir",
    "existfile",
    "dirsymlink",
    "filesymlink",
    "dangling",
];
pub const DST_FIXTURES: &[&str] = &[
    "existdir",
    "existfile",
    "dirsymlink",
    "filesymlink",
    "dangling",
    "abssym",
];

fn collect(base: &Path, directory: &Path, lines: &mut Vec<String>) {
    for entry in fs_err::read_dir(directory).unwrap() {
        let path = entry.unwrap().path();
        let metadata = fs_err::symlink_metadata(&path).unwrap();
        let rel = path.strip_prefix(base).unwrap().display().to_string();
        let (kind, detail) = if metadata.is_symlink() {
            (
                "l",
                format!("-> {}", fs_err::read_link(&path).unwrap().display()),
            )
        } else if metadata.is_dir() {
            ("d", String::new())
        } else if metadata.is_file() {
            (
                "f",
                fs_err::read_to_string(&path)
                    .unwrap_or_default()
                    .trim_end()
                    .to_owned(),
            )
        } else {
            ("o", String::new())
        };
        let mode = if metadata.is_symlink() {
            0
        } else {
            metadata.mode() & 0o7777
        };
        lines.push(
            format!(
                "{rel} {kind} {mode:o} {}:{} {detail}",
                metadata.uid(),
                metadata.gid()
            )
            .trim_end()
            .to_owned(),
        );
        if metadata.is_dir() {
            collect(base, &path, lines);
        }
    }
}

/// The `listing` lines of the fixture's `src/dir` (or `s/dir`) copied to `at`.
pub fn dir_lines(at: &str, owner_of_b: &str) -> Vec<String> {
    let mut lines = vec![
        format!("{at} d 755 0:0"),
        format!("{at}/a f 4755 0:0 inner"),
        format!("{at}/hard f 4755 0:0 inner"),
        format!("{at}/sub d 755 0:0"),
        format!("{at}/sub/b f 644 {owner_of_b} deep"),
    ];
    lines.sort();
    lines
}

pub fn inode(path: &Path) -> u64 {
    fs_err::symlink_metadata(path).unwrap().ino()
}

pub fn mtime(path: &Path) -> (i64, i64) {
    let metadata = fs_err::symlink_metadata(path).unwrap();
    (metadata.mtime(), metadata.mtime_nsec())
}

/// A tar stream built entry by entry with raw names, so tests can write what the `tar`
/// crate's safe setters refuse (`..`, absolute paths).
pub struct RawTar {
    bytes: Vec<u8>,
}

impl RawTar {
    pub fn new() -> Self {
        Self { bytes: Vec::new() }
    }

    fn header(name: &str, kind: tar::EntryType, size: u64, link: &str) -> tar::Header {
        let mut header = tar::Header::new_ustar();
        let ustar = header.as_ustar_mut().unwrap();
        ustar.name[..name.len()].copy_from_slice(name.as_bytes());
        ustar.linkname[..link.len()].copy_from_slice(link.as_bytes());
        header.set_entry_type(kind);
        header.set_size(size);
        header.set_mode(if kind == tar::EntryType::Directory {
            0o755
        } else {
            0o644
        });
        header.set_mtime(OLD_TIME as u64);
        header.set_cksum();
        header
    }

    pub fn file(mut self, name: &str, content: &str) -> Self {
        let header = Self::header(name, tar::EntryType::Regular, content.len() as u64, "");
        self.bytes.extend_from_slice(header.as_bytes());
        self.bytes.extend_from_slice(content.as_bytes());
        self.bytes.resize(self.bytes.len().div_ceil(512) * 512, 0);
        self
    }

    pub fn directory(mut self, name: &str) -> Self {
        let header = Self::header(name, tar::EntryType::Directory, 0, "");
        self.bytes.extend_from_slice(header.as_bytes());
        self
    }

    pub fn symlink(mut self, name: &str, target: &str) -> Self {
        let header = Self::header(name, tar::EntryType::Symlink, 0, target);
        self.bytes.extend_from_slice(header.as_bytes());
        self
    }

    pub fn hardlink(mut self, name: &str, target: &str) -> Self {
        let header = Self::header(name, tar::EntryType::Link, 0, target);
        self.bytes.extend_from_slice(header.as_bytes());
        self
    }

    pub fn finish(mut self) -> Vec<u8> {
        self.bytes.extend_from_slice(&[0; 1024]);
        self.bytes
    }
}

/// Names, types, link targets and owners of a tar stream, one line per entry.
pub fn tar_listing(bytes: &[u8]) -> Vec<String> {
    let mut archive = tar::Archive::new(bytes);
    archive
        .entries()
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let header = entry.header();
            let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
            let link = entry
                .link_name_bytes()
                .map(|link| format!(" -> {}", String::from_utf8_lossy(&link)))
                .unwrap_or_default();
            format!(
                "{name} {} {:o} {}:{}{link}",
                header.entry_type().as_byte() as char,
                header.mode().unwrap(),
                header.uid().unwrap(),
                header.gid().unwrap()
            )
        })
        .collect()
}
