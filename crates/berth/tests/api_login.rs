//! `POST /auth` through `berth serve`: the real docker CLI logging in to
//! real registries on 127.0.0.1 (Debian's docker-registry with htpasswd,
//! and a token-auth registry), and raw requests whose statuses and bodies
//! are dockerd 20.10's — checked against the Docker engine at
//! `BERTH_TEST_DOCKER_HOST` too when one is reachable.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

#[path = "api/harness.rs"]
mod harness;
// Only its registries are used here.
#[allow(dead_code)]
#[path = "registry_login/harness.rs"]
mod registry;
mod support;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use harness::{raw_request, Server};
use registry::{BasicRegistry, TokenRegistry, PASSWORD, USER};
use serde_json::{json, Value};

/// `POST /v1.41/auth` with `body` on a fresh connection: status and body.
fn post_auth(socket: &Path, body: &Value) -> (u16, Value) {
    let body = body.to_string();
    let request = format!(
        "POST /v1.41/auth HTTP/1.1\r\nHost: docker\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let (status, _, answer) = raw_request(socket, request.as_bytes());
    let answer = serde_json::from_slice(&answer)
        .unwrap_or_else(|error| panic!("{error}: {}", String::from_utf8_lossy(&answer)));
    (status, answer)
}

fn login(server: &str, username: &str, password: &str) -> Value {
    json!({ "username": username, "password": password, "serveraddress": server })
}

/// The same requests against the Docker engine, when there is one: it
/// must answer as the test expects of berth.
fn reference_socket() -> Option<std::path::PathBuf> {
    let host = support::docker_host()?;
    host.strip_prefix("unix://").map(std::path::PathBuf::from)
}

/// A port on 127.0.0.1 where nothing listens.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn docker_login_through_serve_checks_a_basic_auth_password() {
    let Some(registry) = BasicRegistry::start() else {
        return;
    };
    let Some(server) = Server::start_with(&[], false) else {
        return;
    };
    let address = registry.address();
    let config = server.directory.path().join("docker-config/config.json");

    let run = server.docker_with_stdin(
        &["login", "-u", USER, "--password-stdin", &address],
        Some(b"wrong\n"),
    );
    let refused =
        format!("login attempt to http://{address}/v2/ failed with status: 401 Unauthorized");
    assert_eq!(
        run.fails(1),
        format!("Error response from daemon: {refused}\n")
    );
    assert!(!config.exists(), "nothing is stored for a refused login");

    let run = server.docker_with_stdin(
        &["login", "-u", USER, "--password-stdin", &address],
        Some(format!("{PASSWORD}\n").as_bytes()),
    );
    assert!(run.ok().ends_with("Login Succeeded\n"), "{}", run.stdout());
    let stored: Value = serde_json::from_str(&fs_err::read_to_string(&config).unwrap()).unwrap();
    assert_eq!(stored["auths"][&address]["auth"], "YWxpY2U6czNjcmV0");

    let closed = format!("127.0.0.1:{}", closed_port());
    let cases = [
        (
            login(&address, USER, "wrong"),
            500,
            json!({ "message": refused }),
        ),
        (
            login(&address, USER, PASSWORD),
            200,
            json!({ "IdentityToken": "", "Status": "Login Succeeded" }),
        ),
        // Go's JSON decoding takes field names in any case; a URL names
        // the registry as well as its host does.
        (
            json!({ "Username": USER, "Password": PASSWORD, "ServerAddress": format!("http://{address}/v2/") }),
            200,
            json!({ "IdentityToken": "", "Status": "Login Succeeded" }),
        ),
        (
            login(&address, "", ""),
            500,
            json!({ "message": format!("Get \"http://{address}/v2/\": no basic auth credentials") }),
        ),
        (
            login(&closed, USER, PASSWORD),
            500,
            json!({ "message": format!("Get \"http://{closed}/v2/\": dial tcp {closed}: connect: connection refused") }),
        ),
        (
            login("::bad", USER, PASSWORD),
            400,
            json!({ "message": "unable to parse server address: parse \"https://::bad\": invalid port \":bad\" after host" }),
        ),
    ];
    let reference = reference_socket();
    for (body, status, answer) in &cases {
        assert_eq!(
            post_auth(&server.socket, body),
            (*status, answer.clone()),
            "berth, {body}"
        );
        if let Some(socket) = &reference {
            assert_eq!(
                post_auth(socket, body),
                (*status, answer.clone()),
                "docker, {body}"
            );
        }
    }
}

#[test]
fn a_token_service_refusal_is_401_and_its_refresh_token_the_identity_token() {
    let registry = TokenRegistry::start();
    let Some(server) = Server::start_with(&[], false) else {
        return;
    };
    let address = registry.address();

    let run = server.docker(&["login", "-u", USER, "-p", "wrong", &address]);
    let refused =
        format!("Get \"http://{address}/v2/\": unauthorized: incorrect username or password");
    assert!(
        run.fails(1)
            .ends_with(&format!("Error response from daemon: {refused}\n")),
        "{}",
        run.stderr()
    );

    let run = server.docker(&["login", "-u", USER, "-p", PASSWORD, &address]);
    assert!(run.ok().ends_with("Login Succeeded\n"));
    let config = server.directory.path().join("docker-config/config.json");
    let stored: Value = serde_json::from_str(&fs_err::read_to_string(config).unwrap()).unwrap();
    // The CLI keeps the identity token the server answered, not the password.
    assert_eq!(stored["auths"][&address]["identitytoken"], "refresh-1");

    let reference = reference_socket();
    for socket in std::iter::once(server.socket.clone()).chain(reference) {
        assert_eq!(
            post_auth(&socket, &login(&address, USER, "wrong")),
            (401, json!({ "message": refused })),
            "{socket:?}"
        );
        assert_eq!(
            post_auth(&socket, &login(&address, USER, PASSWORD)),
            (
                200,
                json!({ "IdentityToken": "refresh-1", "Status": "Login Succeeded" })
            ),
            "{socket:?}"
        );
    }
}

#[test]
fn a_registry_that_does_not_answer_holds_up_only_its_own_connection() {
    let Some(server) = Server::start_with(&[], false) else {
        return;
    };
    // Connections to it complete in the kernel's backlog, and nothing is
    // ever said: the login waits for its 15 s timeout.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = silent.local_addr().unwrap().to_string();
    let body = login(&address, USER, PASSWORD).to_string();
    let mut auth = UnixStream::connect(&server.socket).unwrap();
    write!(
        auth,
        "POST /auth HTTP/1.1\r\nHost: docker\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    // The login is under way (the registry was reached)...
    std::thread::sleep(Duration::from_millis(500));
    // ... and another connection is answered meanwhile.
    let started = Instant::now();
    let (status, _, answer) =
        server.raw(b"GET /_ping HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n");
    assert_eq!((status, answer.as_slice()), (200, b"OK".as_slice()));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "ping took {:?}",
        started.elapsed()
    );
    // The login itself has not been answered yet.
    auth.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut byte = [0u8; 1];
    let read = auth.read(&mut byte);
    assert!(
        matches!(&read, Err(error) if error.kind() == std::io::ErrorKind::WouldBlock),
        "the login answered before its registry did: {read:?}"
    );
}
