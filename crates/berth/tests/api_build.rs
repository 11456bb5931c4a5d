//! `POST /build` (the classic builder's protocol) against `berth serve`:
//! raw requests for the refusals and the hostile context, the real docker
//! CLI with `DOCKER_BUILDKIT=0` for the build.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

#[path = "api/harness.rs"]
mod harness;
#[path = "registry_login/harness.rs"]
#[allow(dead_code)] // the login tests' registries: only the Basic one is used here
mod registries;
mod support;

use std::path::Path;

use base64::Engine as _;
use harness::{raw_request, Server};
use serde_json::Value;

const DOCKERFILE: &str = "FROM busybox\nRUN echo hi > /f\nCMD [\"cat\",\"/f\"]\n";

/// A tar stream of `(name, contents)` files; names are written as given
/// (the tar crate refuses `..`, which the hostile context needs).
fn tar(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for (name, data) in files {
        let mut header = tar::Header::new_gnu();
        header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(1_600_000_000);
        header.set_cksum();
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(data);
        bytes.extend(std::iter::repeat_n(0, (512 - data.len() % 512) % 512));
    }
    bytes.extend(std::iter::repeat_n(0, 1024));
    bytes
}

/// `POST /v1.41/build?QUERY` with `body` as the context.
fn build_request(query: &str, body: &[u8]) -> Vec<u8> {
    let mut request = format!(
        "POST /v1.41/build?{query} HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\
         Content-Type: application/x-tar\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    request
}

fn message(body: &[u8]) -> String {
    let value: Value = serde_json::from_slice(body)
        .unwrap_or_else(|_| panic!("not JSON: {:?}", String::from_utf8_lossy(body)));
    value["message"].as_str().unwrap_or_default().to_owned()
}

/// The JSON messages of a build's stream.
fn messages(body: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(body)
        .split("\r\n")
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line:?}")))
        .collect()
}

/// What the server left in its temporaries: the store's `tmp/` and the
/// build contexts' directory.
fn leftovers(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for directory in ["tmp", "build-contexts"] {
        if let Ok(entries) = fs_err::read_dir(root.join(directory)) {
            found.extend(
                entries
                    .flatten()
                    .map(|entry| entry.path().display().to_string()),
            );
        }
    }
    found
}

#[test]
fn a_parameter_berth_does_not_do_is_refused_by_name() {
    let Some(server) = Server::start() else {
        return;
    };
    let context = tar(&[("Dockerfile", DOCKERFILE.as_bytes())]);
    for (query, name) in [
        ("session=abc", "session"),
        ("buildid=abc", "buildid"),
        ("outputs=%5B%7B%22Type%22%3A%22tar%22%7D%5D", "outputs"),
    ] {
        let (status, _, body) = server.raw(&build_request(query, &context));
        assert_eq!(status, 501, "{query}: {}", String::from_utf8_lossy(&body));
        assert!(message(&body).contains(name), "{query}: {}", message(&body));
    }
    let (status, _, body) = server.raw(&build_request("squash=1", &context));
    assert_eq!(status, 400);
    assert_eq!(
        message(&body),
        "squash is only supported with experimental mode"
    );
    let (status, _, body) = server.raw(&build_request("buildargs=%7Bbroken", &context));
    assert_eq!(status, 400);
    assert!(message(&body).contains("error reading build args"));
    assert!(leftovers(server.berth.root()).is_empty());
}

#[test]
fn buildkit_is_refused() {
    let Some(server) = Server::start() else {
        return;
    };
    let context = tar(&[("Dockerfile", DOCKERFILE.as_bytes())]);
    let (status, _, body) = server.raw(&build_request("version=2&session=abc", &context));
    assert_eq!(status, 501, "{}", String::from_utf8_lossy(&body));
    let text = message(&body);
    assert!(
        text.contains("version=2") && text.contains("BuildKit"),
        "{text}"
    );
    // BuildKit's other endpoints.
    let (status, _, _) = raw_request(
        &server.socket,
        b"POST /v1.41/session HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 501);
}

#[test]
fn a_remote_context_is_refused() {
    let Some(server) = Server::start() else {
        return;
    };
    for remote in [
        "https%3A%2F%2Fgithub.com%2Fdocker%2Fcli.git",
        "https%3A%2F%2Fexample.com%2Fcontext.tar.gz",
        "https%3A%2F%2Fexample.com%2FDockerfile",
    ] {
        let (status, _, body) = server.raw(&build_request(&format!("remote={remote}"), b""));
        assert_eq!(status, 501, "{}", String::from_utf8_lossy(&body));
        assert!(message(&body).contains("remote"), "{}", message(&body));
    }
}

#[test]
fn a_hostile_context_is_refused_and_leaves_nothing() {
    let Some(server) = Server::start() else {
        return;
    };
    let root = server.berth.root().to_owned();
    let escape = root.join("escaped");
    // The context is ROOT/build-contexts/context-PID-RANDOM/context: three
    // `..` reach ROOT, sixteen reach `/` and then ROOT again by name.
    let climb = "../../../escaped";
    let deep = format!(
        "{}{}",
        "../".repeat(16),
        escape.strip_prefix("/").unwrap().display()
    );
    for name in [climb, deep.as_str(), "sub/../../x"] {
        let context = tar(&[
            ("Dockerfile", DOCKERFILE.as_bytes()),
            (name, b"escaped".as_slice()),
        ]);
        let (status, _, body) = server.raw(&build_request("t=hostile", &context));
        assert_eq!(status, 400, "{name}: {}", String::from_utf8_lossy(&body));
        assert!(
            message(&body).contains("invalid entry name"),
            "{name}: {}",
            message(&body)
        );
        assert!(!escape.exists(), "{name} escaped");
        assert!(
            leftovers(&root).is_empty(),
            "{name}: {:?}",
            leftovers(&root)
        );
    }
    // The connection-level answer left the server serving.
    let (status, _, _) = raw_request(
        &server.socket,
        b"GET /_ping HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200);
}

#[test]
fn a_missing_dockerfile_is_dockers_error() {
    let Some(server) = Server::start() else {
        return;
    };
    let context = tar(&[("other", b"x".as_slice())]);
    let (status, _, body) = server.raw(&build_request("dockerfile=nope", &context));
    assert_eq!(status, 400);
    assert_eq!(message(&body), "Cannot locate specified Dockerfile: nope");
    assert!(leftovers(server.berth.root()).is_empty());
}

/// A build through raw `POST /build` streams the
/// classic builder's messages and makes an image that runs.
#[test]
fn a_raw_build_makes_an_image_that_runs() {
    let Some(server) = Server::start() else {
        return;
    };
    let context = tar(&[("Dockerfile", DOCKERFILE.as_bytes())]);
    let (status, _, body) = server.raw(&build_request("t=rawbuild", &context));
    let text = String::from_utf8_lossy(&body).into_owned();
    assert_eq!(status, 200, "{text}");
    let answer = messages(&body);
    let streamed: String = answer
        .iter()
        .filter_map(|message| message["stream"].as_str())
        .collect();
    assert!(streamed.contains("Step 1/3 : FROM busybox\n"), "{streamed}");
    assert!(
        streamed.contains("Step 2/3 : RUN echo hi > /f\n"),
        "{streamed}"
    );
    assert!(streamed.contains(" ---> Running in "), "{streamed}");
    assert!(streamed.contains("Successfully built "), "{streamed}");
    assert!(
        streamed.contains("Successfully tagged rawbuild:latest\n"),
        "{streamed}"
    );
    let id = answer
        .iter()
        .find_map(|message| message["aux"]["ID"].as_str())
        .unwrap_or_else(|| panic!("no aux ID in {text}"));
    assert!(id.starts_with("sha256:"), "{id}");
    assert!(answer.iter().all(|message| message.get("error").is_none()));
    assert_eq!(server.docker(&["run", "--rm", "rawbuild"]).ok(), "hi\n");
    assert!(leftovers(server.berth.root()).is_empty());

    // A failing RUN: the error in the stream with its code.
    let failing = tar(&[("Dockerfile", b"FROM busybox\nRUN false\n".as_slice())]);
    let (status, _, body) = server.raw(&build_request("", &failing));
    assert_eq!(status, 200);
    let last = messages(&body).pop().unwrap();
    assert_eq!(
        last["error"],
        "The command '/bin/sh -c false' returned a non-zero code: 1"
    );
    assert_eq!(last["errorDetail"]["code"], 1);

    // The classic builder keeps a failed step's container unless
    // `forcerm=1` (compose's test_build_failed finds it by the label the
    // Dockerfile gave), and every step's with `rm=0`.
    let labelled = tar(&[(
        "Dockerfile",
        b"FROM busybox\nLABEL kept=yes\nRUN false\n".as_slice(),
    )]);
    let kept = |query: &str| {
        let (status, _, _) = server.raw(&build_request(query, &labelled));
        assert_eq!(status, 200, "{query}");
        let listed = server
            .docker(&["ps", "-aq", "--filter", "label=kept=yes"])
            .ok();
        for id in listed.lines() {
            server.docker(&["rm", "-f", id]).ok();
        }
        listed.lines().count()
    };
    assert_eq!(kept(""), 1);
    assert_eq!(kept("rm=1&forcerm=1"), 0);
    let passing = tar(&[(
        "Dockerfile",
        b"FROM busybox\nLABEL kept=yes\nRUN true\n".as_slice(),
    )]);
    let (status, _, body) = server.raw(&build_request("rm=0", &passing));
    assert_eq!(status, 200);
    let streamed: String = messages(&body)
        .iter()
        .filter_map(|message| message["stream"].as_str())
        .collect();
    assert!(
        !streamed.contains("Removing intermediate container"),
        "{streamed}"
    );
    let listed = server
        .docker(&["ps", "-aq", "--filter", "label=kept=yes"])
        .ok();
    assert_eq!(listed.lines().count(), 1, "{listed}");
}

/// `DOCKER_BUILDKIT=0 docker build -t x .`: every parameter the CLI sends
/// by default reaches the builder, with a Dockerfile in the context and
/// one outside it (`-f`, sent as `.dockerfile.<random>`).
#[test]
fn docker_build_without_buildkit() {
    let Some(server) = Server::start() else {
        return;
    };
    let directory = tempfile::tempdir().unwrap();
    let context = directory.path().join("context");
    fs_err::create_dir(&context).unwrap();
    fs_err::write(context.join("Dockerfile"), DOCKERFILE).unwrap();
    let elsewhere = directory.path().join("Dockerfile.elsewhere");
    fs_err::write(&elsewhere, DOCKERFILE).unwrap();

    let build = |args: &[&str]| {
        let mut command = server.docker_command();
        command
            .env("DOCKER_BUILDKIT", "0")
            .arg("build")
            .args(args)
            .arg(&context);
        support::output_with_stdin(command, None)
    };
    let output = build(&["-t", "clibuild"]);
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{printed}");
    assert!(
        printed.contains("Successfully tagged clibuild:latest"),
        "{printed}"
    );
    assert_eq!(server.docker(&["run", "--rm", "clibuild"]).ok(), "hi\n");

    let outside = build(&["-t", "clibuild2", "-f", elsewhere.to_str().unwrap()]);
    assert!(outside.status.success(), "{outside:?}");
    assert_eq!(server.docker(&["run", "--rm", "clibuild2"]).ok(), "hi\n");
    // The quiet form prints the id alone.
    let quiet = build(&["-q", "-t", "clibuild3"]);
    let id = String::from_utf8_lossy(&quiet.stdout).trim().to_owned();
    assert!(id.starts_with("sha256:"), "{quiet:?}");
    assert!(leftovers(server.berth.root()).is_empty());
}

/// `POST /build/prune` empties the build cache: the next build makes
/// every step again; a BuildKit cache policy is refused by name.
#[test]
fn build_prune_empties_the_cache() {
    let Some(server) = Server::start() else {
        return;
    };
    let context = tar(&[("Dockerfile", DOCKERFILE.as_bytes())]);
    let streamed = |body: &[u8]| -> String {
        messages(body)
            .iter()
            .filter_map(|message| message["stream"].as_str().map(str::to_owned))
            .collect()
    };
    let (status, _, _) = server.raw(&build_request("", &context));
    assert_eq!(status, 200);
    let (_, _, body) = server.raw(&build_request("", &context));
    assert!(streamed(&body).contains("Using cache"));

    let prune = b"POST /v1.41/build/prune HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
    let (status, _, body) = server.raw(prune);
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert!(
        !answer["CachesDeleted"].as_array().unwrap().is_empty(),
        "{answer}"
    );
    assert!(answer["SpaceReclaimed"].as_u64().unwrap() > 0, "{answer}");
    let (_, _, body) = server.raw(&build_request("", &context));
    assert!(!streamed(&body).contains("Using cache"));

    let policy = b"POST /v1.41/build/prune?all=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
    let (status, _, body) = server.raw(policy);
    assert_eq!(status, 501, "{}", String::from_utf8_lossy(&body));
}

/// A base image on a registry behind Basic auth is pulled with the
/// credentials the client sends (`X-Registry-Config`, which `docker build`
/// fills from its config file), and never with the server's own: the
/// server's Docker config holds the same credentials, and a request
/// without the header is still refused by the registry.
#[test]
fn a_builds_pull_uses_the_clients_credentials_never_the_servers() {
    let Some(registry) = registries::BasicRegistry::start() else {
        return;
    };
    let address = registry.address();
    let pair = base64::engine::general_purpose::STANDARD.encode(format!(
        "{}:{}",
        registries::USER,
        registries::PASSWORD
    ));
    let server_config = tempfile::tempdir().unwrap();
    fs_err::write(
        server_config.path().join("config.json"),
        format!(r#"{{"auths":{{"{address}":{{"auth":"{pair}"}}}}}}"#),
    )
    .unwrap();
    let Some(server) = Server::start_with_env(&[("DOCKER_CONFIG", server_config.path())]) else {
        return;
    };
    let base = format!("{address}/private/base:1");
    let login = server.docker_with_stdin(
        &[
            "login",
            "-u",
            registries::USER,
            "--password-stdin",
            &address,
        ],
        Some(registries::PASSWORD.as_bytes()),
    );
    login.ok();
    server.docker(&["tag", "busybox", &base]).ok();
    server.docker(&["push", &base]).ok();
    server.docker(&["rmi", &base]).ok();

    let dockerfile = format!("FROM {base}\nRUN echo pulled > /f\nCMD [\"cat\",\"/f\"]\n");
    // No header: the registry is asked anonymously and says no.
    let context = tar(&[("Dockerfile", dockerfile.as_bytes())]);
    let (status, _, body) = server.raw(&build_request("t=anonymous", &context));
    let text = String::from_utf8_lossy(&body).into_owned();
    let refused = status != 200 || messages(&body).iter().any(|m| m.get("error").is_some());
    assert!(refused, "an anonymous build pulled a private base: {text}");
    assert!(
        text.contains("401") || text.to_lowercase().contains("unauthorized"),
        "{text}"
    );
    assert_eq!(server.docker(&["image", "inspect", &base]).code(), 1);

    // The docker CLI sends what it logged in with.
    let directory = tempfile::tempdir().unwrap();
    fs_err::write(directory.path().join("Dockerfile"), &dockerfile).unwrap();
    let mut command = server.docker_command();
    command
        .env("DOCKER_BUILDKIT", "0")
        .args(["build", "-t", "frombehindauth"])
        .arg(directory.path());
    let output = support::output_with_stdin(command, None);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        server.docker(&["run", "--rm", "frombehindauth"]).ok(),
        "pulled\n"
    );
}
