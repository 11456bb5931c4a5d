//! `berth network create|ls|inspect|rm|prune|connect|disconnect`: Docker's
//! columns, words and exit codes, on real bridges.
//!
//! Bridges are host-wide, so every network a test gives a subnet gets one
//! of its own under 10.213.0.0/16 (no two tests share one; nothing else on
//! the machine uses that range), and `Networks` removes every network of
//! the test's root when the test ends, failed or not. No test sends
//! traffic anywhere.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::ops::Deref;

use std::process::{Command, Output};

use serde_json::Value;
use support::{docker_host, Berth};

/// A root with busybox:latest, whose networks (and, first, the containers
/// on them) are removed on drop, before the harness's own cleanup.
struct Networks {
    berth: Berth,
}

impl Networks {
    fn new() -> Self {
        let berth = Berth::new();
        berth.load("busybox-docker.tar");
        Self { berth }
    }

    /// `network create ARGS`, returning the full id.
    #[track_caller]
    fn create(&self, args: &[&str]) -> String {
        let mut full = vec!["network", "create"];
        full.extend_from_slice(args);
        let id = self.run(&full).ok().trim().to_owned();
        assert_eq!(id.len(), 64, "network create prints the full id: {id:?}");
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()), "{id}");
        id
    }

    /// `network inspect NAME` as JSON (the one object).
    #[track_caller]
    fn inspect(&self, name: &str) -> Value {
        let text = self.run(&["network", "inspect", name]).ok();
        let mut all: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(all.as_array().map(Vec::len), Some(1), "{text}");
        all[0].take()
    }

    /// `network ls --format {{.Name}} ARGS`, in the order printed.
    #[track_caller]
    fn names(&self, args: &[&str]) -> Vec<String> {
        let mut full = vec!["network", "ls", "--format", "{{.Name}}"];
        full.extend_from_slice(args);
        self.run(&full).ok().lines().map(str::to_owned).collect()
    }

    /// The IPv4 addresses (`a.b.c.d/len`) on `device` inside `container`.
    #[track_caller]
    fn addresses(&self, container: &str, device: &str) -> Vec<String> {
        let run = self.run(&["exec", container, "ip", "-4", "-o", "addr", "show"]);
        run.ok()
            .lines()
            .filter(|line| line.split_whitespace().nth(1) == Some(device))
            .filter_map(|line| {
                let mut words = line.split_whitespace();
                words.find(|word| *word == "inet")?;
                words.next().map(str::to_owned)
            })
            .collect()
    }
}

impl Deref for Networks {
    type Target = Berth;
    fn deref(&self) -> &Berth {
        &self.berth
    }
}

impl Drop for Networks {
    /// Containers first (a network with a running container cannot go),
    /// then every user-defined network. Never panics.
    fn drop(&mut self) {
        let ids = self.berth.run(&["ps", "-aq", "--no-trunc"]).stdout();
        let ids: Vec<&str> = ids.split_whitespace().collect();
        if !ids.is_empty() {
            let mut args = vec!["rm", "-f"];
            args.extend(ids);
            let _ = self.berth.run(&args);
        }
        let networks = self
            .berth
            .run(&["network", "ls", "-q", "--no-trunc", "-f", "type=custom"])
            .stdout();
        for id in networks.split_whitespace() {
            let _ = self.berth.run(&["network", "rm", id]);
        }
    }
}

/// Whether any host interface holds `address` (`a.b.c.d/len`): a bridge's
/// gateway address shows whether the bridge is there.
fn host_has_address(address: &str) -> bool {
    device_with_address(address).is_some()
}

/// The host device that holds `address` (`ip -o addr` lines are
/// "N: DEVICE inet ADDRESS …").
fn device_with_address(address: &str) -> Option<String> {
    let output = Command::new("ip")
        .args(["-4", "-o", "addr", "show"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find(|line| line.split_whitespace().any(|word| word == address))
        .and_then(|line| line.split_whitespace().nth(1).map(str::to_owned))
}

// ------------------------------------------------------- create/ls/inspect/rm

#[test]
fn create_ls_inspect_rm_round_trip() {
    let berth = Networks::new();
    // berth chooses the subnet.
    let id = berth.create(&["web"]);

    let (header, rows) = support::table(&berth.run(&["network", "ls"]).ok());
    assert_eq!(header, ["NETWORK ID", "NAME", "DRIVER", "SCOPE"]);
    let rows: Vec<Vec<&str>> = rows
        .iter()
        .map(|row| row.iter().map(String::as_str).collect())
        .collect();
    assert_eq!(rows.len(), 4, "{rows:?}");
    let expected = [
        ("bridge", "bridge"),
        ("host", "host"),
        ("none", "null"),
        ("web", "bridge"),
    ];
    for (row, (name, driver)) in rows.iter().zip(expected) {
        assert_eq!(row[0].len(), 12, "{row:?}");
        assert_eq!(&row[1..], [name, driver, "local"], "{rows:?}");
    }
    assert_eq!(rows[3][0], &id[..12]);
    // `list` is `ls`; -q prints short ids, --no-trunc full ones.
    let quiet = berth.run(&["network", "list", "-q"]).ok();
    assert_eq!(quiet.lines().count(), 4, "{quiet}");
    assert!(quiet.lines().any(|line| line == &id[..12]), "{quiet}");
    let full = berth.run(&["network", "ls", "-q", "--no-trunc"]).ok();
    assert!(full.lines().any(|line| line == id), "{full}");

    let json = berth.inspect("web");
    assert_eq!(json["Name"], "web");
    assert_eq!(json["Id"], id.as_str());
    assert_eq!(json["Driver"], "bridge");
    assert_eq!(json["Scope"], "local");
    assert_eq!(json["EnableIPv6"], false);
    assert_eq!(json["Internal"], false);
    assert_eq!(json["Attachable"], false);
    assert_eq!(json["IPAM"]["Driver"], "default");
    assert_eq!(json["Containers"], serde_json::json!({}));
    assert_eq!(json["Labels"], serde_json::json!({}));
    let subnet = json["IPAM"]["Config"][0]["Subnet"].as_str().unwrap();
    let gateway = json["IPAM"]["Config"][0]["Gateway"].as_str().unwrap();
    let prefix = subnet.split_once('/').unwrap().1;
    let gateway_address = format!("{gateway}/{prefix}");
    assert!(
        host_has_address(&gateway_address),
        "no bridge with {gateway_address} on the host"
    );
    // Docker's own 4-space indent, and the same object by id or id prefix.
    let text = berth.run(&["network", "inspect", "web"]).ok();
    assert!(
        text.starts_with("[\n    {\n        \"Name\": \"web\",\n"),
        "{text}"
    );
    assert_eq!(berth.inspect(&id)["Name"], "web");
    assert_eq!(berth.inspect(&id[..12])["Name"], "web");
    assert_eq!(
        berth
            .run(&[
                "network",
                "inspect",
                "-f",
                "{{.Name}} {{.Driver}}",
                "web",
                "host"
            ])
            .ok(),
        "web bridge\nhost host\n"
    );

    // `remove` is `rm`; the name is printed as given, the bridge goes.
    // (Its device, not its address: another test's network may take the
    // freed subnet at once.)
    let device = device_with_address(&gateway_address).unwrap();
    assert_eq!(berth.run(&["network", "remove", "web"]).ok(), "web\n");
    assert!(
        !support::link_exists(&device),
        "the bridge {device} is left"
    );
    assert_eq!(berth.names(&[]), ["bridge", "host", "none"]);
    let stderr = berth.run(&["network", "inspect", "web"]).fails(1);
    assert_eq!(stderr, "Error: No such network: web\n");
    let stderr = berth.run(&["network", "rm", "web"]).fails(1);
    assert_eq!(stderr, "Error: No such network: web\n");
}

#[test]
fn create_takes_docker_options_and_refuses_clashes() {
    let berth = Networks::new();
    let id = berth.create(&[
        "--subnet",
        "10.213.101.0/24",
        "--gateway",
        "10.213.101.254",
        "--label",
        "com.example.team=blue",
        "--label",
        "bare",
        "-o",
        "com.example.opt=1",
        "--internal",
        "--attachable",
        "-d",
        "bridge",
        "backend",
    ]);
    let json = berth.inspect("backend");
    assert_eq!(json["Id"], id.as_str());
    assert_eq!(json["IPAM"]["Config"][0]["Subnet"], "10.213.101.0/24");
    assert_eq!(json["IPAM"]["Config"][0]["Gateway"], "10.213.101.254");
    assert_eq!(json["Internal"], true);
    assert_eq!(json["Attachable"], true);
    assert_eq!(
        json["Labels"],
        serde_json::json!({"com.example.team": "blue", "bare": ""})
    );
    assert_eq!(json["Options"]["com.example.opt"], "1");
    assert!(host_has_address("10.213.101.254/24"));

    let stderr = berth.run(&["network", "create", "backend"]).fails(1);
    assert_eq!(stderr, "Error: network with name backend already exists\n");
    let stderr = berth
        .run(&[
            "network",
            "create",
            "--subnet",
            "10.213.101.128/25",
            "other",
        ])
        .fails(1);
    assert_eq!(
        stderr,
        "Error: Pool overlaps with other one on this address space\n"
    );
    let stderr = berth
        .run(&["network", "create", "--gateway", "10.213.102.1", "other"])
        .fails(1);
    assert_eq!(
        stderr,
        "Error: every ip-range or gateway must have a corresponding subnet\n"
    );
    let stderr = berth
        .run(&[
            "network",
            "create",
            "--subnet",
            "10.213.102.0/24",
            "--gateway",
            "10.213.103.1",
            "other",
        ])
        .fails(1);
    assert_eq!(
        stderr,
        "Error: no matching subnet for gateway 10.213.103.1\n"
    );
    let stderr = berth
        .run(&["network", "create", "-d", "macvlan", "other"])
        .fails(1);
    assert!(
        stderr.starts_with("Error: plugin \"macvlan\" not found"),
        "{stderr}"
    );
    // Overlay needs the single-node swarm (`berth swarm init`).
    let stderr = berth
        .run(&["network", "create", "-d", "overlay", "other"])
        .fails(1);
    assert!(
        stderr.starts_with("Error: This node is not a swarm manager."),
        "{stderr}"
    );
    for predefined in ["bridge", "host", "none"] {
        let stderr = berth.run(&["network", "create", predefined]).fails(1);
        assert!(
            stderr.contains(&format!(
                "operation is not permitted on predefined {predefined} network"
            )),
            "{stderr}"
        );
    }
    // A missing argument: exit 1, as the docker CLI's "requires exactly 1 argument".
    berth.run(&["network", "create"]).fails(1);
    // Nothing of the refused ones was made.
    assert_eq!(berth.names(&["-f", "type=custom"]), ["backend"]);
    assert!(!host_has_address("10.213.102.1/24"));
}

/// `--ip-range`, `--aux-address` and `--ipam-opt` as Docker 20.10 has them
/// (seen on its engine here): containers get dynamic addresses from the
/// range alone, the bridge its first address, a fixed `--ip` may be
/// anywhere in the subnet, an auxiliary address goes to no one; inspect
/// shows all three.
#[test]
fn ip_ranges_aux_addresses_and_ipam_options() {
    let berth = Networks::new();
    berth.create(&[
        "--subnet",
        "10.213.121.0/24",
        "--ip-range",
        "10.213.121.64/26",
        "--aux-address",
        "router=10.213.121.65",
        "--aux-address",
        "printer=10.213.121.10",
        "--ipam-opt",
        "foo=bar",
        "--ipam-driver",
        "default",
        "ranged",
    ]);
    let json = berth.inspect("ranged");
    assert_eq!(
        json["IPAM"],
        serde_json::json!({
            "Driver": "default",
            "Options": { "foo": "bar" },
            "Config": [{
                "Subnet": "10.213.121.0/24",
                "IPRange": "10.213.121.64/26",
                // The gateway the allocator chose (the range's first
                // address) is not shown, as dockerd's.
                "AuxiliaryAddresses": { "printer": "10.213.121.10", "router": "10.213.121.65" },
            }],
        })
    );
    assert!(host_has_address("10.213.121.64/24"));
    let run = |name: &str, ip: Option<&str>| {
        let mut args = vec!["--name", name, "--network", "ranged"];
        if let Some(ip) = ip {
            args.extend_from_slice(&["--ip", ip]);
        }
        args.extend_from_slice(&["busybox", "sleep", "100"]);
        berth.run_detached(&args);
        berth.addresses(name, "eth0")
    };
    // The range's next free address after the bridge's and the reserved .65.
    assert_eq!(run("dynamic", None), ["10.213.121.66/24"]);
    let route = berth.run(&["exec", "dynamic", "ip", "route"]).ok();
    assert!(route.contains("default via 10.213.121.64 "), "{route}");
    // Outside the range, inside the subnet.
    assert_eq!(run("fixed", Some("10.213.121.200")), ["10.213.121.200/24"]);
    for reserved in ["10.213.121.65", "10.213.121.10", "10.213.121.64"] {
        let stderr = berth
            .run(&[
                "run",
                "--rm",
                "--network",
                "ranged",
                "--ip",
                reserved,
                "busybox",
                "true",
            ])
            .fails(125);
        assert!(stderr.contains("Address already in use"), "{stderr}");
    }
    berth.run(&["rm", "-f", "dynamic", "fixed"]).ok();

    // Without --ipam-opt the CLI sends an empty map, shown as such.
    berth.create(&["--subnet", "10.213.122.0/24", "plain"]);
    assert_eq!(
        berth.inspect("plain")["IPAM"]["Options"],
        serde_json::json!({})
    );

    // The CLI's checks, in the docker CLI's words; then the engine's.
    for (args, words) in [
        (
            vec![
                "--subnet",
                "10.213.123.0/24",
                "--ip-range",
                "10.213.124.0/25",
            ],
            "no matching subnet for range 10.213.124.0/25",
        ),
        (
            vec!["--ip-range", "10.213.123.0/25"],
            "every ip-range or gateway must have a corresponding subnet",
        ),
        (
            vec!["--subnet", "10.213.123.0/24", "--ip-range", "bogus"],
            "no matching subnet for range bogus",
        ),
        (
            vec![
                "--subnet",
                "10.213.123.0/24",
                "--aux-address",
                "a=10.213.124.1",
            ],
            "no matching subnet for aux-address 10.213.124.1",
        ),
        (
            vec![
                "--subnet",
                "10.213.123.0/24",
                "--ip-range",
                "10.213.123.0/23",
            ],
            "no matching subnet for range 10.213.123.0/23",
        ),
        (
            vec![
                "--subnet",
                "10.213.123.0/24",
                "--aux-address",
                "a=10.213.123.1",
            ],
            "failed to allocate secondary ip address (a:10.213.123.1): Address already in use",
        ),
        (
            vec!["--ipam-driver", "dhcp"],
            "berth supports the default IPAM driver only; got \"dhcp\"",
        ),
    ] {
        let mut full = vec!["network", "create"];
        full.extend_from_slice(&args);
        full.push("refused");
        let stderr = berth.run(&full).fails(1);
        assert_eq!(stderr, format!("Error: {words}\n"), "{args:?}");
    }
    assert_eq!(berth.names(&["-f", "type=custom"]), ["plain", "ranged"]);
    assert!(!host_has_address("10.213.123.1/24"));
    assert_eq!(
        berth.run(&["network", "rm", "ranged", "plain"]).ok(),
        "ranged\nplain\n"
    );
    assert!(!host_has_address("10.213.121.64/24"));
}

#[test]
fn predefined_networks_cannot_be_removed() {
    let berth = Networks::new();
    berth.create(&["--subnet", "10.213.104.0/24", "mine"]);
    let run = berth.run(&["network", "rm", "bridge", "mine", "host", "nosuch", "none"]);
    // Every name is tried; the removed one is printed, each failure told.
    assert_eq!(run.stdout(), "mine\n");
    assert_eq!(
        run.fails(1),
        "Error: bridge is a pre-defined network and cannot be removed\n\
         Error: host is a pre-defined network and cannot be removed\n\
         Error: No such network: nosuch\n\
         Error: none is a pre-defined network and cannot be removed\n"
    );
    assert_eq!(berth.names(&[]), ["bridge", "host", "none"]);
    assert!(!host_has_address("10.213.104.1/24"));
}

#[test]
fn rm_is_refused_while_a_running_container_is_on_the_network() {
    let berth = Networks::new();
    let network = berth.create(&["--subnet", "10.213.105.0/24", "busy"]);
    let container = berth.run_detached(&[
        "--name",
        "user",
        "--network",
        "busy",
        "busybox",
        "sleep",
        "100",
    ]);

    let json = berth.inspect("busy");
    let endpoint = &json["Containers"][container.as_str()];
    assert_eq!(endpoint["Name"], "user", "{json}");
    let address = endpoint["IPv4Address"].as_str().unwrap();
    assert!(
        address.starts_with("10.213.105.") && address.ends_with("/24"),
        "{address}"
    );
    assert_eq!(berth.addresses("user", "eth0"), [address]);

    let stderr = berth.run(&["network", "rm", "busy"]).fails(1);
    assert_eq!(
        stderr,
        format!(
            "Error: error while removing network: network busy id {network} has active endpoints\n"
        )
    );
    assert_eq!(berth.names(&["-f", "type=custom"]), ["busy"]);
    assert!(host_has_address("10.213.105.1/24"));

    berth.run(&["rm", "-f", "user"]).ok();
    assert_eq!(berth.run(&["network", "rm", "busy"]).ok(), "busy\n");
    assert!(!host_has_address("10.213.105.1/24"));
}

#[test]
fn prune_removes_only_unused_custom_networks() {
    let berth = Networks::new();
    berth.create(&["--subnet", "10.213.106.0/24", "unused"]);
    berth.create(&[
        "--subnet",
        "10.213.107.0/24",
        "--label",
        "tier=cache",
        "labelled",
    ]);
    berth.create(&["--subnet", "10.213.108.0/24", "running"]);
    berth.create(&["--subnet", "10.213.109.0/24", "created"]);
    berth.run_detached(&["--network", "running", "busybox", "sleep", "100"]);
    // A container that never ran keeps its network for its first start.
    berth
        .run(&["create", "--network", "created", "busybox", "true"])
        .ok();

    // Without -f docker asks; anything but yes keeps everything.
    let run = berth.run_with_stdin(&["network", "prune"], Some(b"n\n"));
    assert_eq!(
        run.ok(),
        "WARNING! This will remove all custom networks not used by at least one container.\n\
         Are you sure you want to continue? [y/N] "
    );
    assert_eq!(berth.names(&["-f", "type=custom"]).len(), 4);

    // --filter label=… takes only the matching unused ones.
    let output = berth
        .run(&["network", "prune", "-f", "--filter", "label=tier=cache"])
        .ok();
    assert_eq!(output, "Deleted Networks:\nlabelled\n\n");
    assert!(!host_has_address("10.213.107.1/24"));

    let run = berth.run_with_stdin(&["network", "prune"], Some(b"y\n"));
    assert_eq!(
        run.ok(),
        "WARNING! This will remove all custom networks not used by at least one container.\n\
         Are you sure you want to continue? [y/N] Deleted Networks:\nunused\n\n"
    );
    assert!(!host_has_address("10.213.106.1/24"));
    assert_eq!(
        berth.names(&[]),
        ["bridge", "created", "host", "none", "running"]
    );
    // Nothing left to prune: nothing printed.
    assert_eq!(berth.run(&["network", "prune", "-f"]).ok(), "");

    let stderr = berth
        .run(&["network", "prune", "-f", "--filter", "driver=bridge"])
        .fails(1);
    assert_eq!(stderr, "Error: Invalid filter 'driver'\n");
}

#[test]
fn ls_filters_and_format() {
    let berth = Networks::new();
    let net9 = berth.create(&["--subnet", "10.213.110.0/24", "net9"]);
    berth.create(&[
        "--subnet",
        "10.213.111.0/24",
        "--label",
        "a=1",
        "--label",
        "b",
        "net10",
    ]);
    berth.create(&["--subnet", "10.213.112.0/24", "--internal", "Net-x"]);
    berth.run_detached(&["--network", "net10", "busybox", "sleep", "100"]);

    // Docker's CLI order: natural, byte-wise (upper case first).
    assert_eq!(
        berth.names(&[]),
        ["Net-x", "bridge", "host", "net9", "net10", "none"]
    );
    assert_eq!(berth.names(&["-f", "name=net"]), ["net9", "net10"]);
    assert_eq!(
        berth.names(&["-f", "name=net9", "-f", "name=Net"]),
        ["Net-x", "net9"]
    );
    assert_eq!(
        berth.names(&["-f", &format!("id={}", &net9[..6])]),
        ["net9"]
    );
    assert_eq!(berth.names(&["-f", "driver=null"]), ["none"]);
    assert_eq!(
        berth.names(&["-f", "driver=host", "-f", "driver=null"]),
        ["host", "none"]
    );
    assert_eq!(berth.names(&["-f", "label=a"]), ["net10"]);
    assert_eq!(
        berth.names(&["-f", "label=a=1", "-f", "label=b="]),
        ["net10"]
    );
    assert!(berth.names(&["-f", "label=a=2"]).is_empty());
    assert_eq!(
        berth.names(&["-f", "type=builtin"]),
        ["bridge", "host", "none"]
    );
    assert_eq!(
        berth.names(&["-f", "type=custom"]),
        ["Net-x", "net9", "net10"]
    );
    assert_eq!(
        berth.names(&["-f", "type=custom", "-f", "name=9"]),
        ["net9"]
    );
    assert_eq!(berth.names(&["-f", "dangling=true"]), ["Net-x", "net9"]);
    assert_eq!(
        berth.names(&["-f", "dangling=false"]),
        ["bridge", "host", "net10", "none"]
    );
    assert_eq!(berth.names(&["-f", "scope=local"]).len(), 6);
    assert!(berth.names(&["-f", "scope=swarm"]).is_empty());

    let stderr = berth.run(&["network", "ls", "-f", "foo=bar"]).fails(1);
    assert_eq!(stderr, "Error: Invalid filter 'foo'\n");
    let stderr = berth.run(&["network", "ls", "-f", "type=foo"]).fails(1);
    assert_eq!(stderr, "Error: invalid filter: 'type'='foo'\n");
    let stderr = berth.run(&["network", "ls", "-f", "foo"]).fails(125);
    assert!(
        stderr.contains("bad format of filter (expected name=value)"),
        "{stderr}"
    );

    // Templates: a table with Docker's headers, plain lines, JSON rows.
    let text = berth
        .run(&[
            "network",
            "ls",
            "-f",
            "type=custom",
            "--format",
            "table {{.Name}}\t{{.Internal}}\t{{.IPv6}}\t{{.Labels}}\t{{.Label \"a\"}}",
        ])
        .ok();
    let (header, rows) = support::table(&text);
    // Docker titles a `.Label` column with the key's last dotted part, as is.
    assert_eq!(header, ["NAME", "INTERNAL", "IPV6", "LABELS", "a"]);
    assert_eq!(
        rows,
        [
            ["Net-x", "true", "false", "", ""],
            ["net9", "false", "false", "", ""],
            ["net10", "false", "false", "a=1,b=", "1"],
        ]
    );
    let text = berth
        .run(&["network", "ls", "-f", "name=net9", "--format", "{{json .}}"])
        .ok();
    let row: Value = serde_json::from_str(text.trim()).unwrap();
    let keys: Vec<&str> = row
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "CreatedAt",
            "Driver",
            "ID",
            "IPv6",
            "Internal",
            "Labels",
            "Name",
            "Scope"
        ]
    );
    assert_eq!(row["ID"], &net9[..12]);
    let created = row["CreatedAt"].as_str().unwrap();
    assert!(created.ends_with(" +0000 UTC"), "{created}");
    // -q with a template of one's own prints the template.
    assert_eq!(
        berth
            .run(&[
                "network",
                "ls",
                "-q",
                "-f",
                "name=net9",
                "--format",
                "{{.Driver}}"
            ])
            .ok(),
        "bridge\n"
    );
}

// ------------------------------------------------------- connect / disconnect

#[test]
fn connect_and_disconnect_a_running_container() {
    let berth = Networks::new();
    berth.create(&["--subnet", "10.213.113.0/24", "front"]);
    let back = berth.create(&["--subnet", "10.213.114.0/24", "back"]);
    let container = berth.run_detached(&[
        "--name",
        "app",
        "--network",
        "front",
        "busybox",
        "sleep",
        "100",
    ]);
    let eth0 = berth.addresses("app", "eth0");
    assert_eq!(eth0.len(), 1, "{eth0:?}");
    assert!(eth0[0].starts_with("10.213.113."), "{eth0:?}");
    assert!(berth.addresses("app", "eth1").is_empty());

    assert_eq!(berth.run(&["network", "connect", "back", "app"]).ok(), "");
    let eth1 = berth.addresses("app", "eth1");
    assert_eq!(eth1.len(), 1, "{eth1:?}");
    assert!(
        eth1[0].starts_with("10.213.114.") && eth1[0].ends_with("/24"),
        "{eth1:?}"
    );
    let json = berth.inspect("back");
    assert_eq!(
        json["Containers"][container.as_str()]["IPv4Address"],
        eth1[0].as_str()
    );
    assert_eq!(
        berth.inspect_json("app")["NetworkSettings"]["Networks"]["back"]["NetworkID"],
        back.as_str()
    );
    let stderr = berth.run(&["network", "connect", "back", "app"]).fails(1);
    assert_eq!(
        stderr,
        "Error: endpoint with name app already exists in network back\n"
    );

    assert_eq!(
        berth.run(&["network", "disconnect", "back", "app"]).ok(),
        ""
    );
    assert!(berth.addresses("app", "eth1").is_empty());
    assert_eq!(berth.addresses("app", "eth0"), eth0);
    assert_eq!(berth.inspect("back")["Containers"], serde_json::json!({}));
    let stderr = berth
        .run(&["network", "disconnect", "back", "app"])
        .fails(1);
    assert_eq!(
        stderr,
        format!("Error: container {container} is not connected to network back\n")
    );

    // --ip and --alias on a user-defined network; -f is accepted.
    berth
        .run(&[
            "network",
            "connect",
            "--ip",
            "10.213.114.50",
            "--alias",
            "api",
            "back",
            "app",
        ])
        .ok();
    assert_eq!(berth.addresses("app", "eth1"), ["10.213.114.50/24"]);
    let aliases = &berth.inspect_json("app")["NetworkSettings"]["Networks"]["back"]["Aliases"];
    assert!(
        aliases
            .as_array()
            .unwrap()
            .iter()
            .any(|alias| alias == "api"),
        "{aliases}"
    );
    berth
        .run(&["network", "disconnect", "-f", "back", "app"])
        .ok();
    assert!(berth.addresses("app", "eth1").is_empty());
    // Not on the default bridge.
    let stderr = berth
        .run(&[
            "network",
            "connect",
            "--ip",
            "10.213.114.51",
            "bridge",
            "app",
        ])
        .fails(1);
    assert!(stderr.contains("user defined networks only"), "{stderr}");
    let stderr = berth.run(&["network", "connect", "host", "app"]).fails(1);
    assert!(stderr.contains("host network"), "{stderr}");

    // The network stays in use while the container is on it.
    berth.run(&["network", "connect", "back", "app"]).ok();
    berth.run(&["network", "rm", "back"]).fails(1);
    berth.run(&["rm", "-f", "app"]).ok();
    assert_eq!(
        berth.run(&["network", "rm", "back", "front"]).ok(),
        "back\nfront\n"
    );
    assert!(!host_has_address("10.213.114.1/24"));
    assert!(!host_has_address("10.213.113.1/24"));
}

#[test]
fn connecting_a_stopped_container_takes_effect_at_start() {
    let berth = Networks::new();
    berth.create(&["--subnet", "10.213.115.0/24", "first"]);
    berth.create(&["--subnet", "10.213.116.0/24", "second"]);
    berth
        .run(&[
            "create",
            "--name",
            "later",
            "--network",
            "first",
            "busybox",
            "sleep",
            "100",
        ])
        .ok();
    berth.run(&["network", "connect", "second", "later"]).ok();
    // Not running: no endpoint yet.
    assert_eq!(berth.inspect("second")["Containers"], serde_json::json!({}));
    berth.run(&["start", "later"]).ok();
    let eth0 = berth.addresses("later", "eth0");
    let eth1 = berth.addresses("later", "eth1");
    assert!(
        eth0.len() == 1 && eth0[0].starts_with("10.213.115."),
        "{eth0:?}"
    );
    assert!(
        eth1.len() == 1 && eth1[0].starts_with("10.213.116."),
        "{eth1:?}"
    );
}

/// dockerd creates a container on a network that does not exist yet and
/// looks the network up at each start (compose creates a service's
/// containers before its networks when asked to): the start fails, with
/// the error in the state, until the network is made.
#[test]
fn a_container_created_on_a_missing_network_starts_once_it_exists() {
    let berth = Networks::new();
    berth
        .run(&[
            "create",
            "--name",
            "early",
            "--network",
            "later-net",
            "busybox",
            "echo",
            "hi",
        ])
        .ok();
    let networks = &berth.inspect_json("early")["NetworkSettings"]["Networks"];
    assert_eq!(networks["later-net"]["NetworkID"], "", "{networks}");
    let stderr = berth.run(&["start", "early"]).fails(1);
    assert!(stderr.contains("network later-net not found"), "{stderr}");
    let state = &berth.inspect_json("early")["State"];
    assert_eq!(state["Status"], "created", "{state}");
    assert_eq!(state["Error"], "network later-net not found", "{state}");
    assert_eq!(state["ExitCode"], 128, "{state}");
    // `run` leaves the created container behind and exits 125, as Docker's.
    let stderr = berth
        .run(&[
            "run",
            "--name",
            "eager",
            "--network",
            "later-net",
            "busybox",
            "true",
        ])
        .fails(125);
    assert!(stderr.contains("network later-net not found"), "{stderr}");
    assert_eq!(berth.status("eager"), "created");

    let id = berth.create(&["--subnet", "10.213.118.0/24", "later-net"]);
    assert_eq!(berth.run(&["start", "-a", "early"]).ok(), "hi\n");
    let networks = &berth.inspect_json("early")["NetworkSettings"]["Networks"];
    assert_eq!(
        networks["later-net"]["NetworkID"],
        id.as_str(),
        "{networks}"
    );
}

#[test]
fn unknown_networks_and_containers_are_errors() {
    let berth = Networks::new();
    berth.create(&["--subnet", "10.213.117.0/24", "known"]);
    berth
        .run(&[
            "create",
            "--name",
            "idle",
            "--network",
            "known",
            "busybox",
            "true",
        ])
        .ok();

    let run = berth.run(&["network", "inspect", "nosuch"]);
    assert_eq!(run.stdout(), "[]\n");
    assert_eq!(run.fails(1), "Error: No such network: nosuch\n");
    // What was found is printed; the exit status tells of the rest.
    let run = berth.run(&["network", "inspect", "-f", "{{.Name}}", "known", "nosuch"]);
    assert_eq!(run.stdout(), "known\n");
    assert_eq!(run.fails(1), "Error: No such network: nosuch\n");

    let stderr = berth
        .run(&["network", "connect", "nosuch", "idle"])
        .fails(1);
    assert_eq!(stderr, "Error: network nosuch not found\n");
    let stderr = berth
        .run(&["network", "disconnect", "nosuch", "idle"])
        .fails(1);
    assert_eq!(stderr, "Error: network nosuch not found\n");
    let stderr = berth
        .run(&["network", "connect", "known", "ghost"])
        .fails(1);
    assert_eq!(stderr, "Error: No such container: ghost\n");
    let stderr = berth
        .run(&["network", "disconnect", "known", "ghost"])
        .fails(1);
    assert_eq!(stderr, "Error: No such container: ghost\n");
    berth.run(&["network", "inspect"]).fails(1);
    berth.run(&["network", "rm"]).fails(1);
}

#[test]
fn help_lists_dockers_commands() {
    let berth = Berth::new();
    let help = berth.run(&["network", "--help"]).ok();
    for line in [
        "connect     Connect a container to a network",
        "create      Create a network",
        "disconnect  Disconnect a container from a network",
        "inspect     Display detailed information on one or more networks",
        "ls          List networks",
        "prune       Remove all unused networks",
        "rm          Remove one or more networks",
    ] {
        assert!(help.contains(line), "{line:?} missing from:\n{help}");
    }
    let help = berth.run(&["network", "prune", "--help"]).ok();
    assert!(help.contains("Do not prompt for confirmation"), "{help}");
}

// ------------------------------------------------------- against Docker

/// The docker CLI whose words berth follows: `$DOCKER`, else the 20.10 CLI
/// Debian ships with the engine (/usr/bin/docker, as
/// scripts/docker-engine.sh prefers), else `docker`. (Newer CLIs word
/// some client-side errors differently.)
fn docker(host: &str, args: &[&str]) -> Output {
    let cli = std::env::var("DOCKER").ok().unwrap_or_else(|| {
        if std::path::Path::new("/usr/bin/docker").exists() {
            "/usr/bin/docker".to_owned()
        } else {
            "docker".to_owned()
        }
    });
    Command::new(cli)
        .arg("-H")
        .arg(host)
        .args(args)
        .output()
        .expect("run docker")
}

/// Docker's daemon messages carry "Error response from daemon: "; berth
/// has no daemon and prints "Error: " before every message.
fn docker_words(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim_end();
    let text = text
        .strip_prefix("Error response from daemon: ")
        .or_else(|| text.strip_prefix("Error: "))
        .unwrap_or(text);
    text.to_owned()
}

/// Removes the networks a test made on the Docker engine.
struct DockerNetworks<'a> {
    host: &'a str,
    names: Vec<String>,
}

impl Drop for DockerNetworks<'_> {
    fn drop(&mut self) {
        for name in &self.names {
            let _ = docker(self.host, &["network", "rm", name]);
        }
    }
}

#[test]
fn messages_and_shapes_match_docker() {
    let Some(host) = docker_host() else { return };
    let berth = Networks::new();
    let name = format!("berth-conformance-{}", std::process::id());
    let ranged = format!("{name}-ipam");
    let _cleanup = DockerNetworks {
        host: &host,
        names: vec![name.clone(), ranged.clone()],
    };
    let create = [
        "network",
        "create",
        "--subnet",
        "10.213.118.0/24",
        "--label",
        "k=v",
        name.as_str(),
    ];
    let made = docker(&host, &create);
    assert!(made.status.success(), "{}", docker_words(&made.stderr));
    berth.run(&create).ok();

    // The same failures, in the same words and with the same status.
    let cases: Vec<Vec<&str>> = vec![
        vec!["network", "create", name.as_str()],
        vec![
            "network",
            "create",
            "--subnet",
            "10.213.118.0/25",
            "overlapping",
        ],
        vec!["network", "create", "host"],
        vec!["network", "create", "--gateway", "10.213.119.1", "nosubnet"],
        vec![
            "network",
            "create",
            "--ip-range",
            "10.213.119.0/25",
            "nosubnet",
        ],
        vec![
            "network",
            "create",
            "--subnet",
            "10.213.119.0/24",
            "--ip-range",
            "10.213.120.0/25",
            "badrange",
        ],
        vec![
            "network",
            "create",
            "--subnet",
            "10.213.119.0/24",
            "--ip-range",
            "bogus",
            "badrange",
        ],
        vec![
            "network",
            "create",
            "--subnet",
            "10.213.119.0/24",
            "--aux-address",
            "a=10.213.120.5",
            "badaux",
        ],
        vec!["network", "inspect", "berth-conformance-nosuch"],
        vec!["network", "rm", "berth-conformance-nosuch"],
        vec!["network", "rm", "none"],
        vec!["network", "ls", "-f", "foo=bar"],
        vec!["network", "ls", "-f", "type=foo"],
        vec!["network", "prune", "-f", "--filter", "foo=bar"],
    ];
    for args in &cases {
        let theirs = docker(&host, args);
        let ours = berth.run(args);
        assert_eq!(
            (ours.code(), docker_words(&ours.output.stderr)),
            (
                theirs.status.code().unwrap_or(-1),
                docker_words(&theirs.stderr)
            ),
            "berth and docker differ on {args:?}"
        );
    }

    // The inspect object has Docker's keys, in Docker's order.
    let theirs: Value =
        serde_json::from_slice(&docker(&host, &["network", "inspect", name.as_str()]).stdout)
            .unwrap();
    let ours = berth.inspect(&name);
    let keys =
        |value: &Value| -> Vec<String> { value.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(keys(&ours), keys(&theirs[0]));
    for field in [
        "Scope",
        "Driver",
        "EnableIPv6",
        "Internal",
        "Attachable",
        "Labels",
    ] {
        assert_eq!(ours[field], theirs[0][field], "{field}");
    }
    assert_eq!(
        ours["IPAM"]["Config"][0]["Subnet"],
        theirs[0]["IPAM"]["Config"][0]["Subnet"]
    );

    // A range, auxiliary addresses and IPAM options: the same IPAM object,
    // the same first address (the range's first: the gateway is given).
    let create = [
        "network",
        "create",
        "--subnet",
        "10.213.119.0/24",
        "--ip-range",
        "10.213.119.128/25",
        "--gateway",
        "10.213.119.254",
        "--aux-address",
        "a=10.213.119.129",
        "--aux-address",
        "b=10.213.119.5",
        "--ipam-opt",
        "k=v",
        ranged.as_str(),
    ];
    let made = docker(&host, &create);
    assert!(made.status.success(), "{}", docker_words(&made.stderr));
    berth.run(&create).ok();
    let theirs: Value =
        serde_json::from_slice(&docker(&host, &["network", "inspect", ranged.as_str()]).stdout)
            .unwrap();
    assert_eq!(berth.inspect(&ranged)["IPAM"], theirs[0]["IPAM"]);
    let address = ["run", "--rm", "--network", ranged.as_str(), "busybox"];
    let address = [&address[..], &["ip", "-4", "-o", "addr", "show", "eth0"]].concat();
    let inet = |text: &str| -> Option<String> {
        let mut words = text.split_whitespace();
        words.find(|word| *word == "inet")?;
        words.next().map(str::to_owned)
    };
    let theirs = docker(&host, &address);
    assert!(theirs.status.success(), "{}", docker_words(&theirs.stderr));
    let ours = berth.run(&address).ok();
    assert_eq!(inet(&ours), inet(&String::from_utf8_lossy(&theirs.stdout)));
    assert_eq!(inet(&ours).as_deref(), Some("10.213.119.128/24"));
    // Gone from both before the name filter below, which it would match.
    berth.run(&["network", "rm", ranged.as_str()]).ok();
    let removed = docker(&host, &["network", "rm", ranged.as_str()]);
    assert!(
        removed.status.success(),
        "{}",
        docker_words(&removed.stderr)
    );

    // ls rows: the same fields.
    let format = [
        "network",
        "ls",
        "-f",
        &format!("name={name}"),
        "--format",
        "{{json .}}",
    ];
    let theirs: Value = serde_json::from_slice(&docker(&host, &format).stdout).unwrap();
    let ours: Value = serde_json::from_str(&berth.run(&format).ok()).unwrap();
    assert_eq!(keys(&ours), keys(&theirs));
    for field in ["Driver", "IPv6", "Internal", "Labels", "Name", "Scope"] {
        assert_eq!(ours[field], theirs[field], "{field}");
    }
}

/// `berth swarm init|leave` and `network create -d overlay --attachable
/// --ingress --scope`: overlay networks need the single-node swarm, and
/// leave takes them (and their bridges) with it.
#[test]
fn swarm_init_overlay_networks_and_leave() {
    let berth = Networks::new();
    let outside = berth
        .run(&["network", "create", "-d", "overlay", "over"])
        .fails(1);
    assert!(
        outside.contains("This node is not a swarm manager."),
        "{outside}"
    );
    let init = berth.run(&["swarm", "init"]).ok();
    assert!(
        init.starts_with("Swarm initialized: current node ("),
        "{init}"
    );
    let again = berth.run(&["swarm", "init"]);
    assert_ne!(again.code(), 0);
    assert!(
        again.stderr().contains("already part of a swarm"),
        "{}",
        again.stderr()
    );

    let id = berth
        .run(&[
            "network",
            "create",
            "-d",
            "overlay",
            "--attachable",
            "--scope",
            "swarm",
            "over",
        ])
        .ok();
    let shown = berth
        .run(&[
            "network",
            "inspect",
            "-f",
            "{{.Driver}} {{.Scope}} {{.Attachable}} {{.Ingress}}",
            "over",
        ])
        .ok();
    assert_eq!(shown.trim(), "overlay swarm true false");
    let downgrade = berth
        .run(&[
            "network", "create", "-d", "overlay", "--scope", "local", "x",
        ])
        .fails(1);
    assert!(
        downgrade.contains("cannot downgrade network scope for overlay networks"),
        "{downgrade}"
    );
    let second = berth
        .run(&["network", "create", "-d", "overlay", "--ingress", "x"])
        .fails(1);
    assert!(second.contains("is already present"), "{second}");
    assert!(berth
        .names(&["-f", "scope=swarm"])
        .contains(&"ingress".to_owned()));

    let unforced = berth.run(&["swarm", "leave"]);
    assert_ne!(unforced.code(), 0);
    assert!(
        unforced.stderr().contains("Use `--force`"),
        "{}",
        unforced.stderr()
    );
    berth.run(&["swarm", "leave", "--force"]).ok();
    assert!(berth.names(&["-f", "scope=swarm"]).is_empty());
    let device = format!("berth-{}", &id.trim()[..9]);
    let link = Command::new("ip")
        .args(["link", "show", "dev", &device])
        .output()
        .unwrap();
    assert!(!link.status.success(), "leave left {device}");
}
