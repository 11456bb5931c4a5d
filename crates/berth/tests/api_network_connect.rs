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
