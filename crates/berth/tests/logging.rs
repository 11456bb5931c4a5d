//! Log drivers (issue 17): `--log-driver json-file|local|none` and `--log-opt` — rotation
//! (`max-size`, `max-file`, `compress`), the local driver's defaults, `none` keeping nothing,
//! `labels`/`env`/`tag` attributes, dockerd's errors for bad values and berth's refusals for
//! what it does not do (other drivers, regex options). `logs` (`--tail`, `--since`,
//! `--until`, `-t`, `-f`) reads across rotated files and follows a rotation. The last tests
//! run the same docker CLI commands against `berth serve` and against Docker
//! (`BERTH_TEST_DOCKER_HOST`) and compare what they see.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

#[path = "api/compare.rs"]
mod compare;
#[path = "api/harness.rs"]
mod harness;
mod support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::Berth;

fn busybox() -> Berth {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth
}

/// A script printing `count` numbered lines of about 60 bytes (a json-file record of 129
/// bytes, as in Docker's tests of the same script).
fn lines_script(count: usize) -> String {
    format!("for i in $(seq 1 {count}); do echo line-$i-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done")
}

/// The numbers of `line-N-…` lines, in order.
fn numbers(output: &str) -> Vec<usize> {
    output
        .lines()
        .map(|line| {
            line.split('-')
                .nth(1)
                .and_then(|number| number.parse().ok())
                .unwrap_or_else(|| panic!("not a numbered line: {line:?}"))
        })
        .collect()
}

/// Runs `options… busybox sh -c script` to its end; returns the full id.
fn run_to_end(berth: &Berth, options: &[&str], script: &str) -> String {
    let mut args = vec!["run", "-d", "--network", "none"];
    args.extend_from_slice(options);
    args.extend_from_slice(&["busybox", "sh", "-c", script]);
    let id = berth.run(&args).ok().trim().to_owned();
    berth.run(&["wait", &id]).ok();
    id
}

/// The names in `directory` that start with `prefix`, sorted, with the prefix cut.
fn suffixes(directory: &Path, prefix: &str) -> Vec<String> {
    let mut found: Vec<String> = fs_err::read_dir(directory)
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            name.strip_prefix(prefix).map(str::to_owned)
        })
        .collect();
    found.sort();
    found
}

fn container_dir(berth: &Berth, id: &str) -> PathBuf {
    berth.root().join("containers").join(id)
}

fn log_config(berth: &Berth, id: &str) -> Value {
    berth.inspect_json(id)["HostConfig"]["LogConfig"].clone()
}

#[test]
fn json_file_rotates_at_max_size_and_logs_reads_every_kept_file() {
    let berth = busybox();
    let id = run_to_end(
        &berth,
        &["--log-opt", "max-size=1k", "--log-opt", "max-file=3"],
        &lines_script(40),
    );
    let directory = container_dir(&berth, &id);
    let prefix = format!("{id}-json.log");
    // Docker 20.10 made the same three files of 8 records (1032 bytes; a file passes
    // max-size by the record that fills it) for this script.
    assert_eq!(suffixes(&directory, &prefix), ["", ".1", ".2"]);
    for suffix in ["", ".1", ".2"] {
        let size = fs_err::metadata(directory.join(format!("{prefix}{suffix}")))
            .unwrap()
            .len();
        assert!((1000..1100).contains(&size), "{suffix}: {size} bytes");
    }
    let all = berth.run(&["logs", &id]).ok();
    assert_eq!(numbers(&all), (17..=40).collect::<Vec<_>>());
    // --tail counts back across the files: 10 lines reach into `.1`.
    let tail = berth.run(&["logs", "--tail", "10", &id]).ok();
    assert_eq!(numbers(&tail), (31..=40).collect::<Vec<_>>());
    let tail = berth.run(&["logs", "-n", "20", &id]).ok();
    assert_eq!(numbers(&tail), (21..=40).collect::<Vec<_>>());
    // -t and the time window work on rotated records too. (Lines read together share
    // their time: the window is checked against the times `-t` shows.)
    let stamped: Vec<(String, usize)> = berth
        .run(&["logs", "-t", &id])
        .ok()
        .lines()
        .map(|line| {
            let (time, text) = line.split_once(' ').unwrap();
            (time.to_owned(), numbers(text)[0])
        })
        .collect();
    assert_eq!(stamped[0].0.len(), 30, "{:?}", stamped[0]);
    let (middle, _) = stamped
        .iter()
        .find(|(_, number)| *number == 25)
        .unwrap()
        .clone();
    let wanted = |keep: &dyn Fn(&str) -> bool| -> Vec<usize> {
        stamped
            .iter()
            .filter(|(time, _)| keep(time))
            .map(|(_, number)| *number)
            .collect()
    };
    let since = berth.run(&["logs", "--since", &middle, &id]).ok();
    assert_eq!(numbers(&since), wanted(&|time| time >= middle.as_str()));
    let until = berth.run(&["logs", "--until", &middle, &id]).ok();
    assert_eq!(numbers(&until), wanted(&|time| time <= middle.as_str()));
    assert_eq!(
        log_config(&berth, &id),
        serde_json::json!({"Type": "json-file", "Config": {"max-file": "3", "max-size": "1k"}})
    );
    assert_eq!(
        berth.inspect(&id, "{{.LogPath}}"),
        directory.join(&prefix).display().to_string()
    );
}

#[test]
fn max_file_one_keeps_the_previous_file_and_reads_only_the_current() {
    // dockerd renames the full file to `.1` even with max-file=1, and never reads it.
    let berth = busybox();
    let id = run_to_end(&berth, &["--log-opt", "max-size=1k"], &lines_script(40));
    let prefix = format!("{id}-json.log");
    assert_eq!(suffixes(&container_dir(&berth, &id), &prefix), ["", ".1"]);
    assert_eq!(
        numbers(&berth.run(&["logs", &id]).ok()),
        (33..=40).collect::<Vec<_>>()
    );
    // max-file without max-size never rotates (dockerd takes it; docker-py checks it).
    let id = run_to_end(&berth, &["--log-opt", "max-file=100"], &lines_script(40));
    assert_eq!(
        suffixes(&container_dir(&berth, &id), &format!("{id}-json.log")),
        [""]
    );
    assert_eq!(numbers(&berth.run(&["logs", &id]).ok()).len(), 40);
}

#[test]
fn compressed_rotated_files_are_gzip_and_still_read() {
    let berth = busybox();
    let id = run_to_end(
        &berth,
        &[
            "--log-opt",
            "max-size=1k",
            "--log-opt",
            "max-file=3",
            "--log-opt",
            "compress=true",
        ],
        &lines_script(40),
    );
    let directory = container_dir(&berth, &id);
    let prefix = format!("{id}-json.log");
    // Compression runs between writes and is finished when the monitor ends.
    support::containers::wait_until(10.0, "the rotated files to be compressed", || {
        suffixes(&directory, &prefix) == ["", ".1.gz", ".2.gz"]
    });
    let bytes = fs_err::read(directory.join(format!("{prefix}.1.gz"))).unwrap();
    assert_eq!(&bytes[..2], b"\x1f\x8b");
    // dockerd's header extra: the time of the file's last record.
    assert!(
        String::from_utf8_lossy(&bytes).contains("{\"lastTime\":\""),
        "no lastTime extra"
    );
    assert_eq!(
        numbers(&berth.run(&["logs", &id]).ok()),
        (17..=40).collect::<Vec<_>>()
    );
    assert_eq!(
        numbers(&berth.run(&["logs", "--tail", "12", &id]).ok()),
        (29..=40).collect::<Vec<_>>()
    );
}

#[test]
fn the_local_driver_has_its_own_file_and_defaults() {
    let berth = busybox();
    let id = run_to_end(
        &berth,
        &["--log-driver", "local"],
        "echo hello; echo err >&2; printf partial",
    );
    let directory = container_dir(&berth, &id);
    assert!(!directory.join(format!("{id}-json.log")).exists());
    let file = directory.join("local-logs").join("container.log");
    // The same 171 bytes dockerd 20.10 wrote for this script (the times and the partial
    // line's random id differ, not their sizes).
    assert_eq!(fs_err::metadata(&file).unwrap().len(), 171);
    let logs = berth.run(&["logs", &id]);
    assert_eq!(logs.stdout(), "hello\npartial");
    assert_eq!(logs.stderr(), "err\n");
    assert_eq!(
        log_config(&berth, &id),
        serde_json::json!({"Type": "local", "Config": {}})
    );
    // dockerd keeps the local driver's file out of the API.
    assert_eq!(berth.inspect(&id, "{{.LogPath}}"), "");
    // Rotation with the local driver's compression on by default.
    let id = run_to_end(
        &berth,
        &["--log-driver", "local", "--log-opt", "max-size=1k"],
        &lines_script(100),
    );
    let local = container_dir(&berth, &id).join("local-logs");
    support::containers::wait_until(10.0, "the rotated files to be compressed", || {
        suffixes(&local, "container.log") == ["", ".1.gz", ".2.gz", ".3.gz", ".4.gz"]
    });
    let kept = numbers(&berth.run(&["logs", &id]).ok());
    let first = kept[0];
    assert!(first > 1, "the oldest lines were dropped");
    assert_eq!(kept, (first..=100).collect::<Vec<_>>());
    assert_eq!(
        numbers(&berth.run(&["logs", "--tail", "30", &id]).ok()),
        (71..=100).collect::<Vec<_>>()
    );
}

#[test]
fn none_keeps_nothing_and_logs_refuses_with_dockers_words() {
    let berth = busybox();
    // The attached run still shows the output: attaching is not logging.
    let out = berth
        .run(&[
            "run",
            "--name",
            "quiet",
            "--log-driver",
            "none",
            "--network",
            "none",
            "busybox",
            "echo",
            "hi",
        ])
        .ok();
    assert_eq!(out, "hi\n");
    let id = berth.inspect("quiet", "{{.Id}}");
    let directory = container_dir(&berth, &id);
    assert!(!directory.join(format!("{id}-json.log")).exists());
    assert!(!directory.join("local-logs").exists());
    for args in [vec!["logs", "quiet"], vec!["logs", "-f", "quiet"]] {
        let error = berth.run(&args).fails(1);
        assert_eq!(
            error.trim(),
            "Error: configured logging driver does not support reading",
            "{args:?}"
        );
    }
    assert_eq!(
        log_config(&berth, &id),
        serde_json::json!({"Type": "none", "Config": {}})
    );
    assert_eq!(berth.inspect(&id, "{{.LogPath}}"), "");
}

#[test]
fn logs_follow_crosses_rotations() {
    let berth = busybox();
    let script = "for i in $(seq 1 300); do echo line-$i-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; usleep 2000; done";
    for options in [
        &["--log-opt", "max-size=2k", "--log-opt", "max-file=3"][..],
        &[
            "--log-opt",
            "max-size=2k",
            "--log-opt",
            "max-file=3",
            "--log-opt",
            "compress=true",
        ],
        &[
            "--log-driver",
            "local",
            "--log-opt",
            "max-size=2k",
            "--log-opt",
            "max-file=3",
        ],
    ] {
        let mut args = vec!["run", "-d", "--network", "none"];
        args.extend_from_slice(options);
        args.extend_from_slice(&["busybox", "sh", "-c", script]);
        let id = berth.run(&args).ok().trim().to_owned();
        let followed = berth.run(&["logs", "-f", &id]).ok();
        assert_eq!(
            numbers(&followed),
            (1..=300).collect::<Vec<_>>(),
            "{options:?}"
        );
        // Afterwards only what the kept files hold is there.
        let kept = numbers(&berth.run(&["logs", &id]).ok());
        assert!(
            kept.len() < 150 && kept.last() == Some(&300),
            "{options:?}: {kept:?}"
        );
        berth.run(&["rm", &id]).ok();
    }
}

#[test]
fn a_restarted_container_appends_and_rotates_on() {
    let berth = busybox();
    let id = run_to_end(
        &berth,
        &["--log-opt", "max-size=1k", "--log-opt", "max-file=2"],
        &lines_script(5),
    );
    // 5 records (645 bytes), then 5 more: the file passes 1k at the eighth.
    berth.run(&["start", "-a", &id]).ok();
    let prefix = format!("{id}-json.log");
    assert_eq!(suffixes(&container_dir(&berth, &id), &prefix), ["", ".1"]);
    assert_eq!(
        numbers(&berth.run(&["logs", &id]).ok()),
        [1, 2, 3, 4, 5, 1, 2, 3, 4, 5]
    );
}

#[test]
fn labels_env_and_tag_become_record_attributes() {
    let berth = busybox();
    let id = run_to_end(
        &berth,
        &[
            "--name",
            "tagged",
            "--label",
            "a=1",
            "--label",
            "b=x&y",
            "-e",
            "E1=v1",
            "--log-opt",
            "labels=a,b,zz",
            "--log-opt",
            "env=E1,NOPE",
            "--log-opt",
            "tag={{.Name}}/{{.ImageName}}/{{.ID}}",
        ],
        "echo hi",
    );
    let log =
        fs_err::read_to_string(container_dir(&berth, &id).join(format!("{id}-json.log"))).unwrap();
    let wanted = format!(
        "{{\"log\":\"hi\\n\",\"stream\":\"stdout\",\"attrs\":{{\"E1\":\"v1\",\"a\":\"1\",\"b\":\"x\\u0026y\",\"tag\":\"tagged/busybox/{}\"}},\"time\":\"",
        &id[..12]
    );
    assert!(log.starts_with(&wanted), "{log}");
    let details = berth.run(&["logs", "--details", &id]).ok();
    assert_eq!(
        details,
        format!(
            "E1=v1,a=1,b=x%26y,tag=tagged%2Fbusybox%2F{} hi\n",
            &id[..12]
        )
    );
}

#[test]
fn bad_log_options_are_refused_at_create_and_leave_nothing() {
    let berth = busybox();
    let cases: &[(&[&str], &str)] = &[
        (&["--log-opt", "x=1"], "unknown log opt 'x' for json-file log driver"),
        (
            &["--log-driver", "local", "--log-opt", "labels=a"],
            "unknown log opt 'labels' for log driver local",
        ),
        (
            &["--log-opt", "max-size=-1"],
            "failed to initialize logging driver: invalid size: '-1'",
        ),
        (
            &["--log-opt", "max-size=0"],
            "failed to initialize logging driver: max-size must be a positive number",
        ),
        (
            &["--log-opt", "max-size=1k", "--log-opt", "max-file=0"],
            "failed to initialize logging driver: max-file cannot be less than 1",
        ),
        (
            &["--log-opt", "compress=true"],
            "failed to initialize logging driver: compress cannot be true when max-file is less than 2 or max-size is not set",
        ),
        (
            &["--log-driver", "local", "--log-opt", "max-file=1"],
            "failed to initialize logging driver: compression cannot be enabled when max file count is 1",
        ),
        (
            &["--log-driver", "foo"],
            "error looking up logging plugin foo: plugin \"foo\" not found",
        ),
        (
            &["--log-driver", "none", "--log-opt", "max-size=1k"],
            "invalid logging opts for driver none",
        ),
        (
            &["--log-opt", "mode=bad"],
            "logger: logging mode not supported: bad",
        ),
        (
            &["--log-opt", "tag={{.Nope}}"],
            "can't evaluate field Nope in type *logger.Info",
        ),
        // berth's refusals, naming what it does not do.
        (
            &["--log-driver", "syslog"],
            "log driver \"syslog\" is not supported: berth has no daemon to send container output to syslog",
        ),
        (
            &["--log-driver", "journald"],
            "log driver \"journald\" is not supported",
        ),
        (
            &["--log-driver", "fluentd"],
            "log driver \"fluentd\" is not supported",
        ),
        (
            &["--log-opt", "labels-regex=^a"],
            "log opt 'labels-regex' is not supported",
        ),
        (
            &["--log-opt", "mode=non-blocking"],
            "log opt 'mode' is not supported: berth writes logs in blocking mode only",
        ),
        (
            &["--log-opt", "cache-disabled=true"],
            "log opt 'cache-disabled' is not supported",
        ),
        (
            &["--log-opt", "tag={{upper .Name}}"],
            "log opt 'tag' is not supported",
        ),
    ];
    for (options, wanted) in cases {
        let mut args = vec!["run", "--rm", "--name", "refused"];
        args.extend_from_slice(options);
        args.extend_from_slice(&["busybox", "true"]);
        let error = berth.run(&args).fails(125);
        assert!(error.contains(wanted), "{options:?}: {error}");
        let mut create = vec!["create"];
        create.extend_from_slice(options);
        create.push("busybox");
        let created = berth.run(&create);
        assert_ne!(created.code(), 0, "{options:?}");
        assert!(
            created.stderr().contains(wanted),
            "{options:?}: {}",
            created.stderr()
        );
    }
    assert!(berth.all_ids().is_empty());
    assert!(
        berth.container_dirs().is_empty(),
        "{:?}",
        berth.container_dirs()
    );
}

#[test]
fn the_config_files_log_defaults_apply_to_new_containers() {
    let berth = busybox();
    let config = berth.root().join("config.json");
    fs_err::write(
        &config,
        r#"{"log-driver": "json-file", "log-opts": {"max-size": "1k", "max-file": "2"}}"#,
    )
    .unwrap();
    let run = |args: &[&str]| {
        let output = berth
            .command()
            .env("BERTH_CONFIG", &config)
            .args(args)
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    };
    let script = lines_script(40);
    let id = run(&[
        "run",
        "-d",
        "--network",
        "none",
        "busybox",
        "sh",
        "-c",
        &script,
    ]);
    berth.run(&["wait", &id]).ok();
    // As dockerd's daemon.json: the defaults are stored with the container.
    assert_eq!(
        log_config(&berth, &id),
        serde_json::json!({"Type": "json-file", "Config": {"max-file": "2", "max-size": "1k"}})
    );
    assert_eq!(
        suffixes(&container_dir(&berth, &id), &format!("{id}-json.log")),
        ["", ".1"]
    );
    // A request's own option wins; another driver takes none of the defaults.
    let own = run(&["create", "--log-opt", "max-file=5", "busybox"]);
    assert_eq!(
        log_config(&berth, &own)["Config"],
        serde_json::json!({"max-file": "5", "max-size": "1k"})
    );
    let local = run(&["create", "--log-driver", "local", "busybox"]);
    assert_eq!(
        log_config(&berth, &local),
        serde_json::json!({"Type": "local", "Config": {}})
    );
    fs_err::write(&config, r#"{"log-driver": "local"}"#).unwrap();
    let defaulted = run(&["create", "busybox"]);
    assert_eq!(log_config(&berth, &defaulted)["Type"], "local");
}

// ------------------------------------------------------------ the API, and Docker

/// What one engine shows for the same log settings.
#[derive(Debug, PartialEq)]
struct Observed {
    /// Per case: the log files' suffixes after the log path (json-file only).
    files: Vec<Vec<String>>,
    /// Per case: the numbers `logs` prints, then those of `logs --tail 10`.
    logs: Vec<(Vec<usize>, Vec<usize>)>,
    configs: Vec<Value>,
    log_paths_empty: Vec<bool>,
    local_output: String,
    none_error: (i32, String),
    none_api: (u16, String),
    /// `logs -f` printed every record from where it started to the last.
    followed: bool,
    attributes_line: String,
    errors: Vec<(i32, String)>,
    created_config: Value,
}

fn observe(engine: &compare::Engine<'_>) -> Observed {
    let script = lines_script(40);
    let cases: [&[&str]; 3] = [
        &["--log-opt", "max-size=1k", "--log-opt", "max-file=3"],
        &[
            "--log-opt",
            "max-size=1k",
            "--log-opt",
            "max-file=3",
            "--log-opt",
            "compress=true",
        ],
        &["--log-opt", "max-size=1k"],
    ];
    let mut names = Vec::new();
    let mut files = Vec::new();
    let mut logs = Vec::new();
    let mut configs = Vec::new();
    let mut log_paths_empty = Vec::new();
    for (index, options) in cases.iter().enumerate() {
        let name = engine.run(&format!("rotated{index}"), options, &["sh", "-c", &script]);
        engine.docker(&["wait", &name]).ok();
        names.push(name.clone());
        let path = PathBuf::from(engine.inspect(&name, "{{.LogPath}}"));
        let directory = path.parent().unwrap().to_owned();
        let prefix = path.file_name().unwrap().to_string_lossy().into_owned();
        support::containers::wait_until(10.0, "compression", || {
            !suffixes(&directory, &prefix)
                .iter()
                .any(|suffix| suffix == ".1" && index == 1)
        });
        files.push(suffixes(&directory, &prefix));
        logs.push((
            numbers(&engine.docker(&["logs", &name]).ok()),
            numbers(&engine.docker(&["logs", "--tail", "10", &name]).ok()),
        ));
        configs.push(
            serde_json::from_str(&engine.inspect(&name, "{{json .HostConfig.LogConfig}}")).unwrap(),
        );
    }
    let local = engine.run(
        "local",
        &["--log-driver", "local"],
        &["sh", "-c", "echo hello; echo err >&2; printf partial"],
    );
    let none = engine.run("none", &["--log-driver", "none"], &["echo", "hi"]);
    let plain = engine.run("plain", &[], &["true"]);
    names.extend([local.clone(), none.clone(), plain.clone()]);
    for name in [&local, &none, &plain] {
        engine.docker(&["wait", name]).ok();
        configs.push(
            serde_json::from_str(&engine.inspect(name, "{{json .HostConfig.LogConfig}}")).unwrap(),
        );
        log_paths_empty.push(engine.inspect(name, "{{.LogPath}}").is_empty());
    }
    let local_output = engine.docker(&["logs", &local]).all_output();
    let refused = engine.docker(&["logs", &none]);
    let none_error = (refused.code(), refused.stderr().trim().to_owned());
    let (status, _, body) = engine.raw(
        format!("GET /v1.41/containers/{none}/logs?stdout=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    let none_api = (status, String::from_utf8_lossy(&body).trim().to_owned());
    let follow = engine.run(
        "follow",
        &["--log-opt", "max-size=2k", "--log-opt", "max-file=4"],
        &[
            "sh",
            "-c",
            "for i in $(seq 1 200); do echo line-$i-xxxxxxxxxxxxxxxxxxxxxxxx; usleep 5000; done",
        ],
    );
    names.push(follow.clone());
    let mut followed = numbers(&engine.docker(&["logs", "-f", &follow]).ok());
    // dockerd 20.10's follower prints the first record of each new file twice (21, 21,
    // …, 41, 41: moby's pre-23.0 `followLogs` reads the rotated file again where it
    // was); berth prints each once.
    if engine.name == "berth" {
        let mut once = followed.clone();
        once.dedup();
        assert_eq!(once, followed, "each record once");
    }
    followed.dedup();
    // Where following starts depends on how soon `logs -f` runs: what came before may
    // have been rotated away. From there on nothing is missing.
    let first = followed.first().copied().unwrap_or_default();
    let followed = followed == (first..=200).collect::<Vec<_>>() && first <= 50;
    let tagged = engine.run(
        "tagged",
        &[
            "--label",
            "b=x&y",
            "-e",
            "E1=v1",
            "--log-opt",
            "labels=b",
            "--log-opt",
            "env=E1",
            "--log-opt",
            "tag=plain {{.ImageName}}",
        ],
        &["echo", "hi"],
    );
    names.push(tagged.clone());
    engine.docker(&["wait", &tagged]).ok();
    let line = fs_err::read_to_string(engine.inspect(&tagged, "{{.LogPath}}")).unwrap();
    // Up to the record's time, which differs.
    let attributes_line = line[..line.find("\"time\"").unwrap()].to_owned();
    let mut errors = Vec::new();
    for (index, options) in [
        &["--log-opt", "x=1"][..],
        &["--log-opt", "max-size=-1"],
        &["--log-opt", "max-size=1k", "--log-opt", "max-file=a"],
        &["--log-opt", "compress=true"],
        &["--log-driver", "local", "--log-opt", "max-file=1"],
        &["--log-driver", "foo"],
        &["--log-opt", "mode=bad"],
    ]
    .iter()
    .enumerate()
    {
        // dockerd checks values when the container starts and leaves the container
        // created; berth refuses at create. The words are the same.
        let name = engine.name(&format!("bad{index}"));
        names.push(name.clone());
        let mut args = vec!["run", "--name", &name, "--network", "none"];
        args.extend_from_slice(options);
        args.extend_from_slice(&["busybox", "true"]);
        let failed = engine.docker(&args);
        // The docker CLIs at hand differ in the full stop they add.
        let message = failed
            .stderr()
            .lines()
            .next()
            .unwrap_or_default()
            .trim_end_matches('.')
            .to_owned();
        errors.push((failed.code(), message));
    }
    let created_name = engine.name("bare");
    names.push(created_name.clone());
    let (status, _, body) = engine.raw(
        format!(
            "POST /v1.41/containers/create?name={created_name} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
            r#"{"Image":"busybox","HostConfig":{"LogConfig":{"Type":"","Config":null}}}"#.len(),
            r#"{"Image":"busybox","HostConfig":{"LogConfig":{"Type":"","Config":null}}}"#
        )
        .as_bytes(),
    );
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let created_config =
        serde_json::from_str(&engine.inspect(&created_name, "{{json .HostConfig.LogConfig}}"))
            .unwrap();
    let _cleanup = compare::Cleanup::new(engine, names);
    Observed {
        files,
        logs,
        configs,
        log_paths_empty,
        local_output,
        none_error,
        none_api,
        followed,
        attributes_line,
        errors,
        created_config,
    }
}

#[test]
fn logging_matches_docker_through_the_api() {
    let Some(server) = harness::Server::start() else {
        return;
    };
    let berth_observed = observe(&compare::Engine::berth(&server, "logging"));
    assert_eq!(
        berth_observed.files,
        [
            vec!["", ".1", ".2"],
            vec!["", ".1.gz", ".2.gz"],
            vec!["", ".1"]
        ]
    );
    assert_eq!(berth_observed.logs[0].0, (17..=40).collect::<Vec<_>>());
    assert_eq!(berth_observed.logs[2].1, (33..=40).collect::<Vec<_>>());
    assert!(berth_observed.followed);
    assert_eq!(
        berth_observed.none_api,
        (
            501,
            "{\"message\":\"configured logging driver does not support reading\"}".to_owned()
        )
    );
    assert_eq!(
        berth_observed.created_config,
        serde_json::json!({"Type": "json-file", "Config": {}})
    );
    if let Some(docker) = compare::Engine::reference("logging") {
        let mut docker_observed = observe(&docker);
        // dockerd 20.10's follower can lose records where a file rotates
        // when it reads late (moby's pre-23.0 `followLogs`; a CI run here,
        // 2026-12-02, saw it on a loaded machine): berth's own follow is
        // asserted above, Docker's is not compared.
        docker_observed.followed = berth_observed.followed;
        assert_eq!(berth_observed, docker_observed);
    }
}
