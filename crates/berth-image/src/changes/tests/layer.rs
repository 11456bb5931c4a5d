//! `layer_from_upper` on upper dirs built by hand: the OCI form of overlayfs' markers, the
//! attributes kept, and a round trip through the unpacker.

use nix::sys::stat::{makedev, SFlag};
use std::collections::BTreeMap;
use tar::EntryType;
use tempfile::TempDir;

use super::diff_rules::CAPABILITY;
use super::support::{
    assert_same_tree, is_root, make_dir, mknod, set_mode, set_mtime, snapshot, tar_listing,
    unpack_tar, Node, Tree, MTIME,
};
use crate::changes::{layer_from_upper, ChangesError};

struct Header {
    entry_type: EntryType,
    mode: u32,
    uid: u64,
    gid: u64,
    mtime: u64,
    size: u64,
    xattrs: Vec<(String, Vec<u8>)>,
}

/// Every entry's header fields and pax xattrs, by name.
fn headers(bytes: &[u8]) -> BTreeMap<String, Header> {
    let mut archive = tar::Archive::new(bytes);
    let mut headers = BTreeMap::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let mut xattrs = Vec::new();
        if let Some(extensions) = entry.pax_extensions().unwrap() {
            for extension in extensions {
                let extension = extension.unwrap();
                let key = extension.key().unwrap();
                let name = key.strip_prefix("SCHILY.xattr.").unwrap();
                xattrs.push((name.to_owned(), extension.value_bytes().to_vec()));
            }
        }
        let header = entry.header();
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        headers.insert(
            name,
            Header {
                entry_type: header.entry_type(),
                mode: header.mode().unwrap(),
                uid: header.uid().unwrap(),
                gid: header.gid().unwrap(),
                mtime: header.mtime().unwrap(),
                size: header.size().unwrap(),
                xattrs,
            },
        );
    }
    headers
}

fn layer(upper: &Tree) -> Vec<u8> {
    let mut tar = Vec::new();
    layer_from_upper(&upper.root, &mut tar).unwrap();
    tar
}

#[test]
fn whiteouts_and_opaque_dirs_take_the_oci_form() {
    if !is_root() {
        return;
    }
    let temp = TempDir::new().unwrap();
    let upper = Tree::new(temp.path(), "upper");
    upper.whiteout("gone").dir("d").opaque("d").file("d/f", "f");
    fs_err::os::unix::fs::lchown(upper.path("gone"), Some(5), Some(6)).unwrap();
    set_mtime(&upper.path("gone"), MTIME as i64 + 7, 0);
    fs_err::os::unix::fs::lchown(upper.path("d"), Some(7), Some(8)).unwrap();
    set_mode(&upper.path("d"), 0o2750);
    xattr::set(upper.path("d"), "trusted.overlay.impure", b"y").unwrap();

    let tar = layer(&upper);
    assert_eq!(
        tar_listing(&tar),
        ["d d/", "- d/.wh..wh..opq", "- d/f", "- .wh.gone"]
    );
    let headers = headers(&tar);
    let whiteout = &headers[".wh.gone"];
    assert_eq!(whiteout.entry_type, EntryType::Regular);
    assert_eq!((whiteout.mode, whiteout.uid, whiteout.gid), (0o600, 5, 6));
    assert_eq!((whiteout.mtime, whiteout.size), (MTIME + 7, 0));
    let directory = &headers["d/"];
    assert_eq!(
        (directory.mode, directory.uid, directory.gid),
        (0o2750, 7, 8)
    );
    assert!(
        directory.xattrs.is_empty(),
        "overlayfs' own xattrs stay out"
    );
    let marker = &headers["d/.wh..wh..opq"];
    assert_eq!((marker.mode, marker.uid, marker.gid), (0o750, 7, 8));
    assert_eq!((marker.mtime, marker.size), (0, 0));
}

#[test]
fn shared_whiteout_inodes_are_not_hardlinks() {
    if !is_root() {
        return;
    }
    // overlayfs (Linux 5.8+) links every whiteout of an upper dir to one inode.
    let temp = TempDir::new().unwrap();
    let upper = Tree::new(temp.path(), "upper");
    upper.whiteout("a");
    fs_err::hard_link(upper.path("a"), upper.path("b")).unwrap();
    assert_eq!(tar_listing(&layer(&upper)), ["- .wh.a", "- .wh.b"]);
}

/// An upper dir with one of everything.
fn everything(upper: &Tree) {
    upper.dir("bin").file("bin/su", "elf");
    // chown clears setuid and capabilities, so it comes first.
    fs_err::os::unix::fs::lchown(upper.path("bin/su"), Some(1000), Some(100_000)).unwrap();
    set_mode(&upper.path("bin/su"), 0o4755);
    set_mtime(&upper.path("bin/su"), MTIME as i64, 999_999_999);
    xattr::set(upper.path("bin/su"), "user.origin", b"test").unwrap();
    xattr::set(upper.path("bin/su"), "security.capability", &CAPABILITY).unwrap();
    xattr::set(upper.path("bin/su"), "trusted.overlay.origin", b"\0handle").unwrap();
    upper.file("bin/sh", "busybox");
    fs_err::hard_link(upper.path("bin/sh"), upper.path("bin/ash")).unwrap();
    fs_err::hard_link(upper.path("bin/sh"), upper.path("bin/zsh")).unwrap();
    let long_directory = format!("bin/{}", "d".repeat(70));
    upper.dir(&long_directory);
    let long_file = format!("{long_directory}/{}", "f".repeat(70));
    upper.file(&long_file, "long");
    upper.symlink("bin/far", &format!("../{}", "t/".repeat(80)));
    upper.symlink("bin/odd", "a//b/.");
    upper.dir("dev");
    mknod(
        &upper.path("dev/null"),
        SFlag::S_IFCHR,
        0o666,
        makedev(1, 3),
    );
    mknod(
        &upper.path("dev/sda1"),
        SFlag::S_IFBLK,
        0o660,
        makedev(8, 1),
    );
    mknod(&upper.path("dev/fifo"), SFlag::S_IFIFO, 0o600, 0);
    fs_err::hard_link(upper.path("dev/fifo"), upper.path("dev/fifo2")).unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(upper.path("dev/socket")).unwrap();
    // Directory times last: creating entries moved them.
    for directory in ["bin", &long_directory, "dev"] {
        set_mtime(&upper.path(directory), MTIME as i64, 0);
    }
}

#[test]
fn attributes_survive_a_round_trip_through_the_unpacker() {
    if !is_root() {
        return;
    }
    let temp = TempDir::new().unwrap();
    let upper = Tree::new(temp.path(), "upper");
    everything(&upper);
    let mut tar = Vec::new();
    let outcome = layer_from_upper(&upper.root, &mut tar).unwrap();

    let listing = tar_listing(&tar);
    assert!(
        listing.contains(&"h bin/sh -> bin/ash".to_owned()),
        "{listing:#?}"
    );
    assert!(listing.contains(&"h bin/zsh -> bin/ash".to_owned()));
    assert!(listing.contains(&"h dev/fifo2 -> dev/fifo".to_owned()));
    assert!(listing.contains(&"l bin/odd -> a//b/.".to_owned()));
    assert!(!listing.iter().any(|line| line.contains("socket")));
    let headers = headers(&tar);
    let su = &headers["bin/su"];
    assert_eq!(
        (su.mode, su.uid, su.gid, su.mtime),
        (0o4755, 1000, 100_000, MTIME)
    );
    let xattr_names: Vec<&str> = su.xattrs.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(xattr_names, ["security.capability", "user.origin"]);
    // "elf" + "busybox" (once for three names) + "long", plus the two
    // symlinks' target lengths (Docker counts lstat sizes).
    assert_eq!(outcome.size, 3 + 7 + 4 + (3 + 160) + 6);

    let unpacked_dir = temp.path().join("unpacked");
    make_dir(&unpacked_dir);
    let unpacked = unpack_tar(&tar, &unpacked_dir);
    assert_eq!(unpacked.diff_id, outcome.diff_id);
    assert_eq!(unpacked.size, outcome.size);

    let mut expected = snapshot(&upper.root);
    expected.remove("dev/socket");
    for node in expected.values_mut() {
        node.xattrs
            .retain(|(name, _)| !name.starts_with("trusted.overlay."));
    }
    assert_same_tree(&expected, &snapshot(&unpacked_dir));
    assert_eq!(
        expected["bin/su"],
        Node {
            kind: 'f',
            mode: 0o4755,
            uid: 1000,
            gid: 100_000,
            mtime: MTIME as i64,
            content: format!("3 {}", berth_types::Digest::of_bytes(b"elf")),
            xattrs: vec![
                ("security.capability".to_owned(), CAPABILITY.to_vec()),
                ("user.origin".to_owned(), b"test".to_vec()),
            ],
            link_to: None,
        }
    );
}

#[test]
fn the_same_upper_dir_gives_the_same_bytes() {
    if !is_root() {
        return;
    }
    let temp = TempDir::new().unwrap();
    let upper = Tree::new(temp.path(), "upper");
    everything(&upper);
    let mut first = Vec::new();
    let outcome = layer_from_upper(&upper.root, &mut first).unwrap();
    let mut second = Vec::new();
    layer_from_upper(&upper.root, &mut second).unwrap();
    assert!(first == second);
    assert_eq!(outcome.diff_id, berth_types::Digest::of_bytes(&first));
    assert_eq!(outcome.tar_size, first.len() as u64);
    assert_eq!(first.len() % 512, 0);
    assert!(first.ends_with(&[0; 1024]));
}

#[test]
fn an_empty_upper_dir_is_an_empty_tar() {
    if !is_root() {
        return;
    }
    let temp = TempDir::new().unwrap();
    let upper = Tree::new(temp.path(), "upper");
    let tar = layer(&upper);
    assert_eq!(tar, vec![0; 1024]);
}

#[test]
fn metacopy_and_redirect_are_refused() {
    if !is_root() {
        return;
    }
    let temp = TempDir::new().unwrap();
    let upper = Tree::new(temp.path(), "upper");
    upper.file("meta", "");
    xattr::set(upper.path("meta"), "trusted.overlay.metacopy", b"").unwrap();
    let error = layer_from_upper(&upper.root, Vec::new()).unwrap_err();
    assert!(
        matches!(
            error,
            ChangesError::UnsupportedOverlayFeature {
                feature: "metacopy",
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().starts_with("failed to read "));

    let upper = Tree::new(temp.path(), "upper2");
    upper.dir("moved");
    xattr::set(upper.path("moved"), "trusted.overlay.redirect", b"/old").unwrap();
    let error = layer_from_upper(&upper.root, Vec::new()).unwrap_err();
    assert!(
        matches!(
            error,
            ChangesError::UnsupportedOverlayFeature {
                feature: "redirect_dir",
                ..
            }
        ),
        "{error:?}"
    );
}

#[test]
fn a_failing_writer_is_reported() {
    if !is_root() {
        return;
    }
    struct Broken;
    impl std::io::Write for Broken {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let temp = TempDir::new().unwrap();
    let upper = Tree::new(temp.path(), "upper");
    upper.file("f", "data");
    let error = layer_from_upper(&upper.root, Broken).unwrap_err();
    assert_eq!(error.to_string(), "failed to write tar entry \"f\"");
}
