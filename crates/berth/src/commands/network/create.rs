//! `network create`.

use std::net::IpAddr;

use berth_engine::networks::{create_network, NetworkCreate};
use berth_engine::Engine;
use clap::Args;

use super::key_values;

/// The flags berth supports of docker's; the others (`--ipv6`, `--scope`,
/// `--config-from`, swarm's) are refused by clap as unknown.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Enable manual container attachment
    #[arg(long)]
    pub attachable: bool,
    /// Auxiliary IPv4 addresses used by Network driver
    #[arg(long = "aux-address", value_name = "map")]
    pub aux_addresses: Vec<String>,
    /// Driver to manage the Network
    #[arg(short, long, default_value = "bridge", value_name = "string")]
    pub driver: String,
    /// IPv4 or IPv6 Gateway for the master subnet
    #[arg(long = "gateway", value_name = "strings", value_delimiter = ',')]
    pub gateways: Vec<String>,
    /// Restrict external access to the network
    #[arg(long)]
    pub internal: bool,
    /// Allocate container ip from a sub-range
    #[arg(long = "ip-range", value_name = "strings", value_delimiter = ',')]
    pub ip_ranges: Vec<String>,
    /// IP Address Management Driver (only "default")
    #[arg(long, default_value = "default", value_name = "string")]
    pub ipam_driver: String,
    /// Set IPAM driver specific options (kept and shown by inspect)
    #[arg(long = "ipam-opt", value_name = "map")]
    pub ipam_options: Vec<String>,
    /// Set metadata on a network
    #[arg(long = "label", value_name = "list")]
    pub labels: Vec<String>,
    /// Set driver specific options
    #[arg(short, long = "opt", value_name = "map")]
    pub options: Vec<String>,
    /// Subnet in CIDR format that represents a network segment
    #[arg(long = "subnet", value_name = "strings", value_delimiter = ',')]
    pub subnets: Vec<String>,
    /// NETWORK
    #[arg(value_name = "NETWORK")]
    pub name: String,
}

pub fn run(engine: &mut Engine, args: &CreateArgs) -> anyhow::Result<i32> {
    let aux_addresses = key_values(&args.aux_addresses);
    let Ipam {
        subnet,
        gateway,
        ip_range,
    } = consolidate_ipam(
        &args.subnets,
        &args.ip_ranges,
        &args.gateways,
        &aux_addresses,
    )?;
    let request = NetworkCreate {
        name: args.name.clone(),
        driver: args.driver.clone(),
        subnet,
        gateway,
        internal: args.internal,
        attachable: args.attachable,
        labels: key_values(&args.labels),
        options: key_values(&args.options),
        ipam_driver: args.ipam_driver.clone(),
        ip_range,
        aux_addresses,
        // The docker CLI sends a map, empty without `--ipam-opt`.
        ipam_options: Some(key_values(&args.ipam_options)),
    };
    let (store, kernel) = engine.network_parts();
    let id = create_network(store, kernel, &request)?;
    println!("{id}");
    Ok(0)
}

/// The subnet, gateway and range of a `network create`.
#[derive(Debug, Default, PartialEq, Eq)]
struct Ipam {
    subnet: Option<String>,
    gateway: Option<String>,
    ip_range: Option<String>,
}

/// The docker CLI's own checks of `--subnet`, `--ip-range`, `--gateway`
/// and `--aux-address` (`consolidateIpam` in
/// `cli/command/network/create.go`), in its words and order; the engine
/// validates the values themselves. berth networks have one IPv4 range.
fn consolidate_ipam(
    subnets: &[String],
    ranges: &[String],
    gateways: &[String],
    aux_addresses: &std::collections::BTreeMap<String, String>,
) -> anyhow::Result<Ipam> {
    anyhow::ensure!(
        subnets.len() >= ranges.len() && subnets.len() >= gateways.len(),
        "every ip-range or gateway must have a corresponding subnet"
    );
    anyhow::ensure!(
        subnets.len() <= 1,
        "berth networks have one subnet; got {}",
        subnets.join(", ")
    );
    let subnet = subnets.first().cloned();
    let ip_range = ranges.first().cloned();
    let gateway = gateways.first().cloned();
    if let (Some(subnet), Some(range)) = (&subnet, &ip_range) {
        // The 20.10 CLI says so of a range that does not parse, too.
        if parse_cidr(range).is_none() || contains(subnet, range) == Some(false) {
            anyhow::bail!("no matching subnet for range {range}");
        }
    }
    if let (Some(subnet), Some(gateway)) = (&subnet, &gateway) {
        if contains(subnet, gateway) == Some(false) {
            anyhow::bail!("no matching subnet for gateway {gateway}");
        }
    }
    for address in aux_addresses.values() {
        let matched = subnet
            .as_deref()
            .is_some_and(|subnet| contains(subnet, address) == Some(true));
        anyhow::ensure!(matched, "no matching subnet for aux-address {address}");
    }
    Ok(Ipam {
        subnet,
        gateway,
        ip_range,
    })
}

/// Whether `address` (or the address of the CIDR `address`) lies in the
/// CIDR `subnet`; None when either does not parse (the engine then
/// reports the bad value).
fn contains(subnet: &str, address: &str) -> Option<bool> {
    let (base, prefix) = parse_cidr(subnet)?;
    let address = address
        .split_once('/')
        .map_or(address, |(address, _)| address);
    let address: IpAddr = address.parse().ok()?;
    let (base, address, bits) = match (base, address) {
        (IpAddr::V4(base), IpAddr::V4(address)) => (
            u128::from(u32::from(base)) << 96,
            u128::from(u32::from(address)) << 96,
            32,
        ),
        (IpAddr::V6(base), IpAddr::V6(address)) => (u128::from(base), u128::from(address), 128),
        _ => return Some(false),
    };
    if prefix > bits {
        return None;
    }
    let mask = u128::MAX.checked_shl(128 - prefix).unwrap_or(0);
    Some(base & mask == address & mask)
}

/// An address and prefix length (`a.b.c.d/n`, `x::/n`), as Go's
/// `net.ParseCIDR` takes them.
fn parse_cidr(text: &str) -> Option<(IpAddr, u32)> {
    let (base, prefix) = text.split_once('/')?;
    let prefix: u32 = prefix.parse().ok()?;
    let base: IpAddr = base.parse().ok()?;
    let bits = if base.is_ipv4() { 32 } else { 128 };
    (prefix <= bits).then_some((base, prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gateways_must_lie_in_the_subnet() {
        assert_eq!(contains("10.213.7.0/24", "10.213.7.1"), Some(true));
        assert_eq!(contains("10.213.7.0/24", "10.213.8.1"), Some(false));
        assert_eq!(contains("10.0.0.0/8", "10.255.255.254"), Some(true));
        assert_eq!(contains("0.0.0.0/0", "192.0.2.1"), Some(true));
        assert_eq!(contains("10.213.7.0/33", "10.213.7.1"), None);
        assert_eq!(contains("nonsense", "10.213.7.1"), None);
        assert_eq!(contains("fd00::/64", "10.213.7.1"), Some(false));
    }

    #[test]
    fn docker_cli_range_checks() {
        let strings = |values: &[&str]| values.iter().map(|v| v.to_string()).collect::<Vec<_>>();
        let none = std::collections::BTreeMap::new();
        let check = |subnets: &[&str], ranges: &[&str], gateways: &[&str], aux: &[(&str, &str)]| {
            let aux = aux
                .iter()
                .map(|(key, value)| (key.to_string(), value.to_string()))
                .collect();
            consolidate_ipam(
                &strings(subnets),
                &strings(ranges),
                &strings(gateways),
                &aux,
            )
        };
        let error = |result: anyhow::Result<Ipam>| result.unwrap_err().to_string();
        assert_eq!(
            error(check(&[], &[], &["10.1.1.1"], &[])),
            "every ip-range or gateway must have a corresponding subnet"
        );
        assert_eq!(
            error(check(&[], &["10.1.1.0/25"], &[], &[])),
            "every ip-range or gateway must have a corresponding subnet"
        );
        assert_eq!(
            error(check(
                &["10.1.1.0/24"],
                &["10.1.1.0/25", "10.1.1.128/25"],
                &[],
                &[]
            )),
            "every ip-range or gateway must have a corresponding subnet"
        );
        assert_eq!(
            error(check(&["10.213.9.0/24"], &[], &["10.213.8.1"], &[])),
            "no matching subnet for gateway 10.213.8.1"
        );
        assert_eq!(
            error(check(&["10.242.0.0/24"], &["10.243.0.0/25"], &[], &[])),
            "no matching subnet for range 10.243.0.0/25"
        );
        assert_eq!(
            error(check(&["10.242.0.0/24"], &["bogus"], &[], &[])),
            "no matching subnet for range bogus"
        );
        for (address, words) in [
            (
                "10.243.0.5",
                "no matching subnet for aux-address 10.243.0.5",
            ),
            ("bogus", "no matching subnet for aux-address bogus"),
            ("", "no matching subnet for aux-address "),
        ] {
            assert_eq!(
                error(check(&["10.242.0.0/24"], &[], &[], &[("a", address)])),
                words
            );
        }
        assert_eq!(
            error(check(&[], &[], &[], &[("a", "10.1.1.5")])),
            "no matching subnet for aux-address 10.1.1.5"
        );
        assert_eq!(
            check(
                &["10.213.9.0/24"],
                &["10.213.9.128/25"],
                &["10.213.9.254"],
                &[("a", "10.213.9.5")]
            )
            .unwrap(),
            Ipam {
                subnet: Some("10.213.9.0/24".to_owned()),
                gateway: Some("10.213.9.254".to_owned()),
                ip_range: Some("10.213.9.128/25".to_owned()),
            }
        );
        assert_eq!(
            consolidate_ipam(&[], &[], &[], &none).unwrap(),
            Ipam::default()
        );
    }
}
