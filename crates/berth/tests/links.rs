//! Docker's legacy links (`--link`, `rm --link`) on the default bridge, and
//! the exposed ports they read (`Config.ExposedPorts`, `NetworkSettings.Ports`).
//! The expected lines are what docker 20.10 printed for the same commands.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use support::Berth;

fn busybox() -> Berth {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth
}

fn address(berth: &Berth, container: &str) -> String {
    berth
        .run(&[
            "inspect",
            "-f",
            "{{.NetworkSettings.Networks.bridge.IPAddress}}",
            container,
        ])
        .ok()
        .trim()
        .to_owned()
}

fn remove(berth: &Berth, containers: &[&str]) {
    let mut args = vec!["rm", "-f"];
    args.extend_from_slice(containers);
    berth.run(&args).ok();
}

#[test]
fn a_link_gives_hosts_lines_and_the_linked_containers_environment() {
    let berth = busybox();
    berth
        .run(&[
            "run",
            "-d",
            "--name",
            "lk-db",
            "--hostname",
            "dbhost",
            "-e",
            "FOO=bar",
            "--expose",
            "5432",
            "--expose",
            "53/udp",
            "busybox",
            "sleep",
            "300",
        ])
        .ok();
    let ip = address(&berth, "lk-db");
    assert!(!ip.is_empty());
    let out = berth
        .run(&[
            "run",
            "--rm",
            "--name",
            "lk-web",
            "--link",
            "lk-db:db",
            "-e",
            "DB_ENV_FOO=mine",
            "busybox",
            "sh",
            "-c",
            "grep -v -e localhost -e ip6- /etc/hosts; env | sort",
        ])
        .ok();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("{ip}\tdb dbhost lk-db"), "{out}");
    for wanted in [
        "DB_ENV_FOO=mine".to_owned(), // the container's own variable wins
        "DB_NAME=/lk-web/db".to_owned(),
        format!("DB_PORT=udp://{ip}:53"),
        format!("DB_PORT_53_UDP=udp://{ip}:53"),
        format!("DB_PORT_53_UDP_ADDR={ip}"),
        "DB_PORT_53_UDP_PORT=53".to_owned(),
        "DB_PORT_53_UDP_PROTO=udp".to_owned(),
        format!("DB_PORT_5432_TCP=tcp://{ip}:5432"),
        format!("DB_PORT_5432_TCP_ADDR={ip}"),
        "DB_PORT_5432_TCP_PORT=5432".to_owned(),
        "DB_PORT_5432_TCP_PROTO=tcp".to_owned(),
    ] {
        assert!(lines.contains(&wanted.as_str()), "{wanted} missing:\n{out}");
    }
    // PATH and HOME are not passed on.
    assert!(!out.contains("DB_ENV_PATH"), "{out}");
    // Linked by its name alone: the alias is the name, not repeated.
    let out = berth
        .run(&[
            "run",
            "--rm",
            "--link",
            "lk-db",
            "busybox",
            "grep",
            "lk-db",
            "/etc/hosts",
        ])
        .ok();
    assert_eq!(out.trim(), format!("{ip}\tlk-db dbhost"));
    // A container without links has neither.
    let out = berth
        .run(&["run", "--rm", "busybox", "sh", "-c", "env; cat /etc/hosts"])
        .ok();
    assert!(!out.contains("lk-db") && !out.contains("DB_"), "{out}");
    remove(&berth, &["lk-db"]);
}

#[test]
fn a_running_parent_sees_its_linked_container_at_its_new_address() {
    let berth = busybox();
    berth.run_detached(&["--name", "lp-c", "busybox", "sleep", "300"]);
    berth.run_detached(&[
        "--name", "lp-p", "--link", "lp-c:db", "busybox", "sleep", "300",
    ]);
    let first = address(&berth, "lp-c");
    let db_line = || {
        berth
            .run(&["exec", "lp-p", "grep", "db", "/etc/hosts"])
            .ok()
            .trim()
            .to_owned()
    };
    let hostname = berth.inspect("lp-c", "{{.Config.Hostname}}");
    assert_eq!(db_line(), format!("{first}\tdb {hostname} lp-c"));
    // Another container takes the stopped one's address, so its restart
    // gets another (as docker 20.10 did here: .2, then .4).
    berth.run(&["stop", "-t", "0", "lp-c"]).ok();
    berth.run_detached(&["--name", "lp-z", "busybox", "sleep", "300"]);
    berth.run(&["start", "lp-c"]).ok();
    let second = address(&berth, "lp-c");
    assert_ne!(first, second);
    assert_eq!(db_line(), format!("{second}\tdb {hostname} lp-c"));
    remove(&berth, &["lp-p", "lp-c", "lp-z"]);
}

#[test]
fn links_are_checked_at_create_and_at_start_as_dockerd_checks_them() {
    let berth = busybox();
    let error = berth
        .run(&["run", "--rm", "--link", "nosuch:x", "busybox", "true"])
        .fails(125);
    assert!(
        error.contains("could not get container for nosuch: No such container: nosuch"),
        "{error}"
    );
    berth
        .run(&["create", "--name", "lk-child", "busybox", "sleep", "300"])
        .ok();
    for (network, wanted) in [
        (
            "host",
            "conflicting options: host type networking can't be used with links",
        ),
        (
            "container:lk-child",
            "conflicting options: container type network can't be used with links",
        ),
    ] {
        let error = berth
            .run(&[
                "create",
                "--network",
                network,
                "--link",
                "lk-child",
                "busybox",
                "true",
            ])
            .fails(125);
        assert!(error.contains(wanted), "{network}: {error}");
    }
    // Nothing was created by the refusals.
    let all = berth.run(&["ps", "-aq"]).ok();
    assert_eq!(all.lines().count(), 1, "{all}");

    berth
        .run(&[
            "create",
            "--name",
            "lk-parent",
            "--link",
            "lk-child:c",
            "busybox",
            "true",
        ])
        .ok();
    let links = berth
        .run(&["inspect", "-f", "{{json .HostConfig.Links}}", "lk-parent"])
        .ok();
    assert_eq!(links.trim(), r#"["/lk-child:/lk-parent/c"]"#);
    // The child is not running: start fails (1), run fails (125).
    let error = berth.run(&["start", "lk-parent"]).fails(1);
    assert!(
        error.contains("Cannot link to a non running container: /lk-child AS /lk-parent/c"),
        "{error}"
    );
    let state = berth
        .run(&["inspect", "-f", "{{.State.Status}}", "lk-parent"])
        .ok();
    assert_ne!(state.trim(), "running");
    berth.run(&["start", "lk-child"]).ok();
    berth.run(&["start", "lk-parent"]).ok();
    // A rename shows in the link; the link outlives its child, as dockerd's.
    berth.run(&["rename", "lk-child", "lk-renamed"]).ok();
    let links = berth
        .run(&["inspect", "-f", "{{json .HostConfig.Links}}", "lk-parent"])
        .ok();
    assert_eq!(links.trim(), r#"["/lk-renamed:/lk-parent/c"]"#);
    remove(&berth, &["lk-renamed"]);
    // (Gone, it is named as it was linked: dockerd would say /lk-renamed.)
    let error = berth.run(&["start", "lk-parent"]).fails(1);
    assert!(
        error.contains("Cannot link to a non running container: /lk-child AS /lk-parent/c"),
        "{error}"
    );
    remove(&berth, &["lk-parent"]);
}

#[test]
fn rm_link_removes_the_link_and_keeps_both_containers() {
    let berth = busybox();
    berth
        .run(&["create", "--name", "rl-db", "busybox", "true"])
        .ok();
    berth
        .run(&[
            "create", "--name", "rl-web", "--link", "rl-db:db", "busybox", "true",
        ])
        .ok();
    let error = berth.run(&["rm", "--link", "/rl-web/other"]).fails(1);
    assert!(
        error.contains("No such container: /rl-web/other"),
        "{error}"
    );
    let error = berth.run(&["rm", "--link", "rl-db"]).fails(1);
    assert!(
        error.contains("Conflict, cannot remove the default link name of the container"),
        "{error}"
    );
    berth.run(&["rm", "--link", "/rl-web/db"]).ok();
    let links = berth
        .run(&["inspect", "-f", "{{json .HostConfig.Links}}", "rl-web"])
        .ok();
    assert_eq!(links.trim(), "null");
    let all = berth.run(&["ps", "-a", "--format", "{{.Names}}"]).ok();
    let mut names: Vec<&str> = all.lines().collect();
    names.sort_unstable();
    assert_eq!(names, ["rl-db", "rl-web"]);
    // Without the link the start no longer needs rl-db running.
    berth.run(&["start", "rl-web"]).ok();
    remove(&berth, &["rl-db", "rl-web"]);
}

/// `nslookup NAME` through the embedded DNS: the address, or None.
fn resolve(berth: &Berth, options: &[&str], name: &str) -> Option<String> {
    let script =
        format!("nslookup {name} 127.0.0.11 | grep -A1 '^Name:' | sed -n 's/^Address: //p'");
    let mut args = vec!["run", "--rm"];
    args.extend_from_slice(options);
    args.extend_from_slice(&["busybox", "sh", "-c", &script]);
    let out = berth.run(&args).stdout();
    Some(out.trim().to_owned()).filter(|address| !address.is_empty())
}

#[test]
fn a_link_on_a_user_defined_network_is_a_dns_alias_of_its_container_alone() {
    let berth = busybox();
    berth.run(&["network", "create", "lk-net"]).ok();
    berth
        .run(&[
            "run",
            "-d",
            "--name",
            "lk-peer",
            "--network",
            "lk-net",
            "busybox",
            "sleep",
            "300",
        ])
        .ok();
    let peer = berth
        .run(&[
            "inspect",
            "-f",
            "{{(index .NetworkSettings.Networks \"lk-net\").IPAddress}}",
            "lk-peer",
        ])
        .ok();
    let peer = peer.trim().to_owned();
    // The docker CLI makes `--link` the endpoint's: no hosts line, no environment.
    let linked = ["--network", "lk-net", "--link", "lk-peer:p"];
    assert_eq!(resolve(&berth, &linked, "p"), Some(peer.clone()));
    let out = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            "lk-net",
            "--link",
            "lk-peer:p",
            "busybox",
            "sh",
            "-c",
            "env; cat /etc/hosts",
        ])
        .ok();
    assert!(!out.contains("P_NAME") && !out.contains("\tp "), "{out}");
    // Another container on the network does not see the alias.
    assert_eq!(resolve(&berth, &["--network", "lk-net"], "p"), None);
    // `network connect --link`, and inspect's endpoint links; a container on
    // the default bridge and a user-defined network asks the embedded DNS,
    // as dockerd's.
    berth
        .run(&["create", "--name", "lk-late", "busybox", "sleep", "300"])
        .ok();
    berth
        .run(&[
            "network",
            "connect",
            "--link",
            "lk-peer:pp",
            "lk-net",
            "lk-late",
        ])
        .ok();
    let links = berth
        .run(&[
            "inspect",
            "-f",
            "{{json (index .NetworkSettings.Networks \"lk-net\").Links}} {{json .HostConfig.Links}}",
            "lk-late",
        ])
        .ok();
    assert_eq!(links.trim(), r#"["lk-peer:pp"] null"#);
    berth.run(&["start", "lk-late"]).ok();
    let out = berth
        .run(&[
            "exec",
            "lk-late",
            "sh",
            "-c",
            "nslookup pp 127.0.0.11 | grep -A1 '^Name:' | sed -n 's/^Address: //p'",
        ])
        .ok();
    assert_eq!(out.trim(), peer);
    let error = berth
        .run(&[
            "network",
            "connect",
            "--link",
            "lk-peer:q",
            "bridge",
            "lk-peer",
        ])
        .fails(1);
    assert!(
        error.contains("links are only supported for user-defined networks"),
        "{error}"
    );
    remove(&berth, &["lk-peer", "lk-late"]);
    berth.run(&["network", "rm", "lk-net"]).ok();
}

#[test]
fn exposed_ports_are_in_the_config_and_listed_unpublished_while_running() {
    let berth = busybox();
    berth
        .run(&[
            "run",
            "-d",
            "--name",
            "ex",
            "--expose",
            "8000",
            "--expose",
            "53/udp",
            "-p",
            "127.0.0.1::9000",
            "busybox",
            "sleep",
            "300",
        ])
        .ok();
    let config = berth
        .run(&["inspect", "-f", "{{json .Config.ExposedPorts}}", "ex"])
        .ok();
    assert_eq!(
        config.trim(),
        r#"{"53/udp":{},"8000/tcp":{},"9000/tcp":{}}"#
    );
    let ports = berth
        .run(&["inspect", "-f", "{{json .NetworkSettings.Ports}}", "ex"])
        .ok();
    let ports: serde_json::Value = serde_json::from_str(&ports).unwrap();
    assert_eq!(ports["8000/tcp"], serde_json::Value::Null, "{ports}");
    assert_eq!(ports["53/udp"], serde_json::Value::Null, "{ports}");
    assert_eq!(ports["9000/tcp"][0]["HostIp"], "127.0.0.1", "{ports}");
    remove(&berth, &["ex"]);
}
