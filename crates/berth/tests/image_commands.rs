//! `images`, `tag`, `rmi`, `inspect`, `history`, `image prune`, `import`,
//! `save`, `version`, `info`: Docker's flags, columns and exit codes.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use serde_json::Value;
use support::{fixture, fixture_id, Berth};

fn short(id: &str) -> &str {
    &id[7..19]
}

#[test]
fn images_prints_docker_columns() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    let id = fixture_id("busybox-docker.tar", "busybox:latest");
    let output = berth.run(&["images"]).ok();
    let lines: Vec<&str> = output.lines().collect();
    assert_eq!(
        lines[0],
        "REPOSITORY   TAG       IMAGE ID       CREATED       SIZE"
    );
    assert_eq!(
        lines[1],
        format!(
            "busybox      latest    {}   2 years ago   1.98MB",
            short(&id)
        )
    );
    assert_eq!(lines.len(), 2);

    let digests = berth.run(&["images", "--digests"]).ok();
    assert!(
        digests.starts_with("REPOSITORY   TAG       DIGEST    IMAGE ID"),
        "{digests}"
    );
    assert!(digests.contains("<none>"), "{digests}");

    assert_eq!(
        berth.run(&["images", "-q"]).ok(),
        format!("{}\n", short(&id))
    );
    assert_eq!(
        berth.run(&["image", "ls", "-q", "--no-trunc"]).ok(),
        format!("{id}\n")
    );
    assert_eq!(berth.run(&["images", "-q", "nosuchrepo"]).ok(), "");
}

#[test]
fn images_format_templates_and_json() {
    let berth = Berth::new();
    berth.load("busybox-extra.tar");
    let names = berth
        .run(&["images", "--format", "{{.Repository}}:{{.Tag}}"])
        .ok();
    let mut names: Vec<&str> = names.lines().collect();
    names.sort();
    assert_eq!(names, ["extra:1", "extra:latest", "other:latest"]);

    let json = berth
        .run(&["images", "--format", "{{json .}}", "other"])
        .ok();
    let row: Value = serde_json::from_str(json.trim()).unwrap();
    for key in [
        "Containers",
        "CreatedAt",
        "CreatedSince",
        "Digest",
        "ID",
        "Repository",
        "SharedSize",
        "Size",
        "Tag",
        "UniqueSize",
        "VirtualSize",
    ] {
        assert!(row.get(key).is_some(), "missing {key} in {json}");
    }
    assert_eq!(row["Repository"], "other");
    assert_eq!(row["CreatedAt"], "2024-01-01 00:00:00 +0000 UTC");

    let table = berth
        .run(&[
            "images",
            "--format",
            "table {{.Repository}}\t{{.Tag}}",
            "extra:1",
        ])
        .ok();
    assert_eq!(table, "REPOSITORY   TAG\nextra        1\n");
}

#[test]
fn tag_adds_a_name_and_rejects_bad_ones() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth
        .run(&["tag", "busybox", "localhost:5000/team/app:v1"])
        .ok();
    let names = berth
        .run(&["images", "--format", "{{.Repository}}:{{.Tag}}"])
        .ok();
    assert!(names.contains("localhost:5000/team/app:v1\n"), "{names}");

    let stderr = berth.run(&["tag", "busybox", "Bad/Name"]).fails(1);
    assert!(stderr.contains("invalid reference format"), "{stderr}");
    let stderr = berth.run(&["tag", "busybox", "UPPER"]).fails(1);
    assert!(
        stderr.contains("repository name (library/UPPER) must be lowercase"),
        "{stderr}"
    );
    let stderr = berth.run(&["tag", "nosuch", "x"]).fails(1);
    assert!(stderr.contains("No such image: nosuch:latest"), "{stderr}");
}

#[test]
fn rmi_untags_then_deletes_and_frees_layers() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    let id = fixture_id("busybox-docker.tar", "busybox:latest");
    berth.run(&["tag", "busybox", "second:tag"]).ok();

    assert_eq!(
        berth.run(&["rmi", "second:tag"]).ok(),
        "Untagged: second:tag\n"
    );
    let output = berth.run(&["rmi", "busybox"]).ok();
    let lines: Vec<&str> = output.lines().collect();
    assert_eq!(lines[0], "Untagged: busybox:latest");
    assert_eq!(lines[1], format!("Deleted: {id}"));
    assert_eq!(lines.len(), 3, "image and its one layer: {output}");
    assert!(berth.content().is_empty(), "left: {:?}", berth.content());

    let stderr = berth.run(&["rmi", "busybox"]).fails(1);
    assert!(stderr.contains("No such image: busybox:latest"), "{stderr}");
}

#[test]
fn rmi_by_id_with_several_repositories_needs_force() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    let id = fixture_id("busybox-docker.tar", "busybox:latest");
    berth.run(&["tag", "busybox", "elsewhere"]).ok();
    let stderr = berth.run(&["rmi", short(&id)]).fails(1);
    assert!(stderr.contains("must be forced"), "{stderr}");
    let output = berth.run(&["image", "rm", "-f", short(&id)]).ok();
    assert!(output.contains("Untagged: busybox:latest\n"), "{output}");
    assert!(output.contains("Untagged: elsewhere:latest\n"), "{output}");
    assert!(output.contains(&format!("Deleted: {id}\n")), "{output}");
    assert_eq!(berth.run(&["images", "-q"]).ok(), "");
}

/// moby's conflicts for an image containers use: a stopped container's
/// image goes with `--force` (for every name and lookup) while the
/// container keeps its layers until it is removed; a running container's
/// is refused by id and only untagged by name; an image others were built
/// on is refused by id, forced or not.
#[test]
fn rmi_force_deletes_a_stopped_containers_image_and_its_layers_go_with_the_container() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth
        .run(&[
            "run",
            "--name",
            "maker",
            "busybox",
            "sh",
            "-c",
            "echo kept > /kept",
        ])
        .ok();
    let id = berth
        .run(&["commit", "maker", "made:1"])
        .ok()
        .trim()
        .to_owned();
    berth.run(&["rm", "maker"]).ok();
    let before = berth.content();
    berth
        .run(&["create", "--name", "user", "made:1", "cat", "/kept"])
        .ok();
    let short_user = berth.run(&["ps", "-aq", "--filter", "name=user"]).ok();
    let short_user = short_user.trim();

    let stderr = berth.run(&["rmi", "made:1"]).fails(1);
    assert!(
        stderr.contains(&format!(
            "(must force) - container {short_user} is using its referenced image {}",
            short(&id)
        )),
        "{stderr}"
    );
    let stderr = berth.run(&["rmi", &id]).fails(1);
    assert!(
        stderr.contains(&format!(
            "(must be forced) - image is being used by stopped container {short_user}"
        )),
        "{stderr}"
    );
    assert_eq!(
        berth.run(&["rmi", "-f", "made:1"]).ok(),
        format!("Untagged: made:1\nDeleted: {id}\n")
    );
    let stderr = berth.run(&["image", "inspect", &id]).fails(1);
    assert_eq!(stderr, format!("Error: No such image: {id}\n"));
    let ids = berth.run(&["images", "-aq", "--no-trunc"]).ok();
    assert!(!ids.contains(&id), "{ids}");
    assert_eq!(
        berth
            .run(&[
                "ps",
                "-a",
                "--filter",
                "name=user",
                "--format",
                "{{.Image}}"
            ])
            .ok(),
        format!("{}\n", short(&id))
    );
    assert_eq!(berth.inspect("user", "{{.Image}}"), id);
    // Its layers are still there: it runs, and sees its files.
    assert_eq!(berth.run(&["start", "-a", "user"]).ok(), "kept\n");
    assert_eq!(
        berth.content(),
        before,
        "nothing went while the container is there"
    );
    berth.run(&["rm", "user"]).ok();
    let after = berth.content();
    assert!(
        after.len() < before.len(),
        "the image's own layer and config go with the container: {after:?}"
    );

    // A running container's image: by id refused even forced, by name only untagged.
    berth.run(&["tag", "busybox", "running:1"]).ok();
    let busybox = fixture_id("busybox-docker.tar", "busybox:latest");
    let runner = berth.run_detached(&["--name", "runner", "running:1", "sleep", "100"]);
    let stderr = berth.run(&["rmi", "-f", &busybox]).fails(1);
    assert!(stderr.contains(&format!("conflict: unable to delete {} (cannot be forced) - image is being used by running container {}", short(&busybox), &runner[..12])), "{stderr}");
    berth.run(&["rmi", "busybox"]).ok();
    assert_eq!(
        berth.run(&["rmi", "-f", "running:1"]).ok(),
        "Untagged: running:1\n"
    );
    assert_eq!(
        berth.run(&["images", "-q", "--no-trunc"]).ok(),
        format!("{busybox}\n"),
        "kept, untagged"
    );
    berth.run(&["rm", "-f", "runner"]).ok();
}

/// An image another image was built on is not removed by id.
#[test]
fn rmi_refuses_an_image_with_children_by_id() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    let context = tempfile::tempdir().unwrap();
    fs_err::write(
        context.path().join("Dockerfile"),
        "FROM busybox\nRUN echo x > /x\nRUN echo y > /y\n",
    )
    .unwrap();
    berth
        .run(&[
            "build",
            "-q",
            "-t",
            "child:1",
            context.path().to_str().unwrap(),
        ])
        .ok();
    let parent = berth
        .run(&["image", "inspect", "-f", "{{.Parent}}", "child:1"])
        .ok();
    let parent = parent.trim();
    assert!(parent.starts_with("sha256:"), "{parent}");
    let stderr = berth.run(&["rmi", "-f", parent]).fails(1);
    assert!(
        stderr.contains(&format!(
            "conflict: unable to delete {} (cannot be forced) - image has dependent child images",
            short(parent)
        )),
        "{stderr}"
    );
    // With its child it goes (the classic builder's untagged parents).
    let removed = berth.run(&["rmi", "child:1"]).ok();
    assert!(
        removed.contains(&format!("Deleted: {parent}\n")),
        "{removed}"
    );
}

#[test]
fn rmi_keeps_layers_other_images_share() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth.load("layers-docker.tar");
    let output = berth.run(&["rmi", "layers"]).ok();
    // Three layers of its own go; the busybox rootfs layer stays.
    assert_eq!(output.matches("Deleted: ").count(), 4, "{output}");
    assert_eq!(
        fs_err::read_dir(berth.root().join("layers"))
            .unwrap()
            .count(),
        1
    );
    berth.run(&["inspect", "busybox"]).ok();
}

#[test]
fn inspect_prints_dockers_fields() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    let output = berth.run(&["image", "inspect", "busybox"]).ok();
    let parsed: Value = serde_json::from_str(&output).unwrap();
    let image = &parsed[0];
    assert_eq!(
        image["Id"],
        fixture_id("busybox-docker.tar", "busybox:latest")
    );
    assert_eq!(image["RepoTags"], serde_json::json!(["busybox:latest"]));
    assert_eq!(image["RepoDigests"], serde_json::json!([]));
    assert_eq!(image["Created"], "2024-01-01T00:00:00Z");
    assert_eq!(image["Config"]["Cmd"], serde_json::json!(["sh"]));
    assert_eq!(
        image["Config"]["Env"][0],
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    );
    // As current Docker (API 1.50+): OCI config fields, only those set.
    let keys: Vec<&String> = image["Config"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["Env", "Cmd"]);
    assert_eq!(image["Architecture"], "amd64");
    assert_eq!(image["Os"], "linux");
    assert!(image["Size"].as_u64().unwrap() > 1_000_000);
    assert_eq!(image["RootFS"]["Type"], "layers");
    assert_eq!(image["RootFS"]["Layers"].as_array().unwrap().len(), 1);
    // Docker indents with four spaces.
    assert!(output.starts_with("[\n    {\n        \"Id\""), "{output}");
    // Docker 20.10's fields for an image no container was committed into.
    assert_eq!(image["Container"], "");
    assert_eq!(image["ContainerConfig"]["Cmd"], Value::Null);
    assert_eq!(image["ContainerConfig"]["Image"], "");
    assert_eq!(image["ContainerConfig"].as_object().unwrap().len(), 17);
    // A commit records its container.
    let id = berth
        .run(&["create", "busybox", "echo", "hi"])
        .ok()
        .trim()
        .to_owned();
    berth.run(&["commit", &id, "committed:1"]).ok();
    let committed: Value =
        serde_json::from_str(&berth.run(&["image", "inspect", "committed:1"]).ok()).unwrap();
    assert_eq!(committed[0]["Container"], id.as_str());
    assert_eq!(
        committed[0]["ContainerConfig"]["Cmd"],
        serde_json::json!(["echo", "hi"])
    );

    let stderr = berth.run(&["inspect", "busybox", "nosuch"]).fails(1);
    assert!(stderr.contains("No such object: nosuch"), "{stderr}");
    let cmd = berth
        .run(&["inspect", "--format", "{{json .Config.Cmd}}", "busybox"])
        .ok();
    assert_eq!(cmd, "[\"sh\"]\n");
}

#[test]
fn history_lists_newest_first() {
    let berth = Berth::new();
    berth.load("layers-docker.tar");
    let id = fixture_id("layers-docker.tar", "layers:latest");
    let output = berth.run(&["history", "layers"]).ok();
    let lines: Vec<&str> = output.lines().collect();
    assert!(
        lines[0].starts_with("IMAGE          CREATED       CREATED BY"),
        "{output}"
    );
    assert!(lines[1].starts_with(short(&id)), "{output}");
    assert!(lines[2].starts_with("<missing>"), "{output}");
    assert_eq!(lines.len(), 6, "{output}");
    let quiet = berth.run(&["history", "-q", "layers"]).ok();
    assert_eq!(quiet.lines().next(), Some(short(&id)));
}

#[test]
fn prune_removes_dangling_images_only_unless_all() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth.load("layers-docker.tar");
    let layers = fixture_id("layers-docker.tar", "layers:latest");
    // Without -f and with no "y" on stdin nothing happens.
    berth.run(&["image", "prune"]).ok();
    berth.run(&["rmi", "layers"]).ok();
    berth.load("layers-docker.tar");
    berth.run(&["tag", "busybox", "layers"]).ok(); // layers:latest's old image is dangling now
    let output = berth.run(&["image", "prune", "-f"]).ok();
    assert!(output.starts_with("Deleted Images:\n"), "{output}");
    assert!(output.contains(&format!("deleted: {layers}")), "{output}");
    assert!(output.contains("Total reclaimed space: "), "{output}");
    assert_eq!(berth.run(&["images", "-q"]).ok().lines().count(), 1);

    let output = berth.run(&["image", "prune", "-a", "-f"]).ok();
    assert!(output.contains("untagged: busybox:latest"), "{output}");
    assert_eq!(berth.run(&["images", "-q"]).ok(), "");
    assert!(berth.content().is_empty(), "{:?}", berth.content());
}

#[test]
fn import_makes_a_one_layer_image_with_changes() {
    let berth = Berth::new();
    let rootfs = fixture("rootfs.tar");
    let output = berth
        .run(&[
            "import",
            "-c",
            "CMD [\"/bin/sh\", \"-c\", \"echo hi\"]",
            "-c",
            "ENV GREETING=hello",
            "-c",
            "WORKDIR /srv",
            "-c",
            "USER 1000:1000",
            "-c",
            "EXPOSE 8080",
            "-c",
            "LABEL team=berth",
            "-c",
            "ENTRYPOINT [\"/bin/busybox\"]",
            "-m",
            "imported for a test",
            rootfs.to_str().unwrap(),
            "imported:v1",
        ])
        .ok();
    let id = output.trim();
    assert!(id.starts_with("sha256:") && id.len() == 71, "{output}");
    let inspect: Value =
        serde_json::from_str(&berth.run(&["inspect", "imported:v1"]).ok()).unwrap();
    let config = &inspect[0]["Config"];
    assert_eq!(inspect[0]["Id"], id);
    assert_eq!(
        config["Cmd"],
        serde_json::json!(["/bin/sh", "-c", "echo hi"])
    );
    assert_eq!(config["Entrypoint"], serde_json::json!(["/bin/busybox"]));
    assert_eq!(config["Env"], serde_json::json!(["GREETING=hello"]));
    assert_eq!(config["WorkingDir"], "/srv");
    assert_eq!(config["User"], "1000:1000");
    assert_eq!(config["ExposedPorts"], serde_json::json!({"8080/tcp": {}}));
    assert_eq!(config["Labels"], serde_json::json!({"team": "berth"}));
    assert_eq!(inspect[0]["Comment"], "imported for a test");
    // The layer is the busybox rootfs layer everyone else has.
    assert_eq!(
        inspect[0]["RootFS"]["Layers"][0],
        support_layer_of_busybox(&berth)
    );
}

fn support_layer_of_busybox(berth: &Berth) -> Value {
    berth.load("busybox-docker.tar");
    let inspect: Value = serde_json::from_str(&berth.run(&["inspect", "busybox"]).ok()).unwrap();
    inspect[0]["RootFS"]["Layers"][0].clone()
}

#[test]
fn import_from_stdin_and_failures_leave_nothing() {
    let berth = Berth::new();
    let rootfs = fs_err::read(fixture("rootfs.tar")).unwrap();
    let output = berth.run_with_stdin(&["import", "-"], Some(&rootfs)).ok();
    assert!(output.starts_with("sha256:"));
    let images = berth.run(&["images"]).ok();
    assert!(images.contains("<none>       <none>"), "{images}");
    berth.run(&["rmi", output.trim()]).ok();
    assert!(berth.content().is_empty(), "{:?}", berth.content());

    let stderr = berth
        .run_with_stdin(&["import", "-c", "RUN rm -rf /", "-"], Some(&rootfs))
        .fails(1);
    assert!(
        stderr.contains("RUN is not a valid change command"),
        "{stderr}"
    );
    let stderr = berth
        .run_with_stdin(&["import", "-"], Some(&rootfs[..rootfs.len() / 2]))
        .fails(1);
    assert!(stderr.contains("failed to import"), "{stderr}");
    let stderr = berth.run(&["import", "/nonexistent.tar"]).fails(1);
    assert!(stderr.contains("/nonexistent.tar"), "{stderr}");
    assert!(berth.content().is_empty(), "{:?}", berth.content());
}

#[test]
fn save_then_load_into_another_root_keeps_ids_and_tags() {
    let first = Berth::new();
    first.load("busybox-docker.tar");
    first.load("layers-docker.tar");
    let archive = tempfile::tempdir().unwrap();
    let path = archive.path().join("saved.tar");
    first
        .run(&[
            "save",
            "-o",
            path.to_str().unwrap(),
            "busybox",
            "layers:latest",
        ])
        .ok();

    let second = Berth::new();
    let output = second.run(&["load", "-i", path.to_str().unwrap()]).ok();
    assert_eq!(
        output,
        "Loaded image: busybox:latest\nLoaded image: layers:latest\n"
    );
    for (archive, reference) in [
        ("busybox-docker.tar", "busybox"),
        ("layers-docker.tar", "layers"),
    ] {
        let id = second.run(&["inspect", "-f", "{{.Id}}", reference]).ok();
        assert_eq!(
            id.trim(),
            fixture_id(archive, &format!("{reference}:latest"))
        );
    }

    // A failed save leaves no file under the name given.
    let missing = archive.path().join("missing.tar");
    let stderr = first
        .run(&["save", "-o", missing.to_str().unwrap(), "nosuch"])
        .fails(1);
    assert!(stderr.contains("No such image: nosuch:latest"), "{stderr}");
    assert_eq!(fs_err::read_dir(archive.path()).unwrap().count(), 1);
}

#[test]
fn version_info_and_usage_errors() {
    let berth = Berth::new();
    let version = berth.run(&["version"]).ok();
    assert!(version.contains(env!("CARGO_PKG_VERSION")), "{version}");
    berth.load("busybox-docker.tar");
    let info = berth.run(&["info"]).ok();
    assert!(info.contains("Images: 1\n"), "{info}");
    assert!(
        info.contains(&format!("Berth Root Dir: {}\n", berth.root().display())),
        "{info}"
    );
    assert!(info.contains("Cgroup Version: "), "{info}");
    assert!(info.contains("Storage Driver: overlay\n"), "{info}");
    let json = berth.run(&["info", "--format", "{{json .}}"]).ok();
    let parsed: Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(parsed["Images"], 1);

    // --root as a flag wins over the environment.
    let other = tempfile::tempdir().unwrap();
    let count = berth
        .run(&["--root", other.path().to_str().unwrap(), "images", "-q"])
        .ok();
    assert_eq!(count, "");

    berth.run(&["images", "--bogus"]).fails(125);
    // An unknown command is a failed command for the docker CLI (1), a bad flag a bad
    // command line (125).
    berth.run(&["no-such-command"]).fails(1);
}

/// `images --filter` with Docker's keys: `reference` globs, `label`,
/// `before`/`since` by creation time, `dangling`; others refused.
#[test]
fn images_filters_as_dockers() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth.load("busybox-extra.tar");
    let names = |filters: &[&str]| {
        let mut args = vec!["images", "--format", "{{.Repository}}:{{.Tag}}"];
        for filter in filters {
            args.extend(["--filter", filter]);
        }
        let mut lines: Vec<String> = berth.run(&args).ok().lines().map(str::to_owned).collect();
        lines.sort();
        lines
    };
    assert_eq!(
        names(&["label=org.berth.fixture=extra"]),
        ["extra:1", "extra:latest"]
    );
    assert_eq!(
        names(&["label=org.berth.fixture"]),
        ["extra:1", "extra:latest", "other:latest"]
    );
    assert!(names(&["label=org.berth.fixture=nope"]).is_empty());
    assert_eq!(names(&["reference=ext*"]), ["extra:1", "extra:latest"]);
    assert_eq!(names(&["reference=*:1"]), ["extra:1"]);
    assert_eq!(
        names(&["reference=busybox", "reference=other"]),
        ["busybox:latest", "other:latest"]
    );
    // A commit is newer than every fixture (which share one creation time).
    let id = berth
        .run(&["create", "busybox", "true"])
        .ok()
        .trim()
        .to_owned();
    berth.run(&["commit", &id, "newer:1"]).ok();
    assert_eq!(names(&["since=busybox"]), ["newer:1"]);
    assert_eq!(
        names(&["before=newer:1"]),
        ["busybox:latest", "extra:1", "extra:latest", "other:latest"]
    );
    let refused = berth.run(&["images", "--filter", "bogus=1"]);
    assert_ne!(refused.code(), 0);
    assert!(
        refused.stderr().contains("Invalid filter 'bogus'"),
        "{}",
        refused.stderr()
    );
    let missing = berth.run(&["images", "--filter", "since=nosuch"]);
    assert!(
        missing.stderr().contains("No such image: nosuch"),
        "{}",
        missing.stderr()
    );
}
