//! `berth push` / `berth pull` / `run --pull` against real registries on
//! 127.0.0.1 (Debian's docker-registry), each test with private berth
//! roots; failures (missing tags, a dead registry, corrupt or missing
//! blobs, a registry killed mid-blob) must leave nothing in the store.
//! Where a Docker engine is reachable, images cross between berth and
//! Docker through the registry. `pull --all-tags` and multi-platform
//! images have modules of their own.
#![allow(clippy::unwrap_used)]

#[path = "registry_pull_push/all_tags.rs"]
mod all_tags;
#[path = "registry_pull_push/images.rs"]
mod images;
#[path = "registry_pull_push/interrupted.rs"]
mod interrupted;
#[path = "registry_pull_push/platforms.rs"]
mod platforms;
#[path = "registry_pull_push/proxy.rs"]
mod proxy;
mod support;

use berth_registry::testing::TestRegistry;
use berth_types::image::Manifest;
use berth_types::Reference;
use support::{docker, docker_host, fixture_id, Berth};

const BUSYBOX_ARCHIVE: &str = "busybox-docker.tar";
const LAYERS_ARCHIVE: &str = "layers-docker.tar";

fn registry() -> Option<TestRegistry> {
    if let Some(reason) = TestRegistry::unavailable_reason() {
        eprintln!("SKIP: {reason}");
        return None;
    }
    Some(TestRegistry::plain().unwrap())
}

/// A root holding `archive`'s image `source`, pushed to `target`.
fn pushed(archive: &str, source: &str, target: &str) -> Berth {
    let berth = Berth::new();
    berth.load(archive);
    berth.run(&["tag", source, target]).ok();
    berth.run(&["push", target]).ok();
    berth
}

fn image_id(berth: &Berth, name: &str) -> String {
    berth
        .run(&["image", "inspect", "--format", "{{.Id}}", name])
        .ok()
        .trim()
        .to_owned()
}

/// The image manifest the registry holds for `name:tag`.
fn registry_manifest(registry: &TestRegistry, name: &str) -> Manifest {
    let reference = Reference::parse_normalized(name).unwrap();
    registry
        .client(None)
        .unwrap()
        .resolve_manifest(&reference, &berth_registry::client::host_platform())
        .unwrap()
        .image
}

/// Nothing in `berth images`, no blob, layer or staging file left.
#[track_caller]
fn assert_empty(berth: &Berth) {
    assert_eq!(berth.run(&["images", "-q"]).ok(), "");
    assert_eq!(berth.content(), Vec::<std::path::PathBuf>::new());
}

#[test]
fn push_then_pull_gives_the_same_image_that_runs() {
    let Some(registry) = registry() else { return };
    let name = format!("{}/x:1", registry.host());
    let source = Berth::new();
    source.load(BUSYBOX_ARCHIVE);
    source.run(&["tag", "busybox:latest", &name]).ok();
    let push = source.run(&["push", &name]).ok();
    assert!(
        push.starts_with(&format!(
            "The push refers to repository [{}/x]\n",
            registry.host()
        )),
        "{push}"
    );
    assert!(push.contains(": Pushed\n"), "{push}");
    let digest_line = push.lines().last().unwrap();
    assert!(digest_line.starts_with("1: digest: sha256:"), "{push}");
    assert!(digest_line.contains(" size: "), "{push}");

    // Again: the registry has every layer.
    let again = source.run(&["push", &name]).ok();
    assert!(again.contains(": Layer already exists\n"), "{again}");
    assert!(!again.contains(": Pushed\n"), "{again}");
    assert_eq!(again.lines().last().unwrap(), digest_line);

    // Gone locally, pulled back: the same id, runnable.
    source.run(&["rmi", &name, "busybox:latest"]).ok();
    assert_empty(&source);
    let pull = source.run(&["pull", &name]).ok();
    let expected_id = fixture_id(BUSYBOX_ARCHIVE, "busybox:latest");
    assert!(pull.starts_with("1: Pulling from x\n"), "{pull}");
    assert!(pull.contains(": Pull complete\n"), "{pull}");
    assert!(pull.contains("\nDigest: sha256:"), "{pull}");
    assert!(
        pull.ends_with(&format!(
            "Status: Downloaded newer image for {name}\n{name}\n"
        )),
        "{pull}"
    );
    assert_eq!(image_id(&source, &name), expected_id);
    assert_eq!(
        source.run(&["run", "--rm", &name, "echo", "ok"]).ok(),
        "ok\n"
    );
    let repo_digest = source
        .run(&[
            "image",
            "inspect",
            "--format",
            "{{index .RepoDigests 0}}",
            &name,
        ])
        .ok();
    let pushed_digest = digest_line.split_whitespace().nth(2).unwrap();
    assert_eq!(
        repo_digest.trim(),
        format!("{}/x@{pushed_digest}", registry.host())
    );

    // Another repository of the same registry: blobs are mounted, not sent.
    let mounted = format!("{}/y:1", registry.host());
    source.run(&["tag", &name, &mounted]).ok();
    let push = source.run(&["push", &mounted]).ok();
    assert!(push.contains(": Mounted from x\n"), "{push}");
    assert!(!push.contains(": Pushed\n"), "{push}");
    assert_eq!(
        push.lines().last().unwrap(),
        digest_line,
        "the stored manifest is pushed unchanged"
    );

    // Pulled again: nothing to download, and (dockerd's way for an image
    // it has) no layer lines.
    let up_to_date = source.run(&["pull", &name]).ok();
    assert_eq!(
        up_to_date,
        format!(
            "1: Pulling from x\nDigest: {pushed_digest}\nStatus: Image is up to date for {name}\n{name}\n"
        )
    );

    // Another root pulls it too; -q prints only the reference.
    let other = Berth::new();
    assert_eq!(other.run(&["pull", "-q", &name]).ok(), format!("{name}\n"));
    assert_eq!(image_id(&other, &name), expected_id);
    assert_eq!(
        other
            .run(&["run", "--rm", &name, "sh", "-c", "echo $((6 * 7))"])
            .ok(),
        "42\n"
    );
}

#[test]
fn multi_layer_images_round_trip() {
    let Some(registry) = registry() else { return };
    let name = format!("{}/team/layers:v2", registry.host());
    let _source = pushed(LAYERS_ARCHIVE, "layers:latest", &name);
    assert_eq!(registry_manifest(&registry, &name).layers.len(), 4);
    let target = Berth::new();
    let pull = target
        .command()
        .env("BERTH_PULL_CONCURRENCY", "3")
        .args(["image", "pull", &name])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&pull.stdout);
    assert!(
        pull.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&pull.stderr)
    );
    assert_eq!(stdout.matches(": Pull complete\n").count(), 4, "{stdout}");
    assert_eq!(
        image_id(&target, &name),
        fixture_id(LAYERS_ARCHIVE, "layers:latest")
    );
    target.run(&["run", "--rm", &name, "true"]).ok();
}

#[test]
fn missing_tag_is_dockers_error_and_stores_nothing() {
    let Some(registry) = registry() else { return };
    let _source = pushed(
        BUSYBOX_ARCHIVE,
        "busybox:latest",
        &format!("{}/x:1", registry.host()),
    );
    let berth = Berth::new();
    let name = format!("{}/x:nope", registry.host());
    let stderr = berth.run(&["pull", &name]).fails(1);
    assert_eq!(
        stderr,
        format!("Error: manifest for {name} not found: manifest unknown: manifest unknown\n")
    );
    assert_empty(&berth);
    let stderr = berth
        .run(&["pull", &format!("{}/nothing-here", registry.host())])
        .fails(1);
    assert!(stderr.contains("manifest unknown"), "{stderr}");
    assert_empty(&berth);
}

#[test]
fn dead_registry_fails_cleanly_and_a_restart_recovers() {
    let Some(mut registry) = registry() else {
        return;
    };
    let name = format!("{}/x:1", registry.host());
    let _source = pushed(BUSYBOX_ARCHIVE, "busybox:latest", &name);
    registry.kill();
    let berth = Berth::new();
    let stderr = berth.run(&["pull", &name]).fails(1);
    assert!(
        stderr.starts_with(&format!("Error: Get \"http://{}/v2/", registry.host())),
        "{stderr}"
    );
    assert_empty(&berth);
    registry.restart().unwrap();
    berth.run(&["pull", "-q", &name]).ok();
    assert_eq!(
        image_id(&berth, &name),
        fixture_id(BUSYBOX_ARCHIVE, "busybox:latest")
    );
}

#[test]
fn a_blob_lost_mid_pull_leaves_no_layers_behind() {
    let Some(registry) = registry() else { return };
    let name = format!("{}/layers:1", registry.host());
    let _source = pushed(LAYERS_ARCHIVE, "layers:latest", &name);
    let manifest = registry_manifest(&registry, &name);
    let last = manifest.layers.last().unwrap();
    let data = registry.blob_data_path(&last.digest);
    let saved = fs_err::read(&data).unwrap();
    fs_err::remove_file(&data).unwrap();

    // One download at a time: the first three layers are unpacked and
    // committed before the fourth fails.
    let berth = Berth::new();
    let output = berth
        .command()
        .env("BERTH_PULL_CONCURRENCY", "1")
        .args(["pull", &name])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert_eq!(stdout.matches(": Pull complete\n").count(), 3, "{stdout}");
    assert_empty(&berth);

    fs_err::write(&data, saved).unwrap();
    berth.run(&["pull", &name]).ok();
    assert_eq!(
        image_id(&berth, &name),
        fixture_id(LAYERS_ARCHIVE, "layers:latest")
    );
}

#[test]
fn a_corrupt_blob_is_refused() {
    let Some(registry) = registry() else { return };
    let name = format!("{}/x:1", registry.host());
    let _source = pushed(BUSYBOX_ARCHIVE, "busybox:latest", &name);
    let layer = registry_manifest(&registry, &name).layers[0].clone();
    let data = registry.blob_data_path(&layer.digest);
    let mut bytes = fs_err::read(&data).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    fs_err::write(&data, &bytes).unwrap();

    let berth = Berth::new();
    let stderr = berth.run(&["pull", &name]).fails(1);
    assert_eq!(
        stderr,
        format!(
            "Error: filesystem layer verification failed for digest {}\n",
            layer.digest
        )
    );
    assert_empty(&berth);
}

#[test]
fn run_pulls_a_missing_image() {
    let Some(registry) = registry() else { return };
    let name = format!("{}/x:1", registry.host());
    let _source = pushed(BUSYBOX_ARCHIVE, "busybox:latest", &name);

    let berth = Berth::new();
    let never = berth.run(&["run", "--rm", "--pull=never", &name, "true"]);
    assert!(
        never.fails(125).contains("No such image"),
        "{}",
        never.stderr()
    );
    assert_empty(&berth);

    let run = berth.run(&["run", "--rm", &name, "echo", "ok"]);
    assert_eq!(run.ok(), "ok\n");
    let stderr = run.stderr();
    assert!(
        stderr.starts_with(&format!(
            "Unable to find image '{name}' locally\n1: Pulling from x\n"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("Status: Downloaded newer image for {name}\n")),
        "{stderr}"
    );

    // Present now: no pull unless asked for.
    let again = berth.run(&["run", "--rm", &name, "true"]);
    again.ok();
    assert_eq!(again.stderr(), "");
    let always = berth.run(&["create", "--pull=always", &name]);
    always.ok();
    assert!(
        always
            .stderr()
            .contains(&format!("Status: Image is up to date for {name}\n")),
        "{}",
        always.stderr()
    );
}

#[test]
fn docker_pulls_what_berth_pushed_and_berth_pulls_what_docker_pushed() {
    let Some(host) = docker_host() else { return };
    let Some(registry) = registry() else { return };
    let from_berth = format!("{}/from-berth:1", registry.host());
    let _source = pushed(BUSYBOX_ARCHIVE, "busybox:latest", &from_berth);
    let pull = docker(&host, &["pull", &from_berth]);
    assert!(
        pull.status.success(),
        "{}",
        String::from_utf8_lossy(&pull.stderr)
    );
    let run = docker(&host, &["run", "--rm", &from_berth, "echo", "ok"]);
    assert_eq!(String::from_utf8_lossy(&run.stdout), "ok\n");

    let from_docker = format!("{}/from-docker:1", registry.host());
    assert!(docker(&host, &["tag", &from_berth, &from_docker])
        .status
        .success());
    let push = docker(&host, &["push", &from_docker]);
    assert!(
        push.status.success(),
        "{}",
        String::from_utf8_lossy(&push.stderr)
    );
    let _ = docker(&host, &["rmi", &from_berth, &from_docker]);

    let berth = Berth::new();
    berth.run(&["pull", &from_docker]).ok();
    assert_eq!(
        berth.run(&["run", "--rm", &from_docker, "echo", "ok"]).ok(),
        "ok\n"
    );
}
