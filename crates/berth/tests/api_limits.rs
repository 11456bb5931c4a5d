//! `berth serve`'s connection limits, with short values given by flags:
//! a slowloris client is dropped after `--read-header-timeout` while
//! others are served, an idle keep-alive connection is closed after
//! `--idle-connection-timeout`, a stream outlives both, and with
//! `--max-connections 2` a third connection waits until one closes, after
//! which the server is back to its idle thread count.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

#[path = "api/harness.rs"]
mod harness;
mod support;

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use harness::{resources, settle, Server};

const PING: &[u8] = b"GET /_ping HTTP/1.1\r\nHost: docker\r\n\r\n";

/// Reads one `/_ping` answer (its body is `OK`) from a keep-alive
/// connection.
fn read_ping_answer(stream: &mut UnixStream) {
    let mut answer = Vec::new();
    let mut buffer = [0u8; 1024];
    while !(answer.windows(4).any(|window| window == b"\r\n\r\n") && answer.ends_with(b"OK")) {
        let read = stream.read(&mut buffer).unwrap();
        assert!(
            read > 0,
            "closed before the answer: {:?}",
            String::from_utf8_lossy(&answer)
        );
        answer.extend_from_slice(&buffer[..read]);
    }
    assert!(answer.starts_with(b"HTTP/1.1 200 OK\r\n"), "{answer:?}");
}

/// How long until the server closes `stream` (reads end), at most
/// `limit`; None if it stays open that long. Whatever arrives meanwhile
/// is returned too.
fn time_to_close(stream: &mut UnixStream, limit: Duration) -> (Option<Duration>, Vec<u8>) {
    let started = Instant::now();
    let mut received = Vec::new();
    let mut buffer = [0u8; 1024];
    loop {
        let left = limit.saturating_sub(started.elapsed());
        if left.is_zero() {
            return (None, received);
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut buffer) {
            Ok(0) => return (Some(started.elapsed()), received),
            Ok(read) => received.extend_from_slice(&buffer[..read]),
            Err(error) if error.kind() == ErrorKind::WouldBlock => return (None, received),
            Err(error) if error.kind() == ErrorKind::ConnectionReset => {
                return (Some(started.elapsed()), received)
            }
            Err(error) => panic!("read: {error}"),
        }
    }
}

#[test]
fn a_slowloris_is_dropped_while_a_normal_client_is_served() {
    let Some(server) = Server::start_with(&["--read-header-timeout", "2s"], false) else {
        return;
    };
    let socket = server.socket.clone();
    // One byte a second: this head would take a minute to arrive.
    let slow = std::thread::spawn(move || {
        let mut stream = UnixStream::connect(&socket).unwrap();
        let head = format!(
            "GET /_ping HTTP/1.1\r\nHost: docker\r\nX-Slow: {}\r\n\r\n",
            "x".repeat(40)
        );
        let started = Instant::now();
        for byte in head.bytes() {
            if stream.write_all(&[byte]).is_err() {
                break;
            }
            let (closed, received) = time_to_close(&mut stream, Duration::from_secs(1));
            assert!(received.is_empty(), "answered: {received:?}");
            if closed.is_some() {
                return Some(started.elapsed());
            }
        }
        None
    });
    // Served at once meanwhile, on connections of their own.
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..3 {
        let started = Instant::now();
        let (status, _, body) =
            server.raw(b"GET /_ping HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n");
        assert_eq!((status, body.as_slice()), (200, b"OK".as_slice()));
        assert!(started.elapsed() < Duration::from_secs(1));
        std::thread::sleep(Duration::from_millis(300));
    }
    let dropped = slow
        .join()
        .unwrap()
        .expect("the slowloris was never dropped");
    assert!(
        dropped >= Duration::from_millis(1500) && dropped < Duration::from_secs(6),
        "dropped after {dropped:?}, not the 2 s header timeout"
    );
}

#[test]
fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let Some(server) = Server::start_with(&["--idle-connection-timeout", "2s"], false) else {
        return;
    };
    let mut stream = UnixStream::connect(&server.socket).unwrap();
    stream.write_all(PING).unwrap();
    read_ping_answer(&mut stream);
    // Within the timeout, the connection takes the next request.
    std::thread::sleep(Duration::from_secs(1));
    stream.write_all(PING).unwrap();
    read_ping_answer(&mut stream);
    let (closed, received) = time_to_close(&mut stream, Duration::from_secs(10));
    assert!(received.is_empty(), "{received:?}");
    let closed = closed.expect("the idle connection stayed open");
    assert!(
        closed >= Duration::from_millis(1500) && closed < Duration::from_secs(6),
        "closed after {closed:?}, not the 2 s idle timeout"
    );
}

#[test]
fn a_stream_is_not_cut_by_the_header_or_idle_timeouts() {
    let Some(server) = Server::start_with(
        &[
            "--read-header-timeout",
            "1s",
            "--idle-connection-timeout",
            "1s",
        ],
        false,
    ) else {
        return;
    };
    let mut events = UnixStream::connect(&server.socket).unwrap();
    events
        .write_all(b"GET /v1.41/events HTTP/1.1\r\nHost: docker\r\n\r\n")
        .unwrap();
    let (closed, head) = time_to_close(&mut events, Duration::from_secs(4));
    assert_eq!(closed, None, "the stream was closed");
    assert!(head.starts_with(b"HTTP/1.1 200 OK\r\n"), "{head:?}");
    // Still live: an event made now arrives.
    server.docker(&["volume", "create", "limits-volume"]).ok();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains("limits-volume") {
        assert!(Instant::now() < deadline, "no event: {seen:?}");
        let (closed, received) = time_to_close(&mut events, Duration::from_millis(500));
        assert_eq!(closed, None, "the stream was closed");
        seen.extend_from_slice(&received);
    }
    server.docker(&["volume", "rm", "limits-volume"]).ok();
}

#[test]
fn a_third_connection_waits_for_one_of_two_to_close() {
    let Some(server) = Server::start_with(
        &[
            "--max-connections",
            "2",
            "--read-header-timeout",
            "0",
            "--idle-connection-timeout",
            "0",
        ],
        false,
    ) else {
        return;
    };
    let pid = server.pid();
    // A request first, so that whatever the first one sets up once is
    // counted in the idle state.
    server.raw(b"GET /_ping HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n");
    std::thread::sleep(Duration::from_millis(500));
    let idle = resources(pid);

    let mut first = UnixStream::connect(&server.socket).unwrap();
    let mut second = UnixStream::connect(&server.socket).unwrap();
    for stream in [&mut first, &mut second] {
        stream.write_all(PING).unwrap();
        read_ping_answer(stream);
    }
    // Accepted by the kernel (the backlog), not served.
    let mut third = UnixStream::connect(&server.socket).unwrap();
    third.write_all(PING).unwrap();
    let (closed, received) = time_to_close(&mut third, Duration::from_millis(1500));
    assert_eq!(
        (closed, received.as_slice()),
        (None, b"".as_slice()),
        "the third connection was served with two open"
    );
    assert_eq!(resources(pid).1, idle.1 + 2, "one thread per connection");
    drop(first);
    third.set_read_timeout(None).unwrap();
    let started = Instant::now();
    read_ping_answer(&mut third);
    assert!(started.elapsed() < Duration::from_secs(5));
    // The second is still served too.
    second.write_all(PING).unwrap();
    read_ping_answer(&mut second);

    drop(second);
    drop(third);
    let after = settle(pid, idle, 10);
    assert_eq!(
        after.1, idle.1,
        "threads (fds, threads): idle {idle:?}, now {after:?}"
    );
}
