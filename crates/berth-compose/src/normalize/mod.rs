//! The merged compose tree -> the normalised project (a JSON value in the shape and key order
//! `docker compose config` prints), with the project-wide checks: every `depends_on`,
//! network and volume a service names exists, and dependencies have no cycle.

pub mod ports;
pub mod service;
pub mod values;
pub mod volumes;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{json, Map, Value as Json};

use crate::error::ComposeError;
use crate::interpolate::Lookup;
use crate::yaml::{Node, Value};
use values::{boolean, check_keys, key_value_map, map, must_be, object, string, Result};

/// A raw tree as JSON (for `x-` extensions, which compose prints as written).
pub fn to_json(node: &Node) -> Json {
    match &node.value {
        Value::Null => Json::Null,
        Value::Bool(value) => json!(value),
        Value::Int(value) => json!(value),
        Value::Float(value) => json!(value),
        Value::String(text) => json!(text),
        Value::Seq(items) => Json::Array(items.iter().map(to_json).collect()),
        // Go maps: printed with sorted keys.
        Value::Map(entries) => {
            let mut sorted: Vec<(String, Json)> = entries
                .iter()
                .map(|(key, value)| (key.clone(), to_json(value)))
                .collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            Json::Object(sorted.into_iter().collect())
        }
    }
}

pub struct ProjectContext<'a> {
    pub name: &'a str,
    pub home: Option<&'a str>,
    pub variables: &'a dyn Lookup,
    /// The directory each service's relative paths resolve against.
    pub service_dirs: &'a BTreeMap<String, PathBuf>,
    pub project_dir: &'a std::path::Path,
}

const TOP_KEYS: &[&str] = &[
    "name", "services", "networks", "volumes", "version", "include",
];
const TOP_REFUSED: &[&str] = &["secrets", "configs", "models"];

/// Normalises the merged tree (profiles already applied) into compose's printed form.
pub fn project(root: &Node, context: &ProjectContext<'_>) -> Result<Json> {
    check_keys(root, "", TOP_KEYS, TOP_REFUSED).map_err(strip_top_path)?;
    let mut services = BTreeMap::new();
    if let Some(node) = root.get("services") {
        for (name, service) in map(node, "services")? {
            let base = context
                .service_dirs
                .get(name)
                .map_or(context.project_dir, PathBuf::as_path);
            let service_context = service::ServiceContext {
                base,
                home: context.home,
                variables: context.variables,
            };
            if !matches!(service.value, Value::Map(_)) {
                return Err(must_be(service, &format!("services.{name}"), "object"));
            }
            services.insert(
                name.clone(),
                service::normalize(name, service, &service_context)?,
            );
        }
    }
    check_references(&services, root)?;
    crate::graph::levels(&services)?;
    let mut out = Map::new();
    out.insert("name".into(), json!(context.name));
    out.insert(
        "services".into(),
        Json::Object(services.clone().into_iter().collect()),
    );
    let networks = networks(root, &services, context)?;
    if !networks.is_empty() {
        out.insert("networks".into(), Json::Object(networks));
    }
    let volumes = volumes(root, &services, context)?;
    if !volumes.is_empty() {
        out.insert("volumes".into(), Json::Object(volumes));
    }
    if let Some(entries) = root.as_map() {
        for (key, value) in entries {
            if key.starts_with("x-") {
                out.insert(key.clone(), to_json(value));
            }
        }
    }
    Ok(Json::Object(out))
}

fn strip_top_path(error: ComposeError) -> ComposeError {
    match error {
        ComposeError::Schema { at, message, .. } => ComposeError::Schema {
            at,
            path: "(root)".into(),
            message,
        },
        other => other,
    }
}

fn check_references(services: &BTreeMap<String, Json>, root: &Node) -> Result<()> {
    let declared_networks: Vec<String> = root
        .get("networks")
        .and_then(Node::as_map)
        .map(|entries| entries.iter().map(|(key, _)| key.clone()).collect())
        .unwrap_or_default();
    let declared_volumes: Vec<String> = root
        .get("volumes")
        .and_then(Node::as_map)
        .map(|entries| entries.iter().map(|(key, _)| key.clone()).collect())
        .unwrap_or_default();
    for (name, service) in services {
        if let Some(depends) = service.get("depends_on").and_then(Json::as_object) {
            for (other, condition) in depends {
                // compose refuses an undefined service even when `required: false`.
                let _ = condition;
                if !services.contains_key(other) {
                    return Err(ComposeError::Invalid(format!(
                        "service {name:?} depends on undefined service {other:?}"
                    )));
                }
            }
        }
        if let Some(networks) = service.get("networks").and_then(Json::as_object) {
            for network in networks.keys() {
                if network != "default" && !declared_networks.contains(network) {
                    return Err(ComposeError::Other(format!(
                        "service {name:?} refers to undefined network {network}: invalid compose project"
                    )));
                }
            }
        }
        for volume in named_volumes(service) {
            if !declared_volumes.contains(&volume) {
                return Err(ComposeError::Other(format!(
                    "service {name:?} refers to undefined volume {volume}: invalid compose project"
                )));
            }
        }
    }
    Ok(())
}

/// The named volumes a normalised service mounts.
pub fn named_volumes(service: &Json) -> Vec<String> {
    service
        .get("volumes")
        .and_then(Json::as_array)
        .map(|mounts| {
            mounts
                .iter()
                .filter(|mount| mount.get("type").and_then(Json::as_str) == Some("volume"))
                .filter_map(|mount| mount.get("source").and_then(Json::as_str))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn external(node: &Node, path: &str) -> Result<(bool, Option<String>)> {
    match node.get("external") {
        None => Ok((false, None)),
        Some(value) => match &value.value {
            Value::Map(_) => {
                let name = value
                    .get("name")
                    .map(|name| string(name, &format!("{path}.external.name")))
                    .transpose()?;
                Ok((true, name))
            }
            _ => Ok((boolean(value, &format!("{path}.external"))?, None)),
        },
    }
}

fn networks(
    root: &Node,
    services: &BTreeMap<String, Json>,
    context: &ProjectContext<'_>,
) -> Result<Map<String, Json>> {
    let mut used: Vec<String> = services
        .values()
        .filter_map(|service| service.get("networks").and_then(Json::as_object))
        .flat_map(|networks| networks.keys().cloned())
        .collect();
    used.sort();
    used.dedup();
    let mut out = Map::new();
    for key in used {
        let node = root.get("networks").and_then(|networks| networks.get(&key));
        let path = format!("networks.{key}");
        let mut network = Map::new();
        let Some(node) = node.filter(|node| !matches!(node.value, Value::Null)) else {
            network.insert("name".into(), json!(format!("{}_{key}", context.name)));
            out.insert(key, Json::Object(network));
            continue;
        };
        check_keys(
            node,
            &path,
            &[
                "name",
                "driver",
                "driver_opts",
                "ipam",
                "external",
                "internal",
                "attachable",
                "labels",
            ],
            &["enable_ipv4", "enable_ipv6"],
        )?;
        let (is_external, external_name) = external(node, &path)?;
        let name = match node.get("name") {
            Some(name) => string(name, &format!("{path}.name"))?,
            None if is_external => external_name.unwrap_or_else(|| key.clone()),
            None => format!("{}_{key}", context.name),
        };
        network.insert("name".into(), json!(name));
        if let Some(driver) = node.get("driver") {
            network.insert("driver".into(), json!(string(driver, &path)?));
        }
        if let Some(options) = node.get("driver_opts") {
            network.insert(
                "driver_opts".into(),
                object(key_value_map(
                    options,
                    &format!("{path}.driver_opts"),
                    '=',
                    &|_| Some(json!("")),
                )?),
            );
        }
        if let Some(ipam) = node.get("ipam") {
            network.insert("ipam".into(), self::ipam(ipam, &format!("{path}.ipam"))?);
        }
        if is_external {
            network.insert("external".into(), json!(true));
        }
        for flag in ["internal", "attachable"] {
            if let Some(value) = node.get(flag) {
                if boolean(value, &path)? {
                    network.insert(flag.into(), json!(true));
                }
            }
        }
        if let Some(labels) = node.get("labels") {
            network.insert(
                "labels".into(),
                object(key_value_map(
                    labels,
                    &format!("{path}.labels"),
                    '=',
                    &|_| Some(json!("")),
                )?),
            );
        }
        out.insert(key, Json::Object(network));
    }
    Ok(out)
}

fn ipam(node: &Node, path: &str) -> Result<Json> {
    check_keys(node, path, &["driver", "config"], &["options"])?;
    let mut out = Map::new();
    if let Some(driver) = node.get("driver") {
        out.insert("driver".into(), json!(string(driver, path)?));
    }
    if let Some(config) = node.get("config") {
        let mut pools = Vec::new();
        for (index, pool) in values::seq(config, &format!("{path}.config"))?
            .iter()
            .enumerate()
        {
            let pool_path = format!("{path}.config.{index}");
            check_keys(
                pool,
                &pool_path,
                &["subnet", "ip_range", "gateway"],
                &["aux_addresses"],
            )?;
            let mut entry = Map::new();
            for key in ["subnet", "gateway", "ip_range"] {
                if let Some(value) = pool.get(key) {
                    entry.insert(key.into(), json!(string(value, &pool_path)?));
                }
            }
            pools.push(Json::Object(entry));
        }
        out.insert("config".into(), Json::Array(pools));
    }
    Ok(Json::Object(out))
}

fn volumes(
    root: &Node,
    services: &BTreeMap<String, Json>,
    context: &ProjectContext<'_>,
) -> Result<Map<String, Json>> {
    let mut used: Vec<String> = services.values().flat_map(named_volumes).collect();
    used.sort();
    used.dedup();
    let mut out = Map::new();
    for key in used {
        let node = root.get("volumes").and_then(|volumes| volumes.get(&key));
        let path = format!("volumes.{key}");
        let mut volume = Map::new();
        let Some(node) = node.filter(|node| !matches!(node.value, Value::Null)) else {
            volume.insert("name".into(), json!(format!("{}_{key}", context.name)));
            out.insert(key, Json::Object(volume));
            continue;
        };
        check_keys(
            node,
            &path,
            &["name", "driver", "driver_opts", "external", "labels"],
            &[],
        )?;
        let (is_external, external_name) = external(node, &path)?;
        let name = match node.get("name") {
            Some(name) => string(name, &format!("{path}.name"))?,
            None if is_external => external_name.unwrap_or_else(|| key.clone()),
            None => format!("{}_{key}", context.name),
        };
        volume.insert("name".into(), json!(name));
        if let Some(driver) = node.get("driver") {
            let driver = string(driver, &path)?;
            if driver != "local" {
                return Err(ComposeError::unsupported(
                    &node.at,
                    &format!("{path}.driver"),
                    format!("the volume driver {driver:?}"),
                ));
            }
            volume.insert("driver".into(), json!(driver));
        }
        if let Some(options) = node.get("driver_opts") {
            volume.insert(
                "driver_opts".into(),
                object(key_value_map(
                    options,
                    &format!("{path}.driver_opts"),
                    '=',
                    &|_| Some(json!("")),
                )?),
            );
        }
        if is_external {
            volume.insert("external".into(), json!(true));
        }
        if let Some(labels) = node.get("labels") {
            volume.insert(
                "labels".into(),
                object(key_value_map(
                    labels,
                    &format!("{path}.labels"),
                    '=',
                    &|_| Some(json!("")),
                )?),
            );
        }
        out.insert(key, Json::Object(volume));
    }
    Ok(out)
}
