//! Layers that try to write outside the destination, or are cut short or malformed.

use std::path::Path;

use tar::EntryType;
use tempfile::TempDir;

use super::support::{gzip, is_root, unpack, zstd, Layer};
use crate::unpack::{Compression, UnpackError};

macro_rules! assert_error {
    ($unpacked:expr, $pattern:pat) => {
        let unpacked = $unpacked;
        let error = unpacked.error();
        assert!(matches!(error, $pattern), "unexpected error: {error:?}");
    };
}

#[test]
fn parent_components_are_refused() {
    if !is_root() {
        return;
    }
    for name in [&b"../x"[..], b"a/../../x", b"./a/..", b".."] {
        let mut layer = Layer::new();
        layer.raw(Layer::header(EntryType::Regular, 0o644), name, b"", b"evil");
        let unpacked = unpack(&layer.bytes());
        assert_error!(unpacked, UnpackError::ParentComponent { .. });
    }
}

#[test]
fn absolute_paths_are_refused() {
    if !is_root() {
        return;
    }
    let host = TempDir::new().unwrap();
    let target = host.path().join("x");
    let mut layer = Layer::new();
    let name = target.to_str().unwrap().as_bytes();
    layer.raw(Layer::header(EntryType::Regular, 0o644), name, b"", b"evil");
    let unpacked = unpack(&layer.bytes());
    assert_error!(unpacked, UnpackError::AbsolutePath { .. });
    assert!(!target.exists());

    let mut layer = Layer::new();
    layer.raw(
        Layer::header(EntryType::Directory, 0o755),
        b"/etc/x",
        b"",
        b"",
    );
    assert_error!(unpack(&layer.bytes()), UnpackError::AbsolutePath { .. });
}

/// A symlink whose relative target climbs out of the destination.
#[test]
fn relative_symlink_escape_in_parent_is_refused() {
    if !is_root() {
        return;
    }
    let host = TempDir::new().unwrap();
    let climb = "../".repeat(Path::new(host.path()).components().count() + 2);
    let target = format!(
        "{climb}{}",
        host.path().to_str().unwrap().trim_start_matches('/')
    );
    let cases = [
        ("direct", target.as_str()),
        // Climbs step by step through a chain of links.
        ("chain", "up/.."),
    ];
    for (name, link) in cases {
        let mut layer = Layer::new();
        layer.symlink("up", "..").symlink(name, link);
        layer.file(&format!("{name}/planted"), b"evil", 0o644);
        let unpacked = unpack(&layer.bytes());
        assert_error!(&unpacked, UnpackError::SymlinkEscape { .. });
        assert!(!host.path().join("planted").exists());
    }
}

/// An absolute symlink in a parent resolves inside the destination, like a chroot.
#[test]
fn absolute_symlink_parent_stays_inside_the_destination() {
    if !is_root() {
        return;
    }
    let host = TempDir::new().unwrap();
    let host_path = host.path().to_str().unwrap();
    let mut layer = Layer::new();
    layer
        .symlink("escape", host_path)
        .file("escape/planted", b"contained", 0o644)
        .symlink("etc-link", "/etc")
        .hardlink("stolen", "etc-link/passwd");
    let unpacked = unpack(&layer.bytes());
    // The file landed inside; the hardlink through `/etc` found no `passwd` there, so it
    // was refused instead of linking the host's.
    assert_error!(&unpacked, UnpackError::HardlinkTargetMissing { .. });
    assert!(!host.path().join("planted").exists(), "host was written");
    let inside = unpacked
        .root()
        .join(host_path.trim_start_matches('/'))
        .join("planted");
    assert_eq!(fs_err::read(inside).unwrap(), b"contained");
    assert!(!unpacked.exists("stolen"));
}

#[test]
fn final_component_symlinks_are_replaced_not_followed() {
    if !is_root() {
        return;
    }
    let host = TempDir::new().unwrap();
    let host_file = host.path().join("file");
    fs_err::write(&host_file, b"host").unwrap();
    let mut layer = Layer::new();
    layer
        .symlink("f", host_file.to_str().unwrap())
        .file("f", b"layer", 0o777)
        .symlink("d", host.path().to_str().unwrap())
        .dir("d", 0o777)
        .symlink("n", host_file.to_str().unwrap());
    let mut fifo = Layer::header(EntryType::Fifo, 0o777);
    fifo.set_uid(99);
    layer.raw(fifo, b"n", b"", b"");
    let unpacked = unpack(&layer.bytes());
    unpacked.outcome();
    assert_eq!(fs_err::read(&host_file).unwrap(), b"host");
    let host_metadata = fs_err::metadata(host.path()).unwrap();
    assert_ne!(
        std::os::unix::fs::PermissionsExt::mode(&host_metadata.permissions()) & 0o777,
        0o777
    );
    assert!(unpacked.metadata("f").is_file());
    assert!(unpacked.metadata("d").is_dir());
}

#[test]
fn symlink_loops_and_file_parents_are_refused() {
    if !is_root() {
        return;
    }
    let mut layer = Layer::new();
    layer
        .symlink("a", "b")
        .symlink("b", "a")
        .file("a/x", b"", 0o644);
    assert_error!(unpack(&layer.bytes()), UnpackError::TooManySymlinks { .. });

    let mut layer = Layer::new();
    layer.file("plain", b"", 0o644).file("plain/x", b"", 0o644);
    assert_error!(
        unpack(&layer.bytes()),
        UnpackError::ParentNotDirectory { .. }
    );
}

#[test]
fn hardlinks_outside_or_to_nothing_are_refused() {
    if !is_root() {
        return;
    }
    let mut layer = Layer::new();
    layer.hardlink("passwd", "../../../../etc/passwd");
    assert_error!(unpack(&layer.bytes()), UnpackError::HardlinkEscape { .. });

    let mut layer = Layer::new();
    layer.hardlink("link", "nowhere");
    assert_error!(
        unpack(&layer.bytes()),
        UnpackError::HardlinkTargetMissing { .. }
    );

    let mut layer = Layer::new();
    layer.hardlink("link", "missing-dir/nowhere");
    assert_error!(
        unpack(&layer.bytes()),
        UnpackError::HardlinkTargetMissing { .. }
    );

    let mut layer = Layer::new();
    layer.dir("d", 0o755).hardlink("link", "d");
    assert_error!(
        unpack(&layer.bytes()),
        UnpackError::HardlinkToDirectory { .. }
    );
}

/// A tar with one 5000-byte file then a second entry: header 0..512, data 512..5512,
/// padding to 5632, second header 5632..6144.
fn two_entry_layer() -> Vec<u8> {
    let data: Vec<u8> = (0..5000u32).map(|index| (index * 7 % 251) as u8).collect();
    let mut layer = Layer::new();
    layer
        .file("big", &data, 0o644)
        .file("second", b"tail", 0o644);
    layer.bytes()
}

#[test]
fn truncated_plain_streams_are_refused() {
    if !is_root() {
        return;
    }
    let tar = two_entry_layer();
    for cut in [100, 512 + 1000, 5512 + 10, 5632 + 200, 5632 + 512 + 2] {
        let unpacked = unpack(&tar[..cut]);
        assert_error!(
            unpacked,
            UnpackError::Truncated {
                compression: Compression::None,
                ..
            }
        );
    }
}

#[test]
fn truncated_gzip_streams_are_refused() {
    if !is_root() {
        return;
    }
    let compressed = gzip(&two_entry_layer());
    let length = compressed.len();
    for cut in [5, 20, length / 2, length - 8, length - 1] {
        let unpacked = unpack(&compressed[..cut]);
        assert_error!(
            unpacked,
            UnpackError::Truncated {
                compression: Compression::Gzip,
                ..
            }
        );
    }
}

#[test]
fn truncated_zstd_streams_are_refused() {
    if !is_root() {
        return;
    }
    let compressed = zstd(&two_entry_layer());
    let length = compressed.len();
    for cut in [6, 20, length / 2, length - 4, length - 1] {
        let unpacked = unpack(&compressed[..cut]);
        assert_error!(
            unpacked,
            UnpackError::Truncated {
                compression: Compression::Zstd,
                ..
            }
        );
    }
}

#[test]
fn garbage_is_refused() {
    if !is_root() {
        return;
    }
    let noise: Vec<u8> = (0..4096u32)
        .map(|index| (index * 31 % 253) as u8 ^ 0x5a)
        .collect();
    assert_error!(unpack(&noise), UnpackError::MalformedArchive { .. });

    let mut bad_gzip = vec![0x1f, 0x8b];
    bad_gzip.extend(&noise);
    assert_error!(
        unpack(&bad_gzip),
        UnpackError::Decompress {
            compression: Compression::Gzip,
            ..
        }
    );

    let mut bad_zstd = vec![0x28, 0xb5, 0x2f, 0xfd];
    bad_zstd.extend(&noise);
    assert_error!(
        unpack(&bad_zstd),
        UnpackError::Decompress {
            compression: Compression::Zstd,
            ..
        }
    );

    // Valid gzip followed by junk that is not another gzip member.
    let mut trailing_junk = gzip(&two_entry_layer());
    trailing_junk.extend(&noise);
    assert_error!(
        unpack(&trailing_junk),
        UnpackError::Decompress {
            compression: Compression::Gzip,
            ..
        }
    );
}

/// tar 0.4 cannot frame a pax value holding a newline; such an entry is refused rather
/// than read with fields taken from the wrong bytes.
#[test]
fn pax_values_with_newlines_are_refused() {
    if !is_root() {
        return;
    }
    let mut layer = Layer::new();
    layer.pax(&[("SCHILY.xattr.user.x", b"a\n22 linkpath=/etc/evil\n")]);
    layer.symlink("link", "harmless");
    assert_error!(unpack(&layer.bytes()), UnpackError::MalformedPax { .. });
}
