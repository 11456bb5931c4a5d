//! Hostile input: tar streams and container file systems that try to make `cp` read or
//! write outside the container root. Each test puts a sentinel next to the root (the
//! "host") and checks it was neither read nor touched.
//!
//! Where Docker versions differ, berth follows current go-archive: an entry whose name
//! climbs out of the destination (`../x`) is refused even when the destination is `/`
//! (Docker 20.10 wrote `/x` then), and a symlink entry may point anywhere (20.10 refused
//! relative targets leaving the destination: `invalid symlink "/etc/up" ->
//! "../../../.."`) because every later path through it is resolved inside the root.

use std::path::PathBuf;

use fs_err::os::unix::fs::symlink;

use super::support::*;
use crate::copy::{
    copy_container_to_host, copy_host_to_container, extract_into_container, stat_path, CopyError,
    ExtractOptions,
};

const SECRET: &str = "host secret\n";

/// The fixture plus `<temp>/secret`, a host file outside the root.
fn fixture_with_secret() -> (Fixture, PathBuf) {
    let fixture = Fixture::new();
    let secret = fixture.temp.path().join("secret");
    fs_err::write(&secret, SECRET).unwrap();
    (fixture, secret)
}

fn extract(fixture: &Fixture, destination: &str, tar: &[u8]) -> Result<(), CopyError> {
    extract_into_container(
        &fixture.container(),
        destination,
        tar,
        &ExtractOptions::default(),
    )
}

fn assert_untouched(fixture: &Fixture, secret: &PathBuf) {
    assert_eq!(fs_err::read_to_string(secret).unwrap(), SECRET);
    assert!(
        !fixture.temp.path().join("outside").exists(),
        "a file appeared outside the root"
    );
}

#[test]
fn dot_dot_entries_are_refused() {
    let (fixture, secret) = fixture_with_secret();
    for name in [
        "../outside",
        "../../outside",
        "/../outside",
        "a/../../outside",
        "../secret",
    ] {
        let tar = RawTar::new().file(name, "evil").finish();
        let error = extract(&fixture, "/dst", &tar).unwrap_err();
        assert!(
            matches!(error, CopyError::InvalidEntryName { .. }),
            "{name}: {error}"
        );
        assert_eq!(error.to_string(), format!("invalid entry name {name:?}"));
    }
    let tar = RawTar::new().directory("../outside/").finish();
    assert!(matches!(
        extract(&fixture, "/dst", &tar),
        Err(CopyError::InvalidEntryName { .. })
    ));
    // `..` that stays inside the destination is fine.
    let tar = RawTar::new().file("a/../inside", "ok").finish();
    extract(&fixture, "/dst", &tar).unwrap();
    assert!(fixture.inside("/dst/inside").is_file());
    assert_untouched(&fixture, &secret);
}

#[test]
fn absolute_entries_stay_below_the_destination() {
    let (fixture, secret) = fixture_with_secret();
    let host_path = secret.to_str().unwrap().to_owned();
    let tar = RawTar::new()
        .file(&host_path, "evil")
        .file("/outside", "evil")
        .finish();
    extract(&fixture, "/dst", &tar).unwrap();
    assert_eq!(
        fs_err::read_to_string(fixture.inside(&format!("/dst{host_path}"))).unwrap(),
        "evil"
    );
    assert!(fixture.inside("/dst/outside").is_file());
    assert_untouched(&fixture, &secret);
}

#[test]
fn symlink_entries_cannot_redirect_later_entries_outside() {
    let (fixture, secret) = fixture_with_secret();
    let temp = fixture.temp.path().to_str().unwrap().to_owned();
    let tar = RawTar::new()
        .symlink("up", "../../../../../../..")
        .file("up/outside", "evil")
        .symlink("abs", &temp)
        .file("abs/outside", "evil")
        .file("abs/secret", "evil")
        .symlink("slash", "/")
        .file(&format!("slash{temp}/secret"), "evil")
        .finish();
    extract(&fixture, "/dst", &tar).unwrap();
    // `..` stops at the container root; absolute targets start from it.
    assert_eq!(
        fs_err::read_to_string(fixture.inside("/outside")).unwrap(),
        "evil"
    );
    assert_eq!(
        fs_err::read_to_string(fixture.inside(&format!("{temp}/outside"))).unwrap(),
        "evil"
    );
    assert_eq!(
        fs_err::read_to_string(fixture.inside(&format!("{temp}/secret"))).unwrap(),
        "evil"
    );
    assert_untouched(&fixture, &secret);
}

#[test]
fn symlink_entry_replaced_by_file_is_not_followed() {
    // A symlink to the host secret, then a regular file of the same name: the file
    // replaces the link instead of writing through it.
    let (fixture, secret) = fixture_with_secret();
    let tar = RawTar::new()
        .symlink("victim", secret.to_str().unwrap())
        .file("victim", "evil")
        .finish();
    extract(&fixture, "/dst", &tar).unwrap();
    assert_eq!(
        fs_err::read_to_string(fixture.inside("/dst/victim")).unwrap(),
        "evil"
    );
    assert_untouched(&fixture, &secret);
}

#[test]
fn hardlinks_cannot_reach_outside() {
    let (fixture, secret) = fixture_with_secret();
    for target in ["../secret", "../../../secret", "/../secret", "."] {
        let tar = RawTar::new().hardlink("stolen", target).finish();
        let error = extract(&fixture, "/dst", &tar).unwrap_err();
        assert!(
            matches!(error, CopyError::InvalidHardlinkTarget { .. }),
            "{target}: {error}"
        );
    }
    // An absolute target is read below the destination, and a symlink on the way is
    // followed inside the root: neither reaches the host file.
    let absolute = secret.to_str().unwrap().to_owned();
    let tar = RawTar::new().hardlink("stolen", &absolute).finish();
    assert!(extract(&fixture, "/dst", &tar).is_err());
    let tar = RawTar::new()
        .symlink("slash", "/")
        .hardlink("stolen", &format!("slash{absolute}"))
        .finish();
    assert!(extract(&fixture, "/dst", &tar).is_err());
    assert!(!fixture.inside("/dst/stolen").exists());
    assert_eq!(fs_err::metadata(&secret).unwrap().nlink(), 1);
    assert_untouched(&fixture, &secret);
}

#[test]
fn container_symlinks_cannot_be_read_through_to_the_host() {
    let (fixture, secret) = fixture_with_secret();
    let temp = fixture.temp.path().to_str().unwrap().to_owned();
    symlink(&secret, fixture.inside("/shadow")).unwrap();
    symlink("/", fixture.inside("/etcroot")).unwrap();
    symlink("../../../../../../..", fixture.inside("/up")).unwrap();
    let out = fixture.host.join("out");
    let container = fixture.container();

    // -L follows the link inside the root, where the target does not exist.
    let error = copy_container_to_host(&container, "/shadow", &out, true, false).unwrap_err();
    assert!(error.is_not_found(), "{error}");
    for path in [
        format!("/etcroot{temp}/secret"),
        format!("/up{temp}/secret"),
        format!("/../../..{temp}/secret"),
        "/shadow/".to_owned(),
    ] {
        let error = copy_container_to_host(&container, &path, &out, false, false).unwrap_err();
        assert!(error.is_not_found(), "{path}: {error}");
        assert!(
            stat_path(&container, &path).unwrap_err().is_not_found(),
            "{path}"
        );
    }
    assert!(!out.exists());
    // The link's target as seen from inside the container.
    assert_eq!(
        stat_path(&container, "/shadow").unwrap().link_target,
        secret.to_str().unwrap()
    );

    // What the link points to inside the root is what gets copied.
    write(
        &fixture.inside(&format!("{temp}/secret")),
        "inside\n",
        0o600,
    );
    copy_container_to_host(&container, "/shadow", &out, true, false).unwrap();
    assert_eq!(fs_err::read_to_string(&out).unwrap(), "inside\n");
    assert_untouched(&fixture, &secret);
}

#[test]
fn container_symlinks_cannot_be_written_through_to_the_host() {
    let (fixture, secret) = fixture_with_secret();
    let temp = fixture.temp.path().to_str().unwrap().to_owned();
    symlink(&secret, fixture.inside("/dst/shadow")).unwrap();
    symlink(fixture.temp.path(), fixture.inside("/dst/hostdir")).unwrap();
    symlink("/", fixture.inside("/etcroot")).unwrap();
    let container = fixture.container();
    let file = fixture.source.join("file");

    // A file copied onto a symlink to a host path goes to that path inside the root:
    // its directory does not exist there, so (as with Docker) the copy is not found…
    let error = copy_host_to_container(&container, &file, "/dst/shadow", false, false).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("Could not find the file {temp} in container cpt")
    );
    // …and once it does, the file lands inside the root.
    fs_err::create_dir_all(fixture.inside(&temp)).unwrap();
    copy_host_to_container(&container, &file, "/dst/shadow", false, false).unwrap();
    assert_eq!(
        fs_err::read_to_string(fixture.inside(&temp).join("secret")).unwrap(),
        "hello\n"
    );
    // A directory symlink to a host directory resolves inside the root too: here it
    // does not exist there, so the copy fails instead of writing to the host.
    let error = copy_host_to_container(&container, &file, "/dst/hostdir/outside/x", false, false)
        .unwrap_err();
    assert!(error.is_not_found(), "{error}");
    copy_host_to_container(
        &container,
        &file,
        &format!("/etcroot{temp}/outside"),
        false,
        false,
    )
    .unwrap();
    assert!(fixture.inside(&format!("{temp}/outside")).is_file());
    assert_untouched(&fixture, &secret);
}

use std::os::unix::fs::MetadataExt;
