//! `ports:` and `expose:`: the short syntax `[[HOST_IP:][PUBLISHED]:]TARGET[/PROTOCOL]` (with
//! ranges) expanded to the long one, one entry per container port, as compose prints them.

use serde_json::{json, Map, Value as Json};

use super::values::{check_keys, integer, must_be, string, Result};
use crate::error::ComposeError;
use crate::yaml::{Node, Value};

const LONG_KEYS: &[&str] = &[
    "name",
    "mode",
    "host_ip",
    "target",
    "published",
    "protocol",
    "app_protocol",
];

pub fn ports(node: &Node, path: &str) -> Result<Json> {
    let Value::Seq(items) = &node.value else {
        return Err(must_be(node, path, "array"));
    };
    let mut out: Vec<Json> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let item_path = format!("{path}.{index}");
        let entries = match &item.value {
            Value::Map(_) => vec![long(item, &item_path)?],
            Value::Int(_) | Value::String(_) => short(item, &item_path)?,
            _ => return Err(must_be(item, &item_path, "string")),
        };
        for entry in entries {
            // compose drops exact duplicates (the same port listed by two merged files).
            if !out.contains(&entry) {
                out.push(entry);
            }
        }
    }
    Ok(Json::Array(out))
}

fn long(node: &Node, path: &str) -> Result<Json> {
    check_keys(node, path, LONG_KEYS, &[])?;
    let mut out = Map::new();
    if let Some(name) = node.get("name") {
        out.insert("name".into(), Json::String(string(name, path)?));
    }
    let mode = match node.get("mode") {
        Some(mode) => string(mode, &format!("{path}.mode"))?,
        None => "ingress".to_owned(),
    };
    out.insert("mode".into(), Json::String(mode));
    if let Some(host_ip) = node.get("host_ip") {
        out.insert(
            "host_ip".into(),
            Json::String(string(host_ip, &format!("{path}.host_ip"))?),
        );
    }
    let target_node = node
        .get("target")
        .ok_or_else(|| ComposeError::schema(&node.at, path, "target is required"))?;
    let target = integer(target_node, &format!("{path}.target"))?;
    out.insert("target".into(), json!(target));
    if let Some(published) = node.get("published") {
        out.insert(
            "published".into(),
            Json::String(string(published, &format!("{path}.published"))?),
        );
    }
    let protocol = match node.get("protocol") {
        Some(protocol) => string(protocol, &format!("{path}.protocol"))?,
        None => "tcp".to_owned(),
    };
    out.insert("protocol".into(), Json::String(protocol));
    if let Some(app) = node.get("app_protocol") {
        out.insert(
            "app_protocol".into(),
            Json::String(string(app, &format!("{path}.app_protocol"))?),
        );
    }
    Ok(Json::Object(out))
}

fn invalid(node: &Node, path: &str, message: String) -> ComposeError {
    ComposeError::schema(&node.at, path, message)
}

/// `a-b` or `a` as an inclusive range.
fn range(text: &str) -> Option<(u32, u32)> {
    match text.split_once('-') {
        Some((start, end)) => Some((start.parse().ok()?, end.parse().ok()?)),
        None => {
            let port = text.parse().ok()?;
            Some((port, port))
        }
    }
}

fn short(node: &Node, path: &str) -> Result<Vec<Json>> {
    let text = string(node, path)?;
    let (spec, protocol) = match text.rsplit_once('/') {
        Some((spec, protocol)) => (spec.to_owned(), protocol.to_owned()),
        None => (text.clone(), "tcp".to_owned()),
    };
    // An IPv6 host address is written in brackets: `[::1]:6000:6000`.
    let (host_ip, rest) = if let Some(stripped) = spec.strip_prefix('[') {
        let (ip, rest) = stripped
            .split_once(']')
            .ok_or_else(|| invalid(node, path, format!("invalid port {text:?}")))?;
        let rest = rest.strip_prefix(':').unwrap_or(rest);
        (Some(ip.to_owned()), rest.to_owned())
    } else {
        (None, spec.clone())
    };
    let parts: Vec<&str> = rest.split(':').collect();
    let (host_ip, published, target) = match (host_ip, parts.as_slice()) {
        (None, [target]) => (None, None, *target),
        (None, [published, target]) => (None, Some(*published), *target),
        (None, [ip, published, target]) => (Some((*ip).to_owned()), Some(*published), *target),
        (Some(ip), [published, target]) => (Some(ip), Some(*published), *target),
        _ => return Err(invalid(node, path, format!("invalid port {text:?}"))),
    };
    let published = published.filter(|published| !published.is_empty());
    let (target_start, target_end) = range(target)
        .filter(|(start, end)| start <= end)
        .ok_or_else(|| ComposeError::Other(format!("invalid containerPort: {target}")))?;
    let published_range = match published {
        Some(published) => Some(
            range(published)
                .filter(|(start, end)| start <= end)
                .ok_or_else(|| ComposeError::Other(format!("invalid hostPort: {published}")))?,
        ),
        None => None,
    };
    let count = target_end - target_start + 1;
    let mut out = Vec::new();
    for offset in 0..count {
        let mut entry = Map::new();
        entry.insert("mode".into(), json!("ingress"));
        if let Some(ip) = &host_ip {
            entry.insert("host_ip".into(), json!(ip));
        }
        entry.insert("target".into(), json!(target_start + offset));
        match published_range {
            Some((start, end)) if end - start + 1 == count => {
                entry.insert("published".into(), json!((start + offset).to_string()));
            }
            Some((start, end)) if start == end => {
                entry.insert("published".into(), json!(start.to_string()));
            }
            Some((start, end)) if count == 1 => {
                entry.insert("published".into(), json!(format!("{start}-{end}")));
            }
            Some(_) => {
                return Err(ComposeError::Other(format!(
                    "invalid ranges specified for container and host Ports: {target} and {}",
                    published.unwrap_or_default()
                )))
            }
            None => {}
        }
        entry.insert("protocol".into(), json!(protocol));
        out.push(Json::Object(entry));
    }
    Ok(out)
}

pub fn expose(node: &Node, path: &str) -> Result<Json> {
    let Value::Seq(items) = &node.value else {
        return Err(must_be(node, path, "array"));
    };
    let mut out = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let text = string(item, &format!("{path}.{index}"))?;
        let value = Json::String(text);
        if !out.contains(&value) {
            out.push(value);
        }
    }
    Ok(Json::Array(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn run(yaml: &str) -> Json {
        let node = crate::yaml::parse(yaml, Path::new("/c.yaml")).expect("yaml");
        ports(&node, "ports").expect("ports")
    }

    #[test]
    fn short_syntax_expands_ranges_and_addresses() {
        let out =
            run("- 3000-3001\n- '127.0.0.1::5000'\n- '[::1]:6000:6000/udp'\n- '8000-8001:80-81'\n");
        assert_eq!(
            out,
            json!([
                {"mode": "ingress", "target": 3000, "protocol": "tcp"},
                {"mode": "ingress", "target": 3001, "protocol": "tcp"},
                {"mode": "ingress", "host_ip": "127.0.0.1", "target": 5000, "protocol": "tcp"},
                {"mode": "ingress", "host_ip": "::1", "target": 6000, "published": "6000", "protocol": "udp"},
                {"mode": "ingress", "target": 80, "published": "8000", "protocol": "tcp"},
                {"mode": "ingress", "target": 81, "published": "8001", "protocol": "tcp"},
            ])
        );
    }

    #[test]
    fn bad_ports_are_refused() {
        let node = crate::yaml::parse("- 'a:b'\n", Path::new("/c.yaml")).expect("yaml");
        let error = ports(&node, "ports").expect_err("bad");
        assert_eq!(error.to_string(), "invalid containerPort: b");
    }
}
