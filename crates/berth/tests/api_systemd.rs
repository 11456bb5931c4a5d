//! contrib/systemd/berth.{socket,service}: the units are valid for
//! systemd, and the service's command line serves the sockets systemd
//! passes (LISTEN_FDS) and exits when idle, leaving the socket to systemd.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

#[path = "api/harness.rs"]
mod harness;
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use harness::raw_request;

fn unit(name: &str) -> String {
    fs_err::read_to_string(support::workspace_root().join("contrib/systemd").join(name)).unwrap()
}

/// The value of `key=` in a unit (the last one wins, as in systemd).
fn setting(text: &str, key: &str) -> Option<String> {
    text.lines()
        .rev()
        .find_map(|line| line.strip_prefix(&format!("{key}=")))
        .map(str::to_owned)
}

fn program(name: &str) -> Option<PathBuf> {
    let path = Path::new("/usr/bin").join(name);
    if path.exists() {
        Some(path)
    } else {
        eprintln!("SKIP: no {path:?} (Debian package systemd)");
        None
    }
}

#[test]
fn units_pass_systemd_analyze_verify() {
    let Some(analyze) = program("systemd-analyze") else {
        return;
    };
    // With ExecStart pointing at the binary under test (verify checks that
    // the program exists).
    let directory = tempfile::tempdir().unwrap();
    let service =
        unit("berth.service").replace("/usr/local/bin/berth", env!("CARGO_BIN_EXE_berth"));
    fs_err::write(directory.path().join("berth.service"), service).unwrap();
    fs_err::write(directory.path().join("berth.socket"), unit("berth.socket")).unwrap();
    let output = Command::new(analyze)
        .arg("verify")
        .arg(directory.path().join("berth.socket"))
        .arg(directory.path().join("berth.service"))
        .env("SYSTEMD_LOG_LEVEL", "warning")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    // Only complaints about our two units count (the host's own units may
    // have theirs).
    let ours: Vec<&str> = said
        .lines()
        .filter(|line| line.starts_with("berth.") || line.contains("/berth."))
        .collect();
    assert!(ours.is_empty(), "systemd-analyze verify:\n{said}");

    let socket = unit("berth.socket");
    assert_eq!(
        setting(&socket, "ListenStream").as_deref(),
        Some("/run/berth/docker.sock")
    );
    assert_eq!(setting(&socket, "SocketMode").as_deref(), Some("0660"));
    let service = unit("berth.service");
    assert_eq!(setting(&service, "KillMode").as_deref(), Some("process"));
    assert_eq!(
        setting(&service, "Requires").as_deref(),
        Some("berth.socket")
    );
}

#[test]
fn the_service_command_serves_systemds_socket_and_exits_when_idle() {
    let Some(activate) = program("systemd-socket-activate") else {
        return;
    };
    let exec_start = setting(&unit("berth.service"), "ExecStart").unwrap();
    let mut words = exec_start.split_whitespace();
    assert_eq!(words.next(), Some("/usr/local/bin/berth"));
    // The unit's arguments, with a short idle timeout for the test.
    let mut args: Vec<String> = words.map(str::to_owned).collect();
    assert_eq!(args[..3], ["serve", "-H", "fd://"], "{exec_start}");
    let timeout = args.iter().position(|arg| arg == "--idle-timeout").unwrap();
    args[timeout + 1] = "2s".to_owned();

    let berth = support::Berth::new();
    let directory = tempfile::tempdir().unwrap();
    let socket = directory.path().join("docker.sock");
    // systemd-socket-activate listens, then execs the server with the
    // socket as fd 3 and LISTEN_FDS=1, LISTEN_PID=its own pid.
    let mut child = Command::new(activate)
        .arg("--listen")
        .arg(&socket)
        .arg(env!("CARGO_BIN_EXE_berth"))
        .args(&args)
        .env("BERTH_ROOT", berth.root())
        .env("BERTH_RUN_ROOT", berth.run_root.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    support::containers::wait_until(10.0, "the activated socket", || socket.exists());
    let (status, _, body) =
        raw_request(&socket, b"GET /_ping HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!((status, body.as_slice()), (200, &b"OK"[..]));
    let (status, _, body) = raw_request(
        &socket,
        b"GET /v1.41/containers/json HTTP/1.1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200);
    assert_eq!(body, b"[]\n");
    let exit = support::containers::wait_child(&mut child, 20.0, "the idle server to exit");
    assert!(exit.success(), "{exit:?}");
    // The socket is systemd's: the server leaves it in place.
    assert!(socket.exists());
}
