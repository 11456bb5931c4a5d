//! `network create`.

use std::net::IpAddr;

use berth_engine::networks::{create_network, NetworkCreate};
use berth_engine::Engine;
use clap::Args;

use super::key_values;

/// The flags berth supports of docker's; the others (`--ipv6`,
/// `--ip-range`, `--aux-address`, `--ipam-*`, `--scope`, swarm's) are
/// refused by clap as unknown.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Enable manual container attachment
    #[arg(long)]
    pub attachable: bool,
    /// Driver to manage the Network
    #[arg(short, long, default_value = "bridge", value_name = "string")]
    pub driver: String,
    /// IPv4 or IPv6 Gateway for the master subnet
    #[arg(long = "gateway", value_name = "strings", value_delimiter = ',')]
    pub gateways: Vec<String>,
    /// Restrict external access to the network
    #[arg(long)]
    pub internal: bool,
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
    let (subnet, gateway) = address_range(&args.subnets, &args.gateways)?;
    let request = NetworkCreate {
        name: args.name.clone(),
        driver: args.driver.clone(),
        subnet,
        gateway,
        internal: args.internal,
        attachable: args.attachable,
        labels: key_values(&args.labels),
        options: key_values(&args.options),
    };
    let (store, kernel) = engine.network_parts();
    let id = create_network(store, kernel, &request)?;
    println!("{id}");
    Ok(0)
}

/// The docker CLI's own checks of `--subnet` and `--gateway`
/// (`consolidateIpam` in `cli/command/network/create.go`), in its words;
/// the engine validates the values themselves. berth networks have one
/// IPv4 range.
fn address_range(
    subnets: &[String],
    gateways: &[String],
) -> anyhow::Result<(Option<String>, Option<String>)> {
    anyhow::ensure!(
        subnets.len() >= gateways.len(),
        "every ip-range or gateway must have a corresponding subnet"
    );
    anyhow::ensure!(
        subnets.len() <= 1,
        "berth networks have one subnet; got {}",
        subnets.join(", ")
    );
    let subnet = subnets.first().cloned();
    let gateway = gateways.first().cloned();
    if let (Some(subnet), Some(gateway)) = (&subnet, &gateway) {
        if contains(subnet, gateway) == Some(false) {
            anyhow::bail!("no matching subnet for gateway {gateway}");
        }
    }
    Ok((subnet, gateway))
}

/// Whether `address` lies in the CIDR `subnet`; None when either does not
/// parse (the engine then reports the bad value).
fn contains(subnet: &str, address: &str) -> Option<bool> {
    let (base, prefix) = subnet.split_once('/')?;
    let base: IpAddr = base.parse().ok()?;
    let prefix: u32 = prefix.parse().ok()?;
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
        assert_eq!(
            address_range(&[], &strings(&["10.1.1.1"]))
                .unwrap_err()
                .to_string(),
            "every ip-range or gateway must have a corresponding subnet"
        );
        assert_eq!(
            address_range(&strings(&["10.213.9.0/24"]), &strings(&["10.213.8.1"]))
                .unwrap_err()
                .to_string(),
            "no matching subnet for gateway 10.213.8.1"
        );
        assert_eq!(
            address_range(&strings(&["10.213.9.0/24"]), &strings(&["10.213.9.254"])).unwrap(),
            (
                Some("10.213.9.0/24".to_owned()),
                Some("10.213.9.254".to_owned())
            )
        );
        assert_eq!(address_range(&[], &[]).unwrap(), (None, None));
    }
}
