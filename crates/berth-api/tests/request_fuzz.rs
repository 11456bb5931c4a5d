//! Seeded, deterministic fuzzing of what clients send, on stable Rust (the
//! coverage-guided targets are under `crates/berth-api/fuzz/`): valid
//! requests mutated — truncated, bytes flipped, bad chunk sizes, wrong
//! `Content-Length`, huge headers, invalid UTF-8, requests spliced — fed
//! to the parser and to a real connection handler on a socket pair. No
//! input may panic; every answer must be well-formed HTTP, and malformed
//! requests are answered 400, 413 or 431.
//!
//! A failure prints the case number and the input; `BERTH_FUZZ_SEED` and
//! `BERTH_FUZZ_CASES` run other or more cases.

#![allow(clippy::unwrap_used)] // tests: a failed step is a failed test

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use berth_api::fuzzing::{check_requests, check_text_inputs, parse_requests, Parsed};
use berth_api::server::{handle_connection, Server};
use berth_api::ServeConfig;

/// xorshift64*: small, and the same sequence on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound.max(1) as u64) as usize
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

fn seed_from_env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(default)
}

fn with_body(head: &str, body: &str) -> Vec<u8> {
    format!(
        "{head}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn chunked(head: &str, body: &str) -> Vec<u8> {
    let (first, second) = body.split_at(body.len() / 2);
    format!(
        "{head}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{first}\r\n{:x};ext=1\r\n{second}\r\n0\r\n\r\n",
        first.len(),
        second.len()
    )
    .into_bytes()
}

/// Valid requests for routes that touch nothing outside the server's own
/// temporary root (no pulls, no networks: those reach the host).
fn seeds() -> Vec<Vec<u8>> {
    let create = r#"{"Image":"busybox","Cmd":["echo","hi"],"Env":["A=b"],"Labels":{"x":"y"},"HostConfig":{"NetworkMode":"none","Binds":["/tmp:/data:ro"]}}"#;
    vec![
        b"GET /_ping HTTP/1.1\r\nHost: docker\r\n\r\n".to_vec(),
        b"HEAD /_ping HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n".to_vec(),
        b"GET /v1.41/version HTTP/1.1\r\nHost: docker\r\nUser-Agent: Docker-Client/20.10\r\n\r\n".to_vec(),
        b"GET /v1.43/containers/json?all=1&limit=5&filters=%7B%22label%22%3A%5B%22a%3Db%22%5D%2C%22status%22%3A%5B%22running%22%5D%7D HTTP/1.1\r\nHost: docker\r\n\r\n".to_vec(),
        b"GET /images/json?filters=%7B%22reference%22%3A%5B%22b%2A%3A%5B0-9%5D%2A%22%5D%7D HTTP/1.1\r\nHost: docker\r\n\r\n".to_vec(),
        b"GET /v1.24/volumes?filters=%7B%22dangling%22%3A%7B%22true%22%3Atrue%7D%7D HTTP/1.0\r\n\r\n".to_vec(),
        b"GET /containers/nosuch/json HTTP/1.1\r\nHost: docker\r\n\r\n".to_vec(),
        b"POST /containers/nosuch/stop?t=1 HTTP/1.1\r\nHost: docker\r\nContent-Length: 0\r\n\r\n".to_vec(),
        b"DELETE /containers/nosuch?force=1&v=1 HTTP/1.1\r\nHost: docker\r\n\r\n".to_vec(),
        b"GET /images/busybox:latest/json HTTP/1.1\r\nHost: docker\r\n\r\n".to_vec(),
        b"GET /exec/0123456789abcdef/json HTTP/1.1\r\n\r\n".to_vec(),
        with_body("POST /v1.41/containers/create?name=web HTTP/1.1\r\nHost: docker", create),
        chunked("POST /containers/create HTTP/1.1\r\nHost: docker", create),
        with_body(
            "POST /volumes/create HTTP/1.1\r\nHost: docker",
            r#"{"Name":"data","Labels":{"a":"b"}}"#,
        ),
        with_body(
            "POST /exec/nosuch/start HTTP/1.1\r\nHost: docker",
            r#"{"Detach":false,"Tty":false}"#,
        ),
        // (Not `POST /auth`: it talks to the registry the body names, and a
        // mutated body can name any, Docker Hub included.)
        with_body(
            "POST /containers/nosuch/update HTTP/1.1\r\nHost: docker",
            r#"{"Memory":0,"RestartPolicy":{"Name":"no"}}"#,
        ),
        // Keep-alive: two requests on one connection.
        b"GET /_ping HTTP/1.1\r\n\r\nGET /version HTTP/1.1\r\nConnection: close\r\n\r\n".to_vec(),
    ]
}

const TOKENS: &[&[u8]] = &[
    b"\r\n",
    b"\r\n\r\n",
    b"\n",
    b"\0",
    b"%",
    b"%zz",
    b"%00",
    b"%ff",
    b"?",
    b"&",
    b"=",
    b"/",
    b"//",
    b"..",
    b" ",
    b"\xff\xfe",
    b"\xc3",
    b"\xed\xa0\x80",
    b"Transfer-Encoding: chunked\r\n",
    b"Transfer-Encoding: gzip, chunked\r\n",
    b"Content-Length: 5\r\n",
    b"Content-Length: 18446744073709551616\r\n",
    b"Connection: close\r\n",
    b"Connection: keep-alive\r\n",
    b"/v1.99",
    b"/v1.2",
    b"/v0.0",
    b" HTTP/1.0",
    b" HTTP/2.0",
    b"{",
    b"}",
    b"\"",
    b"[",
    b"*",
];

/// Where the head ends (after the blank line), if it does.
fn head_end(bytes: &[u8]) -> Option<usize> {
    bytes
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .map(|position| position + 4)
}

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut bytes = rng.pick(seeds).clone();
    for _ in 0..=rng.below(4) {
        let length = bytes.len();
        match rng.below(12) {
            0 => bytes.truncate(rng.below(length + 1)),
            1 => {
                for _ in 0..=rng.below(3) {
                    if !bytes.is_empty() {
                        let at = rng.below(bytes.len());
                        bytes[at] ^= 1 << rng.below(8);
                    }
                }
            }
            2 => {
                let at = rng.below(length + 1);
                let insert: Vec<u8> = (0..=rng.below(8)).map(|_| rng.next() as u8).collect();
                bytes.splice(at..at, insert);
            }
            3 => {
                let start = rng.below(length + 1);
                let end = (start + rng.below(16)).min(length);
                bytes.drain(start..end);
            }
            4 => {
                let start = rng.below(length + 1);
                let end = (start + rng.below(32)).min(length);
                let copy = bytes[start..end].to_vec();
                let at = rng.below(length + 1);
                bytes.splice(at..at, copy);
            }
            5 => {
                // A wrong Content-Length.
                let value = match rng.below(5) {
                    0 => "0".to_owned(),
                    1 => (rng.below(64)).to_string(),
                    2 => u64::MAX.to_string(),
                    3 => "-1".to_owned(),
                    _ => (64 * 1024 * 1024).to_string(),
                };
                let text = String::from_utf8_lossy(&bytes).into_owned();
                bytes = match text.find("Content-Length: ") {
                    Some(at) => {
                        let end = text[at..].find("\r\n").map_or(text.len(), |end| at + end);
                        format!("{}Content-Length: {value}{}", &text[..at], &text[end..])
                            .into_bytes()
                    }
                    None => text
                        .replacen("\r\n", &format!("\r\nContent-Length: {value}\r\n"), 1)
                        .into_bytes(),
                };
            }
            6 => {
                // A chunked body with a bad chunk.
                let end = head_end(&bytes).unwrap_or(bytes.len());
                let head = String::from_utf8_lossy(&bytes[..end.saturating_sub(4)])
                    .lines()
                    .filter(|line| !line.to_ascii_lowercase().starts_with("content-length"))
                    .collect::<Vec<_>>()
                    .join("\r\n");
                let chunks: [&[u8]; 9] = [
                    b"zz\r\nabc\r\n0\r\n\r\n",
                    b"ffffffffffffffffffff\r\nabc\r\n0\r\n\r\n",
                    b"-1\r\nabc\r\n0\r\n\r\n",
                    b"5\r\nab",
                    b"3\r\nabcXY0\r\n\r\n",
                    b"3\r\nabc\r\n",
                    b"3\r\nabc\r\n0\r\nTrailer: x\r\n",
                    b"400001\r\n",
                    b"\r\n\r\n",
                ];
                let chunk = *rng.pick(&chunks);
                bytes = format!("{head}\r\nTransfer-Encoding: chunked\r\n\r\n").into_bytes();
                bytes.extend_from_slice(chunk);
            }
            7 => {
                // A huge header, or too many.
                let at = bytes
                    .windows(2)
                    .position(|window| window == b"\r\n")
                    .map_or(0, |position| position + 2);
                let insert = if rng.chance(50) {
                    let size = 60 * 1024 + rng.below(8 * 1024);
                    format!("X-Huge: {}\r\n", "a".repeat(size)).into_bytes()
                } else {
                    (0..60 + rng.below(20))
                        .flat_map(|index| format!("X-{index}: v\r\n").into_bytes())
                        .collect()
                };
                bytes.splice(at..at, insert);
            }
            8 | 9 => {
                let token = rng.pick(TOKENS).to_vec();
                let at = rng.below(length + 1);
                bytes.splice(at..at, token);
            }
            _ => {
                let other = rng.pick(seeds).clone();
                if rng.chance(50) {
                    bytes.extend_from_slice(&other);
                } else {
                    let at = rng.below(length + 1);
                    bytes.truncate(at);
                    let from = rng.below(other.len() + 1);
                    bytes.extend_from_slice(&other[from..]);
                }
            }
        }
    }
    bytes
}

fn show(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(600)]).into_owned();
    format!("{text:?} ({} bytes)", bytes.len())
}

#[test]
fn the_parser_survives_mutated_requests() {
    let seed = seed_from_env("BERTH_FUZZ_SEED", 0x5eed_0001);
    let cases = seed_from_env("BERTH_FUZZ_CASES", 2000) as usize;
    let mut rng = Rng(seed);
    let seeds = seeds();
    for seed_bytes in &seeds {
        check_requests(seed_bytes);
    }
    let started = Instant::now();
    for case in 0..cases {
        let input = mutate(&mut rng, &seeds);
        let outcome = std::panic::catch_unwind(|| {
            check_requests(&input);
            check_text_inputs(&input);
            if let Some(end) = head_end(&input) {
                check_text_inputs(&input[..end]);
            }
        });
        assert!(
            outcome.is_ok(),
            "case {case} (seed {seed}) broke an invariant; input {}",
            show(&input)
        );
    }
    println!("{cases} inputs in {:.2} s", started.elapsed().as_secs_f64());
}

/// One HTTP response from `bytes`: (status, headers, body length, rest);
/// `head_only` for the answer to a HEAD request. Panics (the test fails)
/// when it is not well-formed.
fn next_response(bytes: &[u8], head_only: bool) -> (u16, BTreeMap<String, String>, usize, &[u8]) {
    let end = head_end(bytes).unwrap_or_else(|| panic!("no response head in {}", show(bytes)));
    let head = std::str::from_utf8(&bytes[..end]).expect("a response head is text");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut words = status_line.splitn(3, ' ');
    assert_eq!(words.next(), Some("HTTP/1.1"), "{status_line}");
    let status: u16 = words
        .next()
        .and_then(|word| word.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let mut headers = BTreeMap::new();
    for line in lines.filter(|line| !line.is_empty()) {
        let (name, value) = line
            .split_once(": ")
            .unwrap_or_else(|| panic!("bad header line {line:?}"));
        headers.insert(name.to_ascii_lowercase(), value.to_owned());
    }
    let rest = &bytes[end..];
    if headers.get("transfer-encoding").map(String::as_str) == Some("chunked") {
        let mut at = 0;
        let mut total = 0;
        loop {
            let line_end = rest[at..]
                .windows(2)
                .position(|window| window == b"\r\n")
                .expect("a complete chunk-size line");
            let size =
                usize::from_str_radix(std::str::from_utf8(&rest[at..at + line_end]).unwrap(), 16)
                    .unwrap();
            at += line_end + 2;
            if size == 0 {
                assert_eq!(&rest[at..at + 2], b"\r\n");
                return (status, headers, total, &rest[at + 2..]);
            }
            assert_eq!(&rest[at + size..at + size + 2], b"\r\n");
            at += size + 2;
            total += size;
        }
    }
    let length: usize = match headers.get("content-length") {
        Some(_) if head_only => 0,
        Some(value) => value.parse().unwrap(),
        None => {
            assert!(
                matches!(status, 204 | 304),
                "{status} without a length: {head}"
            );
            0
        }
    };
    assert!(rest.len() >= length, "body cut short: {}", show(bytes));
    if length > 0 && headers.get("content-type").map(String::as_str) == Some("application/json") {
        serde_json::from_slice::<serde_json::Value>(&rest[..length])
            .unwrap_or_else(|error| panic!("invalid JSON body ({error}): {}", show(rest)));
    }
    (status, headers, length, &rest[length..])
}

/// Runs `input` through a connection of `server`: what came back, and
/// whether the handler ended (it must, once the client is gone).
fn exchange(server: &'static Server, input: &[u8]) -> Vec<u8> {
    let (client, served) = UnixStream::pair().unwrap();
    let handler = std::thread::spawn(move || handle_connection(server, served));
    let mut writer = client.try_clone().unwrap();
    let input_copy = input.to_vec();
    // Written on its own thread: the server may answer (and stop reading)
    // before it has read everything.
    let sender = std::thread::spawn(move || {
        let _ = writer.write_all(&input_copy);
        let _ = writer.shutdown(std::net::Shutdown::Write);
    });
    let mut reader = client;
    reader
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut answer = Vec::new();
    let read = reader.read_to_end(&mut answer);
    // A server that closes with input unread resets the connection; what
    // it wrote before still arrives (the server lingers to make that rare).
    let reset_after_answer = matches!(&read, Err(error)
        if error.kind() == std::io::ErrorKind::ConnectionReset && !answer.is_empty());
    if let (Err(error), false) = (read, reset_after_answer) {
        panic!(
            "no end of the answer ({error}); input {}, so far {}",
            show(input),
            show(&answer)
        );
    }
    drop(reader);
    sender.join().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !handler.is_finished() {
        assert!(
            Instant::now() < deadline,
            "the handler did not end; input {}",
            show(input)
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    if handler.join().is_err() {
        panic!("the handler panicked; input {}", show(input));
    }
    answer
}

#[test]
fn a_connection_answers_mutated_requests() {
    let root = tempfile::tempdir().unwrap();
    let run_root = tempfile::tempdir().unwrap();
    let server: &'static Server = Box::leak(Box::new(Server::new(ServeConfig {
        engine: berth_engine::EngineConfig::new(root.path().to_owned(), run_root.path().to_owned()),
        hosts: Vec::new(),
        group: None,
        idle_timeout: None,
        tls: None,
        // Nothing here starts a container; a start would fail, not fork.
        helper: "/bin/false".into(),
        limits: Default::default(),
    })));
    let seed = seed_from_env("BERTH_FUZZ_SEED", 0x5eed_0002);
    let cases = seed_from_env("BERTH_FUZZ_CASES", 2000) as usize / 4;
    let mut rng = Rng(seed);
    let seeds = seeds();
    let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
    let started = Instant::now();
    let inputs: Vec<Vec<u8>> = seeds
        .iter()
        .cloned()
        .chain((0..cases).map(|_| mutate(&mut rng, &seeds)))
        .collect();
    for (case, input) in inputs.iter().enumerate() {
        let answer = exchange(server, input);
        // The n-th answer is to the n-th request.
        let heads: Vec<bool> = parse_requests(input, usize::MAX)
            .iter()
            .map(|parsed| match parsed {
                Parsed::Request { request, .. } | Parsed::BadBody { request, .. } => {
                    request.method == "HEAD"
                }
                Parsed::BadHead { .. } => false,
            })
            .collect();
        let mut rest = answer.as_slice();
        let mut count = 0;
        while !rest.is_empty() {
            let head_only = heads.get(count).copied().unwrap_or(false);
            let (status, headers, _, after) = next_response(rest, head_only);
            *statuses.entry(status).or_default() += 1;
            assert!(
                !(500..600).contains(&status) || status == 501,
                "case {case}: {status} for input {}:\n{}",
                show(input),
                String::from_utf8_lossy(rest)
            );
            let closes = headers.get("connection").map(String::as_str) == Some("close");
            assert!(
                !closes || after.is_empty(),
                "case {case}: more after Connection: close"
            );
            rest = after;
            count += 1;
        }
        // A well-formed seed gets one answer per request.
        if case < seeds.len() {
            assert!(count >= 1, "seed {case} got no answer");
        }
    }
    println!(
        "{} connections in {:.2} s; statuses {statuses:?}",
        inputs.len(),
        started.elapsed().as_secs_f64()
    );
    // The server still answers.
    let answer = exchange(server, b"GET /_ping HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(next_response(&answer, false).0, 200);
}
