//! Container networking end to end: the default bridge, published ports
//! (DNAT in the kernel), user-defined networks with the embedded DNS, the
//! host/none/container modes, and cleanup after `rm -f` and a killed
//! monitor.
//!
//! Every packet goes to 127.0.0.1, to a bridge or container address that
//! the test's own berth root made, or to a socket the test itself bound.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream, UdpSocket};
use std::process::Command;
use std::time::Duration;

use support::containers::wait_until;
use support::Berth;

fn busybox() -> Berth {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth
}

/// A detached busybox httpd serving /etc (so `/hostname` answers with the
/// container's hostname, its short id unless set).
fn web_server(berth: &Berth, options: &[&str]) -> String {
    let mut args = vec!["run", "-d"];
    args.extend_from_slice(options);
    args.extend_from_slice(&["busybox", "httpd", "-f", "-p", "80", "-h", "/etc"]);
    berth.run(&args).ok().trim().to_owned()
}

fn inspect(berth: &Berth, container: &str, format: &str) -> String {
    berth
        .run(&["inspect", "-f", format, container])
        .ok()
        .trim()
        .to_owned()
}

/// `GET /hostname` over plain TCP from the host; the body.
fn http_hostname(address: &str) -> String {
    let mut last_error = None;
    for _ in 0..50 {
        match TcpStream::connect_timeout(&address.parse().unwrap(), Duration::from_secs(2)) {
            Ok(mut stream) => {
                stream
                    .set_read_timeout(Some(Duration::from_secs(5)))
                    .unwrap();
                stream.write_all(b"GET /hostname HTTP/1.0\r\n\r\n").unwrap();
                let mut response = String::new();
                stream.read_to_string(&mut response).unwrap();
                if let Some((_, body)) = response.split_once("\r\n\r\n") {
                    return body.trim().to_owned();
                }
                last_error = Some(format!("no body in {response:?}"));
            }
            Err(error) => last_error = Some(error.to_string()),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("GET http://{address}/hostname failed: {last_error:?}");
}

fn default_bridge(berth: &Berth) -> String {
    berth_net::instance::Instance::for_root(berth.root()).default_bridge
}

/// The veths enslaved to `bridge` (one per connected container).
fn veths_on(bridge: &str) -> usize {
    let output = Command::new("ip")
        .args(["-o", "link", "show", "master", bridge])
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).lines().count()
}

/// Elements of the published-ports map in this root's nftables table.
fn published_elements(berth: &Berth) -> usize {
    let table = berth_net::instance::Instance::for_root(berth.root()).table;
    let output = Command::new("nft")
        .args(["list", "map", "ip", &table, "published"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    text.matches(" . tcp . ").count() + text.matches(" . udp . ").count()
}

/// `berth port C` as (container port/proto, host ip, host port).
fn ports(berth: &Berth, container: &str) -> Vec<(String, String, u16)> {
    berth
        .run(&["port", container])
        .ok()
        .lines()
        .map(|line| {
            let (inner, outer) = line.split_once(" -> ").unwrap();
            let (ip, port) = outer.rsplit_once(':').unwrap();
            (inner.to_owned(), ip.to_owned(), port.parse().unwrap())
        })
        .collect()
}

fn short(id: &str) -> &str {
    &id[..12]
}

/// A user-defined network removed when the test ends, passed or not.
struct TestNetwork<'a> {
    berth: &'a Berth,
    name: String,
}

impl<'a> TestNetwork<'a> {
    fn create(berth: &'a Berth, name: &str, options: &[&str]) -> Self {
        let mut args = vec!["network", "create"];
        args.extend_from_slice(options);
        args.push(name);
        berth.run(&args).ok();
        Self {
            berth,
            name: name.to_owned(),
        }
    }
}

impl Drop for TestNetwork<'_> {
    fn drop(&mut self) {
        let containers = self.berth.run(&["ps", "-aq"]).stdout();
        let ids: Vec<&str> = containers.split_whitespace().collect();
        if !ids.is_empty() {
            let mut args = vec!["rm", "-f"];
            args.extend(ids);
            self.berth.run(&args);
        }
        self.berth.run(&["network", "rm", &self.name]);
    }
}

// ------------------------------------------------------------------ tests

#[test]
fn containers_reach_each_other_and_the_host_over_the_default_bridge() {
    let berth = busybox();
    let server = web_server(&berth, &[]);
    let address = inspect(&berth, &server, "{{.NetworkSettings.IPAddress}}");
    let gateway = inspect(&berth, &server, "{{.NetworkSettings.Gateway}}");
    let subnet_prefix = inspect(&berth, &server, "{{.NetworkSettings.IPPrefixLen}}");
    assert!(address.parse::<Ipv4Addr>().is_ok(), "{address:?}");
    assert_eq!(subnet_prefix, "16");
    assert_eq!(
        inspect(&berth, &server, "{{.NetworkSettings.MacAddress}}"),
        {
            let octets = address.parse::<Ipv4Addr>().unwrap().octets();
            format!(
                "02:42:{:02x}:{:02x}:{:02x}:{:02x}",
                octets[0], octets[1], octets[2], octets[3]
            )
        }
    );

    // Container → container by address.
    let fetched = berth
        .run(&[
            "run",
            "--rm",
            "busybox",
            "timeout",
            "10",
            "wget",
            "-q",
            "-O",
            "-",
            &format!("http://{address}/hostname"),
        ])
        .ok();
    assert_eq!(fetched.trim(), short(&server));

    // Host → container address.
    assert_eq!(http_hostname(&format!("{address}:80")), short(&server));

    // Outbound NAT for the bridge's range is in the root's table from the
    // first container on (not checked with traffic: tests stay on this host).
    let table = berth_net::instance::Instance::for_root(berth.root()).table;
    let rules = Command::new("nft")
        .args(["list", "table", "ip", &table])
        .output()
        .unwrap();
    let rules = String::from_utf8_lossy(&rules.stdout);
    let prefix = address
        .rsplit_once('.')
        .unwrap()
        .0
        .rsplit_once('.')
        .unwrap()
        .0;
    assert!(
        rules.contains(&format!(
            "ip saddr {prefix}.0.0/16 oifname != \"{}\" masquerade",
            default_bridge(&berth)
        )),
        "{rules}"
    );

    // Container → host: a listener of the test's own on the bridge address.
    let listener = TcpListener::bind((gateway.as_str(), 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = std::thread::spawn(move || {
        let (mut stream, peer) = listener.accept().unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        (text, peer.ip())
    });
    berth
        .run(&[
            "run",
            "--rm",
            "busybox",
            "sh",
            "-c",
            &format!("echo hello-host | nc {gateway} {port}"),
        ])
        .ok();
    let (text, peer) = accepted.join().unwrap();
    assert_eq!(text.trim(), "hello-host");
    assert_eq!(
        peer.to_string().rsplit_once('.').unwrap().0,
        address.rsplit_once('.').unwrap().0
    );
}

#[test]
fn published_tcp_ports_reach_the_container_on_loopback_and_the_bridge_address() {
    let berth = busybox();
    let server = web_server(&berth, &["-p", "127.0.0.1::80", "-p", "80"]);
    let published = ports(&berth, &server);
    assert_eq!(published.len(), 2, "{published:?}");
    let loopback = published
        .iter()
        .find(|(_, ip, _)| ip == "127.0.0.1")
        .unwrap();
    let any = published.iter().find(|(_, ip, _)| ip == "0.0.0.0").unwrap();
    assert_eq!(loopback.0, "80/tcp");
    // 127.0.0.1 is DNATed too (route_localnet and a masquerade back).
    assert_eq!(
        http_hostname(&format!("127.0.0.1:{}", loopback.2)),
        short(&server)
    );
    let gateway = inspect(&berth, &server, "{{.NetworkSettings.Gateway}}");
    assert_eq!(
        http_hostname(&format!("{gateway}:{}", any.2)),
        short(&server)
    );
    // A port bound to 127.0.0.1 only is not published on other addresses.
    assert!(TcpStream::connect_timeout(
        &format!("{gateway}:{}", loopback.2).parse().unwrap(),
        Duration::from_secs(2)
    )
    .is_err());
    // `port NAME 80`, `ps` and `inspect` agree.
    let one = berth.run(&["port", &server, "80"]).ok();
    assert!(one.contains(&format!("127.0.0.1:{}", loopback.2)), "{one}");
    let listed = berth.run(&["ps", "--format", "{{.Ports}}"]).ok();
    assert!(
        listed.contains(&format!("127.0.0.1:{}->80/tcp", loopback.2)),
        "{listed}"
    );
    let bindings = inspect(&berth, &server, "{{json .NetworkSettings.Ports}}");
    assert!(
        bindings.contains(&format!("\"HostPort\":\"{}\"", any.2)),
        "{bindings}"
    );
    assert_eq!(published_elements(&berth), 2);
}

#[test]
fn published_udp_ports_reach_the_container() {
    if Command::new("iperf3").arg("--version").output().is_err() {
        panic!("iperf3 is needed on the host for the UDP test (apt-get install iperf3)");
    }
    let berth = busybox();
    berth.load("iperf3-docker.tar");
    // Take a free port for both protocols: iperf3's UDP test uses one port
    // number for its TCP control and its UDP data.
    let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = probe.local_addr().unwrap().port();
    drop(probe);
    let tcp = format!("127.0.0.1:{port}:5201/tcp");
    let udp = format!("127.0.0.1:{port}:5201/udp");
    let server = berth
        .run(&[
            "run",
            "-d",
            "-p",
            &tcp,
            "-p",
            &udp,
            "berth-test/iperf3",
            "-s",
        ])
        .ok()
        .trim()
        .to_owned();
    let mut result = None;
    let mut failures = Vec::new();
    for _ in 0..50 {
        let output = Command::new("iperf3")
            .args([
                "-c",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-u",
                "-t",
                "1",
                "-b",
                "1M",
                "-J",
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        if output.status.success() {
            result = Some(text);
            break;
        }
        failures.push(text);
        std::thread::sleep(Duration::from_millis(100));
    }
    let json: serde_json::Value =
        serde_json::from_str(&result.unwrap_or_else(|| panic!("iperf3 failed: {failures:?}")))
            .unwrap();
    let received = json["end"]["sum"]["packets"].as_u64().unwrap_or(0)
        - json["end"]["sum"]["lost_packets"].as_u64().unwrap_or(0);
    assert!(received > 0, "no UDP datagram arrived: {json}");
    berth.run(&["rm", "-f", &server]).ok();

    // `-P` publishes what the image exposes (5201/tcp) on an ephemeral port.
    let all = berth
        .run(&["run", "-d", "-P", "berth-test/iperf3", "-s"])
        .ok()
        .trim()
        .to_owned();
    let published = ports(&berth, &all);
    assert_eq!(published.len(), 1, "{published:?}");
    assert_eq!(
        (published[0].0.as_str(), published[0].1.as_str()),
        ("5201/tcp", "0.0.0.0")
    );
    let port = published[0].2;
    // A real iperf3 exchange: the monitor's listening socket that holds the
    // port would accept a bare TCP connect even without the DNAT.
    support::containers::wait_until(20.0, "iperf3 through the -P port", || {
        Command::new("iperf3")
            .args(["-c", "127.0.0.1", "-p", &port.to_string(), "-n", "1M"])
            .output()
            .unwrap()
            .status
            .success()
    });
}

#[test]
fn a_taken_port_is_refused_and_leaves_nothing_half_configured() {
    let berth = busybox();
    let first = web_server(&berth, &["-p", "127.0.0.1::80"]);
    let port = ports(&berth, &first)[0].2;
    let bridge = default_bridge(&berth);
    assert_eq!(veths_on(&bridge), 1);

    let taken = format!("127.0.0.1:{port}:80");
    let error = berth
        .run(&[
            "run", "-d", "--name", "second", "-p", &taken, "busybox", "sleep", "60",
        ])
        .fails(125);
    assert!(
        error.contains(&format!(
            "Bind for 127.0.0.1:{port} failed: port is already allocated"
        )),
        "{error}"
    );
    assert_eq!(inspect(&berth, "second", "{{.State.Status}}"), "created");
    assert_eq!(
        inspect(&berth, "second", "{{.NetworkSettings.IPAddress}}"),
        ""
    );
    assert_eq!(veths_on(&bridge), 1);
    assert_eq!(published_elements(&berth), 1);
    // The first container still answers.
    assert_eq!(http_hostname(&format!("127.0.0.1:{port}")), short(&first));

    // A port a host program holds is refused the same way.
    let holder = TcpListener::bind("127.0.0.1:0").unwrap();
    let held = holder.local_addr().unwrap().port();
    let error = berth
        .run(&[
            "run",
            "--rm",
            "-p",
            &format!("127.0.0.1:{held}:80"),
            "busybox",
            "true",
        ])
        .fails(125);
    assert!(error.contains("port is already allocated"), "{error}");
    assert_eq!(veths_on(&bridge), 1);
}

#[test]
fn rm_and_a_killed_monitor_leave_no_veth_rule_address_or_port() {
    let berth = busybox();
    let bridge = default_bridge(&berth);
    for crash in [false, true] {
        let server = web_server(&berth, &["-p", "127.0.0.1::80"]);
        let port = ports(&berth, &server)[0].2;
        let address = inspect(&berth, &server, "{{.NetworkSettings.IPAddress}}");
        assert_eq!(veths_on(&bridge), 1);
        assert_eq!(published_elements(&berth), 1);
        if crash {
            let pid: i32 = inspect(&berth, &server, "{{.State.Pid}}").parse().unwrap();
            let monitor = support::containers::parent_pid(pid);
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(monitor),
                nix::sys::signal::Signal::SIGKILL,
            )
            .unwrap();
            wait_until(10.0, "the crashed container is reconciled", || {
                berth
                    .run(&["ps", "-a", "--format", "{{.Status}}"])
                    .stdout()
                    .contains("Exited (137)")
            });
        } else {
            berth.run(&["rm", "-f", &server]).ok();
        }
        wait_until(10.0, "the veth is gone", || veths_on(&bridge) == 0);
        assert_eq!(published_elements(&berth), 0);
        // The port is free again for anyone.
        drop(TcpListener::bind(("127.0.0.1", port)).unwrap());
        // And the address goes to the next container.
        let next = berth
            .run(&["run", "-d", "busybox", "sleep", "60"])
            .ok()
            .trim()
            .to_owned();
        assert_eq!(
            inspect(&berth, &next, "{{.NetworkSettings.IPAddress}}"),
            address
        );
        berth.run(&["rm", "-f", &next]).ok();
        if crash {
            berth.run(&["rm", "-f", &server]).ok();
        }
    }
}

#[test]
fn user_networks_resolve_names_aliases_and_containers_started_later() {
    let berth = busybox();
    let network = TestNetwork::create(&berth, "berth-test-dns", &[]);
    let name = network.name.as_str();
    let server = web_server(
        &berth,
        &["--name", "srv", "--network", name, "--network-alias", "web"],
    );
    let script = "grep nameserver /etc/resolv.conf; \
                  timeout 10 wget -q -O - http://srv/hostname; timeout 10 wget -q -O - http://web/hostname";
    let out = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            name,
            "busybox",
            "sh",
            "-c",
            script,
        ])
        .ok();
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["nameserver 127.0.0.11", short(&server), short(&server)],
        "{out}"
    );

    // A name that appears after the asking container started. Until then
    // the embedded DNS forwards "late": to a dead address on loopback
    // (--dns), not to the host's resolver.
    let waiter = berth
        .run(&[
            "run", "-d", "--network", name, "--dns", "127.0.0.3", "busybox", "sh", "-c",
            "for i in $(seq 100); do timeout 3 wget -q -O - http://late/hostname && exit 0; sleep 0.1; done; exit 1",
        ])
        .ok()
        .trim()
        .to_owned();
    std::thread::sleep(Duration::from_millis(300));
    let late = web_server(&berth, &["--name", "late", "--network", name]);
    assert_eq!(berth.run(&["wait", &waiter]).ok().trim(), "0");
    assert_eq!(berth.run(&["logs", &waiter]).ok().trim(), short(&late));
}

/// Names that are not containers' go to the host's resolvers (here:
/// `--dns`, a fake server of the test's own on 127.0.0.2).
#[test]
fn the_embedded_dns_forwards_other_names() {
    let upstream = UdpSocket::bind("127.0.0.2:53").unwrap();
    upstream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let answering = std::thread::spawn(move || {
        let mut buffer = [0u8; 512];
        loop {
            let (length, peer) = upstream.recv_from(&mut buffer).unwrap();
            let query = &buffer[..length];
            // Header: same id, response + recursion flags, one question,
            // one answer for A queries (an empty answer otherwise).
            let question_end = 12 + query[12..].iter().position(|byte| *byte == 0).unwrap() + 5;
            let is_a = query[question_end - 4..question_end - 2] == [0, 1];
            let mut reply = query[..question_end].to_vec();
            reply[2] = 0x81;
            reply[3] = 0x80;
            reply[7] = u8::from(is_a);
            if is_a {
                reply.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 203, 0, 113, 7]);
            }
            upstream.send_to(&reply, peer).unwrap();
            if is_a {
                return;
            }
        }
    });
    let berth = busybox();
    let network = TestNetwork::create(&berth, "berth-test-fwd", &[]);
    let out = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            &network.name,
            "--dns",
            "127.0.0.2",
            "busybox",
            "nslookup",
            "-type=a",
            "outside.example.",
        ])
        .ok();
    assert!(out.contains("203.0.113.7"), "{out}");
    answering.join().unwrap();
}

#[test]
fn host_none_and_container_network_modes() {
    let berth = busybox();
    let host_net = fs_err::read_link("/proc/self/ns/net").unwrap();
    let out = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            "host",
            "busybox",
            "readlink",
            "/proc/self/ns/net",
        ])
        .ok();
    assert_eq!(out.trim(), host_net.to_string_lossy());

    let server = web_server(&berth, &[]);
    let address = inspect(&berth, &server, "{{.NetworkSettings.IPAddress}}");
    let out = berth
        .run(&[
            "run", "--rm", "--network", &format!("container:{server}"), "busybox", "sh", "-c",
            "ip -o -4 addr show eth0 | awk '{print $4}'; timeout 10 wget -q -O - http://127.0.0.1/hostname",
        ])
        .ok();
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [format!("{address}/16").as_str(), short(&server)]
    );
    let stopped = berth
        .run(&["create", "busybox", "true"])
        .ok()
        .trim()
        .to_owned();
    let error = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            &format!("container:{stopped}"),
            "busybox",
            "true",
        ])
        .fails(125);
    assert!(
        error.contains("cannot join network of a non running container"),
        "{error}"
    );

    // The owner stops while a joined container keeps the namespace alive:
    // its veth is deleted all the same (the kernel would not, the namespace
    // lives on), and its address is free.
    let bridge = default_bridge(&berth);
    let joined = berth
        .run(&[
            "run",
            "-d",
            "--network",
            &format!("container:{}", short(&server)),
            "busybox",
            "sleep",
            "600",
        ])
        .ok();
    assert_eq!(veths_on(&bridge), 1);
    berth.run(&["stop", "-t", "0", &server]).ok();
    wait_until(10.0, "the owner's veth is gone", || veths_on(&bridge) == 0);
    berth.run(&["rm", "-f", joined.trim()]).ok();
}

#[test]
fn address_mac_hosts_and_resolver_options() {
    let berth = busybox();
    let network = TestNetwork::create(&berth, "berth-test-opts", &["--subnet", "10.213.7.0/24"]);
    let out = berth
        .run(&[
            "run", "--rm", "--network", &network.name, "--ip", "10.213.7.50",
            "--mac-address", "02:42:0a:d5:07:99", "--add-host", "db.local:10.1.2.3",
            "--hostname", "box", "--dns-search", "example.test", "busybox", "sh", "-c",
            "ip -o -4 addr show eth0 | awk '{print $4}'; cat /sys/class/net/eth0/address; \
             ip route | grep default; grep -v ip6 /etc/hosts | grep -v localhost; cat /etc/resolv.conf",
        ])
        .ok();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "10.213.7.50/24",
            "02:42:0a:d5:07:99",
            "default via 10.213.7.1 dev eth0 ",
            "10.1.2.3\tdb.local",
            "10.213.7.50\tbox",
            "search example.test",
            "nameserver 127.0.0.11",
            "options ndots:0",
        ],
        "{out}"
    );
    // An address of one's own needs a subnet the user chose.
    let chosen = TestNetwork::create(&berth, "berth-test-chosen", &[]);
    let error = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            &chosen.name,
            "--ip",
            "172.30.0.5",
            "busybox",
            "true",
        ])
        .fails(125);
    assert!(error.contains("user configured subnets"), "{error}");
    // Docker's rules for the default bridge.
    let error = berth
        .run(&["run", "--rm", "--ip", "172.17.0.50", "busybox", "true"])
        .fails(125);
    assert!(
        error.contains("user specified IP address is supported on user defined networks only"),
        "{error}"
    );
    let error = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            &network.name,
            "--ip",
            "10.99.0.5",
            "busybox",
            "true",
        ])
        .fails(125);
    assert!(error.contains("10.99.0.5"), "{error}");
}

#[test]
fn networks_are_isolated_from_each_other_and_internal_ones_from_outside() {
    let berth = busybox();
    let server = web_server(&berth, &[]);
    let address = inspect(&berth, &server, "{{.NetworkSettings.IPAddress}}");
    let other = TestNetwork::create(&berth, "berth-test-other", &[]);
    let internal = TestNetwork::create(&berth, "berth-test-internal", &["--internal"]);
    let peer = web_server(&berth, &["--name", "peer", "--network", &internal.name]);
    for network in [&other.name, &internal.name] {
        // Not the container's PID 1 (which ignores SIGTERM): the shell is.
        let script = format!("timeout 3 wget -q -O - http://{address}/hostname; echo rc=$?");
        let run = berth.run(&[
            "run",
            "--rm",
            "--network",
            network,
            "busybox",
            "sh",
            "-c",
            &script,
        ]);
        let out = run.stdout();
        assert!(
            !out.contains(short(&server)) && out.contains("rc=") && !out.contains("rc=0"),
            "{network} reached the default bridge: {out}"
        );
    }
    // Inside the internal network containers still reach each other.
    let out = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            &internal.name,
            "busybox",
            "timeout",
            "10",
            "wget",
            "-q",
            "-O",
            "-",
            "http://peer/hostname",
        ])
        .ok();
    assert_eq!(out.trim(), short(&peer));
}

/// `network connect` on a running container: its embedded DNS answers for
/// the new network at once, and a restart keeps the connection.
#[test]
fn a_network_connected_while_running_resolves_and_survives_a_restart() {
    let berth = busybox();
    let first = TestNetwork::create(&berth, "berth-test-first", &[]);
    let second = TestNetwork::create(&berth, "berth-test-second", &[]);
    let server = web_server(&berth, &["--name", "far", "--network", &second.name]);
    berth
        .run(&[
            "run",
            "-d",
            "--name",
            "client",
            "--network",
            &first.name,
            "busybox",
            "sleep",
            "600",
        ])
        .ok();
    berth
        .run(&["network", "connect", &second.name, "client"])
        .ok();
    let fetch = || {
        berth
            .run(&[
                "exec",
                "client",
                "wget",
                "-q",
                "-O",
                "-",
                "http://far/hostname",
            ])
            .ok()
            .trim()
            .to_owned()
    };
    assert_eq!(fetch(), short(&server));
    berth.run(&["restart", "-t", "0", "client"]).ok();
    let links = berth
        .run(&[
            "exec",
            "client",
            "sh",
            "-c",
            "ip -o link | cut -d: -f2 | cut -d@ -f1 | tr -d ' '",
        ])
        .ok();
    assert_eq!(
        links.lines().collect::<Vec<_>>(),
        ["lo", "eth0", "eth1"],
        "{links}"
    );
    assert_eq!(fetch(), short(&server));
}

/// A container created on the default bridge and connected to a
/// user-defined network before its start asks the embedded DNS, which
/// resolves that network's names (Docker's resolver serves any container
/// with an endpoint off the default bridge); its default route stays the
/// bridge's.
#[test]
fn the_default_bridge_with_a_user_network_uses_the_embedded_dns() {
    let berth = busybox();
    let user = TestNetwork::create(&berth, "berth-test-names", &[]);
    let server = web_server(&berth, &["--name", "named", "--network", &user.name]);
    // On the default bridge only: no name (Docker's default bridge has no
    // name service), though its address answers.
    web_server(&berth, &["--name", "plain"]);
    let script = "grep nameserver /etc/resolv.conf; wget -qO- http://named/hostname; \
                  ip route | grep -c default; \
                  nslookup plain 127.0.0.11 >/dev/null 2>&1 && echo plain-found || echo no-plain";
    let id = berth
        .run(&["create", "busybox", "sh", "-c", script])
        .ok()
        .trim()
        .to_owned();
    berth.run(&["network", "connect", &user.name, &id]).ok();
    let out = berth.run(&["start", "-a", &id]).ok();
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["nameserver 127.0.0.11", short(&server), "1", "no-plain"],
        "{out}"
    );
    berth.run(&["rm", "-f", &id, "plain"]).ok();
}

/// Docker's `bip` in berth's config file sets the default bridge's range.
#[test]
fn the_default_bridge_range_comes_from_the_config_file() {
    let berth = busybox();
    let config = berth.root().join("config.json");
    fs_err::write(&config, r#"{"bip": "10.213.99.1/24"}"#).unwrap();
    let output = berth
        .command()
        .env("BERTH_CONFIG", &config)
        .args([
            "run",
            "--rm",
            "busybox",
            "sh",
            "-c",
            "ip -o -4 addr show eth0 | awk '{print $4}'; ip route | grep default",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["10.213.99.2/24", "default via 10.213.99.1 dev eth0 "],
        "{out}{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn add_host_host_gateway_is_the_default_bridges_gateway() {
    let berth = busybox();
    let gateway = berth
        .run(&[
            "network",
            "inspect",
            "bridge",
            "-f",
            "{{(index .IPAM.Config 0).Gateway}}",
        ])
        .ok()
        .trim()
        .to_owned();
    assert!(gateway.parse::<std::net::Ipv4Addr>().is_ok(), "{gateway}");
    let id = berth.run_detached(&[
        "--network",
        "none",
        "--add-host",
        "gw:host-gateway",
        "--add-host",
        "db:10.1.2.3",
        "busybox",
        "sleep",
        "60",
    ]);
    let hosts = berth
        .run(&["exec", &id, "grep", "-E", "gw|db", "/etc/hosts"])
        .ok();
    // inspect keeps what was asked for, as Docker's does.
    let asked = berth.inspect(&id, "{{.HostConfig.ExtraHosts}}");
    berth.run(&["rm", "-f", &id]).ok();
    assert_eq!(hosts, format!("{gateway}\tgw\n10.1.2.3\tdb\n"));
    assert_eq!(asked, "[gw:host-gateway db:10.1.2.3]");
}
