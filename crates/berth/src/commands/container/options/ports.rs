//! `-p/--publish` and `--expose` (go-connections `nat.ParsePortSpecs`, docker CLI
//! `convertToStandardNotation`).

use std::collections::BTreeMap;
use std::net::IpAddr;

use berth_types::container::{EmptyObject, PortBinding};

use super::error::OptionsError;

const PROTOCOLS: &[&str] = &["tcp", "udp", "sctp"];

/// `ExposedPorts` and `PortBindings` as the docker CLI builds them.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Ports {
    pub exposed: BTreeMap<String, EmptyObject>,
    pub bindings: BTreeMap<String, Vec<PortBinding>>,
}

/// Reads every `-p` and `--expose` value; published container ports are exposed too.
pub fn parse_ports(publish: &[String], expose: &[String]) -> Result<Ports, OptionsError> {
    let mut ports = Ports::default();
    for value in publish {
        let spec = standard_notation(value)?;
        for (port, binding) in parse_publish(&spec)? {
            ports.exposed.insert(port.clone(), EmptyObject);
            ports.bindings.entry(port).or_default().push(binding);
        }
    }
    for value in expose {
        for port in parse_expose(value)? {
            ports.exposed.insert(port, EmptyObject);
        }
    }
    Ok(ports)
}

/// The long form `target=80,published=8080,protocol=udp` as `8080:80/udp`.
fn standard_notation(value: &str) -> Result<String, OptionsError> {
    if !value.contains('=') {
        return Ok(value.to_owned());
    }
    let mut params: BTreeMap<&str, &str> = BTreeMap::from([("protocol", "tcp")]);
    for param in value.split(',') {
        match param.split_once('=') {
            Some((key, text)) if !key.is_empty() => {
                params.insert(key, text);
            }
            _ => return Err(OptionsError::PublishOptionFormat(param.to_owned())),
        }
    }
    let get = |key| params.get(key).copied().unwrap_or_default();
    Ok(format!(
        "{}:{}/{}",
        get("published"),
        get("target"),
        get("protocol")
    ))
}

/// `[ip:][host_port:]container_port[/proto]`, ranges allowed on both sides.
fn parse_publish(raw: &str) -> Result<Vec<(String, PortBinding)>, OptionsError> {
    let parts: Vec<&str> = raw.split(':').collect();
    let count = parts.len();
    let container_part = parts[count - 1];
    let (ip, host_port) = match count {
        1 => (String::new(), ""),
        2 => (String::new(), parts[0]),
        _ => (parts[..count - 2].join(":"), parts[count - 2]),
    };
    let (protocol, container_port) = split_proto_port(container_part);
    let ip = match ip.strip_prefix('[') {
        Some(inner) => inner
            .strip_suffix(']')
            .map(str::to_owned)
            .ok_or_else(|| OptionsError::PublishAddress(ip.clone()))?,
        None => ip,
    };
    if !ip.is_empty() && ip.parse::<IpAddr>().is_err() {
        return Err(OptionsError::PublishAddress(ip));
    }
    if container_port.is_empty() {
        return Err(OptionsError::PublishNoPort(raw.to_owned()));
    }
    let (start, end) = parse_port_range(container_port)
        .map_err(|_| OptionsError::PublishContainerPort(container_port.to_owned()))?;
    let (host_start, host_end) = if host_port.is_empty() {
        (0, 0)
    } else {
        parse_port_range(host_port)
            .map_err(|_| OptionsError::PublishHostPort(host_port.to_owned()))?
    };
    // A host range for one container port is a range to pick a free port from.
    if !host_port.is_empty() && end - start != host_end - host_start && start != end {
        return Err(OptionsError::PublishRanges {
            container: container_port.to_owned(),
            host: host_port.to_owned(),
        });
    }
    let protocol_lower = protocol.to_ascii_lowercase();
    if !PROTOCOLS.contains(&protocol_lower.as_str()) {
        return Err(OptionsError::Protocol(protocol.to_owned()));
    }
    let mut mappings = Vec::new();
    for offset in 0..=(end - start) {
        let host_port = if host_port.is_empty() {
            String::new()
        } else if start == end && host_start != host_end {
            format!("{host_start}-{host_end}")
        } else {
            (host_start + offset).to_string()
        };
        mappings.push((
            format!("{}/{protocol_lower}", start + offset),
            PortBinding {
                host_ip: ip.clone(),
                host_port,
            },
        ));
    }
    Ok(mappings)
}

/// `port[-port][/proto]` for `--expose`.
fn parse_expose(value: &str) -> Result<Vec<String>, OptionsError> {
    if value.contains(':') {
        return Err(OptionsError::ExposeFormat(value.to_owned()));
    }
    let (protocol, port) = split_proto_port(value);
    let (start, end) = parse_port_range(port).map_err(|problem| OptionsError::ExposeRange {
        value: value.to_owned(),
        problem,
    })?;
    // Docker takes any protocol here; berth holds it to -p's list, lower case.
    let protocol_lower = protocol.to_ascii_lowercase();
    if !PROTOCOLS.contains(&protocol_lower.as_str()) {
        return Err(OptionsError::Protocol(protocol.to_owned()));
    }
    Ok((start..=end)
        .map(|port| format!("{port}/{protocol_lower}"))
        .collect())
}

/// `80/udp` → (`udp`, `80`); no protocol means `tcp` (go-connections
/// `SplitProtoPort`).
fn split_proto_port(raw: &str) -> (&str, &str) {
    let parts: Vec<&str> = raw.split('/').collect();
    if raw.is_empty() || parts[0].is_empty() {
        return ("", "");
    }
    match parts.get(1) {
        None | Some(&"") => ("tcp", parts[0]),
        Some(protocol) => (protocol, parts[0]),
    }
}

/// `start[-end]` (go-connections `ParsePortRange`), with Go's error text.
fn parse_port_range(ports: &str) -> Result<(u16, u16), String> {
    if ports.is_empty() {
        return Err("empty string specified for ports".to_owned());
    }
    let parse = |text: &str| -> Result<u16, String> {
        let digits = !text.is_empty() && text.chars().all(|c| c.is_ascii_digit());
        match (digits, text.parse::<u16>()) {
            (true, Ok(port)) => Ok(port),
            (true, Err(_)) => Err(format!(
                "strconv.ParseUint: parsing {text:?}: value out of range"
            )),
            (false, _) => Err(format!(
                "strconv.ParseUint: parsing {text:?}: invalid syntax"
            )),
        }
    };
    let Some((first, rest)) = ports.split_once('-') else {
        let port = parse(ports)?;
        return Ok((port, port));
    };
    let start = parse(first)?;
    let end = parse(rest.split('-').next().unwrap_or_default())?;
    if end < start {
        return Err(format!("invalid range specified for port: {ports}"));
    }
    Ok((start, end))
}
