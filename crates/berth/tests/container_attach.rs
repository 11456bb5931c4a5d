//! `attach`: output with streams kept apart, stdin to a `-i` container,
//! the container's exit status, and the refusal for stopped containers.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use berth_runtime::console::window;
use support::terminal::TerminalRun;
use support::Berth;

fn busybox() -> Berth {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth
}

#[test]
fn attach_follows_output_and_exits_with_the_container_status() {
    let berth = busybox();
    let id = berth
        .run(&[
            "run",
            "-d",
            "busybox",
            "sh",
            "-c",
            "sleep 0.5; echo out; echo err >&2; exit 7",
        ])
        .ok();
    let id = id.trim();
    let attached = berth.run(&["attach", id]);
    assert_eq!(attached.code(), 7, "{}", attached.stderr());
    assert_eq!(attached.stdout(), "out\n");
    assert!(
        attached.stderr().ends_with("err\n"),
        "{}",
        attached.stderr()
    );
    berth.run(&["rm", id]).ok();
}

#[test]
fn attach_sends_stdin_to_an_interactive_container() {
    let berth = busybox();
    let id = berth.run(&["run", "-d", "-i", "busybox", "cat"]).ok();
    let id = id.trim();
    let attached = berth.run_with_stdin(&["attach", id], Some(b"through attach\n"));
    assert_eq!(attached.code(), 0, "{}", attached.stderr());
    assert_eq!(attached.stdout(), "through attach\n");
    berth.run(&["rm", "-f", id]).ok();
}

#[test]
fn attach_to_a_stopped_container_is_refused() {
    let berth = busybox();
    let id = berth.run(&["create", "busybox", "true"]).ok();
    let stderr = berth.run(&["attach", id.trim()]).fails(1);
    assert!(
        stderr.contains("You cannot attach to a stopped container, start it first"),
        "{stderr}"
    );
    berth.run(&["rm", id.trim()]).ok();
}

/// `--sig-proxy` (on by default without `-t`): a signal sent to the
/// attached CLI reaches the container's first process, and the CLI exits
/// with the container's status.
#[test]
fn signals_sent_to_the_attached_cli_reach_the_container() {
    use std::io::BufRead;
    let berth = busybox();
    let script = "trap 'echo got TERM; exit 3' TERM; echo ready; while true; do sleep 0.1; done";
    let mut cli = berth.spawn(&["run", "--rm", "busybox", "sh", "-c", script]);
    let mut output = std::io::BufReader::new(cli.stdout.take().unwrap());
    let mut line = String::new();
    output.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    for _ in 0..2 {
        // The second reaches a CLI that must still be there.
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(cli.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
    }
    let status = support::containers::wait_child(&mut cli, 20.0, "the proxied run");
    // (A CLI killed by the signal would leave the container running and
    // its output open: checked first.)
    assert_eq!(status.code(), Some(3), "{status:?}");
    line.clear();
    output.read_line(&mut line).unwrap();
    assert_eq!(line, "got TERM\n");
}

/// The container's terminal has the user's size before its program starts
/// (OCI's consoleSize): a program reading it at once never sees 0×0.
#[test]
fn terminal_size_is_set_before_the_program_starts() {
    let berth = busybox();
    for _ in 0..10 {
        let run = TerminalRun::start(
            &berth,
            &["run", "-t", "--rm", "busybox", "stty", "size"],
            window(33, 77),
        );
        assert_eq!(run.output(), "33 77\n");
    }
    // exec -t too.
    let id = berth.run_detached(&["busybox", "sleep", "100"]);
    for _ in 0..5 {
        let run = TerminalRun::start(&berth, &["exec", "-t", &id, "stty", "size"], window(41, 93));
        assert_eq!(run.output(), "41 93\n");
    }
}

/// `-it` on a terminal: the container's pty starts with the user's window
/// size and follows a resize (SIGWINCH to the CLI).
#[test]
fn terminal_size_follows_the_users_terminal() {
    let berth = busybox();
    let run = TerminalRun::start(
        &berth,
        &[
            "run",
            "-it",
            "--rm",
            "busybox",
            "sh",
            "-c",
            "stty size; sleep 1; stty size",
        ],
        window(30, 100),
    );
    std::thread::sleep(std::time::Duration::from_millis(600));
    run.resize(window(40, 120));
    assert_eq!(run.output(), "30 100\n40 120\n");
    // exec -it too (Docker's exec resize).
    let id = berth.run_detached(&["busybox", "sleep", "100"]);
    let mut exec = TerminalRun::start(
        &berth,
        &[
            "exec",
            "-it",
            &id,
            "sh",
            "-c",
            "stty size; sleep 1; stty size",
        ],
        window(20, 60),
    );
    exec.wait_for("20 60", 30);
    exec.resize(window(25, 70));
    assert_eq!(exec.output(), "20 60\n25 70\n");
    berth.run(&["rm", "-f", &id]).ok();
}
