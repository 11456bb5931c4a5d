//! `berth serve`'s websocket attach (`GET /containers/{id}/attach/ws`),
//! `POST /containers/{id}/resize` and import (`POST /images/create` with
//! `fromSrc=-`), driven by the real docker CLI and by a small websocket
//! client written here from RFC 6455 (not the server's code). Where a
//! Docker engine is reachable (`BERTH_TEST_DOCKER_HOST`), the websocket and
//! resize cases run against it too, so that the expectations are Docker's.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

#[path = "api/compare.rs"]
mod compare;
#[path = "api/harness.rs"]
mod harness;
mod support;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use compare::{each_engine, Cleanup};
use harness::{docker_in_terminal, header, raw_request, Server};

/// RFC 6455's sample key (section 1.3) and the accept value it gives.
const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
const ACCEPT: &str = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

const CONTINUATION: u8 = 0x0;
const TEXT: u8 = 0x1;
const BINARY: u8 = 0x2;
const CLOSE: u8 = 0x8;
const PING: u8 = 0x9;
const PONG: u8 = 0xa;
/// The first byte of a final frame: FIN and the opcode.
const fn last(opcode: u8) -> u8 {
    0x80 | opcode
}

/// A websocket client connection (frames masked, as a client's must be).
struct WebSocket {
    stream: UnixStream,
    /// Bytes read past the last frame.
    buffer: Vec<u8>,
    sent: u8,
}

enum Opened {
    Upgraded(WebSocket),
    Refused { status: u16, body: String },
}

impl Opened {
    #[track_caller]
    fn upgraded(self) -> WebSocket {
        match self {
            Opened::Upgraded(socket) => socket,
            Opened::Refused { status, body } => panic!("refused with {status}: {body}"),
        }
    }

    #[track_caller]
    fn refused(self) -> (u16, String) {
        match self {
            Opened::Upgraded(_) => panic!("the handshake was accepted"),
            Opened::Refused { status, body } => (status, body),
        }
    }
}

impl WebSocket {
    /// The opening handshake for `target` on the API socket.
    fn open(socket: &Path, target: &str, key: Option<&str>) -> Opened {
        let mut stream = UnixStream::connect(socket).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut request = format!(
            "GET {target} HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
        );
        if let Some(key) = key {
            request.push_str(&format!("Sec-WebSocket-Key: {key}\r\n"));
        }
        request.push_str("\r\n");
        stream.write_all(request.as_bytes()).unwrap();
        let mut received = Vec::new();
        let mut chunk = [0u8; 4096];
        let end = loop {
            if let Some(end) = received.windows(4).position(|window| window == b"\r\n\r\n") {
                break end;
            }
            let read = stream.read(&mut chunk).unwrap();
            assert!(read > 0, "closed before the response head: {received:?}");
            received.extend_from_slice(&chunk[..read]);
        };
        let head = String::from_utf8_lossy(&received[..end]).into_owned();
        let status: u16 = head
            .split_whitespace()
            .nth(1)
            .and_then(|status| status.parse().ok())
            .unwrap();
        let mut rest = received[end + 4..].to_vec();
        if status == 101 {
            assert_eq!(header(&head, "Upgrade"), Some("websocket"), "{head}");
            assert_eq!(
                header(&head, "Sec-WebSocket-Accept"),
                Some(ACCEPT),
                "{head}"
            );
            return Opened::Upgraded(WebSocket {
                stream,
                buffer: rest,
                sent: 0,
            });
        }
        match header(&head, "Content-Length").and_then(|length| length.parse::<usize>().ok()) {
            Some(length) => {
                while rest.len() < length {
                    let read = stream.read(&mut chunk).unwrap();
                    assert!(read > 0, "the body ends early");
                    rest.extend_from_slice(&chunk[..read]);
                }
            }
            // Docker's refusals have no length; the connection closes.
            None => {
                let _ = stream.read_to_end(&mut rest);
            }
        }
        Opened::Refused {
            status,
            body: String::from_utf8_lossy(&rest).into_owned(),
        }
    }

    fn send(&mut self, fin: bool, opcode: u8, payload: &[u8]) {
        self.try_send(fin, opcode, payload).unwrap();
    }

    fn try_send(&mut self, fin: bool, opcode: u8, payload: &[u8]) -> std::io::Result<()> {
        self.sent = self.sent.wrapping_add(1);
        let mask = [0xa5, self.sent, 0x3c, 0x5a ^ self.sent];
        let mut frame = vec![if fin { 0x80 } else { 0 } | opcode];
        let length = payload.len();
        if length < 126 {
            frame.push(0x80 | length as u8);
        } else {
            frame.push(0x80 | 126);
            frame.extend_from_slice(&u16::try_from(length).unwrap().to_be_bytes());
        }
        frame.extend_from_slice(&mask);
        frame.extend(
            payload
                .iter()
                .enumerate()
                .map(|(index, byte)| byte ^ mask[index % 4]),
        );
        self.stream.write_all(&frame)
    }

    /// Has `count` bytes in the buffer, or None at the end of the stream.
    fn fill(&mut self, count: usize) -> Option<()> {
        let mut chunk = [0u8; 4096];
        while self.buffer.len() < count {
            let read = self.stream.read(&mut chunk).ok()?;
            if read == 0 {
                return None;
            }
            self.buffer.extend_from_slice(&chunk[..read]);
        }
        Some(())
    }

    /// The next server frame: its first byte (FIN and opcode) and payload;
    /// None when the connection ended.
    fn receive(&mut self) -> Option<(u8, Vec<u8>)> {
        self.fill(2)?;
        let (first, second) = (self.buffer[0], self.buffer[1]);
        assert_eq!(second & 0x80, 0, "a server frame is masked");
        let (length, start) = match second & 0x7f {
            126 => {
                self.fill(4)?;
                (
                    usize::from(u16::from_be_bytes([self.buffer[2], self.buffer[3]])),
                    4,
                )
            }
            127 => {
                self.fill(10)?;
                let mut field = [0u8; 8];
                field.copy_from_slice(&self.buffer[2..10]);
                (usize::try_from(u64::from_be_bytes(field)).unwrap(), 10)
            }
            length => (usize::from(length), 2),
        };
        self.fill(start + length)?;
        let payload = self.buffer[start..start + length].to_vec();
        self.buffer.drain(..start + length);
        Some((first, payload))
    }

    /// Data frames until their bytes hold each of `wanted`; returns the
    /// bytes and the first byte of every data frame.
    #[track_caller]
    fn data_until(&mut self, wanted: &[&str]) -> (String, Vec<u8>) {
        let mut data = Vec::new();
        let mut kinds = Vec::new();
        while !wanted
            .iter()
            .all(|text| String::from_utf8_lossy(&data).contains(text))
        {
            match self.receive() {
                Some((kind, payload)) if kind & 0x0f <= BINARY => {
                    kinds.push(kind);
                    data.extend(payload);
                }
                other => panic!(
                    "waiting for {wanted:?} after {:?}, got {other:?}",
                    String::from_utf8_lossy(&data)
                ),
            }
        }
        (String::from_utf8_lossy(&data).into_owned(), kinds)
    }

    /// Sends a close frame; returns what the server's close carried,
    /// skipping data frames still on their way.
    #[track_caller]
    fn close(&mut self) -> Vec<u8> {
        self.send(true, CLOSE, &1000u16.to_be_bytes());
        self.await_close()
    }

    #[track_caller]
    fn await_close(&mut self) -> Vec<u8> {
        loop {
            match self.receive() {
                Some((kind, payload)) if kind == last(CLOSE) => return payload,
                Some((kind, _)) if kind & 0x0f <= BINARY => continue,
                other => panic!("waiting for a close frame, got {other:?}"),
            }
        }
    }
}

/// The websocket attach endpoint of `container`.
fn attach_target(version: &str, container: &str, query: &str) -> String {
    format!("/{version}/containers/{container}/attach/ws?{query}")
}

#[test]
fn websocket_attach_echoes_stdin_and_closes_cleanly() {
    let Some(server) = Server::start() else {
        return;
    };
    each_engine(&server, "ws", |engine| {
        let name = engine.run("cat", &["-i"], &["cat"]);
        let _cleanup = Cleanup::new(engine, vec![name.clone()]);
        let target = attach_target("v1.41", &name, "stream=1&stdin=1&stdout=1&stderr=1");
        let mut socket = WebSocket::open(&engine.socket, &target, Some(KEY)).upgraded();
        socket.send(true, TEXT, b"hello\n");
        let (data, kinds) = socket.data_until(&["hello\n"]);
        assert_eq!(data, "hello\n", "{}", engine.name);
        // API 1.28 and later: binary frames.
        assert!(kinds.iter().all(|kind| *kind == last(BINARY)), "{kinds:?}");

        // A fragmented message with a ping between its frames: the pong
        // answers the ping, and the fragments reach the container.
        socket.send(false, TEXT, b"frag1-");
        socket.send(true, PING, b"still there?");
        socket.send(true, CONTINUATION, b"frag2\n");
        let mut pong = None;
        let mut echoed = Vec::new();
        while pong.is_none() || !String::from_utf8_lossy(&echoed).contains("frag1-frag2\n") {
            match socket.receive() {
                Some((kind, payload)) if kind == last(PONG) => pong = Some(payload),
                Some((kind, payload)) if kind == last(BINARY) => echoed.extend(payload),
                other => panic!("{}: unexpected {other:?}", engine.name),
            }
        }
        assert_eq!(pong.unwrap(), b"still there?", "{}", engine.name);

        // The client's close is answered with 1000, then the connection ends.
        assert_eq!(socket.close(), 1000u16.to_be_bytes(), "{}", engine.name);
        assert_eq!(socket.receive(), None, "{}", engine.name);
    });
}

#[test]
fn websocket_attach_sends_output_unmultiplexed() {
    let Some(server) = Server::start() else {
        return;
    };
    each_engine(&server, "ws", |engine| {
        let name = engine.run(
            "print",
            &[],
            &[
                "sh",
                "-c",
                "while true; do echo out; echo err >&2; sleep 0.2; done",
            ],
        );
        let _cleanup = Cleanup::new(engine, vec![name.clone()]);
        let target = attach_target("v1.41", &name, "stream=1&stdout=1&stderr=1");
        let mut socket = WebSocket::open(&engine.socket, &target, Some(KEY)).upgraded();
        let (data, kinds) = socket.data_until(&["out\n", "err\n"]);
        // The raw bytes of both streams, no 8-byte stream headers.
        assert!(
            data.lines().all(|line| line == "out" || line == "err"),
            "{}: {data:?}",
            engine.name
        );
        assert!(kinds.iter().all(|kind| *kind == last(BINARY)), "{kinds:?}");
        drop(socket);

        // Before API 1.28 Docker sent text frames.
        let target = attach_target("v1.27", &name, "stream=1&stdout=1&stderr=1");
        let mut socket = WebSocket::open(&engine.socket, &target, Some(KEY)).upgraded();
        let (_, kinds) = socket.data_until(&["out\n"]);
        assert!(kinds.iter().all(|kind| *kind == last(TEXT)), "{kinds:?}");
    });
}

#[test]
fn websocket_attach_before_start_follows_the_container_to_its_end() {
    let Some(server) = Server::start() else {
        return;
    };
    each_engine(&server, "ws", |engine| {
        let name = engine.name("later");
        engine
            .docker(&[
                "create",
                "--network",
                "none",
                "--name",
                &name,
                "busybox",
                "sh",
                "-c",
                "echo started; sleep 0.3; echo done",
            ])
            .ok();
        let _cleanup = Cleanup::new(engine, vec![name.clone()]);
        let target = attach_target("v1.41", &name, "stream=1&stdout=1&stderr=1");
        let mut socket = WebSocket::open(&engine.socket, &target, Some(KEY)).upgraded();
        engine.docker(&["start", &name]).ok();
        let (data, _) = socket.data_until(&["started\n", "done\n"]);
        assert_eq!(data, "started\ndone\n", "{}", engine.name);
        // The container's end closes the websocket with 1000.
        assert_eq!(
            socket.await_close(),
            1000u16.to_be_bytes(),
            "{}",
            engine.name
        );
        // The answer is a courtesy: Docker closes the connection at once
        // (berth waits a moment for it).
        let _ = socket.try_send(true, CLOSE, &1000u16.to_be_bytes());
        assert_eq!(socket.receive(), None, "{}", engine.name);
    });
}

#[test]
fn websocket_attach_refuses_a_bad_handshake() {
    let Some(server) = Server::start() else {
        return;
    };
    each_engine(&server, "ws", |engine| {
        let name = engine.run("idle", &["-i"], &["cat"]);
        let _cleanup = Cleanup::new(engine, vec![name.clone()]);
        let target = attach_target("v1.41", &name, "stream=1&stdin=1&stdout=1");
        let (status, body) = WebSocket::open(&engine.socket, &target, None).refused();
        assert_eq!(status, 400, "{}: {body}", engine.name);
        assert!(
            body.contains("mismatch challenge/response"),
            "{}: {body}",
            engine.name
        );
        let target = attach_target("v1.41", "no-such-container", "stream=1");
        let (status, body) = WebSocket::open(&engine.socket, &target, Some(KEY)).refused();
        assert_eq!(status, 404, "{}: {body}", engine.name);
        assert!(
            body.contains("No such container: no-such-container"),
            "{}: {body}",
            engine.name
        );
        // The container is as it was: its stdin still open.
        let socket = WebSocket::open(
            &engine.socket,
            &attach_target("v1.41", &name, "stream=1&stdin=1&stdout=1"),
            Some(KEY),
        );
        let mut socket = socket.upgraded();
        socket.send(true, BINARY, b"still here\n");
        socket.data_until(&["still here\n"]);
    });
}

/// `POST /containers/{id}/resize` on a raw connection; the status.
fn resize(socket: &Path, container: &str, height: u16, width: u16) -> u16 {
    let request = format!(
        "POST /v1.41/containers/{container}/resize?h={height}&w={width} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    );
    raw_request(socket, request.as_bytes()).0
}

#[test]
fn resize_sets_the_size_of_the_container_terminal() {
    let Some(server) = Server::start() else {
        return;
    };
    each_engine(&server, "ws", |engine| {
        let terminal = engine.run("term", &["-t"], &["sh"]);
        let plain = engine.run("plain", &[], &["sleep", "1000"]);
        let created = engine.name("created");
        engine
            .docker(&["create", "--name", &created, "busybox", "true"])
            .ok();
        let _cleanup = Cleanup::new(
            engine,
            vec![terminal.clone(), plain.clone(), created.clone()],
        );
        assert_eq!(resize(&engine.socket, &terminal, 33, 77), 200);
        // The terminal of the container's first process, seen from inside.
        let size = engine
            .docker(&["exec", &terminal, "sh", "-c", "stty size </proc/1/fd/0"])
            .ok();
        assert_eq!(size.trim(), "33 77", "{}", engine.name);
        assert_eq!(resize(&engine.socket, &terminal, 50, 132), 200);
        let size = engine
            .docker(&["exec", &terminal, "sh", "-c", "stty size </proc/1/fd/0"])
            .ok();
        assert_eq!(size.trim(), "50 132", "{}", engine.name);
        // Docker's answers: nothing to do without a tty, a stopped
        // container is a conflict, an unknown one is not found.
        assert_eq!(
            resize(&engine.socket, &plain, 33, 77),
            200,
            "{}",
            engine.name
        );
        assert_eq!(
            resize(&engine.socket, &created, 33, 77),
            409,
            "{}",
            engine.name
        );
        assert_eq!(
            resize(&engine.socket, &engine.name("none"), 33, 77),
            404,
            "{}",
            engine.name
        );
    });
}

#[test]
fn run_with_a_terminal_takes_the_size_of_the_cli_terminal() {
    let Some(server) = Server::start() else {
        return;
    };
    // docker run -it resizes the container to its terminal (24x80 here)
    // once it started; the shell waits for that.
    let script = "i=0; while [ \"$(stty size)\" != '24 80' ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; echo \"size: $(stty size)\"";
    let (output, status) = docker_in_terminal(
        &server,
        &[
            "run",
            "--rm",
            "-it",
            "--network",
            "none",
            "busybox",
            "sh",
            "-c",
            script,
        ],
        b"",
    );
    assert_eq!(status, 0, "{output}");
    assert!(output.contains("size: 24 80"), "{output:?}");
}

/// A root filesystem tarball made here: busybox (taken from the fixture
/// rootfs), `sh` and `cat` links to it, and a file to print.
fn make_rootfs(path: &Path) {
    let mut fixture =
        tar::Archive::new(fs_err::File::open(support::fixture("rootfs.tar")).unwrap());
    let mut busybox = Vec::new();
    for entry in fixture.entries().unwrap() {
        let mut entry = entry.unwrap();
        if entry.path().unwrap() == Path::new("bin/busybox") {
            entry.read_to_end(&mut busybox).unwrap();
            break;
        }
    }
    assert!(!busybox.is_empty(), "no bin/busybox in rootfs.tar");
    let mut builder = tar::Builder::new(fs_err::File::create(path).unwrap());
    let mut add = |name: &str, kind: tar::EntryType, mode: u32, data: &[u8], link: Option<&str>| {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(kind);
        header.set_mode(mode);
        header.set_uid(0);
        header.set_gid(0);
        header.set_size(data.len() as u64);
        header.set_mtime(1_704_067_200);
        if let Some(link) = link {
            header.set_link_name(link).unwrap();
        }
        builder.append_data(&mut header, name, data).unwrap();
    };
    for directory in ["bin", "dev", "etc", "proc", "sys", "tmp"] {
        add(directory, tar::EntryType::Directory, 0o755, b"", None);
    }
    add(
        "bin/busybox",
        tar::EntryType::Regular,
        0o755,
        &busybox,
        None,
    );
    for name in ["sh", "cat", "echo"] {
        add(
            &format!("bin/{name}"),
            tar::EntryType::Symlink,
            0o777,
            b"",
            Some("busybox"),
        );
    }
    add(
        "hello.txt",
        tar::EntryType::Regular,
        0o644,
        b"made in the test\n",
        None,
    );
    builder.into_inner().unwrap().sync_all().unwrap();
}

#[test]
fn import_through_the_docker_cli() {
    let Some(server) = Server::start() else {
        return;
    };
    let directory = tempfile::tempdir().unwrap();
    let rootfs = directory.path().join("rootfs.tar");
    make_rootfs(&rootfs);
    let import = server
        .docker(&[
            "import",
            "--message",
            "imported by the test",
            "--change",
            "CMD [\"/bin/cat\", \"/hello.txt\"]",
            "--change",
            "ENV PATH=/bin",
            rootfs.to_str().unwrap(),
            "imported:v1",
        ])
        .ok();
    let id = import.trim();
    assert!(id.starts_with("sha256:") && id.len() == 71, "{import}");
    let images = server
        .docker(&["images", "--format", "{{.Repository}}:{{.Tag}} {{.ID}}"])
        .ok();
    assert!(
        images
            .lines()
            .any(|line| line == format!("imported:v1 {}", &id[7..19])),
        "{images}"
    );
    let comment = server
        .docker(&[
            "image",
            "inspect",
            "--format",
            "{{.Comment}}",
            "imported:v1",
        ])
        .ok();
    assert_eq!(comment.trim(), "imported by the test");
    let run = server.docker(&["run", "--rm", "--network", "none", "imported:v1"]);
    assert_eq!(run.ok(), "made in the test\n");
    let run = server.docker(&[
        "run",
        "--rm",
        "--network",
        "none",
        "imported:v1",
        "echo",
        "a command from the image",
    ]);
    assert_eq!(run.ok(), "a command from the image\n");

    // Without a name: an image known by its id only.
    let unnamed = server.docker(&["import", rootfs.to_str().unwrap()]).ok();
    assert!(unnamed.trim().starts_with("sha256:"), "{unnamed}");

    // Corrupt tarballs fail clearly and leave nothing behind.
    let before_images = server.docker(&["images", "-a", "-q", "--no-trunc"]).ok();
    let before_content = server.berth.content();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let noise: Vec<u8> = (0..5000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    let garbage = directory.path().join("garbage.tar");
    fs_err::write(&garbage, noise).unwrap();
    let truncated = directory.path().join("truncated.tar");
    let whole = fs_err::read(&rootfs).unwrap();
    fs_err::write(&truncated, &whole[..whole.len() / 2]).unwrap();
    for bad in [&garbage, &truncated] {
        let failed = server.docker(&["import", bad.to_str().unwrap(), "broken:v1"]);
        let stderr = failed.fails(1);
        assert!(
            stderr.contains("Error response from daemon: failed to import the root filesystem"),
            "{stderr}"
        );
    }
    assert_eq!(
        server.docker(&["images", "-a", "-q", "--no-trunc"]).ok(),
        before_images
    );
    assert_eq!(server.berth.content(), before_content);

    // Docker downloads a URL; berth says it does not.
    let url = server.docker(&["import", "http://127.0.0.1:9/rootfs.tar", "fromurl:v1"]);
    let stderr = url.fails(1);
    assert!(
        stderr.contains("berth does not import from a URL"),
        "{stderr}"
    );
}

#[test]
fn import_answers_docker_errors_before_reading_the_body() {
    let Some(server) = Server::start() else {
        return;
    };
    let request = |query: &str| {
        raw_request(
            &server.socket,
            format!(
                "POST /v1.41/images/create?fromSrc=-&{query} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-tar\r\nContent-Length: 1024\r\nConnection: close\r\n\r\n{}",
                "\0".repeat(1024)
            )
            .as_bytes(),
        )
    };
    let (status, _, body) = request("repo=imported&changes=BOGUS%20x");
    assert_eq!(status, 400);
    assert!(
        String::from_utf8_lossy(&body).contains("is not a valid change command"),
        "{}",
        String::from_utf8_lossy(&body)
    );
    let (status, _, body) = request("repo=Not..Valid");
    assert_eq!(status, 400, "{}", String::from_utf8_lossy(&body));
    let (status, _, body) = request(&format!("repo=busybox@sha256:{}", "0".repeat(64)));
    assert_eq!(status, 400);
    assert!(
        String::from_utf8_lossy(&body).contains("cannot import digest reference"),
        "{}",
        String::from_utf8_lossy(&body)
    );
    // An empty tarball (two zero blocks) is a valid, empty image; its
    // `repo` may carry a tag, which `tag` replaces, as Docker's does.
    let (status, head, body) = request("repo=imported:old&tag=new");
    assert_eq!(status, 200, "{head}\n{}", String::from_utf8_lossy(&body));
    let line: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert!(
        line["status"].as_str().unwrap().starts_with("sha256:"),
        "{line}"
    );
    let images = server
        .docker(&["images", "--format", "{{.Repository}}:{{.Tag}}"])
        .ok();
    assert!(
        images.lines().any(|line| line == "imported:new"),
        "{images}"
    );
}

/// docker-py reads the head of a hijacked answer through a buffered HTTP
/// parser and the stream from the raw socket after it: whatever arrived
/// together with the head is lost (`attach(stream=False, logs=True)`
/// returned nothing when the log came in the same read). The stream
/// starts only once the client has read the head, however late it reads.
#[test]
fn a_hijacked_stream_starts_after_the_client_has_read_the_head() {
    let Some(server) = Server::start() else {
        return;
    };
    let run = server.docker(&["run", "--name", "logged", "busybox", "echo", "hello"]);
    assert!(run.output.status.success(), "{:?}", run.output);

    let mut stream = UnixStream::connect(&server.socket).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream
        .write_all(
            b"POST /v1.41/containers/logged/attach?logs=1&stream=0&stdout=1&stderr=1 HTTP/1.1\r\n\
              Host: localhost\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: 0\r\n\r\n",
        )
        .unwrap();
    // A slow client: the server has long written the head by now.
    std::thread::sleep(Duration::from_millis(300));
    let mut buffer = vec![0u8; 64 * 1024];
    let first = stream.read(&mut buffer).unwrap();
    let head = String::from_utf8_lossy(&buffer[..first]).into_owned();
    assert!(head.starts_with("HTTP/1.1 101"), "{head:?}");
    assert!(
        head.ends_with("\r\n\r\n"),
        "the head's read held more: {head:?}"
    );

    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).unwrap();
    // One stdout frame: stream 1, length 6, "hello\n".
    assert_eq!(rest, b"\x01\x00\x00\x00\x00\x00\x00\x06hello\n");
    server.docker(&["rm", "logged"]);
}
