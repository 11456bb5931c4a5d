//! `network create`, `rm`, `prune`, `ls` and `inspect`.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use berth_net::ipam::{choose_subnet, default_pools, Ipv4Net};
use berth_net::kernel::Kernel;
use berth_store::{NetworkStoreError, Store};
use serde_json::{json, Value};

use super::lookup::{all_networks, find_network, network_store_error, taken_subnets};
use super::pools::{check_enable_ipv6_option, check_ipv6_pool, split_pools, IpamPool};
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
    /// `bridge` (the default), or `overlay` in a swarm (realised as a
    /// bridge: the swarm has one node).
    pub driver: String,
    /// `Scope`: empty for the driver's (`local` for bridge, `swarm` for
    /// overlay).
    pub scope: String,
    /// `Ingress`: the swarm's routing-mesh network (overlay, one at most).
    pub ingress: bool,
    /// The IPAM configs (`--subnet` with its `--gateway`, `--ip-range` and
    /// `--aux-address`): at most one IPv4 and one IPv6 (dockerd's bridge).
    pub pools: Vec<IpamPool>,
    /// `EnableIPv6` (`--ipv6`): needs an IPv6 pool.
    pub enable_ipv6: bool,
    pub internal: bool,
    pub attachable: bool,
    pub labels: BTreeMap<String, String>,
    pub options: BTreeMap<String, String>,
    /// Empty or `default`: the only IPAM driver berth has.
    pub ipam_driver: String,
    /// `--ipam-opt`: kept and shown (see [`NetworkRecord::ipam_options`]).
    pub ipam_options: Option<BTreeMap<String, String>>,
}

/// The IPAM settings of a request with a subnet, checked as libnetwork
/// checks them: the gateway (given, else the range's first free address,
/// as the allocator hands it out, else the subnet's first host), the range
/// and the auxiliary addresses, which may take neither the subnet's
/// network or broadcast address, the gateway nor each other's.
fn check_ipam(
    request: &NetworkCreate,
    pool: &IpamPool,
    subnet: Option<Ipv4Net>,
    gateway: Option<Ipv4Addr>,
) -> Result<(Option<Ipv4Net>, Option<Ipv4Addr>), NetworkError> {
    let range = match pool.ip_range.as_deref().filter(|text| !text.is_empty()) {
        None => None,
        Some(text) => {
            let range: Ipv4Net = text.parse().map_err(NetworkError::InvalidAddress)?;
            let subnet = subnet.ok_or(NetworkError::GatewayWithoutSubnet)?;
            if !subnet.holds(&range) {
                return Err(NetworkError::RangeOutsideSubnet {
                    range: text.to_owned(),
                });
            }
            Some(range)
        }
    };
    let Some(subnet) = subnet else {
        return match pool.aux_addresses.values().next() {
            Some(address) => Err(NetworkError::AuxAddressWithoutSubnet {
                address: address.clone(),
            }),
            None => Ok((None, None)),
        };
    };
    let gateway = match (gateway, range) {
        (Some(gateway), _) => gateway,
        (None, Some(range)) => subnet
            .next_free(Some(range), &[])
            .map_err(NetworkError::InvalidAddress)?,
        (None, None) => subnet.first_host(),
    };
    super::pools::check_aux_addresses(&request.name, pool, &subnet, gateway)?;
    Ok((range, Some(gateway)))
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
    if !matches!(driver, "bridge" | "overlay") {
        return Err(NetworkError::UnsupportedDriver {
            driver: driver.to_owned(),
        }
        .into());
    }
    if driver == "overlay" && !crate::swarm::is_manager(store.root()) {
        return Err(NetworkError::NotSwarmManager.into());
    }
    check_scope(driver, &request.scope)?;
    if request.ingress && driver != "overlay" {
        return Err(NetworkError::IngressNotOverlay.into());
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
    check_enable_ipv6_option(&request.options)?;
    let (pool, ipv6_pool) = split_pools(&request.pools)?;
    let requested_subnet: Option<Ipv4Net> = pool
        .subnet
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(NetworkError::InvalidAddress)?;
    let requested_gateway: Option<Ipv4Addr> = pool
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
            return Err(NetworkError::GatewayOutsideSubnet {
                gateway: gateway.into(),
                subnet: subnet.to_string(),
            }
            .into());
        }
    }
    if !matches!(request.ipam_driver.as_str(), "" | "default") {
        return Err(NetworkError::UnsupportedIpamDriver {
            driver: request.ipam_driver.clone(),
        }
        .into());
    }
    let (range, configured_gateway) =
        check_ipam(request, &pool, requested_subnet, requested_gateway)?;
    let ipv6 = ipv6_pool
        .as_ref()
        .map(|pool| check_ipv6_pool(request, pool))
        .transpose()?;
    if request.enable_ipv6 && ipv6.is_none() {
        return Err(NetworkError::NoIpv6Pool.into());
    }
    let existing = all_networks(store, kernel)?;
    if request.ingress {
        if let Some(ingress) = existing.iter().find(|network| network.record.ingress) {
            return Err(NetworkError::IngressExists {
                id: ingress.id.clone(),
            }
            .into());
        }
    }
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
            if let Some((ipv6_subnet, _)) = ipv6.as_ref().filter(|_| request.enable_ipv6) {
                let overlaps = existing
                    .iter()
                    .filter_map(|row| Network::from_row(row).ok())
                    .filter_map(|network| network.ipv6_subnet())
                    .any(|used| used.overlaps(ipv6_subnet));
                if overlaps {
                    return Err("Pool overlaps with other one on this address space".to_owned());
                }
            }
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
            let gateway = configured_gateway.unwrap_or_else(|| subnet.first_host());
            let network = Network {
                id: id.clone(),
                name: request.name.clone(),
                created: now(),
                record: NetworkRecord {
                    driver: driver.to_owned(),
                    ingress: request.ingress,
                    subnet: subnet.to_string(),
                    gateway: gateway.to_string(),
                    device: device.clone(),
                    internal: request.internal,
                    attachable: request.attachable,
                    labels: request.labels.clone(),
                    options: request.options.clone(),
                    subnet_configured: requested_subnet.is_some(),
                    gateway_chosen: requested_subnet.is_some() && requested_gateway.is_none(),
                    predefined: false,
                    ip_range: range.and(pool.ip_range.clone()).unwrap_or_default(),
                    aux_addresses: pool.aux_addresses.clone(),
                    ipam_options: request.ipam_options.clone(),
                    enable_ipv6: request.enable_ipv6,
                    ipv6: ipv6.as_ref().map(|(_, pool)| pool.clone()),
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
            .ensure_bridge(&device, gateway, subnet, network.bridge_ipv6())
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

/// Docker's scope rules as far as berth has them: `local` (or none) for
/// bridge, `swarm` (or none) for overlay; `global` needs a global-scope
/// driver, which berth has not.
fn check_scope(driver: &str, scope: &str) -> Result<(), NetworkError> {
    match (driver, scope) {
        (_, "") | ("bridge", "local") | ("overlay", "swarm") => Ok(()),
        ("overlay", "local") => Err(NetworkError::ScopeDowngrade {
            driver: driver.to_owned(),
        }),
        (_, "swarm" | "global") => Err(NetworkError::UnsupportedScope {
            driver: driver.to_owned(),
            scope: scope.to_owned(),
        }),
        _ => Err(NetworkError::InvalidScope {
            scope: scope.to_owned(),
        }),
    }
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
                    "IPv6Address": if endpoint.record.ipv6_address.is_empty() {
                        String::new()
                    } else {
                        format!(
                            "{}/{}",
                            endpoint.record.ipv6_address, endpoint.record.ipv6_prefix_len
                        )
                    },
                }),
            )
        })
        .collect();
    let record = &network.record;
    // Docker's order and omissions (libnetwork `IpamConf`, omitempty).
    let ipam_config = if record.subnet.is_empty() {
        json!([])
    } else {
        let mut config = serde_json::Map::new();
        config.insert("Subnet".to_owned(), json!(record.subnet));
        if !record.ip_range.is_empty() {
            config.insert("IPRange".to_owned(), json!(record.ip_range));
        }
        // As dockerd: a gateway the allocator chose for a given subnet is
        // not shown; an automatic subnet's is.
        if !record.gateway_chosen {
            config.insert("Gateway".to_owned(), json!(record.gateway));
        }
        if !record.aux_addresses.is_empty() {
            config.insert("AuxiliaryAddresses".to_owned(), json!(record.aux_addresses));
        }
        let mut configs = vec![Value::Object(config)];
        if let Some(pool) = &record.ipv6 {
            let mut config = serde_json::Map::new();
            config.insert("Subnet".to_owned(), json!(pool.subnet));
            if !pool.ip_range.is_empty() {
                config.insert("IPRange".to_owned(), json!(pool.ip_range));
            }
            // dockerd shows a pool's gateway as given: none when the
            // allocator chose it.
            if !pool.gateway.is_empty() {
                config.insert("Gateway".to_owned(), json!(pool.gateway));
            }
            if !pool.aux_addresses.is_empty() {
                config.insert("AuxiliaryAddresses".to_owned(), json!(pool.aux_addresses));
            }
            configs.push(Value::Object(config));
        }
        Value::Array(configs)
    };
    json!({
        "Name": network.name,
        "Id": network.id,
        "Created": network.created,
        "Scope": network.scope(),
        "Driver": record.driver,
        "EnableIPv6": record.enable_ipv6,
        "IPAM": {
            "Driver": "default",
            "Options": record.ipam_options,
            "Config": ipam_config,
        },
        "Internal": record.internal,
        "Attachable": record.attachable,
        "Ingress": record.ingress,
        "ConfigFrom": { "Network": "" },
        "ConfigOnly": false,
        "Containers": containers,
        "Options": record.options,
        "Labels": record.labels,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use berth_net::kernel::RecordingKernel;

    /// A request on 10.219.77.0/24 (no other test uses it).
    fn request(name: &str) -> NetworkCreate {
        NetworkCreate {
            name: name.to_owned(),
            pools: vec![IpamPool {
                subnet: Some("10.219.77.0/24".to_owned()),
                ..IpamPool::default()
            }],
            ..NetworkCreate::default()
        }
    }

    /// Docker 20.10 here: `--subnet 10.241.0.0/24 --ip-range
    /// 10.241.0.128/25 --aux-address host1=10.241.0.129 --aux-address
    /// h2=10.241.0.5 --ipam-opt foo=bar` shows the range as given, the
    /// addresses, the options; the bridge takes the range's first address.
    #[test]
    fn ranges_aux_addresses_and_ipam_options_are_kept_and_shown() {
        let root = tempfile::tempdir().unwrap();
        let mut store = Store::open(root.path()).unwrap();
        let mut kernel = RecordingKernel::default();
        let mut create = request("ranged");
        create.pools[0].ip_range = Some("10.219.77.128/25".to_owned());
        create.pools[0].aux_addresses = [("host1", "10.219.77.128"), ("h2", "10.219.77.5")]
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value.to_owned()))
            .collect();
        // The gateway takes the range's first address before the auxiliary
        // addresses are reserved (libnetwork's order): one there is in use.
        let refused = create_network(&mut store, &mut kernel, &create).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "failed to allocate secondary ip address (host1:10.219.77.128): Address already in use"
        );
        create.pools[0]
            .aux_addresses
            .insert("host1".to_owned(), "10.219.77.129".to_owned());
        create.ipam_options = Some([("foo".to_owned(), "bar".to_owned())].into());
        create_network(&mut store, &mut kernel, &create).unwrap();
        let network = find_network(&mut store, &mut kernel, "ranged").unwrap();
        let json = network_json(&store, &network);
        assert_eq!(
            json["IPAM"],
            json!({
                "Driver": "default",
                "Options": { "foo": "bar" },
                "Config": [{
                    "Subnet": "10.219.77.0/24",
                    "IPRange": "10.219.77.128/25",
                    "AuxiliaryAddresses": { "h2": "10.219.77.5", "host1": "10.219.77.129" },
                }],
            })
        );
        let order: Vec<&String> = json["IPAM"]["Config"][0]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(order, ["Subnet", "IPRange", "AuxiliaryAddresses"]);
        assert_eq!(
            network.reserved_addresses(),
            [
                "10.219.77.128".parse::<Ipv4Addr>().unwrap(),
                "10.219.77.5".parse().unwrap(),
                "10.219.77.129".parse().unwrap()
            ]
        );
        remove_network(&mut store, &mut kernel, "ranged").unwrap();

        // No options asked (an API request without them): inspect's null.
        create_network(&mut store, &mut kernel, &request("plain")).unwrap();
        let network = find_network(&mut store, &mut kernel, "plain").unwrap();
        let json = network_json(&store, &network);
        assert_eq!(json["IPAM"]["Options"], Value::Null);
        assert_eq!(
            json["IPAM"]["Config"],
            // The gateway the allocator chose is not shown (dockerd's).
            json!([{ "Subnet": "10.219.77.0/24" }])
        );
        remove_network(&mut store, &mut kernel, "plain").unwrap();
    }

    #[test]
    fn bad_ranges_and_aux_addresses_are_refused_in_dockers_words_and_leave_nothing() {
        let root = tempfile::tempdir().unwrap();
        let mut store = Store::open(root.path()).unwrap();
        let mut kernel = RecordingKernel::default();
        let with = |range: Option<&str>, aux: &[(&str, &str)], gateway: Option<&str>| {
            let mut create = request("bad");
            create.pools[0].ip_range = range.map(str::to_owned);
            create.pools[0].gateway = gateway.map(str::to_owned);
            create.pools[0].aux_addresses = aux
                .iter()
                .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
                .collect();
            create
        };
        let cases = [
            (
                with(Some("bogus"), &[], None),
                "invalid CIDR address: bogus",
            ),
            (
                with(Some("10.219.78.0/25"), &[], None),
                "no matching subnet for range 10.219.78.0/25",
            ),
            (
                with(Some("10.219.76.0/23"), &[], None),
                "no matching subnet for range 10.219.76.0/23",
            ),
            (
                with(None, &[("a", "bogus")], None),
                "non parsable secondary ip address (a:bogus) passed for network bad",
            ),
            (
                with(None, &[("a", "10.219.78.1")], None),
                "auxiliary address: (a:10.219.78.1) must belong to the master pool: 10.219.77.0/24",
            ),
            (
                with(None, &[("a", "10.219.77.1")], None),
                "failed to allocate secondary ip address (a:10.219.77.1): Address already in use",
            ),
            (
                with(None, &[("a", "10.219.77.7")], Some("10.219.77.7")),
                "failed to allocate secondary ip address (a:10.219.77.7): Address already in use",
            ),
            (
                with(None, &[("a", "10.219.77.0")], None),
                "failed to allocate secondary ip address (a:10.219.77.0): Address already in use",
            ),
            (
                with(None, &[("a", "10.219.77.9"), ("b", "10.219.77.9")], None),
                "failed to allocate secondary ip address (b:10.219.77.9): Address already in use",
            ),
        ];
        for (create, words) in cases {
            let error = create_network(&mut store, &mut kernel, &create).unwrap_err();
            assert_eq!(error.to_string(), words);
            assert_eq!(error.kind(), crate::ErrorKind::InvalidArgument, "{words}");
        }
        let mut no_subnet = with(Some("10.219.77.0/25"), &[], None);
        no_subnet.pools[0].subnet = None;
        assert_eq!(
            create_network(&mut store, &mut kernel, &no_subnet)
                .unwrap_err()
                .to_string(),
            "every ip-range or gateway must have a corresponding subnet"
        );
        let mut no_subnet = with(None, &[("a", "10.219.77.5")], None);
        no_subnet.pools[0].subnet = None;
        assert_eq!(
            create_network(&mut store, &mut kernel, &no_subnet)
                .unwrap_err()
                .to_string(),
            "no matching subnet for aux-address 10.219.77.5"
        );
        let mut driver = request("bad");
        driver.ipam_driver = "dhcp".to_owned();
        assert_eq!(
            create_network(&mut store, &mut kernel, &driver)
                .unwrap_err()
                .to_string(),
            "berth supports the default IPAM driver only; got \"dhcp\""
        );
        assert!(find_network(&mut store, &mut kernel, "bad").is_err());
        assert!(kernel.links.is_empty(), "{:?}", kernel.calls);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod swarm_tests {
    use super::*;
    use berth_net::kernel::RecordingKernel;

    fn overlay(name: &str) -> NetworkCreate {
        NetworkCreate {
            name: name.to_owned(),
            driver: "overlay".to_owned(),
            ..NetworkCreate::default()
        }
    }

    #[test]
    fn overlay_needs_a_swarm_and_scopes_fit_their_driver() {
        let root = tempfile::tempdir().unwrap();
        let mut store = Store::open(root.path()).unwrap();
        let mut kernel = RecordingKernel::default();
        let outside = create_network(&mut store, &mut kernel, &overlay("o")).unwrap_err();
        assert_eq!(outside.kind(), crate::ErrorKind::Unavailable);
        assert!(outside
            .to_string()
            .starts_with("This node is not a swarm manager."));

        let swarm = crate::swarm::SwarmInit::default();
        crate::swarm::init(&mut store, &mut kernel, &swarm).unwrap();
        let mut attachable = overlay("o");
        attachable.attachable = true;
        create_network(&mut store, &mut kernel, &attachable).unwrap();
        let network = find_network(&mut store, &mut kernel, "o").unwrap();
        let json = network_json(&store, &network);
        assert_eq!(
            (
                &json["Driver"],
                &json["Scope"],
                &json["Attachable"],
                &json["Ingress"]
            ),
            (
                &json!("overlay"),
                &json!("swarm"),
                &json!(true),
                &json!(false)
            )
        );

        let cases = [
            (
                ("overlay", "local"),
                "cannot downgrade network scope for overlay networks",
            ),
            (
                ("bridge", "swarm"),
                "berth creates bridge networks with local scope only; got scope \"swarm\"",
            ),
            (
                ("bridge", "nowhere"),
                "invalid network scope \"nowhere\": local, swarm or global",
            ),
        ];
        for ((driver, scope), words) in cases {
            let mut create = overlay("bad");
            create.driver = driver.to_owned();
            create.scope = scope.to_owned();
            let error = create_network(&mut store, &mut kernel, &create).unwrap_err();
            assert_eq!(error.to_string(), words);
        }
        let mut second = overlay("ingress2");
        second.ingress = true;
        let error = create_network(&mut store, &mut kernel, &second).unwrap_err();
        assert_eq!(error.kind(), crate::ErrorKind::Conflict);
        assert!(error.to_string().contains("is already present"), "{error}");
        let mut bridge_ingress = second.clone();
        bridge_ingress.driver = String::new();
        assert_eq!(
            create_network(&mut store, &mut kernel, &bridge_ingress)
                .unwrap_err()
                .to_string(),
            "the ingress network must use the overlay driver"
        );
        // Once the first is gone, another may be made.
        remove_network(&mut store, &mut kernel, "ingress").unwrap();
        create_network(&mut store, &mut kernel, &second).unwrap();
        crate::swarm::leave(&mut store, &mut kernel, true).unwrap();
        assert_eq!(all_networks(&mut store, &mut kernel).unwrap().len(), 3);
        assert!(
            kernel.links.iter().all(|link| !link.starts_with("berth-")),
            "{:?}",
            kernel.links
        );
    }
}
