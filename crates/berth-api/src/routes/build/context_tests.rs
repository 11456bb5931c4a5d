#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use super::*;

/// A tar stream written entry by entry, names taken as given (the `tar`
/// crate's path setters refuse `..`, which these tests need).
struct Tar {
    bytes: Vec<u8>,
}

impl Tar {
    fn new() -> Self {
        Self { bytes: Vec::new() }
    }

    fn entry(
        mut self,
        name: &str,
        kind: tar::EntryType,
        link: &str,
        data: &[u8],
        mode: u32,
    ) -> Self {
        let mut header = tar::Header::new_gnu();
        {
            let raw = header.as_old_mut();
            raw.name[..name.len()].copy_from_slice(name.as_bytes());
            raw.linkname[..link.len()].copy_from_slice(link.as_bytes());
        }
        header.set_entry_type(kind);
        header.set_size(data.len() as u64);
        header.set_mode(mode);
        header.set_uid(1234);
        header.set_gid(5678);
        header.set_mtime(1_600_000_000);
        header.set_cksum();
        self.bytes.extend_from_slice(header.as_bytes());
        self.bytes.extend_from_slice(data);
        let padding = (512 - data.len() % 512) % 512;
        self.bytes.extend(std::iter::repeat_n(0, padding));
        self
    }

    fn file(self, name: &str, data: &[u8]) -> Self {
        self.entry(name, tar::EntryType::Regular, "", data, 0o640)
    }

    fn dir(self, name: &str) -> Self {
        self.entry(name, tar::EntryType::Directory, "", b"", 0o750)
    }

    fn symlink(self, name: &str, target: &str) -> Self {
        self.entry(name, tar::EntryType::Symlink, target, b"", 0o777)
    }

    fn hardlink(self, name: &str, target: &str) -> Self {
        self.entry(name, tar::EntryType::Link, target, b"", 0o644)
    }

    fn finish(mut self) -> Vec<u8> {
        self.bytes.extend(std::iter::repeat_n(0, 1024));
        self.bytes
    }
}

/// An engine root in a private directory, with a sibling `outside` that
/// hostile entries aim at.
struct Root {
    directory: tempfile::TempDir,
}

impl Root {
    fn new() -> Self {
        let directory = tempfile::tempdir().unwrap();
        fs_err::create_dir(directory.path().join("root")).unwrap();
        fs_err::create_dir(directory.path().join("outside")).unwrap();
        Self { directory }
    }

    fn root(&self) -> PathBuf {
        self.directory.path().join("root")
    }

    fn outside(&self) -> Vec<String> {
        let mut names: Vec<String> = fs_err::read_dir(self.directory.path().join("outside"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn contexts(&self) -> usize {
        fs_err::read_dir(self.root().join(CONTEXTS_DIRECTORY))
            .map(|entries| entries.count())
            .unwrap_or(0)
    }
}

fn extract(root: &Root, tar: &[u8]) -> (ContextDir, Result<(), ContextError>) {
    let directory = ContextDir::create(&root.root()).unwrap();
    let result = directory.extract(tar);
    (directory, result)
}

#[test]
fn a_context_keeps_modes_owners_and_times_and_goes_away() {
    let root = Root::new();
    let tar = Tar::new()
        .dir("sub/")
        .file("sub/a.txt", b"hello")
        .file("Dockerfile", b"FROM busybox\n")
        .symlink("link", "sub/a.txt")
        .finish();
    let (directory, result) = extract(&root, &tar);
    result.unwrap();
    let context = directory.path().to_owned();
    assert!(context.starts_with(root.root().join(CONTEXTS_DIRECTORY)));
    let file = fs_err::metadata(context.join("sub/a.txt")).unwrap();
    assert_eq!(file.permissions().mode() & 0o7777, 0o640);
    assert_eq!((file.uid(), file.gid()), (1234, 5678));
    assert_eq!(file.mtime(), 1_600_000_000);
    let sub = fs_err::metadata(context.join("sub")).unwrap();
    assert_eq!(sub.permissions().mode() & 0o7777, 0o750);
    assert_eq!(sub.mtime(), 1_600_000_000);
    assert_eq!(
        fs_err::read_link(context.join("link")).unwrap(),
        PathBuf::from("sub/a.txt")
    );
    assert_eq!(
        read_dockerfile(&context, "Dockerfile").unwrap(),
        "FROM busybox\n"
    );
    // The directories are the server's own (the root is 0700 already).
    let base = context.parent().unwrap();
    assert_eq!(
        fs_err::metadata(base).unwrap().permissions().mode() & 0o777,
        0o700
    );
    drop(directory);
    assert!(!context.exists());
    assert_eq!(root.contexts(), 0);
}

#[test]
fn a_name_climbing_out_is_refused() {
    let root = Root::new();
    let tar = Tar::new().file("../outside/x", b"escaped").finish();
    let (directory, result) = extract(&root, &tar);
    let error = ApiError::from(result.unwrap_err());
    assert_eq!(error.status, 400);
    assert!(
        error.message.contains("invalid entry name"),
        "{}",
        error.message
    );
    assert!(root.outside().is_empty());
    drop(directory);
    assert_eq!(root.contexts(), 0);
}

#[test]
fn absolute_names_land_inside_as_moby_extracts_them() {
    let root = Root::new();
    let outside = root.directory.path().join("outside/abs");
    let tar = Tar::new()
        .file(outside.to_str().unwrap(), b"absolute")
        .file("/etc-passwd", b"x")
        .finish();
    let (directory, result) = extract(&root, &tar);
    result.unwrap();
    assert!(root.outside().is_empty());
    let inside = directory.path().join(outside.strip_prefix("/").unwrap());
    assert_eq!(fs_err::read(inside).unwrap(), b"absolute");
    assert!(directory.path().join("etc-passwd").exists());
}

#[test]
fn a_symlink_then_a_file_through_it_stays_inside() {
    let root = Root::new();
    let outside = root.directory.path().join("outside");
    for target in [outside.to_str().unwrap(), "../../../../../../../../.."] {
        let tar = Tar::new()
            .symlink("escape", target)
            .file("escape/planted", b"through the link")
            .finish();
        let (directory, result) = extract(&root, &tar);
        // Resolved inside the context as if it were `/`: the file lands
        // in the context, never in `outside`.
        result.unwrap();
        assert!(root.outside().is_empty(), "{target}: {:?}", root.outside());
        let landed = if target.starts_with('/') {
            directory
                .path()
                .join(target.trim_start_matches('/'))
                .join("planted")
        } else {
            directory.path().join("planted")
        };
        assert_eq!(
            fs_err::read(&landed).unwrap(),
            b"through the link",
            "{target}"
        );
        drop(directory);
    }
}

#[test]
fn a_hard_link_to_outside_is_refused() {
    let root = Root::new();
    fs_err::write(root.directory.path().join("outside/secret"), b"secret").unwrap();
    let tar = Tar::new().hardlink("stolen", "../outside/secret").finish();
    let (_directory, result) = extract(&root, &tar);
    let error = ApiError::from(result.unwrap_err());
    assert_eq!(error.status, 400);
    assert!(
        error.message.contains("invalid hardlink target"),
        "{}",
        error.message
    );

    // Through a symlink: the link is resolved inside the context, where
    // there is no such file.
    let outside = root.directory.path().join("outside");
    let tar = Tar::new()
        .symlink("out", outside.to_str().unwrap())
        .hardlink("stolen", "out/secret")
        .finish();
    let (directory, result) = extract(&root, &tar);
    assert!(result.is_err());
    assert!(!directory.path().join("stolen").exists());
    assert_eq!(
        fs_err::metadata(root.directory.path().join("outside/secret"))
            .unwrap()
            .nlink(),
        1
    );
}

#[test]
fn a_stream_that_ends_inside_its_last_block_is_completed() {
    // What docker CLI 20.10 sends with `-f` outside the context: the last
    // file's data, then nothing (no padding, no end blocks).
    let ignore = b".dockerfile.x\n.dockerignore\n";
    let mut tar = Tar::new()
        .file("Dockerfile", b"FROM busybox\n")
        .file(".dockerignore", ignore)
        .finish();
    tar.truncate(tar.len() - 1024 - (512 - ignore.len()));
    assert_eq!(tar.len() % 512, ignore.len());
    let root = Root::new();
    let (directory, result) = extract(&root, &tar);
    result.unwrap();
    assert_eq!(
        fs_err::read(directory.path().join(".dockerignore")).unwrap(),
        ignore
    );
    // Ending at a block boundary needs nothing; inside a header is refused.
    let whole = Tar::new().file("a", b"x").finish();
    let (_directory, result) = extract(&root, &whole[..1024]);
    result.unwrap();
    let (_directory, result) = extract(&root, &whole[..100]);
    assert!(result.is_err());
}

#[test]
fn compressed_contexts_are_decoded_by_magic() {
    let tar = Tar::new().file("Dockerfile", b"FROM busybox\n").finish();
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gzip.write_all(&tar).unwrap();
    let gzip = gzip.finish().unwrap();
    let zstd = zstd::stream::encode_all(&tar[..], 1).unwrap();
    let root = Root::new();
    for (format, body) in [("plain", tar.clone()), ("gzip", gzip), ("zstd", zstd)] {
        let (directory, result) = extract(&root, &body);
        result.unwrap_or_else(|error| panic!("{format}: {error}"));
        assert_eq!(
            read_dockerfile(directory.path(), "Dockerfile").unwrap(),
            "FROM busybox\n",
            "{format}"
        );
    }
    assert_eq!(root.contexts(), 0);
}

#[test]
fn xz_contexts_are_decoded() {
    // `printf 'FROM busybox\n' > Dockerfile; tar c Dockerfile | xz -9`: the
    // workspace has an xz decoder but no encoder.
    let body = include_bytes!("testdata/context.tar.xz");
    let root = Root::new();
    let (directory, result) = extract(&root, body);
    result.unwrap();
    assert_eq!(
        read_dockerfile(directory.path(), "Dockerfile").unwrap(),
        "FROM busybox\n"
    );
    // The spooled stream goes with the context.
    drop(directory);
    assert_eq!(root.contexts(), 0);
}

#[test]
fn bzip2_is_refused_by_name() {
    let root = Root::new();
    let (_directory, result) = extract(&root, b"BZh91AY&SY");
    let error = ApiError::from(result.unwrap_err());
    assert_eq!(error.status, 501);
    assert!(error.message.contains("bzip2"), "{}", error.message);
}

#[test]
fn an_empty_body_is_an_empty_context() {
    let root = Root::new();
    let (directory, result) = extract(&root, b"");
    result.unwrap();
    assert_eq!(
        ApiError::from(read_dockerfile(directory.path(), "Dockerfile").unwrap_err()),
        ApiError::new(400, "Cannot locate specified Dockerfile: Dockerfile")
    );
}

#[test]
fn the_dockerfile_is_read_inside_the_context() {
    let root = Root::new();
    let secret = root.directory.path().join("outside/secret");
    fs_err::write(&secret, b"FROM secret\n").unwrap();
    let tar = Tar::new()
        .symlink("Dockerfile", secret.to_str().unwrap())
        .symlink("up", "../../../../outside/secret")
        .file("dockerfile", b"FROM lowercase\n")
        .file("empty", b"")
        .dir("sub/")
        .file("sub/Dockerfile.dev", b"FROM dev\n")
        .file(".dockerfile.0123abcd", b"FROM outside-context\n")
        .finish();
    let (directory, result) = extract(&root, &tar);
    result.unwrap();
    let context = directory.path();
    // The absolute symlink points into the context, where nothing is: the
    // default name falls back to `dockerfile`, as moby's does.
    assert_eq!(
        read_dockerfile(context, "Dockerfile").unwrap(),
        "FROM lowercase\n"
    );
    assert!(read_dockerfile(context, "up").is_err());
    assert_eq!(
        read_dockerfile(context, "sub/Dockerfile.dev").unwrap(),
        "FROM dev\n"
    );
    assert_eq!(
        read_dockerfile(context, "/sub/Dockerfile.dev").unwrap(),
        "FROM dev\n"
    );
    assert_eq!(
        read_dockerfile(context, "../sub/Dockerfile.dev").unwrap(),
        "FROM dev\n"
    );
    assert_eq!(
        read_dockerfile(context, ".dockerfile.0123abcd").unwrap(),
        "FROM outside-context\n"
    );
    assert_eq!(
        ApiError::from(read_dockerfile(context, "empty").unwrap_err()),
        ApiError::new(400, "the Dockerfile (empty) cannot be empty")
    );
    assert_eq!(
        ApiError::from(read_dockerfile(context, "missing").unwrap_err()),
        ApiError::new(400, "Cannot locate specified Dockerfile: missing")
    );
    assert!(read_dockerfile(context, "sub").is_err());
}

#[test]
fn the_default_dockerfile_falls_back_to_lowercase() {
    let root = Root::new();
    let tar = Tar::new().file("dockerfile", b"FROM lowercase\n").finish();
    let (directory, result) = extract(&root, &tar);
    result.unwrap();
    assert_eq!(
        read_dockerfile(directory.path(), "Dockerfile").unwrap(),
        "FROM lowercase\n"
    );
}

#[test]
fn stale_contexts_of_dead_servers_are_removed() {
    let root = Root::new();
    let parent = root.root().join(CONTEXTS_DIRECTORY);
    let live = ContextDir::create(&root.root()).unwrap();
    // A pid that cannot exist (above pid_max's ceiling of 2^22).
    let dead = parent.join("context-4194305-0123456789abcdef");
    fs_err::create_dir_all(dead.join("context/sub")).unwrap();
    fs_err::write(dead.join("context/sub/file"), b"x").unwrap();
    let foreign = parent.join("not-a-context");
    fs_err::create_dir(&foreign).unwrap();
    assert_eq!(remove_stale(&root.root()), 1);
    assert!(!dead.exists());
    assert!(live.path().exists());
    assert!(foreign.exists());
    assert_eq!(remove_stale(&root.root().join("missing")), 0);
}
