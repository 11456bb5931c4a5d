//! berth's nftables table, `ip berth`: outbound NAT for each bridge, DNAT for
//! published ports (one map, so publishing is data, not rules), hairpin and
//! loopback masquerading, and the isolation of internal networks.
//!
//! The table is a pure function of the store: every change renders the whole
//! table and replaces it in one `nft -f` transaction (create, delete,
//! define), so it is never half-written, a crash leaves the last complete
//! table, and the next change repairs whatever a crash left. No other table
//! is read, flushed or changed.

use std::fmt::Write as _;
use std::io::Write as _;
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};

use crate::ipam::Ipv4Net;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    Tcp,
    Udp,
}

impl Protocol {
    pub fn as_str(&self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
        }
    }
}

/// One bridge network's rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BridgeRules {
    pub device: String,
    pub subnet: Ipv4Net,
    /// `--internal`: no traffic in or out of the bridge's subnet.
    pub internal: bool,
}

/// One published port: traffic for `host_ip:host_port` (any local address
/// when None) goes to `container:container_port`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PublishedPort {
    pub host_ip: Option<Ipv4Addr>,
    pub protocol: Protocol,
    pub host_port: u16,
    pub container: Ipv4Addr,
    pub container_port: u16,
}

/// Everything berth's table holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ruleset {
    /// The table's name (see `instance::Instance`).
    pub table: String,
    pub bridges: Vec<BridgeRules>,
    pub published: Vec<PublishedPort>,
}

#[derive(Debug, thiserror::Error)]
pub enum NftError {
    #[error("failed to run nft (is the nftables package installed?)")]
    Spawn(#[source] std::io::Error),
    #[error("nft refused berth's rules: {message}")]
    Refused { message: String },
}

impl Ruleset {
    /// The `nft -f` script that replaces the table with this ruleset.
    pub fn render(&self) -> String {
        let mut script = String::new();
        let table = &self.table;
        // Create-then-delete makes the delete valid whether or not the table
        // exists; the whole script is one transaction.
        let _ = writeln!(script, "table ip {table}\ndelete table ip {table}");
        let _ = writeln!(script, "table ip {table} {{");
        script.push_str(&self.render_published_map());
        script.push_str(
            "    chain prerouting {\n        type nat hook prerouting priority dstnat; policy accept;\n",
        );
        script.push_str(DNAT_RULE);
        script.push_str("    }\n");
        script.push_str(
            "    chain output {\n        type nat hook output priority -100; policy accept;\n",
        );
        script.push_str(DNAT_RULE);
        script.push_str("    }\n");
        script.push_str(&self.render_postrouting());
        script.push_str(&self.render_forward());
        script.push_str("}\n");
        script
    }

    fn render_published_map(&self) -> String {
        let mut map = String::from(
            "    map published {\n        type ipv4_addr . inet_proto . inet_service : ipv4_addr . inet_service\n        flags interval\n",
        );
        let mut ports = self.published.clone();
        ports.sort();
        ports.dedup();
        if !ports.is_empty() {
            let elements: Vec<String> = ports
                .iter()
                .map(|port| {
                    let host = port
                        .host_ip
                        .map_or_else(|| "0.0.0.0/0".to_owned(), |ip| ip.to_string());
                    format!(
                        "{host} . {} . {} : {} . {}",
                        port.protocol.as_str(),
                        port.host_port,
                        port.container,
                        port.container_port
                    )
                })
                .collect();
            let _ = writeln!(map, "        elements = {{ {} }}", elements.join(", "));
        }
        map.push_str("    }\n");
        map
    }

    fn render_postrouting(&self) -> String {
        let mut chain = String::from(
            "    chain postrouting {\n        type nat hook postrouting priority srcnat; policy accept;\n",
        );
        for bridge in &self.bridges {
            let (device, subnet) = (&bridge.device, bridge.subnet);
            // Published ports on 127.0.0.1: the reply must come back to an
            // address the container can route to.
            let _ = writeln!(
                chain,
                "        ip saddr 127.0.0.0/8 oifname \"{device}\" masquerade"
            );
            // A container reaching a published port that leads back to its
            // own bridge (hairpin).
            let _ = writeln!(
                chain,
                "        ct status dnat ip saddr {subnet} oifname \"{device}\" masquerade"
            );
            if !bridge.internal {
                let _ = writeln!(
                    chain,
                    "        ip saddr {subnet} oifname != \"{device}\" masquerade"
                );
            }
        }
        chain.push_str("    }\n");
        chain
    }

    fn render_forward(&self) -> String {
        let mut chain = String::from(
            "    chain forward {\n        type filter hook forward priority filter; policy accept;\n",
        );
        // Docker's isolation: containers on different networks do not reach
        // each other through the host.
        for bridge in &self.bridges {
            let others: Vec<String> = self
                .bridges
                .iter()
                .filter(|other| other.device != bridge.device)
                .map(|other| format!("\"{}\"", other.device))
                .collect();
            if !others.is_empty() {
                let _ = writeln!(
                    chain,
                    "        iifname \"{}\" oifname {{ {} }} drop",
                    bridge.device,
                    others.join(", ")
                );
            }
        }
        for bridge in self.bridges.iter().filter(|bridge| bridge.internal) {
            let device = &bridge.device;
            let _ = writeln!(
                chain,
                "        iifname \"{device}\" oifname != \"{device}\" drop"
            );
            let _ = writeln!(
                chain,
                "        oifname \"{device}\" iifname != \"{device}\" drop"
            );
        }
        chain.push_str("    }\n");
        chain
    }

    /// Replaces berth's table with this ruleset.
    pub fn apply(&self) -> Result<(), NftError> {
        run_nft(&self.render())
    }
}

const DNAT_RULE: &str = "        meta l4proto { tcp, udp } fib daddr type local dnat ip to ip daddr . meta l4proto . th dport map @published\n";

/// Removes berth's table (nothing else); fine when it is not there.
pub fn remove_table(table: &str) -> Result<(), NftError> {
    run_nft(&format!("table ip {table}\ndelete table ip {table}\n"))
}

fn run_nft(script: &str) -> Result<(), NftError> {
    let mut child = Command::new("nft")
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(NftError::Spawn)?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(script.as_bytes())
            .map_err(NftError::Spawn)?;
    }
    let output = child.wait_with_output().map_err(NftError::Spawn)?;
    if output.status.success() {
        return Ok(());
    }
    Err(NftError::Refused {
        message: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn sample() -> Ruleset {
        Ruleset {
            table: "berth_test".to_owned(),
            bridges: vec![
                BridgeRules {
                    device: "berth0".to_owned(),
                    subnet: "172.17.0.0/16".parse().unwrap(),
                    internal: false,
                },
                BridgeRules {
                    device: "berth-abc".to_owned(),
                    subnet: "172.18.0.0/16".parse().unwrap(),
                    internal: true,
                },
            ],
            published: vec![
                PublishedPort {
                    host_ip: None,
                    protocol: Protocol::Tcp,
                    host_port: 8080,
                    container: Ipv4Addr::new(172, 17, 0, 2),
                    container_port: 80,
                },
                PublishedPort {
                    host_ip: Some(Ipv4Addr::LOCALHOST),
                    protocol: Protocol::Udp,
                    host_port: 5353,
                    container: Ipv4Addr::new(172, 17, 0, 3),
                    container_port: 53,
                },
            ],
        }
    }

    #[test]
    fn renders_nat_for_open_bridges_and_isolation_for_internal_ones() {
        let script = sample().render();
        assert!(script.starts_with("table ip berth_test\ndelete table ip berth_test\n"));
        assert!(script.contains("ip saddr 172.17.0.0/16 oifname != \"berth0\" masquerade"));
        assert!(!script.contains("ip saddr 172.18.0.0/16 oifname != \"berth-abc\" masquerade"));
        assert!(script.contains("iifname \"berth-abc\" oifname != \"berth-abc\" drop"));
        assert!(script.contains("iifname \"berth0\" oifname { \"berth-abc\" } drop"));
        assert!(script.contains("iifname \"berth-abc\" oifname { \"berth0\" } drop"));
        assert!(script.contains(
            "elements = { 0.0.0.0/0 . tcp . 8080 : 172.17.0.2 . 80, 127.0.0.1 . udp . 5353 : 172.17.0.3 . 53 }"
        ));
    }

    #[test]
    fn an_empty_ruleset_has_an_empty_map() {
        let script = Ruleset::default().render();
        assert!(!script.contains("elements"));
        assert!(script.contains("map published"));
    }

    /// The rendered script is accepted by the real nft, in a network
    /// namespace of the test's own.
    #[test]
    fn nft_accepts_the_rendered_table_twice_in_a_private_namespace() {
        if Command::new("nft").arg("--version").output().is_err() {
            eprintln!("skipped: nft is not installed");
            return;
        }
        std::thread::spawn(|| {
            nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
            sample().apply().unwrap();
            // Replacing works on an existing table, and the result holds.
            sample().apply().unwrap();
            let listing = Command::new("nft")
                .args(["list", "table", "ip", "berth_test"])
                .output()
                .unwrap();
            let text = String::from_utf8(listing.stdout).unwrap();
            assert!(
                text.contains("127.0.0.1 . udp . 5353 : 172.17.0.3 . 53"),
                "{text}"
            );
            remove_table("berth_test").unwrap();
            remove_table("berth_test").unwrap();
            let error = Ruleset {
                table: "berth_test".to_owned(),
                bridges: vec![BridgeRules {
                    device: "bad\"name".to_owned(),
                    subnet: "10.0.0.0/8".parse().unwrap(),
                    internal: false,
                }],
                published: Vec::new(),
            }
            .apply()
            .unwrap_err();
            assert!(error.to_string().starts_with("nft refused berth's rules: "));
        })
        .join()
        .unwrap();
    }
}
