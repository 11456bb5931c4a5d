//! `berth cp CONTAINER:SRC DEST`, one test per row of Docker's path rules. Every
//! expectation was observed with `docker cp` (CLI 28.2, engine 20.10) on the same layout
//! (see `support.rs`), run as root: copies are owned by 0:0 whatever the owner in the
//! container, with or without `-a`.

use super::support::*;
use crate::copy::{copy_container_to_host, CopyError};

fn copy(fixture: &Fixture, source: &str, destination: &str) -> Result<(), CopyError> {
    copy_with(fixture, source, destination, false)
}

fn copy_with(
    fixture: &Fixture,
    source: &str,
    destination: &str,
    follow_link: bool,
) -> Result<(), CopyError> {
    let destination = fixture.host.join(destination);
    copy_container_to_host(
        &fixture.container(),
        source,
        &destination,
        follow_link,
        false,
    )
    .map(|_| ())
}

fn created(fixture: &Fixture) -> Vec<String> {
    new_files(&fixture.host, HOST_FIXTURES)
}

fn file_line(at: &str) -> Vec<String> {
    vec![format!("{at} f 644 0:0 hello")]
}

#[test]
fn file_to_missing_path_creates_it() {
    let fixture = Fixture::new();
    copy(&fixture, "/src/file", "new").unwrap();
    assert_eq!(created(&fixture), file_line("new"));
    // Docker's tar carries whole seconds; atime is set to the mtime.
    assert_eq!(mtime(&fixture.host.join("new")), (OLD_TIME, 0));
}

#[test]
fn file_to_missing_path_with_trailing_slash_fails() {
    let fixture = Fixture::new();
    let error = copy(&fixture, "/src/file", "new/").unwrap_err();
    assert_eq!(error.to_string(), "no such directory");
    assert!(created(&fixture).is_empty());
}

#[test]
fn file_over_existing_file_replaces_it() {
    let fixture = Fixture::new();
    copy(&fixture, "/src/file", "existfile").unwrap();
    assert_eq!(
        fs_err::read_to_string(fixture.host.join("existfile")).unwrap(),
        "hello\n"
    );
}

#[test]
fn file_into_existing_directory_keeps_its_name() {
    for destination in ["existdir", "existdir/", "existdir/."] {
        let fixture = Fixture::new();
        copy(&fixture, "/src/file", destination).unwrap();
        assert_eq!(
            created(&fixture),
            file_line("existdir/file"),
            "{destination}"
        );
    }
}

#[test]
fn file_under_existing_file_fails() {
    let fixture = Fixture::new();
    // Docker: "stat /tmp/cpx/h/existfile/: not a directory"
    let error = copy(&fixture, "/src/file", "existfile/").unwrap_err();
    let shown = anyhow_chain(&error);
    assert!(
        shown.starts_with(&format!("stat {}/existfile/", fixture.host.display())),
        "{shown}"
    );
    assert!(shown.contains("Not a directory"), "{shown}");
    // Docker: "stat /tmp/cpx/h/existfile/x: not a directory"
    let error = copy(&fixture, "/src/file", "existfile/x").unwrap_err();
    assert!(error.to_string().starts_with("stat "), "{error}");
}

#[test]
fn file_into_missing_parent_fails() {
    let fixture = Fixture::new();
    let error = copy(&fixture, "/src/file", "nodir/x").unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "invalid output path: directory \"{}/nodir\" does not exist",
            fixture.host.display()
        )
    );
}

#[test]
fn directory_to_missing_path_creates_it_with_the_contents() {
    for destination in ["new", "new/"] {
        let fixture = Fixture::new();
        copy(&fixture, "/src/dir", destination).unwrap();
        assert_eq!(created(&fixture), dir_lines("new", "0:0"), "{destination}");
        assert_eq!(
            inode(&fixture.host.join("new/a")),
            inode(&fixture.host.join("new/hard")),
            "hardlinks stay hardlinks"
        );
    }
}

#[test]
fn directory_over_existing_file_fails() {
    for source in ["/src/dir", "/src/dir/."] {
        let fixture = Fixture::new();
        let error = copy(&fixture, source, "existfile").unwrap_err();
        assert_eq!(error.to_string(), "cannot copy directory");
        assert_eq!(
            fs_err::read_to_string(fixture.host.join("existfile")).unwrap(),
            "old\n"
        );
    }
}

#[test]
fn directory_into_existing_directory_keeps_its_name() {
    for source in ["/src/dir", "/src/dir/"] {
        let fixture = Fixture::new();
        copy(&fixture, source, "existdir").unwrap();
        assert_eq!(
            created(&fixture),
            dir_lines("existdir/dir", "0:0"),
            "{source}"
        );
    }
}

#[test]
fn directory_contents_into_existing_directory() {
    let fixture = Fixture::new();
    copy(&fixture, "/src/dir/.", "existdir").unwrap();
    let mut expected = dir_lines("existdir", "0:0");
    expected.retain(|line| line != "existdir d 755 0:0");
    assert_eq!(created(&fixture), expected);
}

#[test]
fn directory_contents_to_missing_path_creates_it() {
    let fixture = Fixture::new();
    copy(&fixture, "/src/dir/.", "new").unwrap();
    assert_eq!(created(&fixture), dir_lines("new", "0:0"));
}

#[test]
fn missing_source_is_not_found() {
    let fixture = Fixture::new();
    let error = copy(&fixture, "/src/nope", "new").unwrap_err();
    assert!(error.is_not_found());
    assert_eq!(
        error.to_string(),
        "Could not find the file /src/nope in container cpt"
    );
    let error = copy(&fixture, "/src/nope/x", "new").unwrap_err();
    assert_eq!(
        error.to_string(),
        "Could not find the file /src/nope/x in container cpt"
    );
}

#[test]
fn file_source_with_trailing_slash_is_not_a_directory() {
    let fixture = Fixture::new();
    // Docker: "Error response from daemon: lstat …/merged/src/file/: not a directory"
    let error = copy(&fixture, "/src/file/", "new").unwrap_err();
    assert_eq!(error.to_string(), "lstat /src/file/");
    assert!(anyhow_chain(&error).to_string().contains("Not a directory"));
}

#[test]
fn symlinks_are_copied_as_symlinks() {
    let fixture = Fixture::new();
    copy(&fixture, "/src/link", "new").unwrap();
    copy(&fixture, "/src/link", "existdir").unwrap();
    copy(&fixture, "/src/dirlink", "dirnew").unwrap();
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
    for source in ["/src/dirlink/", "/src/dirlink/."] {
        let fixture = Fixture::new();
        copy(&fixture, source, "new").unwrap();
        assert_eq!(created(&fixture), dir_lines("new", "0:0"), "{source}");
    }
}

#[test]
fn destination_symlinks_are_followed() {
    let fixture = Fixture::new();
    copy(&fixture, "/src/file", "dirsymlink").unwrap();
    copy(&fixture, "/src/file", "filesymlink").unwrap();
    copy(&fixture, "/src/file", "dangling").unwrap();
    assert_eq!(
        created(&fixture),
        vec!["existdir/file f 644 0:0 hello", "nowhere f 644 0:0 hello"]
    );
    assert_eq!(
        fs_err::read_to_string(fixture.host.join("existfile")).unwrap(),
        "hello\n"
    );
    assert!(fs_err::symlink_metadata(fixture.host.join("filesymlink"))
        .unwrap()
        .is_symlink());
}

#[test]
fn directory_to_destination_symlinks() {
    let fixture = Fixture::new();
    copy(&fixture, "/src/dir", "dirsymlink").unwrap();
    copy(&fixture, "/src/dir", "dangling").unwrap();
    let mut expected = dir_lines("existdir/dir", "0:0");
    expected.extend(dir_lines("nowhere", "0:0"));
    expected.sort();
    assert_eq!(created(&fixture), expected);
    let error = copy(&fixture, "/src/dir", "filesymlink").unwrap_err();
    assert_eq!(error.to_string(), "cannot copy directory");
}

#[test]
fn into_current_directory_spelled_with_a_dot() {
    let fixture = Fixture::new();
    copy(&fixture, "/src/file", ".").unwrap();
    copy(&fixture, "/src/dir", ".").unwrap();
    let mut expected = dir_lines("dir", "0:0");
    expected.extend(file_line("file"));
    expected.sort();
    assert_eq!(created(&fixture), expected);
}

#[test]
fn archive_flag_does_not_change_owners_on_the_host() {
    let fixture = Fixture::new();
    let destination = fixture.host.join("new");
    copy_container_to_host(&fixture.container(), "/src/dir", &destination, false, true).unwrap();
    assert_eq!(created(&fixture), dir_lines("new", "0:0"));
}

#[test]
fn follow_link_copies_the_target_under_the_link_name() {
    let fixture = Fixture::new();
    copy_with(&fixture, "/src/link", "new", true).unwrap();
    copy_with(&fixture, "/src/link", "existdir", true).unwrap();
    copy_with(&fixture, "/src/abslink", "absnew", true).unwrap();
    copy_with(&fixture, "/src/file", "plain", true).unwrap();
    assert_eq!(
        created(&fixture),
        vec![
            "absnew f 644 0:0 hello",
            "existdir/link f 644 0:0 hello",
            "new f 644 0:0 hello",
            "plain f 644 0:0 hello",
        ]
    );
}

#[test]
fn follow_link_to_directory() {
    let fixture = Fixture::new();
    copy_with(&fixture, "/src/dirlink", "new", true).unwrap();
    copy_with(&fixture, "/src/dirlink", "existdir", true).unwrap();
    copy_with(&fixture, "/src/dirlink/.", "contents", true).unwrap();
    let mut expected = dir_lines("new", "0:0");
    expected.extend(dir_lines("existdir/dirlink", "0:0"));
    expected.extend(dir_lines("contents", "0:0"));
    expected.sort();
    assert_eq!(created(&fixture), expected);
}

#[test]
fn the_root_directory() {
    let fixture = Fixture::new();
    copy(&fixture, "/", "rootcopy").unwrap();
    fs_err::create_dir(fixture.host.join("into")).unwrap();
    copy(&fixture, "/", "into").unwrap();
    for copied in ["rootcopy", "into"] {
        let copied = fixture.host.join(copied);
        assert_eq!(
            fs_err::read_to_string(copied.join("src/dir/sub/b")).unwrap(),
            "deep\n"
        );
        assert_eq!(
            fs_err::read_link(copied.join("dst/abssym"))
                .unwrap()
                .to_str(),
            Some("/dst/existdir")
        );
    }
}

/// Renders an error with its causes, as the CLI prints it.
pub fn anyhow_chain(error: &CopyError) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
