//! Finding networks, and making the predefined `bridge`, `host` and `none`
//! the first time anything asks (as store rows: the default bridge's device
//! is made by the first connect, see `host`).

use berth_net::instance::{lock_host_networks, Instance};
use berth_net::ipam::{choose_subnet, default_pools, Ipv4Net};
use berth_net::kernel::Kernel;
use berth_store::{NetworkStoreError, Store};

use super::record::{Network, NetworkRecord};
use super::NetworkError;
use crate::containers::names::new_id;
use crate::containers::state::now;
use crate::EngineError;

/// Every network, the predefined ones made first if missing (and a
/// removal of the root's host networks that a killed process left half
/// done finished).
pub fn all_networks(
    store: &mut Store,
    kernel: &mut dyn Kernel,
) -> Result<Vec<Network>, EngineError> {
    super::host::finish_interrupted_release(store, kernel);
    ensure_predefined(store, kernel)?;
    let rows = store.networks()?;
    let networks = rows.iter().map(Network::from_row).collect::<Result<_, _>>();
    Ok(networks?)
}

/// Docker's lookup order: full id, exact name, then a unique id prefix.
pub fn find_network(
    store: &mut Store,
    kernel: &mut dyn Kernel,
    text: &str,
) -> Result<Network, EngineError> {
    let networks = all_networks(store, kernel)?;
    if let Some(network) = networks.iter().find(|network| network.id == text) {
        return Ok(network.clone());
    }
    if let Some(network) = networks.iter().find(|network| network.name == text) {
        return Ok(network.clone());
    }
    let matches: Vec<&Network> = networks
        .iter()
        .filter(|network| !text.is_empty() && network.id.starts_with(text))
        .collect();
    match matches.as_slice() {
        [network] => Ok((*network).clone()),
        [] => Err(NetworkError::NotFound(text.to_owned()).into()),
        _ => Err(NetworkError::Ambiguous {
            text: text.to_owned(),
            count: matches.len(),
        }
        .into()),
    }
}

/// Subnets berth's networks already use.
pub fn taken_subnets(networks: &[berth_store::NetworkRow]) -> Vec<Ipv4Net> {
    networks
        .iter()
        .filter_map(|row| Network::from_row(row).ok())
        .filter_map(|network| network.subnet())
        .collect()
}

fn ensure_predefined(store: &mut Store, kernel: &mut dyn Kernel) -> Result<(), EngineError> {
    if store.network_by_name("none")?.is_some() {
        return Ok(());
    }
    // The default bridge's device: berth's own, never Docker's `docker0`.
    let device = Instance::for_root(store.root()).default_bridge;
    // Chosen under the host-wide lock and recorded there, so no other root
    // takes it while this one's bridge does not exist (see `host`); the
    // first connect checks it again when it makes the bridge.
    let host_lock = lock_host_networks().map_err(NetworkError::LockHost)?;
    let routes = kernel.host_routes().map_err(NetworkError::HostRoutes)?;
    let others = host_lock.ranges_of_other_roots(store.root());
    let bridge = |subnet: Ipv4Net| NetworkRecord {
        driver: "bridge".to_owned(),
        subnet: subnet.to_string(),
        gateway: subnet.first_host().to_string(),
        device: device.clone(),
        predefined: true,
        options: [
            ("com.docker.network.bridge.default_bridge", "true"),
            ("com.docker.network.bridge.enable_icc", "true"),
            ("com.docker.network.bridge.enable_ip_masquerade", "true"),
            ("com.docker.network.bridge.host_binding_ipv4", "0.0.0.0"),
            ("com.docker.network.bridge.name", device.as_str()),
            ("com.docker.network.driver.mtu", "1500"),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect(),
        ..NetworkRecord::default()
    };
    let bip = configured_bip()?;
    for (name, driver) in [("bridge", "bridge"), ("host", "host"), ("none", "null")] {
        let inserted = store.insert_network(|existing| {
            let record = if driver == "bridge" {
                match bip {
                    Some((gateway, subnet)) => NetworkRecord {
                        gateway: gateway.to_string(),
                        ..bridge(subnet)
                    },
                    None => bridge(
                        choose_subnet(
                            default_pools(),
                            &routes,
                            &[taken_subnets(existing), others.clone()].concat(),
                        )
                        .map_err(|error| error.to_string())?,
                    ),
                }
            } else {
                NetworkRecord {
                    driver: driver.to_owned(),
                    predefined: true,
                    ..NetworkRecord::default()
                }
            };
            let network = Network {
                id: new_id(),
                name: name.to_owned(),
                created: now(),
                record,
            };
            network.to_row().map_err(|error| error.to_string())
        });
        match inserted {
            Ok(row) => {
                if let Some(subnet) = Network::from_row(&row)?.subnet() {
                    if let Err(error) = host_lock.reserve_range(store.root(), subnet, None) {
                        tracing::warn!(%error, "failed to record the default bridge's range");
                    }
                }
            }
            Err(NetworkStoreError::NameInUse(_)) => {}
            Err(error) => return Err(network_store_error(error)),
        }
    }
    Ok(())
}

/// berth's config file: `BERTH_CONFIG`, else `/etc/berth/config.json` (the
/// keys of Docker's daemon.json where they overlap).
pub fn config_file() -> std::path::PathBuf {
    std::env::var_os("BERTH_CONFIG")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from("/etc/berth/config.json"))
}

/// Docker's `bip` ("172.26.0.1/16": the default bridge's address and
/// range), read when the default bridge network is first made.
pub(super) fn configured_bip() -> Result<Option<(std::net::Ipv4Addr, Ipv4Net)>, NetworkError> {
    let path = config_file();
    let text = match fs_err::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(NetworkError::ReadConfig { path, source }),
    };
    parse_bip(&path, &text)
}

fn parse_bip(
    path: &std::path::Path,
    text: &str,
) -> Result<Option<(std::net::Ipv4Addr, Ipv4Net)>, NetworkError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|source| NetworkError::ConfigJson {
            path: path.to_owned(),
            source,
        })?;
    let Some(bip) = value.get("bip").and_then(|bip| bip.as_str()) else {
        return Ok(None);
    };
    let invalid = || NetworkError::InvalidBip {
        path: path.to_owned(),
        bip: bip.to_owned(),
    };
    let (address, prefix) = bip.split_once('/').ok_or_else(invalid)?;
    let gateway: std::net::Ipv4Addr = address.parse().map_err(|_| invalid())?;
    let prefix_len: u8 = prefix
        .parse()
        .ok()
        .filter(|bits| *bits <= 30)
        .ok_or_else(invalid)?;
    let subnet = Ipv4Net::new(gateway, prefix_len);
    if gateway == subnet.address() {
        return Err(invalid());
    }
    Ok(Some((gateway, subnet)))
}

pub(crate) fn network_store_error(error: NetworkStoreError) -> EngineError {
    match error {
        NetworkStoreError::Store(error) => EngineError::Store(error),
        other => NetworkError::Refused(other).into(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn bip_gives_the_gateway_and_its_range() {
        let path = std::path::Path::new("/etc/berth/config.json");
        let (gateway, subnet) = parse_bip(path, r#"{"bip": "10.213.99.1/24", "other": 1}"#)
            .unwrap()
            .unwrap();
        assert_eq!(gateway.to_string(), "10.213.99.1");
        assert_eq!(subnet.to_string(), "10.213.99.0/24");
        assert_eq!(parse_bip(path, "{}").unwrap(), None);
        for bad in [
            r#"{"bip": "10.1.2.0/24"}"#,
            r#"{"bip": "10.1.2.1"}"#,
            r#"{"bip": "x/8"}"#,
            "not json",
        ] {
            let error = parse_bip(path, bad).unwrap_err();
            assert_eq!(error.kind(), crate::ErrorKind::InvalidArgument, "{bad}");
        }
        assert_eq!(
            parse_bip(path, r#"{"bip": "10.1.2.1"}"#)
                .unwrap_err()
                .to_string(),
            "/etc/berth/config.json: invalid bip \"10.1.2.1\": an address with its prefix length, like 172.26.0.1/16"
        );
    }
}
