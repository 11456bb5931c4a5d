//! Multi-platform images through the CLI. berth keeps images as Docker's
//! classic image store does: one platform per image, the one asked for.
//! `load` of an OCI layout whose index lists several platforms keeps the
//! host's; `pull` of a tag naming an index keeps the platform picked (the
//! index's digest becomes its repo digest); `push` sends the image's own
//! manifest. So berth cannot push an index: each platform is pushed by
//! berth as its own image, and the index over them is put into the
//! registry with the registry client, as `docker manifest push` would.

use berth_registry::client::host_platform;
use berth_types::image::media_type;
use serde_json::{json, Value};

use super::images::{MultiPlatform, PlatformImage};
use super::support::{docker, docker_host, Berth};
use super::{assert_empty, image_id, registry};

fn inspect(berth: &Berth, name: &str) -> Value {
    let text = berth.run(&["image", "inspect", name]).ok();
    let mut array: Vec<Value> = serde_json::from_str(&text).unwrap();
    array.remove(0)
}

/// Id and platform of `name` are those of `image`, and `repo_digest` is
/// one of its repo digests.
#[track_caller]
fn assert_image(berth: &Berth, name: &str, image: &PlatformImage, repo_digest: &str) {
    let inspected = assert_platform(berth, name, image);
    assert!(
        inspected["RepoDigests"]
            .as_array()
            .unwrap()
            .iter()
            .any(|digest| digest == repo_digest),
        "{inspected:#}"
    );
}

/// Id and platform of `name` are those of `image`; returns the inspection.
#[track_caller]
fn assert_platform(berth: &Berth, name: &str, image: &PlatformImage) -> Value {
    let inspected = inspect(berth, name);
    assert_eq!(inspected["Id"], image.id().to_string(), "{inspected:#}");
    assert_eq!(inspected["Architecture"], image.platform.architecture);
    assert_eq!(inspected["Os"], "linux");
    match &image.platform.variant {
        Some(variant) => assert_eq!(inspected["Variant"], variant.as_str()),
        None => assert!(inspected.get("Variant").is_none(), "{inspected:#}"),
    }
    inspected
}

/// The last line of a pull before the reference: the `Status:` line.
fn status_line(output: &str) -> &str {
    output.lines().rev().nth(1).unwrap_or_default()
}

#[test]
fn multi_platform_images_round_trip_through_a_registry() {
    let Some(registry) = registry() else { return };
    let images = MultiPlatform::new();
    let work = tempfile::tempdir().unwrap();

    // load keeps the host's platform only, as Docker's classic store.
    let source = Berth::new();
    let layout = work.path().join("multi.tar");
    images.write_layout(&layout, "multi:1");
    let loaded = source.run(&["load", "-i", layout.to_str().unwrap()]).ok();
    assert_eq!(loaded, "Loaded image: multi:1\n");
    let host = host_platform();
    let (host_image, other_image) = if host.architecture == "arm64" {
        (&images.arm64, &images.amd64)
    } else {
        (&images.amd64, &images.arm64)
    };
    assert_eq!(image_id(&source, "multi:1"), host_image.id().to_string());
    assert_eq!(source.run(&["images", "-q"]).ok().lines().count(), 1);
    let other_config = source
        .root()
        .join("blobs/sha256")
        .join(other_image.id().hex());
    assert!(!other_config.exists(), "the other platform is not kept");

    // Each platform is an image of its own, pushed by berth: its manifest
    // goes up unchanged, so its digest is the index entry's.
    let arm64_layout = work.path().join("arm64.tar");
    images.write_single(&images.arm64, &arm64_layout, "multi:arm64");
    source
        .run(&["load", "-i", arm64_layout.to_str().unwrap()])
        .ok();
    let amd64_layout = work.path().join("amd64.tar");
    images.write_single(&images.amd64, &amd64_layout, "multi:amd64");
    source
        .run(&["load", "-i", amd64_layout.to_str().unwrap()])
        .ok();
    for image in [&images.amd64, &images.arm64] {
        let architecture = &image.platform.architecture;
        let name = format!("{}/multi:{architecture}", registry.host());
        source
            .run(&["tag", &format!("multi:{architecture}"), &name])
            .ok();
        let push = source.run(&["push", &name]).ok();
        let digest_line = format!(
            "{architecture}: digest: {} size: {}",
            image.manifest_digest(),
            image.manifest.len()
        );
        assert_eq!(push.lines().last(), Some(digest_line.as_str()), "{push}");
    }
    // The host image loaded from the index pushes its one manifest too.
    let single = format!("{}/multi:loaded", registry.host());
    source.run(&["tag", "multi:1", &single]).ok();
    let push = source.run(&["push", &single]).ok();
    assert!(
        push.ends_with(&format!(
            "loaded: digest: {} size: {}\n",
            host_image.manifest_digest(),
            host_image.manifest.len()
        )),
        "{push}"
    );
    let client = registry.client(None).unwrap();
    let index_digest = client
        .put_manifest("multi", "1", media_type::OCI_INDEX, &images.index)
        .unwrap();
    assert_eq!(index_digest, images.index_digest());

    let name = format!("{}/multi:1", registry.host());
    let repo_digest = format!("{}/multi@{index_digest}", registry.host());
    let berth = Berth::new();
    let arm64 = berth
        .run(&["pull", "--platform", "linux/arm64", &name])
        .ok();
    assert!(arm64.starts_with("1: Pulling from multi\n"), "{arm64}");
    assert!(arm64.contains(": Pull complete\n"), "{arm64}");
    assert!(
        arm64.ends_with(&format!(
            "Digest: {index_digest}\nStatus: Downloaded newer image for {name}\n{name}\n"
        )),
        "{arm64}"
    );
    assert_image(&berth, &name, &images.arm64, &repo_digest);

    // The other platform: the shared layer is there already; the tag moves,
    // the repo digest does not (it stays with the image it named first, as
    // in Docker's reference store).
    let amd64 = berth
        .run(&["pull", "--platform", "linux/amd64", &name])
        .ok();
    assert!(amd64.contains(": Already exists\n"), "{amd64}");
    assert!(!amd64.contains(": Pull complete\n"), "{amd64}");
    assert_eq!(
        status_line(&amd64),
        format!("Status: Downloaded newer image for {name}")
    );
    let moved = assert_platform(&berth, &name, &images.amd64);
    assert_eq!(moved["RepoDigests"], json!([]), "{moved:#}");
    let untagged = assert_platform(&berth, &images.arm64.id().to_string(), &images.arm64);
    assert_eq!(untagged["RepoTags"], json!([]), "{untagged:#}");
    assert_eq!(
        untagged["RepoDigests"],
        json!([repo_digest]),
        "{untagged:#}"
    );

    // No --platform: the host's, which the tag names already.
    let default = berth.run(&["pull", &name]).ok();
    assert_eq!(
        default,
        format!(
            "1: Pulling from multi\nDigest: {index_digest}\nStatus: Image is up to date for {name}\n{name}\n"
        )
    );
    assert_platform(&berth, &name, host_image);
    let fresh = Berth::new();
    fresh.run(&["pull", "-q", &name]).ok();
    assert_image(&fresh, &name, host_image, &repo_digest);
    assert_eq!(
        fresh.run(&["run", "--rm", &name, "echo", "ok"]).ok(),
        "ok\n"
    );

    // A platform the index lacks: Docker's error, nothing stored.
    let none = Berth::new();
    let run = none.run(&["pull", "--platform", "linux/s390x", &name]);
    assert_eq!(
        run.fails(1),
        "Error: no matching manifest for linux/s390x in the manifest list entries\n"
    );
    assert_empty(&none);
    let run = berth.run(&["pull", "--platform", "linux/s390x", &name]);
    run.fails(1);
    assert_platform(&berth, &name, &images.amd64);

    // Docker pulls the same images from what berth put there.
    let Some(host) = docker_host() else { return };
    let _cleanup = DockerCleanup {
        host: host.clone(),
        name: name.clone(),
        arm64: images.arm64.id().to_string(),
    };
    _cleanup.run();
    for image in [&images.arm64, &images.amd64] {
        let platform = format!("linux/{}", image.platform.architecture);
        let pulled = docker(&host, &["pull", "--platform", &platform, &name]);
        assert!(
            pulled.status.success(),
            "{}",
            String::from_utf8_lossy(&pulled.stderr)
        );
        let inspected = docker(
            &host,
            &[
                "image",
                "inspect",
                "--format",
                "{{.Id}} {{.Architecture}}",
                &name,
            ],
        );
        assert_eq!(
            String::from_utf8_lossy(&inspected.stdout).trim(),
            format!("{} {}", image.id(), image.platform.architecture)
        );
    }
    // Docker too leaves the repo digest with the image it named first.
    let untagged = docker(
        &host,
        &[
            "image",
            "inspect",
            "--format",
            "{{json .RepoTags}} {{json .RepoDigests}}",
            &images.arm64.id().to_string(),
        ],
    );
    assert_eq!(
        String::from_utf8_lossy(&untagged.stdout).trim(),
        format!("[] [\"{repo_digest}\"]")
    );
    let moved = docker(
        &host,
        &[
            "image",
            "inspect",
            "--format",
            "{{json .RepoDigests}}",
            &name,
        ],
    );
    assert!(
        !String::from_utf8_lossy(&moved.stdout).contains(&repo_digest),
        "{}",
        String::from_utf8_lossy(&moved.stdout)
    );
    let refused = docker(&host, &["pull", "--platform", "linux/s390x", &name]);
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr).trim(),
        "no matching manifest for linux/s390x in the manifest list entries"
    );
}

/// Removes from the Docker engine what the test made there, before and
/// after (also when it fails): the tag, and the arm64 image, whose config
/// no other test makes. The amd64 image is the busybox fixture, which the
/// engine may hold under other names: it stays.
struct DockerCleanup {
    host: String,
    name: String,
    arm64: String,
}

impl DockerCleanup {
    fn run(&self) {
        let _ = docker(&self.host, &["rmi", &self.name]);
        let _ = docker(&self.host, &["rmi", "-f", &self.arm64]);
    }
}

impl Drop for DockerCleanup {
    fn drop(&mut self) {
        self.run();
    }
}
