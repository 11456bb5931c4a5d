//! `network connect`/`disconnect` through `berth serve` with the real
//! docker CLI and raw HTTP (`Config.MacAddress`, as docker 20.10's CLI and
//! compose 1.29 send it), against Docker's engine too when one is reachable
//! (`BERTH_TEST_DOCKER_HOST`).

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

#[path = "api/compare.rs"]
mod compare;
#[path = "api/harness.rs"]
mod harness;
mod support;

use compare::{each_engine, Cleanup, Engine};
use harness::Server;

/// A request with `Connection: close` and a JSON `body`.
fn post(target: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {target} HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Removes the named networks when dropped, after the containers' cleanup
/// (declared before it, so dropped after it).
struct Networks<'e, 'a> {
    engine: &'e Engine<'a>,
    names: Vec<String>,
}

impl Drop for Networks<'_, '_> {
    fn drop(&mut self) {
        for name in &self.names {
            let _ = self.engine.docker(&["network", "rm", name]);
        }
    }
}

/// A container created with `Config.MacAddress` on a network keeps that
/// MAC when it is disconnected from it and connected again before its
/// start (what compose 1.29 does to every container it starts): the MAC
/// belongs to the network the container's mode names, not to whichever
/// endpoint comes first.
#[test]
fn the_configured_mac_survives_a_reconnect_to_the_mode_network() {
    let Some(server) = Server::start() else {
        return;
    };
    each_engine(&server, "macnet", |engine| {
        let mode = engine.name("mode");
        let other = engine.name("other");
        let container = engine.name("c");
        let _networks = Networks {
            engine,
            names: vec![mode.clone(), other.clone()],
        };
        let _cleanup = Cleanup::new(engine, vec![container.clone()]);
        for (name, subnet) in [(&mode, "10.213.133.0/24"), (&other, "10.213.134.0/24")] {
            engine
                .docker(&["network", "create", "--subnet", subnet, name])
                .ok();
        }
        let mac = "02:42:0a:d5:85:42";
        // docker's own CLI now sends a per-network MAC, which needs API 1.44.
        let body = format!(
            r#"{{"Image":"busybox","Cmd":["sleep","60"],"MacAddress":"{mac}","HostConfig":{{"NetworkMode":"{mode}"}}}}"#
        );
        let target = format!("/v1.41/containers/create?name={container}");
        let (status, _, answer) = engine.raw(&post(&target, &body));
        assert_eq!(status, 201, "{}", String::from_utf8_lossy(&answer));
        engine
            .docker(&["network", "disconnect", &mode, &container])
            .ok();
        engine
            .docker(&["network", "connect", &other, &container])
            .ok();
        engine
            .docker(&["network", "connect", &mode, &container])
            .ok();
        engine.docker(&["start", &container]).ok();
        let mac_on = |network: &str| {
            engine.inspect(
                &container,
                &format!("{{{{(index .NetworkSettings.Networks \"{network}\").MacAddress}}}}"),
            )
        };
        let settings = engine.inspect(&container, "{{json .NetworkSettings}}");
        assert_eq!(mac_on(&mode), mac, "{settings}");
        assert_ne!(mac_on(&other), mac, "{settings}");
        // And in the container: one card has it.
        let cards = engine
            .docker(&["exec", &container, "ip", "-o", "link"])
            .ok();
        assert!(cards.contains(mac), "{cards}");
    });
}

/// `POST /networks/{id}/connect` and `/disconnect` of a running VM
/// container (berth only: Docker has no VM runtime): the connect gives a
/// spare card of its VM the network, so a namespace container there
/// reaches it by name; the disconnect takes the card back; with every card
/// in use the connect is a 409 naming the limit.
#[test]
fn a_running_vm_container_is_connected_through_the_api() {
    let Some((kernel, cache)) = support::vm::vm_environment() else {
        return;
    };
    // `berth serve` (and so each container's monitor and shim) inherits
    // these; one spare card, so the second connect meets the limit.
    std::env::set_var("BERTH_VM_KERNEL_DIR", kernel);
    std::env::set_var("BERTH_VM_CACHE", cache);
    std::env::set_var("BERTH_VM_ACCEL", "tcg");
    std::env::set_var("BERTH_VM_SPARE_CARDS", "1");
    let Some(server) = Server::start() else {
        return;
    };
    for (name, subnet) in [
        ("apifront", "10.213.135.0/24"),
        ("apiback", "10.213.136.0/24"),
        ("apiother", "10.213.137.0/24"),
    ] {
        server
            .docker(&["network", "create", "--subnet", subnet, name])
            .ok();
    }
    let serve = ["busybox", "httpd", "-f", "-p", "80", "-h", "/etc"];
    let mut args = vec!["run", "-d", "--network", "apiback", "--name", "apipeer"];
    args.extend_from_slice(&serve);
    server.docker(&args).ok();
    let mut args = vec!["run", "-d", "--runtime", "vm", "--network", "apifront"];
    args.extend_from_slice(&["--name", "apivm"]);
    args.extend_from_slice(&serve);
    server.docker(&args).ok();

    let body =
        r#"{"Container":"apivm","EndpointConfig":{"IPAMConfig":{"IPv4Address":"10.213.136.77"}}}"#;
    let (status, _, answer) = server.raw(&post("/v1.41/networks/apiback/connect", body));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    let card = server
        .docker(&["exec", "apivm", "ip", "addr", "show", "dev", "eth1"])
        .ok();
    assert!(card.contains("inet 10.213.136.77/24"), "{card}");
    let hostname = server
        .docker(&["inspect", "-f", "{{.Config.Hostname}}", "apivm"])
        .ok();
    let mut answer = String::new();
    support::containers::wait_until(60.0, "the VM by name from apiback", || {
        let run = server.docker(&[
            "exec",
            "apipeer",
            "timeout",
            "5",
            "wget",
            "-qO-",
            "http://apivm/hostname",
        ]);
        answer = run.stdout();
        run.code() == 0
    });
    assert_eq!(answer, hostname);

    // The one spare is taken: 409, and nothing of the attempt stays.
    let body = r#"{"Container":"apivm"}"#;
    let (status, _, answer) = server.raw(&post("/v1.41/networks/apiother/connect", body));
    let message = String::from_utf8_lossy(&answer);
    assert_eq!(status, 409, "{message}");
    assert!(
        message.contains("all 2 network cards of its VM are in use"),
        "{message}"
    );
    let count = [
        "network",
        "inspect",
        "-f",
        "{{len .Containers}}",
        "apiother",
    ];
    assert_eq!(server.docker(&count).ok().trim(), "0");

    let (status, _, answer) = server.raw(&post("/v1.41/networks/apiback/disconnect", body));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    let links = server.docker(&["exec", "apivm", "ip", "-o", "link"]).ok();
    assert!(
        !support::vm::links_up(&links).contains(&"eth1".to_owned()),
        "{links}"
    );
    let addresses = server
        .docker(&["exec", "apivm", "ip", "-o", "-4", "addr"])
        .ok();
    assert!(!addresses.contains("10.213.136.77"), "{addresses}");
    // Its card now takes the other network.
    let (status, _, answer) = server.raw(&post("/v1.41/networks/apiother/connect", body));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    let format = "{{(index .NetworkSettings.Networks \"apiother\").IPAddress}}";
    let address = server.docker(&["inspect", "-f", format, "apivm"]).ok();
    let card = server
        .docker(&["exec", "apivm", "ip", "addr", "show", "dev", "eth1"])
        .ok();
    assert!(
        card.contains(&format!("inet {}/", address.trim())),
        "{card}"
    );

    server.docker(&["rm", "-f", "apivm", "apipeer"]).ok();
    for network in ["apifront", "apiback", "apiother"] {
        server.docker(&["network", "rm", network]).ok();
    }
}
