//! The tar streams: `cp CONTAINER:SRC -`, `cp - CONTAINER:DIR`, and the archive
//! endpoints behind them. Entry names, types and owners are the ones Docker 20.10 sent
//! for the same layout (`curl --unix-socket … /containers/cpt/archive?path=…`).

use super::support::*;
use crate::copy::{
    archive_from_container, copy_container_to_stream, copy_stream_to_container,
    extract_into_container, stat_path, ExtractOptions,
};

fn archive(fixture: &Fixture, path: &str, follow_link: bool) -> Vec<u8> {
    let mut out = Vec::new();
    copy_container_to_stream(&fixture.container(), path, follow_link, &mut out).unwrap();
    out
}

#[test]
fn directory_archive_is_named_after_the_directory() {
    let fixture = Fixture::new();
    let expected = [
        "dir/ 5 755 0:0",
        "dir/a 0 4755 0:0",
        "dir/hard 1 4755 0:0 -> dir/a",
        "dir/sub/ 5 755 0:0",
        "dir/sub/b 0 644 1234:5678",
    ];
    assert_eq!(tar_listing(&archive(&fixture, "/src/dir", false)), expected);
    assert_eq!(
        tar_listing(&archive(&fixture, "/src/dir/", false)),
        expected
    );
    assert_eq!(
        tar_listing(&archive(&fixture, "/src/../src/dir/./sub", false)),
        ["sub/ 5 755 0:0", "sub/b 0 644 1234:5678"]
    );
}

#[test]
fn directory_contents_archive_is_named_dot() {
    let fixture = Fixture::new();
    assert_eq!(
        tar_listing(&archive(&fixture, "/src/dir/.", false)),
        [
            "./ 5 755 0:0",
            "./a 0 4755 0:0",
            "./hard 1 4755 0:0 -> ./a",
            "./sub/ 5 755 0:0",
            "./sub/b 0 644 1234:5678",
        ]
    );
}

#[test]
fn file_and_symlink_archives() {
    let fixture = Fixture::new();
    assert_eq!(
        tar_listing(&archive(&fixture, "/src/file", false)),
        ["file 0 644 0:0"]
    );
    assert_eq!(
        tar_listing(&archive(&fixture, "src/file", false)),
        ["file 0 644 0:0"]
    );
    assert_eq!(
        tar_listing(&archive(&fixture, "../../src/file", false)),
        ["file 0 644 0:0"]
    );
    assert_eq!(
        tar_listing(&archive(&fixture, "/src/link", false)),
        ["link 2 777 0:0 -> file"]
    );
    assert_eq!(
        tar_listing(&archive(&fixture, "/src/dirlink/", false))[0],
        "dirlink/ 5 755 0:0"
    );
}

#[test]
fn follow_link_stream_carries_the_target_name() {
    // The docker CLI replaces the path by the link's target and does not rename entries
    // when writing to stdout: `docker cp -L cpt:/src/link -` lists `file`.
    let fixture = Fixture::new();
    assert_eq!(
        tar_listing(&archive(&fixture, "/src/link", true)),
        ["file 0 644 0:0"]
    );
    assert_eq!(
        tar_listing(&archive(&fixture, "/src/dirlink", true))[0],
        "dir/ 5 755 0:0"
    );
    assert_eq!(
        tar_listing(&archive(&fixture, "/src/file", true)),
        ["file 0 644 0:0"]
    );
}

#[test]
fn root_archive_entries_start_with_a_slash() {
    let fixture = Fixture::new();
    let listing = tar_listing(&archive(&fixture, "/", false));
    assert_eq!(listing[0], "/ 5 755 0:0");
    assert!(
        listing.contains(&"/src/file 0 644 0:0".to_owned()),
        "{listing:#?}"
    );
    let listing = tar_listing(&archive(&fixture, "/.", false));
    assert_eq!(listing[0], "./ 5 755 0:0");
}

#[test]
fn archive_returns_the_stat_and_fails_like_docker() {
    let fixture = Fixture::new();
    let mut out = Vec::new();
    let stat = archive_from_container(&fixture.container(), "/src/dir", false, &mut out).unwrap();
    assert!(stat.is_dir());
    assert_eq!(stat.name, "dir");
    let error =
        archive_from_container(&fixture.container(), "/nope", false, Vec::new()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "Could not find the file /nope in container cpt"
    );
}

#[test]
fn stat_matches_docker() {
    // HEAD /containers/cpt/archive?path=… on Docker 20.10.
    let fixture = Fixture::new();
    let container = fixture.container();
    let file = stat_path(&container, "/src/file").unwrap();
    assert_eq!(
        serde_json::to_string(&file).unwrap(),
        r#"{"name":"file","size":6,"mode":420,"mtime":"2001-02-03T04:05:06Z","linkTarget":""}"#
    );
    let link = stat_path(&container, "/src/link").unwrap();
    assert_eq!(
        (link.mode, link.link_target.as_str()),
        (134_218_239, "/src/file")
    );
    assert_eq!(
        stat_path(&container, "/src/abslink").unwrap().link_target,
        "/src/file"
    );
    assert_eq!(
        stat_path(&container, "/src/dirlink").unwrap().link_target,
        "/src/dir"
    );
    assert_eq!(
        stat_path(&container, "/dst/dangling").unwrap().link_target,
        "/dst/nowhere"
    );
    let setuid = stat_path(&container, "/src/dir/a").unwrap();
    assert_eq!(setuid.mode, 8_389_101);
    let followed = stat_path(&container, "/src/dirlink/").unwrap();
    assert_eq!(
        (followed.name.as_str(), followed.mode),
        ("dirlink", 2_147_484_141)
    );
    assert_eq!(stat_path(&container, "/src/dir/.").unwrap().name, ".");
    assert_eq!(stat_path(&container, "/").unwrap().name, "/");
    assert!(stat_path(&container, "/nope").unwrap_err().is_not_found());
    assert_eq!(
        stat_path(&container, "/src/file/").unwrap_err().to_string(),
        "lstat /src/file/"
    );
}

#[test]
fn stream_into_directory_roundtrips() {
    let fixture = Fixture::new();
    let tar = archive(&fixture, "/src/dir", false);
    copy_stream_to_container(&fixture.container(), &tar[..], "/dst/existdir", false).unwrap();
    let lines = new_files(&fixture.inside("/dst"), DST_FIXTURES);
    assert_eq!(lines, dir_lines("existdir/dir", "1234:5678"));
    // Through a symlink to a directory.
    let tar = archive(&fixture, "/src/file", false);
    copy_stream_to_container(&fixture.container(), &tar[..], "/dst/dirsymlink", false).unwrap();
    assert!(fixture.inside("/dst/existdir/file").is_file());
}

#[test]
fn stream_destination_must_be_a_directory() {
    let fixture = Fixture::new();
    let tar = archive(&fixture, "/src/file", false);
    for destination in ["/dst/new", "/dst/existfile"] {
        let error = copy_stream_to_container(&fixture.container(), &tar[..], destination, false)
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("destination \"cpt:{destination}\" must be a directory")
        );
    }
}

#[test]
fn compressed_streams_are_refused_clearly() {
    let fixture = Fixture::new();
    let gzip = [0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0];
    let error = copy_stream_to_container(&fixture.container(), &gzip[..], "/dst/existdir", false)
        .unwrap_err();
    assert_eq!(error.kind(), crate::ErrorKind::InvalidArgument);
    assert!(error.to_string().contains("gzip"), "{error}");
}

#[test]
fn api_extract_may_replace_directories_unless_told_not_to() {
    let fixture = Fixture::new();
    let tar = RawTar::new().file("existdir", "now a file\n").finish();
    let strict = ExtractOptions {
        copy_uid_gid: false,
        no_overwrite_dir_non_dir: true,
    };
    assert!(extract_into_container(&fixture.container(), "/dst", &tar[..], &strict).is_err());
    extract_into_container(
        &fixture.container(),
        "/dst",
        &tar[..],
        &ExtractOptions::default(),
    )
    .unwrap();
    assert_eq!(
        fs_err::read_to_string(fixture.inside("/dst/existdir")).unwrap(),
        "now a file\n"
    );
}

#[test]
fn extraction_point_errors() {
    let fixture = Fixture::new();
    let tar = RawTar::new().file("x", "x").finish();
    let options = ExtractOptions::default();
    let error =
        extract_into_container(&fixture.container(), "/nope", &tar[..], &options).unwrap_err();
    assert_eq!(
        error.to_string(),
        "Could not find the file /nope in container cpt"
    );
    let error = extract_into_container(&fixture.container(), "/dst/existfile", &tar[..], &options)
        .unwrap_err();
    assert_eq!(error.to_string(), "extraction point is not a directory");
    // A dangling symlink is not found either.
    let error = extract_into_container(&fixture.container(), "/dst/dangling", &tar[..], &options)
        .unwrap_err();
    assert!(error.is_not_found());
}

#[test]
fn missing_parents_are_created_root_owned_0755() {
    let fixture = Fixture::new();
    let tar = RawTar::new().file("a/b/c", "deep").finish();
    extract_into_container(
        &fixture.container(),
        "/dst",
        &tar[..],
        &ExtractOptions::default(),
    )
    .unwrap();
    let lines = new_files(&fixture.inside("/dst"), DST_FIXTURES);
    assert_eq!(
        lines,
        ["a d 755 0:0", "a/b d 755 0:0", "a/b/c f 644 0:0 deep"]
    );
}

#[test]
fn long_and_unicode_names_roundtrip() {
    let fixture = Fixture::new();
    let long = format!("{}/{}", "d".repeat(120), "f".repeat(120));
    write(&fixture.inside(&format!("/src/tree/{long}")), "long", 0o644);
    write(&fixture.inside("/src/tree/ünïcødé"), "utf8", 0o644);
    symlink_to(&fixture.inside("/src/tree/longlink"), &"t".repeat(150));
    let tar = archive(&fixture, "/src/tree", false);
    copy_stream_to_container(&fixture.container(), &tar[..], "/dst/existdir", false).unwrap();
    let copied = fixture.inside("/dst/existdir/tree");
    assert_eq!(fs_err::read_to_string(copied.join(&long)).unwrap(), "long");
    assert_eq!(
        fs_err::read_to_string(copied.join("ünïcødé")).unwrap(),
        "utf8"
    );
    assert_eq!(
        fs_err::read_link(copied.join("longlink")).unwrap().to_str(),
        Some(&*"t".repeat(150))
    );
}

#[test]
fn large_files_stream_in_chunks() {
    let fixture = Fixture::new();
    // Not a multiple of the block or buffer size.
    let content: Vec<u8> = (0..3_000_017u32).map(|index| (index % 251) as u8).collect();
    fs_err::write(fixture.inside("/src/big"), &content).unwrap();
    let tar = archive(&fixture, "/src/big", false);
    copy_stream_to_container(&fixture.container(), &tar[..], "/dst/existdir", false).unwrap();
    assert_eq!(
        fs_err::read(fixture.inside("/dst/existdir/big")).unwrap(),
        content
    );
}

fn symlink_to(path: &std::path::Path, target: &str) {
    fs_err::os::unix::fs::symlink(target, path).unwrap();
}
