//! `berth cp SRC CONTAINER:DEST`, one test per row of Docker's path rules. Every
//! expectation was observed with `docker cp` (CLI 28.2, engine 20.10) on the same layout
//! (see `support.rs`). Owners come from the host files, with or without `-a` (the source
//! `s/file` is 1234:5678 and lands as 1234:5678), unless `-a` and the container has a
//! configured user.
//!
//! One deliberate difference: Docker 20.10 loses the setuid bit of a hardlinked file
//! (it chowns the second link after chmod'ing the first); berth keeps it, as go-archive
//! does since it resolves hardlink targets properly.

use super::support::*;
use super::to_host::anyhow_chain;
use crate::copy::{copy_host_to_container, ContainerFs, CopyError};

fn copy(fixture: &Fixture, source: &str, destination: &str) -> Result<(), CopyError> {
    copy_with(fixture, source, destination, false, false)
}

fn copy_with(
    fixture: &Fixture,
    source: &str,
    destination: &str,
    follow_link: bool,
    copy_uid_gid: bool,
) -> Result<(), CopyError> {
    let source = fixture.source.join(source);
    copy_host_to_container(
        &fixture.container(),
        &source,
        destination,
        follow_link,
        copy_uid_gid,
    )
    .map(|_| ())
}

fn created(fixture: &Fixture) -> Vec<String> {
    new_files(&fixture.inside("/dst"), DST_FIXTURES)
}

fn file_line(at: &str) -> Vec<String> {
    vec![format!("{at} f 640 1234:5678 hello")]
}

#[test]
fn file_to_missing_path_creates_it() {
    let fixture = Fixture::new();
    copy(&fixture, "file", "/dst/new").unwrap();
    assert_eq!(created(&fixture), file_line("new"));
    // 04:05:06.5 on the host; the copy has whole seconds, as through Docker's tar.
    assert_eq!(mtime(&fixture.inside("/dst/new")), (OLD_TIME, 0));
}

#[test]
fn file_to_missing_path_with_trailing_slash_fails() {
    let fixture = Fixture::new();
    let error = copy(&fixture, "file", "/dst/new/").unwrap_err();
    assert_eq!(error.to_string(), "no such directory");
    // "existfile/" cannot be stat'ed (not a directory), so it counts as missing.
    let error = copy(&fixture, "file", "/dst/existfile/").unwrap_err();
    assert_eq!(error.to_string(), "no such directory");
    assert!(created(&fixture).is_empty());
}

#[test]
fn file_over_existing_file_replaces_it() {
    let fixture = Fixture::new();
    copy(&fixture, "file", "/dst/existfile").unwrap();
    assert_eq!(
        fs_err::read_to_string(fixture.inside("/dst/existfile")).unwrap(),
        "hello\n"
    );
}

#[test]
fn file_into_existing_directory_keeps_its_name() {
    for destination in ["/dst/existdir", "/dst/existdir/", "/dst/existdir/."] {
        let fixture = Fixture::new();
        copy(&fixture, "file", destination).unwrap();
        assert_eq!(
            created(&fixture),
            file_line("existdir/file"),
            "{destination}"
        );
    }
    let fixture = Fixture::new();
    copy(&fixture, "file", "/dst").unwrap();
    assert_eq!(created(&fixture), file_line("file"));
}

#[test]
fn relative_container_paths_start_at_the_root() {
    let fixture = Fixture::new();
    copy(&fixture, "file", "dst/rel").unwrap();
    assert_eq!(created(&fixture), file_line("rel"));
}

#[test]
fn file_into_missing_parent_is_not_found() {
    let fixture = Fixture::new();
    let error = copy(&fixture, "file", "/dst/nodir/x").unwrap_err();
    assert!(error.is_not_found());
    assert_eq!(
        error.to_string(),
        "Could not find the file /dst/nodir in container cpt"
    );
}

#[test]
fn file_under_existing_file_is_not_an_extraction_point() {
    let fixture = Fixture::new();
    let error = copy(&fixture, "file", "/dst/existfile/x").unwrap_err();
    assert_eq!(error.kind(), crate::ErrorKind::InvalidArgument);
    assert_eq!(error.to_string(), "extraction point is not a directory");
}

#[test]
fn directory_to_missing_path_creates_it_with_the_contents() {
    for destination in ["/dst/new", "/dst/new/"] {
        let fixture = Fixture::new();
        copy(&fixture, "dir", destination).unwrap();
        assert_eq!(
            created(&fixture),
            dir_lines("new", "1234:5678"),
            "{destination}"
        );
        assert_eq!(
            inode(&fixture.inside("/dst/new/a")),
            inode(&fixture.inside("/dst/new/hard"))
        );
    }
}

#[test]
fn directory_over_existing_file_fails() {
    for source in ["dir", "dir/."] {
        let fixture = Fixture::new();
        let error = copy(&fixture, source, "/dst/existfile").unwrap_err();
        assert_eq!(error.to_string(), "cannot copy directory");
    }
}

#[test]
fn directory_into_existing_directory_keeps_its_name() {
    for source in ["dir", "dir/"] {
        let fixture = Fixture::new();
        copy(&fixture, source, "/dst/existdir").unwrap();
        assert_eq!(
            created(&fixture),
            dir_lines("existdir/dir", "1234:5678"),
            "{source}"
        );
    }
}

#[test]
fn directory_contents_into_existing_directory() {
    let fixture = Fixture::new();
    copy(&fixture, "dir/.", "/dst/existdir").unwrap();
    let mut expected = dir_lines("existdir", "1234:5678");
    expected.retain(|line| line != "existdir d 755 0:0");
    assert_eq!(created(&fixture), expected);
}

#[test]
fn directory_contents_to_missing_path_creates_it() {
    let fixture = Fixture::new();
    copy(&fixture, "dir/.", "/dst/new").unwrap();
    assert_eq!(created(&fixture), dir_lines("new", "1234:5678"));
}

#[test]
fn missing_source_fails_on_the_host() {
    let fixture = Fixture::new();
    // Docker: "lstat /tmp/cpx/s/nope: no such file or directory"
    let error = copy(&fixture, "nope", "/dst/new").unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("lstat {}/nope", fixture.source.display())
    );
    assert!(anyhow_chain(&error).contains("No such file or directory"));
    // Docker: "not a directory"
    let error = copy(&fixture, "file/", "/dst/new").unwrap_err();
    assert_eq!(error.to_string(), "not a directory");
}

#[test]
fn symlinks_are_copied_as_symlinks() {
    let fixture = Fixture::new();
    copy(&fixture, "link", "/dst/new").unwrap();
    copy(&fixture, "link", "/dst/existdir").unwrap();
    copy(&fixture, "dirlink", "/dst/dirnew").unwrap();
    assert_eq!(
        created(&fixture),
        vec![
            "dirnew l 0 0:0 -> dir",
            "existdir/link l 0 0:0 -> file",
            "new l 0 0:0 -> file",
        ]
    );
}

#[test]
fn symlink_to_directory_with_trailing_slash_or_dot_copies_the_directory() {
    for source in ["dirlink/", "dirlink/."] {
        let fixture = Fixture::new();
        copy(&fixture, source, "/dst/new").unwrap();
        assert_eq!(created(&fixture), dir_lines("new", "1234:5678"), "{source}");
    }
}

#[test]
fn destination_symlinks_are_followed_inside_the_container() {
    let fixture = Fixture::new();
    copy(&fixture, "file", "/dst/dirsymlink").unwrap();
    copy(&fixture, "file", "/dst/filesymlink").unwrap();
    copy(&fixture, "file", "/dst/dangling").unwrap();
    assert_eq!(
        created(&fixture),
        vec![
            "existdir/file f 640 1234:5678 hello",
            "nowhere f 640 1234:5678 hello"
        ]
    );
    assert_eq!(
        fs_err::read_to_string(fixture.inside("/dst/existfile")).unwrap(),
        "hello\n"
    );
    fs_err::remove_file(fixture.inside("/dst/existdir/file")).unwrap();
    copy(&fixture, "file", "/dst/abssym").unwrap();
    assert!(fixture.inside("/dst/existdir/file").exists());
}

#[test]
fn directory_to_destination_symlinks() {
    let fixture = Fixture::new();
    copy(&fixture, "dir", "/dst/dirsymlink").unwrap();
    copy(&fixture, "dir", "/dst/dangling").unwrap();
    let mut expected = dir_lines("existdir/dir", "1234:5678");
    expected.extend(dir_lines("nowhere", "1234:5678"));
    expected.sort();
    assert_eq!(created(&fixture), expected);
    let error = copy(&fixture, "dir", "/dst/filesymlink").unwrap_err();
    assert_eq!(error.to_string(), "cannot copy directory");
}

#[test]
fn follow_link_copies_the_target_under_the_link_name() {
    let fixture = Fixture::new();
    copy_with(&fixture, "link", "/dst/new", true, false).unwrap();
    copy_with(&fixture, "abslink", "/dst/absnew", true, false).unwrap();
    copy_with(&fixture, "dirlink", "/dst/dirnew", true, false).unwrap();
    copy_with(&fixture, "dirlink", "/dst/existdir", true, false).unwrap();
    let mut expected = vec![
        "absnew f 640 1234:5678 hello".to_owned(),
        "new f 640 1234:5678 hello".to_owned(),
    ];
    expected.extend(dir_lines("dirnew", "1234:5678"));
    expected.extend(dir_lines("existdir/dirlink", "1234:5678"));
    expected.sort();
    assert_eq!(created(&fixture), expected);
}

#[test]
fn archive_flag_without_a_configured_user_keeps_the_owners() {
    let fixture = Fixture::new();
    copy_with(&fixture, "file", "/dst/new", false, true).unwrap();
    assert_eq!(created(&fixture), file_line("new"));
}

#[test]
fn archive_flag_gives_files_to_the_configured_user() {
    // Docker: `docker create --user nobody busybox`, then `docker cp -a file cpu:/tmp/`
    // gives 65534:65534; without -a the host owner (1234:5678) is kept.
    let fixture = Fixture::new();
    write(
        &fixture.inside("/etc/passwd"),
        "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
        0o644,
    );
    let container = ContainerFs::new(&fixture.root, NAME).with_user(Some("nobody"));
    copy_host_to_container(
        &container,
        &fixture.source.join("dir"),
        "/dst/existdir",
        false,
        true,
    )
    .unwrap();
    copy_host_to_container(
        &container,
        &fixture.source.join("file"),
        "/dst/plain",
        false,
        false,
    )
    .unwrap();
    let lines = created(&fixture);
    assert!(
        lines.contains(&"existdir/dir d 755 65534:65534".to_owned()),
        "{lines:#?}"
    );
    assert!(lines.contains(&"existdir/dir/sub/b f 644 65534:65534 deep".to_owned()));
    assert!(lines.contains(&"plain f 640 1234:5678 hello".to_owned()));

    let unknown = ContainerFs::new(&fixture.root, NAME).with_user(Some("ghost"));
    let error = copy_host_to_container(
        &unknown,
        &fixture.source.join("file"),
        "/dst/x",
        false,
        true,
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "failed to look up user \"ghost\" in container"
    );
}

#[test]
fn directories_and_files_do_not_replace_each_other() {
    // Docker: "Error processing tar file(exit status 1): cannot overwrite directory
    // "/dst/existdir" with non-directory "/dst"", and the reverse.
    let fixture = Fixture::new();
    let other = fixture.temp.path().join("other");
    write(&other.join("existdir"), "f\n", 0o644);
    write(&other.join("existfile/x"), "in\n", 0o644);
    let error = copy_host_to_container(
        &fixture.container(),
        &other.join("existdir"),
        "/dst/",
        false,
        false,
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot overwrite directory \"/dst/existdir\" with non-directory \"/dst\""
    );
    let error = copy_host_to_container(
        &fixture.container(),
        &other.join("existfile"),
        "/dst/",
        false,
        false,
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot overwrite non-directory \"/dst/existfile\" with directory \"/dst\""
    );
    assert!(fixture.inside("/dst/existdir").is_dir());
    assert_eq!(
        fs_err::read_to_string(fixture.inside("/dst/existfile")).unwrap(),
        "old\n"
    );
}

#[test]
fn device_destination_is_refused() {
    let fixture = Fixture::new();
    nix::sys::stat::mknod(
        &fixture.inside("/dst/null"),
        nix::sys::stat::SFlag::S_IFCHR,
        nix::sys::stat::Mode::from_bits_truncate(0o666),
        nix::sys::stat::makedev(1, 3),
    )
    .unwrap();
    let error = copy(&fixture, "file", "/dst/null").unwrap_err();
    assert_eq!(
        error.to_string(),
        "destination \"cpt:/dst/null\" must be a directory or a regular file: got a device"
    );
}
