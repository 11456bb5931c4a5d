//! Round trips with a real Docker engine (started by scripts/test.sh and
//! named by BERTH_TEST_DOCKER_HOST); each test prints why it skipped when
//! none is reachable.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use support::{docker, docker_host, fixture, Berth};

#[track_caller]
fn docker_ok(host: &str, args: &[&str]) -> String {
    let output = docker(host, args);
    assert!(
        output.status.success(),
        "docker {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// docker save → berth load → berth save → docker load → docker run.
#[test]
fn docker_save_berth_load_berth_save_docker_load_run() {
    let Some(host) = docker_host() else { return };
    let berth = Berth::new();
    let work = tempfile::tempdir().unwrap();
    let unique = format!("berth-roundtrip-{}", std::process::id());
    let source_tag = format!("{unique}-src:latest");
    let back_tag = format!("{unique}-back:latest");

    for archive in ["layers-docker-gzip.tar", "busybox-docker.tar"] {
        docker_ok(
            &host,
            &["load", "-q", "-i", fixture(archive).to_str().unwrap()],
        );
    }
    docker_ok(&host, &["tag", "layers:latest", &source_tag]);
    let docker_archive = work.path().join("from-docker.tar");
    docker_ok(
        &host,
        &["save", "-o", docker_archive.to_str().unwrap(), &source_tag],
    );
    let docker_id = docker_ok(&host, &["inspect", "-f", "{{.Id}}", &source_tag]);

    let loaded = berth
        .run(&["load", "-i", docker_archive.to_str().unwrap()])
        .ok();
    assert_eq!(loaded, format!("Loaded image: {source_tag}\n"));
    let berth_id = berth.run(&["inspect", "-f", "{{.Id}}", &source_tag]).ok();
    assert_eq!(
        berth_id.trim(),
        docker_id.trim(),
        "berth and docker disagree on the image id"
    );

    berth.run(&["tag", &source_tag, &back_tag]).ok();
    let berth_archive = work.path().join("from-berth.tar");
    berth
        .run(&["save", "-o", berth_archive.to_str().unwrap(), &back_tag])
        .ok();

    docker_ok(&host, &["rmi", &source_tag]);
    let loaded = docker_ok(&host, &["load", "-i", berth_archive.to_str().unwrap()]);
    assert!(loaded.contains(&back_tag), "{loaded}");
    let back_id = docker_ok(&host, &["inspect", "-f", "{{.Id}}", &back_tag]);
    assert_eq!(back_id.trim(), docker_id.trim());

    let run = docker(
        &host,
        &[
            "run",
            "--rm",
            "--network",
            "none",
            &back_tag,
            "cat",
            "/fixture/overwritten",
            "/fixture/opaque/readded",
        ],
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    if run.status.success() {
        assert_eq!(stdout, "version 2\nnew\n");
        let listing = docker_ok(
            &host,
            &[
                "run",
                "--rm",
                "--network",
                "none",
                &back_tag,
                "ls",
                "/fixture/opaque",
            ],
        );
        assert_eq!(listing, "readded\n");
    } else {
        // Loading worked; only running failed. Say why rather than pass silently.
        panic!(
            "docker run of the image berth saved failed: {}",
            String::from_utf8_lossy(&run.stderr)
        );
    }
    docker_ok(&host, &["rmi", &back_tag]);
}

/// The same `images` row in berth and Docker for the same archive.
#[test]
fn images_row_matches_docker() {
    let Some(host) = docker_host() else { return };
    let berth = Berth::new();
    berth.load("busybox-extra.tar");
    docker_ok(
        &host,
        &[
            "load",
            "-q",
            "-i",
            fixture("busybox-extra.tar").to_str().unwrap(),
        ],
    );
    for format in [
        "{{.Repository}} {{.Tag}} {{.ID}} {{.CreatedSince}} {{.Size}} {{.Digest}}",
        "{{json .CreatedAt}}",
    ] {
        let from_docker = docker_ok(&host, &["images", "--format", format, "other"]);
        let from_berth = berth.run(&["images", "--format", format, "other"]).ok();
        assert_eq!(from_berth, from_docker, "format {format}");
    }
    let from_docker = docker_ok(&host, &["image", "inspect", "--format", "{{json .Config}} {{json .RootFS}} {{.Size}} {{.Architecture}} {{.Os}} {{json .RepoTags}}", "other"]);
    let from_berth = berth.run(&["image", "inspect", "--format", "{{json .Config}} {{json .RootFS}} {{.Size}} {{.Architecture}} {{.Os}} {{json .RepoTags}}", "other"]).ok();
    assert_eq!(from_berth, from_docker);
}
