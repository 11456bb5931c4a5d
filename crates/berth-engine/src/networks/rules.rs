//! berth's nftables table, rendered from the store and applied whole.

use std::net::Ipv4Addr;

use berth_net::kernel::Kernel;
use berth_net::nft::{BridgeRules, Protocol, PublishedPort as NftPort, Ruleset};
use berth_store::Store;

use super::record::{Endpoint, Network};
use crate::EngineError;

/// What the table must hold for the networks and endpoints in the store.
pub fn ruleset(store: &Store) -> Result<Ruleset, EngineError> {
    let networks: Vec<Network> = store
        .networks()?
        .iter()
        .filter_map(|row| Network::from_row(row).ok())
        .collect();
    let bridges = networks
        .iter()
        .filter(|network| network.is_bridge())
        .filter_map(|network| {
            Some(BridgeRules {
                device: network.record.device.clone(),
                subnet: network.subnet()?,
                internal: network.record.internal,
            })
        })
        .collect();
    let mut published = Vec::new();
    for endpoint in store
        .endpoints(None, None)?
        .iter()
        .filter_map(Endpoint::from_row)
    {
        let Ok(container) = endpoint.address.parse::<Ipv4Addr>() else {
            continue;
        };
        for port in &endpoint.record.ports {
            let protocol = match port.protocol.as_str() {
                "udp" => Protocol::Udp,
                _ => Protocol::Tcp,
            };
            let host_ip = port
                .host_ip
                .parse::<Ipv4Addr>()
                .ok()
                .filter(|ip| !ip.is_unspecified());
            published.push(NftPort {
                host_ip,
                protocol,
                host_port: port.host_port,
                container,
                container_port: port.container_port,
            });
        }
    }
    Ok(Ruleset {
        table: berth_net::instance::Instance::for_root(store.root()).table,
        bridges,
        published,
    })
}

/// Renders the table from the store and applies it. The lock makes the last
/// process to apply the one that read the latest state. A root with no
/// network user has no table (see `host`): a sync that comes after the
/// removal of its host objects must not bring it back.
pub fn sync_rules(store: &Store, kernel: &mut dyn Kernel) -> Result<(), EngineError> {
    let _lock = store.lock_network_rules()?;
    let rules = ruleset(store)?;
    let applied = if super::host::root_in_use(store)? {
        kernel.apply_rules(&rules)
    } else {
        kernel.remove_rules(&rules.table)
    };
    Ok(applied.map_err(super::NetworkError::ProgramRules)?)
}
