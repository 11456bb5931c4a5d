//! Health checks (issue 17): `--health-*`, `--no-healthcheck` and the image's `HEALTHCHECK`,
//! run by the container's monitor — `State.Health`, `ps`'s `(healthy)` and `health=` filter,
//! the `health_status` and probe exec events, Docker's timing rules (retries, start period,
//! timeout), pause, restart and stop. The last test runs the same docker CLI commands against
//! `berth serve` and against Docker (`BERTH_TEST_DOCKER_HOST`) and compares the answers.
//!
//! Timings here are margins, never measurements: a probe every 100–200 ms and generous
//! deadlines, so a loaded machine makes a test slower, not red.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

#[path = "api/compare.rs"]
mod compare;
#[path = "api/harness.rs"]
mod harness;
mod support;

use std::time::Duration;

use serde_json::Value;
use support::containers::wait_until;
use support::Berth;

/// `State.Health` of `container` (Null without one).
fn health_state(berth: &Berth, container: &str) -> Value {
    berth.inspect_json(container)["State"]["Health"].clone()
}

#[track_caller]
fn wait_health(berth: &Berth, container: &str, status: &str) -> Value {
    let mut last = Value::Null;
    wait_until(30.0, &format!("{container} to be {status}"), || {
        last = health_state(berth, container);
        last["Status"] == status
    });
    last
}

/// A moment just ahead, as `--until` takes it: a duration would count back from now to the
/// whole second (Docker's rule), leaving out what happened in this one.
fn soon() -> String {
    let time = chrono::Utc::now() + chrono::Duration::milliseconds(100);
    format!("{}.{:09}", time.timestamp(), time.timestamp_subsec_nanos())
}

/// The actions of `container`'s events so far, in order.
fn actions(berth: &Berth, container: &str) -> Vec<String> {
    berth
        .run(&[
            "events",
            "--since",
            "10m",
            "--until",
            &soon(),
            "--filter",
            &format!("container={container}"),
            "--format",
            "{{.Action}}",
        ])
        .ok()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn status_column(berth: &Berth, container: &str) -> String {
    let id = berth.inspect(container, "{{.Id}}");
    berth
        .run(&[
            "ps",
            "-a",
            "--filter",
            &format!("id={id}"),
            "--format",
            "{{.Status}}",
        ])
        .ok()
        .trim()
        .to_owned()
}

#[test]
fn a_passing_probe_makes_the_container_healthy() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    let id = berth.run_detached(&[
        "--name",
        "passing",
        "--network",
        "none",
        "--health-cmd",
        "echo out; echo err >&2",
        "--health-interval",
        "200ms",
        "busybox",
        "sleep",
        "300",
    ]);
    assert_eq!(health_state(&berth, "passing")["Status"], "starting");
    assert!(
        status_column(&berth, "passing").ends_with("(health: starting)"),
        "{}",
        status_column(&berth, "passing")
    );
    let health = wait_health(&berth, "passing", "healthy");
    assert_eq!(health["FailingStreak"], 0);
    let first = &health["Log"][0];
    assert_eq!(first["ExitCode"], 0);
    // stdout and stderr together, as Docker keeps them.
    let output = first["Output"].as_str().unwrap();
    assert!(
        output.contains("out\n") && output.contains("err\n"),
        "{output:?}"
    );
    let start = chrono::DateTime::parse_from_rfc3339(first["Start"].as_str().unwrap()).unwrap();
    let end = chrono::DateTime::parse_from_rfc3339(first["End"].as_str().unwrap()).unwrap();
    assert!(start <= end, "{first}");
    assert!(status_column(&berth, "passing").ends_with("(healthy)"));
    // Docker's events for a probe: its exec's three, then the status change.
    let events = actions(&berth, &id);
    let probe = events
        .iter()
        .position(|action| action.starts_with("exec_create"))
        .unwrap_or_else(|| panic!("no probe in {events:?}"));
    assert_eq!(
        events[probe..probe + 4],
        [
            "exec_create: /bin/sh -c echo out; echo err >&2",
            "exec_start: /bin/sh -c echo out; echo err >&2",
            "exec_die",
            "health_status: healthy",
        ],
        "{events:?}"
    );
    assert_eq!(
        events
            .iter()
            .filter(|a| a.starts_with("health_status"))
            .count(),
        1
    );
}

#[test]
fn retries_failures_make_it_unhealthy_and_the_log_keeps_five() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    let id = berth.run_detached(&[
        "--network",
        "none",
        "--health-cmd",
        "echo failing; exit 3",
        "--health-interval",
        "100ms",
        "--health-retries",
        "2",
        "busybox",
        "sleep",
        "300",
    ]);
    let health = wait_health(&berth, &id, "unhealthy");
    assert!(health["FailingStreak"].as_u64().unwrap() >= 2, "{health}");
    for entry in health["Log"].as_array().unwrap() {
        assert_eq!(entry["ExitCode"], 3);
        assert_eq!(entry["Output"], "failing\n");
    }
    wait_until(30.0, "seven failures", || {
        health_state(&berth, &id)["FailingStreak"].as_u64().unwrap() >= 7
    });
    assert_eq!(
        health_state(&berth, &id)["Log"].as_array().unwrap().len(),
        5
    );
    let events = actions(&berth, &id);
    let changes: Vec<&String> = events
        .iter()
        .filter(|action| action.starts_with("health_status"))
        .collect();
    assert_eq!(changes, ["health_status: unhealthy"], "{events:?}");
    assert!(events.iter().any(|action| action == "exec_die"));
    assert!(status_column(&berth, &id).ends_with("(unhealthy)"));
}

#[test]
fn failures_in_the_start_period_do_not_count() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    let id = berth.run_detached(&[
        "--network",
        "none",
        "--health-cmd",
        "exit 1",
        "--health-interval",
        "100ms",
        "--health-retries",
        "1",
        "--health-start-period",
        "3s",
        "busybox",
        "sleep",
        "300",
    ]);
    let started = std::time::Instant::now();
    wait_until(30.0, "two failed probes", || {
        health_state(&berth, &id)["Log"]
            .as_array()
            .map_or(0, Vec::len)
            >= 2
    });
    let early = health_state(&berth, &id);
    if started.elapsed() < Duration::from_millis(2500) {
        assert_eq!(early["Status"], "starting", "{early}");
        assert_eq!(early["FailingStreak"], 0, "{early}");
    } else {
        eprintln!("SKIP: the machine took too long to check the start period's grace");
    }
    let late = wait_health(&berth, &id, "unhealthy");
    assert_eq!(late["FailingStreak"], 1, "{late}");
}

#[test]
fn a_probe_past_its_timeout_is_killed_and_fails() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    let id = berth.run_detached(&[
        "--network",
        "none",
        "--health-cmd",
        "sleep 30",
        "--health-interval",
        "100ms",
        "--health-timeout",
        "300ms",
        "--health-retries",
        "1",
        "busybox",
        "sleep",
        "300",
    ]);
    let health = wait_health(&berth, &id, "unhealthy");
    let entry = &health["Log"][0];
    assert_eq!(entry["ExitCode"], -1, "{entry}");
    assert_eq!(entry["Output"], "Health check exceeded timeout (300ms)");
    // The probe's process was killed (SIGKILL: 137), not left running.
    let output = berth
        .run(&[
            "events",
            "--since",
            "10m",
            "--until",
            &soon(),
            "--filter",
            &format!("container={id}"),
            "--filter",
            "event=exec_die",
            "--format",
            "{{index .Actor.Attributes \"exitCode\"}}",
        ])
        .ok();
    assert_eq!(output.lines().next(), Some("137"), "{output}");
    // Probes never pile up: at most the current one sleeps.
    let processes = berth.run(&["exec", &id, "ps", "-o", "args"]).ok();
    let sleeping = processes
        .lines()
        .filter(|line| line.trim() == "sleep 30")
        .count();
    assert!(sleeping <= 1, "{processes}");
}

#[test]
fn the_image_check_is_merged_and_no_healthcheck_turns_it_off() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth.run(&["create", "--name", "base", "busybox"]).ok();
    berth
        .run(&[
            "commit",
            "-c",
            "HEALTHCHECK --interval=100ms --timeout=2s CMD echo image-check",
            "base",
            "checked:1",
        ])
        .ok();
    let image = berth.run(&[
        "image",
        "inspect",
        "-f",
        "{{json .Config.Healthcheck}}",
        "checked:1",
    ]);
    let image: Value = serde_json::from_str(&image.ok()).unwrap();
    assert_eq!(
        image,
        serde_json::json!({"Test": ["CMD-SHELL", "echo image-check"], "Interval": 100_000_000, "Timeout": 2_000_000_000})
    );
    berth.run_detached(&[
        "--name",
        "from-image",
        "--network",
        "none",
        "checked:1",
        "sleep",
        "300",
    ]);
    berth.run_detached(&[
        "--name",
        "turned-off",
        "--network",
        "none",
        "--no-healthcheck",
        "checked:1",
        "sleep",
        "300",
    ]);
    berth.run_detached(&[
        "--name",
        "more-retries",
        "--network",
        "none",
        "--health-retries",
        "7",
        "checked:1",
        "sleep",
        "300",
    ]);
    let healthy = wait_health(&berth, "from-image", "healthy");
    assert_eq!(healthy["Log"][0]["Output"], "image-check\n");
    let config = |name: &str| berth.inspect_json(name)["Config"]["Healthcheck"].clone();
    assert_eq!(
        config("turned-off"),
        serde_json::json!({"Test": ["NONE"], "Interval": 100_000_000, "Timeout": 2_000_000_000})
    );
    assert_eq!(config("more-retries")["Retries"], 7);
    assert_eq!(config("more-retries")["Test"], image["Test"]);
    wait_health(&berth, "more-retries", "healthy");
    std::thread::sleep(Duration::from_millis(300));
    assert!(health_state(&berth, "turned-off").is_null());
    // As docker's typed struct has it: nil, not a missing key.
    assert_eq!(
        berth.inspect("turned-off", "{{json .State.Health}}"),
        "null"
    );
    assert!(!status_column(&berth, "turned-off").contains('('));
    let none = berth
        .run(&[
            "ps",
            "-a",
            "--filter",
            "health=none",
            "--format",
            "{{.Names}}",
        ])
        .ok();
    let mut none: Vec<&str> = none.lines().collect();
    none.sort_unstable();
    assert_eq!(none, ["base", "turned-off"]);
}

#[test]
fn ps_filters_by_health() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    let run = |name: &str, check: &[&str]| {
        let mut args = vec!["--name", name, "--network", "none"];
        args.extend_from_slice(check);
        args.extend_from_slice(&["busybox", "sleep", "300"]);
        berth.run_detached(&args);
    };
    run(
        "good",
        &["--health-cmd", "true", "--health-interval", "100ms"],
    );
    run(
        "bad",
        &[
            "--health-cmd",
            "false",
            "--health-interval",
            "100ms",
            "--health-retries",
            "1",
        ],
    );
    run(
        "waiting",
        &["--health-cmd", "true", "--health-interval", "1h"],
    );
    run("plain", &[]);
    wait_health(&berth, "good", "healthy");
    wait_health(&berth, "bad", "unhealthy");
    let listed = |value: &str| {
        berth
            .run(&[
                "ps",
                "--filter",
                &format!("health={value}"),
                "--format",
                "{{.Names}}",
            ])
            .ok()
            .trim()
            .to_owned()
    };
    assert_eq!(listed("healthy"), "good");
    assert_eq!(listed("unhealthy"), "bad");
    assert_eq!(listed("starting"), "waiting");
    assert_eq!(listed("none"), "plain");
    let refused = berth.run(&["ps", "--filter", "health=fine"]).fails(1);
    assert!(
        refused.contains("Unrecognised filter value for health: fine"),
        "{refused}"
    );
    assert!(status_column(&berth, "waiting").ends_with("(health: starting)"));
    assert!(!status_column(&berth, "plain").contains('('));
}

#[test]
fn pause_and_stop_stop_the_probes() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    let id = berth.run_detached(&[
        "--network",
        "none",
        "--health-cmd",
        "true",
        "--health-interval",
        "100ms",
        "busybox",
        "sleep",
        "300",
    ]);
    wait_health(&berth, &id, "healthy");
    // Paused: dockerd's monitor stops and leaves the container unhealthy, probing nothing.
    berth.run(&["pause", &id]).ok();
    let paused = health_state(&berth, &id);
    assert_eq!(paused["Status"], "unhealthy");
    let execs = |berth: &Berth| {
        actions(berth, &id)
            .iter()
            .filter(|action| action.starts_with("exec_create"))
            .count()
    };
    // A probe that began before the pause may still end (it was frozen with the container).
    std::thread::sleep(Duration::from_millis(300));
    let before = execs(&berth);
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(execs(&berth), before, "probes ran while paused");
    assert!(status_column(&berth, &id).ends_with("(Paused)"));
    berth.run(&["unpause", &id]).ok();
    wait_health(&berth, &id, "healthy");

    // `restart`: a new run starts over (starting, no failures), keeping the log.
    let log_before = health_state(&berth, &id)["Log"].as_array().unwrap().len();
    berth.run(&["restart", "-t", "1", &id]).ok();
    let restarted = wait_health(&berth, &id, "healthy");
    assert!(restarted["Log"].as_array().unwrap().len() >= log_before.min(4));

    berth.run(&["stop", "-t", "1", &id]).ok();
    let stopped = health_state(&berth, &id);
    assert_eq!(stopped["Status"], "unhealthy", "{stopped}");
    let after_stop = execs(&berth);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(execs(&berth), after_stop, "probes ran after the stop");
    assert!(status_column(&berth, &id).starts_with("Exited"));
    assert_eq!(
        berth
            .run(&[
                "ps",
                "-a",
                "--filter",
                "health=unhealthy",
                "-q",
                "--no-trunc"
            ])
            .ok()
            .trim(),
        id
    );
    berth.assert_no_leftovers(&id);
    berth.run(&["rm", &id]).ok();
    assert!(
        berth.container_dirs().is_empty(),
        "{:?}",
        berth.container_dirs()
    );
}

/// What a case shows of one engine, with times, ids and durations taken out.
#[derive(Debug, PartialEq)]
struct Observed {
    statuses: Vec<String>,
    filters: Vec<(String, String)>,
    health_keys: Vec<String>,
    log_keys: Vec<String>,
    unhealthy: Value,
    config: Value,
    events: Vec<String>,
}

/// "Up 3 seconds (healthy)" → "Up (healthy)".
fn without_duration(status: &str) -> String {
    match (status.split_once(' '), status.rfind('(')) {
        (Some(("Up", _)), Some(open)) => format!("Up {}", &status[open..]),
        (Some(("Up", _)), None) => "Up".to_owned(),
        _ => status.to_owned(),
    }
}

fn keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> = value
        .as_object()
        .map(|object| object.keys().cloned().collect())
        .unwrap_or_default();
    keys.sort();
    keys
}

fn observe(engine: &compare::Engine<'_>) -> Observed {
    let good = engine.run(
        "good",
        &["--health-cmd", "echo ok", "--health-interval", "200ms"],
        &["sleep", "300"],
    );
    let bad = engine.run(
        "bad",
        &[
            "--health-cmd",
            "echo no; exit 2",
            "--health-interval",
            "200ms",
            "--health-retries",
            "1",
        ],
        &["sleep", "300"],
    );
    let waiting = engine.run(
        "waiting",
        &["--health-cmd", "true", "--health-interval", "1h"],
        &["sleep", "300"],
    );
    let plain = engine.run("plain", &[], &["sleep", "300"]);
    let _cleanup = compare::Cleanup::new(
        engine,
        vec![good.clone(), bad.clone(), waiting.clone(), plain.clone()],
    );
    let state = |name: &str| -> Value {
        serde_json::from_str(&engine.inspect(name, "{{json .State}}")).unwrap()
    };
    wait_until(30.0, &format!("{} health", engine.name), || {
        state(&good)["Health"]["Status"] == "healthy"
            && state(&bad)["Health"]["Status"] == "unhealthy"
    });
    let ps = |filter: &str| {
        let mut args = vec!["ps", "--format", "{{.Names}} {{.Status}}"];
        if !filter.is_empty() {
            args.extend(["--filter", filter]);
        }
        let mut lines: Vec<String> = engine
            .docker(&args)
            .ok()
            .lines()
            .filter(|line| line.starts_with(&engine.name("")))
            .map(|line| {
                let (name, status) = line.split_once(' ').unwrap();
                format!(
                    "{} {}",
                    name.trim_start_matches(&engine.name("")),
                    without_duration(status)
                )
            })
            .collect();
        lines.sort();
        lines
    };
    let statuses = ps("");
    let filters = [
        "health=healthy",
        "health=unhealthy",
        "health=starting",
        "health=none",
    ]
    .iter()
    .map(|filter| {
        let names: Vec<String> = ps(filter)
            .into_iter()
            .map(|line| line.split(' ').next().unwrap().to_owned())
            .collect();
        (filter.to_string(), names.join(","))
    })
    .collect();
    // The unhealthy check without its times, and with only whether the streak reached the
    // retries (it grows with every probe).
    let bad_state = state(&bad);
    let health = &bad_state["Health"];
    let unhealthy = serde_json::json!({
        "Status": health["Status"],
        "ReachedRetries": health["FailingStreak"].as_u64().unwrap_or(0) >= 1,
        "ExitCode": health["Log"][0]["ExitCode"],
        "Output": health["Log"][0]["Output"],
    });
    let refused = engine.docker(&["ps", "--filter", "health=fine"]);
    assert_eq!(refused.code(), 1, "{}", engine.name);
    assert!(refused
        .stderr()
        .contains("Unrecognised filter value for health: fine"));
    let events = engine
        .docker(&[
            "events",
            "--since",
            "5m",
            "--until",
            &soon(),
            "--filter",
            &format!("container={good}"),
            "--format",
            "{{.Action}}",
        ])
        .ok();
    let events: Vec<String> = events
        .lines()
        .filter(|action| action.starts_with("exec_") || action.starts_with("health_status"))
        .take(4)
        .map(str::to_owned)
        .collect();
    let config: Value =
        serde_json::from_str(&engine.inspect(&bad, "{{json .Config.Healthcheck}}")).unwrap();
    Observed {
        statuses,
        filters,
        health_keys: keys(&bad_state["Health"]),
        log_keys: keys(&bad_state["Health"]["Log"][0]),
        unhealthy,
        config,
        events,
    }
}

#[test]
fn health_checks_match_docker_through_the_api() {
    let Some(server) = harness::Server::start() else {
        return;
    };
    let berth_observed = observe(&compare::Engine::berth(&server, "health"));
    assert_eq!(
        berth_observed.statuses,
        [
            "bad Up (unhealthy)",
            "good Up (healthy)",
            "plain Up",
            "waiting Up (health: starting)",
        ]
    );
    assert_eq!(
        berth_observed.events,
        [
            "exec_create: /bin/sh -c echo ok",
            "exec_start: /bin/sh -c echo ok",
            "exec_die",
            "health_status: healthy"
        ]
    );
    if let Some(docker) = compare::Engine::reference("health") {
        let docker_observed = observe(&docker);
        assert_eq!(berth_observed, docker_observed);
    }
}
