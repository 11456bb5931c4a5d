//! Networks with IPv6 (`network create --ipv6 --subnet V4 --subnet V6`)
//! and link-local addresses, on real bridges: what Docker 20.10 does here.
//!
//! Each test has subnets of its own (10.213.24x.0/24 and fd77:213:24x::/64,
//! which nothing else on the machine uses). Traffic stays on the bridge:
//! container to container and container to the bridge's address. No
//! host-wide sysctl is read or changed.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::process::Command;

use serde_json::Value;
use support::containers::{parent_pid, wait_until};
use support::Berth;

fn with_busybox() -> Berth {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth
}

/// The host device that holds the IPv6 `address` (`x::y/len`).
fn device_with_ipv6(address: &str) -> Option<String> {
    let output = Command::new("ip")
        .args(["-6", "-o", "addr", "show"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find(|line| line.split_whitespace().any(|word| word == address))
        .and_then(|line| line.split_whitespace().nth(1).map(str::to_owned))
}

/// The addresses (`ADDRESS/LEN`) of `family` (`-4`, `-6`) on eth0 inside
/// `container`.
fn addresses(berth: &Berth, container: &str, family: &str) -> Vec<String> {
    let text = berth
        .run(&[
            "exec", container, "ip", family, "-o", "addr", "show", "eth0",
        ])
        .ok();
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            words.find(|word| *word == "inet" || *word == "inet6")?;
            words.next().map(str::to_owned)
        })
        .collect()
}

fn inspect_json(berth: &Berth, object: &str) -> Value {
    let text = berth.run(&["inspect", object]).ok();
    let mut all: Value = serde_json::from_str(&text).unwrap();
    all[0].take()
}

#[test]
fn two_containers_on_an_ipv6_network_reach_each_other_and_the_gateway() {
    let berth = with_busybox();
    berth
        .run(&[
            "network",
            "create",
            "--ipv6",
            "--subnet",
            "10.213.241.0/24",
            "--subnet",
            "fd77:213:241::/64",
            "--gateway",
            "fd77:213:241::fe",
            "v6net",
        ])
        .ok();
    let network = inspect_json(&berth, "v6net");
    assert_eq!(network["EnableIPv6"], true);
    assert_eq!(
        network["IPAM"]["Config"][1],
        serde_json::json!({ "Subnet": "fd77:213:241::/64", "Gateway": "fd77:213:241::fe" })
    );
    let bridge = device_with_ipv6("fd77:213:241::fe/64").expect("the bridge has the v6 gateway");
    let ls = berth
        .run(&["network", "ls", "--format", "{{.Name}} {{.IPv6}}"])
        .ok();
    assert!(ls.lines().any(|line| line == "v6net true"), "{ls}");

    berth.run_detached(&[
        "--name",
        "one",
        "--network",
        "v6net",
        "--ip6",
        "fd77:213:241::f00d",
        "--link-local-ip",
        "169.254.8.8",
        "--link-local-ip",
        "fe80::8",
        "busybox",
        "sleep",
        "300",
    ]);
    berth.run_detached(&[
        "--name",
        "two",
        "--network",
        "v6net",
        "busybox",
        "sleep",
        "300",
    ]);
    let v6 = addresses(&berth, "one", "-6");
    assert!(v6.contains(&"fd77:213:241::f00d/64".to_owned()), "{v6:?}");
    assert!(v6.contains(&"fe80::8/64".to_owned()), "{v6:?}");
    let v4 = addresses(&berth, "one", "-4");
    assert_eq!(v4, ["10.213.241.2/24", "169.254.8.8/16"]);
    // The first dynamic address: the subnet's first host (the gateway is ::fe).
    assert!(addresses(&berth, "two", "-6").contains(&"fd77:213:241::1/64".to_owned()));
    let routes = berth.run(&["exec", "two", "ip", "-6", "route"]).ok();
    assert!(
        routes.contains("default via fd77:213:241::fe dev eth0"),
        "{routes}"
    );

    // On-link IPv6: container to container (by address and by name, through
    // the embedded DNS's AAAA) and container to the bridge.
    for target in ["fd77:213:241::f00d", "fd77:213:241::fe", "one"] {
        let ping = berth.run(&["exec", "two", "ping", "-6", "-c", "1", "-W", "5", target]);
        assert_eq!(ping.code(), 0, "ping -6 {target}: {}", ping.stdout());
    }
    let answer = berth
        .run(&["exec", "two", "nslookup", "-type=AAAA", "one", "127.0.0.11"])
        .ok();
    assert!(answer.contains("fd77:213:241::f00d"), "{answer}");
    // /etc/hosts as Docker writes it: both addresses of the container.
    let hosts = berth.run(&["exec", "two", "cat", "/etc/hosts"]).ok();
    let short = &berth.inspect("two", "{{.Id}}")[..12];
    assert!(
        hosts.contains(&format!("10.213.241.3\t{short}\n")),
        "{hosts}"
    );
    assert!(
        hosts.contains(&format!("fd77:213:241::1\t{short}\n")),
        "{hosts}"
    );

    let container = inspect_json(&berth, "one");
    let endpoint = &container["NetworkSettings"]["Networks"]["v6net"];
    assert_eq!(
        endpoint["IPAMConfig"],
        serde_json::json!({
            "IPv6Address": "fd77:213:241::f00d",
            "LinkLocalIPs": ["169.254.8.8", "fe80::8"],
        })
    );
    assert_eq!(endpoint["GlobalIPv6Address"], "fd77:213:241::f00d");
    assert_eq!(endpoint["GlobalIPv6PrefixLen"], 64);
    assert_eq!(endpoint["IPv6Gateway"], "fd77:213:241::fe");
    // The top level is the default bridge's, as dockerd's.
    assert_eq!(container["NetworkSettings"]["GlobalIPv6Address"], "");
    let network = inspect_json(&berth, "v6net");
    let id = berth.inspect("one", "{{.Id}}");
    assert_eq!(
        network["Containers"][&id]["IPv6Address"],
        "fd77:213:241::f00d/64"
    );

    // Disconnect frees the address; connect asks for it again.
    berth.run(&["network", "disconnect", "v6net", "one"]).ok();
    berth
        .run(&[
            "network",
            "connect",
            "--ip6",
            "fd77:213:241::f00d",
            "v6net",
            "two",
        ])
        .fails(1);
    berth
        .run(&[
            "network",
            "connect",
            "--ip6",
            "fd77:213:241::f00d",
            "--link-local-ip",
            "169.254.9.9",
            "v6net",
            "one",
        ])
        .ok();
    assert!(addresses(&berth, "one", "-4").contains(&"169.254.9.9/16".to_owned()));

    // A monitor killed with SIGKILL: the container is reconciled and its
    // IPv6 address goes to the next container that asks.
    let pid: i32 = berth.inspect("one", "{{.State.Pid}}").parse().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(parent_pid(pid)),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_until(10.0, "the crashed container is reconciled", || {
        berth.inspect("one", "{{.State.Status}}") == "exited"
    });
    berth.run_detached(&[
        "--name",
        "three",
        "--network",
        "v6net",
        "--ip6",
        "fd77:213:241::f00d",
        "busybox",
        "sleep",
        "300",
    ]);
    berth.run(&["rm", "-f", "one", "two", "three"]).ok();
    berth.run(&["network", "rm", "v6net"]).ok();
    assert!(
        !std::path::Path::new("/sys/class/net")
            .join(&bridge)
            .exists(),
        "the bridge goes with the network"
    );
}

/// A network with an IPv6 pool but no `EnableIPv6` (docker-py's
/// `test_create_with_ipv6_address`): the pool is shown, an `--ip6` kept for
/// inspect, and the container has no IPv6 address, as with dockerd.
#[test]
fn an_ipv6_pool_without_enable_ipv6_gives_no_address() {
    let berth = with_busybox();
    berth
        .run(&[
            "network",
            "create",
            "--subnet",
            "10.213.242.0/24",
            "--subnet",
            "fd77:213:242::/64",
            "plain",
        ])
        .ok();
    let network = inspect_json(&berth, "plain");
    assert_eq!(network["EnableIPv6"], false);
    assert_eq!(
        network["IPAM"]["Config"][1],
        serde_json::json!({ "Subnet": "fd77:213:242::/64" })
    );
    berth.run_detached(&[
        "--name",
        "kept",
        "--network",
        "plain",
        "--ip6",
        "fd77:213:242::9",
        "busybox",
        "sleep",
        "300",
    ]);
    let global: Vec<String> = addresses(&berth, "kept", "-6")
        .into_iter()
        .filter(|address| address.starts_with("fd77"))
        .collect();
    assert!(global.is_empty(), "{global:?}");
    assert_eq!(
        berth.inspect(
            "kept",
            "{{(index .NetworkSettings.Networks \"plain\").IPAMConfig.IPv6Address}}"
        ),
        "fd77:213:242::9"
    );
    assert_eq!(
        berth.inspect(
            "kept",
            "{{(index .NetworkSettings.Networks \"plain\").GlobalIPv6Address}}"
        ),
        ""
    );
    berth.run(&["rm", "-f", "kept"]).ok();
    berth.run(&["network", "rm", "plain"]).ok();
}

#[test]
fn bad_ipv6_inputs_are_refused_in_dockers_words_and_leave_nothing() {
    let berth = with_busybox();
    berth
        .run(&[
            "network",
            "create",
            "--ipv6",
            "--subnet",
            "fd77:213:243::/64",
            "taken",
        ])
        .ok();
    let cases: &[(&[&str], &str)] = &[
        (&["--ipv6"], "could not find an available, non-overlapping IPv6 address pool among the defaults to assign to the network"),
        (&["--subnet", "10.213.244.0/24", "--subnet", "10.213.245.0/24"], "bridge driver doesn't support multiple subnets"),
        (&["--ipv6", "--subnet", "fd77:213:244::/64", "--subnet", "fd77:213:245::/64"], "bridge driver doesn't support multiple subnets"),
        (&["--ipv6", "--subnet", "fd77:213:244::/64", "--subnet", "fd77:213:244:0:1::/80"], "multiple overlapping subnet configuration is not supported"),
        (&["--ipv6", "--subnet", "fd77:213:244::/64", "--gateway", "fd77:213:245::1"], "no matching subnet for gateway fd77:213:245::1"),
        (&["--ipv6", "--subnet", "fd77:213:244::/64", "--ip-range", "fd77:213:245::/80"], "no matching subnet for range fd77:213:245::/80"),
        (&["--ipv6", "--subnet", "fd77:213:244::/64", "--gateway", "fd77:213:244::"], "failed to allocate gateway (fd77:213:244::): Address already in use"),
        (&["--ipv6", "--subnet", "fd77:213:244::/64", "--aux-address", "a=fd77:213:244::1"], "failed to allocate secondary ip address (a:fd77:213:244::1): Address already in use"),
        (&["--ipv6", "--subnet", "fd77:213:243::/80"], "Pool overlaps with other one on this address space"),
        (&["--ipv6", "--subnet", "bogus::/64"], "invalid CIDR address: bogus::/64"),
        (&["-o", "com.docker.network.enable_ipv6=bogus"], "failed to parse com.docker.network.enable_ipv6 value: bogus"),
    ];
    for (args, words) in cases {
        let mut full = vec!["network", "create"];
        full.extend_from_slice(args);
        full.push("bad");
        let stderr = berth.run(&full).fails(1);
        assert!(stderr.contains(words), "{args:?}: {stderr}");
    }
    let runs: &[(&[&str], &str)] = &[
        (
            &["--network", "taken", "--ip6", "10.1.1.1"],
            "invalid IPv6 address: 10.1.1.1",
        ),
        (
            &["--network", "taken", "--link-local-ip", "bogus"],
            "Invalid link-local IP address: [bogus]",
        ),
        (
            &["--network", "taken", "--link-local-ip", "10.1.1.1"],
            "invalid link local IP address: 10.1.1.1",
        ),
        (
            &["--network", "bridge", "--ip6", "fd77::1"],
            "user specified IP address is supported on user defined networks only",
        ),
        (
            &["--network", "taken", "--ip6", "fd77:213:250::1"],
            "is not in the subnet fd77:213:243::/64",
        ),
        (
            &["--network", "taken", "--ip6", "fd77:213:243::1"],
            "Address already in use",
        ),
    ];
    for (args, words) in runs {
        let mut full = vec!["run", "--rm"];
        full.extend_from_slice(args);
        full.extend_from_slice(&["busybox", "true"]);
        let run = berth.run(&full);
        assert_ne!(run.code(), 0, "{args:?}");
        assert!(run.stderr().contains(words), "{args:?}: {}", run.stderr());
    }
    let names = berth
        .run(&[
            "network",
            "ls",
            "--format",
            "{{.Name}}",
            "-f",
            "type=custom",
        ])
        .ok();
    assert_eq!(names.trim(), "taken");
    assert_eq!(berth.run(&["ps", "-aq"]).ok().trim(), "");
    berth.run(&["network", "rm", "taken"]).ok();
}
