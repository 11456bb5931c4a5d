//! A VM container on several networks (issue 16): each network the
//! container has when its VM boots is a virtio-net card of its own in the
//! guest, found by its MAC and named as a namespace container's veth
//! (`eth0`, `eth1`, …), with the container's address on that network and
//! the first network's default route; the embedded DNS answers for the
//! containers of every network. Compose's way: created on one network,
//! `network connect`ed to the others before the start; and while it runs,
//! through the spare cards every VM boots with (microvm has no hotplug).
//! Real VMs under TCG (`support::vm` finds the kernel and the cache, or
//! says why it skips).

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::process::Command;

use support::containers::{pid_alive, wait_until};
use support::vm::{links_up, vm_processes, VmBerth};

impl VmBerth {
    /// The container's address on `network`.
    fn address(&self, container: &str, network: &str) -> String {
        let address = self.inspect(
            container,
            &format!("{{{{(index .NetworkSettings.Networks \"{network}\").IPAddress}}}}"),
        );
        assert!(
            !address.is_empty(),
            "{container} has no address on {network}"
        );
        address
    }

    /// The bridge device of each of this root's networks (its own default
    /// bridge included).
    fn bridges(&self, networks: &[&str]) -> Vec<String> {
        let mut bridges: Vec<String> = networks
            .iter()
            .map(|network| {
                // A user network's bridge is `berth-` and its id's first
                // nine digits, unless the option named another.
                let format = "{{index .Options \"com.docker.network.bridge.name\"}} {{.Id}}";
                let printed = self
                    .run(&["network", "inspect", "-f", format, network])
                    .ok();
                match printed.split_whitespace().collect::<Vec<_>>()[..] {
                    [name, _] => name.to_owned(),
                    [id] => format!("berth-{}", &id[..9]),
                    _ => panic!("network inspect printed {printed:?}"),
                }
            })
            .collect();
        bridges.push(berth_net::instance::Instance::for_root(self.berth.root()).default_bridge);
        bridges
    }
}

/// The links of the shim's network namespace (`ip -o link`), one a line.
fn shim_links(berth: &VmBerth, container: &str) -> Vec<String> {
    let pid = berth.inspect(container, "{{.State.Pid}}");
    let out = Command::new("nsenter")
        .args(["-t", &pid, "-n", "ip", "-o", "link"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The shim's line for `tapN`.
fn tap_line(links: &[String], tap: &str) -> String {
    links
        .iter()
        .find(|line| line.contains(&format!(": {tap}:")))
        .unwrap_or_else(|| panic!("no {tap} in {links:?}"))
        .clone()
}

/// A spare card on the host: its tap down and a port of nothing, so what
/// the guest sends on it is dropped (`tun_get_user` refuses a down tap).
fn assert_spare(links: &[String], tap: &str) {
    let line = tap_line(links, tap);
    assert!(line.contains("state DOWN"), "{line}");
    assert!(!line.contains("master"), "{line}");
}

/// `ip addr show dev CARD` in the guest, through `exec`.
fn guest_card(berth: &VmBerth, container: &str, card: &str) -> String {
    berth
        .run(&["exec", container, "ip", "addr", "show", "dev", card])
        .ok()
}

fn nft_tables() -> String {
    String::from_utf8_lossy(
        &Command::new("nft")
            .args(["list", "tables"])
            .output()
            .unwrap()
            .stdout,
    )
    .into_owned()
}

#[test]
fn a_vm_container_joins_every_network_it_was_connected_to_before_its_start() {
    let Some(berth) = VmBerth::new() else { return };
    for network in ["net-a", "net-b", "net-c"] {
        berth.run(&["network", "create", network]).ok();
    }
    let bridges = berth.bridges(&["net-a", "net-b", "net-c"]);
    let serve = ["busybox", "httpd", "-f", "-p", "80", "-h", "/etc"];
    for (name, network) in [("on-a", "net-a"), ("on-b", "net-b")] {
        let mut args = vec!["run", "-d", "--network", network, "--name", name];
        args.extend_from_slice(&serve);
        berth.run(&args).ok();
    }
    // Compose's order: created on A, connected to B, then started.
    let mut args = vec![
        "create",
        "--isolation=vm",
        "--network",
        "net-a",
        "--name",
        "multi",
    ];
    args.extend_from_slice(&serve);
    berth.run(&args).ok();
    berth.run(&["network", "connect", "net-b", "multi"]).ok();
    berth.run(&["start", "multi"]).ok();
    let (on_a, on_b) = (
        berth.address("on-a", "net-a"),
        berth.address("on-b", "net-b"),
    );
    let (vm_a, vm_b) = (
        berth.address("multi", "net-a"),
        berth.address("multi", "net-b"),
    );

    // A card per network, named in the container's order, each with its
    // address; the default route is the first network's.
    let eth0 = guest_card(&berth, "multi", "eth0");
    let eth1 = guest_card(&berth, "multi", "eth1");
    assert!(eth0.contains(&format!("inet {vm_a}/")), "{eth0}");
    assert!(eth1.contains(&format!("inet {vm_b}/")), "{eth1}");
    let routes = berth.run(&["exec", "multi", "ip", "route"]).ok();
    let gateway_a = berth.inspect(
        "multi",
        "{{(index .NetworkSettings.Networks \"net-a\").Gateway}}",
    );
    assert!(
        routes.contains(&format!("default via {gateway_a} dev eth0")),
        "{routes}"
    );
    assert_eq!(routes.matches("default").count(), 1, "{routes}");

    // The guest reaches a namespace container on each network, by name
    // (the embedded DNS knows both networks) and by address.
    for (name, address) in [("on-a", &on_a), ("on-b", &on_b)] {
        let hostname = berth.inspect(name, "{{.Config.Hostname}}");
        for host in [name, address.as_str()] {
            let url = format!("http://{host}/hostname");
            let out = berth.run(&["exec", "multi", "wget", "-qO-", &url]).ok();
            assert_eq!(out, format!("{hostname}\n"), "{url}");
        }
    }
    // And namespace containers on B reach the VM's httpd by its name
    // through its second card.
    let vm_hostname = berth.inspect("multi", "{{.Config.Hostname}}");
    let mut answer = String::new();
    wait_until(120.0, "the VM's httpd by name from net-b", || {
        let run = berth.run(&[
            "run",
            "--rm",
            "--network",
            "net-b",
            "busybox",
            "wget",
            "-qO-",
            "http://multi/hostname",
        ]);
        answer = run.stdout();
        run.code() == 0
    });
    assert_eq!(answer, format!("{vm_hostname}\n"));

    // Connected while it runs: a spare card of its VM takes the network.
    berth.run(&["network", "connect", "net-c", "multi"]).ok();
    let vm_c = berth.address("multi", "net-c");
    let eth2 = guest_card(&berth, "multi", "eth2");
    assert!(eth2.contains(&format!("inet {vm_c}/")), "{eth2}");

    // Its next VM has a card for each of the three networks.
    berth.run(&["stop", "-t", "2", "multi"]).ok();
    berth.run(&["start", "multi"]).ok();
    for (card, network) in [("eth0", "net-a"), ("eth1", "net-b"), ("eth2", "net-c")] {
        let address = berth.address("multi", network);
        let shown = guest_card(&berth, "multi", card);
        assert!(
            shown.contains(&format!("inet {address}/")),
            "{card}: {shown}"
        );
    }
    let url = format!("http://{}/hostname", berth.address("on-a", "net-a"));
    berth.run(&["exec", "multi", "wget", "-qO-", &url]).ok();

    // Removed: nothing of it, its networks or its VM stays on the host.
    let processes = vm_processes(berth.inspect("multi", "{{.State.Pid}}").parse().unwrap());
    berth.run(&["rm", "-f", "multi", "on-a", "on-b"]).ok();
    for network in ["net-a", "net-b", "net-c"] {
        berth.run(&["network", "rm", network]).ok();
    }
    wait_until(20.0, "the VM's processes to end", || {
        processes.iter().all(|pid| !pid_alive(*pid))
    });
    for bridge in &bridges {
        assert!(!support::link_exists(bridge), "bridge {bridge} left");
    }
    let table = berth_net::instance::Instance::for_root(berth.berth.root()).table;
    let tables = nft_tables();
    assert!(!tables.contains(&format!(" {table}\n")), "{tables}");
    assert!(berth.berth.all_ids().is_empty());
}

#[test]
fn several_networks_at_create_and_the_default_bridge_beside_a_user_network() {
    let Some(berth) = VmBerth::new() else { return };
    for network in ["front", "back"] {
        berth.run(&["network", "create", network]).ok();
    }
    // `--network` twice (API 1.44's several EndpointsConfig at create).
    let out = berth
        .run(&[
            "run",
            "--rm",
            "--isolation=vm",
            "--network",
            "front",
            "--network",
            "back",
            "busybox",
            "sh",
            "-c",
            "for card in eth0 eth1; do ip -4 addr show dev $card | grep -c inet; done; \
             ip route | grep -c default",
        ])
        .ok();
    assert_eq!(out, "1\n1\n1\n");
    // On the default bridge, connected to a user-defined network before
    // its start: the embedded DNS answers (it knows `back`'s names), as
    // Docker's does for any endpoint off the default bridge; the default
    // route stays the bridge's.
    let mut args = vec!["run", "-d", "--network", "back", "--name", "peer"];
    args.extend_from_slice(&["busybox", "httpd", "-f", "-p", "80", "-h", "/etc"]);
    berth.run(&args).ok();
    let script = "grep nameserver /etc/resolv.conf; wget -qO- http://peer/hostname; \
                  ip route | grep default";
    let args = ["create", "--isolation=vm", "busybox", "sh", "-c", script];
    let id = berth.run(&args).ok().trim().to_owned();
    berth.run(&["network", "connect", "back", &id]).ok();
    let out = berth.run(&["start", "-a", &id]).ok();
    let format = "{{(index .IPAM.Config 0).Gateway}}";
    let gateway = berth
        .run(&["network", "inspect", "-f", format, "bridge"])
        .ok();
    let gateway = gateway.trim();
    let peer = berth.inspect("peer", "{{.Config.Hostname}}");
    let lines: Vec<&str> = out.lines().map(str::trim_end).collect();
    let route = format!("default via {gateway} dev eth0");
    assert_eq!(lines, ["nameserver 127.0.0.11", &peer, &route], "{out}");
    berth.run(&["rm", "-f", &id, "peer"]).ok();
    for network in ["front", "back"] {
        berth.run(&["network", "rm", network]).ok();
    }
}

/// On a network with IPv6, a VM container's card has its IPv6 address, its
/// link-local one and the default IPv6 route, as a namespace container's
/// veth; the two reach each other over IPv6, by address and by name; the
/// shim's namespace answers for none of the guest's addresses.
#[test]
fn a_vm_container_on_an_ipv6_network_has_its_addresses() {
    let Some(berth) = VmBerth::new() else { return };
    berth
        .run(&[
            "network",
            "create",
            "--ipv6",
            "--subnet",
            "10.213.141.0/24",
            "--subnet",
            "fd77:213:141::/64",
            "--gateway",
            "fd77:213:141::1",
            "v6net",
        ])
        .ok();
    let serve = ["busybox", "httpd", "-f", "-p", "80", "-h", "/etc"];
    let mut args = vec!["run", "-d", "--network", "v6net", "--name", "ns6"];
    args.extend_from_slice(&serve);
    berth.run(&args).ok();
    let mut args = vec![
        "run",
        "-d",
        "--isolation=vm",
        "--network",
        "v6net",
        "--ip6",
        "fd77:213:141::77",
        "--link-local-ip",
        "169.254.41.7",
        "--name",
        "vm6",
    ];
    args.extend_from_slice(&serve);
    berth.run(&args).ok();
    let field = |name: &str, key: &str| {
        berth.inspect(
            name,
            &format!("{{{{(index .NetworkSettings.Networks \"v6net\").{key}}}}}"),
        )
    };
    assert_eq!(field("vm6", "GlobalIPv6Address"), "fd77:213:141::77");
    let eth0 = guest_card(&berth, "vm6", "eth0");
    for address in ["inet6 fd77:213:141::77/64", "inet 169.254.41.7/16"] {
        assert!(eth0.contains(address), "{address} in {eth0}");
    }
    let routes = berth.run(&["exec", "vm6", "ip", "-6", "route"]).ok();
    assert!(
        routes.contains("default via fd77:213:141::1 dev eth0"),
        "{routes}"
    );
    // Both ways over IPv6.
    let ns6 = field("ns6", "GlobalIPv6Address");
    let url = format!("http://[{ns6}]/hostname");
    let hostname = berth.inspect("ns6", "{{.Config.Hostname}}");
    let out = berth.run(&["exec", "vm6", "wget", "-qO-", &url]).ok();
    assert_eq!(out, format!("{hostname}\n"));
    let vm_hostname = berth.inspect("vm6", "{{.Config.Hostname}}");
    let out = berth
        .run(&[
            "exec",
            "ns6",
            "wget",
            "-qO-",
            "http://[fd77:213:141::77]/hostname",
        ])
        .ok();
    assert_eq!(out, format!("{vm_hostname}\n"));
    let out = berth
        .run(&["exec", "ns6", "ping", "-6", "-c", "1", "-W", "5", "vm6"])
        .ok();
    assert!(out.contains("fd77:213:141::77"), "{out}");
    berth.run(&["rm", "-f", "vm6", "ns6"]).ok();
    berth.run(&["network", "rm", "v6net"]).ok();
}

/// `network connect` and `disconnect` of a running VM container: each
/// connect gives a spare card of its VM the network (the host's tap bridged
/// to the new veth, the guest's card named after it, with the address,
/// up), so a namespace container on that network
/// and the VM reach each other by name; a disconnect takes the card back;
/// when no spare is left the connect is refused naming the limit and
/// leaves nothing; a card taken back serves the next connect.
#[test]
fn a_running_vm_container_is_connected_and_disconnected_through_spare_cards() {
    let Some(berth) = VmBerth::new() else { return };
    let networks = ["front", "back", "extra1", "extra2"];
    for network in networks {
        berth.run(&["network", "create", network]).ok();
    }
    let bridges = berth.bridges(&networks);
    let serve = ["busybox", "httpd", "-f", "-p", "80", "-h", "/etc"];
    let mut args = vec!["run", "-d", "--network", "back", "--name", "peer"];
    args.extend_from_slice(&serve);
    berth.run(&args).ok();
    let mut args = vec!["run", "-d", "--isolation=vm", "--network", "front"];
    args.extend_from_slice(&["--name", "vm"]);
    args.extend_from_slice(&serve);
    berth.run(&args).ok();
    let (peer_hostname, vm_hostname) = (
        berth.inspect("peer", "{{.Config.Hostname}}"),
        berth.inspect("vm", "{{.Config.Hostname}}"),
    );

    // The spares are down and without an address in the guest and, on
    // the host, taps down and bridged to nothing.
    let links = berth.run(&["exec", "vm", "ip", "-o", "link"]).ok();
    assert_eq!(links_up(&links), ["lo", "eth0"], "{links}");
    assert_eq!(links.lines().count(), 4, "lo, eth0 and two spares: {links}");
    let addresses = berth.run(&["exec", "vm", "ip", "-o", "-4", "addr"]).ok();
    assert_eq!(
        addresses.lines().count(),
        2,
        "lo's and eth0's only: {addresses}"
    );
    let host = shim_links(&berth, "vm");
    assert!(tap_line(&host, "tap0").contains("master br0"), "{host:?}");
    assert_spare(&host, "tap1");
    assert_spare(&host, "tap2");

    // Connected to `back` while it runs: a card with the address, and the
    // two containers reach each other by name (and the VM the peer by its
    // address).
    berth.run(&["network", "connect", "back", "vm"]).ok();
    let vm_back = berth.address("vm", "back");
    let eth1 = guest_card(&berth, "vm", "eth1");
    assert!(eth1.contains(&format!("inet {vm_back}/")), "{eth1}");
    let peer_back = berth.address("peer", "back");
    for host in ["peer", peer_back.as_str()] {
        let url = format!("http://{host}/hostname");
        let out = berth.run(&["exec", "vm", "wget", "-qO-", &url]).ok();
        assert_eq!(out, format!("{peer_hostname}\n"), "{url}");
    }
    let mut answer = String::new();
    wait_until(60.0, "the VM's httpd by name from back", || {
        let run = berth.run(&[
            "exec",
            "peer",
            "timeout",
            "5",
            "wget",
            "-qO-",
            "http://vm/hostname",
        ]);
        answer = run.stdout();
        run.code() == 0
    });
    assert_eq!(answer, format!("{vm_hostname}\n"));
    let host = shim_links(&berth, "vm");
    assert!(tap_line(&host, "tap1").contains("master br1"), "{host:?}");
    assert_spare(&host, "tap2");

    // The last spare, then the limit: refused by name, nothing half done.
    berth.run(&["network", "connect", "extra1", "vm"]).ok();
    let format = "{{range $name, $network := .NetworkSettings.Networks}}{{$name}}={{$network.IPAddress}} {{end}}";
    let before = berth.inspect("vm", format);
    let stderr = berth.run(&["network", "connect", "extra2", "vm"]).fails(1);
    assert!(
        stderr.contains(
            "cannot connect the running VM container vm to network extra2: all 3 network \
             cards of its VM are in use"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("BERTH_VM_SPARE_CARDS"), "{stderr}");
    assert_eq!(berth.inspect("vm", format), before);
    let containers = |network: &str| {
        berth
            .run(&["network", "inspect", "-f", "{{len .Containers}}", network])
            .ok()
            .trim()
            .to_owned()
    };
    assert_eq!(containers("extra2"), "0");
    let links = berth.run(&["exec", "vm", "ip", "-o", "link"]).ok();
    assert_eq!(links_up(&links).len(), 4, "lo and three cards: {links}");
    assert_eq!(
        shim_links(&berth, "vm").len(),
        host.len() + 2,
        "one veth and one bridge more (extra1's)"
    );

    // Disconnected from `back`: the card leaves the guest, its tap is a
    // spare again, the peer no longer finds the VM.
    berth.run(&["network", "disconnect", "back", "vm"]).ok();
    let links = berth.run(&["exec", "vm", "ip", "-o", "link"]).ok();
    assert!(!links_up(&links).contains(&"eth1".to_owned()), "{links}");
    let addresses = berth.run(&["exec", "vm", "ip", "-o", "-4", "addr"]).ok();
    assert!(
        !addresses.contains(&format!("inet {vm_back}/")),
        "{addresses}"
    );
    assert_spare(&shim_links(&berth, "vm"), "tap1");
    assert!(!berth.inspect("vm", format).contains("back="));
    assert_eq!(containers("back"), "1");
    let lookup = berth.run(&["exec", "peer", "nslookup", "vm", "127.0.0.11"]);
    assert!(lookup.stdout().contains("NXDOMAIN"), "{}", lookup.stdout());
    let stderr = berth.run(&["network", "disconnect", "back", "vm"]).fails(1);
    assert!(
        stderr.contains("is not connected to network back"),
        "{stderr}"
    );

    // That card serves the next connect, with only its new address.
    berth.run(&["network", "connect", "extra2", "vm"]).ok();
    let vm_extra2 = berth.address("vm", "extra2");
    let eth1 = guest_card(&berth, "vm", "eth1");
    assert!(eth1.contains(&format!("inet {vm_extra2}/")), "{eth1}");
    assert!(!eth1.contains(&format!("inet {vm_back}/")), "{eth1}");
    assert_eq!(eth1.matches("inet ").count(), 1, "{eth1}");

    // Removed: nothing of it, its networks or its VM stays on the host.
    let processes = vm_processes(berth.inspect("vm", "{{.State.Pid}}").parse().unwrap());
    berth.run(&["rm", "-f", "vm", "peer"]).ok();
    for network in networks {
        berth.run(&["network", "rm", network]).ok();
    }
    wait_until(20.0, "the VM's processes to end", || {
        processes.iter().all(|pid| !pid_alive(*pid))
    });
    for bridge in &bridges {
        assert!(!support::link_exists(bridge), "bridge {bridge} left");
    }
    assert!(berth.berth.all_ids().is_empty());
}
