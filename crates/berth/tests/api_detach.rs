//! Detach keys through the API, as docker-py and other clients use them:
//! `POST /containers/{id}/attach?detachKeys=…` and an exec's `DetachKeys`
//! on a hijacked connection, the default ctrl-p,ctrl-q included, and
//! dockerd's refusals of keys it cannot parse. Where a Docker engine is
//! reachable (`BERTH_TEST_DOCKER_HOST`) each case runs against it too.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

#[path = "api/compare.rs"]
mod compare;
#[path = "api/harness.rs"]
mod harness;
mod support;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use compare::{each_engine, Cleanup, Engine};
use harness::{raw_request, Server};

/// `POST target` with `body`, hijacked; the connection after the answer's
/// head, which must be 101 (or 200, Docker's answer to a request without
/// `Upgrade`).
fn hijack(socket: &Path, target: &str, body: &str) -> UnixStream {
    let mut stream = UnixStream::connect(socket).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let request = format!(
        "POST {target} HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).unwrap(), 1, "closed in {head:?}");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    assert!(
        head.starts_with("HTTP/1.1 101") || head.starts_with("HTTP/1.1 200"),
        "{head}"
    );
    stream
}

/// Types `keys` one write each (a person typing), then waits for the
/// engine to end the connection; returns what came from it meanwhile.
#[track_caller]
fn detach(mut stream: UnixStream, keys: &[u8], what: &str) -> Vec<u8> {
    for key in keys {
        stream.write_all(&[*key]).unwrap();
        std::thread::sleep(Duration::from_millis(300));
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return received,
            Ok(read) => received.extend_from_slice(&buffer[..read]),
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => return received,
            Err(error) => panic!("{what}: the connection did not end: {error} ({received:?})"),
        }
        assert!(Instant::now() < deadline, "{what}: still open");
    }
}

fn running(engine: &Engine<'_>, container: &str) -> bool {
    engine.inspect(container, "{{.State.Running}}") == "true"
}

/// The attach ends at the detach keys (the query's, else ctrl-p,ctrl-q),
/// with the container still running and a `detach` event; a broken
/// sequence reaches the container.
#[test]
fn an_attach_ends_at_its_detach_keys() {
    let Some(server) = Server::start() else {
        return;
    };
    each_engine(&server, "detach", |engine| {
        let name = engine.run("attach", &["-i", "-t"], &["cat"]);
        let _cleanup = Cleanup::new(engine, vec![name.clone()]);
        let started = unix_now().to_string();
        let target = format!("/v1.41/containers/{name}/attach?stream=1&stdin=1&stdout=1");
        let mut stream = hijack(&engine.socket, &target, "");
        // ctrl-p then `x`: both reach cat, whose terminal echoes "^Px".
        stream.write_all(&[0x10]).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        stream.write_all(b"x\n").unwrap();
        let mut seen = Vec::new();
        let mut buffer = [0u8; 256];
        while !String::from_utf8_lossy(&seen).contains("^Px") {
            let read = stream.read(&mut buffer).unwrap();
            assert!(read > 0, "{}: {seen:?}", engine.name);
            seen.extend_from_slice(&buffer[..read]);
        }
        detach(stream, &[0x10, 0x11], engine.name);
        assert!(running(engine, &name), "{}", engine.name);

        let target = format!("{target}&detachKeys=ctrl-x,y");
        detach(
            hijack(&engine.socket, &target, ""),
            &[0x18, b'y'],
            engine.name,
        );
        assert!(running(engine, &name), "{}", engine.name);

        // A second ahead: `--until` is to the second, and waits for it.
        let until = (unix_now() + 1).to_string();
        let events = engine
            .docker(&[
                "events",
                "--since",
                &started,
                "--until",
                &until,
                "--filter",
                &format!("container={name}"),
                "--filter",
                "event=detach",
                "--format",
                "{{.Action}}",
            ])
            .ok();
        assert_eq!(events, "detach\ndetach\n", "{}", engine.name);
    });
}

/// Now as `events --since` takes it (Unix seconds; the engines share
/// this machine's clock).
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A terminal exec ends at its `DetachKeys`. berth's process runs on, as
/// docker/cli's `exec -it` detach leaves it; Docker 20.10's engine, whose
/// own detach fails ("exec attach failed: error on attach stdin: read
/// escape sequence"), ends it.
#[test]
fn an_exec_ends_at_its_detach_keys() {
    let Some(server) = Server::start() else {
        return;
    };
    each_engine(&server, "detach", |engine| {
        let name = engine.run("exec", &[], &["sleep", "300"]);
        let _cleanup = Cleanup::new(engine, vec![name.clone()]);
        // `detachKeys` as docker-py spells it (dockerd's decoder ignores case).
        let body = r#"{"Cmd": ["sh", "-c", "echo ready; exec cat"], "Tty": true, "AttachStdin": true, "AttachStdout": true, "detachKeys": "ctrl-x"}"#;
        let request = format!(
            "POST /v1.41/containers/{name}/exec HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let (status, _, created) = raw_request(&engine.socket, request.as_bytes());
        assert_eq!(status, 201, "{}", engine.name);
        let created: serde_json::Value = serde_json::from_slice(&created).unwrap();
        let id = created["Id"].as_str().unwrap().to_owned();
        let mut stream = hijack(
            &engine.socket,
            &format!("/v1.41/exec/{id}/start"),
            r#"{"Detach": false, "Tty": true}"#,
        );
        let mut seen = Vec::new();
        let mut buffer = [0u8; 256];
        while !String::from_utf8_lossy(&seen).contains("ready") {
            let read = stream.read(&mut buffer).unwrap();
            assert!(read > 0, "{}: {seen:?}", engine.name);
            seen.extend_from_slice(&buffer[..read]);
        }
        // ctrl-p,ctrl-q are ordinary keys for this exec: the session goes on.
        for key in [&[0x10][..], &[0x11], b"z\n"] {
            stream.write_all(key).unwrap();
            std::thread::sleep(Duration::from_millis(300));
        }
        while !String::from_utf8_lossy(&seen).contains("^Pz") {
            let read = stream.read(&mut buffer).unwrap();
            assert!(read > 0, "{}: {seen:?}", engine.name);
            seen.extend_from_slice(&buffer[..read]);
        }
        detach(stream, &[0x18], engine.name);
        let request = format!(
            "GET /v1.41/exec/{id}/json HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        );
        std::thread::sleep(Duration::from_millis(500));
        let (_, _, inspected) = raw_request(&engine.socket, request.as_bytes());
        let inspected: serde_json::Value = serde_json::from_slice(&inspected).unwrap();
        // dockerd shows the parsed keys, base64-encoded (ctrl-x is 0x18).
        assert_eq!(inspected["DetachKeys"], "GA==", "{}", engine.name);
        if engine.name == "berth" {
            assert_eq!(inspected["Running"], true, "{inspected}");
            let top = engine.docker(&["top", &name]).ok();
            assert!(top.contains("cat"), "{top}");
        }
        assert!(running(engine, &name), "{}", engine.name);
    });
}

/// Keys that do not parse: the attach's 400 and the exec's 500, in
/// dockerd's words.
#[test]
fn bad_detach_keys_are_refused_in_dockers_words() {
    let Some(server) = Server::start() else {
        return;
    };
    each_engine(&server, "detach", |engine| {
        let name = engine.run("refused", &["-i", "-t"], &["cat"]);
        let _cleanup = Cleanup::new(engine, vec![name.clone()]);
        let request = format!(
            "POST /v1.41/containers/{name}/attach?stream=1&stdin=1&detachKeys=foo HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        );
        let (status, _, body) = raw_request(&engine.socket, request.as_bytes());
        assert_eq!(status, 400, "{}", engine.name);
        let body = String::from_utf8_lossy(&body);
        assert!(
            body.contains("Invalid detach keys (foo) provided"),
            "{}: {body}",
            engine.name
        );
        let json = r#"{"Cmd": ["true"], "DetachKeys": "ctrl-"}"#;
        let request = format!(
            "POST /v1.41/containers/{name}/exec HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{json}",
            json.len()
        );
        let (status, _, body) = raw_request(&engine.socket, request.as_bytes());
        assert_eq!(status, 500, "{}", engine.name);
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            body["message"], "Invalid escape keys (ctrl-) provided",
            "{}",
            engine.name
        );
        assert!(running(engine, &name), "{}", engine.name);
    });
}
