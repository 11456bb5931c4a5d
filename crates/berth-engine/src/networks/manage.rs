//! `network create`, `rm`, `prune`, `ls` and `inspect`.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use berth_net::ipam::{choose_subnet, default_pools, Ipv4Net};
use berth_net::kernel::Kernel;
use berth_store::{NetworkStoreError, Store};
use serde_json::{json, Value};

use super::lookup::{all_networks, find_network, network_store_error, taken_subnets};
use super::record::{Endpoint, Network, NetworkRecord};
use super::rules::sync_rules;
use super::NetworkError;
use crate::containers::names::new_id;
use crate::containers::state::now;
use crate::EngineError;

/// `network create` options.
#[derive(Clone, Debug, Default)]
pub struct NetworkCreate {
    pub name: String,
    /// Only `bridge` (the default) is supported.
    pub driver: String,
    pub subnet: Option<String>,
    pub gateway: Option<String>,
    pub internal: bool,
    pub attachable: bool,
    pub labels: BTreeMap<String, String>,
    pub options: BTreeMap<String, String>,
}

/// Creates a bridge network and its bridge device; returns the id.
pub fn create_network(
    store: &mut Store,
    kernel: &mut dyn Kernel,
    request: &NetworkCreate,
) -> Result<String, EngineError> {
    let driver = if request.driver.is_empty() {
        "bridge"
    } else {
        request.driver.as_str()
    };
    if driver != "bridge" {
        return Err(NetworkError::UnsupportedDriver {
            driver: driver.to_owned(),
        }
        .into());
    }
    if matches!(
        request.name.as_str(),
        "bridge" | "host" | "none" | "default"
    ) {
        return Err(NetworkError::PredefinedName {
            name: request.name.clone(),
        }
        .into());
    }
    // dockerd 20.10 takes any name but an empty one ("test 01", "_x", "a/b");
    // the bridge's device name is berth's own, not derived from it.
    if request.name.is_empty() {
        return Err(NetworkError::InvalidName {
            name: request.name.clone(),
        }
        .into());
    }
    let requested_subnet: Option<Ipv4Net> = request
        .subnet
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(NetworkError::InvalidAddress)?;
    let requested_gateway: Option<Ipv4Addr> = request
        .gateway
        .as_deref()
        .map(berth_net::ipam::parse_address)
        .transpose()
        .map_err(NetworkError::InvalidAddress)?;
    if requested_gateway.is_some() && requested_subnet.is_none() {
        return Err(NetworkError::GatewayWithoutSubnet.into());
    }
    if let (Some(subnet), Some(gateway)) = (requested_subnet, requested_gateway) {
        if !subnet.contains(gateway) {
            return Err(NetworkError::GatewayOutsideSubnet { gateway, subnet }.into());
        }
    }
    all_networks(store, kernel)?;
    let host_lock = berth_net::instance::lock_host_networks().map_err(NetworkError::LockHost)?;
    let routes = kernel.host_routes().map_err(NetworkError::HostRoutes)?;
    let others = host_lock.ranges_of_other_roots(store.root());
    let id = new_id();
    let device = match request.options.get("com.docker.network.bridge.name") {
        Some(name) if name.is_empty() || name.len() > 15 || name.contains(['/', ' ', ':']) => {
            return Err(NetworkError::InvalidBridgeName { name: name.clone() }.into())
        }
        Some(name) => name.clone(),
        None => format!("berth-{}", &id[..9]),
    };
    let row = store
        .insert_network(|existing| {
            let taken = [taken_subnets(existing), others.clone()].concat();
            let subnet = match requested_subnet {
                Some(subnet) => {
                    if taken.iter().any(|used| used.overlaps(&subnet)) {
                        return Err("Pool overlaps with other one on this address space".to_owned());
                    }
                    subnet
                }
                None => choose_subnet(default_pools(), &routes, &taken)
                    .map_err(|error| error.to_string())?,
            };
            let gateway = requested_gateway.unwrap_or_else(|| subnet.first_host());
            let network = Network {
                id: id.clone(),
                name: request.name.clone(),
                created: now(),
                record: NetworkRecord {
                    driver: "bridge".to_owned(),
                    subnet: subnet.to_string(),
                    gateway: gateway.to_string(),
                    device: device.clone(),
                    internal: request.internal,
                    attachable: request.attachable,
                    labels: request.labels.clone(),
                    options: request.options.clone(),
                    subnet_configured: requested_subnet.is_some(),
                    predefined: false,
                },
            };
            network.to_row().map_err(|error| error.to_string())
        })
        .map_err(network_store_error)?;
    let network = Network::from_row(&row)?;
    if let Some(subnet) = network.subnet() {
        if let Err(error) = host_lock.reserve_range(store.root(), subnet, None) {
            tracing::warn!(%error, "failed to record the network's range");
        }
    }
    let made = match (network.subnet(), network.gateway()) {
        (Some(subnet), Some(gateway)) => kernel
            .ensure_bridge(&device, gateway, subnet)
            .map_err(|source| {
                EngineError::from(NetworkError::CreateBridge {
                    device: device.clone(),
                    source,
                })
            })
            .and_then(|_| sync_rules(store, kernel)),
        _ => Ok(()),
    };
    if let Err(error) = made {
        let _ = store.delete_network(&id);
        let _ = kernel.remove_link(&device);
        let _ = sync_rules(store, kernel);
        return Err(error);
    }
    crate::events::emit_network(store, "create", &id, &network.name, None);
    Ok(id)
}

/// `network rm`: refused for the predefined networks and while containers
/// run on it; removes the bridge and its rules.
pub fn remove_network(
    store: &mut Store,
    kernel: &mut dyn Kernel,
    text: &str,
) -> Result<(), EngineError> {
    let network = find_network(store, kernel, text)?;
    if network.record.predefined {
        return Err(NetworkError::PredefinedRemoval { name: network.name }.into());
    }
    match store.delete_network(&network.id) {
        Ok(_) => {}
        Err(NetworkStoreError::Refused(_)) => {
            return Err(NetworkError::ActiveEndpoints {
                name: network.name,
                id: network.id,
            }
            .into())
        }
        Err(error) => return Err(network_store_error(error)),
    }
    crate::events::emit_network(store, "destroy", &network.id, &network.name, None);
    if let Err(error) = kernel.remove_link(&network.record.device) {
        tracing::warn!(%error, "failed to remove the bridge");
    }
    if let Some(subnet) = network.subnet() {
        let released = berth_net::instance::lock_host_networks()
            .and_then(|lock| lock.release_range(store.root(), subnet));
        if let Err(error) = released {
            tracing::warn!(%error, "failed to forget the network's range");
        }
    }
    // The root's last user network: its default bridge and table go too
    // unless containers run (see `host`).
    if !super::host::release_unused_host_objects(store, kernel)? {
        sync_rules(store, kernel)?;
    }
    Ok(())
}

/// `network prune`: removes every user-defined network no container is on
/// (running, or created with it); returns their names. Then, as Docker
/// cannot (its daemon keeps `docker0`), the root's default bridge, table
/// and `DOCKER-USER` rules when nothing uses them any more: the explicit
/// cleanup after a crash, or before a root is deleted.
pub fn prune_networks(
    store: &mut Store,
    kernel: &mut dyn Kernel,
    in_use: &[String],
) -> Result<Vec<String>, EngineError> {
    let mut removed = Vec::new();
    for network in all_networks(store, kernel)? {
        if network.record.predefined || in_use.contains(&network.id) {
            continue;
        }
        if remove_network(store, kernel, &network.id).is_ok() {
            removed.push(network.name);
        }
    }
    super::host::release_unused_host_objects(store, kernel)?;
    Ok(removed)
}

/// Docker's `network inspect` object. `names` maps container ids to names.
pub fn network_json(store: &Store, network: &Network) -> Value {
    let endpoints: Vec<Endpoint> = store
        .endpoints(Some(&network.id), None)
        .unwrap_or_default()
        .iter()
        .filter_map(Endpoint::from_row)
        .collect();
    let containers: serde_json::Map<String, Value> = endpoints
        .iter()
        .map(|endpoint| {
            (
                endpoint.container_id.clone(),
                json!({
                    "Name": endpoint.record.container_name,
                    "EndpointID": endpoint.record.endpoint_id,
                    "MacAddress": endpoint.record.mac_address,
                    "IPv4Address": format!("{}/{}", endpoint.address, endpoint.record.prefix_len),
                    "IPv6Address": "",
                }),
            )
        })
        .collect();
    let record = &network.record;
    let ipam_config = if record.subnet.is_empty() {
        json!([])
    } else {
        json!([{ "Subnet": record.subnet, "Gateway": record.gateway }])
    };
    json!({
        "Name": network.name,
        "Id": network.id,
        "Created": network.created,
        "Scope": "local",
        "Driver": record.driver,
        "EnableIPv6": false,
        "IPAM": {
            "Driver": "default",
            "Options": if record.predefined { Value::Null } else { json!({}) },
            "Config": ipam_config,
        },
        "Internal": record.internal,
        "Attachable": record.attachable,
        "Ingress": false,
        "ConfigFrom": { "Network": "" },
        "ConfigOnly": false,
        "Containers": containers,
        "Options": record.options,
        "Labels": record.labels,
    })
}
