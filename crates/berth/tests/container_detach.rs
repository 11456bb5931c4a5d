//! Detach keys and the attached CLI's signals, driven through a real
//! pseudo-terminal as a user's shell would: `run -it`, `start -ai`,
//! `attach` and `exec -it` leave with ctrl-p,ctrl-q (or `--detach-keys`,
//! or config.json's `detachKeys`) while the container runs on; a broken
//! sequence reaches the container; `--sig-proxy` forwards what the CLI
//! receives. Where a Docker engine is reachable (`BERTH_TEST_DOCKER_HOST`)
//! each case runs against Docker 20.10's CLI and engine too, so that the
//! expectations are Docker's.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::containers::{wait_child, wait_until};
use support::{output_with_stdin, Berth, Run};

const CTRL_P: &[u8] = &[0x10];
const CTRL_Q: &[u8] = &[0x11];

/// The CLI a case drives.
enum Cli<'a> {
    Berth(&'a Berth),
    /// Docker 20.10's CLI (`BERTH_TEST_DOCKER_CLI`, else /usr/bin/docker)
    /// against the engine at `host`.
    Docker {
        cli: PathBuf,
        host: String,
    },
}

impl Cli<'_> {
    fn name(&self) -> &'static str {
        match self {
            Cli::Berth(_) => "berth",
            Cli::Docker { .. } => "docker",
        }
    }

    /// The CLI with `DOCKER_CONFIG` at `config` (an empty directory unless
    /// the case writes a config.json there).
    fn command(&self, config: &Path) -> Command {
        let mut command = match self {
            Cli::Berth(berth) => berth.command(),
            Cli::Docker { cli, host } => {
                let mut command = Command::new(cli);
                command
                    .env("DOCKER_HOST", host)
                    .env_remove("DOCKER_CONTEXT");
                command
            }
        };
        command.env("DOCKER_CONFIG", config);
        command
    }

    fn run(&self, args: &[&str]) -> Run {
        let config = tempfile::tempdir().unwrap();
        let mut command = self.command(config.path());
        command.args(args);
        Run {
            output: output_with_stdin(command, None),
        }
    }

    /// A container name unique on a shared Docker engine.
    fn container(&self, suffix: &str) -> String {
        format!("berth-detach-{}-{suffix}", std::process::id())
    }

    fn running(&self, container: &str) -> bool {
        self.run(&["inspect", "--format", "{{.State.Running}}", container])
            .ok()
            .trim()
            == "true"
    }

    /// What the container's processes are (`top`'s last column).
    fn commands(&self, container: &str) -> String {
        self.run(&["top", container]).ok()
    }
}

/// Removes the named containers when dropped, whatever the outcome.
struct Cleanup<'c, 'a>(&'c Cli<'a>, Vec<String>);

impl Drop for Cleanup<'_, '_> {
    fn drop(&mut self) {
        let mut args = vec!["rm", "-f"];
        args.extend(self.1.iter().map(String::as_str));
        let _ = self.0.run(&args);
    }
}

fn docker_cli() -> Option<PathBuf> {
    let path = std::env::var_os("BERTH_TEST_DOCKER_CLI")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/docker"));
    if path.exists() {
        Some(path)
    } else {
        eprintln!("SKIP: no docker CLI at {path:?} (set BERTH_TEST_DOCKER_CLI)");
        None
    }
}

/// Runs `case` with berth's CLI, then with Docker's where an engine is
/// reachable (busybox loaded into it first when missing).
fn each_cli(case: impl Fn(&Cli<'_>)) {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    case(&Cli::Berth(&berth));
    let (Some(host), Some(cli)) = (support::docker_host(), docker_cli()) else {
        return;
    };
    let present = support::docker(&host, &["image", "inspect", "busybox:latest"]);
    if !present.status.success() {
        let archive = support::fixture("busybox-docker.tar");
        let loaded = support::docker(&host, &["load", "-q", "-i", archive.to_str().unwrap()]);
        assert!(loaded.status.success(), "docker load: {loaded:?}");
    }
    case(&Cli::Docker { cli, host });
}

/// A command on a pseudo-terminal of its own, its controlling terminal as
/// in a login shell. The terminal starts raw, so what the test types
/// reaches the CLI as typed whenever the CLI reads it (a cooked terminal
/// would hold keys, and take ctrl-q, before the CLI sets raw mode).
struct Terminal {
    child: Child,
    keyboard: std::fs::File,
    output: Arc<Mutex<Vec<u8>>>,
    reader: std::thread::JoinHandle<()>,
}

impl Terminal {
    fn start(mut command: Command) -> Self {
        let size = nix::pty::Winsize {
            ws_row: 24,
            ws_col: 80,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pty = nix::pty::openpty(Some(&size), None).unwrap();
        // openpty(3) makes inheritable descriptors: the CLI (and whatever it
        // forks, a monitor) must get the slave as its stdio only.
        for fd in [&pty.master, &pty.slave] {
            nix::fcntl::fcntl(
                std::os::fd::AsRawFd::as_raw_fd(fd),
                nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
            )
            .unwrap();
        }
        let mut mode = nix::sys::termios::tcgetattr(&pty.slave).unwrap();
        nix::sys::termios::cfmakeraw(&mut mode);
        nix::sys::termios::tcsetattr(&pty.slave, nix::sys::termios::SetArg::TCSANOW, &mode)
            .unwrap();
        let slave = |fd: &OwnedFd| Stdio::from(fd.try_clone().unwrap());
        command
            .stdin(slave(&pty.slave))
            .stdout(slave(&pty.slave))
            .stderr(slave(&pty.slave));
        // SAFETY: setsid and the TIOCSCTTY ioctl are async-signal-safe.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut command, || {
                nix::libc::setsid();
                nix::libc::ioctl(0, nix::libc::TIOCSCTTY, 0);
                Ok(())
            });
        }
        let child = command.spawn().unwrap();
        // The command and `pty` hold copies of the slave until dropped.
        drop(command);
        drop(pty.slave);
        let keyboard = std::fs::File::from(pty.master.try_clone().unwrap());
        let output = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&output);
        let mut master = std::fs::File::from(pty.master);
        let reader = std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            // EIO once no process holds the slave any more.
            while let Ok(read) = master.read(&mut buffer) {
                if read == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buffer[..read]);
            }
        });
        Self {
            child,
            keyboard,
            output,
            reader,
        }
    }

    /// Types each of `keys` as one key press (its own write, a moment
    /// apart, as a person types: docker/cli reads them one at a time).
    fn type_keys(&mut self, keys: &[&[u8]]) {
        for key in keys {
            self.keyboard.write_all(key).unwrap();
            std::thread::sleep(Duration::from_millis(150));
        }
    }

    fn output(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().unwrap()).replace('\r', "")
    }

    #[track_caller]
    fn wait_for(&self, text: &str) {
        wait_until(30.0, &format!("{text:?} on the terminal"), || {
            self.output().contains(text)
        });
        // Let the CLI settle (docker/cli's input copy starts after its
        // output copy).
        std::thread::sleep(Duration::from_millis(300));
    }

    /// Waits for the CLI to exit, then for the terminal to be released:
    /// nothing (the container's monitor included) may still hold it.
    #[track_caller]
    fn finish(mut self, what: &str) -> (ExitStatus, String) {
        let status = wait_child(&mut self.child, 30.0, what);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.reader.is_finished() {
            assert!(
                Instant::now() < deadline,
                "{what}: the terminal is still held after the CLI exited: {:?}",
                self.output()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let output = self.output();
        (status, output)
    }
}

fn terminal(cli: &Cli<'_>, config: &Path, args: &[&str]) -> Terminal {
    let mut command = cli.command(config);
    command.args(args);
    Terminal::start(command)
}

#[test]
fn run_it_detaches_silently_and_attach_joins_again() {
    each_cli(|cli| {
        let config = tempfile::tempdir().unwrap();
        let name = cli.container("run");
        let _cleanup = Cleanup(cli, vec![name.clone()]);
        let args = ["run", "-it", "--network", "none", "--name", &name];
        let mut run = terminal(
            cli,
            config.path(),
            &[&args[..], &["busybox", "sh", "-c", "echo ready; exec cat"]].concat(),
        );
        run.wait_for("ready");
        run.type_keys(&[b"one\r"]);
        run.wait_for("one");
        run.type_keys(&[CTRL_P, CTRL_Q]);
        // docker/cli's `run` detaches without a word, with status 0.
        let (status, output) = run.finish("run -it");
        assert_eq!(status.code(), Some(0), "{}: {output:?}", cli.name());
        assert!(!output.contains("escape"), "{}: {output:?}", cli.name());
        assert!(cli.running(&name), "{}", cli.name());

        // `attach` joins again, and says why it ended (status 1).
        let mut attach = terminal(cli, config.path(), &["attach", &name]);
        std::thread::sleep(Duration::from_secs(1));
        attach.type_keys(&[b"two\r"]);
        attach.wait_for("two");
        attach.type_keys(&[CTRL_P, CTRL_Q]);
        let (status, output) = attach.finish("attach");
        assert_eq!(status.code(), Some(1), "{}: {output:?}", cli.name());
        assert!(
            output.ends_with("read escape sequence\n"),
            "{}: {output:?}",
            cli.name()
        );
        assert!(cli.running(&name), "{}", cli.name());
    });
}

#[test]
fn start_ai_detaches_silently() {
    each_cli(|cli| {
        let config = tempfile::tempdir().unwrap();
        let name = cli.container("start");
        let _cleanup = Cleanup(cli, vec![name.clone()]);
        cli.run(&[
            "create",
            "-it",
            "--network",
            "none",
            "--name",
            &name,
            "busybox",
            "sh",
            "-c",
            "echo ready; exec cat",
        ])
        .ok();
        let mut start = terminal(cli, config.path(), &["start", "-ai", &name]);
        start.wait_for("ready");
        start.type_keys(&[CTRL_P, CTRL_Q]);
        let (status, output) = start.finish("start -ai");
        assert_eq!(status.code(), Some(0), "{}: {output:?}", cli.name());
        assert!(!output.contains("escape"), "{}: {output:?}", cli.name());
        assert!(cli.running(&name), "{}", cli.name());
    });
}

/// ctrl-p then another key sends both; ctrl-p ctrl-p ctrl-q detaches
/// nobody (the second ctrl-p breaks the first sequence and starts none).
/// (ctrl-q itself is the terminal's START character, which the
/// container's terminal takes: `od` never sees it.)
#[test]
fn a_broken_sequence_reaches_the_container() {
    each_cli(|cli| {
        let config = tempfile::tempdir().unwrap();
        let mut run = terminal(
            cli,
            config.path(),
            &[
                "run",
                "-it",
                "--rm",
                "--network",
                "none",
                "busybox",
                "sh",
                "-c",
                "echo ready; exec od -c",
            ],
        );
        run.wait_for("ready");
        run.type_keys(&[CTRL_P, b"a", CTRL_P, CTRL_P, CTRL_Q, b"\r", &[0x04]]);
        let (status, output) = run.finish("run -it od");
        assert_eq!(status.code(), Some(0), "{}: {output:?}", cli.name());
        assert!(
            output.contains("0000000 020   a 020 020  \\n\n0000005\n"),
            "{}: {output:?}",
            cli.name()
        );
    });
}

/// `detachKeys` in `$DOCKER_CONFIG/config.json` replaces ctrl-p,ctrl-q;
/// `--detach-keys` replaces both.
#[test]
fn detach_keys_come_from_the_flag_then_config_json() {
    each_cli(|cli| {
        let config = tempfile::tempdir().unwrap();
        fs_err::write(
            config.path().join("config.json"),
            r#"{"detachKeys": "ctrl-x"}"#,
        )
        .unwrap();
        let name = cli.container("keys");
        let _cleanup = Cleanup(cli, vec![name.clone()]);
        let args = ["run", "-it", "--network", "none", "--name", &name];
        let mut run = terminal(
            cli,
            config.path(),
            &[&args[..], &["busybox", "sh", "-c", "echo ready; exec cat"]].concat(),
        );
        run.wait_for("ready");
        // The default sequence is an ordinary one now (cat's terminal
        // echoes ctrl-p as ^P and takes ctrl-q).
        run.type_keys(&[CTRL_P, CTRL_Q, b"after\r"]);
        run.wait_for("^Pafter");
        run.type_keys(&[&[0x18]]);
        let (status, output) = run.finish("run -it with config.json's keys");
        assert_eq!(status.code(), Some(0), "{}: {output:?}", cli.name());
        assert!(cli.running(&name), "{}", cli.name());

        let mut attach = terminal(
            cli,
            config.path(),
            &["attach", "--detach-keys=ctrl-a,b", &name],
        );
        std::thread::sleep(Duration::from_secs(1));
        attach.type_keys(&[&[0x18], b"x\r"]);
        attach.wait_for("^Xx");
        attach.type_keys(&[&[0x01], b"b"]);
        let (status, output) = attach.finish("attach --detach-keys");
        assert_eq!(status.code(), Some(1), "{}: {output:?}", cli.name());
        assert!(
            output.ends_with("read escape sequence\n"),
            "{}: {output:?}",
            cli.name()
        );
        assert!(cli.running(&name), "{}", cli.name());
    });
}

/// `exec -it` detaches as `attach` does, and the exec's process runs on.
#[test]
fn exec_it_detaches_and_its_process_runs_on() {
    each_cli(|cli| {
        let config = tempfile::tempdir().unwrap();
        let name = cli.container("exec");
        let _cleanup = Cleanup(cli, vec![name.clone()]);
        cli.run(&[
            "run",
            "-d",
            "--network",
            "none",
            "--name",
            &name,
            "busybox",
            "sleep",
            "300",
        ])
        .ok();
        let mut exec = terminal(
            cli,
            config.path(),
            &[
                "exec",
                "-it",
                &name,
                "sh",
                "-c",
                "echo ready; while true; do echo tick; sleep 0.2; done",
            ],
        );
        exec.wait_for("ready");
        exec.wait_for("tick");
        exec.type_keys(&[CTRL_P, CTRL_Q]);
        let (status, output) = exec.finish("exec -it");
        assert_eq!(status.code(), Some(1), "{}: {output:?}", cli.name());
        assert!(
            output.ends_with("read escape sequence\n"),
            "{}: {output:?}",
            cli.name()
        );
        // Still printing ticks, to nobody: its terminal is drained.
        std::thread::sleep(Duration::from_secs(1));
        let top = cli.commands(&name);
        assert!(top.contains("echo ready"), "{}: {top}", cli.name());
    });
}

/// berth refuses keys it cannot parse before anything is made, in
/// dockerd's words. (Docker 20.10's CLI warns, prints the engine's refusal
/// of the attach and then starts the container anyway: not followed.)
#[test]
fn bad_detach_keys_are_refused_before_anything_is_made() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    for keys in ["foo", "ctrl-1", "CTRL-P", "a,,b"] {
        let flag = format!("--detach-keys={keys}");
        for mode in [&[][..], &["-t"], &["-d"]] {
            let args = [&["run"][..], mode, &[&flag, "busybox", "true"]].concat();
            let stderr = berth.run(&args).fails(125);
            assert_eq!(
                stderr,
                format!("Error: Invalid detach keys ({keys}) provided\n")
            );
        }
    }
    assert_eq!(berth.run(&["ps", "-aq"]).ok(), "");
    let id = berth.run_detached(&["-it", "busybox", "cat"]);
    let stderr = berth.run(&["attach", "--detach-keys=nope", &id]).fails(1);
    assert_eq!(stderr, "Error: Invalid detach keys (nope) provided\n");
    let stderr = berth
        .run(&["exec", "--detach-keys=nope", &id, "true"])
        .fails(1);
    assert_eq!(stderr, "Error: Invalid escape keys (nope) provided\n");
    let created = berth.run(&["create", "busybox", "true"]).ok();
    let created = created.trim();
    let stderr = berth
        .run(&["start", "--detach-keys=nope", created])
        .fails(1);
    assert_eq!(stderr, "Error: Invalid detach keys (nope) provided\n");
    assert_eq!(berth.status(created), "created");

    // config.json's value is checked where it would be used.
    let config = tempfile::tempdir().unwrap();
    fs_err::write(
        config.path().join("config.json"),
        r#"{"detachKeys": "bad"}"#,
    )
    .unwrap();
    let mut command = berth.command();
    command
        .env("DOCKER_CONFIG", config.path())
        .args(["attach", &id]);
    let refused = Terminal::start(command);
    let (status, output) = refused.finish("attach with bad config.json keys");
    assert_eq!(status.code(), Some(1), "{output:?}");
    assert_eq!(output, "Error: Invalid detach keys (bad) provided\n");
}

/// `--sig-proxy` (the default): every signal the CLI receives that Docker
/// 20.10's CLI forwards reaches the container, three SIGINTs included,
/// which do not end the CLI (docker/cli 28.2 gives up after three;
/// 20.10 does not). The CLI then exits with the container's status.
#[test]
fn signals_sent_to_the_cli_reach_the_container() {
    each_cli(|cli| {
        let name = cli.container("signals");
        let _cleanup = Cleanup(cli, vec![name.clone()]);
        let names = [
            "INT", "INT", "INT", "HUP", "QUIT", "USR1", "USR2", "ALRM", "WINCH", "TSTP", "TTIN",
            "TTOU", "CONT", "VTALRM", "IO", "PWR", "SYS", "TRAP",
        ];
        let mut script = String::new();
        for signal in &names[2..] {
            script.push_str(&format!("trap 'echo got {signal}' {signal}; "));
        }
        script.push_str("trap 'echo got TERM; exit 3' TERM; echo ready; ");
        script.push_str("while true; do sleep 0.1; done");
        let config = tempfile::tempdir().unwrap();
        let mut command = cli.command(config.path());
        let log = tempfile::NamedTempFile::new().unwrap();
        command
            .args([
                "run",
                "--network",
                "none",
                "--name",
                &name,
                "busybox",
                "sh",
                "-c",
            ])
            .arg(&script)
            .stdin(Stdio::null())
            .stdout(log.reopen().unwrap())
            .stderr(Stdio::null());
        let mut child = command.spawn().unwrap();
        let output = || fs_err::read_to_string(log.path()).unwrap();
        wait_until(30.0, "the container's ready", || output().contains("ready"));
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        for signal in names {
            let signal: nix::sys::signal::Signal = format!("SIG{signal}").parse().unwrap();
            nix::sys::signal::kill(pid, signal).unwrap();
            // One at a time: the shell runs a trap between two sleeps.
            std::thread::sleep(Duration::from_millis(300));
        }
        let expected: String = names.iter().map(|name| format!("got {name}\n")).collect();
        wait_until(30.0, "every signal's trap", || {
            output().ends_with(&format!("ready\n{expected}"))
        });
        assert!(child.try_wait().unwrap().is_none(), "{}", cli.name());
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        let status = wait_child(&mut child, 30.0, "the proxied run");
        assert_eq!(status.code(), Some(3), "{}: {}", cli.name(), output());
    });
}

/// `run -t` forwards signals too in docker/cli 20.10; `--sig-proxy=false`
/// leaves them to the CLI (SIGINT ends it, the container runs on).
#[test]
fn sig_proxy_with_a_tty_and_without_proxying() {
    each_cli(|cli| {
        let config = tempfile::tempdir().unwrap();
        let tty = cli.container("tty");
        let plain = cli.container("plain");
        let _cleanup = Cleanup(cli, vec![tty.clone(), plain.clone()]);
        let script = "trap 'echo got USR1' USR1; trap 'echo got INT' INT; echo ready; \
                      while true; do sleep 0.1; done";
        let run = |name: &str, options: &[&str]| {
            let mut command = cli.command(config.path());
            command
                .args(["run", "--network", "none", "--name", name])
                .args(options)
                .args(["busybox", "sh", "-c", script])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let child = command.spawn().unwrap();
            wait_until(30.0, "the container's ready", || {
                cli.run(&["logs", name]).stdout().contains("ready")
            });
            child
        };
        let mut child = run(&tty, &["-t"]);
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGUSR1).unwrap();
        wait_until(30.0, "USR1 through a -t run", || {
            cli.run(&["logs", &tty]).stdout().contains("got USR1")
        });
        assert!(child.try_wait().unwrap().is_none(), "{}", cli.name());
        let _ = child.kill();
        let _ = child.wait();

        let mut child = run(&plain, &["--sig-proxy=false"]);
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
        let status = wait_child(&mut child, 30.0, "a run without --sig-proxy");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGINT), "{}", cli.name());
        std::thread::sleep(Duration::from_millis(500));
        assert!(cli.running(&plain), "{}", cli.name());
        let logs = cli.run(&["logs", &plain]).stdout();
        assert!(!logs.contains("got INT"), "{}: {logs}", cli.name());
    });
}
