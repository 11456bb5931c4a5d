//! Commands on existing containers: `ps`, `logs`, `inspect`, `rename`, id
//! prefixes, `exec`, `top`, `pause`/`unpause`, `stats`, `diff`, `export`,
//! and the file system flags (`--read-only`, `--tmpfs`, `-v`, `--mount`)
//! with the `volume` commands. Docker's columns, words and exit codes.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use support::containers::{pid_alive, wait_child, wait_until};
use support::{fixture_id, Berth};

const DEFAULT_PATH: &str = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

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

fn names(berth: &Berth, args: &[&str]) -> Vec<String> {
    let mut full = vec!["ps", "--format", "{{.Names}}"];
    full.extend_from_slice(args);
    let mut found: Vec<String> = berth.run(&full).ok().lines().map(str::to_owned).collect();
    found.sort();
    found
}

// ---------------------------------------------------------------- ps

#[test]
fn ps_prints_docker_columns() {
    let berth = busybox();
    let id = berth.run_detached(&["--name", "web", "busybox", "sleep", "100"]);
    let (header, rows) = support::table(&berth.run(&["ps"]).ok());
    assert_eq!(
        header,
        [
            "CONTAINER ID",
            "IMAGE",
            "COMMAND",
            "CREATED",
            "STATUS",
            "PORTS",
            "NAMES"
        ]
    );
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    assert_eq!(row[0], id[..12]);
    assert_eq!(row[1], "busybox");
    assert_eq!(row[2], "\"sleep 100\"");
    assert!(row[3].ends_with(" ago"), "{row:?}");
    assert!(row[4].starts_with("Up "), "{row:?}");
    assert_eq!(row[5], "");
    assert_eq!(row[6], "web");

    assert_eq!(berth.run(&["ps", "-q"]).ok(), format!("{}\n", &id[..12]));
    assert_eq!(
        berth.run(&["ps", "-q", "--no-trunc"]).ok(),
        format!("{id}\n")
    );
    let (_, rows) = support::table(&berth.run(&["ps", "--no-trunc"]).ok());
    assert_eq!(rows[0][0], id);

    // Docker's COMMAND: arguments with spaces in single quotes, the whole
    // truncated to 20 characters with an ellipsis, then Go-quoted…
    let long = berth.run_detached(&[
        "--name",
        "long",
        "busybox",
        "sh",
        "-c",
        "echo \"a long\" command line; sleep 100",
    ]);
    let command = berth
        .run(&["ps", "-f", "name=long", "--format", "{{.Command}}"])
        .ok();
    assert_eq!(command, "\"sh -c 'echo \\\"a long…\"\n");
    // … but not with --no-trunc.
    let command = berth
        .run(&[
            "ps",
            "--no-trunc",
            "-f",
            "name=long",
            "--format",
            "{{.Command}}",
        ])
        .ok();
    assert_eq!(
        command,
        "\"sh -c 'echo \\\"a long\\\" command line; sleep 100'\"\n"
    );
    berth.run(&["rm", "-f", &long]).ok();

    // Exited containers only with -a.
    let done = berth.run_detached(&["--name", "done", "busybox", "sh", "-c", "exit 3"]);
    berth.wait_status(&done, "exited", 5.0);
    assert_eq!(names(&berth, &[]), ["web"]);
    assert_eq!(names(&berth, &["-a"]), ["done", "web"]);
    let status = berth
        .run(&["ps", "-a", "-f", "name=done", "--format", "{{.Status}}"])
        .ok();
    assert!(status.starts_with("Exited (3) "), "{status}");
    assert!(status.trim_end().ends_with(" ago"), "{status}");
}

#[test]
fn ps_latest_last_and_format() {
    let berth = busybox();
    let first = berth.run(&["create", "--name", "first", "busybox"]).ok();
    let second = berth.run(&["create", "--name", "second", "busybox"]).ok();
    let third = berth.run(&["create", "--name", "third", "busybox"]).ok();
    let _ = (first, second);
    // -l and -n imply -a; newest first.
    assert_eq!(
        berth.run(&["ps", "-l", "--format", "{{.Names}}"]).ok(),
        "third\n"
    );
    assert_eq!(
        berth.run(&["ps", "-n", "1", "--format", "{{.Names}}"]).ok(),
        "third\n"
    );
    assert_eq!(
        berth.run(&["ps", "-n", "2", "--format", "{{.Names}}"]).ok(),
        "third\nsecond\n"
    );
    assert_eq!(
        berth.run(&["ps", "-a", "--format", "{{.Names}}"]).ok(),
        "third\nsecond\nfirst\n"
    );
    assert_eq!(berth.run(&["ps", "-l", "-q", "--no-trunc"]).ok(), third);

    let table_output = berth
        .run(&["ps", "-l", "--format", "table {{.Names}}\t{{.Status}}"])
        .ok();
    assert_eq!(table_output, "NAMES     STATUS\nthird     Created\n");
    let json = berth.run(&["ps", "-l", "--format", "{{json .}}"]).ok();
    let row: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    for key in [
        "Command",
        "CreatedAt",
        "ID",
        "Image",
        "Labels",
        "LocalVolumes",
        "Mounts",
        "Names",
        "Networks",
        "Ports",
        "RunningFor",
        "Size",
        "State",
        "Status",
    ] {
        assert!(row.get(key).is_some(), "missing {key} in {json}");
    }
    assert_eq!(row["State"], "created");
    assert_eq!(row["Names"], "third");
}

#[test]
fn ps_filters() {
    let berth = images();
    let one = berth.run_detached(&["--name", "one", "-l", "app=web", "busybox", "sleep", "100"]);
    let two = berth.run_detached(&["--name", "two", "other:latest"]);
    let three = berth.run_detached(&["--name", "three", "busybox", "sh", "-c", "exit 4"]);
    berth
        .run(&["create", "--name", "four", "-l", "app=db", "busybox"])
        .ok();
    berth.wait_status(&two, "exited", 5.0);
    berth.wait_status(&three, "exited", 5.0);

    let filter = |value: &str| names(&berth, &["-a", "-f", value]);
    assert_eq!(filter("status=running"), ["one"]);
    assert_eq!(filter("status=exited"), ["three", "two"]);
    assert_eq!(filter("status=created"), ["four"]);
    assert_eq!(filter("name=one"), ["one"]);
    // name= matches a substring, as in Docker.
    assert_eq!(filter("name=t"), ["three", "two"]);
    assert_eq!(filter("label=app"), ["four", "one"]);
    assert_eq!(filter("label=app=web"), ["one"]);
    assert_eq!(filter("ancestor=other"), ["two"]);
    assert_eq!(filter("ancestor=busybox"), ["four", "one", "three"]);
    assert_eq!(filter("exited=4"), ["three"]);
    assert_eq!(filter("exited=0"), ["two"]);
    assert_eq!(filter(&format!("id={}", &one[..6])), ["one"]);
    // Several values of one filter are ORed, different filters ANDed.
    assert_eq!(
        names(&berth, &["-a", "-f", "name=one", "-f", "name=two"]),
        ["one", "two"]
    );
    assert_eq!(
        names(&berth, &["-a", "-f", "label=app", "-f", "status=running"]),
        ["one"]
    );
    // Without -a only running containers are considered.
    assert_eq!(names(&berth, &["-f", "name=t"]), Vec::<String>::new());
    let stderr = berth.run(&["ps", "-f", "nosuchfilter=1"]).fails(1);
    assert!(stderr.contains("Invalid filter 'nosuchfilter'"), "{stderr}");
}

// ---------------------------------------------------------------- logs

/// `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ `, Docker's fixed-width RFC 3339.
fn split_timestamp(line: &str) -> Option<(&str, &str)> {
    let (stamp, rest) = line.split_once(' ')?;
    let shape = stamp.len() == 30
        && stamp.bytes().enumerate().all(|(index, byte)| match index {
            4 | 7 => byte == b'-',
            10 => byte == b'T',
            13 | 16 => byte == b':',
            19 => byte == b'.',
            29 => byte == b'Z',
            _ => byte.is_ascii_digit(),
        });
    shape.then_some((stamp, rest))
}

#[test]
fn logs_content_tail_and_timestamps() {
    let berth = busybox();
    // stdout and stderr come back on their own streams.
    let both = berth.run_detached(&["busybox", "sh", "-c", "echo out; echo err >&2"]);
    berth.wait_status(&both, "exited", 5.0);
    let run = berth.run(&["logs", &both]);
    assert_eq!(run.ok(), "out\n");
    assert_eq!(run.stderr(), "err\n");

    let id = berth.run_detached(&["busybox", "sh", "-c", "echo one; echo three; echo four"]);
    berth.wait_status(&id, "exited", 5.0);
    assert_eq!(berth.run(&["logs", &id]).ok(), "one\nthree\nfour\n");
    let run = berth.run(&["logs", "--tail", "2", &id]);
    assert_eq!(run.ok(), "three\nfour\n");
    assert_eq!(run.stderr(), "");
    assert_eq!(berth.run(&["logs", "--tail", "0", &id]).ok(), "");
    assert_eq!(
        berth.run(&["logs", "-n", "all", &id]).ok(),
        "one\nthree\nfour\n"
    );

    let stamped = berth.run(&["logs", "-t", &id]).ok();
    let lines: Vec<(&str, &str)> = stamped
        .lines()
        .map(|line| split_timestamp(line).unwrap_or_else(|| panic!("bad -t line {line:?}")))
        .collect();
    assert_eq!(
        lines.iter().map(|(_, text)| *text).collect::<Vec<_>>(),
        ["one", "three", "four"]
    );
    let started = berth.inspect(&id, "{{.State.StartedAt}}");
    assert!(
        lines[0].0[..19] >= started[..19],
        "{lines:?} before {started}"
    );

    assert_eq!(
        berth
            .run(&["logs", "--until", "2000-01-01T00:00:00Z", &id])
            .ok(),
        ""
    );
    assert_eq!(
        berth
            .run(&["logs", "--since", "2000-01-01T00:00:00Z", &id])
            .ok(),
        "one\nthree\nfour\n"
    );
    let stderr = berth.run(&["logs", "nosuch"]).fails(1);
    assert!(stderr.contains("No such container: nosuch"), "{stderr}");
}

#[test]
fn logs_follow_returns_when_the_container_exits() {
    let berth = busybox();
    let id = berth.run_detached(&["busybox", "sh", "-c", "echo first; sleep 0.5; echo second"]);
    berth.wait_logs(&id, "first", 5.0);
    let mut follow = berth.spawn(&["logs", "-f", &id]);
    let status = wait_child(&mut follow, 8.0, "logs -f to return after the exit");
    assert!(status.success());
    let output = follow.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout), "first\nsecond\n");
    // On an exited container -f returns at once.
    let mut follow = berth.spawn(&["logs", "-f", "--tail", "1", &id]);
    wait_child(&mut follow, 5.0, "logs -f of an exited container");
    let output = follow.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout), "second\n");
}

// ---------------------------------------------------------------- inspect

#[test]
fn inspect_reports_state_config_and_host_config() {
    let berth = busybox();
    let id = berth.run_detached(&[
        "--name",
        "probe",
        "-e",
        "FOO=bar",
        "-l",
        "team=berth",
        "-m",
        "64m",
        "--cpus",
        "0.5",
        "--pids-limit",
        "100",
        "--restart",
        "on-failure:3",
        "busybox",
        "sh",
        "-c",
        "trap 'exit 5' TERM; while :; do sleep 0.05; done",
    ]);
    let json = berth.inspect_json("probe");
    assert_eq!(json["Id"], id.as_str());
    assert_eq!(json["Name"], "/probe");
    assert_eq!(json["Path"], "sh");
    assert_eq!(
        json["Args"],
        serde_json::json!(["-c", "trap 'exit 5' TERM; while :; do sleep 0.05; done"])
    );
    assert_eq!(
        json["Image"],
        fixture_id("busybox-docker.tar", "busybox:latest").as_str()
    );
    let state = &json["State"];
    assert_eq!(state["Status"], "running");
    assert_eq!(state["Running"], true);
    assert_eq!(state["Paused"], false);
    assert_eq!(state["ExitCode"], 0);
    let pid = state["Pid"].as_i64().unwrap();
    assert!(pid > 1 && pid_alive(pid as i32), "State.Pid {pid}");
    let started = state["StartedAt"].as_str().unwrap().to_owned();
    assert!(
        chrono::DateTime::parse_from_rfc3339(&started).is_ok() && !started.starts_with("0001"),
        "{started}"
    );
    assert_eq!(state["FinishedAt"], "0001-01-01T00:00:00Z");

    let config = &json["Config"];
    assert_eq!(
        config["Cmd"],
        serde_json::json!([
            "sh",
            "-c",
            "trap 'exit 5' TERM; while :; do sleep 0.05; done"
        ])
    );
    assert_eq!(config["Image"], "busybox");
    assert_eq!(config["Entrypoint"], serde_json::Value::Null);
    assert_eq!(config["Env"], serde_json::json!(["FOO=bar", DEFAULT_PATH]));
    assert_eq!(config["Labels"]["team"], "berth");
    assert_eq!(config["Hostname"], &id[..12]);

    let host = &json["HostConfig"];
    assert_eq!(host["Memory"], 67_108_864);
    assert_eq!(host["NanoCpus"], 500_000_000);
    assert_eq!(host["PidsLimit"], 100);
    assert_eq!(host["RestartPolicy"]["Name"], "on-failure");
    assert_eq!(host["RestartPolicy"]["MaximumRetryCount"], 3);
    assert_eq!(host["AutoRemove"], false);
    assert_eq!(host["LogConfig"]["Type"], "json-file");
    assert_eq!(json["RestartCount"], 0);

    // -f templates and `container inspect` agree.
    assert_eq!(berth.inspect("probe", "{{.State.Pid}}"), pid.to_string());
    assert_eq!(berth.inspect(&id, "{{.Name}}"), "/probe");
    assert_eq!(
        berth.inspect("probe", "{{json .Config.Cmd}}"),
        serde_json::to_string(&config["Cmd"]).unwrap()
    );

    berth.run(&["stop", "probe"]).ok();
    let json = berth.inspect_json("probe");
    let state = &json["State"];
    assert_eq!(state["Status"], "exited");
    assert_eq!(state["Running"], false);
    assert_eq!(state["Pid"], 0);
    assert_eq!(state["ExitCode"], 5);
    let finished = state["FinishedAt"].as_str().unwrap();
    let finished_at = chrono::DateTime::parse_from_rfc3339(finished).unwrap();
    let started_at = chrono::DateTime::parse_from_rfc3339(&started).unwrap();
    assert!(finished_at >= started_at, "{started} .. {finished}");
    // A manual stop is not retried by on-failure.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(berth.status("probe"), "exited");

    let run = berth.run(&["container", "inspect", "nosuch"]);
    assert_eq!(run.stdout(), "[]\n");
    assert!(
        run.stderr().contains("No such container: nosuch"),
        "{}",
        run.stderr()
    );
    run.fails(1);
    let run = berth.run(&["inspect", "nosuch"]);
    assert!(
        run.stderr().contains("No such object: nosuch"),
        "{}",
        run.stderr()
    );
    run.fails(1);
}

#[test]
fn plain_inspect_finds_networks_and_volumes_and_knows_the_other_types() {
    let berth = Berth::new();
    berth.run(&["network", "create", "inspnet"]).ok();
    berth.run(&["volume", "create", "inspvol"]).ok();
    assert_eq!(
        berth
            .run(&[
                "inspect",
                "-f",
                "{{.Name}} {{.Driver}}",
                "inspnet",
                "inspvol"
            ])
            .ok(),
        "inspnet bridge\ninspvol local\n"
    );
    assert_eq!(
        berth
            .run(&[
                "inspect",
                "--type",
                "network",
                "-f",
                "{{.Scope}}",
                "inspnet"
            ])
            .ok(),
        "local\n"
    );
    // Docker's words for each type, an empty list, and exit 1.
    for (args, message) in [
        (
            &["inspect", "--type", "volume", "inspnet"][..],
            "Error: No such volume: inspnet",
        ),
        (
            &["inspect", "--type", "network", "inspvol"],
            "Error: No such network: inspvol",
        ),
        (
            &["inspect", "--type", "node", "n1"],
            "This node is not a swarm manager.",
        ),
        (
            &["inspect", "--type", "plugin", "p1"],
            r#"plugin "p1" not found"#,
        ),
    ] {
        let run = berth.run(args);
        assert_eq!(run.stdout(), "[]\n", "{args:?}");
        assert!(run.stderr().contains(message), "{args:?}: {}", run.stderr());
        run.fails(1);
    }
    let stderr = berth.run(&["inspect", "--type", "bogus", "x"]).fails(1);
    assert!(
        stderr.contains(r#"unknown type: "bogus": must be one of "config", "container""#),
        "{stderr}"
    );
    berth.run(&["network", "rm", "inspnet"]).ok();
    berth.run(&["volume", "rm", "inspvol"]).ok();
}

// ---------------------------------------------------------------- names and ids

#[test]
fn rename_and_name_conflicts() {
    let berth = busybox();
    let id = berth.run_detached(&["--name", "old", "busybox", "sleep", "100"]);
    berth.run(&["rename", "old", "new"]).ok();
    assert_eq!(berth.inspect(&id, "{{.Name}}"), "/new");
    assert_eq!(names(&berth, &[]), ["new"]);
    let stderr = berth.run(&["inspect", "old"]).fails(1);
    assert!(stderr.contains("No such object: old"), "{stderr}");

    // The name is taken: run refuses with Docker's words (exit 125) and
    // creates nothing.
    let stderr = berth
        .run(&["run", "--name", "new", "busybox", "true"])
        .fails(125);
    assert!(
        stderr.contains(&format!(
            r#"Conflict. The container name "/new" is already in use by container "{id}". You have to remove (or rename) that container to be able to reuse that name."#
        )),
        "{stderr}"
    );
    assert_eq!(berth.all_ids(), std::slice::from_ref(&id));

    let other = berth.run(&["create", "--name", "other", "busybox"]).ok();
    let stderr = berth.run(&["rename", "other", "new"]).fails(1);
    assert!(
        stderr.contains(r#"Conflict. The container name "/new" is already in use"#),
        "{stderr}"
    );
    assert_eq!(berth.inspect(other.trim(), "{{.Name}}"), "/other");
    let stderr = berth.run(&["rename", "nosuch", "x1"]).fails(1);
    assert!(stderr.contains("No such container: nosuch"), "{stderr}");
    let stderr = berth
        .run(&["run", "--name", "bad name", "busybox", "true"])
        .fails(125);
    assert!(
        stderr.contains(
            "Invalid container name (bad name), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed"
        ),
        "{stderr}"
    );
    // A removed container frees its name.
    berth.run(&["rm", "-f", "new"]).ok();
    berth
        .run(&["run", "--rm", "--name", "new", "busybox", "true"])
        .ok();
}

#[test]
fn containers_are_found_by_id_prefix() {
    let berth = busybox();
    let id = berth.run_detached(&["busybox", "sleep", "100"]);
    assert_eq!(berth.inspect(&id[..4], "{{.Id}}"), id);
    assert_eq!(berth.inspect(&id[..12], "{{.Id}}"), id);
    berth.run(&["exec", &id[..5], "true"]).ok();
    // A name wins over an id prefix.
    let named = berth.run(&["create", "--name", &id[..6], "busybox"]).ok();
    assert_eq!(berth.inspect(&id[..6], "{{.Id}}"), named.trim());

    // 17 ids share a first hex digit somewhere: an ambiguous prefix fails.
    let mut ids = vec![id.clone(), named.trim().to_owned()];
    for _ in 0..15 {
        ids.push(berth.run(&["create", "busybox"]).ok().trim().to_owned());
    }
    let mut seen = BTreeSet::new();
    let shared = ids
        .iter()
        .map(|id| &id[..1])
        .find(|first| !seen.insert(*first))
        .unwrap()
        .to_owned();
    let stderr = berth.run(&["rm", &shared]).fails(1);
    assert!(
        stderr.contains(&format!(
            "Multiple IDs found with provided prefix: {shared}"
        )),
        "{stderr}"
    );
    let stderr = berth.run(&["stop", "zzzz"]).fails(1);
    assert!(stderr.contains("No such container: zzzz"), "{stderr}");
}

// ---------------------------------------------------------------- exec

#[test]
fn exec_output_exit_code_env_workdir_and_user() {
    let berth = images();
    let id = berth.run_detached(&["-e", "FROM_RUN=1", "busybox", "sleep", "100"]);
    assert_eq!(berth.run(&["exec", &id, "echo", "hi"]).ok(), "hi\n");
    berth.run(&["exec", &id, "sh", "-c", "exit 7"]).fails(7);
    let run = berth.run(&["exec", &id, "sh", "-c", "echo out; echo err >&2"]);
    assert_eq!(run.ok(), "out\n");
    assert_eq!(run.stderr(), "err\n");

    // The container's environment, plus -e.
    assert_eq!(
        berth
            .run(&[
                "exec",
                "-e",
                "FOO=bar",
                &id,
                "sh",
                "-c",
                "echo $FOO $FROM_RUN $HOME"
            ])
            .ok(),
        "bar 1 /root\n"
    );
    assert_eq!(
        berth.run(&["exec", "-w", "/tmp", &id, "pwd"]).ok(),
        "/tmp\n"
    );
    assert_eq!(berth.run(&["exec", &id, "pwd"]).ok(), "/\n");
    assert_eq!(
        berth.run(&["exec", "-u", "1000", &id, "id"]).ok(),
        "uid=1000(berthuser) gid=1000(berthgroup) groups=1000(berthgroup),2000(extra)\n"
    );
    assert_eq!(
        berth
            .run(&["exec", "-u", "berthuser", &id, "sh", "-c", "echo $HOME"])
            .ok(),
        "/home/berthuser\n"
    );
    let run = berth.run_with_stdin(&["exec", "-i", &id, "cat"], Some(b"piped\n"));
    assert_eq!(run.ok(), "piped\n");

    // 126 for both, as Docker's exec (`run` gives 127 for the first).
    let stderr = berth.run(&["exec", &id, "nosuch"]).fails(126);
    assert!(
        stderr.contains(r#"exec: "nosuch": executable file not found in $PATH"#),
        "{stderr}"
    );
    berth.run(&["exec", &id, "/etc/passwd"]).fails(126);

    // exec in a container started with a working directory and a user.
    let extra = berth.run_detached(&["extra:1", "sleep", "100"]);
    assert_eq!(
        berth
            .run(&["exec", &extra, "sh", "-c", "pwd; id -u; echo $EXTRA"])
            .ok(),
        "/home/berthuser\n1000\n1\n"
    );
}

#[test]
fn exec_shares_the_container_pid_namespace() {
    let berth = busybox();
    let id = berth.run_detached(&["busybox", "sleep", "100"]);
    let listing = berth.run(&["exec", &id, "ps", "-o", "pid,comm"]).ok();
    let rows: Vec<Vec<&str>> = listing
        .lines()
        .skip(1)
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert!(
        rows.iter().any(|row| row == &["1", "sleep"]),
        "pid 1 must be the container's command:\n{listing}"
    );
    assert!(
        rows.iter().all(|row| row[0] != "1" || row[1] == "sleep"),
        "{listing}"
    );
    // The same hostname and file system as the container.
    berth
        .run(&["exec", &id, "sh", "-c", "echo shared > /tmp/file"])
        .ok();
    assert_eq!(
        berth
            .run(&["exec", &id, "sh", "-c", "cat /tmp/file; hostname"])
            .ok(),
        format!("shared\n{}\n", &id[..12])
    );
}

#[test]
fn exec_detached_returns_at_once() {
    let berth = busybox();
    let id = berth.run_detached(&["busybox", "sleep", "100"]);
    let run = berth.run(&[
        "exec",
        "-d",
        &id,
        "sh",
        "-c",
        "sleep 0.2; echo done > /tmp/marker",
    ]);
    assert_eq!(run.ok(), "");
    wait_until(5.0, "the detached exec to finish", || {
        berth.run(&["exec", &id, "cat", "/tmp/marker"]).stdout() == "done\n"
    });
}

#[test]
fn exec_into_a_stopped_or_paused_container_fails() {
    let berth = busybox();
    let created = berth
        .run(&["create", "busybox", "sleep", "100"])
        .ok()
        .trim()
        .to_owned();
    let stderr = berth.run(&["exec", &created, "true"]).fails(1);
    assert!(
        stderr.contains(&format!("Container {created} is not running")),
        "{stderr}"
    );

    let exited = berth.run_detached(&["busybox", "true"]);
    berth.wait_status(&exited, "exited", 5.0);
    let stderr = berth.run(&["exec", &exited, "true"]).fails(1);
    assert!(
        stderr.contains(&format!("Container {exited} is not running")),
        "{stderr}"
    );

    let paused = berth.run_detached(&["busybox", "sleep", "100"]);
    berth.run(&["pause", &paused]).ok();
    let stderr = berth.run(&["exec", &paused, "true"]).fails(1);
    assert!(
        stderr.contains(&format!(
            "Container {paused} is paused, unpause the container before exec"
        )),
        "{stderr}"
    );
    berth.run(&["unpause", &paused]).ok();
    let stderr = berth.run(&["exec", "nosuch", "true"]).fails(1);
    assert!(stderr.contains("No such container: nosuch"), "{stderr}");
}

// ---------------------------------------------------------------- top / pause / stats

#[test]
fn top_lists_the_container_processes() {
    let berth = busybox();
    let id = berth.run_detached(&["busybox", "sleep", "100"]);
    let pid = berth.inspect(&id, "{{.State.Pid}}");
    let output = berth.run(&["top", &id]).ok();
    let mut lines = output.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["UID", "PID", "PPID", "C", "STIME", "TTY", "TIME", "CMD"]
    );
    let rows: Vec<Vec<&str>> = lines
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 1, "{output}");
    assert_eq!(rows[0][0], "root");
    assert_eq!(rows[0][1], pid);
    assert_eq!(rows[0][7..], ["sleep", "100"]);

    berth.run(&["exec", "-d", &id, "sleep", "50"]).ok();
    wait_until(5.0, "top to list the exec'd process", || {
        berth.run(&["top", &id]).stdout().contains("sleep 50")
    });
    let stderr = berth.run(&["top", "nosuch"]).fails(1);
    assert!(stderr.contains("No such container: nosuch"), "{stderr}");
}

#[test]
fn pause_freezes_and_unpause_resumes() {
    let berth = busybox();
    let share = tempfile::tempdir().unwrap();
    let bind = format!("{}:/out", share.path().display());
    let counter_file = share.path().join("counter");
    let id = berth.run_detached(&[
        "-v",
        &bind,
        "busybox",
        "sh",
        "-c",
        "i=0; while :; do i=$((i+1)); echo $i > /out/counter; sleep 0.02; done",
    ]);
    let counter = || fs_err::read_to_string(&counter_file).unwrap_or_default();
    wait_until(5.0, "the counter to start", || !counter().is_empty());

    assert_eq!(berth.run(&["pause", &id]).ok(), format!("{id}\n"));
    assert_eq!(
        berth.inspect(
            &id,
            "{{.State.Status}} {{.State.Paused}} {{.State.Running}}"
        ),
        "paused true true"
    );
    let status = berth.run(&["ps", "--format", "{{.Status}}"]).ok();
    assert!(status.trim_end().ends_with("(Paused)"), "{status}");
    let frozen = counter();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(counter(), frozen, "the counter advanced while paused");
    let stderr = berth.run(&["pause", &id]).fails(1);
    assert!(stderr.contains("is already paused"), "{stderr}");

    assert_eq!(berth.run(&["unpause", &id]).ok(), format!("{id}\n"));
    assert_eq!(berth.status(&id), "running");
    wait_until(5.0, "the counter to advance after unpause", || {
        counter() != frozen
    });
    let stderr = berth.run(&["unpause", &id]).fails(1);
    assert!(stderr.contains("is not paused"), "{stderr}");

    // A paused container can be removed by force.
    berth.run(&["pause", &id]).ok();
    berth.run(&["rm", "-f", &id]).ok();
    assert!(berth.all_ids().is_empty());
    berth.assert_no_leftovers(&id);
}

#[test]
fn stats_no_stream_prints_one_row() {
    let berth = busybox();
    let id = berth.run_detached(&["--name", "measured", "busybox", "sleep", "100"]);
    let output = berth.run(&["stats", "--no-stream", "measured"]).ok();
    let (header, rows) = support::table(&output);
    assert_eq!(
        header,
        [
            "CONTAINER ID",
            "NAME",
            "CPU %",
            "MEM USAGE / LIMIT",
            "MEM %",
            "NET I/O",
            "BLOCK I/O",
            "PIDS"
        ]
    );
    assert_eq!(rows.len(), 1, "{output}");
    let row = &rows[0];
    assert_eq!(row[0], id[..12]);
    assert_eq!(row[1], "measured");
    assert!(row[2].ends_with('%'), "{row:?}");
    assert!(
        row[3].contains("iB / ") || row[3].contains("B / "),
        "{row:?}"
    );
    assert!(row[4].ends_with('%'), "{row:?}");
    assert_eq!(row[7], "1", "one process: {row:?}");
    let formatted = berth
        .run(&[
            "stats",
            "--no-stream",
            "--format",
            "{{.Name}} {{.PIDs}}",
            "measured",
        ])
        .ok();
    assert_eq!(formatted, "measured 1\n");
}

// ---------------------------------------------------------------- diff / export

#[test]
fn diff_lists_added_changed_and_deleted_paths() {
    let berth = busybox();
    let id = berth.run_detached(&["busybox", "sleep", "100"]);
    berth
        .run(&[
            "exec",
            &id,
            "sh",
            "-c",
            "echo x > /tmp/f; rm /etc/group; echo >> /etc/passwd; mkdir /newdir",
        ])
        .ok();
    let output = berth.run(&["diff", &id]).ok();
    let found: BTreeSet<&str> = output.lines().collect();
    // What Docker prints for the same steps (hostname, hosts and resolv.conf
    // are mounts, not changes).
    let expected: BTreeSet<&str> = [
        "C /tmp",
        "A /tmp/f",
        "C /etc",
        "C /etc/passwd",
        "D /etc/group",
        "A /newdir",
    ]
    .into_iter()
    .collect();
    assert_eq!(found, expected, "{output}");
    // Still there after the container stops.
    berth.run(&["kill", &id]).ok();
    berth.wait_status(&id, "exited", 5.0);
    let after: BTreeSet<String> = berth
        .run(&["diff", &id])
        .ok()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(after.len(), expected.len(), "{after:?}");
}

#[test]
fn export_writes_the_container_file_system() {
    let berth = images();
    let id = berth.run_detached(&["other:latest"]);
    berth.wait_status(&id, "exited", 5.0);
    let work = tempfile::tempdir().unwrap();

    // Make a change in a stopped container through a second, running one.
    let live = berth.run_detached(&["busybox", "sleep", "100"]);
    berth
        .run(&[
            "exec",
            &live,
            "sh",
            "-c",
            "echo made > /made.txt; rm /etc/group",
        ])
        .ok();
    let archive = work.path().join("export.tar");
    berth
        .run(&["export", "-o", archive.to_str().unwrap(), &live])
        .ok();
    let mut entries = std::collections::BTreeMap::new();
    let mut reader = tar::Archive::new(fs_err::File::open(&archive).unwrap());
    for entry in reader.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry
            .path()
            .unwrap()
            .to_string_lossy()
            .trim_start_matches("./")
            .to_owned();
        let mut content = String::new();
        if entry.header().entry_type().is_file() {
            std::io::Read::read_to_string(&mut entry, &mut content).unwrap_or_default();
        }
        entries.insert(path, content);
    }
    assert_eq!(entries.get("made.txt").map(String::as_str), Some("made\n"));
    assert!(
        entries.contains_key("bin/busybox"),
        "{:?}",
        entries.keys().take(20).collect::<Vec<_>>()
    );
    assert!(entries.get("etc/passwd").unwrap().contains("berthuser"));
    assert!(
        !entries.contains_key("etc/group"),
        "a deleted file was exported"
    );
    assert!(!entries
        .keys()
        .any(|path| path.starts_with("proc/") && path.len() > 5));

    // To stdout, the same entries.
    let run = berth.run(&["export", &id]);
    let mut names = BTreeSet::new();
    let bytes = run.output.stdout.clone();
    assert!(run.output.status.success(), "{}", run.stderr());
    for entry in tar::Archive::new(&bytes[..]).entries().unwrap() {
        names.insert(
            entry
                .unwrap()
                .path()
                .unwrap()
                .to_string_lossy()
                .trim_start_matches("./")
                .to_owned(),
        );
    }
    assert!(names.contains("other.txt"), "{names:?}");
    let stderr = berth.run(&["export", "nosuch"]).fails(1);
    assert!(stderr.contains("No such container: nosuch"), "{stderr}");
}

// ---------------------------------------------------------------- file system flags

#[test]
fn read_only_root_with_writable_tmpfs() {
    let berth = busybox();
    let run = berth.run(&["run", "--rm", "--read-only", "busybox", "touch", "/x"]);
    assert!(
        run.stderr().contains("touch: /x: Read-only file system"),
        "{}",
        run.stderr()
    );
    run.fails(1);
    assert_eq!(
        berth
            .run(&[
                "run",
                "--rm",
                "--read-only",
                "--tmpfs",
                "/tmp",
                "busybox",
                "sh",
                "-c",
                "touch /tmp/x && echo ok"
            ])
            .ok(),
        "ok\n"
    );
    // /dev stays writable, as in Docker.
    berth
        .run(&[
            "run",
            "--rm",
            "--read-only",
            "busybox",
            "sh",
            "-c",
            "echo x > /dev/null",
        ])
        .ok();
    let mounts = berth
        .run(&[
            "run",
            "--rm",
            "--read-only",
            "--tmpfs",
            "/scratch:size=1m",
            "busybox",
            "grep",
            " /scratch ",
            "/proc/mounts",
        ])
        .ok();
    assert!(
        mounts.starts_with("tmpfs /scratch tmpfs rw,nosuid,nodev"),
        "{mounts}"
    );
    assert!(mounts.contains("size=1024k"), "{mounts}");
}

#[test]
fn bind_mounts_share_host_directories() {
    let berth = busybox();
    let share = tempfile::tempdir().unwrap();
    fs_err::write(share.path().join("from-host"), "host\n").unwrap();
    let bind = format!("{}:/data", share.path().display());
    assert_eq!(
        berth
            .run(&[
                "run",
                "--rm",
                "-v",
                &bind,
                "busybox",
                "sh",
                "-c",
                "cat /data/from-host; echo hi > /data/f"
            ])
            .ok(),
        "host\n"
    );
    assert_eq!(
        fs_err::read_to_string(share.path().join("f")).unwrap(),
        "hi\n"
    );

    let read_only = format!("{bind}:ro");
    let run = berth.run(&[
        "run",
        "--rm",
        "-v",
        &read_only,
        "busybox",
        "sh",
        "-c",
        "echo hi > /data/g",
    ]);
    assert!(
        run.stderr().contains("Read-only file system"),
        "{}",
        run.stderr()
    );
    assert_ne!(run.code(), 0);
    assert!(!share.path().join("g").exists());
    // Reading through a read-only bind still works.
    assert_eq!(
        berth
            .run(&[
                "run",
                "--rm",
                "-v",
                &read_only,
                "busybox",
                "cat",
                "/data/from-host"
            ])
            .ok(),
        "host\n"
    );
    let mount = format!(
        "type=bind,source={},target=/b,readonly",
        share.path().display()
    );
    let run = berth.run(&["run", "--rm", "--mount", &mount, "busybox", "touch", "/b/x"]);
    assert!(
        run.stderr().contains("Read-only file system"),
        "{}",
        run.stderr()
    );
    // A missing host path is created for -v (Docker does), refused for --mount.
    let missing = share.path().join("made/by/v");
    let bind = format!("{}:/m", missing.display());
    berth
        .run(&["run", "--rm", "-v", &bind, "busybox", "true"])
        .ok();
    assert!(missing.is_dir());
    let mount = format!(
        "type=bind,source={},target=/m",
        share.path().join("absent").display()
    );
    let stderr = berth
        .run(&["run", "--rm", "--mount", &mount, "busybox", "true"])
        .fails(125);
    assert!(
        stderr.contains("bind source path does not exist"),
        "{stderr}"
    );
    assert!(berth.all_ids().is_empty());
}

#[test]
fn named_volumes_persist_and_copy_image_content() {
    let berth = busybox();
    berth
        .run(&[
            "run",
            "--rm",
            "-v",
            "vol:/data",
            "busybox",
            "sh",
            "-c",
            "echo persisted > /data/p",
        ])
        .ok();
    assert_eq!(
        berth
            .run(&[
                "run",
                "--rm",
                "-v",
                "vol:/data",
                "busybox",
                "cat",
                "/data/p"
            ])
            .ok(),
        "persisted\n"
    );
    // First use of an empty volume copies what the image has at the mount point.
    berth
        .run(&["run", "--rm", "-v", "newvol:/etc", "busybox", "true"])
        .ok();
    let passwd = berth
        .run(&[
            "run",
            "--rm",
            "-v",
            "newvol:/copied",
            "busybox",
            "cat",
            "/copied/passwd",
        ])
        .ok();
    assert!(passwd.contains("berthuser"), "{passwd}");
    let mountpoint = berth
        .run(&["volume", "inspect", "-f", "{{.Mountpoint}}", "newvol"])
        .ok();
    let host_passwd = std::path::Path::new(mountpoint.trim()).join("passwd");
    assert!(host_passwd.is_file(), "{host_passwd:?}");
    // --mount type=volume is the same thing.
    assert_eq!(
        berth
            .run(&[
                "run",
                "--rm",
                "--mount",
                "type=volume,source=vol,target=/v",
                "busybox",
                "cat",
                "/v/p"
            ])
            .ok(),
        "persisted\n"
    );
    // A tmpfs --mount.
    let mounts = berth
        .run(&[
            "run",
            "--rm",
            "--mount",
            "type=tmpfs,destination=/scratch",
            "busybox",
            "sh",
            "-c",
            "touch /scratch/x && grep ' /scratch ' /proc/mounts",
        ])
        .ok();
    assert!(
        mounts.starts_with("tmpfs /scratch tmpfs rw,nosuid,nodev"),
        "{mounts}"
    );
    // An anonymous volume of a --rm container goes with it.
    berth
        .run(&["run", "--rm", "-v", "/anonymous", "busybox", "true"])
        .ok();
    let mut listed: Vec<String> = berth
        .run(&["volume", "ls", "-q"])
        .ok()
        .lines()
        .map(str::to_owned)
        .collect();
    listed.sort();
    assert_eq!(listed, ["newvol", "vol"]);
}

#[test]
fn volume_commands() {
    let berth = busybox();
    assert_eq!(berth.run(&["volume", "create", "data"]).ok(), "data\n");
    let generated = berth.run(&["volume", "create"]).ok().trim().to_owned();
    assert_eq!(generated.len(), 64, "{generated}");
    let listing = berth.run(&["volume", "ls"]).ok();
    let mut lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines.remove(0), "DRIVER    VOLUME NAME");
    lines.sort();
    let mut expected = vec![
        "local     data".to_owned(),
        format!("local     {generated}"),
    ];
    expected.sort();
    assert_eq!(lines, expected);

    let inspected = berth.run(&["volume", "inspect", "data"]).ok();
    let json: serde_json::Value = serde_json::from_str(&inspected).unwrap();
    assert_eq!(json[0]["Name"], "data");
    assert_eq!(json[0]["Driver"], "local");
    assert_eq!(json[0]["Scope"], "local");
    let mountpoint = json[0]["Mountpoint"].as_str().unwrap();
    assert!(std::path::Path::new(mountpoint).is_dir(), "{mountpoint}");
    let run = berth.run(&["volume", "inspect", "nosuch"]);
    assert!(run.stderr().contains("no such volume"), "{}", run.stderr());
    run.fails(1);

    // In use (even by a stopped container): refused.
    let user = berth.run_detached(&["-v", "data:/data", "busybox", "sleep", "100"]);
    let stderr = berth.run(&["volume", "rm", "data"]).fails(1);
    assert!(
        stderr.contains(&format!("remove data: volume is in use - [{user}]")),
        "{stderr}"
    );
    berth.run(&["stop", "-t", "0", &user]).ok();
    berth.run(&["volume", "rm", "data"]).fails(1);
    berth.run(&["rm", &user]).ok();
    assert_eq!(berth.run(&["volume", "rm", "data"]).ok(), "data\n");
    let stderr = berth.run(&["volume", "rm", "data"]).fails(1);
    assert!(stderr.contains("no such volume"), "{stderr}");
    assert_eq!(
        berth.run(&["volume", "ls", "-q"]).ok(),
        format!("{generated}\n")
    );
    assert_eq!(
        berth
            .run(&["volume", "create", "--label", "k=v", "labelled"])
            .ok(),
        "labelled\n"
    );
    assert_eq!(
        berth.run(&["volume", "ls", "-q", "-f", "label=k=v"]).ok(),
        "labelled\n"
    );
}

#[test]
fn volume_prune_removes_unused_anonymous_volumes() {
    let berth = busybox();
    berth.run(&["volume", "create", "named"]).ok();
    // An anonymous volume whose container is gone (removed without -v).
    let gone = berth.run(&["create", "-v", "/anonymous", "busybox"]).ok();
    let anonymous = berth.inspect(gone.trim(), "{{range .Mounts}}{{.Name}}{{end}}");
    assert_eq!(anonymous.len(), 64, "{anonymous}");
    berth.run(&["rm", gone.trim()]).ok();
    // One in use by a running container.
    let user = berth.run_detached(&["-v", "busy:/busy", "busybox", "sleep", "100"]);

    let output = berth.run(&["volume", "prune", "-f"]).ok();
    assert!(output.starts_with("Deleted Volumes:\n"), "{output}");
    assert!(output.contains(&format!("\n{anonymous}\n")), "{output}");
    assert!(output.contains("Total reclaimed space: "), "{output}");
    let mut left: Vec<String> = berth
        .run(&["volume", "ls", "-q"])
        .ok()
        .lines()
        .map(str::to_owned)
        .collect();
    left.sort();
    assert_eq!(left, ["busy", "named"]);

    // -a takes unused named volumes too, never one in use.
    let output = berth.run(&["volume", "prune", "-a", "-f"]).ok();
    assert!(output.contains("\nnamed\n"), "{output}");
    assert_eq!(berth.run(&["volume", "ls", "-q"]).ok(), "busy\n");
    berth.run(&["rm", "-f", &user]).ok();
}
