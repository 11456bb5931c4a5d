//! `POST /commit` (`docker commit`), `stop?signal=` and the end of a
//! `logs -f` whose client leaves, against `berth serve` with the real
//! docker CLI and raw HTTP; the cases the Docker engine answers the same
//! way run against it too when one is reachable (`BERTH_TEST_DOCKER_HOST`).

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

#[path = "api/compare.rs"]
mod compare;
#[path = "api/harness.rs"]
mod harness;
mod support;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use compare::{each_engine, Cleanup, Engine};
use harness::{resources, settle, Server};
use serde_json::Value;
use support::containers::wait_until;

/// A request with `Connection: close` and `body` (none when empty).
fn post(target: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {target} HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn get(target: &str) -> Vec<u8> {
    format!("GET {target} HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n").into_bytes()
}

fn message(body: &[u8]) -> String {
    let value: Value = serde_json::from_slice(body)
        .unwrap_or_else(|_| panic!("not JSON: {:?}", String::from_utf8_lossy(body)));
    value["message"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn docker_commit_makes_an_image_that_runs() {
    let Some(server) = Server::start() else {
        return;
    };
    server
        .docker(&[
            "run",
            "-d",
            "--name",
            "source",
            "--network",
            "none",
            "busybox",
            "sh",
            "-c",
            "echo before > /file-written-before-commit; echo ready; sleep 300",
        ])
        .ok();
    let engine = Engine::berth(&server, "commit");
    engine.wait_logs("source", "ready");

    let commit = server.docker(&[
        "commit",
        "-c",
        "ENV A=b",
        "-m",
        "msg",
        "source",
        "committed:v1",
    ]);
    let id = commit.ok().trim().to_owned();
    assert!(
        id.starts_with("sha256:") && id.len() == 71,
        "docker commit prints the id: {id:?}"
    );
    // Paused for the commit, running again after it.
    assert_eq!(engine.inspect("source", "{{.State.Status}}"), "running");

    let images = server
        .docker(&["images", "--format", "{{.Repository}}:{{.Tag}} {{.ID}}"])
        .ok();
    assert!(
        images
            .lines()
            .any(|line| line == format!("committed:v1 {}", &id[7..19])),
        "{images}"
    );
    let env = engine.inspect("committed:v1", "{{json .Config.Env}}");
    let env: Vec<String> = serde_json::from_str(&env).unwrap();
    assert!(env.contains(&"A=b".to_owned()), "{env:?}");
    assert!(
        env.iter().any(|entry| entry.starts_with("PATH=")),
        "{env:?}"
    );
    assert_eq!(
        engine.inspect("committed:v1", "{{.Comment}} {{.Id}}"),
        format!("msg {id}")
    );
    let run = server.docker(&[
        "run",
        "--rm",
        "--network",
        "none",
        "committed:v1",
        "sh",
        "-c",
        "echo $A; cat /file-written-before-commit",
    ]);
    assert_eq!(run.ok(), "b\nbefore\n");

    // Without a reference: an untagged image; `--pause=false` too.
    let untagged = server
        .docker(&["commit", "--pause=false", "source"])
        .ok()
        .trim()
        .to_owned();
    assert!(untagged.starts_with("sha256:"), "{untagged}");
    assert_eq!(
        engine.inspect(&untagged, "{{len .RepoTags}}"),
        "0",
        "an image committed without a name has no tags"
    );

    let missing = server.docker(&["commit", "nosuch", "x:y"]);
    let stderr = missing.fails(1);
    assert!(
        stderr.contains("Error response from daemon: No such container: nosuch"),
        "{stderr}"
    );
    let bad_change = server.docker(&["commit", "-c", "RUN echo", "source", "x:y"]);
    let stderr = bad_change.fails(1);
    assert!(stderr.contains("is not a valid change command"), "{stderr}");
    server.docker(&["rm", "-f", "source"]).ok();
}

#[test]
fn commit_answers_as_docker_does() {
    let Some(server) = Server::start() else {
        return;
    };
    each_engine(&server, "commit", |engine| {
        let source = engine.run("api", &[], &["sh", "-c", "echo ready; sleep 300"]);
        let mut cleanup = Cleanup::new(engine, vec![source.clone()]);
        engine.wait_logs(&source, "ready");
        let who = engine.name;

        let missing = engine.name("nosuch");
        let (status, _, body) =
            engine.raw(&post(&format!("/v1.41/commit?container={missing}"), ""));
        assert_eq!(
            (status, message(&body)),
            (404, format!("No such container: {missing}")),
            "{who}"
        );
        let (status, _, body) = engine.raw(&post("/v1.41/commit", ""));
        assert_eq!(
            (status, message(&body).as_str()),
            (400, "invalid name or ID supplied: \"\""),
            "{who}"
        );
        let (status, _, body) = engine.raw(&post(
            &format!("/v1.41/commit?container={source}&changes=RUN%20echo"),
            "",
        ));
        // Docker's parser lowercases the instruction ("run is not …").
        assert_eq!(status, 400, "{who}: {}", message(&body));
        assert!(
            message(&body)
                .to_ascii_lowercase()
                .contains("run is not a valid change command"),
            "{who}: {}",
            message(&body)
        );

        // What the docker CLI sends: a `null` body.
        let (status, _, body) = engine.raw(&post(
            &format!(
                "/v1.41/commit?container={source}&repo={}&tag=t1&comment=c1&author=me&changes=ENV%20Y%3D2&changes=LABEL%20l%3D1",
                engine.name("image")
            ),
            "null",
        ));
        assert_eq!(status, 201, "{who}: {}", String::from_utf8_lossy(&body));
        let id = serde_json::from_slice::<Value>(&body).unwrap()["Id"]
            .as_str()
            .unwrap()
            .to_owned();
        cleanup.images.push(id.clone());
        let tagged = format!("{}:t1", engine.name("image"));
        assert_eq!(
            engine.inspect(
                &tagged,
                "{{.Id}} {{.Comment}} {{.Author}} {{.Config.Labels.l}}"
            ),
            format!("{id} c1 me 1"),
            "{who}"
        );
        let env = engine.inspect(&tagged, "{{json .Config.Env}}");
        assert!(env.contains("\"Y=2\""), "{who}: {env}");
        // The image committed on is its parent.
        assert_eq!(
            engine.inspect(&tagged, "{{.Parent}}"),
            engine.inspect(&source, "{{.Image}}"),
            "{who}"
        );
        // ... and the image list's ParentId.
        let (status, _, body) = engine.raw(&get("/v1.41/images/json"));
        assert_eq!(status, 200, "{who}");
        let images: Vec<Value> = serde_json::from_slice(&body).unwrap();
        let listed = images.iter().find(|image| image["Id"] == id.as_str());
        assert_eq!(
            listed.map(|image| image["ParentId"].clone()),
            Some(Value::from(engine.inspect(&source, "{{.Image}}"))),
            "{who}: {images:?}"
        );

        // A config in the body, merged over the container's (moby's
        // `merge`): its Env wins by key, the container's fills in; an
        // Entrypoint without a Cmd drops the container's Cmd.
        let (status, _, body) = engine.raw(&post(
            &format!("/v1.41/commit?container={source}&changes=ENV%20Y%3D2"),
            r#"{"Env":["X=1","PATH=/x"],"Entrypoint":["/bin/echo","entry"],"Labels":{"a":"b"},"ExposedPorts":{"81/tcp":{}},"WorkingDir":"/tmp"}"#,
        ));
        assert_eq!(status, 201, "{who}: {}", String::from_utf8_lossy(&body));
        let id = serde_json::from_slice::<Value>(&body).unwrap()["Id"]
            .as_str()
            .unwrap()
            .to_owned();
        cleanup.images.push(id.clone());
        let mut env: Vec<String> =
            serde_json::from_str(&engine.inspect(&id, "{{json .Config.Env}}")).unwrap();
        env.sort();
        assert_eq!(env, ["PATH=/x", "X=1", "Y=2"], "{who}");
        assert_eq!(
            engine.inspect(
                &id,
                "{{json .Config.Entrypoint}} {{len .Config.Cmd}} {{.Config.Labels.a}} {{.Config.WorkingDir}} {{json .Config.ExposedPorts}}"
            ),
            r#"["/bin/echo","entry"] 0 b /tmp {"81/tcp":{}}"#,
            "{who}"
        );
    });
}

#[test]
fn commit_refuses_bad_references_and_bodies() {
    let Some(server) = Server::start() else {
        return;
    };
    let engine = Engine::berth(&server, "commit");
    let source = engine.run("refs", &[], &["true"]);
    // Docker 20.10 answers 500 for these after committing an untagged
    // image; moby since 23.0 checks the reference first and answers 400.
    for (query, expected) in [
        ("repo=Bad", "must be lowercase"),
        ("repo=good&tag=bad:tag", "invalid tag"),
        (
            "repo=good@sha256:0000000000000000000000000000000000000000000000000000000000000000",
            "cannot import digest reference",
        ),
        ("repo=Bad&container=nosuch", "must be lowercase"),
    ] {
        let (status, _, body) = engine.raw(&post(
            &format!("/v1.43/commit?container={source}&{query}"),
            "",
        ));
        assert_eq!(status, 400, "{query}: {}", message(&body));
        assert!(
            message(&body).contains(expected),
            "{query}: {}",
            message(&body)
        );
    }
    let (status, _, body) = engine.raw(&post(
        &format!("/v1.43/commit?container={source}"),
        r#"{"Env":"x"}"#,
    ));
    assert_eq!(status, 400, "{}", message(&body));
    // Nothing was committed by the refused requests.
    let images = server.docker(&["images", "-q"]).ok();
    assert_eq!(images.lines().count(), 1, "{images}");
    // `repo` with a tag that `tag` replaces.
    let (status, _, body) = engine.raw(&post(
        &format!("/v1.43/commit?container={source}&repo=again:old&tag=new&pause=0"),
        "{}",
    ));
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let images = server
        .docker(&["images", "--format", "{{.Repository}}:{{.Tag}}"])
        .ok();
    assert!(images.lines().any(|line| line == "again:new"), "{images}");
    assert!(!images.contains("again:old"), "{images}");
}

#[test]
fn stop_sends_the_signal_asked_for() {
    let Some(server) = Server::start() else {
        return;
    };
    let engine = Engine::berth(&server, "commit");
    let trap = [
        "sh",
        "-c",
        "trap 'echo got; exit 3' USR1; echo ready; while true; do sleep 0.1; done",
    ];

    // API 1.42 and later: the signal replaces the stop signal.
    let name = engine.run("usr1", &[], &trap);
    engine.wait_logs(&name, "ready");
    let started = Instant::now();
    let (status, _, body) = engine.raw(&post(
        &format!("/v1.43/containers/{name}/stop?signal=SIGUSR1&t=30"),
        "",
    ));
    assert_eq!(status, 204, "{}", String::from_utf8_lossy(&body));
    // The trap ended it, long before the SIGKILL 30 s later.
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(engine.inspect(&name, "{{.State.ExitCode}}"), "3");
    assert!(engine.wait_logs(&name, "got").contains("ready\ngot\n"));

    // A bad signal is refused before the container is looked at.
    let refuses_a_bad_signal = |path: String| {
        let (status, _, body) = engine.raw(&post(&path, ""));
        assert_eq!(
            (status, message(&body).as_str()),
            (400, "Invalid signal: SIGNOPE"),
            "{path}"
        );
    };
    for container in [name.as_str(), "nosuch"] {
        refuses_a_bad_signal(format!("/v1.43/containers/{container}/stop?signal=SIGNOPE"));
    }
    // Stopped already: 304, and before 1.42 the signal is not read.
    let (status, _, _) = engine.raw(&post(
        &format!("/v1.41/containers/{name}/stop?signal=SIGNOPE"),
        "",
    ));
    assert_eq!(status, 304);

    // restart takes the same signal for its stop, then starts it again.
    engine.raw(&post(&format!("/v1.43/containers/{name}/start"), ""));
    engine.wait_logs(&name, "got\nready\n");
    let (status, _, body) = engine.raw(&post(
        &format!("/v1.43/containers/{name}/restart?signal=SIGUSR1&t=30"),
        "",
    ));
    assert_eq!(status, 204, "{}", String::from_utf8_lossy(&body));
    let logs = engine.wait_logs(&name, "got\nready\ngot\nready\n");
    assert!(logs.ends_with("got\nready\n"), "{logs:?}");
    assert_eq!(engine.inspect(&name, "{{.State.Running}}"), "true");
    refuses_a_bad_signal(format!("/v1.43/containers/{name}/restart?signal=SIGNOPE"));
    engine.docker(&["rm", "-f", &name]);

    // The docker CLI's `stop --signal` (23.0 and later) when one is here.
    match signal_capable_cli(&server) {
        Some(cli) => {
            let name = engine.run("cli", &[], &trap);
            engine.wait_logs(&name, "ready");
            let output = Command::new(&cli)
                .env("DOCKER_HOST", server.host())
                .env(
                    "DOCKER_CONFIG",
                    server.directory.path().join("docker-config"),
                )
                .env_remove("DOCKER_CONTEXT")
                .env_remove("DOCKER_API_VERSION")
                .args(["stop", "--signal", "USR1", "-t", "30", &name])
                .output()
                .unwrap();
            assert!(output.status.success(), "{cli:?}: {output:?}");
            assert_eq!(engine.inspect(&name, "{{.State.ExitCode}}"), "3");
            assert!(engine.wait_logs(&name, "got").contains("got"));
        }
        None => eprintln!("SKIP (part): no docker CLI with `stop --signal` (23.0 and later)"),
    }
}

/// The docker CLI the harness drives, or the one on PATH, whichever has
/// `stop --signal`.
fn signal_capable_cli(server: &Server) -> Option<PathBuf> {
    [server.docker.clone(), PathBuf::from("docker")]
        .into_iter()
        .find(|cli| {
            Command::new(cli)
                .args(["stop", "--help"])
                .output()
                .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).contains("--signal"))
        })
}

#[test]
fn stop_before_api_1_42_ignores_the_signal_as_docker_does() {
    let Some(server) = Server::start() else {
        return;
    };
    each_engine(&server, "commit", |engine| {
        // PID 1 without a handler ignores SIGTERM: only the SIGKILL ends it.
        let name = engine.run(
            "v141",
            &[],
            &[
                "sh",
                "-c",
                "trap 'echo got; exit 3' USR1; echo ready; while true; do sleep 0.1; done",
            ],
        );
        let _cleanup = Cleanup::new(engine, vec![name.clone()]);
        engine.wait_logs(&name, "ready");
        let (status, _, body) = engine.raw(&post(
            &format!("/v1.41/containers/{name}/stop?signal=SIGUSR1&t=1"),
            "",
        ));
        assert_eq!(
            status,
            204,
            "{}: {}",
            engine.name,
            String::from_utf8_lossy(&body)
        );
        assert_eq!(
            engine.inspect(&name, "{{.State.ExitCode}}"),
            "137",
            "{}",
            engine.name
        );
        let logs = engine.docker(&["logs", &name]).all_output();
        assert!(!logs.contains("got"), "{}: {logs}", engine.name);
    });
}

#[test]
fn logs_follow_of_a_silent_container_ends_when_its_client_leaves() {
    let Some(server) = Server::start() else {
        return;
    };
    let pid = server.pid();
    server
        .docker(&[
            "run",
            "-d",
            "--name",
            "quiet",
            "--network",
            "none",
            "busybox",
            "sleep",
            "300",
        ])
        .ok();
    // What the server sets up once is part of the idle reading.
    server.docker(&["logs", "quiet"]).ok();
    std::thread::sleep(Duration::from_millis(500));
    let idle = resources(pid);
    println!("idle: {} descriptors, {} threads", idle.0, idle.1);

    for round in 0..3 {
        let mut client = server.docker_command();
        let mut child = client
            .args(["logs", "-f", "quiet"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_until(20.0, "the logs stream to open", || {
            resources(pid).1 > idle.1
        });
        // Past the CLI's first calls (ping, inspect), into the stream.
        std::thread::sleep(Duration::from_millis(1500));
        assert!(
            child.try_wait().unwrap().is_none(),
            "docker logs -f of a running container ended by itself"
        );
        child.kill().unwrap();
        child.wait().unwrap();

        let now = settle(pid, idle, 10);
        assert_eq!(
            now, idle,
            "round {round}: (descriptors, threads) after the client left"
        );
    }
    // The container wrote nothing and still runs; the server still answers.
    assert_eq!(
        Engine::berth(&server, "commit").inspect("quiet", "{{.State.Status}}"),
        "running"
    );
    server.docker(&["rm", "-f", "quiet"]).ok();
}
