//! `berth serve -H tcp://127.0.0.1:PORT --tlsverify`: the real docker CLI
//! over TLS with a client certificate (plain calls, `run`, hijacked streams
//! both ways); clients without a certificate or with one from another CA
//! refused; TCP without `--tlsverify`, and bad certificate files, refused
//! before anything listens. Certificates are made with the openssl CLI.
//! Only 127.0.0.1 is ever used.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

#[path = "api/harness.rs"]
mod harness;
mod support;

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use harness::{resources, settle, Server};
use support::containers::wait_until;
use support::{output_with_stdin, Run};

/// Two CAs, the server's certificate from the first, a client
/// certificate from each. Client files are laid out as the docker CLI
/// expects them: `ca.pem`, `cert.pem`, `key.pem` in one directory.
struct Certificates {
    directory: tempfile::TempDir,
}

impl Certificates {
    fn make() -> Option<Self> {
        if Command::new("openssl").arg("version").output().is_err() {
            eprintln!("SKIP: no openssl CLI to make certificates");
            return None;
        }
        let certificates = Self {
            directory: tempfile::Builder::new()
                .prefix("berth-tls-")
                .tempdir()
                .unwrap(),
        };
        let root = certificates.directory.path();
        fs_err::write(
            root.join("openssl.cnf"),
            berth_registry::testing::OPENSSL_CONFIG,
        )
        .unwrap();
        for directory in ["server", "client", "other", "empty"] {
            fs_err::create_dir(root.join(directory)).unwrap();
        }
        certificates.authority("ca");
        certificates.authority("other-ca");
        // The server's key is RSA (PKCS#8), the others P-256, so that both
        // kinds load.
        certificates.signed("server/cert.pem", "server/key.pem", "rsa", "ca", "server");
        certificates.signed("client/cert.pem", "client/key.pem", "ec", "ca", "client");
        certificates.signed(
            "other/cert.pem",
            "other/key.pem",
            "ec",
            "other-ca",
            "client",
        );
        // Each client trusts the server's CA.
        for directory in ["client", "other", "empty"] {
            fs_err::copy(root.join("ca.pem"), root.join(directory).join("ca.pem")).unwrap();
        }
        Some(certificates)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.directory.path().join(name)
    }

    fn openssl(&self, arguments: &[&str]) {
        let output = Command::new("openssl")
            .args(arguments)
            .current_dir(self.directory.path())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "openssl {}: {}",
            arguments.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    fn authority(&self, name: &str) {
        let key = format!("{name}-key.pem");
        let certificate = format!("{name}.pem");
        let subject = format!("/CN=berth test {name}");
        self.openssl(&[
            "req",
            "-x509",
            "-config",
            "openssl.cnf",
            "-extensions",
            "ca",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &certificate,
            "-days",
            "2",
            "-subj",
            &subject,
        ]);
    }

    fn signed(&self, certificate: &str, key: &str, kind: &str, authority: &str, extensions: &str) {
        let request = format!("{certificate}.csr");
        let mut new_key = vec!["-newkey"];
        match kind {
            "rsa" => new_key.push("rsa:2048"),
            _ => new_key.extend(["ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]),
        }
        let subject = format!("/CN=berth test {extensions}");
        let mut arguments = vec!["req", "-new", "-config", "openssl.cnf"];
        arguments.extend(new_key);
        arguments.extend([
            "-nodes", "-keyout", key, "-out", &request, "-subj", &subject,
        ]);
        self.openssl(&arguments);
        let authority_certificate = format!("{authority}.pem");
        let authority_key = format!("{authority}-key.pem");
        self.openssl(&[
            "x509",
            "-req",
            "-in",
            &request,
            "-CA",
            &authority_certificate,
            "-CAkey",
            &authority_key,
            "-CAcreateserial",
            "-out",
            certificate,
            "-days",
            "2",
            "-extfile",
            "openssl.cnf",
            "-extensions",
            extensions,
        ]);
    }

    /// `--tlsverify --tlscacert … --tlscert … --tlskey …` for berth serve.
    fn server_flags(&self) -> Vec<String> {
        vec![
            "--tlsverify".to_owned(),
            "--tlscacert".to_owned(),
            self.path("ca.pem").display().to_string(),
            "--tlscert".to_owned(),
            self.path("server/cert.pem").display().to_string(),
            "--tlskey".to_owned(),
            self.path("server/key.pem").display().to_string(),
        ]
    }
}

/// A port nobody listens on at the moment.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A berth serve on a unix socket (the harness's) and on
/// tcp://127.0.0.1:PORT with client certificates required.
struct TlsServer {
    server: Server,
    certificates: Certificates,
    port: u16,
}

impl TlsServer {
    fn start() -> Option<Self> {
        Self::start_with(&[])
    }

    fn start_with(flags: &[&str]) -> Option<Self> {
        let certificates = Certificates::make()?;
        let port = free_port();
        let mut extra = vec!["-H".to_owned(), format!("tcp://127.0.0.1:{port}")];
        extra.extend(certificates.server_flags());
        extra.extend(flags.iter().map(|flag| flag.to_string()));
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let mut server = Server::start_with(&extra, true)?;
        // The unix socket is bound first; the TCP one follows at once.
        wait_until(10.0, "berth serve listening on TCP", || {
            assert!(
                server.child().try_wait().unwrap().is_none(),
                "berth serve exited"
            );
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        Some(Self {
            server,
            certificates,
            port,
        })
    }

    /// The docker CLI at tcp://127.0.0.1:PORT, as the client whose files
    /// are in `client` (a directory with ca.pem, and cert.pem and key.pem
    /// when it has a certificate).
    fn docker(&self, client: &str, args: &[&str], stdin: Option<&[u8]>) -> Run {
        let mut command = self.docker_command(client);
        command.args(args);
        Run {
            output: output_with_stdin(command, stdin),
        }
    }

    fn docker_command(&self, client: &str) -> Command {
        let directory = self.certificates.path(client);
        let mut command = self.server.docker_command();
        command
            .env_remove("DOCKER_HOST")
            .env_remove("DOCKER_TLS_VERIFY")
            // The CLI's default files, for the client without a
            // certificate: none there.
            .env("DOCKER_CERT_PATH", self.certificates.path("empty"))
            .args(["-H", &format!("tcp://127.0.0.1:{}", self.port)])
            .arg("--tlsverify")
            .arg("--tlscacert")
            .arg(directory.join("ca.pem"));
        if directory.join("cert.pem").exists() {
            command
                .arg("--tlscert")
                .arg(directory.join("cert.pem"))
                .arg("--tlskey")
                .arg(directory.join("key.pem"));
        }
        command
    }
}

impl TlsServer {
    /// `GET /version` through `openssl s_client` with `client`'s
    /// certificate: (stdout, stderr).
    fn s_client(&self, client: &str, version: &str) -> (String, String) {
        let directory = self.certificates.path(client);
        let mut command = Command::new("timeout");
        command
            .args(["30", "openssl", "s_client", "-quiet", version])
            .arg("-connect")
            .arg(format!("127.0.0.1:{}", self.port))
            .arg("-CAfile")
            .arg(directory.join("ca.pem"))
            .arg("-cert")
            .arg(directory.join("cert.pem"))
            .arg("-key")
            .arg(directory.join("key.pem"));
        let run = Run {
            output: output_with_stdin(
                command,
                Some(b"GET /version HTTP/1.1\r\nHost: berth\r\nConnection: close\r\n\r\n"),
            ),
        };
        (run.stdout(), run.stderr())
    }
}

#[test]
fn the_docker_cli_with_a_client_certificate_works_over_tls() {
    let Some(tls) = TlsServer::start() else {
        return;
    };
    let version = tls
        .docker(
            "client",
            &["version", "--format", "{{.Server.Version}} {{.Server.Os}}"],
            None,
        )
        .ok();
    assert_eq!(
        version.trim(),
        format!("{} linux", env!("CARGO_PKG_VERSION"))
    );

    let hello = tls
        .docker("client", &["run", "--rm", "busybox", "echo", "hello"], None)
        .ok();
    assert_eq!(hello, "hello\n");

    // A hijacked stream both ways: stdin reaches the container, and after
    // the CLI closes its sending side (TLS close_notify) output still
    // comes back.
    let echoed = tls
        .docker(
            "client",
            &[
                "run",
                "-i",
                "--rm",
                "busybox",
                "sh",
                "-c",
                "cat; sleep 1; echo after",
            ],
            Some(b"line one\nline two\n"),
        )
        .ok();
    assert_eq!(echoed, "line one\nline two\nafter\n");

    // More than the pump's and the sockets' buffers, each way.
    let input = vec![b'x'; 3 * 1024 * 1024 + 17];
    let counted = tls
        .docker(
            "client",
            &["run", "-i", "--rm", "busybox", "wc", "-c"],
            Some(&input),
        )
        .ok();
    assert_eq!(counted.trim(), input.len().to_string());
    let output = tls
        .docker(
            "client",
            &[
                "run",
                "--rm",
                "busybox",
                "head",
                "-c",
                "2500000",
                "/dev/zero",
            ],
            None,
        )
        .ok();
    assert_eq!(output.len(), 2_500_000);

    // exec -i: the other hijacked endpoint.
    let id = tls
        .docker("client", &["run", "-d", "busybox", "sleep", "60"], None)
        .ok();
    let id = id.trim();
    let executed = tls
        .docker(
            "client",
            &["exec", "-i", id, "sh", "-c", "tr a-z A-Z"],
            Some(b"through exec\n"),
        )
        .ok();
    assert_eq!(executed, "THROUGH EXEC\n");
    tls.docker("client", &["rm", "-f", id], None).ok();
}

#[test]
fn clients_without_a_certificate_of_the_ca_are_refused() {
    let Some(tls) = TlsServer::start() else {
        return;
    };
    for client in ["empty", "other"] {
        let refused = tls.docker(
            client,
            &["version", "--format", "{{.Server.Version}}"],
            None,
        );
        assert_ne!(refused.code(), 0, "{client}: {}", refused.stdout());
        let message = refused.stderr().to_lowercase();
        assert!(
            message.contains("certificate") || message.contains("tls"),
            "{client}: {message}"
        );
        // Nothing of the API was answered.
        assert!(refused.stdout().trim().is_empty(), "{}", refused.stdout());
    }
    // The docker CLI (Go) sends no certificate the server's CA list does
    // not name, so the other CA's certificate is only presented by
    // OpenSSL: refused by verification, while ours gets an answer (TLS 1.2
    // and 1.3).
    for version in ["-tls1_2", "-tls1_3"] {
        let (answer, log) = tls.s_client("client", version);
        assert!(
            answer.contains("\"ApiVersion\""),
            "{version}: {answer}\n{log}"
        );
        let (answer, log) = tls.s_client("other", version);
        assert!(!answer.contains("ApiVersion"), "{version}: {answer}");
        assert!(
            log.to_lowercase().contains("unknown ca"),
            "{version}: {log}"
        );
    }
    // A client that connects and sends no TLS at all gets nothing either.
    let mut plain = TcpStream::connect(("127.0.0.1", tls.port)).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    std::io::Write::write_all(&mut plain, b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut answer = Vec::new();
    let _ = std::io::Read::read_to_end(&mut plain, &mut answer);
    assert!(
        !String::from_utf8_lossy(&answer).contains("ApiVersion"),
        "{answer:?}"
    );
    // The server is still there for the good client.
    let version = tls
        .docker(
            "client",
            &["version", "--format", "{{.Server.Version}}"],
            None,
        )
        .ok();
    assert_eq!(version.trim(), env!("CARGO_PKG_VERSION"));
}

/// Runs `berth serve` with `args` (after a unix socket in a temp dir),
/// which must fail at once; returns its stderr. The server would exit by
/// itself after 5 s if it wrongly started. Checks that it left no socket
/// and that nothing listens on `port`.
fn serve_fails(args: &[&str], port: u16) -> String {
    let berth = support::Berth::new();
    let directory = tempfile::tempdir().unwrap();
    let socket = directory.path().join("docker.sock");
    let host = format!("unix://{}", socket.display());
    let mut all = vec!["serve", "--idle-timeout", "5s", "-H", &host];
    all.extend(args);
    let run = berth.run(&all);
    let stderr = run.fails(1);
    assert!(!socket.exists(), "{socket:?} left behind");
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "something listens on {port}"
    );
    stderr
}

#[test]
fn tcp_without_tlsverify_is_refused() {
    let Some(certificates) = Certificates::make() else {
        return;
    };
    let port = free_port();
    let tcp = format!("tcp://127.0.0.1:{port}");

    let stderr = serve_fails(&["-H", &tcp], port);
    assert!(stderr.contains("refusing to listen on"), "{stderr}");
    assert!(stderr.contains(&tcp), "{stderr}");
    assert!(stderr.contains("--tlsverify"), "{stderr}");
    assert!(stderr.contains("--tlscacert"), "{stderr}");

    // The files alone are not enough: verification must be asked for.
    let mut files: Vec<String> = certificates.server_flags();
    files.remove(0);
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    let mut args = vec!["-H", tcp.as_str()];
    args.extend(&files);
    let stderr = serve_fails(&args, port);
    assert!(stderr.contains("--tlsverify"), "{stderr}");

    // Server-only TLS (no client certificates) is refused too.
    for tls in ["--tls", "--tlsverify=false"] {
        let mut args = vec!["-H", tcp.as_str(), tls];
        args.extend(&files);
        let stderr = serve_fails(&args, port);
        assert!(
            stderr.contains("TLS without --tlsverify would let in any client"),
            "{tls}: {stderr}"
        );
    }
    // --tlsverify is for TCP; without a tcp:// host it is a mistake.
    let mut args = vec!["--tlsverify"];
    args.extend(&files);
    let stderr = serve_fails(&args, port);
    assert!(stderr.contains("no -H tcp://"), "{stderr}");
}

#[test]
fn bad_certificate_files_are_refused_naming_the_file() {
    let Some(certificates) = Certificates::make() else {
        return;
    };
    let port = free_port();
    let tcp = format!("tcp://127.0.0.1:{port}");
    let serve_with = |ca: &Path, certificate: &Path, key: &Path| {
        serve_fails(
            &[
                "-H",
                &tcp,
                "--tlsverify",
                "--tlscacert",
                ca.to_str().unwrap(),
                "--tlscert",
                certificate.to_str().unwrap(),
                "--tlskey",
                key.to_str().unwrap(),
            ],
            port,
        )
    };
    let ca = certificates.path("ca.pem");
    let certificate = certificates.path("server/cert.pem");
    let key = certificates.path("server/key.pem");

    let corrupt = certificates.path("corrupt-key.pem");
    fs_err::write(
        &corrupt,
        "-----BEGIN PRIVATE KEY-----\nnot*base64*at*all\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    let stderr = serve_with(&ca, &certificate, &corrupt);
    assert!(
        stderr.contains("failed to parse the TLS key (--tlskey)"),
        "{stderr}"
    );
    assert!(stderr.contains(corrupt.to_str().unwrap()), "{stderr}");

    // Well-formed PEM, but not a key.
    let garbage = certificates.path("garbage-key.pem");
    fs_err::write(
        &garbage,
        "-----BEGIN PRIVATE KEY-----\naGVsbG8gd29ybGQ=\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    let stderr = serve_with(&ca, &certificate, &garbage);
    assert!(stderr.contains(garbage.to_str().unwrap()), "{stderr}");

    // A good key, but not the certificate's.
    let other_key = certificates.path("client/key.pem");
    let stderr = serve_with(&ca, &certificate, &other_key);
    assert!(
        stderr.contains("failed to use the TLS certificate"),
        "{stderr}"
    );
    assert!(stderr.contains(other_key.to_str().unwrap()), "{stderr}");

    let empty = certificates.path("empty-key.pem");
    fs_err::write(&empty, "").unwrap();
    let stderr = serve_with(&ca, &certificate, &empty);
    assert!(stderr.contains("no private key in the TLS key"), "{stderr}");

    let missing = certificates.path("missing-ca.pem");
    let stderr = serve_with(&missing, &certificate, &key);
    assert!(
        stderr.contains("failed to read the TLS CA certificate (--tlscacert)"),
        "{stderr}"
    );
    assert!(stderr.contains(missing.to_str().unwrap()), "{stderr}");
    assert!(stderr.contains("No such file or directory"), "{stderr}");

    // A key given as the certificate: no certificate in it.
    let stderr = serve_with(&ca, &key, &key);
    assert!(
        stderr.contains("no certificate in the TLS certificate (--tlscert)"),
        "{stderr}"
    );
}

#[test]
fn threads_and_descriptors_end_when_clients_leave() {
    let Some(mut tls) = TlsServer::start() else {
        return;
    };
    let pid = tls.server.pid();
    let id = tls
        .docker("client", &["run", "-d", "busybox", "sleep", "120"], None)
        .ok();
    let id = id.trim().to_owned();
    tls.docker("client", &["version"], None).ok();
    std::thread::sleep(Duration::from_millis(500));
    let idle = resources(pid);
    println!("idle: {} descriptors, {} threads", idle.0, idle.1);

    // Long waits and hijacked streams whose client is killed (its TCP
    // connection closes without a word): the server notices, and the
    // connection's pump and handler threads end. `logs -f` of the silent
    // container writes nothing that would find its client gone: its
    // handler watches the connection, as `wait` and `events` do.
    let streams: [&[&str]; 4] = [
        &["wait", &id],
        &["events"],
        &["logs", "-f", &id],
        &["run", "-i", "--rm", "busybox", "cat"],
    ];
    for args in streams {
        let mut child = tls
            .docker_command("client")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_until(20.0, "the stream to open", || {
            resources(pid).1 >= idle.1 + 2
        });
        // Past the CLI's first calls (ping), into the stream itself.
        std::thread::sleep(Duration::from_millis(1500));
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let now = settle(pid, idle, 30);
    assert_eq!(now, idle, "(descriptors, threads) after the clients left");
    // The server still answers.
    tls.docker("client", &["rm", "-f", &id], None).ok();
    assert!(tls.server.child().try_wait().unwrap().is_none());
}

#[test]
fn idle_timeout_counts_tls_connections() {
    let Some(mut tls) = TlsServer::start_with(&["--idle-timeout", "2s"]) else {
        return;
    };
    // A stream longer than the timeout keeps the server up.
    let done = tls
        .docker(
            "client",
            &["run", "--rm", "busybox", "sh", "-c", "sleep 4; echo done"],
            None,
        )
        .ok();
    assert_eq!(done, "done\n");
    // Then it goes, once idle.
    let status = support::containers::wait_child(tls.server.child(), 20.0, "berth serve");
    assert!(status.success(), "{status:?}");
    assert!(TcpStream::connect(("127.0.0.1", tls.port)).is_err());
}
