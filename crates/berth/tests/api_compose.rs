//! `berth serve` driven by docker-compose 1.29 (Debian's `docker-compose`,
//! a docker-py client): a two-service project comes up on its own network,
//! one service reaches the other by name, and `down` leaves nothing.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

#[path = "api/harness.rs"]
mod harness;
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use harness::Server;
use support::containers::wait_until;
use support::Run;

/// `$BERTH_TEST_DOCKER_COMPOSE`, else /usr/bin/docker-compose; None (with
/// the reason printed) when missing.
fn docker_compose() -> Option<PathBuf> {
    let path = std::env::var_os("BERTH_TEST_DOCKER_COMPOSE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/docker-compose"));
    if path.exists() {
        Some(path)
    } else {
        eprintln!("SKIP: no docker-compose at {path:?} (apt-get install docker-compose)");
        None
    }
}

const PROJECT: &str = "berthcompose";

/// No subnet anywhere: berth picks the project network's.
const COMPOSE_FILE: &str = r#"version: "3.7"
services:
  web:
    image: busybox:latest
    command: ["sh", "-c", "echo hello-from-web > /www/index.html && exec httpd -f -p 80 -h /www"]
    volumes: ["site:/www"]
    labels:
      berth.test: compose
  client:
    image: busybox:latest
    depends_on: [web]
    environment:
      TARGET: http://web/index.html
    command: ["sh", "-c", "for i in $$(seq 100); do if timeout 3 wget -qO- $$TARGET; then echo fetched-ok; break; fi; sleep 0.2; done; exec sleep 1000"]
volumes:
  site: {}
"#;

struct Compose<'s> {
    server: &'s Server,
    program: PathBuf,
    directory: &'s Path,
}

impl Compose<'_> {
    fn run(&self, args: &[&str]) -> Run {
        let mut command = Command::new(&self.program);
        command
            .current_dir(self.directory)
            .env("DOCKER_HOST", self.server.host())
            .env(
                "DOCKER_CONFIG",
                self.server.directory.path().join("docker-config"),
            )
            .env_remove("DOCKER_TLS_VERIFY")
            .env_remove("DOCKER_CERT_PATH")
            .env_remove("DOCKER_API_VERSION")
            .env_remove("COMPOSE_FILE")
            .env_remove("COMPOSE_PROJECT_NAME")
            .args(["--ansi", "never", "-p", PROJECT])
            .args(args);
        Run {
            output: support::output_with_stdin(command, None),
        }
    }
}

#[test]
fn compose_up_ps_logs_and_down() {
    let Some(program) = docker_compose() else {
        return;
    };
    let Some(server) = Server::start() else {
        return;
    };
    let project = tempfile::tempdir().unwrap();
    fs_err::write(project.path().join("docker-compose.yml"), COMPOSE_FILE).unwrap();
    let compose = Compose {
        server: &server,
        program,
        directory: project.path(),
    };

    let up = compose.run(&["up", "-d"]);
    up.ok();
    let said = up.stderr();
    assert!(
        said.contains(&format!("Creating network \"{PROJECT}_default\"")),
        "{said}"
    );
    assert!(
        said.contains(&format!("Creating {PROJECT}_web_1")),
        "{said}"
    );
    assert!(
        said.contains(&format!("Creating {PROJECT}_client_1")),
        "{said}"
    );

    // The client reached the web service by its name on the project network.
    wait_until(30.0, "the client's fetch", || {
        compose
            .run(&["logs", "--no-color", "client"])
            .stdout()
            .contains("fetched-ok")
    });
    let logs = compose.run(&["logs", "--no-color"]).ok();
    assert!(logs.contains("client_1  | hello-from-web"), "{logs}");
    assert!(logs.contains("client_1  | fetched-ok"), "{logs}");

    let ps = compose.run(&["ps"]).ok();
    let rows: Vec<&str> = ps
        .lines()
        .filter(|line| line.starts_with(PROJECT))
        .collect();
    assert_eq!(rows.len(), 2, "{ps}");
    for (row, name) in rows.iter().zip(["client_1", "web_1"]) {
        assert!(row.starts_with(&format!("{PROJECT}_{name} ")), "{ps}");
        assert!(row.contains(" Up "), "{ps}");
    }
    assert_eq!(compose.run(&["ps", "-q"]).ok().lines().count(), 2);
    // Several label filters must all hold (compose relies on it).
    let web = server
        .docker(&[
            "ps",
            "--format",
            "{{.Names}}",
            "--filter",
            &format!("label=com.docker.compose.project={PROJECT}"),
            "--filter",
            "label=com.docker.compose.service=web",
        ])
        .ok();
    assert_eq!(web.trim(), format!("{PROJECT}_web_1"));
    let network = server
        .docker(&[
            "network",
            "ls",
            "--format",
            "{{.Name}}",
            "--filter",
            &format!("label=com.docker.compose.project={PROJECT}"),
            "--filter",
            "label=com.docker.compose.network=default",
        ])
        .ok();
    assert_eq!(network.trim(), format!("{PROJECT}_default"));
    let network_id = server
        .docker(&[
            "network",
            "inspect",
            "--format",
            "{{.Id}}",
            &format!("{PROJECT}_default"),
        ])
        .ok();
    let bridge = Path::new("/sys/class/net").join(format!("berth-{}", &network_id.trim()[..9]));
    assert!(bridge.exists(), "no bridge {bridge:?}");
    // A second `up` finds everything in place.
    let again = compose.run(&["up", "-d"]);
    again.ok();
    assert!(
        again
            .stderr()
            .contains(&format!("{PROJECT}_web_1 is up-to-date")),
        "{}",
        again.stderr()
    );

    let down = compose.run(&["down", "-v", "-t", "1"]);
    down.ok();
    let said = down.stderr();
    assert!(
        said.contains(&format!("Removing network {PROJECT}_default")),
        "{said}"
    );
    assert!(
        said.contains(&format!("Removing volume {PROJECT}_site")),
        "{said}"
    );
    assert_eq!(server.docker(&["ps", "-aq"]).ok(), "");
    let networks = server
        .docker(&["network", "ls", "--format", "{{.Name}}"])
        .ok();
    let mut names: Vec<&str> = networks.lines().collect();
    names.sort_unstable();
    assert_eq!(names, ["bridge", "host", "none"]);
    assert_eq!(server.docker(&["volume", "ls", "-q"]).ok(), "");
    assert!(!bridge.exists(), "{bridge:?} is left after down");
    assert_eq!(compose.run(&["ps", "-q"]).ok(), "");
}

/// A VM service on two networks, compose's way: created on the first,
/// `network connect`ed to the second (compose 1.29 disconnects and
/// reconnects the first too) before its start.
const VM_COMPOSE_FILE: &str = r#"version: "2.4"
services:
  front-web:
    image: busybox:latest
    command: ["httpd", "-f", "-p", "80", "-h", "/etc"]
    networks: [front]
  back-web:
    image: busybox:latest
    command: ["httpd", "-f", "-p", "80", "-h", "/etc"]
    networks: [back]
  app:
    image: busybox:latest
    runtime: vm
    depends_on: [front-web, back-web]
    networks: [front, back]
    command: ["sh", "-c", "for i in $$(seq 100); do if timeout 3 wget -qO- http://front-web/hostname && timeout 3 wget -qO- http://back-web/hostname; then echo reached-both; break; fi; sleep 0.2; done; exec sleep 1000"]
networks:
  front: {}
  back: {}
"#;

#[test]
fn compose_attaches_a_vm_service_to_two_networks() {
    let Some(program) = docker_compose() else {
        return;
    };
    let Some((kernel, cache)) = support::vm::vm_environment() else {
        return;
    };
    // `berth serve` (and so each container's monitor) inherits these.
    std::env::set_var("BERTH_VM_KERNEL_DIR", kernel);
    std::env::set_var("BERTH_VM_CACHE", cache);
    std::env::set_var("BERTH_VM_ACCEL", "tcg");
    let Some(server) = Server::start() else {
        return;
    };
    let project = tempfile::tempdir().unwrap();
    fs_err::write(project.path().join("docker-compose.yml"), VM_COMPOSE_FILE).unwrap();
    let compose = Compose {
        server: &server,
        program,
        directory: project.path(),
    };
    compose.run(&["up", "-d"]).ok();
    let app = format!("{PROJECT}_app_1");
    assert_eq!(
        server
            .docker(&["inspect", "-f", "{{.HostConfig.Runtime}}", &app])
            .ok()
            .trim(),
        "vm"
    );
    wait_until(120.0, "the VM service's fetches", || {
        compose
            .run(&["logs", "--no-color", "app"])
            .stdout()
            .contains("reached-both")
    });
    // A card per network in the guest, each with the service's address on
    // one of them (which is first is compose's order of connection).
    let addresses: Vec<String> = ["front", "back"]
        .iter()
        .map(|network| {
            let format = format!(
                "{{{{(index .NetworkSettings.Networks \"{PROJECT}_{network}\").IPAddress}}}}"
            );
            let address = server.docker(&["inspect", "-f", &format, &app]).ok();
            format!("inet {}/", address.trim())
        })
        .collect();
    let cards: Vec<String> = ["eth0", "eth1"]
        .iter()
        .map(|card| {
            server
                .docker(&["exec", &app, "ip", "addr", "show", "dev", card])
                .ok()
        })
        .collect();
    let has = |card: &str, address: &str| card.contains(address);
    assert!(
        (has(&cards[0], &addresses[0]) && has(&cards[1], &addresses[1]))
            || (has(&cards[0], &addresses[1]) && has(&cards[1], &addresses[0])),
        "{addresses:?} in {cards:?}"
    );
    compose.run(&["down", "-t", "1"]).ok();
    assert_eq!(server.docker(&["ps", "-aq"]).ok(), "");
    let networks = server
        .docker(&["network", "ls", "--format", "{{.Name}}"])
        .ok();
    let mut names: Vec<&str> = networks.lines().collect();
    names.sort_unstable();
    assert_eq!(names, ["bridge", "host", "none"]);
}
