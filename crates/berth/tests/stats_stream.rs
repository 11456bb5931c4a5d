//! `stats` streams a table each second until interrupted, as Docker's does, and ends when the
//! containers it was named for have stopped; `--no-stream` prints one.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use support::Berth;

#[test]
fn stats_streams_until_its_container_stops() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    let id = berth.run_detached(&["--network", "none", "busybox", "sleep", "60"]);
    let once = berth
        .run(&[
            "stats",
            "--no-stream",
            "--format",
            "{{.Name}} {{.PIDs}}",
            &id,
        ])
        .ok();
    assert_eq!(once.lines().count(), 1, "{once}");

    let mut stream = berth
        .command()
        .args(["stats", "--format", "{{.ID}} {{.PIDs}}", &id])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(stream.stdout.take().unwrap()).lines();
    let started = Instant::now();
    let first = lines.next().unwrap().unwrap();
    let second = lines.next().unwrap().unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "one table a second"
    );
    assert_eq!(first, format!("{} 1", &id[..12]));
    assert_eq!(second, first);
    // The named container stops: the stream ends by itself.
    berth.run(&["stop", "-t", "0", &id]).ok();
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = stream.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "stats did not end after its container stopped"
        );
        // Keep reading so its writes never block.
        let _ = lines.next();
    };
    berth.run(&["rm", "-f", &id]).ok();
    assert!(status.success(), "{status:?}");
}
