//! What a copy keeps: modes, times, hardlinks, special files, the capability xattr.

use std::fs;
use std::os::fd::AsFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use super::support::*;
use crate::copy::sys;
use crate::copy::{copy_container_to_host, copy_host_to_container, copy_stream_to_container};

/// A `vfs_cap_data` of revision 2 granting CAP_NET_RAW (bit 13), as `setcap
/// cap_net_raw+ep` writes it.
fn capability() -> Vec<u8> {
    // magic_etc: VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE
    let mut value = 0x0200_0001u32.to_le_bytes().to_vec();
    for word in [0x2000u32, 0, 0, 0] {
        // permitted[0], inheritable[0], permitted[1], inheritable[1]
        value.extend_from_slice(&word.to_le_bytes());
    }
    value
}

fn set_xattr(path: &std::path::Path, name: &str, value: &[u8]) {
    let file = fs_err::File::open(path).unwrap();
    sys::set_xattr(file.as_fd(), name.as_bytes(), value).unwrap();
}

fn get_xattr(path: &std::path::Path, name: &str) -> Option<Vec<u8>> {
    let file = fs_err::File::open(path).unwrap();
    sys::get_xattr(file.as_fd(), name).unwrap()
}

#[test]
fn capability_xattr_is_carried_and_others_are_not() {
    // Docker's tar writer reads only security.capability (ReadSecurityXattrToTarHeader).
    let fixture = Fixture::new();
    let file = fixture.inside("/src/file");
    set_xattr(&file, "security.capability", &capability());
    set_xattr(&file, "user.note", b"dropped");
    let out = fixture.host.join("out");
    copy_container_to_host(&fixture.container(), "/src/file", &out, false, false).unwrap();
    assert_eq!(get_xattr(&out, "security.capability"), Some(capability()));
    assert_eq!(get_xattr(&out, "user.note"), None);

    // Through a tar stream the same way.
    let mut tar = Vec::new();
    crate::copy::archive_from_container(&fixture.container(), "/src/file", false, &mut tar)
        .unwrap();
    copy_stream_to_container(&fixture.container(), &tar[..], "/dst/existdir", false).unwrap();
    assert_eq!(
        get_xattr(&fixture.inside("/dst/existdir/file"), "security.capability"),
        Some(capability())
    );
}

#[test]
fn modes_times_and_directory_times_survive() {
    let fixture = Fixture::new();
    let tree = fixture.inside("/src/tree");
    write(&tree.join("sticky/file"), "x", 0o600);
    fs_err::set_permissions(tree.join("sticky"), fs::Permissions::from_mode(0o1777)).unwrap();
    write(&tree.join("setgid"), "x", 0o2711);
    set_mtime(&tree.join("setgid"), OLD_TIME + 1, 999);
    set_mtime(&tree.join("sticky"), OLD_TIME + 2, 0);
    set_mtime(&tree, OLD_TIME + 3, 0);
    let out = fixture.host.join("out");
    copy_container_to_host(&fixture.container(), "/src/tree", &out, false, false).unwrap();
    let mode = |path: &str| fs_err::symlink_metadata(out.join(path)).unwrap().mode() & 0o7777;
    assert_eq!(mode("sticky"), 0o1777);
    assert_eq!(mode("sticky/file"), 0o600);
    assert_eq!(mode("setgid"), 0o2711);
    assert_eq!(mtime(&out.join("setgid")), (OLD_TIME + 1, 0));
    // Directory times are set after their contents are written.
    assert_eq!(mtime(&out.join("sticky")), (OLD_TIME + 2, 0));
    assert_eq!(mtime(&out), (OLD_TIME + 3, 0));
    let metadata = fs_err::metadata(out.join("setgid")).unwrap();
    assert_eq!(
        metadata.atime(),
        metadata.mtime(),
        "atime is set to the mtime"
    );
}

#[test]
fn existing_directories_are_merged_and_take_the_new_metadata() {
    let fixture = Fixture::new();
    write(&fixture.inside("/dst/existdir/dir/keep"), "kept", 0o644);
    fs_err::set_permissions(
        fixture.inside("/dst/existdir/dir"),
        fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    copy_host_to_container(
        &fixture.container(),
        &fixture.source.join("dir"),
        "/dst/existdir",
        false,
        false,
    )
    .unwrap();
    let merged = fixture.inside("/dst/existdir/dir");
    assert_eq!(fs_err::read_to_string(merged.join("keep")).unwrap(), "kept");
    assert_eq!(fs_err::read_to_string(merged.join("a")).unwrap(), "inner\n");
    assert_eq!(fs_err::metadata(&merged).unwrap().mode() & 0o7777, 0o755);
}

#[test]
fn hardlinks_within_the_copy_only() {
    let fixture = Fixture::new();
    // A file linked from outside the copied tree is copied as a plain file.
    fs_err::hard_link(
        fixture.inside("/src/file"),
        fixture.inside("/src/dir/sub/linked-out"),
    )
    .unwrap();
    let out = fixture.host.join("out");
    copy_container_to_host(&fixture.container(), "/src/dir", &out, false, false).unwrap();
    assert_eq!(
        fs_err::read_to_string(out.join("sub/linked-out")).unwrap(),
        "hello\n"
    );
    assert_eq!(
        fs_err::metadata(out.join("sub/linked-out"))
            .unwrap()
            .nlink(),
        1
    );
    assert_eq!(fs_err::metadata(out.join("a")).unwrap().nlink(), 2);
}

#[test]
fn special_files_are_copied_and_sockets_skipped() {
    let fixture = Fixture::new();
    let tree = fixture.inside("/src/special");
    fs_err::create_dir(&tree).unwrap();
    nix::unistd::mkfifo(
        &tree.join("fifo"),
        nix::sys::stat::Mode::from_bits_truncate(0o640),
    )
    .unwrap();
    nix::sys::stat::mknod(
        &tree.join("null"),
        nix::sys::stat::SFlag::S_IFCHR,
        nix::sys::stat::Mode::from_bits_truncate(0o666),
        nix::sys::stat::makedev(1, 3),
    )
    .unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(tree.join("socket")).unwrap();
    let out = fixture.host.join("out");
    copy_container_to_host(&fixture.container(), "/src/special", &out, false, false).unwrap();
    use std::os::unix::fs::FileTypeExt;
    let kind = |name: &str| {
        fs_err::symlink_metadata(out.join(name))
            .unwrap()
            .file_type()
    };
    assert!(kind("fifo").is_fifo());
    assert_eq!(
        fs_err::symlink_metadata(out.join("fifo")).unwrap().mode() & 0o7777,
        0o640
    );
    assert!(kind("null").is_char_device());
    assert_eq!(
        fs_err::symlink_metadata(out.join("null")).unwrap().rdev(),
        nix::sys::stat::makedev(1, 3)
    );
    assert!(!out.join("socket").exists());
}

#[test]
fn big_file_copies_in_the_kernel() {
    let fixture = Fixture::new();
    let content: Vec<u8> = (0..5_000_003u32).map(|index| (index % 253) as u8).collect();
    fs_err::write(fixture.inside("/src/big"), &content).unwrap();
    let out = fixture.host.join("big");
    let report =
        copy_container_to_host(&fixture.container(), "/src/big", &out, false, false).unwrap();
    assert_eq!(report.size, content.len() as u64);
    assert_eq!(fs_err::read(&out).unwrap(), content);
    let back =
        copy_host_to_container(&fixture.container(), &out, "/dst/big", false, false).unwrap();
    assert_eq!(back.size, content.len() as u64);
    assert_eq!(fs_err::read(fixture.inside("/dst/big")).unwrap(), content);
}
