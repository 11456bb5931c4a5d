//! berth as one of dockerd's runtimes (`daemon.json` `runtimes`, `docker run --runtime
//! berth`): a dockerd of this test's own (its own data root, exec root, socket, cgroup parent
//! and bridge `berthoci0`; never the engine other tests use, never docker0), the same
//! `docker` commands with `--runtime berth` and `--runtime runc`, the same results. The
//! engine and its bridge are removed after.
#![allow(clippy::unwrap_used)]

mod oci;
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BRIDGE: &str = "berthoci0";
const BRIDGE_ADDRESS: &str = "10.239.77.1/24";
const CGROUP_PARENT: &str = "berth-oci-docker";

struct Engine {
    dir: PathBuf,
    pid: i32,
}

impl Engine {
    fn socket(&self) -> String {
        format!("unix://{}", self.dir.join("sock").display())
    }

    fn docker(&self, args: &[&str]) -> (i32, String) {
        let output = Command::new("docker")
            .arg("-H")
            .arg(self.socket())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // This test's dockerd, by its pid; it stops its containerd and containers itself.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.pid),
            nix::sys::signal::Signal::SIGTERM,
        );
        let deadline = Instant::now() + Duration::from_secs(40);
        while Path::new(&format!("/proc/{}", self.pid)).exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        support::containers::detach_mounts_under(&self.dir);
        let _ = Command::new("ip")
            .args(["link", "del", BRIDGE])
            .stderr(Stdio::null())
            .status();
        if let Ok(entries) = fs_err::read_dir("/sys/fs/cgroup") {
            for entry in entries.flatten() {
                let _ = fs_err::remove_dir(entry.path().join(CGROUP_PARENT));
            }
        }
    }
}

fn available() -> bool {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: the dockerd test needs root");
        return false;
    }
    for program in ["dockerd", "docker", "runc"] {
        if Command::new("sh")
            .args(["-c", &format!("command -v {program}")])
            .output()
            .map_or(true, |output| !output.status.success())
        {
            eprintln!("skipped: {program} is not installed");
            return false;
        }
    }
    if Path::new("/sys/class/net").join(BRIDGE).exists() {
        eprintln!("skipped: the bridge {BRIDGE} exists already (another run of this test?)");
        return false;
    }
    true
}

fn start_engine(dir: &Path, link: &Path) -> Engine {
    fs_err::write(
        dir.join("daemon.json"),
        serde_json::to_vec(&serde_json::json!({"runtimes": {"berth": {"path": link}}})).unwrap(),
    )
    .unwrap();
    for args in [
        vec!["link", "add", BRIDGE, "type", "bridge"],
        vec!["addr", "add", BRIDGE_ADDRESS, "dev", BRIDGE],
        vec!["link", "set", BRIDGE, "up"],
    ] {
        assert!(
            Command::new("ip").args(&args).status().unwrap().success(),
            "ip {args:?}"
        );
    }
    let log = fs_err::File::create(dir.join("dockerd.log")).unwrap();
    let child = Command::new("dockerd")
        .arg("--config-file")
        .arg(dir.join("daemon.json"))
        .arg("--data-root")
        .arg(dir.join("data"))
        .arg("--exec-root")
        .arg(dir.join("exec"))
        .arg("--pidfile")
        .arg(dir.join("dockerd.pid"))
        .arg("--host")
        .arg(format!("unix://{}", dir.join("sock").display()))
        .args([
            "--iptables=false",
            "--ip6tables=false",
            "--ip-masq=false",
            "--ip-forward=false",
        ])
        .arg(format!("--bridge={BRIDGE}"))
        .args([
            "--exec-opt",
            "native.cgroupdriver=cgroupfs",
            "--cgroup-parent",
            CGROUP_PARENT,
            "--userland-proxy=false",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log.into_file())
        .spawn()
        .unwrap();
    let engine = Engine {
        dir: dir.to_owned(),
        pid: child.id() as i32,
    };
    // Reaped by the kernel's init once this test exits; its pid is what Drop signals.
    std::mem::forget(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    while engine.docker(&["version"]).0 != 0 {
        assert!(
            Instant::now() < deadline,
            "the test's dockerd did not answer; see {}",
            dir.join("dockerd.log").display()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    engine
}

#[test]
fn docker_runs_containers_through_berth_as_through_runc() {
    if !available() {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("bdk")
        .tempdir_in("/tmp")
        .unwrap();
    let link = oci::berth_runc(dir.path());
    let engine = start_engine(dir.path(), &link);
    assert_eq!(
        engine
            .docker(&[
                "load",
                "-i",
                support::fixture("busybox-docker.tar").to_str().unwrap()
            ])
            .0,
        0
    );
    let mut transcripts = Vec::new();
    for runtime in ["berth", "runc"] {
        // One name for both (the first is removed before the second starts): the outputs name it.
        let name = "berth-oci-c".to_owned();
        let mut steps: Vec<(&str, (i32, String))> = Vec::new();
        steps.push((
            "run --rm",
            engine.docker(&[
                "run",
                "--rm",
                "--runtime",
                runtime,
                "--network",
                "none",
                "busybox",
                "sh",
                "-c",
                "echo hi; exit 3",
            ]),
        ));
        steps.push((
            "run with limits",
            engine.docker(&[
                "run", "--rm", "--runtime", runtime, "--read-only", "--cap-drop", "ALL", "--user", "1000", "--pids-limit", "10",
                "--memory", "64m", "--hostname", "h1", "busybox", "sh", "-c",
                "id -u; hostname; grep -E 'Cap(Eff|Bnd)|NoNewPrivs' /proc/self/status; touch /x 2>/dev/null; echo $?",
            ]),
        ));
        // Docker's bridge network comes through libnetwork's prestart hook.
        steps.push((
            "run -d",
            engine.docker(&[
                "run",
                "-d",
                "--name",
                &name,
                "--runtime",
                runtime,
                "busybox",
                "sleep",
                "100",
            ]),
        ));
        steps.last_mut().unwrap().1 .1 = String::new(); // the container id
        steps.push((
            "exec",
            engine.docker(&[
                "exec",
                &name,
                "sh",
                "-c",
                "echo ex; ip -o -4 addr | wc -l; exit 4",
            ]),
        ));
        let (code, top) = engine.docker(&["top", &name]);
        steps.push(("top lines", (code, top.lines().count().to_string())));
        steps.push(("pause", engine.docker(&["pause", &name])));
        steps.push((
            "status",
            engine.docker(&["inspect", "-f", "{{.State.Status}}", &name]),
        ));
        steps.push(("unpause", engine.docker(&["unpause", &name])));
        steps.push(("stop", engine.docker(&["stop", "-t", "1", &name])));
        steps.push((
            "exit",
            engine.docker(&[
                "inspect",
                "-f",
                "{{.State.Status}} {{.State.ExitCode}}",
                &name,
            ]),
        ));
        steps.push(("rm", engine.docker(&["rm", &name])));
        transcripts.push((runtime, steps));
    }
    let berth = &transcripts[0].1;
    assert_eq!(berth[0].1, (3, "hi\n".to_owned()));
    assert_eq!(
        berth[3].1,
        (4, "ex\n2\n".to_owned()),
        "exec: lo and eth0 from Docker's network"
    );
    assert_eq!(berth[6].1, (0, "paused\n".to_owned()));
    assert_eq!(berth[9].1, (0, "exited 137\n".to_owned()));
    assert_eq!(berth, &transcripts[1].1, "berth vs runc under dockerd");
    drop(engine);
    assert!(
        !Path::new("/sys/class/net").join(BRIDGE).exists(),
        "bridge left"
    );
}
