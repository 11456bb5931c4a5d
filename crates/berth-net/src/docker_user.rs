//! Living next to Docker. A Docker engine with its iptables rules sets the
//! filter FORWARD policy to DROP, and on hosts that pass bridged traffic to
//! iptables (`bridge-nf-call-iptables=1`, which Docker turns on) that drops
//! even the traffic between two containers on one of berth's bridges: a drop
//! in any base chain is final, whatever berth's own table accepts.
//!
//! Docker's answer for other tools is its `DOCKER-USER` chain, evaluated
//! first and left alone by Docker. When that chain exists, berth keeps one
//! ACCEPT rule per direction for each of its bridges there, tagged with a
//! comment naming berth's table, and removes its tagged rules for bridges
//! that are gone. Nothing else in Docker's tables is read or changed; without
//! the chain (no Docker, or Docker without iptables) nothing is done.

use std::process::Command;

pub const CHAIN: &str = "DOCKER-USER";

#[derive(Debug, thiserror::Error)]
#[error("failed to update Docker's {CHAIN} chain: iptables {args}: {message}")]
pub struct DockerUserError {
    args: String,
    message: String,
}

/// One of berth's rules: traffic in (`-i`) or out (`-o`) of a bridge.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Rule {
    direction: &'static str,
    device: String,
}

impl Rule {
    fn arguments(&self, tag: &str) -> Vec<String> {
        [
            self.direction,
            &self.device,
            "-m",
            "comment",
            "--comment",
            tag,
            "-j",
            "ACCEPT",
        ]
        .iter()
        .map(|part| (*part).to_owned())
        .collect()
    }
}

/// Makes berth's rules in DOCKER-USER (tagged `tag`) exactly one ACCEPT
/// per direction for each of `bridges`. Returns false when the chain does
/// not exist (nothing to do).
pub fn sync_docker_user(tag: &str, bridges: &[String]) -> Result<bool, DockerUserError> {
    let Some(listing) = list_chain() else {
        return Ok(false);
    };
    let present = tagged_rules(&listing, tag);
    let wanted: Vec<Rule> = bridges
        .iter()
        .flat_map(|device| {
            ["-i", "-o"].map(|direction| Rule {
                direction,
                device: device.clone(),
            })
        })
        .collect();
    for stale in present.iter().filter(|rule| !wanted.contains(rule)) {
        iptables(&[&["-w", "-D", CHAIN][..], &as_str(&stale.arguments(tag))].concat())?;
    }
    for missing in wanted.iter().filter(|rule| !present.contains(rule)) {
        iptables(&[&["-w", "-I", CHAIN][..], &as_str(&missing.arguments(tag))].concat())?;
    }
    Ok(true)
}

fn as_str(parts: &[String]) -> Vec<&str> {
    parts.iter().map(String::as_str).collect()
}

/// `iptables -S DOCKER-USER`, or None when there is no such chain (or no
/// iptables at all). Asked of nft first: iptables-nft creates its `filter`
/// table as a side effect of any command, even a listing, and berth must
/// not leave tables of others' behind. (A Docker on iptables-legacy keeps
/// its chain outside nftables and is not seen; see docs/ARCHITECTURE.md.)
fn list_chain() -> Option<String> {
    let exists = Command::new("nft")
        .args(["list", "chain", "ip", "filter", CHAIN])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !exists {
        return None;
    }
    let output = Command::new("iptables")
        .args(["-w", "-S", CHAIN])
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// berth's rules in an `iptables -S` listing: `-A DOCKER-USER -i DEV -m
/// comment --comment TAG -j ACCEPT`.
fn tagged_rules(listing: &str, tag: &str) -> Vec<Rule> {
    listing
        .lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let comment = words
                .windows(2)
                .find(|pair| pair[0] == "--comment")
                .map(|pair| pair[1].trim_matches('"'))?;
            if comment != tag {
                return None;
            }
            let (direction, device) = words
                .windows(2)
                .find(|pair| pair[0] == "-i" || pair[0] == "-o")
                .map(|pair| (if pair[0] == "-i" { "-i" } else { "-o" }, pair[1]))?;
            Some(Rule {
                direction,
                device: device.to_owned(),
            })
        })
        .collect()
}

fn iptables(args: &[&str]) -> Result<(), DockerUserError> {
    let failed = |message: String| DockerUserError {
        args: args.join(" "),
        message,
    };
    let output = Command::new("iptables")
        .args(args)
        .output()
        .map_err(|error| failed(error.to_string()))?;
    if output.status.success() {
        return Ok(());
    }
    Err(failed(
        String::from_utf8_lossy(&output.stderr).trim().to_owned(),
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_only_its_own_tagged_rules() {
        let listing = "-N DOCKER-USER\n\
             -A DOCKER-USER -i berth0 -m comment --comment berth -j ACCEPT\n\
             -A DOCKER-USER -o berth0 -m comment --comment \"berth\" -j ACCEPT\n\
             -A DOCKER-USER -i berth1 -m comment --comment berth_other -j ACCEPT\n\
             -A DOCKER-USER -i eth9 -j DROP\n\
             -A DOCKER-USER -j RETURN\n";
        let rules = tagged_rules(listing, "berth");
        assert_eq!(
            rules,
            [
                Rule {
                    direction: "-i",
                    device: "berth0".to_owned()
                },
                Rule {
                    direction: "-o",
                    device: "berth0".to_owned()
                },
            ]
        );
    }

    /// Against the real iptables, in a network namespace of the test's own
    /// with a DOCKER-USER chain made the way Docker makes it.
    #[test]
    fn keeps_one_rule_per_direction_and_bridge_and_leaves_the_rest() {
        if Command::new("iptables").arg("--version").output().is_err() {
            eprintln!("skipped: iptables is not installed");
            return;
        }
        std::thread::spawn(|| {
            nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
            // No chain: nothing to do.
            assert!(!sync_docker_user("berth_t", &["bra".to_owned()]).unwrap());
            iptables(&["-w", "-N", CHAIN]).unwrap();
            iptables(&["-w", "-A", CHAIN, "-j", "RETURN"]).unwrap();
            iptables(&["-w", "-I", CHAIN, "-i", "eth9", "-j", "DROP"]).unwrap();
            let bridges = ["bra".to_owned(), "brb".to_owned()];
            assert!(sync_docker_user("berth_t", &bridges).unwrap());
            assert!(sync_docker_user("berth_t", &bridges).unwrap());
            let listing = list_chain().unwrap();
            assert_eq!(tagged_rules(&listing, "berth_t").len(), 4, "{listing}");
            // The bridge that went loses its rules; the user's stay.
            assert!(sync_docker_user("berth_t", &bridges[..1]).unwrap());
            let listing = list_chain().unwrap();
            assert_eq!(tagged_rules(&listing, "berth_t").len(), 2, "{listing}");
            assert!(!listing.contains("brb"), "{listing}");
            assert!(
                listing.contains("-A DOCKER-USER -i eth9 -j DROP"),
                "{listing}"
            );
            assert!(listing.contains("-A DOCKER-USER -j RETURN"), "{listing}");
            // berth's rules come before Docker's RETURN.
            let first_berth = listing.find("berth_t").unwrap();
            assert!(first_berth < listing.find("-j RETURN").unwrap());
            // Tear down what this namespace made.
            iptables(&["-w", "-F", CHAIN]).unwrap();
            iptables(&["-w", "-X", CHAIN]).unwrap();
        })
        .join()
        .unwrap();
    }
}
