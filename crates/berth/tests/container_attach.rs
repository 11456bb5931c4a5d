//! `attach`: output with streams kept apart, stdin to a `-i` container,
//! the container's exit status, and the refusal for stopped containers.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

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
