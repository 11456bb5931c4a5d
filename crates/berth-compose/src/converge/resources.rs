//! The project's networks and volumes: made with compose's labels when missing, external ones
//! required to exist, removed by `down` (volumes only with `-v`).

use std::collections::BTreeMap;

use berth_engine::networks::{
    create_network, find_network, remove_network, IpamPool, NetworkCreate,
};
use berth_engine::{Engine, EngineError};
use serde_json::Value as Json;

use super::labels;
use super::{engine_error, ConvergeError, Reporter};
use crate::load::Project;

fn string_map(value: Option<&Json>) -> BTreeMap<String, String> {
    value
        .and_then(Json::as_object)
        .map(|map| {
            map.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

fn is_external(value: &Json) -> bool {
    value.get("external").and_then(Json::as_bool) == Some(true)
}

pub fn ensure_networks(
    engine: &mut Engine,
    project: &Project,
    reporter: &dyn Reporter,
) -> Result<(), ConvergeError> {
    let Some(networks) = project.model.get("networks").and_then(Json::as_object) else {
        return Ok(());
    };
    for (key, network) in networks {
        let name = network.get("name").and_then(Json::as_str).unwrap_or(key);
        let (store, kernel) = engine.network_parts();
        match find_network(store, kernel, name) {
            Ok(_) => continue,
            Err(EngineError::Network(_)) if is_external(network) => {
                return Err(ConvergeError::Failed(format!(
                    "network {name} declared as external, but could not be found"
                )))
            }
            Err(EngineError::Network(_)) => {}
            Err(error) => {
                return Err(engine_error(format!("failed to look up network {name}"))(
                    error,
                ))
            }
        }
        let mut network_labels = string_map(network.get("labels"));
        network_labels.insert(labels::NETWORK.into(), key.clone());
        network_labels.insert(labels::PROJECT.into(), project.name.clone());
        network_labels.insert(labels::VERSION.into(), labels::version().into());
        let pools = network
            .get("ipam")
            .and_then(|ipam| ipam.get("config"))
            .and_then(Json::as_array)
            .map(|pools| {
                pools
                    .iter()
                    .map(|pool| IpamPool {
                        subnet: pool.get("subnet").and_then(Json::as_str).map(str::to_owned),
                        gateway: pool
                            .get("gateway")
                            .and_then(Json::as_str)
                            .map(str::to_owned),
                        ip_range: pool
                            .get("ip_range")
                            .and_then(Json::as_str)
                            .map(str::to_owned),
                        aux_addresses: BTreeMap::new(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let request = NetworkCreate {
            name: name.to_owned(),
            driver: network
                .get("driver")
                .and_then(Json::as_str)
                .unwrap_or("bridge")
                .to_owned(),
            scope: String::new(),
            ingress: false,
            pools,
            enable_ipv6: false,
            internal: network.get("internal").and_then(Json::as_bool) == Some(true),
            attachable: network.get("attachable").and_then(Json::as_bool) == Some(true),
            labels: network_labels,
            options: string_map(network.get("driver_opts")),
            ipam_driver: String::new(),
            ipam_options: None,
        };
        reporter.progress("Network", name, "Creating");
        let (store, kernel) = engine.network_parts();
        create_network(store, kernel, &request)
            .map_err(engine_error(format!("failed to create network {name}")))?;
        reporter.progress("Network", name, "Created");
    }
    Ok(())
}

pub fn ensure_volumes(
    engine: &mut Engine,
    project: &Project,
    reporter: &dyn Reporter,
) -> Result<(), ConvergeError> {
    let Some(volumes) = project.model.get("volumes").and_then(Json::as_object) else {
        return Ok(());
    };
    for (key, volume) in volumes {
        let name = volume.get("name").and_then(Json::as_str).unwrap_or(key);
        let exists = engine
            .store()
            .volume(name)
            .map_err(|error| {
                ConvergeError::Failed(format!("failed to look up volume {name}: {error}"))
            })?
            .is_some();
        if exists {
            continue;
        }
        if is_external(volume) {
            return Err(ConvergeError::Failed(format!(
                "external volume \"{name}\" not found"
            )));
        }
        let mut volume_labels = string_map(volume.get("labels"));
        volume_labels.insert(labels::VOLUME.into(), key.clone());
        volume_labels.insert(labels::PROJECT.into(), project.name.clone());
        volume_labels.insert(labels::VERSION.into(), labels::version().into());
        reporter.progress("Volume", name, "Creating");
        berth_engine::volumes::create_volume(
            engine,
            name,
            &volume_labels,
            &string_map(volume.get("driver_opts")),
            false,
        )
        .map_err(engine_error(format!("failed to create volume {name}")))?;
        reporter.progress("Volume", name, "Created");
    }
    Ok(())
}

/// Removes the project's networks that are not external (those in the model, and any other
/// network carrying the project's label).
pub fn remove_networks(
    engine: &mut Engine,
    project: &Project,
    reporter: &dyn Reporter,
) -> Result<(), ConvergeError> {
    let (store, kernel) = engine.network_parts();
    let all = berth_engine::networks::all_networks(store, kernel)
        .map_err(engine_error("failed to list networks"))?;
    for network in all {
        if network.record.labels.get(labels::PROJECT) != Some(&project.name) {
            continue;
        }
        reporter.progress("Network", &network.name, "Removing");
        let (store, kernel) = engine.network_parts();
        remove_network(store, kernel, &network.id).map_err(engine_error(format!(
            "failed to remove network {}",
            network.name
        )))?;
        reporter.progress("Network", &network.name, "Removed");
    }
    Ok(())
}

/// `down -v`: the project's named volumes that are not external.
pub fn remove_volumes(
    engine: &mut Engine,
    project: &Project,
    reporter: &dyn Reporter,
) -> Result<(), ConvergeError> {
    let rows = engine
        .store()
        .volumes()
        .map_err(|error| ConvergeError::Failed(format!("failed to list volumes: {error}")))?;
    for row in rows {
        let row_labels: BTreeMap<String, String> =
            serde_json::from_str(&row.labels).unwrap_or_default();
        if row_labels.get(labels::PROJECT) != Some(&project.name) {
            continue;
        }
        reporter.progress("Volume", &row.name, "Removing");
        berth_engine::volumes::remove_volume(engine, &row.name, false).map_err(engine_error(
            format!("failed to remove volume {}", row.name),
        ))?;
        reporter.progress("Volume", &row.name, "Removed");
    }
    Ok(())
}
