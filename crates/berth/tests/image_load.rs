//! `load` of every archive format, the whiteout rules in the unpacked layers
//! (checked through a real overlayfs mount), and hostile archives.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use support::{fixture, fixture_id, Berth};

#[test]
fn loads_a_docker_save_archive() {
    let berth = Berth::new();
    assert_eq!(
        berth.load("busybox-docker.tar"),
        "Loaded image: busybox:latest\n"
    );
    let id = fixture_id("busybox-docker.tar", "busybox:latest");
    let inspect = berth
        .run(&["image", "inspect", "--format", "{{.Id}}", "busybox"])
        .ok();
    assert_eq!(inspect.trim(), id);
}

#[test]
fn loads_an_oci_layout_archive() {
    let berth = Berth::new();
    assert_eq!(
        berth.load("busybox-oci.tar"),
        "Loaded image: busybox-oci:latest\n"
    );
    let listed = berth
        .run(&["images", "--format", "{{.Repository}}:{{.Tag}} {{.ID}}"])
        .ok();
    let id = fixture_id("busybox-oci.tar", "busybox-oci:latest");
    assert_eq!(listed, format!("busybox-oci:latest {}\n", &id[7..19]));
}

#[test]
fn loads_docker_25_dual_layout_from_stdin() {
    let berth = Berth::new();
    let bytes = fs_err::read(fixture("busybox-oci-docker.tar")).unwrap();
    let output = berth.run_with_stdin(&["load"], Some(&bytes)).ok();
    assert_eq!(output, "Loaded image: busybox-oci-docker:latest\n");
}

#[test]
fn loads_several_images_and_tags_from_one_archive() {
    let berth = Berth::new();
    let output = berth.load("busybox-extra.tar");
    for tag in ["extra:1", "extra:latest", "other:latest"] {
        assert!(
            output.contains(&format!("Loaded image: {tag}\n")),
            "{output}"
        );
    }
    let ids = berth.run(&["images", "-q", "--no-trunc"]).ok();
    let mut ids: Vec<&str> = ids.lines().collect();
    ids.sort();
    let mut expected = vec![
        fixture_id("busybox-extra.tar", "extra:1"),
        fixture_id("busybox-extra.tar", "other:latest"),
    ];
    expected.sort();
    assert_eq!(ids, expected);
}

#[test]
fn the_same_layer_is_unpacked_once_for_every_image() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth.load("busybox-oci.tar");
    berth.load("layers-docker.tar");
    // busybox, busybox-oci and the bottom layer of layers:latest share one
    // unpacked rootfs; layers:latest adds three more.
    let layers = fs_err::read_dir(berth.root().join("layers"))
        .unwrap()
        .count();
    assert_eq!(layers, 4);
}

#[test]
fn reloading_moves_the_tag_and_says_so() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    let busybox = fixture_id("busybox-docker.tar", "busybox:latest");
    berth.run(&["tag", "layers-missing-yet", "x"]).fails(1);
    berth.load("layers-docker.tar");
    berth.run(&["tag", "layers", "busybox:latest"]).ok();
    let output = berth.load("busybox-docker.tar");
    let layers = fixture_id("layers-docker.tar", "layers:latest");
    assert_eq!(
        output,
        format!(
            "The image busybox:latest already exists, renaming the old one with ID {layers} to empty string\nLoaded image: busybox:latest\n"
        )
    );
    let inspect = berth.run(&["inspect", "-f", "{{.Id}}", "busybox"]).ok();
    assert_eq!(inspect.trim(), busybox);
}

/// Parses layers-expected.txt and checks every row against `merged`.
fn check_expected(merged: &Path) {
    let expected = fs_err::read_to_string(fixture("layers-expected.txt")).unwrap();
    let mut checked = 0;
    for line in expected
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
    {
        let fields: Vec<&str> = line.split('\t').collect();
        let (path, kind, mode, uid, gid) = (fields[0], fields[1], fields[2], fields[3], fields[4]);
        let full = merged.join(path.trim_start_matches('/'));
        let metadata = fs_err::symlink_metadata(&full);
        if kind == "absent" {
            assert!(metadata.is_err(), "{path} should be absent");
            checked += 1;
            continue;
        }
        let metadata = metadata.unwrap_or_else(|error| panic!("{path}: {error}"));
        let file_type = metadata.file_type();
        let actual_kind = if file_type.is_symlink() {
            "symlink"
        } else if file_type.is_dir() {
            "dir"
        } else if file_type.is_fifo() {
            "fifo"
        } else if file_type.is_char_device() {
            "char"
        } else {
            "file"
        };
        assert_eq!(actual_kind, kind, "{path} type");
        if mode != "-" {
            let actual = metadata.permissions().mode() & 0o7777;
            assert_eq!(format!("{actual:04o}"), mode, "{path} mode");
        }
        if uid != "-" {
            assert_eq!(metadata.uid().to_string(), uid, "{path} uid");
            assert_eq!(metadata.gid().to_string(), gid, "{path} gid");
        }
        for extra in &fields[5..] {
            let (key, value) = extra.split_once('=').unwrap();
            let value = value.replace("\\n", "\n").replace("\\t", "\t");
            match key {
                "content" => assert_eq!(fs_err::read_to_string(&full).unwrap(), value, "{path}"),
                "nlink" => assert_eq!(metadata.nlink().to_string(), value, "{path} nlink"),
                "same-inode-as" => {
                    let other =
                        fs_err::metadata(merged.join(value.trim_start_matches('/'))).unwrap();
                    assert_eq!(metadata.ino(), other.ino(), "{path} inode");
                }
                "xattr" => {
                    let (name, wanted) = value.split_once('=').unwrap();
                    let actual = xattr_get(&full, name);
                    assert_eq!(actual.as_deref(), Some(wanted.as_bytes()), "{path} xattr");
                }
                "target" => assert_eq!(fs_err::read_link(&full).unwrap(), PathBuf::from(&value)),
                "dev" => {
                    let rdev = metadata.rdev();
                    let actual = format!(
                        "{}:{}",
                        nix::sys::stat::major(rdev),
                        nix::sys::stat::minor(rdev)
                    );
                    assert_eq!(actual, value, "{path} dev");
                }
                "entries" => {
                    let mut names: Vec<String> = fs_err::read_dir(&full)
                        .unwrap()
                        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                        .collect();
                    names.sort();
                    assert_eq!(names.join(","), value, "{path} entries");
                }
                "note" => {}
                other => panic!("unknown expectation {other}"),
            }
        }
        checked += 1;
    }
    assert!(checked > 20, "only {checked} expectations checked");
}

fn xattr_get(path: &Path, name: &str) -> Option<Vec<u8>> {
    xattr::get(path, name).ok().flatten()
}

/// Mounts the image's layers as overlayfs (read-only, no upper) for the
/// duration of `check`.
fn with_merged_view(berth: &Berth, reference: &str, check: impl FnOnce(&Path)) {
    let lower = berth
        .run(&[
            "image",
            "inspect",
            "--format",
            "{{.GraphDriver.Data.LowerDir}}",
            reference,
        ])
        .ok();
    let target = tempfile::tempdir().unwrap();
    let data = format!("lowerdir={}", lower.trim());
    nix::mount::mount(
        Some("overlay"),
        target.path(),
        Some("overlay"),
        nix::mount::MsFlags::MS_RDONLY,
        Some(data.as_str()),
    )
    .expect("mount overlay of the image layers");
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = nix::mount::umount2(self.0, nix::mount::MntFlags::MNT_DETACH);
        }
    }
    let _unmount = Unmount(target.path());
    check(target.path());
}

#[test]
fn whiteouts_apply_in_overlayfs_as_docker_applies_them() {
    let berth = Berth::new();
    berth.load("layers-docker.tar");
    with_merged_view(&berth, "layers", check_expected);
}

#[test]
fn gzip_variant_gives_the_same_image() {
    let berth = Berth::new();
    berth.load("layers-docker-gzip.tar");
    let id = berth.run(&["inspect", "-f", "{{.Id}}", "layers"]).ok();
    assert_eq!(
        id.trim(),
        fixture_id("layers-docker-gzip.tar", "layers:latest")
    );
    with_merged_view(&berth, "layers", check_expected);
}

// ---- hostile and broken archives: clear error, nothing left behind ----

fn assert_rejected(berth: &Berth, bytes: &[u8], expected_message: &str) {
    let before = berth.content();
    let stderr = berth.run_with_stdin(&["load"], Some(bytes)).fails(1);
    assert!(stderr.contains(expected_message), "stderr: {stderr}");
    assert_eq!(berth.content(), before, "a failed load left content behind");
    let images = berth.run(&["images", "-q"]).ok();
    assert_eq!(images, "", "a failed load left an image");
}

#[test]
fn rejects_garbage_and_truncated_archives() {
    let berth = Berth::new();
    assert_rejected(
        &berth,
        b"this is not a tar archive at all, just text",
        "failed to load",
    );
    let archive = fs_err::read(fixture("layers-docker.tar")).unwrap();
    // Cuts off a 512-byte boundary land inside a member: a tar reader can
    // tell. (A cut exactly between members is indistinguishable from a
    // shorter archive, for Docker too.)
    for cut in [
        archive.len() / 3 + 7,
        archive.len() / 2 + 7,
        archive.len() * 2 / 3 + 7,
    ] {
        assert_rejected(&berth, &archive[..cut], "failed to load");
    }
    assert_rejected(&berth, b"", "failed to load");
}

/// Rewrites one member of a tar archive.
fn rewrite_member(
    archive: &[u8],
    name_matches: impl Fn(&str) -> bool,
    change: impl Fn(Vec<u8>) -> Vec<u8>,
) -> Vec<u8> {
    let mut input = tar::Archive::new(archive);
    let mut builder = tar::Builder::new(Vec::new());
    let mut changed = false;
    for entry in input.entries().unwrap() {
        let mut entry = entry.unwrap();
        let mut header = entry.header().clone();
        let path = entry.path().unwrap().to_string_lossy().into_owned();
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut data).unwrap();
        if name_matches(&path) && header.entry_type().is_file() {
            data = change(data);
            changed = true;
        }
        header.set_size(data.len() as u64);
        header.set_cksum();
        builder
            .append_data(&mut header, &path, data.as_slice())
            .unwrap();
    }
    assert!(changed, "no member matched");
    builder.into_inner().unwrap()
}

#[test]
fn rejects_a_layer_whose_diff_id_does_not_match_the_config() {
    let berth = Berth::new();
    let archive = fs_err::read(fixture("busybox-docker.tar")).unwrap();
    let tampered = rewrite_member(
        &archive,
        |name| name.ends_with("layer.tar"),
        |layer| {
            // Append one more file to the layer tar: a valid tar, another digest.
            let mut input = tar::Archive::new(layer.as_slice());
            let mut builder = tar::Builder::new(Vec::new());
            for entry in input.entries().unwrap() {
                let mut entry = entry.unwrap();
                let mut header = entry.header().clone();
                let path = entry.path().unwrap().into_owned();
                let mut data = Vec::new();
                std::io::Read::read_to_end(&mut entry, &mut data).unwrap();
                if header.entry_type().is_file() {
                    builder
                        .append_data(&mut header, &path, data.as_slice())
                        .unwrap();
                } else {
                    builder.append(&header, data.as_slice()).unwrap();
                }
            }
            let mut header = tar::Header::new_gnu();
            header.set_size(4);
            header.set_mode(0o644);
            header.set_uid(0);
            header.set_gid(0);
            header.set_mtime(0);
            header.set_cksum();
            builder
                .append_data(&mut header, "injected", &b"evil"[..])
                .unwrap();
            builder.into_inner().unwrap()
        },
    );
    assert_rejected(&berth, &tampered, "does not match the image config");
}

#[test]
fn rejects_an_oci_blob_whose_digest_does_not_match() {
    let berth = Berth::new();
    let archive = fs_err::read(fixture("busybox-oci.tar")).unwrap();
    // Flip a byte inside the compressed layer blob (the largest member).
    let mut largest = (String::new(), 0);
    for entry in tar::Archive::new(archive.as_slice()).entries().unwrap() {
        let entry = entry.unwrap();
        if entry.size() > largest.1 {
            largest = (
                entry.path().unwrap().to_string_lossy().into_owned(),
                entry.size(),
            );
        }
    }
    let tampered = rewrite_member(
        &archive,
        |name| name == largest.0,
        |mut blob| {
            let middle = blob.len() / 2;
            blob[middle] ^= 0xff;
            blob
        },
    );
    assert_rejected(&berth, &tampered, "failed to load");
}

#[test]
fn rejects_an_archive_member_that_climbs_out() {
    let berth = Berth::new();
    let mut header = tar::Header::new_gnu();
    header.set_size(2);
    header.set_mode(0o644);
    // The tar crate refuses to write ".." itself; write the name bytes raw.
    header.as_gnu_mut().unwrap().name[..12].copy_from_slice(b"../escape.js");
    header.set_cksum();
    let mut builder = tar::Builder::new(Vec::new());
    builder.append(&header, &b"{}"[..]).unwrap();
    let archive = builder.into_inner().unwrap();
    assert_rejected(&berth, &archive, "unsafe path");
    assert!(!berth.root().join("escape.js").exists());
}

#[test]
fn rejects_an_archive_without_an_index() {
    let berth = Berth::new();
    let mut builder = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(5);
    header.set_mode(0o644);
    header.set_cksum();
    builder
        .append_data(&mut header, "hello.txt", &b"hello"[..])
        .unwrap();
    assert_rejected(
        &berth,
        &builder.into_inner().unwrap(),
        "neither manifest.json nor index.json",
    );
}

#[test]
fn load_of_a_missing_file_names_it() {
    let berth = Berth::new();
    let stderr = berth
        .run(&["load", "-i", "/nonexistent/archive.tar"])
        .fails(1);
    assert!(stderr.contains("/nonexistent/archive.tar"), "{stderr}");
}
