//! 9. Binary size and engine start-up: the size on disk of what each engine
//!    needs installed, the time of its two most basic CLI commands, and for
//!    docker the start-up of a daemon (a private dockerd with its own
//!    directories and socket, no networking, started and stopped here)
//!    until its API answers. berth has no daemon: there is nothing to start
//!    before the first command.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::context::{reason, series, Context};
use crate::engine::Engine;
use crate::options::{EngineName, Metric};
use crate::process::{run as run_process, which};
use crate::procfs::process_table;
use crate::report::{format_value, Measurement, MetricReport, Unit};

const SIZE: &str = "binaries on disk";
const VERSION: &str = "CLI: version";
const PS: &str = "CLI: ps -q";
const DAEMON: &str = "daemon start-up, until the API answers";

/// What an engine needs on disk: (role, path).
fn binaries(engine: &Engine) -> Vec<(String, PathBuf)> {
    let mut found = vec![("CLI".to_owned(), engine.program.clone())];
    let running = |comm: &str| {
        process_table()
            .into_iter()
            .find(|process| process.comm == comm)
            .and_then(|process| process.exe)
    };
    let mut add = |role: &str, path: Option<PathBuf>| {
        if let Some(path) = path {
            found.push((role.to_owned(), path));
        }
    };
    match engine.name {
        EngineName::Berth => {}
        EngineName::Docker => {
            add("daemon", running("dockerd").or_else(|| which("dockerd")));
            add(
                "containerd",
                running("containerd").or_else(|| which("containerd")),
            );
            add("shim", which("containerd-shim-runc-v2"));
            add("runtime", which("runc"));
        }
        EngineName::Podman => {
            add("monitor", which("conmon"));
            add("runtime", which("crun").or_else(|| which("runc")));
        }
    }
    found
}

pub fn run(context: &mut Context) -> MetricReport {
    let plan = context.plan.clone();
    let mut report = MetricReport::new(
        Metric::Binary.id(),
        Metric::Binary.title(),
        format!(
            "Size of the binaries each engine runs (berth: one binary; docker: CLI, dockerd, \
             containerd, shim, runc; podman: CLI, conmon, OCI runtime). `ENGINE version` and \
             `ENGINE ps -q`, {} runs each after one warm-up (docker's version asks the \
             daemon too). Docker's daemon start-up: a private dockerd (own data root, exec \
             root and socket, --bridge=none, no iptables) from spawn until GET /_ping \
             answers, {} run(s).",
            plan.binary_runs,
            plan.binary_runs.min(3)
        ),
    );
    for engine in context.engines.clone() {
        let label = engine.label();
        let files = binaries(&engine);
        let mut total = 0u64;
        let mut parts = Vec::new();
        for (role, path) in &files {
            let size = fs_err::metadata(path)
                .map(|metadata| metadata.len())
                .unwrap_or(0);
            total += size;
            parts.push(format!(
                "{role} {} {}",
                path.display(),
                format_value(Unit::Bytes, size as f64)
            ));
        }
        report.fact(label, "binaries", parts.join("; "));
        let mut size = Measurement::new(SIZE, label, Unit::Bytes);
        size.set_samples(vec![total as f64]);
        report.measurements.push(size);
        for (name, args) in [(VERSION, &["version"][..]), (PS, &["ps", "-q"][..])] {
            context.log(format!("binary: {label} {}", args.join(" ")));
            let samples = series(plan.binary_runs, 1, || {
                run_process(&mut engine.command(args), Duration::from_secs(60))
                    .and_then(|finished| finished.check())
                    .map(|finished| finished.elapsed.as_secs_f64())
                    .map_err(reason)
            });
            report.measurements.push(Measurement::from_result(
                name,
                label,
                Unit::Seconds,
                samples,
            ));
        }
        match engine.name {
            EngineName::Berth => report.fact(
                label,
                "daemon",
                "none: each command starts, does its work and exits (see CLI: ps -q)",
            ),
            EngineName::Docker => {
                context.log("binary: starting a private dockerd");
                let samples = match which("dockerd") {
                    None => Err("dockerd not found in PATH".to_owned()),
                    Some(dockerd) => {
                        let scratch = context.scratch.clone();
                        series(plan.binary_runs.min(3), 0, || {
                            dockerd_start_up(&dockerd, &scratch)
                        })
                    }
                };
                report.measurements.push(Measurement::from_result(
                    DAEMON,
                    label,
                    Unit::Seconds,
                    samples,
                ));
            }
            EngineName::Podman => report.fact(label, "daemon", "none (conmon per container)"),
        }
    }
    for name in [SIZE, VERSION, PS] {
        report.compare_with(name, "berth", "berth");
    }
    report
}

/// Whether GET /_ping on `socket` answers 200.
fn pings(socket: &Path) -> bool {
    let Ok(mut stream) = UnixStream::connect(socket) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut response = [0u8; 16];
    let mut read = 0;
    while read < 12 {
        match stream.read(&mut response[read..]) {
            Ok(0) | Err(_) => break,
            Ok(count) => read += count,
        }
    }
    response.starts_with(b"HTTP/1.1 200") || response.starts_with(b"HTTP/1.0 200")
}

/// Starts a private dockerd, times it until its API answers, stops it and
/// removes its directories.
fn dockerd_start_up(dockerd: &Path, scratch: &Path) -> Result<f64, String> {
    let base = tempfile::Builder::new()
        .prefix("dockerd-")
        .tempdir_in(scratch)
        .map_err(|error| error.to_string())?;
    // Unix socket paths are short (108 bytes): keep the run-time paths in /run.
    let name = format!(
        "berth-bench-dockerd-{}-{}",
        std::process::id(),
        base.path()
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default()
    );
    let exec_root = PathBuf::from("/run").join(&name);
    let socket = PathBuf::from("/run").join(format!("{name}.sock"));
    let pidfile = PathBuf::from("/run").join(format!("{name}.pid"));
    let config = base.path().join("daemon.json");
    fs_err::write(&config, "{}\n").map_err(|error| error.to_string())?;
    let log_path = base.path().join("dockerd.log");
    let log = fs_err::File::create(&log_path)
        .map_err(|error| error.to_string())?
        .into_parts()
        .0;
    let log_err = log.try_clone().map_err(|error| error.to_string())?;
    let started = Instant::now();
    let mut child = Command::new(dockerd)
        .arg("--config-file")
        .arg(&config)
        .arg("--data-root")
        .arg(base.path().join("data"))
        .arg("--exec-root")
        .arg(&exec_root)
        .arg("--pidfile")
        .arg(&pidfile)
        .arg("--host")
        .arg(format!("unix://{}", socket.display()))
        .args([
            "--iptables=false",
            "--ip6tables=false",
            "--ip-masq=false",
            "--ip-forward=false",
            "--bridge=none",
            "--exec-opt",
            "native.cgroupdriver=cgroupfs",
            "--userland-proxy=false",
        ])
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .spawn()
        .map_err(|error| format!("failed to run dockerd: {error}"))?;
    let deadline = started + Duration::from_secs(60);
    let result = loop {
        if pings(&socket) {
            break Ok(started.elapsed().as_secs_f64());
        }
        if let Ok(Some(status)) = child.try_wait() {
            let log = fs_err::read_to_string(&log_path).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(3).collect();
            break Err(format!("dockerd exited ({status}): {}", tail.join(" / ")));
        }
        if Instant::now() > deadline {
            break Err("dockerd did not answer within 60 s".to_owned());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    stop(&mut child, &exec_root);
    for path in [&socket, &pidfile] {
        let _ = fs_err::remove_file(path);
    }
    let _ = fs_err::remove_dir_all(&exec_root);
    result
}

/// SIGTERM, 30 s, then SIGKILL (and the containerd it managed, by its pid
/// file, since that would outlive a killed dockerd).
fn stop(child: &mut std::process::Child, exec_root: &Path) {
    let pid = child.id() as libc::pid_t;
    // SAFETY: kill(2) with a pid of our own child that has not been reaped.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    if let Some(containerd) = fs_err::read_to_string(exec_root.join("containerd/containerd.pid"))
        .ok()
        .and_then(|text| text.trim().parse::<libc::pid_t>().ok())
    {
        // SAFETY: kill(2) with integer arguments; the pid is the containerd
        // this dockerd started (its own pid file in its own exec root).
        unsafe { libc::kill(containerd, libc::SIGTERM) };
    }
}
