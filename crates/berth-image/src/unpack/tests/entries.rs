//! Every entry type, with its attributes, and later entries replacing earlier ones.

use std::os::unix::fs::{FileTypeExt, MetadataExt};

use tar::EntryType;

use super::support::{is_root, unpack, Layer, MTIME};

#[test]
fn every_entry_type_keeps_its_attributes() {
    if !is_root() {
        return;
    }
    let mut layer = Layer::new();
    let mut dir = Layer::header(EntryType::Directory, 0o750);
    dir.set_uid(1000);
    dir.set_gid(1001);
    dir.set_mtime(1_500_000_000);
    layer.pax(&[("SCHILY.xattr.trusted.berth", b"dir-value")]);
    layer.raw(dir, b"./srv/", b"", b"");

    let mut setuid = Layer::header(EntryType::Regular, 0o4755);
    setuid.set_uid(1234);
    setuid.set_gid(5678);
    layer.pax(&[
        ("SCHILY.xattr.user.note", b"hello"),
        // cap_net_bind_service, permitted and effective (vfs_cap_data revision 2).
        (
            "SCHILY.xattr.security.capability",
            &[1, 0, 0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        ),
        ("mtime", b"1700000000.25"),
    ]);
    layer.raw(setuid, b"./srv/tool", b"", b"binary");
    layer.raw(
        Layer::header(EntryType::Regular, 0o2644),
        b"srv/setgid",
        b"",
        b"x",
    );
    layer.dir("tmp", 0o1777);

    let mut symlink = Layer::header(EntryType::Symlink, 0o777);
    symlink.set_uid(42);
    symlink.set_gid(43);
    symlink.set_mtime(1_400_000_000);
    layer.raw(symlink, b"srv/link", b"tool", b"");
    layer.hardlink("srv/hard", "srv/tool");

    let mut char_device = Layer::header(EntryType::Char, 0o666);
    char_device.set_device_major(1).unwrap();
    char_device.set_device_minor(3).unwrap();
    layer.raw(char_device, b"dev/null", b"", b"");
    let mut block_device = Layer::header(EntryType::Block, 0o660);
    block_device.set_device_major(7).unwrap();
    block_device.set_device_minor(260).unwrap();
    block_device.set_gid(6);
    layer.raw(block_device, b"dev/loop0", b"", b"");
    layer.raw(Layer::header(EntryType::Fifo, 0o620), b"run/fifo", b"", b"");

    let unpacked = unpack(&layer.bytes());
    let outcome = unpacked.outcome();
    // Regular file bytes plus symlink target lengths (lstat sizes), as Docker counts.
    assert_eq!(
        outcome.size,
        "binary".len() as u64 + 1 + "tool".len() as u64
    );

    let srv = unpacked.metadata("srv");
    assert!(srv.is_dir());
    assert_eq!(
        (srv.mode() & 0o7777, srv.uid(), srv.gid()),
        (0o750, 1000, 1001)
    );
    assert_eq!(
        srv.mtime(),
        1_500_000_000,
        "set after its children were written"
    );
    let root = unpacked.root();
    assert_eq!(
        xattr::get(root.join("srv"), "trusted.berth")
            .unwrap()
            .unwrap(),
        b"dir-value"
    );

    let tool = unpacked.metadata("srv/tool");
    assert!(tool.is_file());
    assert_eq!(
        (tool.mode() & 0o7777, tool.uid(), tool.gid()),
        (0o4755, 1234, 5678)
    );
    assert_eq!(
        (tool.mtime(), tool.mtime_nsec()),
        (1_700_000_000, 250_000_000)
    );
    assert_eq!(fs_err::read(root.join("srv/tool")).unwrap(), b"binary");
    assert_eq!(
        xattr::get(root.join("srv/tool"), "user.note")
            .unwrap()
            .unwrap(),
        b"hello"
    );
    let capability = xattr::get(root.join("srv/tool"), "security.capability").unwrap();
    assert_eq!(
        capability.unwrap(),
        [1, 0, 0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        "capability survives the chown"
    );
    assert_eq!(unpacked.mode("srv/setgid"), 0o2644);
    assert_eq!(unpacked.mode("tmp"), 0o1777);

    let link = unpacked.metadata("srv/link");
    assert!(link.file_type().is_symlink());
    assert_eq!(
        (link.uid(), link.gid(), link.mtime()),
        (42, 43, 1_400_000_000)
    );
    assert_eq!(
        fs_err::read_link(root.join("srv/link")).unwrap().to_str(),
        Some("tool")
    );

    let hard = unpacked.metadata("srv/hard");
    assert_eq!(hard.ino(), tool.ino());
    assert_eq!(hard.nlink(), 2);

    let null = unpacked.metadata("dev/null");
    assert!(null.file_type().is_char_device());
    assert_eq!(
        (
            nix::sys::stat::major(null.rdev()),
            nix::sys::stat::minor(null.rdev())
        ),
        (1, 3)
    );
    assert_eq!(null.mode() & 0o7777, 0o666);
    let loop0 = unpacked.metadata("dev/loop0");
    assert!(loop0.file_type().is_block_device());
    assert_eq!(
        (
            nix::sys::stat::major(loop0.rdev()),
            nix::sys::stat::minor(loop0.rdev())
        ),
        (7, 260)
    );
    assert_eq!((loop0.mode() & 0o7777, loop0.gid()), (0o660, 6));
    let fifo = unpacked.metadata("run/fifo");
    assert!(fifo.file_type().is_fifo());
    assert_eq!((fifo.mode() & 0o7777, fifo.mtime()), (0o620, MTIME as i64));
}

#[test]
fn missing_parents_are_created_root_owned_0755() {
    if !is_root() {
        return;
    }
    let mut layer = Layer::new();
    let mut file = Layer::header(EntryType::Regular, 0o600);
    file.set_uid(7);
    layer.raw(file, b"a/b/c/file", b"", b"data");
    let unpacked = unpack(&layer.bytes());
    unpacked.outcome();
    for dir in ["a", "a/b", "a/b/c"] {
        let metadata = unpacked.metadata(dir);
        assert_eq!(
            (metadata.mode() & 0o7777, metadata.uid()),
            (0o755, 0),
            "{dir}"
        );
    }
    assert_eq!(unpacked.metadata("a/b/c/file").uid(), 7);
}

#[test]
fn root_entry_sets_the_destination_attributes() {
    if !is_root() {
        return;
    }
    let mut layer = Layer::new();
    layer.dir("./", 0o700).file("./f", b"", 0o644);
    let unpacked = unpack(&layer.bytes());
    unpacked.outcome();
    assert_eq!(unpacked.mode("."), 0o700);
    assert_eq!(unpacked.metadata(".").mtime(), MTIME as i64);
}

#[test]
fn non_directory_cannot_stand_for_the_root() {
    if !is_root() {
        return;
    }
    let mut layer = Layer::new();
    layer.file("./", b"", 0o644);
    let unpacked = unpack(&layer.bytes());
    assert!(matches!(
        unpacked.error(),
        crate::unpack::UnpackError::ReplaceRoot { .. }
    ));
}

#[test]
fn later_entries_replace_earlier_ones() {
    if !is_root() {
        return;
    }
    let mut layer = Layer::new();
    // A file replaced by a directory.
    layer
        .file("x", b"old", 0o644)
        .dir("x", 0o711)
        .file("x/inner", b"1", 0o644);
    // A directory with contents replaced by a file.
    layer
        .dir("d", 0o755)
        .file("d/child", b"c", 0o644)
        .file("d", b"now a file", 0o600);
    // A directory over a directory merges and takes the new attributes.
    layer
        .dir("m", 0o755)
        .file("m/kept", b"k", 0o644)
        .dir("m", 0o700);
    // A file over a file, a symlink over a file.
    layer.file("f", b"first", 0o644).file("f", b"second", 0o640);
    layer.file("s", b"file", 0o644).symlink("s", "f");
    let unpacked = unpack(&layer.bytes());
    unpacked.outcome();
    let root = unpacked.root();

    assert!(unpacked.metadata("x").is_dir());
    assert_eq!(unpacked.mode("x"), 0o711);
    assert_eq!(fs_err::read(root.join("x/inner")).unwrap(), b"1");
    assert!(unpacked.metadata("d").is_file());
    assert_eq!(fs_err::read(root.join("d")).unwrap(), b"now a file");
    assert!(unpacked.metadata("m").is_dir());
    assert_eq!(unpacked.mode("m"), 0o700);
    assert!(unpacked.exists("m/kept"));
    assert_eq!(fs_err::read(root.join("f")).unwrap(), b"second");
    assert_eq!(unpacked.mode("f"), 0o640);
    assert!(unpacked.metadata("s").file_type().is_symlink());
}

#[test]
fn hardlinks_to_symlinks_link_the_symlink_and_relinks_are_harmless() {
    if !is_root() {
        return;
    }
    let mut layer = Layer::new();
    layer
        .file("target", b"t", 0o644)
        .symlink("sym", "target")
        .hardlink("hard-sym", "sym")
        .hardlink("again", "/target")
        .hardlink("again", "target")
        .hardlink("target", "target");
    let unpacked = unpack(&layer.bytes());
    unpacked.outcome();
    let sym = unpacked.metadata("sym");
    let hard = unpacked.metadata("hard-sym");
    assert!(hard.file_type().is_symlink());
    assert_eq!(hard.ino(), sym.ino());
    assert_eq!(
        unpacked.metadata("again").ino(),
        unpacked.metadata("target").ino()
    );
    assert_eq!(unpacked.metadata("target").nlink(), 2);
}

#[test]
fn symlinks_in_parents_are_followed_inside_the_destination() {
    if !is_root() {
        return;
    }
    let mut layer = Layer::new();
    layer
        .dir("real", 0o755)
        .symlink("rel", "real")
        .symlink("abs", "/real")
        .symlink("nested", "rel/../real/sub")
        .file("rel/a", b"a", 0o644)
        .file("abs/b", b"b", 0o644)
        .file("nested/c", b"c", 0o644);
    let unpacked = unpack(&layer.bytes());
    unpacked.outcome();
    let root = unpacked.root();
    assert_eq!(fs_err::read(root.join("real/a")).unwrap(), b"a");
    assert_eq!(fs_err::read(root.join("real/b")).unwrap(), b"b");
    assert_eq!(fs_err::read(root.join("real/sub/c")).unwrap(), b"c");
    assert!(unpacked.metadata("rel").file_type().is_symlink());
}

#[test]
fn replacing_a_symlink_parent_redirects_later_entries() {
    if !is_root() {
        return;
    }
    let mut layer = Layer::new();
    layer
        .dir("real", 0o755)
        .symlink("l", "real")
        .file("l/before", b"1", 0o644)
        .dir("l", 0o755)
        .file("l/after", b"2", 0o644);
    let unpacked = unpack(&layer.bytes());
    unpacked.outcome();
    assert!(unpacked.metadata("l").is_dir());
    assert!(unpacked.exists("real/before"));
    assert!(unpacked.exists("l/after"));
    assert!(!unpacked.exists("real/after"));
}

#[test]
fn overlay_xattrs_from_the_layer_are_ignored() {
    if !is_root() {
        return;
    }
    let mut layer = Layer::new();
    layer.pax(&[
        ("SCHILY.xattr.trusted.overlay.redirect", b"/elsewhere"),
        ("SCHILY.xattr.trusted.kept", b"1"),
    ]);
    layer.dir("d", 0o755);
    let unpacked = unpack(&layer.bytes());
    unpacked.outcome();
    let dir = unpacked.root().join("d");
    assert!(xattr::get(&dir, "trusted.overlay.redirect")
        .unwrap()
        .is_none());
    assert_eq!(xattr::get(&dir, "trusted.kept").unwrap().unwrap(), b"1");
}

#[test]
fn long_names_and_non_utf8_names_are_kept() {
    if !is_root() {
        return;
    }
    use std::os::unix::ffi::OsStrExt;
    let long = format!("deep/{}/{}", "d".repeat(120), "f".repeat(150));
    let mut layer = Layer::new();
    layer.append_data(Layer::header(EntryType::Regular, 0o644), &long, b"long");
    layer.raw(
        Layer::header(EntryType::Regular, 0o644),
        b"latin1-\xe9",
        b"",
        b"x",
    );
    let layer_bytes = layer.bytes();

    let unpacked = unpack(&layer_bytes);
    unpacked.outcome();
    assert_eq!(fs_err::read(unpacked.root().join(&long)).unwrap(), b"long");
    let name = std::ffi::OsStr::from_bytes(b"latin1-\xe9");
    assert!(unpacked.root().join(name).is_file());
}
