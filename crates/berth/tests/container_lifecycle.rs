//! The container lifecycle as Docker defines it: `run` (exit codes, image
//! config merge, env/user/workdir, `-i`, `-t`, `--init`), `create`/`start`,
//! `stop`/`kill`/`restart`/`wait`/`rm`/`container prune`, restart policies,
//! crash safety, many CLIs at once, and the same matrix against Docker.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::os::fd::AsRawFd;
use std::process::Stdio;
use std::time::{Duration, Instant};

use support::containers::{
    cgroup_dirs, mounts_under, parent_pid, pid_alive, succeeded, wait_child, wait_until,
};
use support::{docker, docker_host, fixture, Berth};

const DEFAULT_PATH: &str = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// A root with busybox:latest, extra:1 and other:latest.
/// A root with busybox:latest only (the cheapest to load).
fn busybox() -> Berth {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth
}

fn images() -> Berth {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth.load("busybox-extra.tar");
    berth
}

#[track_caller]
fn assert_no_containers(berth: &Berth, after: &str) {
    let left = berth.all_ids();
    assert!(left.is_empty(), "after {after}: ps -a still lists {left:?}");
}

fn signal(pid: i32, signal: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal).unwrap();
}

// ---------------------------------------------------------------- exit codes

#[test]
fn run_rm_exit_codes_follow_docker() {
    let berth = busybox();
    let run = berth.run(&["run", "--rm", "busybox", "true"]);
    assert_eq!(run.ok(), "");
    assert_no_containers(&berth, "run --rm true");

    let run = berth.run(&["run", "--rm", "busybox", "sh", "-c", "exit 42"]);
    run.fails(42);
    assert_no_containers(&berth, "run --rm exit 42");

    let stderr = berth.run(&["run", "--rm", "busybox", "nosuch"]).fails(127);
    assert!(
        stderr.contains(r#"exec: "nosuch": executable file not found in $PATH"#),
        "{stderr}"
    );
    assert_no_containers(&berth, "run --rm nosuch (127)");

    let stderr = berth
        .run(&["run", "--rm", "busybox", "/etc/passwd"])
        .fails(126);
    assert!(
        stderr.contains(r#"exec: "/etc/passwd": permission denied"#),
        "{stderr}"
    );
    assert_no_containers(&berth, "run --rm /etc/passwd (126)");

    // An absolute path that does not exist is 127 too.
    let stderr = berth
        .run(&["run", "--rm", "busybox", "/no/such"])
        .fails(127);
    assert!(stderr.contains("no such file or directory"), "{stderr}");
    assert_no_containers(&berth, "run --rm /no/such (127)");

    // Death by a signal: 128 + the signal number (pid 1 itself cannot be
    // killed from inside its namespace, so --init makes sh pid 2).
    berth
        .run(&["run", "--rm", "--init", "busybox", "sh", "-c", "kill -9 $$"])
        .fails(137);
    assert_no_containers(&berth, "run --rm --init kill -9 $$");
    // ... and as pid 1 the SIGKILL from inside is ignored: exit 0, as in Docker.
    berth
        .run(&["run", "--rm", "busybox", "sh", "-c", "kill -9 $$"])
        .ok();
}

/// A caller reading `run`'s output to EOF (`$(berth run …)`, a pipe) is
/// done when the CLI exits: the monitor closed its copies of the CLI's
/// streams before reporting the exit, not after its own cleanup.
#[test]
fn run_output_ends_when_the_cli_exits() {
    let berth = busybox();
    for _ in 0..5 {
        let mut child = berth
            .command()
            .args(["run", "--rm", "busybox", "echo", "hi"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let status = child.wait().unwrap();
        assert!(status.success());
        // Non-blocking: whatever is in the pipe, then EOF, with no writer left.
        let flags = nix::fcntl::fcntl(stdout.as_raw_fd(), nix::fcntl::FcntlArg::F_GETFL).unwrap();
        let flags = nix::fcntl::OFlag::from_bits_truncate(flags) | nix::fcntl::OFlag::O_NONBLOCK;
        nix::fcntl::fcntl(stdout.as_raw_fd(), nix::fcntl::FcntlArg::F_SETFL(flags)).unwrap();
        let mut output = Vec::new();
        let read = std::io::Read::read_to_end(&mut stdout, &mut output);
        assert!(
            read.is_ok(),
            "the output pipe still had a writer when the CLI exited: {read:?}"
        );
        assert_eq!(output, b"hi\n");
    }
}

#[test]
fn run_with_a_bad_flag_exits_125_and_creates_nothing() {
    let berth = busybox();
    let stderr = berth
        .run(&["run", "--rm", "--bogus", "busybox", "true"])
        .fails(125);
    assert!(stderr.contains("unknown flag: --bogus"), "{stderr}");
    let stderr = berth
        .run(&["run", "--rm", "-m", "lots", "busybox", "true"])
        .fails(125);
    assert!(
        stderr.contains(r#"invalid argument "lots" for "-m, --memory" flag"#),
        "{stderr}"
    );
    let stderr = berth
        .run(&["run", "-d", "--restart", "sometimes", "busybox", "true"])
        .fails(125);
    assert!(
        stderr.contains("invalid restart policy 'sometimes'"),
        "{stderr}"
    );
    let stderr = berth
        .run(&[
            "run",
            "--rm",
            "-d",
            "--restart",
            "always",
            "busybox",
            "true",
        ])
        .fails(125);
    assert!(
        stderr.contains("conflicting options: cannot specify both --restart and --rm"),
        "{stderr}"
    );
    assert_no_containers(&berth, "bad flags");
}

#[test]
fn run_of_a_missing_image_exits_125() {
    let berth = busybox();
    // A registry on 127.0.0.1 that is not there: the pull that follows
    // "Unable to find image" fails without leaving this machine.
    let run = berth.run(&["run", "--rm", "127.0.0.1:9/nosuch"]);
    let stderr = run.fails(125);
    assert!(
        stderr.contains("Unable to find image '127.0.0.1:9/nosuch:latest' locally"),
        "{stderr}"
    );
    assert_eq!(run.stdout(), "");
    let stderr = berth.run(&["create", "127.0.0.1:9/nosuch:1.0"]).stderr();
    assert!(
        stderr.contains("Unable to find image '127.0.0.1:9/nosuch:1.0' locally"),
        "{stderr}"
    );
    // --pull=never does not look further (and says so the way Docker does).
    let stderr = berth
        .run(&["run", "--rm", "--pull=never", "nosuch"])
        .fails(125);
    assert!(stderr.contains("No such image: nosuch:latest"), "{stderr}");
    assert_no_containers(&berth, "run of a missing image");
}

// ---------------------------------------------------------------- image config

#[test]
fn entrypoint_and_cmd_combine_as_in_docker() {
    let berth = images();
    // ENTRYPOINT ["echo"] CMD ["other"]
    assert_eq!(berth.run(&["run", "--rm", "other:latest"]).ok(), "other\n");
    // Arguments replace CMD and follow the ENTRYPOINT.
    assert_eq!(
        berth.run(&["run", "--rm", "other:latest", "a", "b"]).ok(),
        "a b\n"
    );
    // --entrypoint drops the image's CMD: `ls` alone lists /.
    let listing = berth
        .run(&["run", "--rm", "--entrypoint", "ls", "other:latest"])
        .ok();
    assert!(listing.lines().any(|line| line == "other.txt"), "{listing}");
    assert_eq!(
        berth
            .run(&[
                "run",
                "--rm",
                "--entrypoint",
                "cat",
                "other:latest",
                "/other.txt"
            ])
            .ok(),
        "other\n"
    );
    // busybox has no ENTRYPOINT and CMD ["sh"]: the command replaces it.
    assert_eq!(
        berth
            .run(&["run", "--rm", "busybox", "echo", "-n", "x"])
            .ok(),
        "x"
    );
}

#[test]
fn empty_entrypoint_resets_the_image_entrypoint() {
    let berth = images();
    assert_eq!(
        berth
            .run(&[
                "run",
                "--rm",
                "--entrypoint",
                "",
                "other:latest",
                "echo",
                "hi"
            ])
            .ok(),
        "hi\n"
    );
    // With no command either, nothing is left to run: Docker refuses.
    let stderr = berth
        .run(&["run", "--rm", "--entrypoint", "", "other:latest"])
        .fails(125);
    assert!(stderr.contains("No command specified"), "{stderr}");
    assert_no_containers(&berth, "--entrypoint \"\"");
}

#[test]
fn environment_from_flags_files_host_and_image() {
    let berth = images();
    let work = tempfile::tempdir().unwrap();
    let env_file = work.path().join("env.list");
    fs_err::write(
        &env_file,
        "B=2\n# a comment\n\nFROM_HOST\nSPACED=with space\n",
    )
    .unwrap();
    let output = berth
        .command()
        .env("A", "from-host")
        .env("FROM_HOST", "file-host")
        .env_remove("UNSET_ON_HOST")
        .args([
            "run",
            "--rm",
            "-e",
            "A",
            "-e",
            "EQ=1",
            "-e",
            "EMPTY=",
            "-e",
            "UNSET_ON_HOST",
            "--env-file",
            env_file.to_str().unwrap(),
            "busybox",
            "sh",
            "-c",
            "env | grep -v -e ^HOSTNAME= -e ^SHLVL= -e ^PWD= | sort; echo ${UNSET_ON_HOST-unset}",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!(
            "A=from-host\nB=2\nEMPTY=\nEQ=1\nFROM_HOST=file-host\nHOME=/root\n{DEFAULT_PATH}\nSPACED=with space\nunset\n"
        )
    );

    // Image ENV (extra:1 has EXTRA=1) and -e overriding it.
    assert_eq!(
        berth
            .run(&["run", "--rm", "extra:1", "sh", "-c", "echo $EXTRA"])
            .ok(),
        "1\n"
    );
    assert_eq!(
        berth
            .run(&[
                "run",
                "--rm",
                "-e",
                "EXTRA=2",
                "extra:1",
                "sh",
                "-c",
                "echo $EXTRA"
            ])
            .ok(),
        "2\n"
    );
    let stderr = berth
        .run(&[
            "run",
            "--rm",
            "--env-file",
            "/no/such/file",
            "busybox",
            "true",
        ])
        .fails(125);
    assert!(
        stderr.contains("open /no/such/file: no such file or directory"),
        "{stderr}"
    );
}

#[test]
fn user_and_groups_as_docker_sets_them() {
    let berth = images();
    let id = |args: &[&str]| {
        let mut full = vec!["run", "--rm"];
        full.extend_from_slice(args);
        full.push("id");
        berth.run(&full).ok()
    };
    // Docker (runc) always lists the primary group among the supplementary ones.
    assert_eq!(id(&["busybox"]), "uid=0(root) gid=0(root) groups=0(root)\n");
    assert_eq!(
        id(&["-u", "1000:1000", "busybox"]),
        "uid=1000(berthuser) gid=1000(berthgroup) groups=1000(berthgroup)\n"
    );
    // A name is looked up in the image's /etc/passwd and /etc/group.
    assert_eq!(
        id(&["-u", "berthuser", "busybox"]),
        "uid=1000(berthuser) gid=1000(berthgroup) groups=1000(berthgroup),2000(extra)\n"
    );
    assert_eq!(
        id(&[
            "-u",
            "1000:1000",
            "--group-add",
            "extra",
            "--group-add",
            "3000",
            "busybox"
        ]),
        "uid=1000(berthuser) gid=1000(berthgroup) groups=1000(berthgroup),2000(extra),3000\n"
    );
    // A uid with no passwd entry: gid 0.
    assert_eq!(
        id(&["-u", "1234", "busybox"]),
        "uid=1234 gid=0(root) groups=0(root)\n"
    );
    // extra:1 has User berthuser.
    assert_eq!(
        id(&["extra:1"]),
        "uid=1000(berthuser) gid=1000(berthgroup) groups=1000(berthgroup),2000(extra)\n"
    );
    let stderr = berth
        .run(&["run", "--rm", "-u", "nosuchuser", "busybox", "true"])
        .fails(125);
    assert!(
        stderr.contains("unable to find user nosuchuser: no matching entries in passwd file"),
        "{stderr}"
    );
}

#[test]
fn working_directory_from_flag_and_image() {
    let berth = images();
    assert_eq!(
        berth
            .run(&["run", "--rm", "-w", "/tmp", "busybox", "pwd"])
            .ok(),
        "/tmp\n"
    );
    // The process really runs there (not only $PWD).
    assert_eq!(
        berth
            .run(&[
                "run",
                "--rm",
                "-w",
                "/tmp",
                "busybox",
                "readlink",
                "/proc/self/cwd"
            ])
            .ok(),
        "/tmp\n"
    );
    // A missing working directory is created, as Docker does.
    assert_eq!(
        berth
            .run(&[
                "run",
                "--rm",
                "-w",
                "/new/dir",
                "busybox",
                "sh",
                "-c",
                "pwd; echo $PWD"
            ])
            .ok(),
        "/new/dir\n/new/dir\n"
    );
    // extra:1 has WorkingDir /home/berthuser.
    assert_eq!(
        berth.run(&["run", "--rm", "extra:1", "pwd"]).ok(),
        "/home/berthuser\n"
    );
    assert_eq!(
        berth
            .run(&["run", "--rm", "-w", "/", "extra:1", "pwd"])
            .ok(),
        "/\n"
    );
    let stderr = berth
        .run(&["run", "--rm", "-w", "relative", "busybox", "pwd"])
        .fails(125);
    assert!(
        stderr.contains(
            "the working directory 'relative' is invalid, it needs to be an absolute path"
        ),
        "{stderr}"
    );
}

#[test]
fn home_and_hostname_as_docker_sets_them() {
    let berth = busybox();
    let home = |args: &[&str]| {
        let mut full = vec!["run", "--rm"];
        full.extend_from_slice(args);
        full.extend_from_slice(&["sh", "-c", "echo $HOME"]);
        berth.run(&full).ok()
    };
    assert_eq!(home(&["busybox"]), "/root\n");
    assert_eq!(home(&["-u", "berthuser", "busybox"]), "/home/berthuser\n");
    assert_eq!(home(&["-u", "1234", "busybox"]), "/\n");
    assert_eq!(home(&["-e", "HOME=/elsewhere", "busybox"]), "/elsewhere\n");

    // HOSTNAME, hostname(1) and /etc/hostname: the short id by default.
    let id = berth.run_detached(&[
        "busybox",
        "sh",
        "-c",
        "echo $HOSTNAME; hostname; cat /etc/hostname",
    ]);
    berth.wait_status(&id, "exited", 5.0);
    let short = &id[..12];
    assert_eq!(
        berth.run(&["logs", &id]).ok(),
        format!("{short}\n{short}\n{short}\n")
    );
    assert_eq!(berth.inspect(&id, "{{.Config.Hostname}}"), short);

    assert_eq!(
        berth
            .run(&[
                "run",
                "--rm",
                "--hostname",
                "berth-host",
                "busybox",
                "sh",
                "-c",
                "echo $HOSTNAME; hostname; cat /etc/hostname",
            ])
            .ok(),
        "berth-host\nberth-host\nberth-host\n"
    );
}

#[test]
fn container_processes_start_with_default_signal_dispositions() {
    let berth = busybox();
    // Nothing ignored or blocked, as with Docker: a shell can trap HUP/INT,
    // and a pipe's writer dies by SIGPIPE.
    let status = berth
        .run(&[
            "run",
            "--rm",
            "busybox",
            "grep",
            "-e",
            "^SigBlk",
            "-e",
            "^SigIgn",
            "/proc/self/status",
        ])
        .ok();
    assert_eq!(
        status,
        "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n"
    );
    let id = berth.run_detached(&["busybox", "sleep", "100"]);
    let status = berth
        .run(&[
            "exec",
            &id,
            "grep",
            "-e",
            "^SigBlk",
            "-e",
            "^SigIgn",
            "/proc/self/status",
        ])
        .ok();
    assert_eq!(
        status,
        "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n"
    );
}

// ---------------------------------------------------------------- stdin and tty

#[test]
fn interactive_stdin_reaches_the_container() {
    let berth = busybox();
    let run = berth.run_with_stdin(&["run", "-i", "--rm", "busybox", "cat"], Some(b"hello\n"));
    assert_eq!(run.ok(), "hello\n");
    let run = berth.run_with_stdin(
        &[
            "run",
            "-i",
            "--rm",
            "busybox",
            "sh",
            "-c",
            "read line; echo got $line; exit 4",
        ],
        Some(b"input\n"),
    );
    assert_eq!(run.stdout(), "got input\n");
    run.fails(4);
    // Without -i the container's stdin is not connected: cat sees EOF at once.
    let run = berth.run_with_stdin(&["run", "--rm", "busybox", "cat"], Some(b"hello\n"));
    assert_eq!(run.ok(), "");
    assert_no_containers(&berth, "-i runs");
}

/// Runs `berth ARGS` with a new pty as its stdin/stdout/stderr; returns the
/// exit code and what reached the terminal.
fn run_on_a_pty(berth: &Berth, args: &[&str]) -> (i32, String) {
    use std::io::Read;
    use std::os::unix::process::CommandExt;

    let pty = nix::pty::openpty(None, None).unwrap();
    let mut command = berth.command();
    command
        .args(args)
        .stdin(Stdio::from(pty.slave.try_clone().unwrap()))
        .stdout(Stdio::from(pty.slave.try_clone().unwrap()))
        .stderr(Stdio::from(pty.slave.try_clone().unwrap()));
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        command.pre_exec(|| {
            nix::unistd::setsid().map_err(std::io::Error::from)?;
            Ok(())
        });
    }
    let mut child = command.spawn().unwrap();
    drop(pty.slave);
    let status = wait_child(&mut child, 10.0, "berth run -t");
    // What berth wrote is buffered in the pty; read it without blocking.
    let master = std::fs::File::from(pty.master);
    nix::fcntl::fcntl(
        master.as_raw_fd(),
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
    )
    .unwrap();
    let mut text = Vec::new();
    let mut buffer = [0u8; 4096];
    let mut reader = &master;
    while let Ok(count) = reader.read(&mut buffer) {
        if count == 0 {
            break;
        }
        text.extend_from_slice(&buffer[..count]);
    }
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&text).into_owned(),
    )
}

#[test]
fn tty_gives_the_container_a_terminal() {
    let berth = busybox();
    let (code, output) = run_on_a_pty(&berth, &["run", "-t", "--rm", "busybox", "tty"]);
    assert_eq!((code, output.trim()), (0, "/dev/pts/0"), "{output:?}");
    let (code, output) = run_on_a_pty(
        &berth,
        &[
            "run",
            "-it",
            "--rm",
            "busybox",
            "sh",
            "-c",
            "tty; echo $TERM; exit 3",
        ],
    );
    assert_eq!(code, 3, "{output:?}");
    let lines: Vec<&str> = output.lines().map(str::trim).collect();
    assert_eq!(lines, ["/dev/pts/0", "xterm"], "{output:?}");
    assert_no_containers(&berth, "-t runs");
}

// ---------------------------------------------------------------- --init

#[test]
fn init_reaps_forwards_signals_and_propagates_the_exit_code() {
    let berth = busybox();
    let table = berth
        .run(&["run", "--rm", "--init", "busybox", "ps", "-o", "pid,comm"])
        .ok();
    let rows: Vec<(u32, String)> = table
        .lines()
        .skip(1)
        .map(|line| {
            let mut fields = line.split_whitespace();
            (
                fields.next().unwrap().parse().unwrap(),
                fields.next().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let ps = rows.iter().find(|(_, command)| command == "ps");
    assert!(
        matches!(ps, Some((pid, _)) if *pid > 1),
        "the command must not be pid 1 under --init:\n{table}"
    );
    assert!(
        rows.iter()
            .any(|(pid, command)| *pid == 1 && command != "ps"),
        "{table}"
    );

    berth
        .run(&["run", "--rm", "--init", "busybox", "sh", "-c", "exit 9"])
        .fails(9);

    // An orphan reparented to pid 1 is reaped: no zombie remains.
    let states = berth
        .run(&[
            "run",
            "--rm",
            "--init",
            "busybox",
            "sh",
            "-c",
            "(sleep 0.1 &); sleep 0.6; ps -o stat,comm",
        ])
        .ok();
    assert!(
        !states
            .lines()
            .skip(1)
            .any(|line| line.trim_start().starts_with('Z')),
        "zombie left under --init:\n{states}"
    );

    // Signals reach the command: USR1 runs its trap; `stop` ends a `sleep`
    // (which as pid 1 would ignore SIGTERM) by SIGTERM, not by the SIGKILL.
    let id = berth.run_detached(&[
        "--init",
        "busybox",
        "sh",
        "-c",
        "trap 'echo got usr1' USR1; echo ready; while :; do sleep 0.05; done",
    ]);
    berth.wait_logs(&id, "ready", 5.0);
    berth.run(&["kill", "-s", "USR1", &id]).ok();
    berth.wait_logs(&id, "got usr1", 5.0);
    berth.run(&["rm", "-f", &id]).ok();

    let id = berth.run_detached(&["--init", "busybox", "sleep", "100"]);
    berth.wait_status(&id, "running", 5.0);
    berth.run(&["stop", "-t", "3", &id]).ok();
    assert_eq!(berth.inspect(&id, "{{.State.ExitCode}}"), "143");
}

// ---------------------------------------------------------------- create / start

#[test]
fn create_then_start() {
    let berth = busybox();
    let id = berth
        .run(&[
            "create",
            "--name",
            "later",
            "busybox",
            "sh",
            "-c",
            "echo hello; exit 3",
        ])
        .ok()
        .trim()
        .to_owned();
    assert_eq!(id.len(), 64, "{id}");
    assert_eq!(berth.status("later"), "created");
    let status = berth
        .run(&["ps", "-a", "--format", "{{.Names}} {{.Status}}"])
        .ok();
    assert_eq!(status, "later Created\n");
    assert_eq!(berth.run(&["ps", "-q"]).ok(), "");

    // `start` prints what it was given.
    assert_eq!(berth.run(&["start", "later"]).ok(), "later\n");
    berth.wait_status(&id, "exited", 5.0);
    assert_eq!(berth.inspect(&id, "{{.State.ExitCode}}"), "3");
    assert_eq!(berth.run(&["logs", "later"]).ok(), "hello\n");

    let stderr = berth.run(&["start", "nosuch"]).fails(1);
    assert!(stderr.contains("No such container: nosuch"), "{stderr}");
}

#[test]
fn start_attach_prints_output_and_exits_with_its_code() {
    let berth = busybox();
    let id = berth
        .run(&[
            "create",
            "busybox",
            "sh",
            "-c",
            "echo out; echo err >&2; exit 3",
        ])
        .ok()
        .trim()
        .to_owned();
    let run = berth.run(&["start", "-a", &id]);
    assert_eq!(run.stdout(), "out\n");
    assert!(run.stderr().contains("err"), "{}", run.stderr());
    run.fails(3);
    assert_eq!(berth.status(&id), "exited");
    // A stopped container starts again, attached.
    let run = berth.run(&["start", "-a", &id]);
    assert_eq!(run.stdout(), "out\n");
    run.fails(3);

    // -i: stdin reaches a container created with -i.
    let id = berth
        .run(&["create", "-i", "busybox", "cat"])
        .ok()
        .trim()
        .to_owned();
    let run = berth.run_with_stdin(&["start", "-a", "-i", &id], Some(b"piped\n"));
    assert_eq!(run.ok(), "piped\n");
}

// ---------------------------------------------------------------- stop / kill / restart / wait

#[test]
fn stop_honours_sigterm() {
    let berth = busybox();
    let id = berth.run_detached(&[
        "busybox",
        "sh",
        "-c",
        "trap 'echo term; exit 3' TERM; echo ready; while :; do sleep 0.05; done",
    ]);
    berth.wait_logs(&id, "ready", 5.0);
    // Prints what it was given; a SIGKILL after the 5 s would give 137, not 3.
    assert_eq!(berth.run(&["stop", "-t", "5", &id]).ok(), format!("{id}\n"));
    assert_eq!(
        berth.inspect(
            &id,
            "{{.State.Status}} {{.State.Running}} {{.State.ExitCode}} {{.State.Pid}}"
        ),
        "exited false 3 0"
    );
    assert!(berth.run(&["logs", &id]).ok().contains("term\n"));
    berth.assert_no_leftovers(&id);
    // Stopping a stopped container is fine, as in Docker.
    berth.run(&["stop", &id]).ok();
}

/// `stop --signal` sends that signal instead of the stop signal (Docker's
/// `-s`); a bad one is refused before anything is sent.
#[test]
fn stop_sends_the_signal_given() {
    let berth = busybox();
    let id = berth.run_detached(&[
        "busybox",
        "sh",
        "-c",
        "trap 'echo usr1; exit 4' USR1; trap '' TERM; echo ready; while :; do sleep 0.05; done",
    ]);
    berth.wait_logs(&id, "ready", 5.0);
    let error = berth.run(&["stop", "--signal", "NOSUCH", &id]).fails(1);
    assert!(error.contains("NOSUCH"), "{error}");
    assert_eq!(berth.inspect(&id, "{{.State.Running}}"), "true");
    berth.run(&["stop", "-s", "USR1", "-t", "5", &id]).ok();
    assert_eq!(berth.inspect(&id, "{{.State.ExitCode}}"), "4");
    assert!(berth.run(&["logs", &id]).ok().contains("usr1\n"));
}

#[test]
fn stop_kills_after_the_timeout_when_sigterm_is_ignored() {
    let berth = busybox();
    let id = berth.run_detached(&[
        "busybox",
        "sh",
        "-c",
        "trap '' TERM; echo ready; while :; do sleep 0.05; done",
    ]);
    berth.wait_logs(&id, "ready", 5.0);
    let begun = Instant::now();
    berth.run(&["stop", "-t", "1", &id]).ok();
    let took = begun.elapsed();
    assert!(
        took >= Duration::from_millis(900),
        "stop -t 1 must give the process its second: {took:?}"
    );
    assert!(took < Duration::from_secs(5), "stop -t 1 took {took:?}");
    assert_eq!(berth.inspect(&id, "{{.State.ExitCode}}"), "137");
    berth.assert_no_leftovers(&id);
}

#[test]
fn kill_delivers_signals() {
    let berth = busybox();
    let id = berth.run_detached(&[
        "--name",
        "target",
        "busybox",
        "sh",
        "-c",
        "trap 'echo got usr1' USR1; trap 'echo got hup' HUP; echo ready; while :; do sleep 0.05; done",
    ]);
    berth.wait_logs(&id, "ready", 5.0);
    assert_eq!(
        berth.run(&["kill", "-s", "USR1", "target"]).ok(),
        "target\n"
    );
    berth.wait_logs(&id, "got usr1", 5.0);
    berth.run(&["kill", "--signal", "SIGHUP", "target"]).ok();
    berth.wait_logs(&id, "got hup", 5.0);
    assert_eq!(berth.status(&id), "running");

    // The default is SIGKILL, and it returns once the container has
    // exited (moby's Kill waits): no polling needed.
    berth.run(&["kill", "target"]).ok();
    assert_eq!(berth.status(&id), "exited");
    assert_eq!(berth.inspect(&id, "{{.State.ExitCode}}"), "137");

    let stderr = berth.run(&["kill", "target"]).fails(1);
    assert!(stderr.contains("is not running"), "{stderr}");
    let stderr = berth.run(&["kill", "nosuch"]).fails(1);
    assert!(stderr.contains("No such container: nosuch"), "{stderr}");
    let stderr = berth.run(&["kill", "-s", "NOSUCHSIG", &id]).fails(1);
    assert!(stderr.contains("Invalid signal: NOSUCHSIG"), "{stderr}");
}

#[test]
fn restart_runs_the_container_again() {
    let berth = busybox();
    let id = berth.run_detached(&[
        "busybox",
        "sh",
        "-c",
        "trap 'exit 0' TERM; echo started; while :; do sleep 0.05; done",
    ]);
    berth.wait_logs(&id, "started", 5.0);
    let first_pid = berth.inspect(&id, "{{.State.Pid}}");
    let first_start = berth.inspect(&id, "{{.State.StartedAt}}");

    assert_eq!(
        berth.run(&["restart", "-t", "3", &id]).ok(),
        format!("{id}\n")
    );
    assert_eq!(berth.status(&id), "running");
    assert_ne!(berth.inspect(&id, "{{.State.Pid}}"), first_pid);
    assert_ne!(berth.inspect(&id, "{{.State.StartedAt}}"), first_start);
    wait_until(5.0, "two runs in the logs", || {
        berth.run(&["logs", &id]).stdout() == "started\nstarted\n"
    });
    // A manual restart is not a restart-policy restart.
    assert_eq!(berth.inspect(&id, "{{.RestartCount}}"), "0");

    // An exited container is simply started.
    berth.run(&["stop", &id]).ok();
    berth.run(&["restart", &id]).ok();
    assert_eq!(berth.status(&id), "running");
}

#[test]
fn wait_prints_the_exit_code() {
    let berth = busybox();
    let slow = berth.run_detached(&["busybox", "sh", "-c", "sleep 0.3; exit 7"]);
    let fast = berth.run_detached(&["busybox", "sh", "-c", "exit 0"]);
    assert_eq!(berth.run(&["wait", &slow, &fast]).ok(), "7\n0\n");
    // Again, once exited.
    assert_eq!(berth.run(&["wait", &slow]).ok(), "7\n");
    let run = berth.run(&["wait", "nosuch"]);
    assert!(
        run.stderr().contains("No such container: nosuch"),
        "{}",
        run.stderr()
    );
    run.fails(1);
}

// ---------------------------------------------------------------- rm / prune

#[test]
fn rm_refuses_a_running_container_without_force() {
    let berth = busybox();
    let id = berth.run_detached(&["busybox", "sleep", "100"]);
    let pid: i32 = berth.inspect(&id, "{{.State.Pid}}").parse().unwrap();
    let stderr = berth.run(&["rm", &id]).fails(1);
    assert!(
        stderr.contains(&format!(
            "You cannot remove a running container {id}. Stop the container before attempting removal or force remove"
        )),
        "{stderr}"
    );
    assert_eq!(berth.status(&id), "running");

    assert_eq!(berth.run(&["rm", "-f", &id]).ok(), format!("{id}\n"));
    assert!(!pid_alive(pid), "rm -f left the container process {pid}");
    assert_no_containers(&berth, "rm -f");
    berth.assert_no_leftovers(&id);
    assert!(
        berth.container_dirs().is_empty(),
        "{:?}",
        berth.container_dirs()
    );

    let stderr = berth.run(&["rm", "nosuch"]).fails(1);
    assert!(stderr.contains("No such container: nosuch"), "{stderr}");
    // Created and exited containers need no force.
    let created = berth.run(&["create", "busybox"]).ok().trim().to_owned();
    berth.run(&["rm", &created]).ok();
    assert_no_containers(&berth, "rm of a created container");
}

#[test]
fn container_prune_removes_every_stopped_container() {
    let berth = busybox();
    let running = berth.run_detached(&["busybox", "sleep", "100"]);
    let exited = berth.run_detached(&["busybox", "true"]);
    let created = berth.run(&["create", "busybox"]).ok().trim().to_owned();
    berth.wait_status(&exited, "exited", 5.0);

    let output = berth.run(&["container", "prune", "-f"]).ok();
    let lines: Vec<&str> = output.lines().collect();
    assert_eq!(lines[0], "Deleted Containers:", "{output}");
    let mut deleted: Vec<&str> = lines[1..3].to_vec();
    deleted.sort();
    let mut expected = vec![exited.as_str(), created.as_str()];
    expected.sort();
    assert_eq!(deleted, expected, "{output}");
    assert_eq!(lines[3], "");
    assert!(lines[4].starts_with("Total reclaimed space: "), "{output}");
    assert_eq!(berth.all_ids(), std::slice::from_ref(&running));

    // Nothing to prune: Docker prints only the total.
    assert_eq!(
        berth.run(&["container", "prune", "-f"]).ok(),
        "Total reclaimed space: 0B\n"
    );
}

// ---------------------------------------------------------------- restart policies

#[test]
fn restart_policy_on_failure_retries_then_stays_exited() {
    let berth = busybox();
    let id = berth.run_detached(&[
        "--restart",
        "on-failure:2",
        "busybox",
        "sh",
        "-c",
        "echo attempt; exit 1",
    ]);
    wait_until(8.0, "two restarts, then exited", || {
        berth.inspect(&id, "{{.RestartCount}} {{.State.Status}}") == "2 exited"
    });
    // The next backoff would be 400 ms; nothing must come.
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(
        berth.inspect(&id, "{{.RestartCount}} {{.State.Status}} {{.State.ExitCode}} {{.HostConfig.RestartPolicy.Name}}:{{.HostConfig.RestartPolicy.MaximumRetryCount}}"),
        "2 exited 1 on-failure:2"
    );
    assert_eq!(
        berth.run(&["logs", &id]).ok(),
        "attempt\nattempt\nattempt\n"
    );

    // A success is not retried.
    let id = berth.run_detached(&["--restart", "on-failure:2", "busybox", "true"]);
    berth.wait_status(&id, "exited", 5.0);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        berth.inspect(&id, "{{.RestartCount}} {{.State.Status}}"),
        "0 exited"
    );
}

#[test]
fn restart_policy_always_restarts_until_stopped() {
    let berth = busybox();
    // Restarted after exiting by itself (the file system is kept, so the
    // second run stays up); then stopped, and `always` does not bring it back.
    let id = berth.run_detached(&[
        "--restart",
        "always",
        "busybox",
        "sh",
        "-c",
        "echo run; [ -e /once ] || { touch /once; exit 1; }; trap 'exit 0' TERM; while :; do sleep 0.05; done",
    ]);
    wait_until(5.0, "a restart after the exit", || {
        berth.inspect(&id, "{{.RestartCount}} {{.State.Status}}") == "1 running"
    });
    berth.wait_logs(&id, "run\nrun\n", 5.0);
    berth.run(&["stop", "-t", "2", &id]).ok();
    assert_eq!(berth.status(&id), "exited");
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(
        berth.inspect(
            &id,
            "{{.RestartCount}} {{.State.Status}} {{.State.ExitCode}}"
        ),
        "1 exited 0"
    );

    // A container that keeps exiting spends most of its time "restarting"
    // (the backoff doubles from 100 ms); Docker stops it there too.
    let id = berth.run_detached(&["--restart", "always", "busybox", "sh", "-c", "echo run"]);
    wait_until(8.0, "two restarts, then waiting to restart", || {
        berth.inspect(&id, "{{.RestartCount}} {{.State.Status}}") == "2 restarting"
    });
    berth.run(&["stop", "-t", "1", &id]).ok();
    assert_eq!(berth.status(&id), "exited");
    let count = berth.inspect(&id, "{{.RestartCount}}");
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(
        berth.inspect(&id, "{{.RestartCount}} {{.State.Status}}"),
        format!("{count} exited")
    );
    // rm -f of a restarting container works as well.
    let id = berth.run_detached(&["--restart", "always", "busybox", "true"]);
    wait_until(5.0, "a restart", || {
        berth.inspect(&id, "{{.RestartCount}} {{.State.Status}}") == "1 restarting"
    });
    assert_eq!(berth.run(&["rm", "-f", &id]).ok(), format!("{id}\n"));
    let listed = berth.run(&["ps", "-aq", "--no-trunc"]).ok();
    assert!(!listed.contains(&id), "rm -f left {id} listed:\n{listed}");
    berth.assert_no_leftovers(&id);
}

// ---------------------------------------------------------------- crash safety

#[test]
fn killed_monitor_is_reconciled_and_leaves_nothing() {
    let berth = busybox();
    let id = berth.run_detached(&["busybox", "sleep", "100"]);
    let pid: i32 = berth.inspect(&id, "{{.State.Pid}}").parse().unwrap();
    let monitor = parent_pid(pid);
    assert!(monitor > 1, "the container's parent is its monitor");
    signal(monitor, nix::sys::signal::Signal::SIGKILL);
    wait_until(5.0, "the monitor to die", || !pid_alive(monitor));

    wait_until(5.0, "ps -a to show the container exited", || {
        berth
            .run(&["ps", "-a", "--format", "{{.Status}}"])
            .stdout()
            .starts_with("Exited")
    });
    assert_eq!(berth.status(&id), "exited");
    assert!(
        !pid_alive(pid),
        "the container process {pid} outlived its monitor"
    );
    let merged = berth.root().join("containers").join(&id).join("merged");
    assert!(
        !mounts_under(berth.root()).contains(&merged),
        "{merged:?} is still mounted"
    );
    assert!(
        !std::path::Path::new(&format!("/sys/fs/cgroup/memory/berth/{id}")).exists(),
        "memory cgroup left"
    );
    berth.assert_no_leftovers(&id);
    // And the container can be removed (or started again).
    berth.run(&["rm", &id]).ok();
}

/// `run --rm`: the monitor deletes the row and reports the exit, and only
/// then removes the container's directories and cgroup. A monitor killed in
/// between leaves them; the next listing (`ps`, `container prune`) removes
/// them. The window is a few milliseconds, so the state is made directly:
/// an exited container's row deleted under it, with a cgroup left.
#[test]
fn files_a_removed_container_left_are_removed_by_the_next_listing() {
    let berth = busybox();
    let id = berth.run_detached(&["busybox", "true"]);
    berth.wait_status(&id, "exited", 10.0);
    let hierarchy = ["/sys/fs/cgroup/pids/berth", "/sys/fs/cgroup/berth"]
        .iter()
        .map(std::path::Path::new)
        .find(|path| path.is_dir())
        .expect("a berth cgroup parent exists after a run");
    fs_err::create_dir(hierarchy.join(&id)).unwrap();
    let directories = [
        berth.root().join("containers").join(&id),
        berth.run_root.path().join("containers").join(&id),
    ];
    assert!(directories.iter().all(|path| path.is_dir()));
    berth_store::Store::open(berth.root())
        .unwrap()
        .delete_container(&id)
        .unwrap();
    // A container with a row keeps its files.
    let kept = berth.run_detached(&["busybox", "true"]);
    berth.wait_status(&kept, "exited", 10.0);

    assert_eq!(
        berth.run(&["ps", "-aq", "--no-trunc"]).ok(),
        format!("{kept}\n")
    );
    for path in &directories {
        assert!(!path.exists(), "{path:?} left");
    }
    assert!(cgroup_dirs(&id).is_empty(), "{:?}", cgroup_dirs(&id));
    assert!(berth.root().join("containers").join(&kept).is_dir());
    berth.run(&["start", "-a", &kept]).ok();
}

#[test]
fn killed_container_init_records_137() {
    let berth = busybox();
    let id = berth.run_detached(&["busybox", "sleep", "100"]);
    let pid: i32 = berth.inspect(&id, "{{.State.Pid}}").parse().unwrap();
    signal(pid, nix::sys::signal::Signal::SIGKILL);
    berth.wait_status(&id, "exited", 5.0);
    assert_eq!(
        berth.inspect(&id, "{{.State.ExitCode}} {{.State.Pid}} {{.State.Running}}"),
        "137 0 false"
    );
    let status = berth.run(&["ps", "-a", "--format", "{{.Status}}"]).ok();
    assert!(status.starts_with("Exited (137) "), "{status}");
    berth.assert_no_leftovers(&id);
}

#[test]
fn killed_attached_cli_leaves_the_container_running() {
    let berth = busybox();
    let mut cli = berth.spawn(&[
        "run",
        "--name",
        "attached",
        "busybox",
        "sh",
        "-c",
        "while :; do echo tick; sleep 0.05; done",
    ]);
    wait_until(5.0, "the attached container to run", || {
        berth.status("attached") == "running"
    });
    signal(cli.id() as i32, nix::sys::signal::Signal::SIGKILL);
    cli.wait().unwrap();
    // The output keeps flowing somewhere: the container is not blocked on a
    // dead reader and keeps answering.
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(berth.status("attached"), "running");
    }
    berth.run(&["exec", "attached", "true"]).ok();
    berth.run(&["stop", "-t", "1", "attached"]).ok();
    assert_eq!(berth.status("attached"), "exited");
    let id = berth.inspect("attached", "{{.Id}}");
    berth.assert_no_leftovers(&id);
}

#[test]
fn fifty_concurrent_runs_and_removals() {
    let berth = busybox();
    let children: Vec<_> = (0..50)
        .map(|_| berth.spawn(&["run", "-d", "busybox", "sleep", "100"]))
        .collect();
    let ids: Vec<String> = children.into_iter().map(succeeded).collect();
    assert!(ids.iter().all(|id| id.len() == 64), "{ids:?}");
    let running = berth.run(&["ps", "-q"]).ok();
    assert_eq!(running.lines().count(), 50, "{running}");

    let children: Vec<_> = ids
        .iter()
        .map(|id| berth.spawn(&["rm", "-f", id]))
        .collect();
    for (child, id) in children.into_iter().zip(&ids) {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "a concurrent rm -f failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&output.stdout), format!("{id}\n"));
    }
    assert_eq!(berth.run(&["ps", "-aq"]).ok(), "");
    let mounts = mounts_under(berth.root());
    assert!(mounts.is_empty(), "left mounted: {mounts:?}");
    for id in &ids {
        assert!(cgroup_dirs(id).is_empty(), "cgroups of {id} left");
    }
    assert!(
        berth.container_dirs().is_empty(),
        "{:?}",
        berth.container_dirs()
    );
}

// ---------------------------------------------------------------- Docker conformance

struct Case {
    args: Vec<String>,
    /// A phrase both engines must print on stderr (their prefixes differ).
    stderr_phrase: Option<&'static str>,
}

fn case(args: &[&str], stderr_phrase: Option<&'static str>) -> Case {
    Case {
        args: args.iter().map(|arg| (*arg).to_owned()).collect(),
        stderr_phrase,
    }
}

/// Runs `commands` (stdin closed) at most 64 at a time; their outputs in order.
fn outputs_in_parallel(mut commands: Vec<std::process::Command>) -> Vec<std::process::Output> {
    let mut outputs = Vec::new();
    for batch in commands.chunks_mut(64) {
        let children: Vec<_> = batch
            .iter_mut()
            .map(|command| {
                command
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        outputs.extend(
            children
                .into_iter()
                .map(|child| child.wait_with_output().unwrap()),
        );
    }
    outputs
}

/// The same `run --rm` matrix against Docker and berth: identical stdout and
/// exit codes, and the key phrase of any error.
#[test]
fn run_matches_docker() {
    let Some(host) = docker_host() else { return };
    let berth = images();
    for archive in ["busybox-docker.tar", "busybox-extra.tar"] {
        let output = docker(
            &host,
            &["load", "-q", "-i", fixture(archive).to_str().unwrap()],
        );
        assert!(output.status.success(), "{output:?}");
    }
    let work = tempfile::tempdir().unwrap();
    let env_file = work.path().join("env.list");
    fs_err::write(&env_file, "B=2\n# comment\n\nSPACED=with space\n").unwrap();
    let env_file = env_file.to_str().unwrap();
    let strip = "env | grep -v -e ^HOSTNAME= | sort";
    let cases = [
        case(&["busybox", "true"], None),
        case(&["busybox", "sh", "-c", "exit 42"], None),
        case(&["busybox", "sh", "-c", "echo out; echo err >&2; exit 3"], Some("err")),
        case(&["busybox", "nosuch"], Some(r#"exec: "nosuch": executable file not found in $PATH"#)),
        case(&["busybox", "/etc/passwd"], Some(r#"exec: "/etc/passwd": permission denied"#)),
        case(&["busybox", "sh", "-c", "kill -9 $$"], None),
        case(&["other:latest"], None),
        case(&["other:latest", "a", "b"], None),
        case(&["--entrypoint", "ls", "other:latest"], None),
        case(&["--entrypoint", "", "other:latest", "echo", "hi"], None),
        case(&["--entrypoint", "", "other:latest"], Some("No command specified")),
        case(&["-e", "A=1", "-e", "EMPTY=", "--env-file", env_file, "busybox", "sh", "-c", strip], None),
        case(&["extra:1", "sh", "-c", &format!("id; pwd; {strip}")], None),
        case(&["-u", "1000:1000", "busybox", "sh", "-c", &format!("id; {strip}")], None),
        case(&["-u", "berthuser", "--group-add", "extra", "--group-add", "3000", "busybox", "id"], None),
        case(&["-u", "1234", "busybox", "sh", "-c", "id; echo $HOME"], None),
        case(&["-w", "/tmp", "busybox", "sh", "-c", "pwd; echo $PWD"], None),
        case(&["-w", "/new/dir", "busybox", "sh", "-c", "pwd; ls -ld . | cut -c1-10"], None),
        case(&["--hostname", "berth-host", "busybox", "sh", "-c", "hostname; echo $HOSTNAME; cat /etc/hostname"], None),
        case(&["--read-only", "--tmpfs", "/tmp", "busybox", "sh", "-c", "touch /tmp/x && echo ok; touch /x"], Some("touch: /x: Read-only file system")),
        case(&["busybox", "sh", "-c", "id; cat /proc/self/status | grep -e ^Groups -e ^Sig[BI] -e ^Cap -e ^NoNewPrivs -e ^Seccomp:"], None),
    ];
    // Docker manages about three runs a second: start them all at once, and
    // berth's alongside.
    let docker_commands = cases.iter().map(|case| {
        let mut command = std::process::Command::new("docker");
        command
            .args(["-H", &host, "run", "--rm", "--network", "none"])
            .args(&case.args);
        command
    });
    let berth_commands = cases.iter().map(|case| {
        let mut command = berth.command();
        command.args(["run", "--rm"]).args(&case.args);
        command
    });
    let mut outputs = outputs_in_parallel(docker_commands.chain(berth_commands).collect());
    let berth_outputs = outputs.split_off(cases.len());
    let docker_outputs = outputs;
    let mut differences = Vec::new();
    for ((case, from_docker), from_berth) in cases.iter().zip(&docker_outputs).zip(&berth_outputs) {
        let args: Vec<&str> = case.args.iter().map(String::as_str).collect();
        let docker_stdout = String::from_utf8_lossy(&from_docker.stdout);
        let berth_stdout = String::from_utf8_lossy(&from_berth.stdout);
        let docker_stderr = String::from_utf8_lossy(&from_docker.stderr);
        let berth_stderr = String::from_utf8_lossy(&from_berth.stderr);
        let mut problems = Vec::new();
        if from_docker.status.code() != from_berth.status.code() {
            problems.push(format!(
                "exit code: docker {:?}, berth {:?}",
                from_docker.status.code(),
                from_berth.status.code()
            ));
        }
        if docker_stdout != berth_stdout {
            problems.push(format!(
                "stdout:\n  docker: {docker_stdout:?}\n  berth:  {berth_stdout:?}"
            ));
        }
        if let Some(phrase) = case.stderr_phrase {
            assert!(
                docker_stderr.contains(phrase),
                "the test is wrong: docker's stderr for {args:?} lacks {phrase:?}: {docker_stderr}"
            );
            if !berth_stderr.contains(phrase) {
                problems.push(format!("stderr lacks {phrase:?}: {berth_stderr:?}"));
            }
        }
        if !problems.is_empty() {
            differences.push(format!("run --rm {args:?}\n  {}", problems.join("\n  ")));
        }
    }
    assert!(
        differences.is_empty(),
        "berth differs from Docker in {} of {} cases:\n{}",
        differences.len(),
        cases.len(),
        differences.join("\n")
    );
    assert_no_containers(&berth, "the conformance matrix");
}

/// `wait` on a container with a restart policy returns when its run ends,
/// with that run's code, as dockerd fires its waiters on the restart (it
/// used to wait for a monitor that restarts forever).
#[test]
fn wait_returns_at_the_end_of_a_run_that_restarts() {
    let berth = busybox();
    let id = berth
        .run(&[
            "run",
            "-d",
            "--restart",
            "always",
            "--network",
            "none",
            "busybox",
            "sh",
            "-c",
            "sleep 1; exit 3",
        ])
        .ok();
    let id = id.trim();
    let started = Instant::now();
    let mut wait = berth
        .command()
        .args(["wait", id])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_child(&mut wait, 60.0, "wait to return at the run's end");
    assert!(status.success(), "{status:?}");
    let mut printed = String::new();
    std::io::Read::read_to_string(&mut wait.stdout.take().unwrap(), &mut printed).unwrap();
    assert_eq!(printed, "3\n");
    assert!(started.elapsed() < Duration::from_secs(30));
    // It restarts on: rm without -f refuses, as dockerd's for a restarting one.
    let error = berth.run(&["rm", id]).fails(1);
    assert!(
        error.to_lowercase().contains("stop the container before"),
        "{error}"
    );
    berth.run(&["rm", "-f", id]).ok();
}
