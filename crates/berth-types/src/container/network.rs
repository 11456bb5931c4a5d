//! `NetworkingConfig`: per-network endpoint settings given at create time
//! (`--network name=…,alias=…`, `--network-alias`, `--ip`, `--mac-address`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::serde_util::{map_of_nullable, nullable};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct NetworkingConfig {
    /// Network name (or `default`) → endpoint settings.
    #[serde(default, deserialize_with = "map_of_nullable")]
    pub endpoints_config: BTreeMap<String, EndpointSettings>,
}

/// Field order and names as the current Docker API writes them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct EndpointSettings {
    #[serde(default, rename = "IPAMConfig")]
    pub ipam_config: Option<EndpointIpamConfig>,
    #[serde(default)]
    pub links: Option<Vec<String>>,
    #[serde(default)]
    pub aliases: Option<Vec<String>>,
    #[serde(default, deserialize_with = "nullable")]
    pub mac_address: String,
    #[serde(default)]
    pub driver_opts: Option<BTreeMap<String, String>>,
    /// Which network provides the default gateway (higher wins).
    #[serde(default, deserialize_with = "nullable")]
    pub gw_priority: i64,
    #[serde(default, deserialize_with = "nullable", rename = "NetworkID")]
    pub network_id: String,
    #[serde(default, deserialize_with = "nullable", rename = "EndpointID")]
    pub endpoint_id: String,
    #[serde(default, deserialize_with = "nullable")]
    pub gateway: String,
    #[serde(default, deserialize_with = "nullable", rename = "IPAddress")]
    pub ip_address: String,
    #[serde(default, deserialize_with = "nullable", rename = "IPPrefixLen")]
    pub ip_prefix_len: i64,
    #[serde(default, deserialize_with = "nullable", rename = "IPv6Gateway")]
    pub ipv6_gateway: String,
    #[serde(default, deserialize_with = "nullable", rename = "GlobalIPv6Address")]
    pub global_ipv6_address: String,
    #[serde(default, deserialize_with = "nullable", rename = "GlobalIPv6PrefixLen")]
    pub global_ipv6_prefix_len: i64,
    #[serde(default, rename = "DNSNames")]
    pub dns_names: Option<Vec<String>>,
}

impl EndpointSettings {
    /// True when the user asked for nothing on this endpoint.
    pub fn is_empty(&self) -> bool {
        *self == EndpointSettings::default()
    }
}

/// Addresses the user asked for on one endpoint.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct EndpointIpamConfig {
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty",
        rename = "IPv4Address"
    )]
    pub ipv4_address: String,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty",
        rename = "IPv6Address"
    )]
    pub ipv6_address: String,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty",
        rename = "LinkLocalIPs"
    )]
    pub link_local_ips: Vec<String>,
}
