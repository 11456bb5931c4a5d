//! `--network`, `--network-alias`, `--ip`, `--ip6`, `--mac-address`,
//! `--link-local-ip`, `--link`, `--dns*` and `--add-host` (docker CLI
//! `opts/network.go`, `parseNetworkOpts`, `opts/opts.go`).

use std::collections::BTreeMap;
use std::net::IpAddr;

use berth_types::container::host_config::is_user_defined_network;
use berth_types::container::validate::parse_extra_host;
use berth_types::container::{EndpointIpamConfig, EndpointSettings};

use super::csv::read_record;
use super::error::OptionsError;

/// One `--network` value: a name, or `name=…,alias=…,ip=…` settings.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct NetworkAttachment {
    pub target: String,
    pub aliases: Vec<String>,
    pub driver_options: BTreeMap<String, String>,
    pub links: Vec<String>,
    pub ipv4_address: String,
    pub ipv6_address: String,
    pub link_local_ips: Vec<String>,
    pub mac_address: String,
    pub gateway_priority: i64,
}

/// The flags that apply to the first (or default) network.
#[derive(Debug, Default, Clone, Copy)]
pub struct EndpointFlags<'a> {
    pub aliases: &'a [String],
    pub links: &'a [String],
    pub ipv4_address: Option<&'a str>,
    pub ipv6_address: Option<&'a str>,
    pub mac_address: Option<&'a str>,
    pub link_local_ips: &'a [String],
}

const FLAG: &str = "--network";

/// Docker switches to the long syntax when the value holds `word=word` anywhere.
fn is_long_syntax(value: &str) -> bool {
    let word = |byte: u8| byte.is_ascii_alphanumeric() || byte == b'_';
    let bytes = value.as_bytes();
    (1..bytes.len().saturating_sub(1))
        .any(|index| bytes[index] == b'=' && word(bytes[index - 1]) && word(bytes[index + 1]))
}

pub fn parse_network(value: &str) -> Result<NetworkAttachment, OptionsError> {
    if !is_long_syntax(value) {
        return Ok(NetworkAttachment {
            target: value.to_owned(),
            ..Default::default()
        });
    }
    let fail = |message: String| OptionsError::docker(FLAG, value, message);
    let fields = read_record(value).map_err(|error| fail(error.to_string()))?;
    let mut attachment = NetworkAttachment::default();
    for field in &fields {
        // Docker lower-cases the whole field, values included.
        let lower = field.to_ascii_lowercase();
        let Some((key, text)) = lower.split_once('=').filter(|(key, _)| !key.is_empty()) else {
            return Err(fail(format!("invalid field {field}")));
        };
        let (key, text) = (key.trim(), text.trim().to_owned());
        match key {
            "name" => attachment.target = text,
            "alias" => attachment.aliases.push(text),
            "ip" => attachment.ipv4_address = text,
            "ip6" => attachment.ipv6_address = text,
            "mac-address" => attachment.mac_address = text,
            "link-local-ip" => attachment.link_local_ips.push(text),
            "driver-opt" => {
                let Some((name, option)) =
                    text.split_once('=').filter(|(name, _)| !name.is_empty())
                else {
                    return Err(fail(
                        "invalid key value pair format in driver options".to_owned(),
                    ));
                };
                attachment
                    .driver_options
                    .insert(name.trim().to_owned(), option.trim().to_owned());
            }
            "gw-priority" => {
                attachment.gateway_priority = text.parse().map_err(|_| {
                    let problem = if text
                        .trim_start_matches(['-', '+'])
                        .chars()
                        .all(|c| c.is_ascii_digit())
                        && !text.is_empty()
                    {
                        "value out of range"
                    } else {
                        "invalid syntax"
                    };
                    fail(format!("invalid gw-priority ({text}): {problem}"))
                })?;
            }
            _ => return Err(fail(format!("invalid field key {key}"))),
        }
    }
    if attachment.target.is_empty() {
        return Err(fail("network name/id is not specified".to_owned()));
    }
    Ok(attachment)
}

/// `NetworkMode`: the first network, or `default`.
pub fn network_mode(networks: &[NetworkAttachment]) -> String {
    networks
        .first()
        .map_or_else(|| "default".to_owned(), |first| first.target.clone())
}

/// Docker's `parseNetworkOpts`: one endpoint per network, the non-advanced flags
/// applied to the first. With no `--network` there is a `default` endpoint; a single
/// network with nothing set gets no endpoint at all.
pub fn endpoints(
    networks: &[NetworkAttachment],
    flags: EndpointFlags,
) -> Result<BTreeMap<String, EndpointSettings>, OptionsError> {
    let mut endpoints = BTreeMap::new();
    if networks.is_empty() {
        let mut default = NetworkAttachment {
            target: "default".to_owned(),
            ..Default::default()
        };
        apply_flags(&mut default, flags)?;
        endpoints.insert("default".to_owned(), endpoint(&default)?);
        return Ok(endpoints);
    }
    let (mut user_defined, mut predefined) = (false, false);
    for (index, network) in networks.iter().enumerate() {
        if is_user_defined_network(&network.target) {
            user_defined = true;
        } else {
            predefined = true;
        }
        let mut network = network.clone();
        if index == 0 {
            apply_flags(&mut network, flags)?;
        }
        let settings = endpoint(&network)?;
        if endpoints.contains_key(&network.target) {
            return Err(OptionsError::NetworkRepeated(network.target));
        }
        if index == 0 && networks.len() == 1 && settings.is_empty() {
            continue;
        }
        endpoints.insert(network.target.clone(), settings);
    }
    if user_defined && predefined {
        return Err(OptionsError::NetworkKindsMixed);
    }
    Ok(endpoints)
}

fn apply_flags(network: &mut NetworkAttachment, flags: EndpointFlags) -> Result<(), OptionsError> {
    let twice = |flag, what| OptionsError::NetworkOptionTwice { flag, what };
    if !network.aliases.is_empty() && !flags.aliases.is_empty() {
        return Err(twice("network-alias", "alias"));
    }
    if !network.links.is_empty() && !flags.links.is_empty() {
        return Err(twice("link", "links"));
    }
    if !network.ipv4_address.is_empty() && flags.ipv4_address.is_some() {
        return Err(twice("ip", "IPv4 address"));
    }
    if !network.ipv6_address.is_empty() && flags.ipv6_address.is_some() {
        return Err(twice("ip6", "IPv6 address"));
    }
    if !network.mac_address.is_empty() && flags.mac_address.is_some() {
        return Err(twice("mac-address", "MAC address"));
    }
    if !network.link_local_ips.is_empty() && !flags.link_local_ips.is_empty() {
        return Err(twice("link-local-ip", "link-local IP addresses"));
    }
    if !flags.aliases.is_empty() {
        network.aliases = flags.aliases.to_vec();
    }
    // On a user-defined network `--link` is an endpoint alias; on the default
    // bridge it is a legacy link and stays in HostConfig.Links.
    if is_user_defined_network(&network.target) && !flags.links.is_empty() {
        network.links = flags.links.to_vec();
    }
    if let Some(address) = flags.ipv4_address {
        network.ipv4_address = address.to_owned();
    }
    if let Some(address) = flags.ipv6_address {
        network.ipv6_address = address.to_owned();
    }
    if let Some(address) = flags.mac_address {
        network.mac_address = address.to_owned();
    }
    if !flags.link_local_ips.is_empty() {
        network.link_local_ips = flags.link_local_ips.to_vec();
    }
    Ok(())
}

fn endpoint(network: &NetworkAttachment) -> Result<EndpointSettings, OptionsError> {
    if network.target.trim().is_empty() {
        return Err(OptionsError::NetworkNameMissing);
    }
    if !is_user_defined_network(&network.target) {
        if !network.aliases.is_empty() {
            return Err(OptionsError::AliasOnPredefinedNetwork);
        }
        if !network.links.is_empty() {
            return Err(OptionsError::LinkOnPredefinedNetwork);
        }
    }
    let non_empty = |list: &Vec<String>| (!list.is_empty()).then(|| list.clone());
    let has_ipam = !network.ipv4_address.is_empty()
        || !network.ipv6_address.is_empty()
        || !network.link_local_ips.is_empty();
    if !network.mac_address.is_empty() && !is_mac_address(network.mac_address.trim()) {
        return Err(OptionsError::MacAddress(network.mac_address.clone()));
    }
    Ok(EndpointSettings {
        ipam_config: has_ipam.then(|| EndpointIpamConfig {
            ipv4_address: network.ipv4_address.clone(),
            ipv6_address: network.ipv6_address.clone(),
            link_local_ips: network.link_local_ips.clone(),
        }),
        links: non_empty(&network.links),
        aliases: non_empty(&network.aliases),
        mac_address: network.mac_address.clone(),
        driver_opts: (!network.driver_options.is_empty()).then(|| network.driver_options.clone()),
        gw_priority: network.gateway_priority,
        ..Default::default()
    })
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets as `xx:xx…`, `xx-xx…` or `xxxx.xxxx…`.
pub fn is_mac_address(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() < 14 {
        return false;
    }
    let (group, separator) = if bytes[2] == b':' || bytes[2] == b'-' {
        (2, bytes[2])
    } else if bytes[4] == b'.' {
        (4, b'.')
    } else {
        return false;
    };
    let stride = group + 1;
    if !(bytes.len() + 1).is_multiple_of(stride) {
        return false;
    }
    let octets = (bytes.len() + 1) / stride * group / 2;
    if ![6, 8, 20].contains(&octets) {
        return false;
    }
    bytes.chunks(stride).all(|chunk| {
        let (digits, rest) = chunk.split_at(group.min(chunk.len()));
        digits.len() == group
            && digits.iter().all(u8::is_ascii_hexdigit)
            && (rest.is_empty() || rest == [separator])
    })
}

/// `--dns`: an IP address, written back in Go's canonical form.
pub fn parse_dns(value: &str) -> Result<String, OptionsError> {
    match value.trim().parse::<IpAddr>() {
        Ok(IpAddr::V6(address)) => Ok(match address.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => address.to_string(),
        }),
        Ok(address) => Ok(address.to_string()),
        Err(_) => Err(OptionsError::docker(
            "--dns",
            value,
            format!("IP address is not correctly formatted: {value}"),
        )),
    }
}

/// `--dns-search`: a domain name (returned without a trailing dot), or `.`.
pub fn parse_dns_search(value: &str) -> Result<String, OptionsError> {
    let trimmed = value.trim_matches(' ');
    if trimmed == "." {
        return Ok(trimmed.to_owned());
    }
    let invalid = || {
        OptionsError::docker(
            "--dns-search",
            value,
            format!("{trimmed} is not a valid domain"),
        )
    };
    if !trimmed.chars().any(|c| c.is_ascii_alphabetic()) {
        return Err(invalid());
    }
    let domain = trimmed.trim_end();
    let domain = domain.strip_suffix('.').unwrap_or(domain);
    let label_ok = |label: &str| {
        let bytes = label.as_bytes();
        !bytes.is_empty()
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
            && bytes[0] != b'-'
            && bytes[bytes.len() - 1] != b'-'
    };
    if domain.len() >= 255 || !domain.split('.').all(label_ok) {
        return Err(invalid());
    }
    Ok(domain.to_owned())
}

/// `--add-host name:ip`, `name=ip` or `name:[ipv6]`, written as `name:ip`.
pub fn parse_add_host(value: &str) -> Result<String, OptionsError> {
    parse_extra_host(value)
        .map(|(host, address)| format!("{host}:{address}"))
        .map_err(|error| OptionsError::docker("--add-host", value, error.to_string()))
}

/// `--link name[:alias]` (Docker's `ValidateLink`).
pub fn validate_link(value: &str) -> Result<(), OptionsError> {
    let fail = |message: String| OptionsError::docker("--link", value, message);
    if value.is_empty() {
        return Err(fail("empty string specified for links".to_owned()));
    }
    if value.splitn(3, ':').count() > 2 {
        return Err(fail(format!("bad format for links: {value}")));
    }
    Ok(())
}
