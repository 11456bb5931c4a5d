//! `/networks/…`: list, create, inspect, remove, connect, disconnect, prune.

use std::collections::BTreeMap;

use berth_engine::containers::list_containers;
use berth_engine::networks::{
    all_networks, connect_network, create_network, disconnect_network, find_network, network_json,
    prune_networks, remove_network, IpamPool, NetworkCreate,
};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::http::{Exchange, Response};
use crate::router::{reply, Handled};
use crate::server::Server;

/// Docker answers a missing network with "No such network" in some places
/// and "network X not found" in others; the CLI prints either.
fn lookup_error(error: berth_engine::EngineError) -> ApiError {
    ApiError::from(error)
}

pub fn list(server: &Server, exchange: &mut Exchange<'_>) -> Handled {
    let filters = crate::filters::parse(exchange.query("filters").unwrap_or_default())?;
    crate::filters::check(
        &filters,
        &["dangling", "driver", "id", "label", "name", "scope", "type"],
    )?;
    let mut engine = server.engine()?;
    let (store, kernel) = engine.network_parts();
    let networks = all_networks(store, kernel)?;
    let rows: Vec<Value> = networks
        .iter()
        .map(|network| network_json(store, network))
        .filter(|value| matches(value, &filters))
        .collect();
    reply(Response::json(200, &Value::Array(rows)))
}

/// Docker's network filters: values of one key ORed, keys ANDed, and
/// every `label` must hold (`MatchKVList`).
fn matches(network: &Value, filters: &[(String, String)]) -> bool {
    let mut keys: Vec<&str> = filters.iter().map(|(key, _)| key.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.iter().all(|key| {
        let mut values = filters.iter().filter(|(k, _)| k == key);
        let holds = |(_, value): &(String, String)| {
            let field = |name: &str| network[name].as_str().unwrap_or_default().to_owned();
            match *key {
                "name" => field("Name").contains(value.as_str()),
                "id" => field("Id").starts_with(value.as_str()),
                "driver" => field("Driver") == *value,
                "scope" => field("Scope") == *value,
                "type" => {
                    let builtin = matches!(field("Name").as_str(), "bridge" | "host" | "none");
                    (value == "builtin") == builtin
                }
                "label" => match value.split_once('=') {
                    Some((label, wanted)) => network["Labels"][label].as_str() == Some(wanted),
                    None => network["Labels"].get(value.as_str()).is_some(),
                },
                "dangling" => {
                    let dangling = network["Containers"]
                        .as_object()
                        .is_none_or(|containers| containers.is_empty());
                    matches!(value.as_str(), "true" | "1") == dangling
                }
                _ => false,
            }
        };
        if *key == "label" {
            values.all(holds)
        } else {
            values.any(holds)
        }
    })
}

/// One IPAM pool. Every field may be JSON `null` (docker-py sends all of
/// them, unset ones as null).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
struct IpamConfig {
    subnet: Option<String>,
    gateway: Option<String>,
    #[serde(rename = "IPRange")]
    ip_range: Option<String>,
    auxiliary_addresses: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
struct Ipam {
    driver: Option<String>,
    config: Option<Vec<IpamConfig>>,
    options: Option<BTreeMap<String, String>>,
}

/// A set string field: neither absent, null nor empty.
fn set(field: &Option<String>) -> Option<String> {
    field.clone().filter(|text| !text.is_empty())
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
struct CreateBody {
    name: String,
    /// docker-py sends `null` for the default driver.
    driver: Option<String>,
    internal: bool,
    attachable: bool,
    ingress: bool,
    /// docker-py sends `null` when not given.
    scope: Option<String>,
    #[serde(rename = "EnableIPv6")]
    enable_ipv6: bool,
    #[serde(rename = "IPAM")]
    ipam: Option<Ipam>,
    options: Option<BTreeMap<String, String>>,
    labels: Option<BTreeMap<String, String>>,
}

pub fn create(server: &Server, exchange: &mut Exchange<'_>) -> Handled {
    let body: CreateBody = exchange.json()?;
    if body.name.is_empty() {
        return Err(ApiError::bad_request("network name must not be empty"));
    }
    let ipam = body.ipam.as_ref();
    // One pool per config; a config with every field null or empty (as
    // docker-py can send) is no pool.
    let pools: Vec<IpamPool> = ipam
        .and_then(|ipam| ipam.config.as_ref())
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|config| IpamPool {
            subnet: set(&config.subnet),
            gateway: set(&config.gateway),
            ip_range: set(&config.ip_range),
            aux_addresses: config.auxiliary_addresses.clone().unwrap_or_default(),
        })
        .filter(|pool| *pool != IpamPool::default())
        .collect();
    let request = NetworkCreate {
        name: body.name.clone(),
        driver: body.driver.clone().unwrap_or_default(),
        scope: body.scope.clone().unwrap_or_default(),
        ingress: body.ingress,
        pools,
        enable_ipv6: body.enable_ipv6,
        internal: body.internal,
        attachable: body.attachable,
        labels: body.labels.unwrap_or_default(),
        options: body.options.unwrap_or_default(),
        ipam_driver: ipam
            .and_then(|ipam| ipam.driver.clone())
            .unwrap_or_default(),
        ipam_options: ipam.and_then(|ipam| ipam.options.clone()),
    };
    let mut engine = server.engine()?;
    let (store, kernel) = engine.network_parts();
    let id = create_network(store, kernel, &request)?;
    reply(Response::json(201, &json!({ "Id": id, "Warning": "" })))
}

/// `?scope=` (`local`, `swarm`, `global`): a network of another scope is
/// not found, in Docker's words.
pub fn inspect(server: &Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let scope = exchange.query("scope").unwrap_or_default().to_owned();
    let mut engine = server.engine()?;
    let (store, kernel) = engine.network_parts();
    let network = find_network(store, kernel, id).map_err(lookup_error)?;
    if !scope.is_empty() && network.scope() != scope {
        return Err(berth_engine::EngineError::from(
            berth_engine::networks::NetworkError::NotFound(id.to_owned()),
        )
        .into());
    }
    reply(Response::json(200, &network_json(store, &network)))
}

pub fn remove(server: &Server, id: &str) -> Handled {
    let mut engine = server.engine()?;
    let (store, kernel) = engine.network_parts();
    remove_network(store, kernel, id)?;
    reply(Response::empty(204))
}

pub fn prune(server: &Server) -> Handled {
    let mut engine = server.engine()?;
    let in_use: Vec<String> = list_containers(engine.store(), engine.config())?
        .into_iter()
        .flat_map(|container| container.record.run.networks)
        .map(|request| request.network_id)
        .collect();
    let (store, kernel) = engine.network_parts();
    let removed = prune_networks(store, kernel, &in_use)?;
    reply(Response::json(200, &json!({ "NetworksDeleted": removed })))
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
struct ConnectBody {
    container: String,
    endpoint_config: Option<berth_types::container::EndpointSettings>,
    force: bool,
}

pub fn connect(server: &Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let body: ConnectBody = exchange.json()?;
    if body.container.is_empty() {
        return Err(ApiError::bad_request("container must be given"));
    }
    let settings = body.endpoint_config.unwrap_or_default();
    let mut engine = server.engine()?;
    connect_network(&mut engine, id, &body.container, &settings)?;
    reply(Response::empty(200))
}

pub fn disconnect(server: &Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let body: ConnectBody = exchange.json()?;
    let _ = body.force;
    if body.container.is_empty() {
        return Err(ApiError::bad_request("container must be given"));
    }
    let mut engine = server.engine()?;
    disconnect_network(&mut engine, id, &body.container)?;
    reply(Response::empty(200))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_all_hold_other_keys_any() {
        let network = json!({
            "Name": "proj_default",
            "Id": "abc123",
            "Driver": "bridge",
            "Labels": { "com.docker.compose.project": "proj", "com.docker.compose.network": "default" },
        });
        let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
            list.iter()
                .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
                .collect()
        };
        assert!(matches(
            &network,
            &pairs(&[
                ("label", "com.docker.compose.project=proj"),
                ("label", "com.docker.compose.network"),
            ])
        ));
        assert!(!matches(
            &network,
            &pairs(&[
                ("label", "com.docker.compose.project=proj"),
                ("label", "com.docker.compose.network=other"),
            ])
        ));
        assert!(matches(
            &network,
            &pairs(&[("name", "nosuch"), ("name", "proj"), ("driver", "bridge")])
        ));
        assert!(!matches(
            &network,
            &pairs(&[("name", "proj"), ("driver", "null")])
        ));
    }
}
