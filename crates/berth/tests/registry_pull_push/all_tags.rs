//! `pull -a` / `--all-tags`: every tag of a repository, Docker's output
//! (one `TAG: Pulling from` … `Digest:` section per tag in the registry's
//! order, one `Status:` line for the repository, the repository's name),
//! and Docker's errors.

use std::collections::BTreeSet;

use berth_registry::testing::TestRegistry;
use berth_types::Reference;

use super::support::{docker, docker_host, fixture_id, table, Berth};
use super::{assert_empty, image_id, registry, BUSYBOX_ARCHIVE, LAYERS_ARCHIVE};

/// The tags `team/app` gets: two of busybox, one of the 4-layer image.
const TAGS: [(&str, &str, &str); 3] = [
    ("1", BUSYBOX_ARCHIVE, "busybox:latest"),
    ("2", LAYERS_ARCHIVE, "layers:latest"),
    ("latest", BUSYBOX_ARCHIVE, "busybox:latest"),
];

/// A registry holding `team/app` with [`TAGS`] and `team/other:1` (which
/// must not be pulled), pushed by berth; returns the pushing root.
fn seeded(registry: &TestRegistry) -> Berth {
    let source = Berth::new();
    source.load(BUSYBOX_ARCHIVE);
    source.load(LAYERS_ARCHIVE);
    for (tag, _, image) in TAGS {
        let name = format!("{}/team/app:{tag}", registry.host());
        source.run(&["tag", image, &name]).ok();
        source.run(&["push", "-q", &name]).ok();
    }
    let other = format!("{}/team/other:1", registry.host());
    source.run(&["tag", "busybox:latest", &other]).ok();
    source.run(&["push", "-q", &other]).ok();
    source
}

/// The tags of `team/app` in the registry's order (distribution lists
/// them in its storage's directory order, not sorted).
fn registry_tags(registry: &TestRegistry) -> Vec<String> {
    let name = Reference::parse_normalized(&format!("{}/team/app", registry.host())).unwrap();
    registry.client(None).unwrap().list_tags(&name).unwrap()
}

fn is_layer_line(line: &str) -> bool {
    line.split_once(": ")
        .is_some_and(|(id, _)| id.len() == 12 && id.bytes().all(|byte| byte.is_ascii_hexdigit()))
}

/// The output without its layer lines.
fn without_layers(output: &str) -> Vec<String> {
    output
        .lines()
        .filter(|line| !is_layer_line(line))
        .map(str::to_owned)
        .collect()
}

/// What `pull -a` prints besides layer lines, for `tags` in that order.
fn expected_frame(registry: &TestRegistry, tags: &[String], status: &str) -> Vec<String> {
    let client = registry.client(None).unwrap();
    let mut lines = Vec::new();
    for tag in tags {
        let digest = client.manifest_digest("team/app", tag).unwrap().unwrap();
        lines.push(format!("{tag}: Pulling from team/app"));
        lines.push(format!("Digest: {digest}"));
    }
    let name = format!("{}/team/app", registry.host());
    lines.push(format!("Status: {status} for {name}"));
    lines.push(name);
    lines
}

/// The layer lines of the section of `output` for `tag`.
fn section<'a>(output: &'a str, tag: &str) -> Vec<&'a str> {
    output
        .lines()
        .skip_while(|line| *line != format!("{tag}: Pulling from team/app"))
        .skip(1)
        .take_while(|line| is_layer_line(line))
        .collect()
}

#[test]
fn pull_all_tags_gets_every_tag_of_the_repository() {
    let Some(registry) = registry() else { return };
    let _source = seeded(&registry);
    let tags = registry_tags(&registry);
    assert_eq!(
        tags.iter().map(String::as_str).collect::<BTreeSet<_>>(),
        BTreeSet::from(["1", "2", "latest"])
    );
    let name = format!("{}/team/app", registry.host());

    let berth = Berth::new();
    let output = berth.run(&["pull", "--all-tags", &name]).ok();
    assert_eq!(
        without_layers(&output),
        expected_frame(&registry, &tags, "Downloaded newer image"),
        "{output}"
    );
    assert!(!output.contains("Using default tag"), "{output}");
    // Each image's layers are shown once, with the first tag that names
    // it; a tag of an image pulled already shows none (dockerd's way).
    let mut seen = BTreeSet::new();
    for tag in &tags {
        let (_, archive, source) = TAGS.iter().find(|(name, _, _)| name == tag).unwrap();
        let lines = section(&output, tag);
        if seen.insert(*source) {
            assert!(
                lines
                    .iter()
                    .any(|line| line.ends_with(": Pull complete")
                        || line.ends_with(": Already exists")),
                "tag {tag}:\n{output}"
            );
        } else {
            assert_eq!(lines, Vec::<&str>::new(), "tag {tag}:\n{output}");
        }
        assert_eq!(
            image_id(&berth, &format!("{name}:{tag}")),
            fixture_id(archive, source)
        );
    }

    // Every tag listed, nothing of the other repository.
    let images = berth
        .run(&["images", "--format", "{{.Repository}}:{{.Tag}}"])
        .ok();
    let listed: BTreeSet<&str> = images.lines().collect();
    let expected: BTreeSet<String> = TAGS
        .iter()
        .map(|(tag, _, _)| format!("{name}:{tag}"))
        .collect();
    assert_eq!(
        listed,
        expected.iter().map(String::as_str).collect(),
        "{images}"
    );
    let (_, rows) = table(&berth.run(&["images"]).ok());
    assert_eq!(rows.len(), 3);

    // Again: nothing new, no layer lines at all.
    let again = berth.run(&["pull", "-a", &name]).ok();
    assert_eq!(
        again.lines().collect::<Vec<_>>(),
        expected_frame(&registry, &tags, "Image is up to date"),
        "{again}"
    );

    // -q prints only the repository; another root gets the same images.
    let quiet = Berth::new();
    assert_eq!(
        quiet.run(&["pull", "-a", "-q", &name]).ok(),
        format!("{name}\n")
    );
    let listed = quiet.run(&["images", "--format", "{{.Tag}} {{.ID}}"]).ok();
    let mut listed: Vec<&str> = listed.lines().collect();
    listed.sort_unstable();
    let short = |archive, source| fixture_id(archive, source)[7..19].to_owned();
    assert_eq!(
        listed,
        TAGS.iter()
            .map(|(tag, archive, source)| format!("{tag} {}", short(*archive, *source)))
            .collect::<Vec<_>>(),
        "three tags of two images"
    );
    assert_eq!(
        quiet
            .run(&["run", "--rm", &format!("{name}:2"), "echo", "ok"])
            .ok(),
        "ok\n"
    );
}

#[test]
fn pull_all_tags_errors_are_dockers() {
    let Some(registry) = registry() else { return };
    let _source = seeded(&registry);
    let berth = Berth::new();
    let tagged = format!("{}/team/app:1", registry.host());
    let digest = registry
        .client(None)
        .unwrap()
        .manifest_digest("team/app", "1")
        .unwrap()
        .unwrap();
    let pinned = format!("{}/team/app@{digest}", registry.host());
    for name in [&tagged, &pinned] {
        for flag in ["-a", "--all-tags"] {
            let run = berth.run(&["pull", flag, name]);
            assert_eq!(
                run.fails(1),
                "Error: tag can't be used with --all-tags/-a\n",
                "{name}"
            );
            assert_eq!(run.stdout(), "");
        }
    }
    assert_empty(&berth);

    let unknown = format!("{}/team/nothing", registry.host());
    let run = berth.run(&["pull", "-a", &unknown]);
    assert_eq!(
        run.fails(1),
        format!(
            "Error: repository {unknown} not found: name unknown: repository name not known to registry\n"
        )
    );
    assert_eq!(run.stdout(), "");
    assert_empty(&berth);
}

/// The same pull with the Docker engine: the same sections in the same
/// order, the same digests and status, the same last line; and Docker's
/// errors say what berth's say.
#[test]
fn pull_all_tags_prints_what_docker_prints() {
    let Some(host) = docker_host() else { return };
    let Some(registry) = registry() else { return };
    let _source = seeded(&registry);
    let name = format!("{}/team/app", registry.host());
    let remove_from_docker = || {
        for (tag, _, _) in TAGS {
            let _ = docker(&host, &["rmi", &format!("{name}:{tag}")]);
        }
    };
    remove_from_docker();
    let pulled = docker(&host, &["pull", "-a", &name]);
    let docker_stdout = String::from_utf8_lossy(&pulled.stdout).into_owned();
    remove_from_docker();
    assert!(
        pulled.status.success(),
        "{}",
        String::from_utf8_lossy(&pulled.stderr)
    );
    let berth = Berth::new();
    let berth_stdout = berth.run(&["pull", "-a", &name]).ok();
    assert_eq!(
        without_layers(&berth_stdout),
        without_layers(&docker_stdout),
        "berth:\n{berth_stdout}\ndocker:\n{docker_stdout}"
    );

    for name in [
        format!("{name}:1"),
        format!("{}/team/nothing", registry.host()),
    ] {
        let docker_run = docker(&host, &["pull", "-a", &name]);
        assert_eq!(docker_run.status.code(), Some(1));
        let docker_stderr = String::from_utf8_lossy(&docker_run.stderr);
        let berth_stderr = berth.run(&["pull", "-a", &name]).fails(1);
        // Docker says where the message comes from; berth has no daemon.
        let docker_message = docker_stderr
            .trim()
            .trim_start_matches("Error response from daemon: ");
        assert_eq!(
            berth_stderr.trim().trim_start_matches("Error: "),
            docker_message
        );
    }
}
