//! The JSON the engine keeps in the store's network and endpoint rows.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use berth_net::ipam::{Ipv4Net, Ipv6Net};
use berth_store::{EndpointRow, NetworkRow};
use serde::{Deserialize, Serialize};

use super::NetworkError;

/// A network as created (`network create`, or one of the predefined three).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkRecord {
    /// `bridge`, `host` or `null`.
    pub driver: String,
    /// CIDR; empty for host and none.
    #[serde(default)]
    pub subnet: String,
    #[serde(default)]
    pub gateway: String,
    /// The bridge device; empty for host and none.
    #[serde(default)]
    pub device: String,
    #[serde(default)]
    pub internal: bool,
    #[serde(default)]
    pub attachable: bool,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub options: BTreeMap<String, String>,
    /// The user gave the subnet (`--subnet`): only then may containers ask
    /// for an address of their own (`--ip`), as in Docker.
    #[serde(default)]
    pub subnet_configured: bool,
    /// The user gave the subnet and not the gateway, which the allocator
    /// chose: dockerd's inspect then shows no `Gateway` in the IPAM config.
    /// Records from before the field load as false (shown).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gateway_chosen: bool,
    /// `bridge`, `host` and `none`: made by berth, never removed.
    #[serde(default)]
    pub predefined: bool,
    /// `--ip-range` (IPAM `IPRange`) as given, inside the subnet: dynamic
    /// addresses come from it alone; a fixed `--ip` may be anywhere in the
    /// subnet. Empty for the whole subnet.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ip_range: String,
    /// `--aux-address NAME=IP` (IPAM `AuxiliaryAddresses`): reserved in
    /// the subnet, never given to a container.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub aux_addresses: BTreeMap<String, String>,
    /// IPAM `Options`: Docker's default IPAM driver reads none of them and
    /// keeps them for inspect. None (inspect's `null`) when the request
    /// had none, as an API request without them; `network create` sends
    /// `{}`. Records from before the field load as None.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipam_options: Option<BTreeMap<String, String>>,
    /// `EnableIPv6`: the bridge has the IPv6 gateway and endpoints get
    /// addresses of the IPv6 pool. Records from before the field load as
    /// false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub enable_ipv6: bool,
    /// The IPv6 IPAM config: kept and shown even without `EnableIPv6`, as
    /// dockerd keeps it (it is then used for nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv6: Option<Ipv6Pool>,
    /// An overlay network that is the swarm's routing mesh (`Ingress`):
    /// at most one; no container may be attached to it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ingress: bool,
}

/// A network's IPv6 IPAM config, as given (`Subnet` with its host bits,
/// as dockerd shows it).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ipv6Pool {
    pub subnet: String,
    /// As given; empty when the allocator chose it (inspect then shows
    /// none, as dockerd).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub gateway: String,
    /// The bridge's IPv6 address: the given gateway, else the range's (or
    /// subnet's) first free address. Set on networks with `EnableIPv6`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub bridge_address: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ip_range: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub aux_addresses: BTreeMap<String, String>,
}

/// A stored network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Network {
    pub id: String,
    pub name: String,
    pub created: String,
    pub record: NetworkRecord,
}

impl Network {
    pub fn from_row(row: &NetworkRow) -> Result<Self, NetworkError> {
        let record =
            serde_json::from_str(&row.record).map_err(|source| NetworkError::CorruptRecord {
                network: row.name.clone(),
                source,
            })?;
        Ok(Self {
            id: row.id.clone(),
            name: row.name.clone(),
            created: row.created.clone(),
            record,
        })
    }

    pub fn to_row(&self) -> Result<NetworkRow, NetworkError> {
        Ok(NetworkRow {
            id: self.id.clone(),
            name: self.name.clone(),
            created: self.created.clone(),
            record: serde_json::to_string(&self.record).map_err(NetworkError::Serialize)?,
        })
    }

    /// A bridge network with an address range (containers get addresses).
    pub fn subnet(&self) -> Option<Ipv4Net> {
        self.record.subnet.parse().ok()
    }

    pub fn gateway(&self) -> Option<Ipv4Addr> {
        self.record.gateway.parse().ok()
    }

    /// The range dynamic addresses come from (`--ip-range`); None for the
    /// whole subnet.
    pub fn ip_range(&self) -> Option<Ipv4Net> {
        self.record.ip_range.parse().ok()
    }

    /// Addresses no endpoint may take: the gateway and the auxiliary
    /// addresses.
    pub fn reserved_addresses(&self) -> Vec<Ipv4Addr> {
        self.gateway()
            .into_iter()
            .chain(
                self.record
                    .aux_addresses
                    .values()
                    .filter_map(|address| address.parse().ok()),
            )
            .collect()
    }

    /// The IPv6 subnet of a network with `EnableIPv6`: its endpoints get
    /// addresses of it.
    pub fn ipv6_subnet(&self) -> Option<Ipv6Net> {
        let pool = self.record.ipv6.as_ref()?;
        self.record
            .enable_ipv6
            .then(|| pool.subnet.parse().ok())
            .flatten()
    }

    /// The bridge's IPv6 address (the endpoints' IPv6 gateway).
    pub fn ipv6_gateway(&self) -> Option<Ipv6Addr> {
        self.ipv6_subnet()?;
        self.record.ipv6.as_ref()?.bridge_address.parse().ok()
    }

    /// The bridge's IPv6 side, for `Kernel::ensure_bridge`.
    pub fn bridge_ipv6(&self) -> berth_net::kernel::BridgeIpv6 {
        Some((self.ipv6_gateway()?, self.ipv6_subnet()?))
    }

    pub fn ipv6_range(&self) -> Option<Ipv6Net> {
        self.record.ipv6.as_ref()?.ip_range.parse().ok()
    }

    /// IPv6 addresses no endpoint may take: the gateway and the auxiliary
    /// addresses.
    pub fn reserved_ipv6_addresses(&self) -> Vec<Ipv6Addr> {
        let aux = self
            .record
            .ipv6
            .iter()
            .flat_map(|pool| pool.aux_addresses.values())
            .filter_map(|address| address.parse().ok());
        self.ipv6_gateway().into_iter().chain(aux).collect()
    }

    /// A network with a bridge device: `bridge`, and `overlay`, which a
    /// single-node swarm realises as a bridge (its one node is the whole
    /// overlay).
    pub fn is_bridge(&self) -> bool {
        matches!(self.record.driver.as_str(), "bridge" | "overlay")
    }

    /// An overlay network: swarm scope, removed by `swarm leave`.
    pub fn is_swarm_scoped(&self) -> bool {
        self.record.driver == "overlay"
    }

    /// Docker's `Scope`.
    pub fn scope(&self) -> &'static str {
        if self.is_swarm_scoped() {
            "swarm"
        } else {
            "local"
        }
    }

    /// Docker's checks of requested addresses (`--ip`, `--ip6`) and
    /// aliases: an IPv6 address needs an IPv6 pool the user gave.
    pub fn check_endpoint_request(
        &self,
        ipv4_address: &str,
        ipv6_address: &str,
        aliases: &[String],
    ) -> Result<(), NetworkError> {
        let fixed = !ipv4_address.is_empty() || !ipv6_address.is_empty();
        if !self.is_user_defined() {
            if fixed {
                return Err(NetworkError::AddressOnPredefined);
            }
            if !aliases.is_empty() {
                return Err(NetworkError::AliasOnPredefined);
            }
        } else if (!ipv4_address.is_empty() && !self.record.subnet_configured)
            || (!ipv6_address.is_empty() && self.record.ipv6.is_none())
        {
            return Err(NetworkError::AddressWithoutSubnet);
        }
        Ok(())
    }

    /// Docker's "user-defined network": not one of the predefined three.
    /// Only these get the embedded DNS, aliases and `--ip`.
    pub fn is_user_defined(&self) -> bool {
        !self.record.predefined
    }
}

/// A container's wish to be on a network, resolved at create (and changed
/// by `network connect` / `disconnect`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkRequest {
    pub network_id: String,
    /// The network's name when the request was made (for messages).
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    /// `--ip`; empty for the next free address.
    #[serde(default)]
    pub ipv4_address: String,
    /// `--ip6`; empty for the next free address (on a network with IPv6).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ipv6_address: String,
    /// `--link-local-ip`: added to the container's interface as given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub link_local_ips: Vec<String>,
    /// `--mac-address`; empty for Docker's address-derived MAC.
    #[serde(default)]
    pub mac_address: String,
    /// The endpoint's links (`NAME:ALIAS`, as given): ALIAS resolves to
    /// NAME on this network for this container alone (user-defined networks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<String>,
    /// The endpoint's `DriverOpts`, kept for inspect: dockerd's bridge
    /// driver reads no endpoint option either.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub driver_opts: std::collections::BTreeMap<String, String>,
}

impl NetworkRequest {
    /// The request of `settings` (an API endpoint config) on `network`,
    /// checked as dockerd checks it; settings berth does not do are refused
    /// by name.
    pub fn for_endpoint(
        network: &Network,
        settings: &berth_types::container::EndpointSettings,
    ) -> Result<Self, NetworkError> {
        Self::awaiting_network(&network.name, settings)?.bind_to(network)
    }

    /// The request of `settings` on the network named `name`, which does
    /// not exist yet: dockerd creates such a container and looks the
    /// network up only when it starts ("network NAME not found" then).
    /// What can be checked without the network is; `bind_to` does the rest.
    pub fn awaiting_network(
        name: &str,
        settings: &berth_types::container::EndpointSettings,
    ) -> Result<Self, NetworkError> {
        let unsupported = |setting, why| NetworkError::UnsupportedEndpointSetting { setting, why };
        let ipam = settings.ipam_config.clone().unwrap_or_default();
        if !ipam.ipv6_address.is_empty() {
            berth_net::ipam::parse_ipv6_address(&ipam.ipv6_address)
                .map_err(NetworkError::InvalidAddress)?;
        }
        for address in &ipam.link_local_ips {
            berth_net::ipam::parse_link_local(address).map_err(NetworkError::InvalidAddress)?;
        }
        if settings.gw_priority != 0 {
            return Err(unsupported(
                "an endpoint's gateway priority",
                "the first network has the default route",
            ));
        }
        let links = settings.links.clone().unwrap_or_default();
        for link in &links {
            crate::containers::links::parse_link(link)
                .map_err(|_| NetworkError::InvalidLink { text: link.clone() })?;
        }
        if !settings.mac_address.is_empty() {
            parse_mac(&settings.mac_address)?;
        }
        Ok(Self {
            network_id: String::new(),
            name: name.to_owned(),
            aliases: settings.aliases.clone().unwrap_or_default(),
            ipv4_address: ipam.ipv4_address,
            ipv6_address: ipam.ipv6_address,
            link_local_ips: ipam.link_local_ips,
            mac_address: settings.mac_address.clone(),
            links,
            driver_opts: settings.driver_opts.clone().unwrap_or_default(),
        })
    }

    /// Whether the network was looked up (see [`Self::awaiting_network`]).
    pub fn is_bound(&self) -> bool {
        !self.network_id.is_empty()
    }

    /// This request on `network`, checked against it as dockerd checks an
    /// endpoint's settings against its network.
    pub fn bind_to(mut self, network: &Network) -> Result<Self, NetworkError> {
        // swarmkit's refusal, as dockerd wraps it.
        if network.is_swarm_scoped() && (network.record.ingress || !network.record.attachable) {
            return Err(NetworkError::NotAttachable {
                name: network.name.clone(),
            });
        }
        network.check_endpoint_request(&self.ipv4_address, &self.ipv6_address, &self.aliases)?;
        if !self.links.is_empty() && !network.is_user_defined() {
            return Err(NetworkError::LinksOnPredefined);
        }
        self.network_id.clone_from(&network.id);
        self.name.clone_from(&network.name);
        Ok(self)
    }
}

/// A published port as bound on the host.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PublishedPort {
    /// `tcp` or `udp`.
    pub protocol: String,
    pub container_port: u16,
    /// `0.0.0.0` for every address.
    pub host_ip: String,
    pub host_port: u16,
}

/// A running container's place on one network.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointRecord {
    pub endpoint_id: String,
    pub container_name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    /// The request's links (see [`NetworkRequest::links`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<String>,
    pub mac_address: String,
    /// The host's end of the veth pair.
    pub host_device: String,
    pub prefix_len: u8,
    pub gateway: String,
    /// The IPv6 address on a network with IPv6 (`GlobalIPv6Address`);
    /// empty otherwise. Records from before the field load as empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ipv6_address: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ipv6_prefix_len: u8,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ipv6_gateway: String,
    /// Ports published through this endpoint (the first network's).
    #[serde(default)]
    pub ports: Vec<PublishedPort>,
}

fn is_zero(value: &u8) -> bool {
    *value == 0
}

/// A stored endpoint with its record parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub network_id: String,
    pub container_id: String,
    pub address: String,
    pub record: EndpointRecord,
}

impl Endpoint {
    /// Every address of the endpoint (IPv4, then IPv6): what its names
    /// resolve to.
    pub fn addresses(&self) -> Vec<IpAddr> {
        let ipv4 = self.address.parse::<Ipv4Addr>().ok().map(IpAddr::from);
        let ipv6 = self
            .record
            .ipv6_address
            .parse::<Ipv6Addr>()
            .ok()
            .map(IpAddr::from);
        ipv4.into_iter().chain(ipv6).collect()
    }

    pub fn from_row(row: &EndpointRow) -> Option<Self> {
        let record = serde_json::from_str(&row.record)
            .map_err(|error| tracing::warn!(%error, "corrupt endpoint record"))
            .ok()?;
        Some(Self {
            network_id: row.network_id.clone(),
            container_id: row.container_id.clone(),
            address: row.address.clone(),
            record,
        })
    }
}

/// Docker's MAC for an address: 02:42 followed by the four address bytes.
pub fn mac_for(address: Ipv4Addr) -> [u8; 6] {
    let [a, b, c, d] = address.octets();
    [0x02, 0x42, a, b, c, d]
}

pub fn format_mac(mac: [u8; 6]) -> String {
    mac.iter()
        .map(|byte| format!("{byte:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

pub fn parse_mac(text: &str) -> Result<[u8; 6], NetworkError> {
    let invalid = || NetworkError::InvalidMac {
        text: text.to_owned(),
    };
    let bytes: Vec<u8> = text
        .split(':')
        .map(|part| {
            (part.len() == 2)
                .then(|| u8::from_str_radix(part, 16).ok())
                .flatten()
                .ok_or_else(invalid)
        })
        .collect::<Result<_, _>>()?;
    bytes.try_into().map_err(|_| invalid())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_record_from_before_the_ipam_fields_loads() {
        let row = NetworkRow {
            id: "a".repeat(64),
            name: "old".to_owned(),
            created: "2026-01-01T00:00:00Z".to_owned(),
            record: r#"{"driver":"bridge","subnet":"10.213.50.0/24","gateway":"10.213.50.1","device":"berth-aaaaaaaaa","subnet_configured":true}"#.to_owned(),
        };
        let network = Network::from_row(&row).unwrap();
        assert_eq!(network.ip_range(), None);
        assert!(network.record.aux_addresses.is_empty());
        assert_eq!(network.record.ipam_options, None);
        assert_eq!(
            network.reserved_addresses(),
            [Ipv4Addr::new(10, 213, 50, 1)]
        );
        // And is written back without them.
        assert!(!network.to_row().unwrap().record.contains("ip_range"));
    }

    #[test]
    fn macs_follow_docker_and_parse_back() {
        let mac = mac_for(Ipv4Addr::new(172, 17, 0, 2));
        assert_eq!(format_mac(mac), "02:42:ac:11:00:02");
        assert_eq!(parse_mac("02:42:ac:11:00:02").unwrap(), mac);
        for bad in [
            "02:42:ac:11:00",
            "02:42:ac:11:00:zz",
            "2:42:ac:11:00:02",
            "",
        ] {
            assert!(parse_mac(bad).is_err(), "{bad}");
        }
    }
}
