//! `berth compose up/ps/logs/stop/start/rm/down` on real containers (issue 19): compose's
//! names and labels, networks and volumes, services by dependency level with the independent
//! ones in parallel, `depends_on` conditions (healthy, completed successfully), convergence
//! by config hash, and a failed dependency reported by name. Each test has its own berth root
//! and project; a guard runs `down -v` whatever happens, so nothing stays behind.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use chrono::{DateTime, Utc};
use support::{Berth, Run};

struct Project {
    berth: Berth,
    directory: tempfile::TempDir,
    name: String,
}

impl Project {
    fn new(name: &str, compose: &str) -> Self {
        let berth = Berth::new();
        berth.load("busybox-docker.tar");
        let directory = tempfile::Builder::new()
            .prefix("compose-")
            .tempdir()
            .unwrap();
        fs_err::write(directory.path().join("compose.yaml"), compose).unwrap();
        Self {
            berth,
            directory,
            name: name.to_owned(),
        }
    }

    fn rewrite(&self, compose: &str) {
        fs_err::write(self.directory.path().join("compose.yaml"), compose).unwrap();
    }

    fn compose(&self, args: &[&str]) -> Run {
        let mut command = self.berth.command();
        command
            .current_dir(self.directory.path())
            .args(["compose", "-p", &self.name])
            .args(args);
        Run {
            output: support::output_with_stdin(command, None),
        }
    }

    fn inspect(&self, container: &str, format: &str) -> String {
        self.berth.inspect(container, format)
    }

    fn time(&self, container: &str, field: &str) -> DateTime<Utc> {
        let text = self.inspect(container, &format!("{{{{.State.{field}}}}}"));
        DateTime::parse_from_rfc3339(text.trim())
            .unwrap()
            .with_timezone(&Utc)
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = self.compose(&["down", "-v", "-t", "0", "--remove-orphans"]);
    }
}

fn names(berth: &Berth) -> Vec<String> {
    let out = berth.run(&["ps", "-a", "--format", "{{.Names}}"]).ok();
    let mut names: Vec<String> = out.lines().map(str::to_owned).collect();
    names.sort();
    names
}

const WEB: &str = r#"
services:
  web:
    image: busybox
    command: ["sh", "-c", "echo hello-from-web; exec httpd -f -p 80"]
    ports: ["127.0.0.1::80"]
    volumes: ["site:/www"]
    labels:
      example.role: web
  cache:
    image: busybox
    command: ["sleep", "1000"]
    deploy:
      replicas: 2
volumes:
  site: {}
"#;

#[test]
fn up_names_and_labels_containers_as_compose_does() {
    let project = Project::new("labels", WEB);
    let run = project.compose(&["up", "-d"]);
    run.ok();
    assert_eq!(
        names(&project.berth),
        ["labels-cache-1", "labels-cache-2", "labels-web-1"]
    );
    let labels = project.berth.inspect_json("labels-web-1")["Config"]["Labels"].clone();
    assert_eq!(labels["com.docker.compose.project"], "labels");
    assert_eq!(labels["com.docker.compose.service"], "web");
    assert_eq!(labels["com.docker.compose.container-number"], "1");
    assert_eq!(labels["com.docker.compose.oneoff"], "False");
    assert_eq!(labels["example.role"], "web");
    assert_eq!(
        labels["com.docker.compose.project.working_dir"],
        project.directory.path().to_str().unwrap()
    );
    assert!(labels["com.docker.compose.config-hash"]
        .as_str()
        .is_some_and(|hash| hash.len() == 64));
    let networks = project
        .berth
        .run(&["network", "ls", "--format", "{{.Name}}"])
        .ok();
    assert!(
        networks.lines().any(|n| n == "labels_default"),
        "{networks}"
    );
    let volumes = project
        .berth
        .run(&["volume", "ls", "--format", "{{.Name}}"])
        .ok();
    assert!(volumes.lines().any(|n| n == "labels_site"), "{volumes}");
    let aliases = project.inspect(
        "labels-web-1",
        "{{json .NetworkSettings.Networks.labels_default.Aliases}}",
    );
    assert!(aliases.contains("\"web\""), "{aliases}");

    let ps = project.compose(&["ps"]).ok();
    assert!(ps.starts_with("NAME "), "{ps}");
    assert_eq!(ps.lines().count(), 4, "{ps}");
    assert!(
        ps.contains("labels-web-1") && ps.contains("127.0.0.1:"),
        "{ps}"
    );
    let services = project.compose(&["ps", "--services"]).ok();
    assert_eq!(services, "cache\nweb\n");
    let ids = project.compose(&["ps", "-q"]).ok();
    assert_eq!(ids.lines().count(), 3);
    let json = project.compose(&["ps", "--format", "json"]).ok();
    let first: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    assert_eq!(first["Service"], "cache");
    assert_eq!(first["Project"], "labels");

    support::containers::wait_until(10.0, "web's output", || {
        project
            .compose(&["logs", "web"])
            .stdout()
            .contains("hello-from-web")
    });
    let logs = project.compose(&["logs", "web"]).ok();
    assert_eq!(logs, "web-1  | hello-from-web\n");

    project.compose(&["stop", "-t", "0", "cache"]).ok();
    assert_eq!(project.compose(&["ps", "--services"]).ok(), "web\n");
    assert_eq!(
        project
            .compose(&["ps", "-a", "--status", "exited", "-q"])
            .ok()
            .lines()
            .count(),
        2
    );
    project.compose(&["start", "cache"]).ok();
    assert_eq!(project.compose(&["ps", "-q"]).ok().lines().count(), 3);
    project.compose(&["stop", "-t", "0", "cache"]).ok();
    project.compose(&["rm", "-f", "cache"]).ok();
    assert_eq!(names(&project.berth), ["labels-web-1"]);

    project.compose(&["down", "-v", "-t", "0"]).ok();
    assert!(names(&project.berth).is_empty());
    let networks = project
        .berth
        .run(&["network", "ls", "--format", "{{.Name}}"])
        .ok();
    assert!(!networks.contains("labels_default"), "{networks}");
    let volumes = project.berth.run(&["volume", "ls", "-q"]).ok();
    assert!(volumes.trim().is_empty(), "{volumes}");
}

const LEVELS: &str = r#"
services:
  db:
    image: busybox
    command: ["sh", "-c", "sleep 1; touch /tmp/ready; exec sleep 1000"]
    healthcheck:
      test: ["CMD", "test", "-f", "/tmp/ready"]
      interval: 100ms
      retries: 100
  cache:
    image: busybox
    command: ["sleep", "1000"]
  migrate:
    image: busybox
    command: ["sh", "-c", "sleep 0.5"]
    depends_on:
      db:
        condition: service_healthy
  app:
    image: busybox
    command: ["sleep", "1000"]
    depends_on:
      migrate:
        condition: service_completed_successfully
      cache:
        condition: service_started
  worker:
    image: busybox
    command: ["sleep", "1000"]
    depends_on: [app]
"#;

#[test]
fn services_start_by_level_after_their_conditions() {
    let project = Project::new("levels", LEVELS);
    project.compose(&["up", "-d"]).ok();
    let started = |name: &str| project.time(&format!("levels-{name}-1"), "StartedAt");
    // db and cache are one level: cache does not wait for db to be healthy.
    // When db's health_status: healthy event was logged.
    let until = Utc::now() + chrono::Duration::milliseconds(100);
    let events = project
        .berth
        .run(&[
            "events",
            "--since",
            "10m",
            "--until",
            &format!(
                "{}.{:09}",
                until.timestamp(),
                until.timestamp_subsec_nanos()
            ),
            "--filter",
            "container=levels-db-1",
            "--filter",
            "event=health_status",
            "--format",
            "{{.TimeNano}} {{.Action}}",
        ])
        .ok();
    let healthy_at = events
        .lines()
        .find(|line| line.ends_with("health_status: healthy"))
        .and_then(|line| line.split(' ').next())
        .and_then(|nanos| nanos.parse::<i64>().ok())
        .map(DateTime::from_timestamp_nanos)
        .unwrap_or_else(|| panic!("no healthy event: {events}"));
    assert!(
        started("cache") < healthy_at,
        "cache waited for db's health"
    );
    assert!(
        started("migrate") >= healthy_at,
        "migrate started before db was healthy"
    );
    let migrate_finished = project.time("levels-migrate-1", "FinishedAt");
    assert!(
        started("app") >= migrate_finished,
        "app started before migrate completed"
    );
    assert!(started("worker") >= started("app"));
    assert_eq!(
        project
            .inspect("levels-migrate-1", "{{.State.ExitCode}}")
            .trim(),
        "0"
    );
}

const STEADY: &str = r#"
services:
  one:
    image: busybox
    command: ["sleep", "1000"]
    stop_grace_period: 0s
    environment:
      VALUE: first
  two:
    image: busybox
    command: ["sleep", "1000"]
    stop_grace_period: 0s
"#;

#[test]
fn up_converges_by_config_hash() {
    let project = Project::new("steady", STEADY);
    project.compose(&["up", "-d"]).ok();
    let id = |name: &str| project.inspect(&format!("steady-{name}-1"), "{{.Id}}");
    let (one, two) = (id("one"), id("two"));

    let again = project.compose(&["up", "-d"]);
    again.ok();
    assert!(
        again.stderr().contains("is up to date: nothing to do"),
        "{}",
        again.stderr()
    );
    assert_eq!((id("one"), id("two")), (one.clone(), two.clone()));

    project.rewrite(&STEADY.replace("first", "second"));
    let changed = project.compose(&["up", "-d"]);
    changed.ok();
    assert!(
        changed
            .stderr()
            .contains(" Container steady-one-1 Recreate "),
        "{}",
        changed.stderr()
    );
    assert_ne!(id("one"), one, "one's configuration changed");
    assert_eq!(id("two"), two, "two's did not");
    let env = project.inspect("steady-one-1", "{{json .Config.Env}}");
    assert!(env.contains("VALUE=second"), "{env}");

    let forced = project.compose(&["up", "-d", "--force-recreate", "two"]);
    forced.ok();
    assert_ne!(id("two"), two);

    // A service gone from the file is an orphan: kept with a warning, removed on request.
    let without_two = STEADY.split("  two:").next().unwrap().to_owned();
    project.rewrite(&without_two);
    let warned = project.compose(&["up", "-d"]);
    warned.ok();
    assert!(
        warned
            .stderr()
            .contains("Found orphan containers ([steady-two-1])"),
        "{}",
        warned.stderr()
    );
    project.compose(&["up", "-d", "--remove-orphans"]).ok();
    assert_eq!(names(&project.berth), ["steady-one-1"]);
}

#[test]
fn a_failed_dependency_is_named_and_stops_the_levels_above() {
    let project = Project::new(
        "failing",
        r#"
services:
  setup:
    image: busybox
    command: ["sh", "-c", "exit 3"]
  sick:
    image: busybox
    command: ["sleep", "1000"]
    healthcheck:
      test: ["CMD", "false"]
      interval: 100ms
      retries: 2
  app:
    image: busybox
    command: ["sleep", "1000"]
    depends_on:
      setup:
        condition: service_completed_successfully
"#,
    );
    let failed = project.compose(&["up", "-d", "app"]);
    let stderr = failed.fails(1);
    assert!(
        stderr.contains("service \"setup\" didn't complete successfully: exit 3"),
        "{stderr}"
    );
    assert_eq!(
        names(&project.berth),
        ["failing-setup-1"],
        "app was not created"
    );

    project.rewrite(
        r#"
services:
  sick:
    image: busybox
    command: ["sleep", "1000"]
    healthcheck:
      test: ["CMD", "false"]
      interval: 100ms
      retries: 2
  app:
    image: busybox
    command: ["sleep", "1000"]
    depends_on:
      sick:
        condition: service_healthy
"#,
    );
    let failed = project.compose(&["up", "-d", "--remove-orphans"]);
    let stderr = failed.fails(1);
    assert!(
        stderr.contains("dependency failed to start: container failing-sick-1 is unhealthy"),
        "{stderr}"
    );
    // What ran before is left running.
    assert_eq!(
        project
            .inspect("failing-sick-1", "{{.State.Status}}")
            .trim(),
        "running"
    );
}

/// Bad input is refused before anything is made.
#[test]
fn bad_compose_files_are_refused_with_file_line_and_key() {
    let berth = Berth::new();
    let directory = tempfile::tempdir().unwrap();
    let file = directory.path().join("compose.yaml");
    let cases: &[(&str, &str)] = &[
        (
            "services:\n  web:\n    image: busybox\n    bogus: 1\n",
            "compose.yaml:4:12: services.web additional properties 'bogus' not allowed",
        ),
        (
            "services:\n  web:\n    image: busybox\n   bad: [\n",
            "compose.yaml:4:",
        ),
        (
            "services:\n  web:\n    image: ${IMAGE:?set IMAGE to the image to run}\n",
            "error while interpolating services.web.image: required variable IMAGE is missing a value: set IMAGE to the image to run",
        ),
        (
            "services:\n  a:\n    image: busybox\n    depends_on: [b]\n  b:\n    image: busybox\n    depends_on: [a]\n",
            "dependency cycle detected: a -> b -> a",
        ),
        (
            "services:\n  web:\n    image: busybox\n    secrets: [token]\n",
            "compose.yaml:4:14: services.web.secrets: berth compose does not support 'secrets' yet",
        ),
        (
            "services:\n  web:\n    image: busybox\n    ports: 80\n",
            "compose.yaml:4:12: services.web.ports must be a array",
        ),
        (
            "services:\n  web:\n    image: busybox\n    depends_on: [db]\n",
            "service \"web\" depends on undefined service \"db\": invalid compose project",
        ),
        (
            "services:\n  web:\n    image: busybox\n    volumes: [data:/data]\n",
            "service \"web\" refers to undefined volume data: invalid compose project",
        ),
        (
            "services:\n  web:\n    image: busybox\n    labels: {a: 1}\n  web:\n    image: busybox\n",
            "compose.yaml:5:3: mapping key \"web\" already defined at line 2",
        ),
    ];
    for (text, expected) in cases {
        fs_err::write(&file, text).unwrap();
        for verb in [&["config"][..], &["up", "-d"][..]] {
            let mut command = berth.command();
            command
                .current_dir(directory.path())
                .env_remove("IMAGE")
                .arg("compose")
                .args(verb);
            let run = Run {
                output: support::output_with_stdin(command, None),
            };
            let stderr = run.fails(1);
            assert!(
                stderr.contains(expected),
                "{text}\nwanted {expected:?}\ngot {stderr}"
            );
        }
    }
    // Nothing was made.
    assert!(names(&berth).is_empty());
    let networks = berth.run(&["network", "ls", "--format", "{{.Name}}"]).ok();
    assert_eq!(networks.lines().count(), 3, "{networks}");
}

#[test]
fn attached_up_prefixes_output_and_ctrl_c_stops_the_project() {
    let project = Project::new(
        "attached",
        r#"
services:
  one:
    image: busybox
    command: ["sh", "-c", "echo one-a; sleep 0.3; echo one-b"]
  second:
    image: busybox
    command: ["sh", "-c", "echo two; exit 2"]
"#,
    );
    let out = project.compose(&["up"]).ok();
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "one-1     | one-a",
            "one-1     | one-b",
            "one-1 exited with code 0",
            "second-1  | two",
            "second-1 exited with code 2",
        ]
    );

    project.rewrite(
        r#"
services:
  long:
    image: busybox
    command: ["sh", "-c", "trap 'exit 0' TERM; echo started; while true; do sleep 0.1; done"]
"#,
    );
    let mut command = project.berth.command();
    command
        .current_dir(project.directory.path())
        .args(["compose", "-p", "attached", "up", "--remove-orphans"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    support::containers::wait_until(20.0, "long to run", || {
        project
            .berth
            .run(&[
                "inspect",
                "--format",
                "{{.State.Status}}",
                "attached-long-1",
            ])
            .stdout()
            .trim()
            == "running"
    });
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = support::containers::wait_child(&mut child, 30.0, "up to stop");
    assert_eq!(status.code(), Some(130));
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(stderr.contains("Gracefully stopping..."), "{stderr}");
    assert_eq!(
        project
            .inspect("attached-long-1", "{{.State.Status}}")
            .trim(),
        "exited"
    );
}

#[test]
fn wait_returns_once_healthy_and_build_is_refused() {
    let project = Project::new(
        "waiting",
        r#"
services:
  db:
    image: busybox
    command: ["sh", "-c", "sleep 0.5; touch /tmp/ready; exec sleep 1000"]
    stop_grace_period: 0s
    healthcheck:
      test: ["CMD", "test", "-f", "/tmp/ready"]
      interval: 100ms
      retries: 100
"#,
    );
    project.compose(&["up", "-d", "--wait"]).ok();
    assert_eq!(
        project
            .inspect("waiting-db-1", "{{.State.Health.Status}}")
            .trim(),
        "healthy"
    );
    let template = project
        .compose(&["ps", "--format", "{{.Name}} {{.Service}} {{.State}}"])
        .ok();
    assert_eq!(template, "waiting-db-1 db running\n");

    project.rewrite("services:\n  built:\n    build: .\n");
    let refused = project.compose(&["up", "-d"]);
    let stderr = refused.fails(1);
    assert!(
        stderr.contains("services.built.build: berth compose does not build images yet"),
        "{stderr}"
    );
    let flag = project.compose(&["up", "--build"]);
    assert!(flag.fails(1).contains("--build"), "{}", flag.stderr());
}

/// `up` killed with SIGKILL while it waits for a dependency: the next `up` finishes the
/// project, one container per service, none twice.
#[test]
fn up_after_a_killed_up_converges() {
    let project = Project::new(
        "killed",
        r#"
services:
  slow:
    image: busybox
    command: ["sh", "-c", "sleep 2; touch /tmp/ready; exec sleep 1000"]
    stop_grace_period: 0s
    healthcheck:
      test: ["CMD", "test", "-f", "/tmp/ready"]
      interval: 100ms
      retries: 100
  fast:
    image: busybox
    command: ["sleep", "1000"]
    stop_grace_period: 0s
  after:
    image: busybox
    command: ["sleep", "1000"]
    stop_grace_period: 0s
    depends_on:
      slow:
        condition: service_healthy
"#,
    );
    let mut command = project.berth.command();
    command
        .current_dir(project.directory.path())
        .args(["compose", "-p", "killed", "up", "-d"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = command.spawn().unwrap();
    support::containers::wait_until(20.0, "slow to run", || {
        project
            .berth
            .run(&["inspect", "--format", "{{.State.Status}}", "killed-slow-1"])
            .stdout()
            .trim()
            == "running"
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!names(&project.berth).contains(&"killed-after-1".to_owned()));
    project.compose(&["up", "-d"]).ok();
    assert_eq!(
        names(&project.berth),
        ["killed-after-1", "killed-fast-1", "killed-slow-1"]
    );
    let running = project.compose(&["ps", "-q"]).ok();
    assert_eq!(running.lines().count(), 3);
}

#[test]
fn restart_kill_pause_and_unpause_the_project() {
    let project = Project::new(
        "verbs",
        r#"
services:
  one:
    image: busybox
    command: ["sleep", "1000"]
    stop_grace_period: 0s
  two:
    image: busybox
    command: ["sleep", "1000"]
    stop_grace_period: 0s
    depends_on: [one]
"#,
    );
    project.compose(&["up", "-d"]).ok();
    let started = |name: &str| project.inspect(&format!("verbs-{name}-1"), "{{.State.StartedAt}}");
    let before = started("one");
    project.compose(&["restart", "-t", "0", "one"]).ok();
    assert_ne!(started("one"), before, "one restarted");
    project.compose(&["pause"]).ok();
    assert_eq!(
        project
            .compose(&["ps", "--format", "{{.Name}} {{.State}}"])
            .ok(),
        "verbs-one-1 paused\nverbs-two-1 paused\n"
    );
    project.compose(&["unpause", "two"]).ok();
    assert_eq!(
        project
            .compose(&["ps", "--format", "{{.Name}} {{.State}}"])
            .ok(),
        "verbs-one-1 paused\nverbs-two-1 running\n"
    );
    project.compose(&["unpause"]).ok();
    let file = project.directory.path().join("compose.yaml");
    let listed = project.compose(&["ls"]).ok();
    let mut lines = listed.lines();
    assert!(lines.next().unwrap().starts_with("NAME "), "{listed}");
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(row, ["verbs", "running(2)", file.to_str().unwrap()]);
    project.compose(&["kill", "two"]).ok();
    let json = project.compose(&["ls", "--format", "json"]).ok();
    let projects: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(projects[0]["Name"], "verbs");
    assert_eq!(projects[0]["Status"], "exited(1), running(1)");
    project.compose(&["stop", "-t", "0"]).ok();
    assert_eq!(project.compose(&["ls", "-q"]).ok(), "");
    assert_eq!(project.compose(&["ls", "-a", "-q"]).ok(), "verbs\n");
    project.compose(&["start", "one"]).ok();
    assert_eq!(
        project.inspect("verbs-two-1", "{{.State.Status}}").trim(),
        "exited"
    );
    assert_eq!(project.compose(&["ps", "--services"]).ok(), "one\n");
    let unknown = project.compose(&["restart", "nope"]);
    assert!(unknown.fails(1).contains("no such service: nope"));
}

#[test]
fn exec_runs_in_the_services_container() {
    let project = Project::new(
        "execs",
        r#"
services:
  app:
    image: busybox
    command: ["sleep", "1000"]
    stop_grace_period: 0s
    environment:
      FROM_SERVICE: yes-it-is
    deploy:
      replicas: 2
"#,
    );
    project.compose(&["up", "-d"]).ok();
    let out = project
        .compose(&[
            "exec",
            "-T",
            "app",
            "sh",
            "-c",
            "echo $FROM_SERVICE $EXTRA; hostname",
        ])
        .ok();
    let id_1 = project.inspect("execs-app-1", "{{.Config.Hostname}}");
    assert_eq!(out, format!("yes-it-is\n{}\n", id_1.trim()));
    let second = project
        .compose(&[
            "exec",
            "-T",
            "--index",
            "2",
            "-e",
            "EXTRA=x",
            "app",
            "sh",
            "-c",
            "echo $EXTRA; hostname",
        ])
        .ok();
    let id_2 = project.inspect("execs-app-2", "{{.Config.Hostname}}");
    assert_eq!(second, format!("x\n{}\n", id_2.trim()));
    let status = project.compose(&["exec", "-T", "app", "sh", "-c", "exit 3"]);
    assert_eq!(status.code(), 3);
    project.compose(&["stop", "-t", "0"]).ok();
    let stopped = project.compose(&["exec", "-T", "app", "true"]);
    assert!(
        stopped.fails(1).contains("service \"app\" is not running"),
        "{}",
        stopped.stderr()
    );
}
