//! Builds layer dirs and upper dirs by hand, mounts overlays in a private mount namespace
//! and describes trees for comparison. Needs root (mknod, chown, `trusted.*` xattrs,
//! mounts).

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use nix::mount::{mount, umount2, MntFlags, MsFlags};
use nix::sys::stat::{Mode, SFlag};
use tar::{EntryType, Header};

use crate::changes::{Change, ChangeKind};
use crate::unpack::{unpack_layer, UnpackOutcome};

/// Layer mtimes, whole seconds as tar keeps them.
pub const MTIME: u64 = 1_700_000_000;

pub fn is_root() -> bool {
    let root = nix::unistd::Uid::effective().is_root();
    if !root {
        eprintln!("skipping: changes tests need root (mknod, trusted.* xattrs, mounts)");
    }
    root
}

/// A layer tar, built entry by entry.
pub struct LayerTar {
    builder: tar::Builder<Vec<u8>>,
}

impl LayerTar {
    pub fn new() -> Self {
        Self {
            builder: tar::Builder::new(Vec::new()),
        }
    }

    fn append(&mut self, entry_type: EntryType, path: &str, mode: u32, data: &[u8]) -> &mut Self {
        let mut header = Header::new_gnu();
        header.set_entry_type(entry_type);
        header.set_mode(mode);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(MTIME);
        header.set_size(data.len() as u64);
        self.builder.append_data(&mut header, path, data).unwrap();
        self
    }

    pub fn dir(&mut self, path: &str) -> &mut Self {
        self.append(EntryType::Directory, path, 0o755, b"")
    }

    pub fn file(&mut self, path: &str, data: &str) -> &mut Self {
        self.append(EntryType::Regular, path, 0o644, data.as_bytes())
    }

    pub fn symlink(&mut self, path: &str, target: &str) -> &mut Self {
        let mut header = Header::new_gnu();
        header.set_entry_type(EntryType::Symlink);
        header.set_mode(0o777);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(MTIME);
        header.set_size(0);
        self.builder.append_link(&mut header, path, target).unwrap();
        self
    }

    /// Unpacks into a new directory under `parent` with the crate's unpacker, so that the
    /// layer is in the very form berth stores.
    pub fn unpack_into(&mut self, parent: &Path, name: &str) -> PathBuf {
        let bytes = std::mem::replace(&mut self.builder, tar::Builder::new(Vec::new()))
            .into_inner()
            .unwrap();
        let dir = parent.join(name);
        make_dir(&dir);
        unpack_layer(bytes.as_slice(), &dir).unwrap();
        dir
    }
}

pub fn make_dir(path: &Path) {
    fs_err::create_dir(path).unwrap();
    set_mode(path, 0o755);
}

pub fn set_mode(path: &Path, mode: u32) {
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Sets the mtime (and atime) without following a symlink.
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

/// Hand-built layer or upper dirs, in overlayfs form.
pub struct Tree {
    pub root: PathBuf,
}

impl Tree {
    pub fn new(parent: &Path, name: &str) -> Self {
        let root = parent.join(name);
        make_dir(&root);
        Self { root }
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    pub fn dir(&self, relative: &str) -> &Self {
        let path = self.path(relative);
        make_dir(&path);
        set_mtime(&path, MTIME as i64, 0);
        self
    }

    pub fn file(&self, relative: &str, data: &str) -> &Self {
        let path = self.path(relative);
        fs_err::write(&path, data).unwrap();
        set_mode(&path, 0o644);
        set_mtime(&path, MTIME as i64, 0);
        self
    }

    pub fn symlink(&self, relative: &str, target: &str) -> &Self {
        let path = self.path(relative);
        fs_err::os::unix::fs::symlink(target, &path).unwrap();
        set_mtime(&path, MTIME as i64, 0);
        self
    }

    /// An overlayfs whiteout: a 0:0 character device.
    pub fn whiteout(&self, relative: &str) -> &Self {
        mknod(&self.path(relative), SFlag::S_IFCHR, 0o000, 0);
        self
    }

    pub fn opaque(&self, relative: &str) -> &Self {
        xattr::set(self.path(relative), "trusted.overlay.opaque", b"y").unwrap();
        self
    }
}

pub fn mknod(path: &Path, kind: SFlag, mode: u32, device: u64) {
    nix::sys::stat::mknod(path, kind, Mode::from_bits_truncate(mode), device).unwrap();
    set_mode(path, mode);
}

/// Runs `body` on a new thread in its own mount namespace, with every mount private, so
/// that nothing it mounts is seen outside or outlives it (even when it panics).
pub fn in_mount_namespace<T: Send>(body: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                // unshare(CLONE_NEWNS) is allowed in a thread: it takes a private copy of
                // the thread's file system context along with the new namespace.
                nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS).unwrap();
                mount(
                    None::<&str>,
                    "/",
                    None::<&str>,
                    MsFlags::MS_REC | MsFlags::MS_PRIVATE,
                    None::<&str>,
                )
                .unwrap();
                body()
            })
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// An overlay mount, unmounted on drop. `lowers` are top layer first, as in `lowerdir=`.
/// Options as berth's runtime mounts, with `redirect_dir=off` spelled out so the test does
/// not depend on the kernel's configured default.
pub struct Overlay {
    pub merged: PathBuf,
}

impl Overlay {
    pub fn mount(merged: &Path, lowers: &[&Path], upper: Option<(&Path, &Path)>) -> Self {
        make_dir(merged);
        let lowers: Vec<String> = lowers
            .iter()
            .map(|lower| lower.display().to_string())
            .collect();
        let mut options = format!("lowerdir={},redirect_dir=off", lowers.join(":"));
        if let Some((upper, work)) = upper {
            options.push_str(&format!(
                ",upperdir={},workdir={}",
                upper.display(),
                work.display()
            ));
        }
        let flags = if upper.is_some() {
            MsFlags::empty()
        } else {
            MsFlags::MS_RDONLY
        };
        mount(
            Some("overlay"),
            merged,
            Some("overlay"),
            flags,
            Some(options.as_str()),
        )
        .unwrap_or_else(|errno| panic!("mount overlay {options}: {errno}"));
        Self {
            merged: merged.to_owned(),
        }
    }
}

impl Drop for Overlay {
    fn drop(&mut self) {
        if let Err(errno) = umount2(&self.merged, MntFlags::empty()) {
            eprintln!("failed to unmount {:?}: {errno}", self.merged);
        }
    }
}

/// What a tree holds at one path, as far as an image cares. Times are whole seconds:
/// layers keep no more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub kind: char,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub mtime: i64,
    /// File size and content digest, symlink target or device number.
    pub content: String,
    pub xattrs: Vec<(String, Vec<u8>)>,
    /// For a further name of an inode, its first name in walk order.
    pub link_to: Option<String>,
}

/// Describes every entry below `root` (not `root` itself), by relative path.
pub fn snapshot(root: &Path) -> BTreeMap<String, Node> {
    let mut nodes = BTreeMap::new();
    let mut first_names = BTreeMap::new();
    snapshot_into(root, "", &mut nodes, &mut first_names);
    nodes
}

fn snapshot_into(
    dir: &Path,
    prefix: &str,
    nodes: &mut BTreeMap<String, Node>,
    first_names: &mut BTreeMap<(u64, u64), String>,
) {
    let mut names: Vec<_> = fs_err::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    names.sort_by(|left, right| left.as_bytes().cmp(right.as_bytes()));
    for name in names {
        let path = dir.join(&name);
        let relative = format!("{prefix}{}", name.to_string_lossy());
        let metadata = fs_err::symlink_metadata(&path).unwrap();
        let file_type = SFlag::from_bits_truncate(metadata.mode()) & SFlag::S_IFMT;
        let (kind, content) = match file_type {
            SFlag::S_IFDIR => ('d', String::new()),
            SFlag::S_IFREG => {
                let mut bytes = Vec::new();
                fs_err::File::open(&path)
                    .unwrap()
                    .read_to_end(&mut bytes)
                    .unwrap();
                (
                    'f',
                    format!("{} {}", bytes.len(), berth_types::Digest::of_bytes(&bytes)),
                )
            }
            SFlag::S_IFLNK => {
                let target = fs_err::read_link(&path).unwrap();
                ('l', target.to_string_lossy().into_owned())
            }
            SFlag::S_IFCHR => ('c', device(metadata.rdev())),
            SFlag::S_IFBLK => ('b', device(metadata.rdev())),
            SFlag::S_IFIFO => ('p', String::new()),
            _ => ('s', String::new()),
        };
        let link_to = if kind != 'd' && metadata.nlink() > 1 {
            let key = (metadata.dev(), metadata.ino());
            match first_names.get(&key) {
                Some(first) => Some(first.clone()),
                None => {
                    first_names.insert(key, relative.clone());
                    None
                }
            }
        } else {
            None
        };
        let mut xattrs: Vec<(String, Vec<u8>)> = xattr::list(&path)
            .unwrap()
            .filter_map(|key| {
                let value = xattr::get(&path, &key).unwrap()?;
                Some((key.to_string_lossy().into_owned(), value))
            })
            .collect();
        xattrs.sort();
        nodes.insert(
            relative.clone(),
            Node {
                kind,
                mode: metadata.mode() & 0o7777,
                uid: metadata.uid(),
                gid: metadata.gid(),
                mtime: metadata.mtime(),
                content,
                xattrs,
                link_to,
            },
        );
        if kind == 'd' {
            snapshot_into(&path, &format!("{relative}/"), nodes, first_names);
        }
    }
}

fn device(rdev: u64) -> String {
    format!(
        "{}:{}",
        nix::sys::stat::major(rdev),
        nix::sys::stat::minor(rdev)
    )
}

/// Asserts two snapshots are equal, naming the first paths that differ.
pub fn assert_same_tree(expected: &BTreeMap<String, Node>, actual: &BTreeMap<String, Node>) {
    let mut problems = Vec::new();
    for (path, node) in expected {
        match actual.get(path) {
            None => problems.push(format!("missing {path}: {node:?}")),
            Some(other) if other != node => problems.push(format!(
                "differs {path}:\n  expected {node:?}\n  actual   {other:?}"
            )),
            Some(_) => {}
        }
    }
    for (path, node) in actual {
        if !expected.contains_key(path) {
            problems.push(format!("unexpected {path}: {node:?}"));
        }
    }
    assert!(
        problems.is_empty(),
        "trees differ:\n{}",
        problems.join("\n")
    );
}

/// `docker diff`'s lines for a change list.
pub fn lines(changes: &[Change]) -> Vec<String> {
    changes.iter().map(ToString::to_string).collect()
}

/// A change list from `docker diff`-style lines.
pub fn parse_lines(text: &str) -> Vec<Change> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(|line| {
            let (letter, path) = line.split_once(' ').unwrap();
            let kind = match letter {
                "C" => ChangeKind::Modified,
                "A" => ChangeKind::Added,
                "D" => ChangeKind::Deleted,
                other => panic!("unknown change letter {other}"),
            };
            Change {
                kind,
                path: path.to_owned(),
            }
        })
        .collect()
}

/// A tar's entries as `tar -tv` shows the parts that matter: type letter and name, with
/// ` -> target` for links.
pub fn tar_listing(bytes: &[u8]) -> Vec<String> {
    let mut archive = tar::Archive::new(bytes);
    archive
        .entries()
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let header = entry.header();
            let letter = match header.entry_type() {
                EntryType::Directory => 'd',
                EntryType::Regular => '-',
                EntryType::Symlink => 'l',
                EntryType::Link => 'h',
                EntryType::Char => 'c',
                EntryType::Block => 'b',
                EntryType::Fifo => 'p',
                other => panic!("unexpected entry type {other:?}"),
            };
            let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
            match entry.link_name_bytes() {
                Some(target) => format!("{letter} {name} -> {}", String::from_utf8_lossy(&target)),
                None => format!("{letter} {name}"),
            }
        })
        .collect()
}

/// `touch`: mtime and atime to now, without following a symlink.
pub fn touch(path: &Path) {
    let now = nix::sys::time::TimeSpec::UTIME_NOW;
    nix::sys::stat::utimensat(
        None,
        path,
        &now,
        &now,
        nix::sys::stat::UtimensatFlags::NoFollowSymlink,
    )
    .unwrap();
}

/// The raw bytes of a name, for non-UTF-8 tests.
pub fn os_name(bytes: &[u8]) -> &OsStr {
    OsStr::from_bytes(bytes)
}

/// The unpacker's outcome, for comparing digests.
pub fn unpack_tar(bytes: &[u8], destination: &Path) -> UnpackOutcome {
    unpack_layer(bytes, destination).unwrap()
}
