//! Putting a container on its networks when it starts, and taking it off
//! when it stops: an address from the store, a veth pair into its network
//! namespace, and (for published ports) berth's rules.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::AsFd;

use berth_net::ipam::FamilySubnet;
use berth_net::kernel::{ContainerLink, Kernel};
use berth_store::Store;

use super::lookup::network_store_error;
use super::record::{
    format_mac, mac_for, parse_mac, Endpoint, EndpointRecord, Network, NetworkRequest,
    PublishedPort,
};
use super::rules::sync_rules;
use super::NetworkError;
use crate::containers::names::new_id;
use crate::EngineError;

/// Who is being connected: enough of the container record for messages,
/// DNS names and the endpoint rows.
pub struct ContainerIdentity<'a> {
    pub id: &'a str,
    pub name: &'a str,
}

/// The name of the container's end of its veth on the network at
/// `position` among its networks (`eth0` for the first, as Docker's).
pub fn container_device(position: usize) -> String {
    format!("eth{position}")
}

/// Connects the container whose first process is `pid` (its namespaces
/// made, its program not yet started) to each requested network, in order;
/// the first gets the default route and the published `ports`. On failure
/// nothing is left: no address, no veth, no rule.
pub fn connect_container(
    store: &mut Store,
    kernel: &mut dyn Kernel,
    container: &ContainerIdentity<'_>,
    pid: i32,
    requests: &[NetworkRequest],
    ports: &[PublishedPort],
) -> Result<Vec<Endpoint>, EngineError> {
    if requests.is_empty() {
        return Ok(Vec::new());
    }
    let netns =
        fs_err::File::open(format!("/proc/{pid}/ns/net")).map_err(NetworkError::OpenNamespace)?;
    let mut endpoints = Vec::new();
    let mut rules_needed = !ports.is_empty();
    for (index, request) in requests.iter().enumerate() {
        let device = container_device(index);
        let ports = if index == 0 { ports } else { &[] };
        match connect_one(
            store,
            kernel,
            container,
            netns.as_fd(),
            request,
            &device,
            index == 0,
            ports,
        ) {
            Ok((endpoint, bridge_created)) => {
                rules_needed |= bridge_created;
                endpoints.push(endpoint);
            }
            Err(error) => {
                disconnect_container(store, kernel, container.id, None);
                return Err(error);
            }
        }
    }
    if rules_needed {
        if let Err(error) = sync_rules(store, kernel) {
            disconnect_container(store, kernel, container.id, None);
            return Err(error);
        }
    }
    Ok(endpoints)
}

/// Connects one network; true in the second field when its bridge had to
/// be created (its NAT rules must then be applied).
#[allow(clippy::too_many_arguments)] // one caller; the values are unrelated
pub(crate) fn connect_one(
    store: &mut Store,
    kernel: &mut dyn Kernel,
    container: &ContainerIdentity<'_>,
    netns: std::os::fd::BorrowedFd<'_>,
    request: &NetworkRequest,
    container_device: &str,
    default_route: bool,
    ports: &[PublishedPort],
) -> Result<(Endpoint, bool), EngineError> {
    let network = store
        .network(&request.network_id)?
        .map(|row| Network::from_row(&row))
        .transpose()?
        .ok_or_else(|| NetworkError::NotFound(request.name.clone()))?;
    // The bridge, made if missing; `_users` keeps its removal out until the
    // endpoint is stored (see `host`).
    let (network, bridge_created, _users) =
        super::host::bridge_for_connect(store, kernel, network)?;
    let (Some(subnet), Some(gateway)) = (network.subnet(), network.gateway()) else {
        return Err(NetworkError::NoAddressRange {
            network: network.name,
        }
        .into());
    };
    tracing::debug!(network = %network.name, "bridge ready");
    let requested_ip: Option<Ipv4Addr> = if request.ipv4_address.is_empty() {
        None
    } else {
        Some(
            berth_net::ipam::parse_address(&request.ipv4_address)
                .map_err(NetworkError::InvalidAddress)?,
        )
    };
    let requested_ipv6: Option<Ipv6Addr> = if request.ipv6_address.is_empty() {
        None
    } else {
        Some(
            berth_net::ipam::parse_ipv6_address(&request.ipv6_address)
                .map_err(NetworkError::InvalidAddress)?,
        )
    };
    let link_local: Vec<(IpAddr, u8)> = request
        .link_local_ips
        .iter()
        .map(|text| berth_net::ipam::parse_link_local(text))
        .collect::<Result<_, _>>()
        .map_err(NetworkError::InvalidAddress)?;
    // Only a network with `EnableIPv6` gives IPv6 addresses; elsewhere an
    // `--ip6` is kept for inspect and used for nothing, as by dockerd.
    let ipv6 = network.ipv6_subnet().zip(network.ipv6_gateway());
    let requested_mac = if request.mac_address.is_empty() {
        None
    } else {
        Some(parse_mac(&request.mac_address)?)
    };
    let host_device = format!("veth{}", &new_id()[..7]);
    let mut record = EndpointRecord {
        endpoint_id: new_id(),
        container_name: container.name.to_owned(),
        aliases: request.aliases.clone(),
        links: request.links.clone(),
        mac_address: String::new(),
        host_device: host_device.clone(),
        prefix_len: subnet.prefix_len(),
        gateway: gateway.to_string(),
        ipv6_address: String::new(),
        ipv6_prefix_len: 0,
        ipv6_gateway: String::new(),
        ports: ports.to_vec(),
    };
    let mut mac = [0u8; 6];
    // A fixed address may be anywhere in the subnet; the others come from
    // the range (`--ip-range`). Neither takes the gateway or an auxiliary
    // address.
    let range = network.ip_range();
    let reserved = network.reserved_addresses();
    let ipv6_range = network.ipv6_range();
    let reserved_ipv6 = network.reserved_ipv6_addresses();
    let mut ipv6_address = None;
    let address = store
        .add_endpoint_among(&network.id, container.id, |others| {
            let used: Vec<Ipv4Addr> = others
                .iter()
                .filter_map(|row| row.address.parse().ok())
                .chain(reserved.iter().copied())
                .collect();
            let address = match requested_ip {
                Some(address) => subnet
                    .check_requested(address, gateway, &used)
                    .map(|()| address),
                None => subnet.next_free(range, &used),
            }
            .map_err(|error| error.to_string())?;
            if let Some((ipv6_subnet, ipv6_gateway)) = ipv6 {
                let used: Vec<Ipv6Addr> = others
                    .iter()
                    .filter_map(Endpoint::from_row)
                    .filter_map(|endpoint| endpoint.record.ipv6_address.parse().ok())
                    .chain(reserved_ipv6.iter().copied())
                    .collect();
                let address = match requested_ipv6 {
                    Some(address) => ipv6_subnet
                        .check_requested(address, ipv6_gateway, &used)
                        .map(|()| address),
                    None => ipv6_subnet.next_free(ipv6_range, &used),
                }
                .map_err(|error| error.to_string())?;
                record.ipv6_address = address.to_string();
                record.ipv6_prefix_len = ipv6_subnet.prefix_len();
                record.ipv6_gateway = ipv6_gateway.to_string();
                ipv6_address = Some((address, ipv6_subnet.prefix_len()));
            }
            mac = requested_mac.unwrap_or_else(|| mac_for(address));
            record.mac_address = format_mac(mac);
            let json = serde_json::to_string(&record).map_err(|error| error.to_string())?;
            Ok((address.to_string(), json))
        })
        .map_err(network_store_error)?;
    tracing::debug!(%address, "address allocated");
    let address_ip: Ipv4Addr = address.parse().map_err(|_| NetworkError::StoredAddress {
        address: address.clone(),
    })?;
    let link = ContainerLink {
        host_device,
        container_device: container_device.to_owned(),
        bridge: network.record.device.clone(),
        address: address_ip,
        prefix_len: subnet.prefix_len(),
        gateway: default_route.then_some(gateway),
        mac: Some(mac),
        ipv6: ipv6_address,
        ipv6_gateway: ipv6.filter(|_| default_route).map(|(_, gateway)| gateway),
        link_local,
    };
    if let Err(source) = kernel.connect(netns, &link) {
        let _ = store.remove_endpoints(container.id, Some(&network.id));
        let _ = kernel.remove_link(&link.host_device);
        return Err(NetworkError::Connect {
            network: network.name,
            source,
        }
        .into());
    }
    tracing::debug!(device = %link.host_device, "veth connected");
    Ok((
        Endpoint {
            network_id: network.id,
            container_id: container.id.to_owned(),
            address,
            record,
        },
        bridge_created,
    ))
}

/// Takes the container off its networks (one, or all): frees the addresses,
/// deletes the host ends of the veth pairs, and drops its published ports
/// from the rules. Never fails: what it cannot undo it logs, and the next
/// sync repairs the rules.
pub fn disconnect_container(
    store: &Store,
    kernel: &mut dyn Kernel,
    container_id: &str,
    network_id: Option<&str>,
) {
    release(store, kernel, container_id, network_id, true);
}

/// After the container's last process exited and nothing else holds its
/// network namespace: as `disconnect_container`, but the veths are left to
/// the kernel, which deletes them with the namespace, in the background
/// (deleting a link waits for an RCU grace period, ~15 ms here, which would
/// otherwise add to every `run --rm`).
pub fn release_container_endpoints(store: &Store, kernel: &mut dyn Kernel, container_id: &str) {
    release(store, kernel, container_id, None, false);
}

fn release(
    store: &Store,
    kernel: &mut dyn Kernel,
    container_id: &str,
    network_id: Option<&str>,
    delete_links: bool,
) {
    let removed = match store.remove_endpoints(container_id, network_id) {
        Ok(removed) => removed,
        Err(error) => {
            tracing::warn!(%error, "failed to free the container's addresses");
            return;
        }
    };
    let mut had_ports = false;
    for endpoint in removed.iter().filter_map(Endpoint::from_row) {
        had_ports |= !endpoint.record.ports.is_empty();
        if !delete_links {
            continue;
        }
        if let Err(error) = kernel.remove_link(&endpoint.record.host_device) {
            tracing::warn!(%error, device = %endpoint.record.host_device, "failed to remove a veth");
        }
    }
    if had_ports {
        if let Err(error) = sync_rules(store, kernel) {
            tracing::warn!(%error, "failed to drop the container's published ports");
        }
    }
    // The root's bridge and table stay when their last user goes (as Docker keeps docker0):
    // removing them here and making them again on the next run cost every `run --rm` in an
    // otherwise idle root ≈ 85 ms. `network prune` removes them (super::host).
}

/// The container's live endpoints.
pub fn container_endpoints(store: &Store, container_id: &str) -> Vec<Endpoint> {
    store
        .endpoints(None, Some(container_id))
        .map(|rows| rows.iter().filter_map(Endpoint::from_row).collect())
        .unwrap_or_default()
}
