//! One project seen by both compose implementations (issue 19): `berth compose up` makes
//! containers, networks and volumes that docker compose v2, pointed at `berth serve` on the same
//! root, lists as its own project (compose's labels and names), and that its `down -v` removes;
//! and a health-gated project that docker compose v2 brings up with `--wait` through `berth
//! serve` is the project `berth compose ps` shows.
//!
//! Needs the docker compose v2 binary (scripts/compose-v2.sh, or `BERTH_TEST_COMPOSE_V2`) and
//! the docker CLI the API harness uses; skips with the reason printed without them.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

#[path = "api/harness.rs"]
mod harness;
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use harness::Server;
use support::Run;

fn compose_v2() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("BERTH_TEST_COMPOSE_V2") {
        return Some(PathBuf::from(path));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| support::workspace_root().join("target"));
    let path = target.join("compose-v2/docker-compose");
    if path.exists() {
        Some(path)
    } else {
        eprintln!("SKIP: no docker compose v2 at {path:?} (run scripts/compose-v2.sh)");
        None
    }
}

struct Both<'s> {
    server: &'s Server,
    compose_v2: PathBuf,
    directory: &'s Path,
}

impl Both<'_> {
    fn docker_compose(&self, args: &[&str]) -> Run {
        let mut command = Command::new(&self.compose_v2);
        command
            .current_dir(self.directory)
            .env("DOCKER_HOST", self.server.host())
            .env(
                "DOCKER_CONFIG",
                self.server.directory.path().join("docker-config"),
            )
            .env_remove("COMPOSE_PROJECT_NAME")
            .env_remove("COMPOSE_FILE")
            .args(["-p", "interop"])
            .args(args);
        Run {
            output: support::output_with_stdin(command, None),
        }
    }

    fn berth_compose(&self, args: &[&str]) -> Run {
        let mut command = self.server.berth.command();
        command
            .current_dir(self.directory)
            .args(["compose", "-p", "interop"])
            .args(args);
        Run {
            output: support::output_with_stdin(command, None),
        }
    }
}

impl Drop for Both<'_> {
    fn drop(&mut self) {
        let _ = self.berth_compose(&["down", "-v", "-t", "0", "--remove-orphans"]);
    }
}

/// (name, service, state) of `ps --format json`'s lines.
fn listed(json_lines: &str) -> Vec<(String, String, String)> {
    let mut rows: Vec<(String, String, String)> = json_lines
        .lines()
        .map(|line| {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            (
                row["Name"].as_str().unwrap().to_owned(),
                row["Service"].as_str().unwrap().to_owned(),
                row["State"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    rows.sort();
    rows
}

const PROJECT: &str = r#"
services:
  web:
    image: busybox
    command: ["httpd", "-f", "-p", "80"]
    stop_grace_period: 1s
    volumes: ["data:/data"]
  side:
    image: busybox
    command: ["sleep", "1000"]
    stop_grace_period: 1s
    depends_on: [web]
volumes:
  data: {}
"#;

const HEALTH_GATED: &str = r#"
services:
  db:
    image: busybox
    command: ["sh", "-c", "sleep 1; touch /tmp/ready; exec sleep 1000"]
    stop_grace_period: 1s
    healthcheck:
      test: ["CMD", "test", "-f", "/tmp/ready"]
      interval: 200ms
      retries: 50
  web:
    image: busybox
    command: ["httpd", "-f", "-p", "80"]
    stop_grace_period: 1s
    depends_on:
      db:
        condition: service_healthy
"#;

#[test]
fn docker_compose_v2_and_berth_compose_see_one_project() {
    let Some(compose_v2) = compose_v2() else {
        return;
    };
    let Some(server) = Server::start() else {
        return;
    };
    let directory = tempfile::tempdir().unwrap();
    fs_err::write(directory.path().join("compose.yaml"), PROJECT).unwrap();
    let both = Both {
        server: &server,
        compose_v2,
        directory: directory.path(),
    };
    both.berth_compose(&["up", "-d"]).ok();
    let ours = listed(&both.berth_compose(&["ps", "--format", "json"]).ok());
    let theirs = listed(&both.docker_compose(&["ps", "--format", "json"]).ok());
    assert_eq!(
        ours,
        [
            ("interop-side-1".into(), "side".into(), "running".into()),
            ("interop-web-1".into(), "web".into(), "running".into()),
        ]
    );
    assert_eq!(theirs, ours);
    let services = both.docker_compose(&["ps", "--services"]).ok();
    assert_eq!(services.lines().collect::<Vec<_>>().len(), 2, "{services}");

    both.docker_compose(&["down", "-v"]).ok();
    assert_eq!(both.berth_compose(&["ps", "-a", "-q"]).ok(), "");
    let networks = server
        .berth
        .run(&["network", "ls", "--format", "{{.Name}}"])
        .ok();
    assert!(!networks.contains("interop_default"), "{networks}");
    let volumes = server.berth.run(&["volume", "ls", "-q"]).ok();
    assert!(!volumes.contains("interop_data"), "{volumes}");

    // docker compose v2's own health-gated `up --wait` through berth serve.
    fs_err::write(directory.path().join("compose.yaml"), HEALTH_GATED).unwrap();
    both.docker_compose(&["up", "-d", "--wait"]).ok();
    let ours = listed(&both.berth_compose(&["ps", "--format", "json"]).ok());
    assert_eq!(
        ours,
        [
            ("interop-db-1".into(), "db".into(), "running".into()),
            ("interop-web-1".into(), "web".into(), "running".into()),
        ]
    );
    let health = server
        .berth
        .inspect("interop-db-1", "{{.State.Health.Status}}");
    assert_eq!(health.trim(), "healthy");
    both.berth_compose(&["down", "-t", "0"]).ok();
    assert_eq!(both.docker_compose(&["ps", "-a", "-q"]).ok(), "");
}
