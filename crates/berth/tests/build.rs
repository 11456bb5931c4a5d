//! `berth build`: Dockerfiles built by berth's builder and run; the cache
//! (a rebuild reuses every step, a changed file rebuilds from its COPY,
//! `--no-cache` rebuilds all); stages, targets, heredocs, .dockerignore;
//! every bad input with its message and nothing left behind; and, where a
//! Docker engine is reachable (`BERTH_TEST_DOCKER_HOST`), the same
//! Dockerfile built by Docker's BuildKit gives the same config and files.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

#[path = "build/add_git.rs"]
mod add_git;
#[path = "build/add_url.rs"]
mod add_url;
#[path = "build/platform.rs"]
mod platform;
mod support;

use std::path::Path;

use support::{docker, docker_host, fixture, Berth};

/// Writes `files` (name, content) under `directory`.
fn write_context(directory: &Path, files: &[(&str, &str)]) {
    for (name, content) in files {
        let path = directory.join(name);
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, content).unwrap();
    }
}

fn context(files: &[(&str, &str)]) -> tempfile::TempDir {
    let directory = tempfile::Builder::new()
        .prefix("berth-build-context-")
        .tempdir()
        .unwrap();
    write_context(directory.path(), files);
    directory
}

fn berth_with_busybox() -> Berth {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth
}

const APP: &str = "\
FROM busybox
ARG GREETING=hello
ENV APP=/app
WORKDIR $APP
COPY hello.txt .
COPY sub/ ./sub/
RUN echo \"$GREETING from run\" > made.txt && cat hello.txt
LABEL purpose=test
EXPOSE 8080 53/udp
VOLUME /data
USER 1000:1000
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=5s CMD true
CMD [\"cat\", \"/app/made.txt\"]
";

fn app_context() -> tempfile::TempDir {
    context(&[
        ("Dockerfile", APP),
        ("hello.txt", "hi\n"),
        ("sub/s.txt", "s\n"),
    ])
}

fn inspect(berth: &Berth, image: &str, format: &str) -> String {
    berth
        .run(&["image", "inspect", image, "--format", format])
        .ok()
        .trim()
        .to_owned()
}

/// The `#N CACHED` lines of a build's progress, as instructions.
fn cached_steps(stderr: &str) -> Vec<String> {
    let lines: Vec<&str> = stderr.lines().collect();
    let mut cached = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        if line.ends_with(" CACHED") {
            let number = line.split_whitespace().next().unwrap();
            let step = lines[..index]
                .iter()
                .rev()
                .find(|earlier| earlier.starts_with(&format!("{number} [")))
                .unwrap();
            cached.push(step.split_once("] ").unwrap().1.to_owned());
        }
    }
    cached
}

#[test]
fn a_dockerfile_builds_an_image_that_runs_with_its_config() {
    let berth = berth_with_busybox();
    let directory = app_context();
    let built = berth.run(&["build", "-t", "app:1", directory.path().to_str().unwrap()]);
    let stderr = built.stderr();
    built.ok();
    // BuildKit's label: the number padded to the count's width.
    assert!(stderr.contains("#7 [ 7/14] RUN"), "{stderr}");
    assert!(
        stderr.contains(" hi\n"),
        "the RUN's output is shown: {stderr}"
    );
    assert!(
        stderr.contains("naming to docker.io/library/app:1 done"),
        "{stderr}"
    );

    assert_eq!(
        berth.run(&["run", "--rm", "app:1"]).ok(),
        "hello from run\n"
    );
    let files = berth
        .run(&[
            "run",
            "--rm",
            "--user",
            "0",
            "app:1",
            "sh",
            "-c",
            "find /app -exec stat -c '%n %a %u:%g' {} + | sort",
        ])
        .ok();
    assert_eq!(
        files,
        "/app 755 0:0\n/app/hello.txt 644 0:0\n/app/made.txt 644 0:0\n/app/sub 755 0:0\n/app/sub/s.txt 644 0:0\n"
    );
    assert_eq!(
        inspect(&berth, "app:1", "{{json .Config.Env}}"),
        r#"["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","APP=/app"]"#
    );
    assert_eq!(inspect(&berth, "app:1", "{{.Config.WorkingDir}}"), "/app");
    assert_eq!(inspect(&berth, "app:1", "{{.Config.User}}"), "1000:1000");
    assert_eq!(
        inspect(&berth, "app:1", "{{json .Config.ExposedPorts}}"),
        r#"{"53/udp":{},"8080/tcp":{}}"#
    );
    assert_eq!(
        inspect(&berth, "app:1", "{{json .Config.Volumes}}"),
        r#"{"/data":{}}"#
    );
    assert_eq!(
        inspect(&berth, "app:1", "{{json .Config.Labels}}"),
        r#"{"purpose":"test"}"#
    );
    assert_eq!(
        inspect(&berth, "app:1", "{{.Config.StopSignal}}"),
        "SIGTERM"
    );
    assert_eq!(
        inspect(&berth, "app:1", "{{json .Config.Healthcheck}}"),
        r#"{"Test":["CMD-SHELL","true"],"Interval":5000000000}"#
    );
    // The build's containers are gone; its steps are hidden from `images`.
    assert_eq!(berth.run(&["ps", "-aq"]).ok(), "");
    let images = berth.run(&["images", "-q"]).ok();
    assert_eq!(images.lines().count(), 2, "{images}");
    assert!(berth.run(&["images", "-aq"]).ok().lines().count() > 2);
    // Removing the image removes the steps it was built on, as Docker.
    let removed = berth.run(&["rmi", "app:1"]).ok();
    assert!(
        removed
            .lines()
            .filter(|line| line.starts_with("Deleted: "))
            .count()
            > 13,
        "{removed}"
    );
    assert_eq!(berth.run(&["images", "-aq"]).ok().lines().count(), 1);
}

#[test]
fn a_rebuild_is_cached_and_a_changed_file_rebuilds_from_its_copy() {
    let berth = berth_with_busybox();
    let directory = app_context();
    let path = directory.path().to_str().unwrap();
    let first = berth.run(&["build", "-q", path]).ok();
    let again = berth.run(&["build", path]);
    let stderr = again.stderr();
    assert_eq!(again.ok(), "", "progress goes to stderr");
    assert_eq!(
        cached_steps(&stderr).len(),
        13,
        "every step but FROM: {stderr}"
    );
    assert_eq!(
        berth.run(&["build", "-q", path]).ok(),
        first,
        "the same image"
    );

    write_context(directory.path(), &[("sub/s.txt", "changed\n")]);
    let changed = berth.run(&["build", path]);
    let stderr = changed.stderr();
    changed.ok();
    assert_eq!(
        cached_steps(&stderr),
        [
            "ARG GREETING=hello",
            "ENV APP=/app",
            "WORKDIR $APP",
            "COPY hello.txt ."
        ],
        "{stderr}"
    );
    // A build arg is part of the RUN's key.
    let with_arg = berth.run(&["build", "--build-arg", "GREETING=hey", "-t", "hey", path]);
    let stderr = with_arg.stderr();
    with_arg.ok();
    assert!(
        !cached_steps(&stderr)
            .iter()
            .any(|step| step.starts_with("RUN")),
        "{stderr}"
    );
    assert_eq!(berth.run(&["run", "--rm", "hey"]).ok(), "hey from run\n");

    let no_cache = berth.run(&["build", "--no-cache", path]);
    let stderr = no_cache.stderr();
    no_cache.ok();
    assert!(cached_steps(&stderr).is_empty(), "{stderr}");
}

#[test]
fn stages_build_only_what_the_target_needs() {
    let berth = berth_with_busybox();
    let dockerfile = "\
FROM busybox AS build
RUN mkdir -p /out && echo built > /out/artifact
FROM busybox AS broken
RUN echo broken stage ran; exit 3
FROM scratch
COPY --from=build /out /
COPY --from=0 /bin/busybox /bin/
CMD [\"/bin/busybox\", \"cat\", \"/artifact\"]
";
    let directory = context(&[("Dockerfile", dockerfile)]);
    let path = directory.path().to_str().unwrap();
    let built = berth.run(&["build", "-t", "staged", path]);
    let stderr = built.stderr();
    built.ok();
    assert!(!stderr.contains("broken stage ran"), "{stderr}");
    assert_eq!(berth.run(&["run", "--rm", "staged"]).ok(), "built\n");

    let target = berth.run(&["build", "--target", "broken", path]);
    let stderr = target.fails(1);
    assert!(stderr.contains("broken stage ran"), "{stderr}");
    assert!(
        stderr.contains("ERROR: failed to solve: process \"/bin/sh -c echo broken stage ran; exit 3\" did not complete successfully: exit code: 3"),
        "{stderr}"
    );
    let missing = berth.run(&["build", "--target", "nope", path]);
    assert!(missing
        .fails(1)
        .contains("target stage \"nope\" could not be found"));
    assert_eq!(berth.run(&["ps", "-aq"]).ok(), "", "no container left");
}

#[test]
fn heredocs_and_dockerignore() {
    let berth = berth_with_busybox();
    let dockerfile = "\
FROM busybox
ARG NAME=berth
RUN <<EOF
echo first > /one
echo second >> /one
EOF
COPY <<EOF /greeting
hello ${NAME}
EOF
COPY <<\"EOF\" /literal
hello ${NAME}
EOF
COPY . /ctx/
";
    let directory = context(&[
        ("Dockerfile", dockerfile),
        (".dockerignore", "secret*\n**/*.log\n!keep.log\n"),
        ("secret.txt", "no\n"),
        ("kept.txt", "yes\n"),
        ("deep/a.log", "no\n"),
        ("keep.log", "yes\n"),
    ]);
    berth
        .run(&["build", "-t", "docs", directory.path().to_str().unwrap()])
        .ok();
    let shown = |command: &str| {
        berth
            .run(&["run", "--rm", "docs", "sh", "-c", command])
            .ok()
    };
    assert_eq!(shown("cat /one"), "first\nsecond\n");
    assert_eq!(shown("cat /greeting"), "hello berth\n");
    assert_eq!(shown("cat /literal"), "hello ${NAME}\n");
    assert_eq!(
        shown("cd /ctx && find . | sort"),
        ".\n./.dockerignore\n./Dockerfile\n./deep\n./keep.log\n./kept.txt\n"
    );
}

#[test]
fn bad_input_is_refused_with_its_reason_and_leaves_nothing() {
    let berth = berth_with_busybox();
    let before = berth.content();
    let cases: &[(&str, &[&str], &str)] = &[
        ("FROM busybox\nFOO bar\n", &[], "dockerfile parse error on line 2: unknown instruction: FOO"),
        ("FROM busybox\nCOPY missing.txt /\n", &[], "\"/missing.txt\": not found"),
        ("FROM busybox\nRUN --mount=type=ssh true\n", &[], "RUN --mount type=ssh is not supported by berth's builder yet"),
        ("FROM busybox\nRUN --mount=type=cache,target=/c,source=/x true\n", &[], "RUN --mount type=cache with source= but no from= is not supported"),
        ("FROM busybox AS a\nFROM busybox\nRUN --mount=type=bind,from=a,source=/nope,target=/n true\n", &[], "\"/nope\": not found"),
        ("FROM busybox\nRUN --mount=type=bind,target=/x,rw,ro true\n", &[], "cannot be both ro and rw"),
        ("FROM busybox AS b\nFROM busybox\nARG S=b\nCOPY --from=${S} /bin/sh /x\n", &[], "failed to parse stage name \"${S}\": invalid reference format"),
        ("FROM busybox\nADD git://127.0.0.1:1/r.git a /x\n", &[], "ADD of a git repository (git://127.0.0.1:1/r.git) takes no other source"),
        ("FROM busybox\nADD --keep-git-dir=true a /x\n", &[], "ADD --keep-git-dir applies to a git repository source only"),
        ("FROM busybox\nADD --unpack=true a /x\n", &[], "ADD --unpack is not supported by berth's builder yet"),
        ("FROM busybox\nCOPY a b /x\n", &[], "When using COPY with more than one source file, the destination must be a directory and end with a /"),
        ("FROM busybox\n", &["--platform", "windows/amd64"], "berth builds images for linux only, not for windows/amd64"),
        ("FROM busybox\n", &["--secret", "id=x,env=HOME"], "a secret from the environment is not supported by berth yet"),
        ("FROM busybox\n", &["--build-context", "x=https://example.com/r.git"], "--build-context x=https://example.com/r.git: a https:// context is not supported by berth yet"),
        ("FROM busybox\n", &["--build-context", "x=oci-layout:///tmp/l"], "a oci-layout:// context is not supported"),
        ("FROM busybox\n", &["--build-context", "x=git@github.com:a/b.git"], "a git@ context is not supported"),
        ("FROM busybox\n", &["--build-context", "x=/nonexistent/dir"], "/nonexistent/dir is not a directory"),
        ("FROM busybox\n", &["--build-context", "scratch=."], "invalid --build-context name \"scratch\""),
        ("FROM busybox\n", &["-t", "Bad:Tag"], "invalid tag \"Bad:Tag\""),
    ];
    for (dockerfile, flags, expected) in cases {
        let directory = context(&[("Dockerfile", dockerfile), ("a", "a"), ("b", "b")]);
        let mut args = vec!["build"];
        args.extend_from_slice(flags);
        args.push(directory.path().to_str().unwrap());
        let failed = berth.run(&args);
        assert_ne!(failed.code(), 0, "{dockerfile}");
        let stderr = failed.stderr();
        assert!(stderr.contains(expected), "{dockerfile}: {stderr}");
    }
    let missing = berth.run(&["build", "/nonexistent/context"]);
    assert!(
        missing.stderr().contains("unable to prepare context"),
        "{}",
        missing.stderr()
    );
    assert_eq!(berth.run(&["ps", "-aq"]).ok(), "");
    // No temporary file is left (the steps that ran before a failure
    // stay, as cache).
    let after = berth.content();
    assert!(
        after
            .iter()
            .all(|path| !path.starts_with(berth.root().join("tmp")) || before.contains(path)),
        "{after:?}"
    );
}

/// One line per file: path, type, mode, owner, size, link target.
fn file_tree(engine: &dyn Fn(&[&str]) -> std::process::Output, image: &str) -> String {
    let output = engine(&[
        "run",
        "--rm",
        "--user",
        "0",
        "--entrypoint",
        "sh",
        image,
        "-c",
        "find /app /out -exec stat -c '%n %F %a %u:%g %s %N' {} + 2>/dev/null | sort",
    ]);
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn the_same_dockerfile_as_docker_gives_the_same_config_and_files() {
    let Some(host) = docker_host() else {
        return;
    };
    let archive = fixture("busybox-docker.tar");
    let loaded = docker(&host, &["load", "-q", "-i", archive.to_str().unwrap()]);
    assert!(loaded.status.success(), "{loaded:?}");
    let berth = berth_with_busybox();
    let dockerfile = "\
FROM busybox
ENV APP=/app LEVEL=2
WORKDIR $APP
COPY --chown=1000:1000 hello.txt ./
COPY --chmod=755 run.sh /app/bin/
COPY sub /app/sub
RUN ln -s hello.txt /app/link && mkdir -p /out && echo $LEVEL > /out/level
LABEL a=1 b=\"two words\"
EXPOSE 80
VOLUME [\"/data\"]
ENTRYPOINT [\"/app/bin/run.sh\"]
CMD [\"x\"]
SHELL [\"/bin/sh\", \"-ec\"]
ONBUILD RUN echo child
STOPSIGNAL SIGINT
HEALTHCHECK --interval=10s --retries=2 CMD [\"true\"]
USER nobody
";
    let directory = context(&[
        ("Dockerfile", dockerfile),
        ("hello.txt", "hi\n"),
        ("run.sh", "#!/bin/sh\necho run \"$@\"\n"),
        ("sub/inner/deep.txt", "deep\n"),
    ]);
    let path = directory.path().to_str().unwrap();
    berth.run(&["build", "-t", "differential", path]).ok();
    // Debian's docker.io CLI (20.10) has BuildKit built in; a newer CLI
    // needs the buildx plugin, which Debian does not package.
    let buildkit_cli = Path::new("/usr/bin/docker");
    if !buildkit_cli.exists() {
        eprintln!("SKIP: no /usr/bin/docker (docker.io's CLI, BuildKit built in)");
        return;
    }
    let built = std::process::Command::new(buildkit_cli)
        .args([
            "-H",
            &host,
            "build",
            "-q",
            "-t",
            "berth-test-differential",
            path,
        ])
        .env("DOCKER_BUILDKIT", "1")
        .output()
        .unwrap();
    assert!(built.status.success(), "{built:?}");
    let _cleanup = RemoveDockerImage(&host);

    let fields = "{{json .Config.Env}} {{json .Config.Cmd}} {{json .Config.Entrypoint}} {{.Config.WorkingDir}} {{.Config.User}} {{json .Config.ExposedPorts}} {{json .Config.Volumes}} {{json .Config.Labels}} {{json .Config.Healthcheck}} {{.Config.StopSignal}} {{json .Config.Shell}} {{json .Config.OnBuild}}";
    let docker_config = docker(
        &host,
        &[
            "image",
            "inspect",
            "berth-test-differential",
            "--format",
            fields,
        ],
    );
    assert_eq!(
        inspect(&berth, "differential", fields),
        String::from_utf8_lossy(&docker_config.stdout).trim()
    );
    let in_berth = |args: &[&str]| berth.run(args).output;
    let in_docker = |args: &[&str]| docker(&host, args);
    let tree = file_tree(&in_berth, "differential");
    assert!(
        tree.contains("/app/hello.txt regular file 644 1000:1000 3"),
        "{tree}"
    );
    assert_eq!(tree, file_tree(&in_docker, "berth-test-differential"));
}

/// Removes the Docker side's image and build cache when the test ends.
struct RemoveDockerImage<'a>(&'a str);

impl Drop for RemoveDockerImage<'_> {
    fn drop(&mut self) {
        let _ = docker(self.0, &["rmi", "-f", "berth-test-differential"]);
        let _ = docker(self.0, &["builder", "prune", "-af"]);
    }
}

/// A build killed during a RUN leaves its step's container; the next
/// command sees the builder gone and removes it (once the step's process
/// has ended), and no temporary layer stays.
#[test]
fn a_killed_build_leaves_nothing_the_next_command_keeps() {
    let berth = berth_with_busybox();
    let directory = context(&[(
        "Dockerfile",
        "FROM busybox\nRUN echo started && sleep 1 && echo never\n",
    )]);
    let mut child = berth
        .command()
        .args(["build", directory.path().to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Until the step's container exists.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while berth.run(&["ps", "-aq"]).ok().trim().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "no build container appeared"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    child.wait().unwrap();
    // The step's process ends on its own; the container then goes.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let left = berth.run(&["ps", "-aq"]).ok();
        if left.trim().is_empty() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "left: {left}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let temporary: Vec<_> = fs_err::read_dir(berth.root().join("tmp"))
        .map(|entries| entries.flatten().map(|entry| entry.path()).collect())
        .unwrap_or_default();
    assert!(temporary.is_empty(), "{temporary:?}");
    // And the next build works.
    let directory = context(&[("Dockerfile", "FROM busybox\nRUN true\n")]);
    berth
        .run(&["build", "-q", directory.path().to_str().unwrap()])
        .ok();
}

/// `RUN --mount`: a cache that persists between builds, a tmpfs, a
/// secret and a read-only bind of the context, none of them in a layer;
/// the secret's bytes are nowhere in the saved image.
#[test]
fn run_mounts_reach_the_step_and_stay_out_of_the_image() {
    let berth = berth_with_busybox();
    let dockerfile = "\
FROM busybox
RUN --mount=type=cache,target=/cache sh -c 'echo run >> /cache/log; wc -l < /cache/log | tr -d \" \" > /count'
RUN --mount=type=tmpfs,target=/scratch sh -c 'echo x > /scratch/f && grep -q \" /scratch tmpfs\" /proc/mounts && echo tmpfs > /tmpfs-seen'
RUN --mount=type=secret,id=token sh -c 'wc -c < /run/secrets/token | tr -d \" \" > /secret-seen'
RUN --mount=type=bind,source=data.txt,target=/data.txt sh -c 'cat /data.txt > /copied; echo no >> /data.txt || echo read-only > /bind-ro'
";
    let directory = context(&[
        ("Dockerfile", dockerfile),
        ("data.txt", "from the context\n"),
    ]);
    let secret = directory.path().join("token.txt");
    fs_err::write(&secret, "s3cret-value").unwrap();
    let secret_flag = format!("id=token,src={}", secret.display());
    let path = directory.path().to_str().unwrap();
    for round in 1..=2 {
        berth
            .run(&[
                "build",
                "--no-cache",
                "--secret",
                &secret_flag,
                "-t",
                "mounts",
                path,
            ])
            .ok();
        let count = berth.run(&["run", "--rm", "mounts", "cat", "/count"]).ok();
        assert_eq!(
            count.trim(),
            round.to_string(),
            "the cache persists between builds"
        );
    }
    let shown = |command: &str| {
        berth
            .run(&["run", "--rm", "mounts", "sh", "-c", command])
            .ok()
    };
    assert_eq!(
        shown("cat /tmpfs-seen /secret-seen /copied /bind-ro"),
        "tmpfs\n12\nfrom the context\nread-only\n"
    );
    assert_eq!(
        shown("ls -a /cache /scratch /run/secrets 2>&1 | grep -c 'No such file'"),
        "3\n"
    );
    let saved = berth.run(&["save", "mounts"]);
    assert!(saved.output.status.success());
    let bytes = &saved.output.stdout;
    assert!(
        !bytes
            .windows(b"s3cret-value".len())
            .any(|window| window == b"s3cret-value"),
        "the secret is in the saved image"
    );
    // A required secret that was not given.
    let missing = context(&[(
        "Dockerfile",
        "FROM busybox\nRUN --mount=type=secret,id=absent,required true\n",
    )]);
    let failed = berth.run(&["build", missing.path().to_str().unwrap()]);
    assert!(failed.fails(1).contains("secret absent not found"));
    // Ssh mounts are refused by name.
    let ssh = context(&[("Dockerfile", "FROM busybox\nRUN --mount=type=ssh true\n")]);
    let failed = berth.run(&["build", ssh.path().to_str().unwrap()]);
    assert!(failed
        .fails(1)
        .contains("RUN --mount type=ssh is not supported"));
}

/// `--output`: the image's files in a directory or a tar (on stdout with
/// `-`), read from its layers: nothing of a container (no /etc/hosts).
#[test]
fn output_writes_the_files_to_a_directory_or_a_tar() {
    let berth = berth_with_busybox();
    let directory = context(&[(
        "Dockerfile",
        "FROM busybox\nRUN echo built > /artifact && rm /bin/vi\n",
    )]);
    let path = directory.path().to_str().unwrap();
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("files");
    let local = format!("type=local,dest={}", dest.display());
    berth.run(&["build", "-q", "-o", &local, path]).ok();
    assert_eq!(
        fs_err::read_to_string(dest.join("artifact")).unwrap(),
        "built\n"
    );
    assert!(dest.join("bin/busybox").is_file());
    assert!(!dest.join("bin/vi").exists(), "a deletion shows as one");
    assert!(!dest.join("etc/hosts").exists(), "nothing of a container");

    let tar = berth.run(&["build", "-q", "-o", "-", path]);
    assert!(tar.output.status.success(), "{}", tar.stderr());
    let mut names = Vec::new();
    for entry in tar::Archive::new(&tar.output.stdout[..]).entries().unwrap() {
        names.push(entry.unwrap().path().unwrap().display().to_string());
    }
    assert!(names.contains(&"artifact".to_owned()), "{names:?}");
    assert!(!names.iter().any(|name| name == "bin/vi"));
    let refused = berth.run(&["build", "-o", "type=registry,dest=x", path]);
    assert!(refused
        .stderr()
        .contains("--output type=registry is not supported"));
    let temporary: Vec<_> = fs_err::read_dir(berth.root().join("tmp"))
        .map(|entries| entries.flatten().map(|entry| entry.path()).collect())
        .unwrap_or_default();
    assert!(temporary.is_empty(), "{temporary:?}");
}

/// `COPY --exclude` leaves out what its patterns match (and is part of
/// the step's cache key).
#[test]
fn copy_exclude_leaves_out_what_it_matches() {
    let berth = berth_with_busybox();
    let directory = context(&[
        (
            "Dockerfile",
            "FROM busybox\nCOPY --exclude=*.log --exclude=deep/skip . /ex/\n",
        ),
        ("keep.txt", "k\n"),
        ("drop.log", "d\n"),
        ("deep/skip", "s\n"),
        ("deep/stay", "t\n"),
    ]);
    let path = directory.path().to_str().unwrap();
    berth.run(&["build", "-q", "-t", "excluded", path]).ok();
    let listed = berth
        .run(&[
            "run",
            "--rm",
            "excluded",
            "sh",
            "-c",
            "cd /ex && find . -type f | sort",
        ])
        .ok();
    assert_eq!(listed, "./Dockerfile\n./deep/stay\n./keep.txt\n");
}

/// `COPY --parents` keeps each source's path below the destination.
#[test]
fn copy_parents_keeps_the_sources_paths() {
    let berth = berth_with_busybox();
    let directory = context(&[
        (
            "Dockerfile",
            "FROM busybox\nCOPY --parents a/b/f.txt c/g.txt d /dest/\n",
        ),
        ("a/b/f.txt", "f\n"),
        ("c/g.txt", "g\n"),
        ("d/h.txt", "h\n"),
    ]);
    let path = directory.path().to_str().unwrap();
    berth.run(&["build", "-q", "-t", "parents", path]).ok();
    let listed = berth
        .run(&[
            "run",
            "--rm",
            "parents",
            "sh",
            "-c",
            "cd /dest && find . | sort",
        ])
        .ok();
    assert_eq!(
        listed,
        ".\n./a\n./a/b\n./a/b/f.txt\n./c\n./c/g.txt\n./d\n./d/h.txt\n"
    );
}

/// A RUN that waits (at most 60 s) for the file `theirs` in the shared
/// cache mount `meet` after writing `mine` there, then writes `/OUT`.
fn rendezvous(mine: &str, theirs: &str, out: &str) -> String {
    format!(
        "RUN --mount=type=cache,id=meet,target=/meet,sharing=shared sh -c 'touch /meet/{mine}; i=0; while [ ! -e /meet/{theirs} ]; do i=$((i+1)); if [ $i -gt 600 ]; then echo no {theirs}; exit 7; fi; sleep 0.1; done; echo {mine} > /{out}'"
    )
}

/// Independent stages run at the same time: stages a and b each wait for
/// the other's file in a shared cache mount, which one after the other
/// never see (the first would give up after 60 s and fail the build).
#[test]
fn independent_stages_run_at_the_same_time() {
    let berth = berth_with_busybox();
    let dockerfile = format!(
        "FROM busybox AS a\n{}\nFROM busybox AS b\n{}\nFROM busybox\nCOPY --from=a /a.txt /\nCOPY --from=b /b.txt /\n",
        rendezvous("a", "b", "a.txt"),
        rendezvous("b", "a", "b.txt"),
    );
    let directory = context(&[("Dockerfile", &dockerfile)]);
    let built = berth.run(&["build", "-t", "met", directory.path().to_str().unwrap()]);
    let stderr = built.stderr();
    built.ok();
    assert_eq!(
        berth
            .run(&["run", "--rm", "met", "cat", "/a.txt", "/b.txt"])
            .ok(),
        "a\nb\n"
    );
    // BuildKit's labels, each line whole.
    for label in [
        "[a 1/2] FROM busybox AS a",
        "[b 2/2] RUN",
        "[stage-2 3/3] COPY --from=b",
    ] {
        assert!(stderr.contains(label), "{label}: {stderr}");
    }
    for line in stderr.lines().filter(|line| !line.is_empty()) {
        assert!(
            line.starts_with('#'),
            "a line not whole: {line:?}\n{stderr}"
        );
    }
    assert_eq!(berth.run(&["ps", "-aq"]).ok(), "");
}

/// A stage that fails stops the build: the other stage's running RUN is
/// killed (CANCELED), the build fails with the first error, and no
/// container is left.
#[test]
fn a_failed_stage_cancels_the_others_and_leaves_no_container() {
    let berth = berth_with_busybox();
    let dockerfile = "\
FROM busybox AS slow
RUN --mount=type=cache,id=meet,target=/meet sh -c 'touch /meet/started; sleep 120; echo never'
FROM busybox AS broken
RUN --mount=type=cache,id=meet,target=/meet sh -c 'while [ ! -e /meet/started ]; do sleep 0.1; done; echo failing; exit 5'
FROM busybox
COPY --from=slow /etc/hostname /slow
COPY --from=broken /etc/hostname /broken
";
    let directory = context(&[("Dockerfile", dockerfile)]);
    let failed = berth.run(&["build", directory.path().to_str().unwrap()]);
    let stderr = failed.fails(1);
    assert!(
        stderr.contains("ERROR: failed to solve: process \"/bin/sh -c sh -c 'while"),
        "{stderr}"
    );
    assert!(stderr.contains("exit code: 5"), "{stderr}");
    assert!(
        !stderr.lines().any(|line| line.ends_with(" never")),
        "{stderr}"
    );
    let slow_run = stderr
        .lines()
        .find(|line| line.contains("[slow 2/2] RUN"))
        .and_then(|line| line.split_whitespace().next())
        .unwrap_or_else(|| panic!("{stderr}"))
        .to_owned();
    assert!(stderr.contains(&format!("{slow_run} CANCELED")), "{stderr}");
    assert!(stderr.contains(" ERROR: process"), "{stderr}");
    assert!(
        !stderr.contains("[stage-2"),
        "the last stage never started: {stderr}"
    );
    assert_eq!(berth.run(&["ps", "-aq"]).ok(), "", "no container left");
}

/// `RUN --mount=type=bind,from=…`: a stage's or an image's files,
/// read-only, or with `rw` writable with the writes discarded (they reach
/// neither the source nor the layer); a cache seeded from a stage; and
/// nothing of any mount in the image.
#[test]
fn bind_mounts_from_stages_and_images() {
    let berth = berth_with_busybox();
    let dockerfile = "\
FROM busybox AS build
RUN mkdir -p /out && echo artifact > /out/file && echo kept > /out/other
FROM busybox
ARG ROUND=1
RUN --mount=type=bind,from=build,source=/out,target=/in sh -c 'cat /in/file > /seen; echo x > /in/new || echo ro > /ro-seen'
RUN --mount=type=bind,from=build,source=/out,target=/in,rw sh -c 'echo changed > /in/file && echo new > /in/new && cat /in/file > /rw-seen'
RUN --mount=type=bind,from=build,source=/out,target=/again sh -c 'cat /again/file > /after-rw; ls /again > /listing'
RUN --mount=type=bind,from=busybox,source=/bin/busybox,target=/bb sh -c 'cmp /bb /bin/busybox && echo image > /image-seen'
RUN --mount=type=bind,target=/ctx,rw sh -c 'echo scribble > /ctx/data.txt && cat /ctx/data.txt > /ctx-rw'
RUN --mount=type=cache,id=seeded,target=/c,from=build,source=/out sh -c 'cat /c/file > /cache-seen; echo more >> /c/file'
";
    let directory = context(&[("Dockerfile", dockerfile), ("data.txt", "original\n")]);
    let path = directory.path().to_str().unwrap();
    berth.run(&["build", "-t", "bound", path]).ok();
    let shown = |command: &str| {
        berth
            .run(&["run", "--rm", "bound", "sh", "-c", command])
            .ok()
    };
    assert_eq!(
        shown("cat /seen /ro-seen /rw-seen /after-rw /listing /image-seen /ctx-rw /cache-seen"),
        "artifact\nro\nchanged\nartifact\nfile\nother\nimage\nscribble\nartifact\n"
    );
    assert_eq!(
        shown("ls -d /in /again /bb /ctx /c 2>&1 | grep -c 'No such file'"),
        "5\n",
        "no mount point is in the image"
    );
    assert_eq!(
        fs_err::read_to_string(directory.path().join("data.txt")).unwrap(),
        "original\n",
        "an rw bind's writes never reach the context"
    );
    // The stage's files changed nowhere either: the RUNs again (a new
    // build arg), on the same stage, see them as they were, and the cache
    // as the last RUN left it.
    berth
        .run(&["build", "--build-arg", "ROUND=2", "-t", "bound2", path])
        .ok();
    assert_eq!(
        berth
            .run(&[
                "run",
                "--rm",
                "bound2",
                "cat",
                "/seen",
                "/rw-seen",
                "/cache-seen"
            ])
            .ok(),
        "artifact\nchanged\nartifact\nmore\n"
    );
    for staging in ["tmp", "build-mounts/copies"] {
        let left: Vec<_> = fs_err::read_dir(berth.root().join(staging))
            .map(|entries| entries.flatten().map(|entry| entry.path()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "{left:?}");
    }
    assert_eq!(berth.run(&["ps", "-aq"]).ok(), "");
}

/// `sharing=private`: a RUN that finds the cache in use gets a directory
/// of its own. Two stages run at the same time (each waits for the other)
/// with one private cache id: neither sees the other's file.
#[test]
fn a_private_cache_in_use_gives_a_new_directory() {
    let berth = berth_with_busybox();
    let stage = |name: &str, other: &str| {
        format!(
            "FROM busybox AS {name}\nRUN --mount=type=cache,id=own,target=/own,sharing=private --mount=type=cache,id=meet,target=/meet sh -c 'touch /own/{name} /meet/{name}; i=0; while [ ! -e /meet/{other} ]; do i=$((i+1)); if [ $i -gt 600 ]; then exit 7; fi; sleep 0.1; done; ls /own > /list'\n"
        )
    };
    let dockerfile = format!(
        "{}{}FROM busybox\nCOPY --from=a /list /a.list\nCOPY --from=b /list /b.list\n",
        stage("a", "b"),
        stage("b", "a")
    );
    let directory = context(&[("Dockerfile", &dockerfile)]);
    berth
        .run(&["build", "-t", "private", directory.path().to_str().unwrap()])
        .ok();
    assert_eq!(
        berth
            .run(&["run", "--rm", "private", "cat", "/a.list", "/b.list"])
            .ok(),
        "a\nb\n"
    );
}

/// `--build-context`: a directory (relative to the working directory,
/// its own `.dockerignore` applied and not the main context's) and an
/// image, read by `FROM`, `COPY --from` and `RUN --mount from=`, each
/// replacing a stage of its name (whose steps never run).
#[test]
fn named_contexts_are_read_by_from_copy_and_mounts() {
    let berth = berth_with_busybox();
    let dockerfile = "\
FROM busybox AS docs
RUN echo the replaced stage ran; exit 9
FROM scratch AS tools
FROM files AS fromdir
FROM base
COPY --from=docs . /docs/
COPY --from=tools /bin/busybox /tools-busybox
COPY --from=fromdir /a.txt /from-dir.txt
RUN --mount=type=bind,from=docs,target=/d cat /d/a.txt > /from-mount
";
    let directory = context(&[
        ("Dockerfile", dockerfile),
        (".dockerignore", "*.md\n"),
        ("docs/a.txt", "a\n"),
        (
            "docs/readme.md",
            "kept: the main context's ignore file is not the named one's\n",
        ),
        ("docs/hidden.txt", "no\n"),
        ("docs/.dockerignore", "hidden.txt\n"),
    ]);
    let built = berth
        .command()
        .current_dir(directory.path())
        .args([
            "build",
            "-t",
            "named",
            "--build-context",
            "docs=docs",
            "--build-context",
            "files=./docs",
            "--build-context",
            "tools=docker-image://busybox",
            "--build-context",
            &format!("base=docker-image://{}", "busybox"),
            ".",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&built.stderr).into_owned();
    assert!(built.status.success(), "{stderr}");
    assert!(!stderr.contains("the replaced stage ran"), "{stderr}");
    let shown = |command: &str| {
        berth
            .run(&["run", "--rm", "named", "sh", "-c", command])
            .ok()
    };
    assert_eq!(
        shown("cd /docs && find . -type f | sort"),
        "./.dockerignore\n./a.txt\n./readme.md\n"
    );
    assert_eq!(shown("cat /from-dir.txt /from-mount"), "a\na\n");
    assert_eq!(
        shown("cmp /tools-busybox /bin/busybox && echo same"),
        "same\n"
    );
    assert_eq!(berth.run(&["ps", "-aq"]).ok(), "");
}

/// Removes a Docker image when the test ends.
struct RemoveDockerTag<'a>(&'a str, &'a str);

impl Drop for RemoveDockerTag<'_> {
    fn drop(&mut self) {
        let _ = docker(self.0, &["rmi", "-f", self.1]);
    }
}

/// Independent stages, a bind from a stage (read-only and `rw`, whose
/// writes are discarded) and a COPY from another: Docker's BuildKit gives
/// the same files.
#[test]
fn stages_and_stage_binds_match_docker() {
    let Some(host) = docker_host() else {
        return;
    };
    let buildkit_cli = Path::new("/usr/bin/docker");
    if !buildkit_cli.exists() {
        eprintln!("SKIP: no /usr/bin/docker (docker.io's CLI, BuildKit built in)");
        return;
    }
    let archive = fixture("busybox-docker.tar");
    let loaded = docker(&host, &["load", "-q", "-i", archive.to_str().unwrap()]);
    assert!(loaded.status.success(), "{loaded:?}");
    let dockerfile = "\
FROM busybox AS build
RUN mkdir -p /out && echo artifact > /out/file && chmod 600 /out/file && ln -s file /out/link
FROM busybox AS other
RUN mkdir -p /out && echo other > /out/o
FROM busybox
RUN --mount=type=bind,from=build,source=/out,target=/in,rw sh -c 'echo changed > /in/file; echo new > /in/new; mkdir -p /app; cat /in/file > /app/rw-seen'
RUN --mount=type=bind,from=build,source=/out,target=/in cp -a /in /app/copied
COPY --from=other /out /app/other
";
    let directory = context(&[("Dockerfile", dockerfile)]);
    let path = directory.path().to_str().unwrap();
    let berth = berth_with_busybox();
    berth.run(&["build", "-t", "stage-binds", path]).ok();
    let tag = "berth-test-stage-binds";
    let built = std::process::Command::new(buildkit_cli)
        .args(["-H", &host, "build", "-q", "-t", tag, path])
        .env("DOCKER_BUILDKIT", "1")
        .output()
        .unwrap();
    assert!(built.status.success(), "{built:?}");
    let _cleanup = RemoveDockerTag(&host, tag);
    let in_berth = |args: &[&str]| berth.run(args).output;
    let in_docker = |args: &[&str]| docker(&host, args);
    let tree = file_tree(&in_berth, "stage-binds");
    assert!(
        tree.contains("/app/copied/file regular file 600 0:0 9"),
        "{tree}"
    );
    assert!(!tree.contains("/app/copied/new"), "{tree}");
    assert_eq!(tree, file_tree(&in_docker, tag));
}

/// On a terminal (`auto`, or `--progress tty`) the progress is BuildKit's
/// block redrawn in place: `[+] Building` frames, each moving the cursor
/// back over the last, the steps in blue once done, `FINISHED` last; a
/// failed step in red with its output printed under the block. In a pipe
/// `tty` gives the plain lines, as the docker CLI's builder does.
#[test]
fn a_terminal_gets_buildkits_redrawn_block() {
    let berth = berth_with_busybox();
    let directory = context(&[(
        "Dockerfile",
        "FROM busybox\nRUN echo one && sleep 0.5 && echo two\nRUN echo three\n",
    )]);
    let size = libc::winsize {
        ws_row: 30,
        ws_col: 100,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let path = directory.path().to_str().unwrap();
    let run = support::terminal::TerminalRun::start(&berth, &["build", "-t", "tty", path], size);
    let output = run.output();
    let frames = output.matches("[+] Building ").count();
    assert!(frames >= 3, "{frames} frames in {output:?}");
    assert!(output.contains("\x1b[1A\x1b[0G"), "{output:?}");
    let last = &output[output.rfind("[+] Building ").unwrap()..];
    let lines: Vec<&str> = last.lines().collect();
    assert!(lines[0].contains(" (4/4) FINISHED"), "{last:?}");
    assert!(
        lines[1].starts_with("\x1b[34m => [1/3] FROM busybox "),
        "{last:?}"
    );
    assert!(
        lines[2].contains(" => [2/3] RUN echo one && sleep 0.5 && echo two "),
        "{last:?}"
    );
    assert!(lines[4].contains(" => exporting to image "), "{last:?}");
    assert!(
        lines[6].contains(" => => naming to docker.io/library/tty:latest "),
        "{last:?}"
    );
    // Every step line is as wide as the terminal less one column.
    let width = |line: &str| {
        line.replace("\x1b[34m", "")
            .replace("\x1b[0m", "")
            .replace("\x1b[?25h", "")
            .chars()
            .count()
    };
    assert_eq!(width(lines[1]), 99, "{:?}", lines[1]);
    // While the RUN ran, its output showed under it.
    assert!(output.contains(" => => # one"), "{output:?}");
    assert_eq!(berth.run(&["run", "--rm", "tty", "true"]).code(), 0);

    let failing = context(&[("Dockerfile", "FROM busybox\nRUN echo oops && false\n")]);
    let run = support::terminal::TerminalRun::start(
        &berth,
        &[
            "build",
            "--progress",
            "tty",
            failing.path().to_str().unwrap(),
        ],
        size,
    );
    let (output, code) = run.finish();
    assert_eq!(code, Some(1), "{output}");
    assert!(
        output.contains("\x1b[31m => ERROR [2/2] RUN echo oops && false "),
        "{output:?}"
    );
    assert!(
        output.contains("------\n > [2/2] RUN echo oops && false:\n"),
        "{output:?}"
    );
    assert!(output.contains(" oops\n------\n"), "{output:?}");

    let piped = berth.run(&["build", "--progress", "tty", path]);
    assert_eq!(piped.code(), 0);
    assert!(
        piped.stderr().contains("#2 [2/3] RUN echo one"),
        "{}",
        piped.stderr()
    );
    let bad = berth.run(&["build", "--progress", "fancy", path]);
    assert_eq!(bad.code(), 1, "{}", bad.stderr());
    assert!(bad.stderr().contains("invalid progress mode \"fancy\""));
}

/// A bind of the context shows the context as the build sees it: what
/// `.dockerignore` leaves out is not there (read-only and `rw` alike), an
/// ignored source is not found, and the files themselves are untouched;
/// BuildKit shows the same listing.
#[test]
fn context_binds_hide_what_dockerignore_leaves_out() {
    let dockerfile = "\
FROM busybox
RUN --mount=type=bind,target=/ctx find /ctx | sort > /ro.txt
RUN --mount=type=bind,source=sub,target=/sub,rw find /sub | sort > /rw.txt && rm -f /sub/keep.log
RUN --mount=type=bind,source=plain,target=/plain cat /plain/p.txt > /plain.txt
";
    let directory = context(&[
        ("Dockerfile", dockerfile),
        (".dockerignore", "secret.txt\nsub/*.log\n!sub/keep.log\n"),
        ("secret.txt", "s3cret\n"),
        ("sub/a.log", "a\n"),
        ("sub/keep.log", "kept\n"),
        ("sub/code.c", "int x;\n"),
        ("plain/p.txt", "p\n"),
    ]);
    let path = directory.path().to_str().unwrap();
    let berth = berth_with_busybox();
    berth.run(&["build", "-t", "context-binds", path]).ok();
    let show = |file: &str| {
        berth
            .run(&["run", "--rm", "context-binds", "cat", file])
            .ok()
    };
    let listed = show("/ro.txt");
    assert_eq!(
        listed,
        "/ctx\n/ctx/.dockerignore\n/ctx/Dockerfile\n/ctx/plain\n/ctx/plain/p.txt\n/ctx/sub\n\
         /ctx/sub/code.c\n/ctx/sub/keep.log\n"
    );
    assert_eq!(show("/rw.txt"), "/sub\n/sub/code.c\n/sub/keep.log\n");
    assert_eq!(show("/plain.txt"), "p\n");
    // The rw bind's delete went to its copy, not to the context.
    assert!(directory.path().join("sub/keep.log").exists());
    assert_eq!(
        fs_err::read_to_string(directory.path().join("secret.txt")).unwrap(),
        "s3cret\n"
    );
    let copies = berth.root().join("build-mounts/copies");
    let left: Vec<_> = fs_err::read_dir(&copies)
        .map(|entries| entries.flatten().map(|entry| entry.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");

    let ignored = context(&[
        (
            "Dockerfile",
            "FROM busybox\nRUN --mount=type=bind,source=secret.txt,target=/s cat /s\n",
        ),
        (".dockerignore", "secret.txt\n"),
        ("secret.txt", "s3cret\n"),
    ]);
    let failed = berth.run(&["build", ignored.path().to_str().unwrap()]);
    assert_eq!(failed.code(), 1, "{}", failed.stderr());
    assert!(
        failed.stderr().contains("\"/secret.txt\": not found"),
        "{}",
        failed.stderr()
    );

    let Some(host) = docker_host() else {
        return;
    };
    let buildkit_cli = "/usr/bin/docker";
    if !Path::new(buildkit_cli).exists() {
        return;
    }
    let archive = fixture("busybox-docker.tar");
    let loaded = docker(&host, &["load", "-q", "-i", archive.to_str().unwrap()]);
    assert!(loaded.status.success(), "{loaded:?}");
    let tag = "berth-test-context-binds";
    let built = std::process::Command::new(buildkit_cli)
        .args(["-H", &host, "build", "-q", "-t", tag, path])
        .env("DOCKER_BUILDKIT", "1")
        .output()
        .unwrap();
    assert!(built.status.success(), "{built:?}");
    let _cleanup = RemoveDockerTag(&host, tag);
    for file in ["/ro.txt", "/rw.txt"] {
        let theirs = docker(&host, &["run", "--rm", tag, "cat", file]);
        assert_eq!(
            show(file),
            String::from_utf8_lossy(&theirs.stdout),
            "{file}"
        );
    }
}

/// With `SOURCE_DATE_EPOCH` (the CLI's environment, or the build arg)
/// the same inputs give the same image id: in another root, after
/// `--no-cache`, with the context's files touched. The images are dated
/// with it and no file in their layers is newer; without it two builds
/// differ.
#[test]
fn source_date_epoch_makes_the_same_image_from_the_same_inputs() {
    let dockerfile = "FROM busybox AS a\nRUN echo built > /f\nFROM busybox\nWORKDIR /app\n\
                      COPY hello.txt .\nCOPY --from=a /f /f\nRUN echo hi > /g\n";
    let directory = context(&[("Dockerfile", dockerfile), ("hello.txt", "hello\n")]);
    let path = directory.path().to_str().unwrap();
    let build = |berth: &Berth, extra: &[&str], epoch: Option<&str>| {
        let mut command = berth.command();
        command.args(["build", "-q"]).args(extra).arg(path);
        match epoch {
            Some(epoch) => command.env("SOURCE_DATE_EPOCH", epoch),
            None => command.env_remove("SOURCE_DATE_EPOCH"),
        };
        let output = support::output_with_stdin(command, None);
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    };
    let one = berth_with_busybox();
    let first = build(&one, &[], Some("1700000000"));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    fs_err::write(directory.path().join("hello.txt"), "hello\n").unwrap();
    assert_eq!(build(&one, &["--no-cache"], Some("1700000000")), first);
    let other = berth_with_busybox();
    let by_arg = build(
        &other,
        &["--build-arg", "SOURCE_DATE_EPOCH=1700000000"],
        None,
    );
    assert_eq!(by_arg, first);
    assert_eq!(
        inspect(&other, &first, "{{.Created}}"),
        "2023-11-14T22:13:20Z"
    );
    let times = other
        .run(&[
            "run",
            "--rm",
            &first,
            "stat",
            "-c",
            "%Y",
            "/g",
            "/app/hello.txt",
            "/f",
        ])
        .ok();
    assert_eq!(times, "1700000000\n1700000000\n1700000000\n");
    // Without it, the time of the build is in the image.
    let plain = build(&other, &["--no-cache"], None);
    assert_ne!(plain, first);
    let bad = other.run(&["build", "--build-arg", "SOURCE_DATE_EPOCH=soon", path]);
    assert_eq!(bad.code(), 1);
    assert!(
        bad.stderr().contains("invalid SOURCE_DATE_EPOCH \"soon\""),
        "{}",
        bad.stderr()
    );
}
