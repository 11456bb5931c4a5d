//! OCI whiteouts become overlayfs whiteouts.

use std::os::unix::fs::{FileTypeExt, MetadataExt};

use tar::EntryType;

use super::support::{is_root, unpack, Layer};
use crate::unpack::UnpackError;

fn assert_overlay_whiteout(metadata: &std::fs::Metadata) {
    assert!(metadata.file_type().is_char_device());
    assert_eq!(metadata.rdev(), 0, "overlayfs whiteouts are device 0:0");
}

#[test]
fn file_whiteout_becomes_a_character_device() {
    if !is_root() {
        return;
    }
    let mut layer = Layer::new();
    let mut whiteout = Layer::header(EntryType::Regular, 0o644);
    whiteout.set_uid(11);
    whiteout.set_gid(12);
    layer
        .dir("etc", 0o755)
        .raw(whiteout, b"etc/.wh.passwd", b"", b"")
        .file(".wh.top", b"", 0o644);
    let unpacked = unpack(&layer.bytes());
    unpacked.outcome();

    let passwd = unpacked.metadata("etc/passwd");
    assert_overlay_whiteout(&passwd);
    assert_eq!((passwd.uid(), passwd.gid()), (11, 12));
    assert_overlay_whiteout(&unpacked.metadata("top"));
    assert!(!unpacked.exists("etc/.wh.passwd"));
    assert!(!unpacked.exists(".wh.top"));
}

#[test]
fn whiteout_replaces_what_the_layer_wrote_before_it() {
    if !is_root() {
        return;
    }
    let mut layer = Layer::new();
    layer
        .dir("gone", 0o755)
        .file("gone/child", b"x", 0o644)
        .file(".wh.gone", b"", 0o644);
    let unpacked = unpack(&layer.bytes());
    unpacked.outcome();
    assert_overlay_whiteout(&unpacked.metadata("gone"));
}

#[test]
fn opaque_marker_sets_the_overlay_xattr() {
    if !is_root() {
        return;
    }
    let mut layer = Layer::new();
    layer
        .dir("var", 0o755)
        .file("var/.wh..wh..opq", b"", 0o644)
        .file("var/new", b"n", 0o644)
        // The marker may come without its directory entry.
        .file("missing/dir/.wh..wh..opq", b"", 0o644);
    let unpacked = unpack(&layer.bytes());
    unpacked.outcome();
    let root = unpacked.root();
    for dir in ["var", "missing/dir"] {
        let value = xattr::get(root.join(dir), "trusted.overlay.opaque").unwrap();
        assert_eq!(value.as_deref(), Some(&b"y"[..]), "{dir}");
        assert!(!unpacked.exists(&format!("{dir}/.wh..wh..opq")));
    }
    assert!(unpacked.exists("var/new"));
    assert!(unpacked.metadata("missing/dir").is_dir());
}

#[test]
fn other_whiteout_meta_names_are_refused() {
    if !is_root() {
        return;
    }
    for name in [".wh..wh.plnk", "a/.wh..wh.aufs", ".wh..wh.plnk/1.2"] {
        let mut layer = Layer::new();
        layer.file(name, b"", 0o644);
        let unpacked = unpack(&layer.bytes());
        assert!(
            matches!(
                unpacked.error(),
                UnpackError::UnsupportedWhiteoutMeta { .. }
            ),
            "{name}: {:?}",
            unpacked.error()
        );
    }
    for name in ["a/.wh.", "a/.wh..", ".wh.dir/file"] {
        let mut layer = Layer::new();
        layer.file(name, b"", 0o644);
        let unpacked = unpack(&layer.bytes());
        assert!(
            matches!(unpacked.error(), UnpackError::InvalidWhiteout { .. }),
            "{name}: {:?}",
            unpacked.error()
        );
    }
}
