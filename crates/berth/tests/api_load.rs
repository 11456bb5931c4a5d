//! 1,000 API calls from 50 concurrent clients against one `berth serve`:
//! all answer, and the server gives back every connection's descriptor and
//! thread afterwards.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

#[path = "api/harness.rs"]
mod harness;
mod support;

use std::time::{Duration, Instant};

use harness::{raw_request, resources, settle, Server};

const CLIENTS: usize = 50;
const REQUESTS_PER_CLIENT: usize = 20;

fn request(path: &str, keep_alive: bool) -> Vec<u8> {
    let connection = if keep_alive {
        ""
    } else {
        "Connection: close\r\n"
    };
    format!("GET {path} HTTP/1.1\r\nHost: docker\r\n{connection}\r\n").into_bytes()
}

#[test]
fn a_thousand_concurrent_calls_and_back_to_idle() {
    let Some(server) = Server::start() else {
        return;
    };
    let pid = server.pid();
    // One of each first, so that what the server sets up once (its store,
    // lazily loaded code) is part of the idle reading.
    let paths = [
        "/_ping",
        "/v1.41/containers/json?all=1",
        "/v1.41/images/json",
        "/version",
    ];
    for path in paths {
        let (status, _, _) = raw_request(&server.socket, &request(path, false));
        assert_eq!(status, 200, "{path}");
    }
    // Connection threads end after their answer is written; give them a
    // moment.
    std::thread::sleep(Duration::from_millis(500));
    let idle = resources(pid);
    println!("idle: {} descriptors, {} threads", idle.0, idle.1);

    let started = Instant::now();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(CLIENTS));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let socket = server.socket.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                let mut failures = Vec::new();
                for index in 0..REQUESTS_PER_CLIENT {
                    let path = paths[(client + index) % paths.len()];
                    let (status, _, body) = raw_request(&socket, &request(path, false));
                    let valid = match path {
                        "/_ping" => body == b"OK",
                        "/version" => serde_json::from_slice::<serde_json::Value>(&body)
                            .is_ok_and(|value| value["ApiVersion"] == "1.43"),
                        _ => serde_json::from_slice::<serde_json::Value>(&body)
                            .is_ok_and(|value| value.is_array()),
                    };
                    if status != 200 || !valid {
                        failures.push(format!(
                            "{path}: {status} {}",
                            String::from_utf8_lossy(&body)
                        ));
                    }
                }
                failures
            })
        })
        .collect();
    let failures: Vec<String> = clients
        .into_iter()
        .flat_map(|client| client.join().unwrap())
        .collect();
    println!(
        "{} calls in {:.2} s",
        CLIENTS * REQUESTS_PER_CLIENT,
        started.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} failed calls, first: {:?}",
        failures.len(),
        failures.first()
    );

    // Keep-alive connections that the clients close too.
    let keep_alive: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let socket = server.socket.clone();
            std::thread::spawn(move || {
                let mut batch = Vec::new();
                for _ in 0..REQUESTS_PER_CLIENT - 1 {
                    batch.extend_from_slice(&request("/_ping", true));
                }
                batch.extend_from_slice(&request("/_ping", false));
                let mut stream = std::os::unix::net::UnixStream::connect(&socket).unwrap();
                std::io::Write::write_all(&mut stream, &batch).unwrap();
                let mut answer = Vec::new();
                std::io::Read::read_to_end(&mut stream, &mut answer).unwrap();
                String::from_utf8_lossy(&answer)
                    .matches("HTTP/1.1 200 OK")
                    .count()
            })
        })
        .collect();
    for client in keep_alive {
        assert_eq!(client.join().unwrap(), REQUESTS_PER_CLIENT);
    }

    let after = settle(pid, idle, 10);
    assert_eq!(
        after, idle,
        "(descriptors, threads) after the load {after:?}, idle {idle:?}"
    );
    // And it still answers.
    let (status, _, body) = raw_request(&server.socket, &request("/_ping", false));
    assert_eq!((status, body.as_slice()), (200, &b"OK"[..]));
}
