//! Network mode conflicts (moby `validateNetMode`) and endpoint settings (moby
//! `validateEndpointSettings`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::ValidationError;
use crate::container::config::ContainerConfig;
use crate::container::host_config::{is_user_defined_network, HostConfig};
use crate::container::network::NetworkingConfig;

/// `--add-host` special value: the host's gateway address.
pub const HOST_GATEWAY: &str = "host-gateway";

pub(super) fn validate_modes(
    config: &ContainerConfig,
    host: &HostConfig,
    networking: &NetworkingConfig,
) -> Result<(), ValidationError> {
    let mode = host.network_mode.as_str();
    let mut parts = mode.split(':');
    if parts.next() == Some("container") && parts.next().unwrap_or_default().is_empty() {
        return Err(ValidationError::NetworkContainerFormat);
    }
    let is_container = host.network_container().is_some();
    let has = |list: &Option<Vec<String>>| list.as_ref().is_some_and(|list| !list.is_empty());
    if is_container {
        if !config.hostname.is_empty() {
            return Err(ValidationError::NetworkAndHostname);
        }
        if has(&host.links) {
            return Err(ValidationError::ContainerNetworkAndLinks);
        }
        if has(&host.dns) {
            return Err(ValidationError::NetworkAndDns);
        }
        if has(&host.extra_hosts) {
            return Err(ValidationError::NetworkAndExtraHosts);
        }
    }
    if is_container || host.network_is_host() {
        // The address may sit in `Config` (API < 1.44) or on an endpoint.
        let endpoint_mac = networking
            .endpoints_config
            .values()
            .any(|endpoint| !endpoint.mac_address.is_empty());
        if !config.mac_address.is_empty() || endpoint_mac {
            return Err(ValidationError::NetworkAndMacAddress);
        }
    }
    if is_container {
        let publishes = host
            .port_bindings
            .as_ref()
            .is_some_and(|map| !map.is_empty());
        if publishes || host.publish_all_ports {
            return Err(ValidationError::NetworkAndPublish);
        }
        if !config.exposed_ports.is_empty() {
            return Err(ValidationError::NetworkAndExpose);
        }
    }
    if host.uts_mode == "host" && !config.hostname.is_empty() {
        return Err(ValidationError::UtsAndHostname);
    }
    if host.network_is_host() && has(&host.links) {
        return Err(ValidationError::HostNetworkAndLinks);
    }
    Ok(())
}

pub(super) fn validate_endpoints(networking: &NetworkingConfig) -> Result<(), ValidationError> {
    for (network, endpoint) in &networking.endpoints_config {
        let ipam = endpoint.ipam_config.clone().unwrap_or_default();
        if !is_user_defined_network(network) {
            let has_address = !ipam.ipv4_address.is_empty() || !ipam.ipv6_address.is_empty();
            if has_address {
                return Err(ValidationError::IpOnPredefinedNetwork);
            }
            if endpoint
                .aliases
                .as_ref()
                .is_some_and(|aliases| !aliases.is_empty())
            {
                return Err(ValidationError::AliasOnPredefinedNetwork);
            }
        }
        if !ipam.ipv4_address.is_empty() {
            let valid = ipam
                .ipv4_address
                .parse::<Ipv4Addr>()
                .is_ok_and(|address| !address.is_unspecified());
            if !valid {
                return Err(ValidationError::Ipv4Address(ipam.ipv4_address));
            }
        }
        if !ipam.ipv6_address.is_empty() {
            let valid = ipam
                .ipv6_address
                .parse::<Ipv6Addr>()
                .is_ok_and(|address| !address.is_unspecified());
            if !valid {
                return Err(ValidationError::Ipv6Address(ipam.ipv6_address));
            }
        }
    }
    Ok(())
}

/// Reads `host:ip`, `host=ip` or `host:[ipv6]` (the docker CLI's forms) and returns
/// the host name and address; the address may be `host-gateway`.
pub fn parse_extra_host(entry: &str) -> Result<(String, String), ValidationError> {
    let split = entry.split_once('=').or_else(|| entry.split_once(':'));
    let Some((host, address)) = split.filter(|(host, _)| !host.is_empty() && !host.contains(':'))
    else {
        return Err(ValidationError::ExtraHostFormat(entry.to_owned()));
    };
    if address == HOST_GATEWAY {
        return Ok((host.to_owned(), address.to_owned()));
    }
    let address = address
        .strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
        .filter(|inner| !inner.is_empty())
        .unwrap_or(address);
    if address.trim().parse::<IpAddr>().is_err() {
        return Err(ValidationError::ExtraHostAddress(address.to_owned()));
    }
    Ok((host.to_owned(), address.to_owned()))
}
