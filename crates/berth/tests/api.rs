//! `berth serve` driven by the real docker CLI (`DOCKER_HOST=unix://…`),
//! outputs checked, plus raw HTTP for malformed and edge-case requests.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

#[path = "api/harness.rs"]
mod harness;
mod support;

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use harness::{docker_in_terminal, header, raw_request, Server};
use serde_json::Value;
use support::containers::wait_until;

#[test]
fn version_and_info_through_the_docker_cli() {
    let Some(server) = Server::start() else {
        return;
    };
    let version = server
        .docker(&[
            "version",
            "--format",
            "{{.Server.Version}} {{.Server.APIVersion}} {{.Server.MinAPIVersion}} {{.Server.Os}}",
        ])
        .ok();
    assert_eq!(
        version.trim(),
        format!("{} 1.43 1.24 linux", env!("CARGO_PKG_VERSION"))
    );
    // The CLI negotiated down to its own version (20.10 speaks 1.41).
    let client = server
        .docker(&["version", "--format", "{{.Client.APIVersion}}"])
        .ok();
    assert!(client.trim().starts_with("1."), "{client}");

    let info = server
        .docker(&[
            "info",
            "--format",
            "{{.Images}} {{.Containers}} {{.Driver}} {{.OSType}} {{.DockerRootDir}}",
        ])
        .ok();
    assert_eq!(
        info.trim(),
        format!("1 0 overlay linux {}", server.berth.root().display())
    );
    let plain = server.docker(&["info"]).ok();
    assert!(plain.contains("Server Version: "), "{plain}");
    assert!(plain.contains("Storage Driver: overlay"), "{plain}");
}

#[test]
fn images_tag_inspect_history_and_remove() {
    let Some(server) = Server::start() else {
        return;
    };
    let id = support::fixture_id("busybox-docker.tar", "busybox:latest");
    let images = server
        .docker(&["images", "--format", "{{.Repository}}:{{.Tag}} {{.ID}}"])
        .ok();
    assert_eq!(
        images.trim(),
        format!("busybox:latest {}", &id.trim_start_matches("sha256:")[..12])
    );
    server.docker(&["tag", "busybox", "mybox:1"]).ok();
    let images = server
        .docker(&["images", "--format", "{{.Repository}}:{{.Tag}}"])
        .ok();
    let mut names: Vec<&str> = images.lines().collect();
    names.sort_unstable();
    assert_eq!(names, ["busybox:latest", "mybox:1"]);
    let inspected = server
        .docker(&["image", "inspect", "--format", "{{.Id}} {{.Os}}", "mybox:1"])
        .ok();
    assert_eq!(inspected.trim(), format!("{id} linux"));
    let history = server
        .docker(&["history", "--format", "{{.ID}}", "busybox"])
        .ok();
    assert!(
        history
            .lines()
            .next()
            .unwrap()
            .starts_with(&id.trim_start_matches("sha256:")[..12]),
        "{history}"
    );
    let removed = server.docker(&["rmi", "mybox:1"]).ok();
    assert_eq!(removed.trim(), "Untagged: mybox:1");
    let missing = server.docker(&["image", "inspect", "nosuch:1"]);
    assert!(
        missing.fails(1).contains("No such image"),
        "{}",
        missing.stderr()
    );
}

#[test]
fn pull_progress_and_run_pulls_a_missing_image() {
    if let Some(reason) = berth_registry::testing::TestRegistry::unavailable_reason() {
        eprintln!("SKIP: {reason}");
        return;
    }
    let registry = berth_registry::testing::TestRegistry::plain().unwrap();
    let name = format!("{}/apitest/busybox:v1", registry.host());
    let source = support::Berth::new();
    source.load("busybox-docker.tar");
    source.run(&["tag", "busybox", &name]).ok();
    source.run(&["push", &name]).ok();

    let Some(server) = Server::start_with(&[], false) else {
        return;
    };
    let pull = server.docker(&["pull", &name]);
    let output = pull.ok();
    assert!(
        output.contains("v1: Pulling from apitest/busybox"),
        "{output}"
    );
    assert!(output.contains("Pull complete"), "{output}");
    assert!(output.contains("Digest: sha256:"), "{output}");
    assert!(
        output.contains(&format!("Status: Downloaded newer image for {name}")),
        "{output}"
    );
    let id = support::fixture_id("busybox-docker.tar", "busybox:latest");
    let inspected = server
        .docker(&["image", "inspect", "--format", "{{.Id}}", &name])
        .ok();
    assert_eq!(inspected.trim(), id);
    let again = server.docker(&["pull", &name]).ok();
    assert!(again.contains("Image is up to date"), "{again}");
    server.docker(&["rmi", &name]).ok();

    // create answers 404 for the missing image; the CLI pulls and retries.
    let run = server.docker(&["run", "--rm", "--network", "none", &name, "echo", "pulled"]);
    assert_eq!(run.ok(), "pulled\n");
    assert!(
        run.stderr()
            .contains(&format!("Unable to find image '{name}' locally")),
        "{}",
        run.stderr()
    );
    let missing = server.docker(&["pull", &format!("{}/apitest/none:v1", registry.host())]);
    assert_ne!(missing.code(), 0);
    assert!(
        missing.stderr().contains("Error response from daemon"),
        "{}",
        missing.stderr()
    );

    // `GET /distribution/NAME/json` asks the registry, as dockerd: the
    // manifest's descriptor and the image's platform.
    let (status, _, body) = server.raw(
        format!("GET /v1.41/distribution/{name}/json HTTP/1.1\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let answer: Value = serde_json::from_slice(&body).unwrap();
    let digest = server
        .docker(&[
            "image",
            "inspect",
            "--format",
            "{{index .RepoDigests 0}}",
            &name,
        ])
        .ok();
    assert_eq!(
        format!("@{}", answer["Descriptor"]["digest"].as_str().unwrap()),
        digest
            .trim()
            .rsplit_once('@')
            .map(|(_, digest)| format!("@{digest}"))
            .unwrap()
    );
    assert!(
        answer["Descriptor"]["size"].as_u64().unwrap() > 0,
        "{answer}"
    );
    assert_eq!(
        answer["Platforms"],
        serde_json::json!([{"architecture": "amd64", "os": "linux"}]),
        "{answer}"
    );
    let (status, _, _) = server.raw(
        format!(
            "GET /v1.41/distribution/{}/apitest/none:v1/json HTTP/1.1\r\nConnection: close\r\n\r\n",
            registry.host()
        )
        .as_bytes(),
    );
    assert_eq!(status, 404);
}

#[test]
fn run_rm_prints_output_and_exits_with_the_status() {
    let Some(server) = Server::start() else {
        return;
    };
    let run = server.docker(&["run", "--rm", "--network", "none", "busybox", "echo", "hi"]);
    assert_eq!(run.ok(), "hi\n");
    let run = server.docker(&[
        "run",
        "--rm",
        "--network",
        "none",
        "busybox",
        "sh",
        "-c",
        "echo out; echo err >&2; exit 3",
    ]);
    assert_eq!(run.code(), 3, "stderr: {}", run.stderr());
    assert_eq!(run.stdout(), "out\n");
    assert_eq!(run.stderr(), "err\n");
    // stdin reaches a `-i` container and its end closes the container's.
    let run = server.docker_with_stdin(
        &[
            "run",
            "--rm",
            "-i",
            "--network",
            "none",
            "busybox",
            "sh",
            "-c",
            "tr a-z A-Z",
        ],
        Some(b"piped input\n"),
    );
    assert_eq!(run.ok(), "PIPED INPUT\n");
    // --rm removed them all.
    assert_eq!(server.docker(&["ps", "-aq"]).ok(), "");
    // A command that does not exist: Docker's 127.
    let missing = server.docker(&[
        "run",
        "--rm",
        "--network",
        "none",
        "busybox",
        "no-such-command",
    ]);
    assert_eq!(missing.code(), 127, "{}", missing.stderr());
}

#[test]
fn detached_container_ps_logs_follow_stop_and_rm() {
    let Some(server) = Server::start() else {
        return;
    };
    let id = server
        .docker(&[
            "run",
            "-d",
            "--name",
            "web",
            "--network",
            "none",
            "busybox",
            "sh",
            "-c",
            "for i in 1 2 3; do echo line $i; sleep 0.3; done; echo done >&2; sleep 100",
        ])
        .ok();
    let id = id.trim().to_owned();
    assert_eq!(id.len(), 64, "{id}");
    let ps = server
        .docker(&[
            "ps",
            "--format",
            "{{.ID}} {{.Names}} {{.Image}} {{.Status}}",
        ])
        .ok();
    assert!(
        ps.starts_with(&format!("{} web busybox Up ", &id[..12])),
        "{ps}"
    );
    let filtered = server
        .docker(&[
            "ps",
            "-q",
            "--filter",
            "name=web",
            "--filter",
            "status=running",
        ])
        .ok();
    assert_eq!(filtered.trim(), &id[..12]);
    assert_eq!(
        server
            .docker(&["ps", "-q", "--filter", "status=exited"])
            .ok(),
        ""
    );

    wait_until(10.0, "the container's stderr line", || {
        server.docker(&["logs", "web"]).stderr().contains("done")
    });
    let logs = server.docker(&["logs", "web"]);
    assert_eq!(logs.ok(), "line 1\nline 2\nline 3\n");
    assert_eq!(logs.stderr(), "done\n");
    // The tail counts records of both streams, as the json-file log keeps them.
    let tail = server.docker(&["logs", "--tail", "2", "web"]);
    assert_eq!(tail.ok(), "line 3\n");
    assert_eq!(tail.stderr(), "done\n");

    // `logs -f` follows until the container stops.
    let mut follow = server.docker_command();
    follow
        .args(["logs", "-f", "web"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let follower = follow.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    let stopped = server.docker(&["stop", "-t", "1", "web"]).ok();
    assert_eq!(stopped.trim(), "web");
    assert!(started.elapsed() < Duration::from_secs(8));
    let output = follower.wait_with_output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "line 1\nline 2\nline 3\n"
    );

    let state = server
        .docker(&[
            "inspect",
            "--format",
            "{{.State.Status}} {{.State.ExitCode}}",
            "web",
        ])
        .ok();
    assert_eq!(state.trim(), "exited 137");
    let all = server
        .docker(&["ps", "-a", "--format", "{{.Names}} {{.Status}}"])
        .ok();
    assert!(all.starts_with("web Exited (137)"), "{all}");
    assert_eq!(server.docker(&["rm", "-f", "web"]).ok().trim(), "web");
    assert_eq!(server.docker(&["ps", "-aq"]).ok(), "");
    let gone = server.docker(&["inspect", "web"]);
    assert!(gone.fails(1).contains("No such"), "{}", gone.stderr());
}

#[test]
fn rm_force_removes_a_running_container() {
    let Some(server) = Server::start() else {
        return;
    };
    server
        .docker(&[
            "run",
            "-d",
            "--name",
            "busy",
            "--network",
            "none",
            "busybox",
            "sleep",
            "100",
        ])
        .ok();
    let refused = server.docker(&["rm", "busy"]);
    assert!(
        refused
            .fails(1)
            .contains("You cannot remove a running container"),
        "{}",
        refused.stderr()
    );
    assert_eq!(server.docker(&["rm", "-f", "busy"]).ok().trim(), "busy");
    assert_eq!(server.docker(&["ps", "-aq"]).ok(), "");
}

#[test]
fn exec_plain_interactive_and_with_a_terminal() {
    let Some(server) = Server::start() else {
        return;
    };
    server
        .docker(&[
            "run",
            "-d",
            "--name",
            "box",
            "--network",
            "none",
            "busybox",
            "sleep",
            "100",
        ])
        .ok();
    let exec = server.docker(&["exec", "box", "sh", "-c", "echo a; echo b >&2; exit 5"]);
    assert_eq!(exec.code(), 5);
    assert_eq!(exec.stdout(), "a\n");
    assert_eq!(exec.stderr(), "b\n");
    let exec = server.docker_with_stdin(&["exec", "-i", "box", "cat"], Some(b"echoed back\n"));
    assert_eq!(exec.ok(), "echoed back\n");
    let exec = server.docker(&[
        "exec",
        "-e",
        "GREETING=hello",
        "-w",
        "/etc",
        "box",
        "sh",
        "-c",
        "echo $GREETING $(pwd)",
    ]);
    assert_eq!(exec.ok(), "hello /etc\n");
    let missing = server.docker(&["exec", "box", "no-such-command"]);
    assert_ne!(missing.code(), 0);

    let (screen, code) = docker_in_terminal(
        &server,
        &["exec", "-it", "box", "sh"],
        b"tty; stty size; echo typed-$((6*7)); exit 4\n",
    );
    assert_eq!(code, 4, "terminal:\n{screen}");
    assert!(screen.contains("/dev/pts/"), "terminal:\n{screen}");
    assert!(screen.contains("24 80"), "terminal:\n{screen}");
    assert!(screen.contains("typed-42"), "terminal:\n{screen}");
}

#[test]
fn cp_both_ways() {
    let Some(server) = Server::start() else {
        return;
    };
    server
        .docker(&[
            "run",
            "-d",
            "--name",
            "files",
            "--network",
            "none",
            "busybox",
            "sleep",
            "100",
        ])
        .ok();
    let host = tempfile::tempdir().unwrap();
    let source = host.path().join("in");
    fs_err::create_dir(&source).unwrap();
    fs_err::write(source.join("a.txt"), "alpha\n").unwrap();
    fs_err::write(source.join("b.txt"), "beta\n").unwrap();
    server
        .docker(&["cp", source.to_str().unwrap(), "files:/tmp/copied"])
        .ok();
    let listed = server
        .docker(&[
            "exec",
            "files",
            "sh",
            "-c",
            "cat /tmp/copied/a.txt /tmp/copied/b.txt",
        ])
        .ok();
    assert_eq!(listed, "alpha\nbeta\n");

    server
        .docker(&[
            "exec",
            "files",
            "sh",
            "-c",
            "mkdir -p /out/sub && echo gamma > /out/sub/c.txt",
        ])
        .ok();
    let target = host.path().join("back");
    server
        .docker(&["cp", "files:/out", target.to_str().unwrap()])
        .ok();
    assert_eq!(
        fs_err::read_to_string(target.join("sub/c.txt")).unwrap(),
        "gamma\n"
    );
    let single = host.path().join("hostname");
    server
        .docker(&["cp", "files:/etc/hostname", single.to_str().unwrap()])
        .ok();
    assert!(!fs_err::read_to_string(&single).unwrap().trim().is_empty());
    let missing = server.docker(&["cp", "files:/no/such", host.path().to_str().unwrap()]);
    // CLI 20.10 asks with HEAD, which carries no message, and words the
    // 404 itself; newer CLIs print the daemon's message.
    let stderr = missing.fails(1);
    assert!(
        stderr.contains("No such container:path: files:/no/such")
            || stderr.contains("Could not find the file /no/such in container files"),
        "{stderr}"
    );
    // A stopped container's files too.
    server.docker(&["stop", "-t", "0", "files"]).ok();
    let after = host.path().join("after");
    server
        .docker(&["cp", "files:/tmp/copied/b.txt", after.to_str().unwrap()])
        .ok();
    assert_eq!(fs_err::read_to_string(&after).unwrap(), "beta\n");
}

#[test]
fn networks_and_volumes() {
    let Some(server) = Server::start() else {
        return;
    };
    let networks = server
        .docker(&["network", "ls", "--format", "{{.Name}} {{.Driver}}"])
        .ok();
    let mut names: Vec<&str> = networks.lines().collect();
    names.sort_unstable();
    assert_eq!(names, ["bridge bridge", "host host", "none null"]);
    let created = server
        .docker(&["network", "create", "--subnet", "10.251.79.0/24", "apinet"])
        .ok();
    assert_eq!(created.trim().len(), 64, "{created}");
    let inspected = server
        .docker(&[
            "network",
            "inspect",
            "--format",
            "{{.Name}} {{.Driver}} {{range .IPAM.Config}}{{.Subnet}} {{.Gateway}}{{end}}",
            "apinet",
        ])
        .ok();
    // No gateway was given: dockerd shows none.
    assert_eq!(inspected.trim(), "apinet bridge 10.251.79.0/24");
    let filtered = server
        .docker(&["network", "ls", "-q", "--filter", "name=apinet"])
        .ok();
    assert_eq!(filtered.trim(), &created.trim()[..12]);
    assert_eq!(
        server.docker(&["network", "rm", "apinet"]).ok().trim(),
        "apinet"
    );
    let gone = server.docker(&["network", "inspect", "apinet"]);
    assert_ne!(gone.code(), 0);

    assert_eq!(
        server.docker(&["volume", "create", "data"]).ok().trim(),
        "data"
    );
    let volumes = server
        .docker(&["volume", "ls", "--format", "{{.Driver}} {{.Name}}"])
        .ok();
    assert_eq!(volumes.trim(), "local data");
    let mountpoint = server
        .docker(&["volume", "inspect", "--format", "{{.Mountpoint}}", "data"])
        .ok();
    assert!(
        mountpoint
            .trim()
            .starts_with(server.berth.root().to_str().unwrap()),
        "{mountpoint}"
    );
    server
        .docker(&[
            "run",
            "--rm",
            "--network",
            "none",
            "-v",
            "data:/data",
            "busybox",
            "sh",
            "-c",
            "echo kept > /data/f",
        ])
        .ok();
    let read = server
        .docker(&[
            "run",
            "--rm",
            "--network",
            "none",
            "-v",
            "data:/data",
            "busybox",
            "cat",
            "/data/f",
        ])
        .ok();
    assert_eq!(read, "kept\n");
    assert_eq!(server.docker(&["volume", "rm", "data"]).ok().trim(), "data");
    assert_eq!(server.docker(&["volume", "ls", "-q"]).ok(), "");
}

#[test]
fn raw_http_errors_versions_and_ping() {
    let Some(server) = Server::start() else {
        return;
    };
    let (status, head, body) =
        server.raw(b"GET /_ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(status, 200);
    assert_eq!(body, b"OK");
    assert_eq!(header(&head, "Api-Version"), Some("1.43"));
    assert_eq!(header(&head, "Ostype"), Some("linux"));
    let (status, head, body) =
        server.raw(b"HEAD /_ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(status, 200);
    assert!(body.is_empty());
    assert_eq!(header(&head, "Api-Version"), Some("1.43"));
    let (status, _, _) = server.raw(b"GET /v1.24/_ping HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(status, 200);
    let (status, _, body) =
        server.raw(b"GET /v1.41/containers/json HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap(),
        Value::Array(vec![])
    );
    let (status, _, body) = server.raw(b"GET /v1.99/version HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(status, 400);
    assert!(message(&body).contains("too new"), "{}", message(&body));

    // Malformed requests: 400 with a JSON message, and the server lives on.
    for request in [
        &b"GARBAGE\r\n\r\n"[..],
        b"GET /_ping HTTP/1.1\r\nContent-Length: nope\r\n\r\n",
        b"GET /_ping?x=%zz HTTP/1.1\r\n\r\n",
        b"POST /containers/create HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
    ] {
        let (status, head, body) = server.raw(request);
        assert_eq!(status, 400, "{}", String::from_utf8_lossy(request));
        assert_eq!(header(&head, "Content-Type"), Some("application/json"));
        assert!(!message(&body).is_empty());
    }
    let (status, _, body) = server.raw(b"GET /no/such/path HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(status, 404);
    assert_eq!(message(&body), "page not found");

    // Swarm: Docker's answers for a node in no swarm (what docker-py's
    // teardown expects), and a clear refusal to join one (init is in
    // api_swarm.rs).
    let (status, _, body) =
        server.raw(b"POST /v1.41/swarm/leave?force=1 HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(
        (status, message(&body).as_str()),
        (503, "This node is not part of a swarm")
    );
    for path in [
        "/swarm",
        "/nodes",
        "/services",
        "/tasks",
        "/secrets",
        "/configs",
    ] {
        let request = format!("GET /v1.41{path} HTTP/1.1\r\nConnection: close\r\n\r\n");
        let (status, _, body) = server.raw(request.as_bytes());
        assert_eq!(status, 503, "{path}");
        assert!(
            message(&body).starts_with("This node is not a swarm manager."),
            "{path}"
        );
    }
    let (status, _, body) = server.raw(
        b"POST /v1.41/swarm/join HTTP/1.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
    );
    assert_eq!(status, 501);
    assert!(message(&body).contains("swarm"), "{}", message(&body));

    let create = |body: &str| {
        format!(
            "POST /v1.41/containers/create HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let (status, _, body) = server.raw(create(r#"{"Image":"nosuch"}"#).as_bytes());
    assert_eq!(status, 404);
    assert_eq!(message(&body), "No such image: nosuch:latest");
    let (status, _, _) = server.raw(create(r#"{"Image":"#).as_bytes());
    assert_eq!(status, 400);
    let (status, _, body) = server.raw(create(r#"{"Image":"busybox","Cmd":42}"#).as_bytes());
    assert_eq!(status, 400, "{}", message(&body));
    let (status, _, body) = server.raw(
        create(r#"{"Image":"busybox"}"#)
            .replace("create", "create?name=bad%2Fname")
            .as_bytes(),
    );
    assert_eq!(status, 400, "{}", message(&body));
    // Too large a body: 413, before it is all read.
    let huge = format!(
        "POST /containers/create HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{{",
        64 * 1024 * 1024
    );
    let (status, _, body) = server.raw(huge.as_bytes());
    assert_eq!(status, 413, "{}", message(&body));
    let (status, _, body) =
        server.raw(b"GET /containers/nosuch/json HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(status, 404);
    assert_eq!(message(&body), "No such container: nosuch");
    // A build without a context has no Dockerfile (tests/api_build.rs
    // has the rest of POST /build).
    let (status, _, body) = server.raw(b"POST /build HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(status, 400);
    assert_eq!(
        message(&body),
        "Cannot locate specified Dockerfile: Dockerfile"
    );
    // Keep-alive: two requests on one connection.
    let (status, _, body) = server.raw(
        b"GET /_ping HTTP/1.1\r\n\r\nGET /v1.41/version HTTP/1.1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&body).contains("\"ApiVersion\":\"1.43\""));
    // Still serving.
    assert_eq!(
        server
            .docker(&["version", "--format", "{{.Server.APIVersion}}"])
            .ok()
            .trim(),
        "1.43"
    );
}

fn message(body: &[u8]) -> String {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|value| value["message"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

#[test]
fn sockets_modes_several_hosts_and_idle_timeout() {
    let extra = tempfile::tempdir().unwrap();
    let second = extra.path().join("second.sock");
    let second_host = format!("unix://{}", second.display());
    let Some(mut server) = Server::start_with(&["-H", &second_host, "--idle-timeout", "2s"], false)
    else {
        return;
    };
    server.wait_for_socket(&second);
    for socket in [&server.socket, &second] {
        let mode = fs_err::metadata(socket).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o660, "{socket:?}");
        let (status, _, body) =
            raw_request(socket, b"GET /_ping HTTP/1.1\r\nConnection: close\r\n\r\n");
        assert_eq!((status, body.as_slice()), (200, &b"OK"[..]));
    }
    // Idle: the server exits and removes its sockets.
    let status = support::containers::wait_child(server.child(), 20.0, "the idle server to exit");
    assert!(status.success(), "{status:?}");
    assert!(!server.socket.exists());
    assert!(!second.exists());
}

#[test]
fn a_stream_keeps_the_idle_server_alive() {
    let Some(mut server) = Server::start_with(&["--idle-timeout", "1s"], true) else {
        return;
    };
    server
        .docker(&[
            "run",
            "-d",
            "--name",
            "slow",
            "--network",
            "none",
            "busybox",
            "sh",
            "-c",
            "sleep 3; echo finished",
        ])
        .ok();
    // `logs -f` is open for 3 s, longer than the idle timeout.
    let logs = server.docker(&["logs", "-f", "slow"]);
    assert_eq!(logs.ok(), "finished\n");
    let status = support::containers::wait_child(server.child(), 20.0, "the idle server to exit");
    assert!(status.success());
}

/// docker-py's `ArchiveTest`, through the docker CLI: `PUT`/`HEAD`/`GET
/// /containers/{id}/archive` of a path in an anonymous volume of a created
/// container, and of an exited one, reach the volume as dockerd's do.
#[test]
fn archive_of_a_created_container_reaches_its_volumes() {
    let Some(server) = Server::start() else {
        return;
    };
    let id = server
        .docker(&["create", "-v", "/vol1", "busybox", "cat", "/vol1/in.txt"])
        .ok()
        .trim()
        .to_owned();
    let host = tempfile::tempdir().unwrap();
    let file = host.path().join("in.txt");
    fs_err::write(&file, "Deaf To All But The Song\n").unwrap();
    server
        .docker(&["cp", file.to_str().unwrap(), &format!("{id}:/vol1")])
        .ok();
    server.docker(&["start", "-a", &id]).ok();
    assert_eq!(
        server.docker(&["logs", &id]).ok(),
        "Deaf To All But The Song\n"
    );
    let back = host.path().join("back.txt");
    server
        .docker(&["cp", &format!("{id}:/vol1/in.txt"), back.to_str().unwrap()])
        .ok();
    assert_eq!(
        fs_err::read_to_string(&back).unwrap(),
        "Deaf To All But The Song\n"
    );
    let (status, head, _) = raw_request(
        &server.socket,
        format!("HEAD /v1.43/containers/{id}/archive?path=/vol1/in.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    assert_eq!(status, 200, "{head}");
    assert!(
        header(&head, "X-Docker-Container-Path-Stat").is_some(),
        "{head}"
    );
    let ro = server
        .docker(&[
            "create",
            "-v",
            &format!("{}:/ro:ro", host.path().display()),
            "busybox",
            "true",
        ])
        .ok()
        .trim()
        .to_owned();
    let stderr = server
        .docker(&["cp", file.to_str().unwrap(), &format!("{ro}:/ro/")])
        .fails(1);
    assert!(
        stderr.contains("mounted volume is marked read-only"),
        "{stderr}"
    );
    server.docker(&["rm", "-v", &id, &ro]).ok();
}

/// A chunked upload whose reader stops at the tar's end marker (`PUT
/// /archive`, `POST /images/load`): the rest of the body is read away, so
/// the next request on the same keep-alive connection is answered (the
/// docker CLI's `cp` reuses the connection; it got "400 invalid token").
#[test]
fn the_request_after_a_chunked_upload_on_one_connection_is_answered() {
    use std::io::{Read, Write};
    let Some(server) = Server::start() else {
        return;
    };
    let id = server
        .berth
        .run(&["create", "busybox", "true"])
        .ok()
        .trim()
        .to_owned();
    let mut archive = tar::Builder::new(Vec::new());
    let mut entry = tar::Header::new_gnu();
    entry.set_size(2);
    entry.set_mode(0o644);
    archive
        .append_data(&mut entry, "copied", &b"hi"[..])
        .unwrap();
    let mut archive = archive.into_inner().unwrap();
    // Go's writer pads to whole records: bytes after the end marker.
    archive.resize(archive.len() + 4096, 0);
    let mut request = format!(
        "PUT /v1.41/containers/{id}/archive?path=/tmp HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-tar\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    .into_bytes();
    for chunk in archive.chunks(3000) {
        request.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        request.extend_from_slice(chunk);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    request.extend_from_slice(b"GET /_ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let mut stream = std::os::unix::net::UnixStream::connect(&server.socket).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream.write_all(&request).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    let statuses: Vec<&str> = answer
        .lines()
        .filter(|line| line.starts_with("HTTP/1.1 "))
        .collect();
    assert_eq!(statuses, ["HTTP/1.1 200 OK", "HTTP/1.1 200 OK"], "{answer}");
    assert!(answer.ends_with("OK"), "{answer}");
    let copied = server
        .berth
        .run(&["cp", &format!("{id}:/tmp/copied"), "-"])
        .ok();
    assert!(copied.contains("hi"), "{copied}");
}

/// `POST /networks/create` as docker-py sends it: every unset IPAM field
/// as JSON null, `Driver` null; `IPRange`, `AuxiliaryAddresses` and IPAM
/// `Options` kept and shown as Docker 20.10 shows them (compose's
/// test_up_with_ipam_config and _options); bad ones refused in
/// libnetwork's words, leaving nothing.
#[test]
fn network_create_takes_nulls_ranges_aux_addresses_and_ipam_options() {
    use serde_json::json;
    let Some(server) = Server::start_with(&[], false) else {
        return;
    };
    let post = |body: &str| {
        let request = format!(
            "POST /v1.41/networks/create HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let (status, _, body) = server.raw(request.as_bytes());
        (status, message(&body))
    };
    let ipam = |name: &str| -> serde_json::Value {
        let text = server
            .berth
            .run(&["network", "inspect", "-f", "{{json .IPAM}}", name])
            .ok();
        serde_json::from_str(&text).unwrap()
    };
    let (status, _) = post(
        r#"{"Name":"pynet","Driver":null,"Options":null,"CheckDuplicate":true,"IPAM":{"Driver":"default","Config":[{"Subnet":"10.239.7.0/24","IPRange":null,"Gateway":null,"AuxiliaryAddresses":null}],"Options":null}}"#,
    );
    assert_eq!(status, 201);
    assert_eq!(
        ipam("pynet"),
        json!({"Driver": "default", "Options": null, "Config": [{"Subnet": "10.239.7.0/24"}]})
    );
    let (status, _) = post(
        r#"{"Name":"n2","IPAM":{"Driver":"default","Config":[{"Subnet":"10.239.8.0/24","IPRange":"10.239.8.128/25","Gateway":"10.239.8.254","AuxiliaryAddresses":{"a":"10.239.8.5","b":"10.239.8.6"}}],"Options":null}}"#,
    );
    assert_eq!(status, 201);
    assert_eq!(
        ipam("n2"),
        json!({"Driver": "default", "Options": null, "Config": [{
            "Subnet": "10.239.8.0/24",
            "IPRange": "10.239.8.128/25",
            "Gateway": "10.239.8.254",
            "AuxiliaryAddresses": {"a": "10.239.8.5", "b": "10.239.8.6"},
        }]})
    );
    let (status, _) = post(r#"{"Name":"n4","IPAM":{"Options":{"x":"y"}}}"#);
    assert_eq!(status, 201);
    assert_eq!(ipam("n4")["Options"], json!({"x": "y"}));
    for (body, words) in [
        (
            r#"{"Name":"bad","IPAM":{"Config":[{"Subnet":"10.239.9.0/24","IPRange":"10.239.10.0/25"}]}}"#,
            "no matching subnet for range 10.239.10.0/25",
        ),
        (
            r#"{"Name":"bad","IPAM":{"Config":[{"IPRange":"10.239.9.0/25"}]}}"#,
            "every ip-range or gateway must have a corresponding subnet",
        ),
        (
            r#"{"Name":"bad","IPAM":{"Config":[{"Subnet":"10.239.9.0/24","AuxiliaryAddresses":{"a":"10.239.10.5"}}]}}"#,
            "auxiliary address: (a:10.239.10.5) must belong to the master pool: 10.239.9.0/24",
        ),
        (
            r#"{"Name":"bad","IPAM":{"Config":[{"Subnet":"10.239.9.0/24","AuxiliaryAddresses":{"a":"bogus"}}]}}"#,
            "non parsable secondary ip address (a:bogus) passed for network bad",
        ),
        (
            r#"{"Name":"bad","IPAM":{"Config":[{"Subnet":"10.239.9.0/24","AuxiliaryAddresses":{"gw":"10.239.9.1"}}]}}"#,
            "failed to allocate secondary ip address (gw:10.239.9.1): Address already in use",
        ),
        (
            r#"{"Name":"bad","IPAM":{"Driver":"dhcp"}}"#,
            "berth supports the default IPAM driver only",
        ),
    ] {
        let (status, message) = post(body);
        assert_eq!(status, 400, "{body}");
        assert!(message.contains(words), "{message}");
    }
    let networks = server
        .berth
        .run(&["network", "ls", "--format", "{{.Name}}"])
        .ok();
    assert!(!networks.contains("bad"), "{networks}");
    server
        .berth
        .run(&["network", "rm", "pynet", "n2", "n4"])
        .ok();
}

/// Endpoint settings berth does not do are refused by name, at create and
/// at connect, and leave nothing behind.
#[test]
fn endpoint_settings_berth_cannot_honour_are_refused() {
    let Some(server) = Server::start_with(&[], false) else {
        return;
    };
    server.berth.load("busybox-docker.tar");
    server.berth.run(&["network", "create", "epnet"]).ok();
    server
        .berth
        .run(&["create", "--name", "ep-c", "busybox", "true"])
        .ok();
    let post = |path: &str, body: &str| {
        let request = format!(
            "POST {path} HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let (status, _, body) = server.raw(request.as_bytes());
        (status, message(&body))
    };
    for (endpoint, words) in [
        // epnet has no IPv6 pool of the user's.
        (
            r#"{"IPAMConfig":{"IPv6Address":"2001:db8::5"}}"#,
            "user specified IP address is supported only when connecting to networks with user configured subnets",
        ),
        (
            r#"{"IPAMConfig":{"IPv6Address":"10.1.1.1"}}"#,
            "invalid IPv6 address: 10.1.1.1",
        ),
        (
            r#"{"IPAMConfig":{"LinkLocalIPs":["10.1.1.1"]}}"#,
            "invalid link local IP address: 10.1.1.1",
        ),
        (
            r#"{"Links":["ep-c:x:y"]}"#,
            "bad format for links: ep-c:x:y",
        ),
    ] {
        let create = format!(
            r#"{{"Image":"busybox","Cmd":["true"],"HostConfig":{{"NetworkMode":"epnet"}},"NetworkingConfig":{{"EndpointsConfig":{{"epnet":{endpoint}}}}}}}"#
        );
        let (status, message) = post("/v1.41/containers/create", &create);
        assert_eq!(status, 400, "{create}: {message}");
        assert!(message.contains(words), "{message}");
        let connect = format!(r#"{{"Container":"ep-c","EndpointConfig":{endpoint}}}"#);
        let (status, message) = post("/v1.41/networks/epnet/connect", &connect);
        assert_eq!(status, 400, "{connect}: {message}");
        assert!(message.contains(words), "{message}");
    }
    let (status, message) = post(
        "/v1.41/networks/bridge/connect",
        r#"{"Container":"ep-c","EndpointConfig":{"Links":["ep-c:x"]}}"#,
    );
    assert_eq!(status, 400, "{message}");
    assert!(
        message.contains("links are only supported for user-defined networks"),
        "{message}"
    );
    // Only ep-c, still on its one network.
    let all = server.berth.run(&["ps", "-aq"]).ok();
    assert_eq!(all.lines().count(), 1, "{all}");
    let networks = server
        .berth
        .run(&["inspect", "-f", "{{len .NetworkSettings.Networks}}", "ep-c"])
        .ok();
    assert_eq!(networks.trim(), "1");
    server.berth.run(&["rm", "ep-c"]).ok();
    server.berth.run(&["network", "rm", "epnet"]).ok();
}

/// An endpoint as dockerd shows it: the aliases asked for (the short id is
/// appended at the first start), the address asked for under `IPAMConfig`,
/// the `DriverOpts` kept; the deprecated `Config.MacAddress` is the first
/// network's MAC. And `container prune` counts the writable layers freed.
#[test]
fn endpoints_are_shown_as_dockerd_shows_them_and_prune_counts_its_space() {
    let Some(server) = Server::start_with(&[], false) else {
        return;
    };
    server.berth.load("busybox-docker.tar");
    server
        .berth
        .run(&["network", "create", "--subnet", "10.239.12.0/24", "shownet"])
        .ok();
    let body = r#"{"Image":"busybox","Cmd":["sh","-c","cat /sys/class/net/eth0/address; echo data > /f"],"MacAddress":"02:42:ac:11:00:0a","HostConfig":{"NetworkMode":"shownet"},"NetworkingConfig":{"EndpointsConfig":{"shownet":{"Aliases":["hello"],"DriverOpts":{"key1":"a"},"IPAMConfig":{"IPv4Address":"10.239.12.9"}}}}}"#;
    let request = format!(
        "POST /v1.41/containers/create HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let (status, _, answer) = server.raw(request.as_bytes());
    assert_eq!(status, 201, "{}", message(&answer));
    let id = serde_json::from_slice::<Value>(&answer).unwrap()["Id"]
        .as_str()
        .unwrap()
        .to_owned();
    let endpoint = |berth: &support::Berth| {
        let text = berth
            .run(&[
                "inspect",
                "-f",
                "{{json .NetworkSettings.Networks.shownet}}",
                &id,
            ])
            .ok();
        serde_json::from_str::<Value>(&text).unwrap()
    };
    let created = endpoint(&server.berth);
    assert_eq!(
        created["Aliases"],
        serde_json::json!(["hello"]),
        "{created}"
    );
    assert_eq!(
        created["DriverOpts"],
        serde_json::json!({"key1": "a"}),
        "{created}"
    );
    assert_eq!(
        created["IPAMConfig"],
        serde_json::json!({"IPv4Address": "10.239.12.9"}),
        "{created}"
    );
    let out = server.berth.run(&["start", "-a", &id]).ok();
    assert_eq!(out, "02:42:ac:11:00:0a\n");
    let started = endpoint(&server.berth);
    assert_eq!(
        started["Aliases"],
        serde_json::json!(["hello", &id[..12]]),
        "{started}"
    );
    // The exited container's layer holds /f: prune frees more than nothing.
    let (status, _, answer) = server.raw(
        b"POST /v1.41/containers/prune HTTP/1.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200);
    let pruned: Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(
        pruned["ContainersDeleted"],
        serde_json::json!([id]),
        "{pruned}"
    );
    assert!(pruned["SpaceReclaimed"].as_u64().unwrap() > 0, "{pruned}");
    server.berth.run(&["network", "rm", "shownet"]).ok();
}

/// Answers docker-py's tests read as dockerd gives them: a bad image archive
/// is a 200 with the error in the stream, an unknown volume driver a 404,
/// network names with spaces or a leading underscore are names, and a MAC
/// asked for at connect shows before the container runs.
#[test]
fn load_errors_volume_drivers_network_names_and_macs_answer_as_dockerd() {
    let Some(server) = Server::start_with(&[], false) else {
        return;
    };
    let post = |path: &str, content_type: &str, body: &str| {
        let request = format!(
            "POST {path} HTTP/1.1\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        server.raw(request.as_bytes())
    };
    let (status, _, body) = post("/v1.41/images/load", "application/x-tar", "abc");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let line: Value = serde_json::from_slice(body.trim_ascii()).unwrap();
    assert!(
        line["error"]
            .as_str()
            .is_some_and(|error| !error.is_empty()),
        "{line}"
    );
    assert_eq!(line["errorDetail"]["message"], line["error"]);

    let (status, _, body) = post(
        "/v1.41/volumes/create",
        "application/json",
        r#"{"Name":"vv","Driver":"invalid.driver"}"#,
    );
    assert_eq!(status, 404);
    assert_eq!(
        message(&body),
        r#"create vv: error looking up volume plugin invalid.driver: plugin "invalid.driver" not found"#
    );

    for name in ["test 01", "_underscore", "a/b"] {
        let (status, _, body) = post(
            "/v1.41/networks/create",
            "application/json",
            &serde_json::json!({ "Name": name }).to_string(),
        );
        assert_eq!(status, 201, "{name}: {}", message(&body));
    }
    server.berth.load("busybox-docker.tar");
    server
        .berth
        .run(&["create", "--name", "macs", "busybox", "true"])
        .ok();
    let (status, _, body) = post(
        "/v1.41/networks/test%2001/connect",
        "application/json",
        r#"{"Container":"macs","EndpointConfig":{"MacAddress":"02:42:ac:11:00:02"}}"#,
    );
    assert_eq!(status, 200, "{}", message(&body));
    let mac = server
        .berth
        .run(&[
            "inspect",
            "-f",
            "{{(index .NetworkSettings.Networks \"test 01\").MacAddress}}",
            "macs",
        ])
        .ok();
    assert_eq!(mac.trim(), "02:42:ac:11:00:02");
    server.berth.run(&["rm", "macs"]).ok();
    server
        .berth
        .run(&["network", "rm", "test 01", "_underscore", "a/b"])
        .ok();
}

/// `POST /volumes/create` with the local driver's `DriverOpts` as dockerd
/// answers it: 400 with its words for an unknown key, 201 and `Options` for
/// good ones; a start whose volume's device is missing is a 500 with
/// dockerd's words, and leaves the container created with exit code 128.
#[test]
fn volume_driver_options_answer_as_dockerd() {
    let Some(server) = Server::start_with(&[], false) else {
        return;
    };
    let post = |path: &str, body: &str| {
        let request = format!(
            "POST {path} HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        server.raw(request.as_bytes())
    };
    let (status, _, body) = post(
        "/v1.41/volumes/create",
        r#"{"Name":"opts","DriverOpts":{"foo":"bar"}}"#,
    );
    assert_eq!(status, 400);
    assert_eq!(message(&body), r#"create opts: invalid option: "foo""#);
    let missing = tempfile::tempdir().unwrap().path().join("gone");
    let options = serde_json::json!({
        "Name": "opts",
        "DriverOpts": {"type": "none", "o": "bind", "device": missing},
    });
    let (status, _, body) = post("/v1.41/volumes/create", &options.to_string());
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let volume: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(volume["Options"], options["DriverOpts"]);
    server.berth.load("busybox-docker.tar");
    server
        .berth
        .run(&[
            "create",
            "--name",
            "uses-opts",
            "--network",
            "none",
            "-v",
            "opts:/d",
            "busybox",
            "true",
        ])
        .ok();
    let (status, _, body) = post("/v1.41/containers/uses-opts/start", "");
    assert_eq!(status, 500);
    let data = server.berth.root().join("volumes/opts/_data");
    assert_eq!(
        message(&body),
        format!(
            "error while mounting volume '{}': failed to mount local volume: mount {}:{}, flags: 0x1000: no such file or directory",
            data.display(),
            missing.display(),
            data.display()
        )
    );
    let state = server
        .berth
        .run(&[
            "inspect",
            "-f",
            "{{.State.Status}} {{.State.ExitCode}}",
            "uses-opts",
        ])
        .ok();
    assert_eq!(state, "created 128\n");
    server.berth.run(&["rm", "uses-opts"]).ok();
    server.berth.run(&["volume", "rm", "opts"]).ok();
}

/// `GET /containers/json` lists Docker's MountPoints (compose v2 compares
/// their Type and Name to decide whether to recreate), and tmpfs mounts
/// are in neither the list nor inspect's Mounts, as Docker's.
#[test]
fn listed_mounts_are_dockers_mount_points() {
    let Some(server) = Server::start() else {
        return;
    };
    let host = tempfile::tempdir().unwrap();
    let bind = format!("{}:/h:ro", host.path().display());
    let id = server
        .berth
        .run(&[
            "create",
            "-v",
            &bind,
            "-v",
            "listvol:/v",
            "--tmpfs",
            "/t",
            "--mount",
            "type=tmpfs,target=/u",
            "busybox",
            "true",
        ])
        .ok()
        .trim()
        .to_owned();
    let (status, _, body) =
        server.raw(b"GET /v1.41/containers/json?all=1 HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(status, 200);
    let list: Value = serde_json::from_slice(&body).unwrap();
    let row = list
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["Id"] == id.as_str())
        .unwrap();
    let mut mounts: Vec<Value> = row["Mounts"].as_array().unwrap().clone();
    mounts.sort_by_key(|mount| mount["Destination"].as_str().unwrap().to_owned());
    // `--tmpfs` is not a mount point of dockerd's, `--mount type=tmpfs` is.
    assert_eq!(mounts.len(), 3, "{mounts:?}");
    assert_eq!(mounts[0]["Type"], "bind");
    assert_eq!(mounts[0]["Source"], host.path().display().to_string());
    assert_eq!(mounts[0]["RW"], false);
    assert_eq!(mounts[1]["Type"], "tmpfs");
    assert_eq!(mounts[1]["Destination"], "/u");
    assert_eq!(mounts[1]["Source"], "");
    assert_eq!(mounts[2]["Type"], "volume");
    assert_eq!(mounts[2]["Name"], "listvol");
    assert_eq!(mounts[2]["Driver"], "local");
    // dockerd fills in its default IPC mode.
    let ipc = server
        .berth
        .run(&["inspect", "-f", "{{.HostConfig.IpcMode}}", &id])
        .ok();
    assert_eq!(ipc.trim(), "shareable");
    let inspected = server
        .berth
        .run(&["inspect", "-f", "{{json .Mounts}}", &id])
        .ok();
    assert!(!inspected.contains("\"/t\""), "{inspected}");
    server.berth.run(&["rm", "-v", &id]).ok();
    server.berth.run(&["volume", "rm", "listvol"]).ok();
}
