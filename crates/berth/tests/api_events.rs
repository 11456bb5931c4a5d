//! Events: the engine logs container, image, network and volume events;
//! `docker events` (through `berth serve`) and `berth events` show them,
//! past (`--since`/`--until`) and live, with Docker's filters.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

#[path = "api/harness.rs"]
mod harness;
mod support;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use harness::Server;

const FORMAT: &str = "{{.Type}} {{.Action}} {{.Actor.Attributes.name}}";

/// Unix time with nanoseconds, as the docker CLI sends `--since`.
fn now() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    format!("{}.{:09}", now.as_secs(), now.subsec_nanos())
}

#[test]
fn past_events_with_since_until_and_filters() {
    let Some(server) = Server::start() else {
        return;
    };
    // The image load of the set-up is logged too.
    let before_load = server
        .docker(&[
            "events",
            "--since",
            "0",
            "--until",
            &now(),
            "--format",
            FORMAT,
        ])
        .ok();
    assert_eq!(
        before_load.trim(),
        format!(
            "image load {}",
            support::fixture_id("busybox-docker.tar", "busybox:latest")
        )
    );

    let since = now();
    server
        .docker(&[
            "run",
            "--rm",
            "--name",
            "once",
            "--label",
            "tier=test",
            "--network",
            "none",
            "busybox",
            "sh",
            "-c",
            "exit 3",
        ])
        .fails(3);
    server.docker(&["volume", "create", "evvol"]).ok();
    server.docker(&["volume", "rm", "evvol"]).ok();
    server.docker(&["tag", "busybox", "evtag:1"]).ok();
    server.docker(&["rmi", "evtag:1"]).ok();
    server.docker(&["network", "create", "evnet"]).ok();
    server
        .docker(&[
            "create",
            "--name",
            "member",
            "--network",
            "none",
            "busybox",
            "true",
        ])
        .ok();
    server.docker(&["rm", "member"]).ok();
    server
        .docker(&["run", "-d", "--name", "joiner", "busybox", "sleep", "100"])
        .ok();
    server
        .docker(&["network", "connect", "evnet", "joiner"])
        .ok();
    server
        .docker(&["network", "disconnect", "evnet", "joiner"])
        .ok();
    server.docker(&["rm", "-f", "joiner"]).ok();
    server.docker(&["network", "rm", "evnet"]).ok();
    let until = now();

    let all = server
        .docker(&[
            "events", "--since", &since, "--until", &until, "--format", FORMAT,
        ])
        .ok();
    let expected = [
        "container create once",
        "container start once",
        "container die once",
        "container destroy once",
        "volume create <no value>",
        "volume destroy <no value>",
        "image tag evtag:1",
        "image untag evtag:1",
        "network create evnet",
        "container create member",
        "container destroy member",
        "container create joiner",
        "container start joiner",
        "network connect evnet",
        "network disconnect evnet",
        "container die joiner",
        "container destroy joiner",
        "network destroy evnet",
    ];
    assert_eq!(all.lines().collect::<Vec<_>>(), expected, "{all}");

    // `berth events` reads the same log.
    let cli = server
        .berth
        .run(&[
            "events", "--since", &since, "--until", &until, "--format", FORMAT,
        ])
        .ok();
    assert_eq!(cli, all);
    let default = server
        .berth
        .run(&[
            "events",
            "--since",
            &since,
            "--until",
            &until,
            "--filter",
            "event=die",
        ])
        .ok();
    let first = default.lines().next().unwrap();
    assert!(first.contains(" container die "), "{default}");
    assert!(
        first.contains("(exitCode=3, image=busybox, name=once, tier=test)"),
        "{default}"
    );

    let filtered = |filters: &[&str]| {
        let mut args = vec![
            "events", "--since", &since, "--until", &until, "--format", FORMAT,
        ];
        for filter in filters {
            args.extend(["--filter", filter]);
        }
        server.docker(&args).ok()
    };
    assert_eq!(
        filtered(&["type=container", "event=die"]),
        "container die once\ncontainer die joiner\n"
    );
    assert_eq!(
        filtered(&["container=once", "event=start", "event=die"]),
        "container start once\ncontainer die once\n"
    );
    assert_eq!(
        filtered(&["label=tier=test", "event=destroy"]),
        "container destroy once\n"
    );
    assert_eq!(filtered(&["type=volume"]).lines().count(), 2);
    assert_eq!(
        filtered(&["network=evnet"]),
        "network create evnet\nnetwork connect evnet\nnetwork disconnect evnet\nnetwork destroy evnet\n"
    );
    assert_eq!(
        filtered(&["image=evtag:1"]),
        "image tag evtag:1\nimage untag evtag:1\n"
    );
    // The die event carries the exit code; JSON has Docker's fields.
    let json = server
        .docker(&[
            "events",
            "--since",
            &since,
            "--until",
            &until,
            "--filter",
            "event=die",
            "--filter",
            "container=once",
            "--format",
            "{{json .}}",
        ])
        .ok();
    let message: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(message["status"], "die");
    assert_eq!(message["from"], "busybox");
    assert_eq!(message["Actor"]["Attributes"]["exitCode"], "3");
    assert_eq!(message["scope"], "local");
    assert!(message["timeNano"].as_i64().unwrap() > 0);
    let refused = server.docker(&["events", "--filter", "bogus=1", "--until", &until]);
    assert_ne!(refused.code(), 0);
    assert!(
        refused.stderr().contains("invalid filter 'bogus'"),
        "{}",
        refused.stderr()
    );
}

#[test]
fn live_events_follow_until_the_client_leaves() {
    let Some(server) = Server::start() else {
        return;
    };
    let mut follower = server
        .docker_command()
        .args(["events", "--filter", "type=volume", "--format", FORMAT])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Nothing past without --since: only what happens from now on.
    std::thread::sleep(Duration::from_millis(700));
    server.docker(&["volume", "create", "live"]).ok();
    server
        .docker(&["run", "--rm", "--network", "none", "busybox", "true"])
        .ok();
    server.docker(&["volume", "rm", "live"]).ok();
    let mut lines = BufReader::new(follower.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "volume create <no value>");
    assert_eq!(lines.next().unwrap().unwrap(), "volume destroy <no value>");
    follower.kill().unwrap();
    follower.wait().unwrap();
    // The server noticed and still answers.
    assert_eq!(server.docker(&["volume", "ls", "-q"]).ok(), "");
}
