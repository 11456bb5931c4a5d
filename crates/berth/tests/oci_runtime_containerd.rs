//! berth as containerd's runtime: Debian's containerd (1.6), started by this test on a
//! private socket, root and state directory (never the system's), runs the busybox fixture
//! through its runc v2 shim with `ctr run --runc-binary <berth-runc link>`; the same
//! commands with runc give the same exit codes and output. containerd is stopped after.
#![allow(clippy::unwrap_used)]

mod oci;
mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const NAMESPACE: &str = "berthtest";
const IMAGE: &str = "docker.io/library/busybox:latest";

struct Containerd {
    child: Child,
    dir: PathBuf,
}

impl Containerd {
    fn start(dir: &Path) -> Containerd {
        let config = dir.join("config.toml");
        fs_err::write(
            &config,
            format!(
                "version = 2\nroot = \"{0}/root\"\nstate = \"{0}/state\"\n\
                 disabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n\
                 [grpc]\n  address = \"{0}/containerd.sock\"\n\
                 [plugins.\"io.containerd.internal.v1.opt\"]\n  path = \"{0}/opt\"\n",
                dir.display()
            ),
        )
        .unwrap();
        let log = fs_err::File::create(dir.join("containerd.log")).unwrap();
        let child = Command::new("containerd")
            .arg("--config")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(log.into_file())
            .spawn()
            .unwrap();
        let containerd = Containerd {
            child,
            dir: dir.to_owned(),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while containerd.ctr(&["version"]).status.code() != Some(0) {
            assert!(
                Instant::now() < deadline,
                "containerd did not answer on its private socket"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        containerd
    }

    fn ctr_command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("ctr");
        command
            .arg("--address")
            .arg(self.dir.join("containerd.sock"))
            .arg("--namespace")
            .arg(NAMESPACE)
            .args(args)
            .stdin(Stdio::null());
        command
    }

    fn ctr(&self, args: &[&str]) -> std::process::Output {
        self.ctr_command(args).output().unwrap()
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        // Only the containerd this test started, by its pid.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.child.wait();
        // Anything still mounted below the test's directory (snapshots) goes too.
        support::containers::detach_mounts_under(&self.dir);
    }
}

fn available() -> bool {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: containerd tests need root");
        return false;
    }
    for program in ["containerd", "ctr", "containerd-shim-runc-v2"] {
        if Command::new("sh")
            .args(["-c", &format!("command -v {program}")])
            .output()
            .map_or(true, |output| !output.status.success())
        {
            eprintln!("skipped: {program} is not installed");
            return false;
        }
    }
    true
}

fn text(output: &std::process::Output) -> (i32, String) {
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

/// Processes whose command line mentions `dir` (the shims of this test's containerd).
fn processes_under(dir: &Path) -> Vec<i32> {
    let needle = dir.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in fs_err::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = fs_err::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(&needle) {
            found.push(pid);
        }
    }
    found
}

#[test]
fn ctr_runs_containers_through_berth_as_through_runc() {
    if !available() {
        return;
    }
    // A short path: containerd's sockets must fit sockaddr_un.
    let dir = tempfile::Builder::new()
        .prefix("bctr")
        .tempdir_in("/tmp")
        .unwrap();
    let link = oci::berth_runc(dir.path());
    let containerd = Containerd::start(dir.path());
    let imported = containerd.ctr(&[
        "images",
        "import",
        support::fixture("busybox-docker.tar").to_str().unwrap(),
    ]);
    assert!(
        imported.status.success(),
        "{}",
        String::from_utf8_lossy(&imported.stderr)
    );
    let mut runtimes = vec![("berth", link.clone())];
    if oci::runc_available() {
        runtimes.push(("runc", PathBuf::from("runc")));
    } else {
        eprintln!("runc is not installed: berth's results are not compared with runc's");
    }
    let mut transcripts = Vec::new();
    for (name, binary) in &runtimes {
        let root = dir.path().join(format!("runtime-root-{name}"));
        let common = |id: &str| {
            vec![
                "--runc-binary".to_owned(),
                binary.to_string_lossy().into_owned(),
                "--runc-root".to_owned(),
                root.to_string_lossy().into_owned(),
                "--cgroup".to_owned(),
                format!("{}/ctr-{id}", oci::CGROUP_PARENT),
            ]
        };
        let mut steps: Vec<(&str, (i32, String))> = Vec::new();
        // ctr run --rm, in the foreground.
        let id = format!("fg-{name}");
        let mut args = vec!["run".to_owned(), "--rm".to_owned()];
        args.extend(common(&id));
        args.extend([
            IMAGE.to_owned(),
            id.clone(),
            "sh".into(),
            "-c".into(),
            "echo hi; grep -q ctr-fg /proc/self/cgroup && echo in-its-cgroup; exit 3".into(),
        ]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        steps.push(("run --rm", text(&containerd.ctr(&args))));
        // Detached, then the task verbs.
        let id = format!("bg-{name}");
        let mut args = vec!["run".to_owned(), "-d".to_owned()];
        args.extend(common(&id));
        args.extend([IMAGE.to_owned(), id.clone(), "sleep".into(), "100".into()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        steps.push(("run -d", text(&containerd.ctr(&args))));
        steps.push((
            "exec",
            text(&containerd.ctr(&[
                "task",
                "exec",
                "--exec-id",
                "e1",
                &id,
                "sh",
                "-c",
                "echo exec; exit 5",
            ])),
        ));
        let ps = containerd.ctr(&["task", "ps", &id]);
        steps.push((
            "ps lines",
            (
                ps.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&ps.stdout)
                    .lines()
                    .count()
                    .to_string(),
            ),
        ));
        steps.push(("pause", text(&containerd.ctr(&["task", "pause", &id]))));
        let status = |containerd: &Containerd| {
            let list = containerd.ctr(&["task", "ls"]);
            String::from_utf8_lossy(&list.stdout)
                .lines()
                .find(|line| line.starts_with(&format!("{id} ")))
                .and_then(|line| line.split_whitespace().nth(2).map(str::to_owned))
                .unwrap_or_default()
        };
        steps.push(("status paused", (0, status(&containerd))));
        steps.push(("resume", text(&containerd.ctr(&["task", "resume", &id]))));
        steps.push(("status running", (0, status(&containerd))));
        steps.push((
            "kill",
            text(&containerd.ctr(&["task", "kill", "-s", "KILL", &id])),
        ));
        let deadline = Instant::now() + Duration::from_secs(10);
        while status(&containerd) != "STOPPED" {
            assert!(Instant::now() < deadline, "{name}: the task never stopped");
            std::thread::sleep(Duration::from_millis(20));
        }
        steps.push(("task rm", text(&containerd.ctr(&["task", "rm", &id]))));
        steps.push((
            "container rm",
            text(&containerd.ctr(&["container", "rm", &id])),
        ));
        // With a terminal (ctr needs one of its own: script(1) gives it a pty).
        let id = format!("tty-{name}");
        let mut args = vec!["run".to_owned(), "-t".to_owned(), "--rm".to_owned()];
        args.extend(common(&id));
        args.extend([
            IMAGE.to_owned(),
            id.clone(),
            "sh".into(),
            "-c".into(),
            "tty; echo done".into(),
        ]);
        let line = std::iter::once("ctr".to_owned())
            .chain([
                "--address".to_owned(),
                dir.path()
                    .join("containerd.sock")
                    .to_string_lossy()
                    .into_owned(),
                "--namespace".to_owned(),
                NAMESPACE.to_owned(),
            ])
            .chain(args)
            .map(|arg| format!("'{arg}'"))
            .collect::<Vec<_>>()
            .join(" ");
        let out = Command::new("script")
            .args(["-qec", &line, "/dev/null"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let tty_text = String::from_utf8_lossy(&out.stdout)
            .replace(['\r', '\0'], "")
            .replace("^@", "");
        steps.push(("run -t", (out.status.code().unwrap_or(-1), tty_text)));
        // A failing create: containerd reads the runtime's JSON log (`--log-format json`)
        // back to say why.
        let id = format!("fail-{name}");
        let mut args = vec!["run".to_owned(), "--rm".to_owned()];
        args.extend(common(&id));
        args.extend([IMAGE.to_owned(), id.clone(), "no-such-program".into()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let failed = containerd.ctr(&args);
        let stderr = String::from_utf8_lossy(&failed.stderr).into_owned();
        assert!(
            stderr.contains("executable file not found in $PATH"),
            "{name}: ctr should pass on the runtime's reason: {stderr}"
        );
        steps.push((
            "run of a missing program",
            (failed.status.code().unwrap_or(-1), String::new()),
        ));
        let _ = containerd.ctr(&["container", "rm", &id]);
        // Nothing of the containers is left in the runtime's root (containerd keeps its
        // namespace directory there).
        let left: Vec<_> = fs_err::read_dir(root.join(NAMESPACE))
            .map(|entries| entries.flatten().map(|entry| entry.file_name()).collect())
            .unwrap_or_default();
        assert!(
            left.is_empty(),
            "{name}: left in the runtime root: {left:?}"
        );
        transcripts.push((name, steps));
    }
    let berth = &transcripts[0].1;
    assert_eq!(
        berth[0].1,
        (3, "hi\nin-its-cgroup\n".to_owned()),
        "berth: ctr run --rm"
    );
    assert_eq!(berth[2].1, (5, "exec\n".to_owned()), "berth: ctr task exec");
    let tty = berth.iter().find(|step| step.0 == "run -t").unwrap();
    assert_eq!(
        tty.1,
        (0, "/dev/pts/0\ndone\n".to_owned()),
        "berth: ctr run -t"
    );
    for (name, steps) in &transcripts[1..] {
        assert_eq!(berth, steps, "berth vs {name}");
    }
    drop(containerd);
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        processes_under(dir.path()).is_empty(),
        "processes of the test's containerd left: {:?}",
        processes_under(dir.path())
    );
    for entry in fs_err::read_dir("/sys/fs/cgroup").unwrap().flatten() {
        let parent = entry.path().join(oci::CGROUP_PARENT);
        if let Ok(children) = fs_err::read_dir(&parent) {
            for child in children.flatten() {
                if child.file_name().to_string_lossy().starts_with("ctr-") && child.path().is_dir()
                {
                    let left = child.path();
                    let _ = fs_err::remove_dir(&left);
                    panic!("cgroup left behind: {left:?}");
                }
            }
        }
        let _ = fs_err::remove_dir(parent);
    }
}
