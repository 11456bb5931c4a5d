//! The containers of a project, found by compose's labels.

use std::collections::BTreeMap;

use berth_engine::containers::{list_containers, Container};
use berth_engine::Engine;

use super::labels;
use super::{engine_error, ConvergeError};

/// One container of the project.
#[derive(Clone, Debug)]
pub struct ProjectContainer {
    pub id: String,
    pub name: String,
    pub service: String,
    pub number: u32,
    pub config_hash: String,
    pub oneoff: bool,
    pub container: Container,
}

/// The project's containers (one-off ones too), by service then number.
pub fn project_containers(
    engine: &Engine,
    project: &str,
) -> Result<Vec<ProjectContainer>, ConvergeError> {
    let all = list_containers(engine.store(), engine.config())
        .map_err(engine_error("failed to list containers"))?;
    let mut found: Vec<ProjectContainer> = all
        .into_iter()
        .filter_map(|container| {
            let labels: &BTreeMap<String, String> = &container.record.run.labels;
            if labels.get(labels::PROJECT).map(String::as_str) != Some(project) {
                return None;
            }
            Some(ProjectContainer {
                id: container.record.id.clone(),
                name: container.record.name.trim_start_matches('/').to_owned(),
                service: labels.get(labels::SERVICE).cloned().unwrap_or_default(),
                number: labels
                    .get(labels::NUMBER)
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0),
                config_hash: labels.get(labels::CONFIG_HASH).cloned().unwrap_or_default(),
                oneoff: labels.get(labels::ONEOFF).map(String::as_str) == Some("True"),
                container,
            })
        })
        .collect();
    found.sort_by(|a, b| (&a.service, a.number).cmp(&(&b.service, b.number)));
    Ok(found)
}
