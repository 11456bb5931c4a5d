//! The same file system operations as in a real Docker container, made here through a real
//! overlay mount; `changes`, `layer_from_upper` and `export_rootfs` must give what Docker
//! gave, and their tars must rebuild the tree.
//!
//! Docker 20.10.24 (overlay2, "Native Overlay Diff: true", Linux 6.18), with
//! `berth-changes:l2` built from busybox by two containers and `docker commit`:
//!
//! ```sh
//! # berth-changes:l1
//! mkdir -p /data/sub /old/deep /ren /etc
//! echo one > /etc/conf; echo keep > /etc/keep
//! echo a > /data/a; echo b > /data/b; echo c > /data/sub/c
//! echo x > /old/x; echo y > /old/deep/y
//! echo gone > /gone; echo mode > /mode; chmod 644 /mode
//! echo f > /ren/f; ln -s etc/conf /link; echo l > /layer2
//! # berth-changes:l2, from l1
//! echo two > /etc/conf; echo d > /data/sub/d; rm /old/deep/y; echo w > /l2file
//! ```
//!
//! then `docker run --name bc-ops berth-changes:l2 sh -c 'set -e; <OPERATIONS>'`, where
//! the operations are those of `operate` below, one for one; `docker diff bc-ops` gave
//! `DOCKER_DIFF` (in Go's random map order, sorted here by path), and `docker commit
//! bc-ops` + `docker save` gave a layer whose `tar -tv` is `DOCKER_LAYER`.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use nix::sys::stat::SFlag;
use tempfile::TempDir;

use super::support::{
    assert_same_tree, in_mount_namespace, is_root, lines, make_dir, mknod, parse_lines, set_mode,
    set_mtime, snapshot, tar_listing, touch, unpack_tar, LayerTar, Overlay,
};
use crate::changes::{changes, export_rootfs, layer_from_upper};

const DOCKER_DIFF: &str = "
A /chardev
C /data
C /data/a
D /data/sub
C /etc
C /etc/conf
A /etc/newlink
A /fifo
D /gone
A /hardlink
D /l2file
C /layer2
A /layer2/q
D /link
C /mode
A /newdir
A /newdir/inner
A /newdir/inner/f
A /newfile
C /old
D /old/deep
D /old/x
A /old/z
D /ren
A /renamed
A /renamed/f
";

/// `tar -tv` of Docker's committed layer: type, name, link target. Docker wrote the
/// later whiteouts with a stray link name (the shared whiteout inode caught by its
/// hardlink tracking, on regular-file entries where readers ignore it); berth writes none.
const DOCKER_LAYER: &str = "
c chardev
d data/
- data/a
- data/.wh.sub
d etc/
- etc/conf
- etc/keep
l etc/newlink -> /etc/conf
p fifo
- .wh.gone
- hardlink
- .wh.l2file
d layer2/
- layer2/.wh..wh..opq
- layer2/q
- .wh.link
- mode
d newdir/
d newdir/inner/
- newdir/inner/f
h newfile -> hardlink
d old/
- old/.wh..wh..opq
- old/z
- .wh.ren
d renamed/
- renamed/f
";

struct Layers {
    _temp: TempDir,
    root: PathBuf,
    /// Bottom layer first.
    lowers: Vec<PathBuf>,
}

fn image_layers() -> Layers {
    let temp = TempDir::new().unwrap();
    let root = temp.path().to_owned();
    let l1 = LayerTar::new()
        .dir("data")
        .dir("data/sub")
        .dir("old")
        .dir("old/deep")
        .dir("ren")
        .dir("etc")
        .file("etc/conf", "one\n")
        .file("etc/keep", "keep\n")
        .file("data/a", "a\n")
        .file("data/b", "b\n")
        .file("data/sub/c", "c\n")
        .file("old/x", "x\n")
        .file("old/deep/y", "y\n")
        .file("gone", "gone\n")
        .file("mode", "mode\n")
        .file("ren/f", "f\n")
        .symlink("link", "etc/conf")
        .file("layer2", "l\n")
        .unpack_into(&root, "l1");
    let l2 = LayerTar::new()
        .dir("etc")
        .file("etc/conf", "two\n")
        .dir("data")
        .dir("data/sub")
        .file("data/sub/d", "d\n")
        .dir("old")
        .dir("old/deep")
        .file("old/deep/.wh.y", "")
        .file("l2file", "w\n")
        .unpack_into(&root, "l2");
    Layers {
        _temp: temp,
        root,
        lowers: vec![l1, l2],
    }
}

/// What the container did, as host calls through the merged dir.
fn operate(merged: &Path) {
    let at = |relative: &str| merged.join(relative);
    // echo new > /newfile
    fs_err::write(at("newfile"), "new\n").unwrap();
    // mkdir -p /newdir/inner && echo x > /newdir/inner/f
    fs_err::create_dir_all(at("newdir/inner")).unwrap();
    fs_err::write(at("newdir/inner/f"), "x\n").unwrap();
    // echo changed >> /etc/conf
    let mut conf = fs_err::OpenOptions::new()
        .append(true)
        .open(at("etc/conf"))
        .unwrap();
    conf.write_all(b"changed\n").unwrap();
    drop(conf);
    // rm /gone
    fs_err::remove_file(at("gone")).unwrap();
    // rm -rf /data/sub
    fs_err::remove_dir_all(at("data/sub")).unwrap();
    // rm -rf /old && mkdir /old && echo z > /old/z
    fs_err::remove_dir_all(at("old")).unwrap();
    make_dir(&at("old"));
    fs_err::write(at("old/z"), "z\n").unwrap();
    // chmod 600 /mode
    set_mode(&at("mode"), 0o600);
    // mv /ren /renamed: without redirect_dir, overlayfs refuses to rename a directory
    // that comes from a lower layer, and mv falls back to copy and delete.
    let rename = fs_err::rename(at("ren"), at("renamed"));
    assert_eq!(
        rename.unwrap_err().kind(),
        std::io::ErrorKind::CrossesDevices, // EXDEV
        "renaming a lower directory must fail with EXDEV when redirect_dir is off"
    );
    copy_directory(&at("ren"), &at("renamed"));
    fs_err::remove_dir_all(at("ren")).unwrap();
    // touch /data/a
    touch(&at("data/a"));
    // true >> /etc/keep: copied up, nothing changed
    drop(
        fs_err::OpenOptions::new()
            .append(true)
            .open(at("etc/keep"))
            .unwrap(),
    );
    // touch /data/tmp && rm /data/tmp
    fs_err::write(at("data/tmp"), "").unwrap();
    fs_err::remove_file(at("data/tmp")).unwrap();
    // mkfifo /fifo
    mknod(&at("fifo"), SFlag::S_IFIFO, 0o644, 0);
    // ln /newfile /hardlink
    fs_err::hard_link(at("newfile"), at("hardlink")).unwrap();
    // ln -s /etc/conf /etc/newlink
    fs_err::os::unix::fs::symlink("/etc/conf", at("etc/newlink")).unwrap();
    // rm /link
    fs_err::remove_file(at("link")).unwrap();
    // rm /layer2 && mkdir /layer2 && touch /layer2/q
    fs_err::remove_file(at("layer2")).unwrap();
    make_dir(&at("layer2"));
    fs_err::write(at("layer2/q"), "").unwrap();
    // mknod /chardev c 1 3
    mknod(
        &at("chardev"),
        SFlag::S_IFCHR,
        0o644,
        nix::sys::stat::makedev(1, 3),
    );
    // rm /l2file
    fs_err::remove_file(at("l2file")).unwrap();
}

/// `cp -a` of a directory of regular files, as mv's fallback does.
fn copy_directory(from: &Path, to: &Path) {
    let metadata = fs_err::metadata(from).unwrap();
    make_dir(to);
    set_mode(to, metadata.permissions().mode());
    for entry in fs_err::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        fs_err::copy(entry.path(), &target).unwrap();
        let file = entry.metadata().unwrap();
        set_mtime(&target, file.mtime(), file.mtime_nsec());
    }
    set_mtime(to, metadata.mtime(), metadata.mtime_nsec());
}

/// The container's upper dir after `operate`, with its image layers.
fn container(operate: fn(&Path)) -> (Layers, PathBuf) {
    let layers = image_layers();
    let upper = layers.root.join("upper");
    let work = layers.root.join("work");
    make_dir(&upper);
    make_dir(&work);
    let merged = layers.root.join("merged");
    in_mount_namespace(|| {
        let lowers: Vec<&Path> = layers.lowers.iter().rev().map(PathBuf::as_path).collect();
        let overlay = Overlay::mount(&merged, &lowers, Some((&upper, &work)));
        operate(&overlay.merged);
    });
    (layers, upper)
}

#[test]
fn diff_matches_docker() {
    if !is_root() {
        return;
    }
    let (layers, upper) = container(operate);
    let found = changes(&upper, &layers.lowers).unwrap();
    assert_eq!(lines(&found), lines(&parse_lines(DOCKER_DIFF)));
}

#[test]
fn commit_layer_matches_docker_and_rebuilds_the_merged_tree() {
    if !is_root() {
        return;
    }
    let (layers, upper) = container(operate);
    let mut tar = Vec::new();
    let outcome = layer_from_upper(&upper, &mut tar).unwrap();
    let expected: Vec<&str> = DOCKER_LAYER
        .lines()
        .filter(|line| !line.is_empty())
        .collect();
    assert_eq!(tar_listing(&tar), expected);
    assert_eq!(outcome.tar_size, tar.len() as u64);
    assert_eq!(outcome.diff_id, berth_types::Digest::of_bytes(&tar));
    assert_commit_rebuilds(&layers, &upper, DOCKER_DIFF);
}

/// The committed layer, unpacked as berth stores layers, over the same lowers, shows the
/// same changes as the container did and the same merged tree as where the upper dir
/// stood as the top layer.
fn assert_commit_rebuilds(layers: &Layers, upper: &Path, docker_diff: &str) {
    let mut tar = Vec::new();
    let outcome = layer_from_upper(upper, &mut tar).unwrap();
    let committed = layers.root.join("committed");
    make_dir(&committed);
    let unpacked = unpack_tar(&tar, &committed);
    assert_eq!(unpacked.diff_id, outcome.diff_id);
    assert_eq!(unpacked.size, outcome.size);
    let found = changes(&committed, &layers.lowers).unwrap();
    assert_eq!(lines(&found), lines(&parse_lines(docker_diff)));

    let (container_view, image_view) = in_mount_namespace(|| {
        let [l1, l2] = [&layers.lowers[0], &layers.lowers[1]].map(PathBuf::as_path);
        let container = Overlay::mount(&layers.root.join("view-container"), &[upper, l2, l1], None);
        let image = Overlay::mount(&layers.root.join("view-image"), &[&committed, l2, l1], None);
        (snapshot(&container.merged), snapshot(&image.merged))
    });
    assert!(!container_view.keys().any(|path| path.contains(".wh.")));
    assert_same_tree(&container_view, &image_view);
}

#[test]
fn export_writes_the_merged_tree() {
    if !is_root() {
        return;
    }
    let (layers, upper) = container(operate);
    let exported = layers.root.join("exported");
    make_dir(&exported);
    let (view, tar) = in_mount_namespace(|| {
        let [l1, l2] = [&layers.lowers[0], &layers.lowers[1]].map(PathBuf::as_path);
        let merged = Overlay::mount(&layers.root.join("view"), &[&upper, l2, l1], None);
        let mut tar = Vec::new();
        export_rootfs(&merged.merged, &mut tar).unwrap();
        (snapshot(&merged.merged), tar)
    });
    // Every entry, in walk order, directories with a trailing slash, no root entry.
    let names: Vec<String> = tar_listing(&tar)
        .iter()
        .map(|line| {
            let name = &line[2..];
            name.split(" -> ").next().unwrap_or(name).to_owned()
        })
        .collect();
    let expected: Vec<String> = view
        .iter()
        .map(|(path, node)| match node.kind {
            'd' => format!("{path}/"),
            _ => path.clone(),
        })
        .collect();
    let mut sorted_names = names.clone();
    sorted_names.sort_by(|left, right| {
        left.trim_end_matches('/')
            .split('/')
            .cmp(right.trim_end_matches('/').split('/'))
    });
    assert_eq!(names, sorted_names, "depth first, names in byte order");
    let mut expected_sorted = expected;
    expected_sorted.sort_by(|left, right| {
        left.trim_end_matches('/')
            .split('/')
            .cmp(right.trim_end_matches('/').split('/'))
    });
    assert_eq!(names, expected_sorted);
    assert!(tar_listing(&tar).contains(&"h newfile -> hardlink".to_owned()));

    // Unpacked, the export is the merged tree.
    unpack_tar(&tar, &exported);
    assert_same_tree(&view, &snapshot(&exported));
}

/// `rm -rf /old && mkdir -p /old/deep; chmod 700 /data; chown 1:1 /etc/keep;
/// rm /etc/conf && ln -s keep /etc/conf` in Docker, from `berth-changes:l2`.
const DOCKER_DIFF_ATTRIBUTES: &str = "
C /data
C /etc
C /etc/conf
C /etc/keep
C /old
D /old/x
";

fn operate_attributes(merged: &Path) {
    let at = |relative: &str| merged.join(relative);
    fs_err::remove_dir_all(at("old")).unwrap();
    make_dir(&at("old"));
    make_dir(&at("old/deep"));
    set_mode(&at("data"), 0o700);
    nix::unistd::chown(
        &at("etc/keep"),
        Some(nix::unistd::Uid::from_raw(1)),
        Some(nix::unistd::Gid::from_raw(1)),
    )
    .unwrap();
    fs_err::remove_file(at("etc/conf")).unwrap();
    fs_err::os::unix::fs::symlink("keep", at("etc/conf")).unwrap();
}

#[test]
fn attribute_changes_match_docker() {
    if !is_root() {
        return;
    }
    let (layers, upper) = container(operate_attributes);
    let found = changes(&upper, &layers.lowers).unwrap();
    assert_eq!(lines(&found), lines(&parse_lines(DOCKER_DIFF_ATTRIBUTES)));
    assert_commit_rebuilds(&layers, &upper, DOCKER_DIFF_ATTRIBUTES);
}

/// `rm -rf /data && mkdir -p /data/sub && echo c > /data/sub/new; touch /x && rm /x;
/// mkdir /etc/more && rmdir /etc/more` in Docker, from `berth-changes:l2`. The new
/// `/data/sub` is not opaque itself, but below the opaque `/data` nothing of the lower
/// `/data/sub` shows; `/etc` was copied up for nothing.
const DOCKER_DIFF_OPAQUE_PARENT: &str = "
C /data
D /data/a
D /data/b
C /data/sub
D /data/sub/c
D /data/sub/d
A /data/sub/new
";

fn operate_opaque_parent(merged: &Path) {
    let at = |relative: &str| merged.join(relative);
    fs_err::remove_dir_all(at("data")).unwrap();
    make_dir(&at("data"));
    make_dir(&at("data/sub"));
    fs_err::write(at("data/sub/new"), "c\n").unwrap();
    fs_err::write(at("x"), "").unwrap();
    fs_err::remove_file(at("x")).unwrap();
    make_dir(&at("etc/more"));
    fs_err::remove_dir(at("etc/more")).unwrap();
}

#[test]
fn opaque_parent_matches_docker() {
    if !is_root() {
        return;
    }
    let (layers, upper) = container(operate_opaque_parent);
    assert!(upper.join("etc").is_dir(), "mkdir + rmdir copies /etc up");
    let found = changes(&upper, &layers.lowers).unwrap();
    assert_eq!(
        lines(&found),
        lines(&parse_lines(DOCKER_DIFF_OPAQUE_PARENT))
    );
    assert_commit_rebuilds(&layers, &upper, DOCKER_DIFF_OPAQUE_PARENT);
}
