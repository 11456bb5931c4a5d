//! `network create`.

use std::net::IpAddr;

use berth_engine::networks::{create_network, IpamPool, NetworkCreate};
use berth_engine::Engine;
use clap::Args;

use super::key_values;

/// The flags berth supports of docker's; the others (`--config-from`,
/// `--config-only`) are refused by clap as unknown. `-d overlay`,
/// `--scope swarm` and `--ingress` need `berth swarm init` first.
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
    /// Create swarm routing-mesh network
    #[arg(long)]
    pub ingress: bool,
    /// Restrict external access to the network
    #[arg(long)]
    pub internal: bool,
    /// Enable IPv6 networking
    #[arg(long)]
    pub ipv6: bool,
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
    /// Control the network's scope
    #[arg(
        long,
        default_value = "",
        value_name = "string",
        hide_default_value = true
    )]
    pub scope: String,
    /// Subnet in CIDR format that represents a network segment
    #[arg(long = "subnet", value_name = "strings", value_delimiter = ',')]
    pub subnets: Vec<String>,
    /// NETWORK
    #[arg(value_name = "NETWORK")]
    pub name: String,
}

pub fn run(engine: &mut Engine, args: &CreateArgs) -> anyhow::Result<i32> {
    let aux_addresses = key_values(&args.aux_addresses);
    let pools = consolidate_ipam(
        &args.subnets,
        &args.ip_ranges,
        &args.gateways,
        &aux_addresses,
    )?;
    let request = NetworkCreate {
        name: args.name.clone(),
        driver: args.driver.clone(),
        scope: args.scope.clone(),
        ingress: args.ingress,
        pools,
        enable_ipv6: args.ipv6,
        internal: args.internal,
        attachable: args.attachable,
        labels: key_values(&args.labels),
        options: key_values(&args.options),
        ipam_driver: args.ipam_driver.clone(),
        // The docker CLI sends a map, empty without `--ipam-opt`.
        ipam_options: Some(key_values(&args.ipam_options)),
    };
    let (store, kernel) = engine.network_parts();
    let id = create_network(store, kernel, &request)?;
    println!("{id}");
    Ok(0)
}

/// The docker CLI's own checks of `--subnet`, `--ip-range`, `--gateway`
/// and `--aux-address` (`consolidateIpam` in
/// `cli/command/network/create.go`), in its words and order: each range,
/// gateway and auxiliary address goes to the subnet it lies in, one pool
/// per subnet, in the subnets' order; the engine validates the values
/// themselves (and refuses two pools of a family, as dockerd's bridge).
fn consolidate_ipam(
    subnets: &[String],
    ranges: &[String],
    gateways: &[String],
    aux_addresses: &std::collections::BTreeMap<String, String>,
) -> anyhow::Result<Vec<IpamPool>> {
    anyhow::ensure!(
        subnets.len() >= ranges.len() && subnets.len() >= gateways.len(),
        "every ip-range or gateway must have a corresponding subnet"
    );
    for (index, subnet) in subnets.iter().enumerate() {
        for earlier in &subnets[..index] {
            let overlap =
                contains(earlier, subnet) == Some(true) || contains(subnet, earlier) == Some(true);
            anyhow::ensure!(
                !overlap,
                "multiple overlapping subnet configuration is not supported"
            );
        }
    }
    let mut pools: Vec<IpamPool> = subnets
        .iter()
        .map(|subnet| IpamPool {
            subnet: Some(subnet.clone()),
            ..IpamPool::default()
        })
        .collect();
    for range in ranges {
        // The 20.10 CLI says so of a range that does not parse, too.
        let pool = pools
            .iter_mut()
            .find(|pool| contains(pool.subnet.as_deref().unwrap_or_default(), range) == Some(true))
            .ok_or_else(|| anyhow::anyhow!("no matching subnet for range {range}"))?;
        if let Some(earlier) = &pool.ip_range {
            anyhow::bail!(
                "cannot configure multiple ranges ({range}, {earlier}) on the same subnet ({})",
                pool.subnet.as_deref().unwrap_or_default()
            );
        }
        pool.ip_range = Some(range.clone());
    }
    for gateway in gateways {
        let fits = |pool: &IpamPool| contains(pool.subnet.as_deref().unwrap_or_default(), gateway);
        // A gateway or subnet that does not parse goes to the first
        // subnet, whose check in the engine names the bad value.
        let index = match pools.iter().position(|pool| fits(pool) == Some(true)) {
            Some(index) => index,
            None if pools.iter().all(|pool| fits(pool) == Some(false)) => {
                anyhow::bail!("no matching subnet for gateway {gateway}")
            }
            None => 0,
        };
        let pool = &mut pools[index];
        if let Some(earlier) = &pool.gateway {
            anyhow::bail!(
                "cannot configure multiple gateways ({gateway}, {earlier}) for the same subnet ({})",
                pool.subnet.as_deref().unwrap_or_default()
            );
        }
        pool.gateway = Some(gateway.clone());
    }
    for (name, address) in aux_addresses {
        let pool = pools
            .iter_mut()
            .find(|pool| {
                contains(pool.subnet.as_deref().unwrap_or_default(), address) == Some(true)
            })
            .ok_or_else(|| anyhow::anyhow!("no matching subnet for aux-address {address}"))?;
        pool.aux_addresses.insert(name.clone(), address.clone());
    }
    Ok(pools)
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
        let error = |result: anyhow::Result<Vec<IpamPool>>| result.unwrap_err().to_string();
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
            [IpamPool {
                subnet: Some("10.213.9.0/24".to_owned()),
                gateway: Some("10.213.9.254".to_owned()),
                ip_range: Some("10.213.9.128/25".to_owned()),
                aux_addresses: [("a".to_owned(), "10.213.9.5".to_owned())].into(),
            }]
        );
        // Docker 20.10's CLI: each value to the subnet of its family.
        let pools = check(
            &["10.213.9.0/24", "fd77:3::5/64"],
            &["fd77:3::/80"],
            &["fd77:3::9", "10.213.9.9"],
            &[("a", "fd77:3::7")],
        )
        .unwrap();
        assert_eq!(pools[0].gateway.as_deref(), Some("10.213.9.9"));
        assert_eq!(pools[0].ip_range, None);
        assert_eq!(pools[1].subnet.as_deref(), Some("fd77:3::5/64"));
        assert_eq!(pools[1].gateway.as_deref(), Some("fd77:3::9"));
        assert_eq!(pools[1].ip_range.as_deref(), Some("fd77:3::/80"));
        assert_eq!(pools[1].aux_addresses["a"], "fd77:3::7");
        assert_eq!(
            error(check(&["fd77:1::/64", "fd77:1:0:0:1::/80"], &[], &[], &[])),
            "multiple overlapping subnet configuration is not supported"
        );
        assert_eq!(
            error(check(&["fd77:1::/64"], &[], &["fd77:2::1"], &[])),
            "no matching subnet for gateway fd77:2::1"
        );
        assert_eq!(
            error(check(
                &["10.1.0.0/24", "10.2.0.0/24"],
                &[],
                &["10.1.0.1", "10.1.0.2"],
                &[]
            )),
            "cannot configure multiple gateways (10.1.0.2, 10.1.0.1) for the same subnet (10.1.0.0/24)"
        );
        // Two subnets of one family pass here; the engine refuses them.
        assert_eq!(
            check(&["10.1.0.0/24", "10.2.0.0/24"], &[], &[], &[])
                .unwrap()
                .len(),
            2
        );
        assert_eq!(consolidate_ipam(&[], &[], &[], &none).unwrap(), []);
    }
}
