//! berth's single-node swarm through `berth serve` (raw HTTP, as docker-py
//! sends it): init, inspect, info, the ingress network, overlay networks
//! with their scope, attachable and ingress rules, a container on an
//! attachable overlay network, and a leave that takes what init made.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

#[path = "api/harness.rs"]
mod harness;
mod support;

use harness::Server;
use serde_json::Value;

fn request(method: &str, target: &str, body: &str) -> Vec<u8> {
    format!(
        "{method} /v1.43{target} HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// (status, JSON body or null).
fn call(server: &Server, method: &str, target: &str, body: &str) -> (u16, Value) {
    let (status, _, body) = server.raw(&request(method, target, body));
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

fn message(value: &Value) -> &str {
    value["message"].as_str().unwrap_or_default()
}

/// The bridge device of a network (`berth-<id>`), from its id.
fn device(id: &str) -> String {
    format!("berth-{}", &id[..9])
}

const INIT: &str = r#"{"AdvertiseAddr":"127.0.0.1","ListenAddr":"0.0.0.0:2377","DefaultAddrPool":null,"SubnetSize":null,"ForceNewCluster":false,"Spec":null}"#;

#[test]
fn init_inspect_info_and_leave_take_their_state_and_ingress_with_them() {
    let Some(server) = Server::start_with(&[], false) else {
        return;
    };
    // Outside a swarm: Docker's answers, as before.
    let (status, body) = call(
        &server,
        "POST",
        "/networks/create",
        r#"{"Name":"o1","Driver":"overlay"}"#,
    );
    assert_eq!(status, 503);
    assert!(
        message(&body).starts_with("This node is not a swarm manager."),
        "{body}"
    );
    let (status, body) = call(&server, "GET", "/swarm", "");
    assert_eq!(status, 503, "{body}");

    // What one node without services cannot do is refused by name, and
    // leaves no swarm behind.
    for (body, field) in [
        (
            r#"{"ListenAddr":"0.0.0.0:2377","DefaultAddrPool":["10.20.0.0/16"],"SubnetSize":26}"#,
            "DefaultAddrPool",
        ),
        (r#"{"SubnetSize":26}"#, "SubnetSize"),
        (r#"{"DataPathAddr":"127.0.0.1"}"#, "DataPathAddr"),
        (r#"{"DataPathPort":4789}"#, "DataPathPort"),
        (r#"{"Availability":"drain"}"#, "Availability"),
        (
            r#"{"Spec":{"EncryptionConfig":{"AutoLockManagers":true}}}"#,
            "Spec.EncryptionConfig.AutoLockManagers",
        ),
        (
            r#"{"Spec":{"CAConfig":{"ExternalCAs":[{"Protocol":"cfssl","URL":"https://ca"}]}}}"#,
            "Spec.CAConfig.ExternalCAs",
        ),
    ] {
        let (status, answer) = call(&server, "POST", "/swarm/init", body);
        assert_eq!(status, 501, "{body}: {answer}");
        assert_eq!(
            message(&answer),
            format!("berth's swarm mode has one node: {field} is not supported")
        );
        assert!(!server.berth.root().join("swarm.json").exists(), "{body}");
    }
    // The docker CLI's defaults are what a plain init sends: taken.
    let cli_defaults = r#"{"ListenAddr":"0.0.0.0:2377","AdvertiseAddr":"127.0.0.1","DataPathAddr":"","DataPathPort":0,"DefaultAddrPool":[],"SubnetSize":24,"Availability":"active","ForceNewCluster":false,"Spec":{"EncryptionConfig":{"AutoLockManagers":false},"CAConfig":{}}}"#;
    let (status, answer) = call(&server, "POST", "/swarm/init", cli_defaults);
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = call(&server, "POST", "/swarm/leave?force=1", "");
    assert_eq!(status, 200, "{answer}");

    let (status, node_id) = call(&server, "POST", "/swarm/init", INIT);
    assert_eq!(status, 200, "{node_id}");
    let node_id = node_id.as_str().unwrap().to_owned();
    assert_eq!(node_id.len(), 25);
    assert!(server.berth.root().join("swarm.json").exists());

    let (status, body) = call(&server, "POST", "/swarm/init", INIT);
    assert_eq!(status, 503);
    assert_eq!(
        message(&body),
        "This node is already part of a swarm. Use \"docker swarm leave\" to leave this swarm and join another one."
    );
    let (status, swarm) = call(&server, "GET", "/swarm", "");
    assert_eq!(status, 200);
    assert!(swarm["JoinTokens"]["Worker"]
        .as_str()
        .unwrap()
        .starts_with("SWMTKN-1-"));
    assert!(swarm["CreatedAt"].is_string() && swarm["UpdatedAt"].is_string());
    let (_, info) = call(&server, "GET", "/info", "");
    let block = &info["Swarm"];
    assert_eq!(
        (
            &block["LocalNodeState"],
            &block["NodeID"],
            &block["ControlAvailable"],
            &block["Nodes"],
            &block["Managers"]
        ),
        (
            &Value::from("active"),
            &Value::from(node_id.as_str()),
            &Value::from(true),
            &Value::from(1),
            &Value::from(1)
        )
    );
    // Join stays refused; services and friends are refused by name.
    let (status, body) = call(&server, "POST", "/swarm/join", "{}");
    assert_eq!(status, 503, "{body}");
    for path in ["/services", "/nodes", "/tasks", "/secrets", "/configs"] {
        let (status, body) = call(&server, "GET", path, "");
        assert_eq!(status, 501, "{path}");
        assert!(
            message(&body).contains("runs no services"),
            "{path}: {body}"
        );
    }

    let (status, ingress) = call(&server, "GET", "/networks/ingress", "");
    assert_eq!(status, 200);
    assert_eq!(
        (&ingress["Driver"], &ingress["Scope"], &ingress["Ingress"]),
        (
            &Value::from("overlay"),
            &Value::from("swarm"),
            &Value::from(true)
        )
    );
    let ingress_id = ingress["Id"].as_str().unwrap().to_owned();
    assert!(support::link_exists(&device(&ingress_id)));

    // A manager does not leave without force (moby's words).
    let (status, body) = call(&server, "POST", "/swarm/leave", "");
    assert_eq!(status, 503);
    assert!(
        message(&body).starts_with(
            "You are attempting to leave the swarm on a node that is participating as a manager."
        ),
        "{body}"
    );
    let (status, body) = call(&server, "POST", "/swarm/leave?force=1", "");
    assert_eq!(status, 200, "{body}");
    assert!(!server.berth.root().join("swarm.json").exists());
    assert!(
        !support::link_exists(&device(&ingress_id)),
        "leave left the ingress bridge"
    );
    let (status, _) = call(&server, "GET", "/networks/ingress", "");
    assert_eq!(status, 404);
    let (_, info) = call(&server, "GET", "/info", "");
    assert_eq!(info["Swarm"]["LocalNodeState"], "inactive");
    let (status, body) = call(&server, "POST", "/swarm/leave?force=1", "");
    assert_eq!(
        (status, message(&body)),
        (503, "This node is not part of a swarm")
    );
    // And a second swarm can be made.
    let (status, _) = call(&server, "POST", "/swarm/init", INIT);
    assert_eq!(status, 200);
    let (status, _) = call(&server, "POST", "/swarm/leave?force=true", "");
    assert_eq!(status, 200);
}

fn create(server: &Server, body: &str) -> (u16, Value) {
    call(server, "POST", "/networks/create", body)
}

#[test]
fn overlay_networks_keep_scope_attachable_and_ingress_and_run_containers_when_attachable() {
    let Some(server) = Server::start() else {
        return;
    };
    let (status, _) = call(&server, "POST", "/swarm/init", INIT);
    assert_eq!(status, 200);

    // docker-py's bodies: nulls for what is not given.
    let (status, body) = create(
        &server,
        r#"{"Name":"att","Driver":"overlay","Attachable":true,"Ingress":false,"Scope":null,"Options":null,"IPAM":null,"CheckDuplicate":true}"#,
    );
    assert_eq!(status, 201, "{body}");
    let attachable_id = body["Id"].as_str().unwrap().to_owned();
    let (_, att) = call(&server, "GET", "/networks/att", "");
    assert_eq!(
        (&att["Attachable"], &att["Scope"]),
        (&Value::from(true), &Value::from("swarm"))
    );
    let (status, body) = create(
        &server,
        r#"{"Name":"plain","Driver":"overlay","Scope":"swarm"}"#,
    );
    assert_eq!(status, 201, "{body}");
    let (status, body) = create(&server, r#"{"Name":"loc","Scope":"local"}"#);
    assert_eq!(status, 201, "{body}");

    // Scope: inspect with a scope that differs is not found.
    for (name, scope, found) in [
        ("loc", "local", 200),
        ("loc", "global", 404),
        ("loc", "swarm", 404),
        ("plain", "swarm", 200),
        ("plain", "local", 404),
    ] {
        let (status, body) = call(
            &server,
            "GET",
            &format!("/networks/{name}?scope={scope}"),
            "",
        );
        assert_eq!(status, found, "{name} {scope}");
        if found == 404 {
            assert_eq!(message(&body), format!("network {name} not found"));
        }
    }
    let (_, listed) = call(
        &server,
        "GET",
        "/networks?filters=%7B%22scope%22%3A%5B%22swarm%22%5D%7D",
        "",
    );
    let mut names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["Name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["att", "ingress", "plain"]);

    // Bad inputs, in Docker's words.
    for (body, status, words) in [
        (
            r#"{"Name":"x","Driver":"overlay","Scope":"local"}"#,
            400,
            "cannot downgrade network scope for overlay networks",
        ),
        (
            r#"{"Name":"x","Scope":"swarm"}"#,
            501,
            "berth creates bridge networks with local scope only; got scope \"swarm\"",
        ),
        (
            r#"{"Name":"x","Scope":"elsewhere"}"#,
            400,
            "invalid network scope \"elsewhere\": local, swarm or global",
        ),
        (
            r#"{"Name":"x","Ingress":true}"#,
            400,
            "the ingress network must use the overlay driver",
        ),
    ] {
        let (got, answer) = create(&server, body);
        assert_eq!((got, message(&answer)), (status, words), "{body}");
    }
    let (status, body) = create(
        &server,
        r#"{"Name":"ingress2","Driver":"overlay","Ingress":true}"#,
    );
    assert_eq!(status, 409);
    assert!(message(&body).contains("is already present"), "{body}");
    // The ingress network can be removed and made again (docker-py's test).
    let (status, _) = call(&server, "DELETE", "/networks/ingress", "");
    assert_eq!(status, 204);
    let (status, body) = create(
        &server,
        r#"{"Name":"ingress2","Driver":"overlay","Ingress":true}"#,
    );
    assert_eq!(status, 201, "{body}");
    let (_, ingress) = call(&server, "GET", "/networks/ingress2", "");
    assert_eq!(ingress["Ingress"], true);

    // Containers: only on an attachable overlay network.
    for network in ["plain", "ingress2"] {
        let body = format!(
            r#"{{"Image":"busybox","Cmd":["true"],"HostConfig":{{"NetworkMode":"{network}"}}}}"#
        );
        let (status, answer) = call(&server, "POST", "/containers/create", &body);
        assert_eq!(status, 403, "{network}: {answer}");
        assert_eq!(
            message(&answer),
            format!("Could not attach to network {network}: rpc error: code = PermissionDenied desc = network {network} not manually attachable")
        );
    }
    let address = server
        .docker(&[
            "run",
            "--rm",
            "--network",
            "att",
            "busybox",
            "ip",
            "-4",
            "-o",
            "addr",
            "show",
            "eth0",
        ])
        .ok();
    let subnet = att["IPAM"]["Config"][0]["Subnet"].as_str().unwrap();
    let prefix = subnet.rsplitn(2, '.').last().unwrap();
    assert!(
        address.contains(&format!("inet {prefix}.")),
        "{address} not in {subnet}"
    );

    let (status, body) = call(&server, "POST", "/swarm/leave?force=1", "");
    assert_eq!(status, 200, "{body}");
    assert!(
        !support::link_exists(&device(&attachable_id)),
        "leave left an overlay bridge"
    );
    let (_, listed) = call(&server, "GET", "/networks", "");
    let mut names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["Name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["bridge", "host", "loc", "none"]);
    let (status, _) = call(&server, "DELETE", "/networks/loc", "");
    assert_eq!(status, 204);
}
