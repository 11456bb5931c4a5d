//! `export_rootfs` on a tree built by hand: everything is written as it is.

use nix::sys::stat::SFlag;
use tempfile::TempDir;

use super::support::{
    assert_same_tree, is_root, make_dir, mknod, snapshot, tar_listing, unpack_tar, Tree,
};
use crate::changes::{export_rootfs, ChangesError};

#[test]
fn a_plain_tree_is_written_as_it_is() {
    if !is_root() {
        return;
    }
    let temp = TempDir::new().unwrap();
    let root = Tree::new(temp.path(), "root");
    // Not an overlay: a 0:0 device is a device and `opaque` only an xattr here, and
    // overlayfs' xattrs still stay out of the stream.
    root.dir("dev")
        .whiteout("dev/zero")
        .dir("d")
        .opaque("d")
        .file("d/f", "f");
    mknod(&root.path("dev/fifo"), SFlag::S_IFIFO, 0o600, 0);
    root.symlink("link", "d/f");
    xattr::set(root.path("d/f"), "user.kept", b"1").unwrap();
    let mut tar = Vec::new();
    export_rootfs(&root.root, &mut tar).unwrap();
    assert_eq!(
        tar_listing(&tar),
        [
            "d d/",
            "- d/f",
            "d dev/",
            "p dev/fifo",
            "c dev/zero",
            "l link -> d/f"
        ]
    );

    let unpacked = temp.path().join("unpacked");
    make_dir(&unpacked);
    unpack_tar(&tar, &unpacked);
    let mut expected = snapshot(&root.root);
    for node in expected.values_mut() {
        node.xattrs
            .retain(|(name, _)| !name.starts_with("trusted.overlay."));
    }
    assert_eq!(
        expected["d/f"].xattrs,
        [("user.kept".to_owned(), b"1".to_vec())]
    );
    assert_same_tree(&expected, &snapshot(&unpacked));
}

#[test]
fn a_missing_root_is_named() {
    let temp = TempDir::new().unwrap();
    let missing = temp.path().join("missing");
    let error = export_rootfs(&missing, Vec::new()).unwrap_err();
    assert!(
        matches!(&error, ChangesError::OpenDirectory { path, .. } if *path == missing),
        "{error:?}"
    );
}
