//! `ADD http://…` against a small HTTP server on 127.0.0.1 that the test
//! starts (never the internet): BuildKit's naming, mode 0600, the mtime
//! from `Last-Modified`, no extraction, `--chown`/`--chmod`, `--checksum`,
//! the cache (downloaded again, keyed by the content), and every bad input
//! with its message.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::{berth_with_busybox, cached_steps, context};

/// `Last-Modified` the server sends for `/dated/…` paths.
const LAST_MODIFIED: &str = "Sun, 06 Nov 1994 08:49:37 GMT";
const LAST_MODIFIED_SECONDS: &str = "784111777";

/// Files by path, and how many GETs each path had.
#[derive(Default)]
struct Files {
    content: HashMap<String, Vec<u8>>,
    requests: HashMap<String, usize>,
}

/// An HTTP/1.1 server on a loopback port, one connection per request;
/// stopped on drop.
struct FileServer {
    port: u16,
    files: Arc<Mutex<Files>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FileServer {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let files = Arc::new(Mutex::new(Files::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (serving, stopping) = (files.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    let _ = serve(stream, &serving);
                }
            }
        });
        Self {
            port,
            files,
            stop,
            thread: Some(thread),
        }
    }

    fn put(&self, path: &str, content: &[u8]) {
        let mut files = self.files.lock().unwrap();
        files.content.insert(path.to_owned(), content.to_vec());
    }

    fn requests(&self, path: &str) -> usize {
        let files = self.files.lock().unwrap();
        files.requests.get(path).copied().unwrap_or(0)
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(stream: TcpStream, files: &Mutex<Files>) -> std::io::Result<()> {
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header == "\r\n" {
            break;
        }
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    let content = {
        let mut files = files.lock().unwrap();
        *files.requests.entry(path.clone()).or_default() += 1;
        files.content.get(&path).cloned()
    };
    let mut stream = stream;
    match content {
        Some(content) => {
            let mut head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n",
                content.len()
            );
            if path.starts_with("/dated/") {
                head.push_str(&format!("Last-Modified: {LAST_MODIFIED}\r\n"));
            }
            head.push_str("\r\n");
            stream.write_all(head.as_bytes())?;
            stream.write_all(&content)
        }
        None => stream.write_all(
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found",
        ),
    }
}

fn sha256(content: &[u8]) -> String {
    berth_types::Digest::of_bytes(content).to_string()
}

/// A tar archive holding one file (ADD of a URL must not extract it).
fn small_tar() -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(3);
    header.set_mode(0o644);
    header.set_cksum();
    builder
        .append_data(&mut header, "inside.txt", &b"in\n"[..])
        .unwrap();
    builder.into_inner().unwrap()
}

#[test]
fn add_of_a_url_downloads_the_file_as_buildkit_places_it() {
    let server = FileServer::start();
    server.put("/dated/hello.txt", b"hello\n");
    server.put("/files/data.tar", &small_tar());
    server.put("/files/plain.txt", b"plain\n");
    let hello = sha256(b"hello\n");
    let dockerfile = format!(
        "FROM busybox\n\
         ADD {tar} /dl/\n\
         ADD {hello_url} /named.txt\n\
         ADD --checksum={hello} {hello_url} /checked\n\
         ADD --chown=1000:1000 --chmod=644 {plain} /owned/\n",
        tar = server.url("/files/data.tar"),
        hello_url = server.url("/dated/hello.txt"),
        plain = server.url("/files/plain.txt"),
    );
    let berth = berth_with_busybox();
    let directory = context(&[("Dockerfile", &dockerfile)]);
    let path = directory.path().to_str().unwrap();
    berth.run(&["build", "-t", "fetched", path]).ok();

    let listing = berth
        .run(&[
            "run",
            "--rm",
            "fetched",
            "stat",
            "-c",
            "%n %F %a %u:%g",
            "/dl/data.tar",
            "/named.txt",
            "/owned/plain.txt",
            "/checked",
        ])
        .ok();
    assert_eq!(
        listing,
        "/dl/data.tar regular file 600 0:0\n\
         /named.txt regular file 600 0:0\n\
         /owned/plain.txt regular file 644 1000:1000\n\
         /checked regular file 600 0:0\n",
        "named from the URL unless the destination names a file; 0600 unless --chmod"
    );
    let contents = berth
        .run(&[
            "run",
            "--rm",
            "fetched",
            "sh",
            "-c",
            "cat /named.txt /checked; stat -c %Y /named.txt; stat -c %Y /owned/plain.txt; \
             test -e /dl/inside.txt && echo extracted; tar tf /dl/data.tar",
        ])
        .ok();
    let lines: Vec<&str> = contents.lines().collect();
    assert_eq!(
        lines[..3],
        ["hello", "hello", LAST_MODIFIED_SECONDS],
        "{contents}"
    );
    assert_ne!(
        lines[3], LAST_MODIFIED_SECONDS,
        "no Last-Modified, no old mtime"
    );
    assert_eq!(
        lines[4..],
        ["inside.txt"],
        "an archive from a URL stays one"
    );

    // A rebuild downloads the files again (the key is their content) and
    // is cached; the step with --checksum needs no download at all.
    let before = server.requests("/dated/hello.txt");
    let again = berth.run(&["build", path]);
    let stderr = again.stderr();
    again.ok();
    assert_eq!(cached_steps(&stderr).len(), 4, "{stderr}");
    assert_eq!(server.requests("/files/data.tar"), 2);
    assert_eq!(
        server.requests("/dated/hello.txt"),
        before + 1,
        "once for /named.txt, none for --checksum's step"
    );

    // New content at a URL rebuilds its step and the steps after it only.
    server.put("/files/plain.txt", b"changed\n");
    let changed = berth.run(&["build", "-t", "fetched", path]);
    let stderr = changed.stderr();
    changed.ok();
    let cached = cached_steps(&stderr);
    assert_eq!(cached.len(), 3, "{stderr}");
    assert!(
        !cached.iter().any(|step| step.contains("plain.txt")),
        "{stderr}"
    );
    assert_eq!(
        berth
            .run(&["run", "--rm", "fetched", "cat", "/owned/plain.txt"])
            .ok(),
        "changed\n"
    );
    assert_eq!(berth.run(&["ps", "-aq"]).ok(), "");
    assert_no_downloads(&berth);
}

/// Nothing left where downloads are kept.
#[track_caller]
fn assert_no_downloads(berth: &crate::support::Berth) {
    let directory = berth.root().join("build-downloads");
    let left: Vec<_> = fs_err::read_dir(&directory)
        .map(|entries| entries.flatten().map(|entry| entry.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn bad_urls_and_checksums_fail_with_their_reason() {
    let server = FileServer::start();
    server.put("/files/hello.txt", b"hello\n");
    let hello = sha256(b"hello\n");
    let wrong = sha256(b"something else\n");
    let closed = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = server.url("/files/hello.txt");
    let missing = server.url("/files/missing.txt");
    let unreachable = format!("http://127.0.0.1:{closed}/file");
    let cases: Vec<(String, String)> = vec![
        (
            format!("ADD --checksum={wrong} {url} /x"),
            format!(
                "failed to download {url}: digest mismatch: the content is {hello}, --checksum expects {wrong}"
            ),
        ),
        (
            format!("ADD {missing} /x"),
            format!("failed to download {missing}: invalid response status 404"),
        ),
        (
            format!("ADD {unreachable} /x"),
            format!("failed to download {unreachable}:"),
        ),
        (
            format!("ADD --checksum={hello} a /x"),
            "checksum can't be specified for non-HTTP(S) sources".to_owned(),
        ),
        (
            format!("ADD --checksum={hello} {url} a /x/"),
            "checksum can't be specified for multiple sources".to_owned(),
        ),
        (
            format!("COPY --checksum={hello} {url} /x"),
            // BuildKit's parser knows the flag on ADD only.
            "dockerfile parse error on line 2: unknown flag: --checksum".to_owned(),
        ),
        (
            format!("COPY {url} /x"),
            "source can't be a URL for COPY".to_owned(),
        ),
        (
            format!("ADD --checksum=sha256:abc {url} /x"),
            "invalid checksum digest format".to_owned(),
        ),
        (
            format!("ADD --checksum=md5:{} {url} /x", "0".repeat(32)),
            "unsupported digest algorithm \"md5\" in --checksum".to_owned(),
        ),
    ];
    let berth = berth_with_busybox();
    for (instruction, expected) in &cases {
        let dockerfile = format!("FROM busybox\n{instruction}\n");
        let directory = context(&[("Dockerfile", &dockerfile), ("a", "a")]);
        let failed = berth.run(&["build", directory.path().to_str().unwrap()]);
        let stderr = failed.fails(1);
        assert!(
            stderr.contains(expected.as_str()),
            "{instruction}: {stderr}"
        );
    }
    assert_eq!(berth.run(&["ps", "-aq"]).ok(), "");
    assert_no_downloads(&berth);
}
