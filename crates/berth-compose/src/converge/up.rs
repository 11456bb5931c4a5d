//! `up`: networks and volumes first, then services by dependency level. The services of one
//! level converge in parallel threads (at most `parallel_limit` at a time), each after its
//! dependencies' conditions hold; a service's containers are created, recreated when their
//! config hash changed, started, or left alone when they already run as configured.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use berth_engine::containers::{
    create_container, remove_container, start_container, stop_container,
};
use berth_engine::Engine;
use serde_json::Value as Json;

use super::containers::{project_containers, ProjectContainer};
use super::request::{create_request, ContainerPlan};
use super::wait::{wait_for, Condition};
use super::{engine_error, labels, open, resources, ConvergeError, Reporter};
use crate::load::Project;

#[derive(Clone, Debug, Default)]
pub struct UpOptions {
    /// Only these services (and their dependencies); empty: all.
    pub services: Vec<String>,
    pub no_deps: bool,
    pub force_recreate: bool,
    pub no_recreate: bool,
    pub no_start: bool,
    pub remove_orphans: bool,
    /// `--wait`: return once every service runs (and is healthy where it has a check).
    pub wait: bool,
    pub wait_timeout: Option<Duration>,
    /// How many services converge at once (`COMPOSE_PARALLEL_LIMIT`).
    pub parallel_limit: usize,
    /// `--scale SERVICE=N`.
    pub scale: BTreeMap<String, u32>,
}

/// What `up` did.
#[derive(Debug, Default)]
pub struct UpSummary {
    /// Containers created, recreated, started or removed; 0: the project was up to date.
    pub changes: usize,
    /// The containers of the services, by service.
    pub containers: BTreeMap<String, Vec<(String, String)>>,
}

/// The services `up` works on: the asked ones and (unless `no_deps`) what they depend on.
pub fn selected_services(
    project: &Project,
    asked: &[String],
    no_deps: bool,
) -> Result<BTreeSet<String>, ConvergeError> {
    let services = project.services();
    if asked.is_empty() {
        return Ok(services.keys().cloned().collect());
    }
    let edges = crate::graph::dependencies(&services);
    let mut selected = BTreeSet::new();
    let mut todo: Vec<String> = asked.to_vec();
    while let Some(name) = todo.pop() {
        if !services.contains_key(&name) {
            return Err(ConvergeError::Failed(format!("no such service: {name}")));
        }
        if selected.insert(name.clone()) && !no_deps {
            todo.extend(edges.get(&name).cloned().unwrap_or_default());
        }
    }
    Ok(selected)
}

/// How many containers `service` runs.
pub fn replicas(service: &Json, scale: Option<u32>) -> u32 {
    scale
        .or_else(|| {
            service
                .get("scale")
                .and_then(Json::as_u64)
                .map(|n| n as u32)
        })
        .or_else(|| {
            service
                .get("deploy")
                .and_then(|deploy| deploy.get("replicas"))
                .and_then(Json::as_u64)
                .map(|n| n as u32)
        })
        .unwrap_or(1)
}

pub fn up(
    engine: &mut Engine,
    project: &Project,
    options: &UpOptions,
    reporter: &dyn Reporter,
    ensure_image: &mut dyn FnMut(&mut Engine, &str) -> Result<(), ConvergeError>,
) -> Result<UpSummary, ConvergeError> {
    let services = project.services();
    let selected = selected_services(project, &options.services, options.no_deps)?;
    for name in &selected {
        let service = &services[name];
        let image = service.get("image").and_then(Json::as_str);
        match image {
            Some(image) => {
                let present = berth_engine::images::resolve_image(engine.store(), image).is_ok();
                if !present && service.get("build").is_some() {
                    return Err(build_refused(name));
                }
                ensure_image(engine, image)?;
            }
            None => return Err(build_refused(name)),
        }
    }
    resources::ensure_networks(engine, project, reporter)?;
    resources::ensure_volumes(engine, project, reporter)?;
    let existing = project_containers(engine, &project.name)?;
    let orphans: Vec<&ProjectContainer> = existing
        .iter()
        .filter(|c| !c.oneoff && !services.contains_key(&c.service))
        .collect();
    let mut summary = UpSummary::default();
    if !orphans.is_empty() {
        if options.remove_orphans {
            for orphan in &orphans {
                reporter.progress("Container", &orphan.name, "Removing");
                remove_container(engine, &orphan.id, true)
                    .map_err(engine_error(format!("failed to remove {}", orphan.name)))?;
                reporter.progress("Container", &orphan.name, "Removed");
                summary.changes += 1;
            }
        } else {
            let names: Vec<&str> = orphans.iter().map(|o| o.name.as_str()).collect();
            reporter.warn(&format!(
                "Found orphan containers ([{}]) for this project. If you removed or renamed this service in your compose file, you can run this command with the --remove-orphans flag to clean it up.",
                names.join(" ")
            ));
        }
    }
    let levels = crate::graph::levels(&services)?;
    let limit = options.parallel_limit.max(1);
    let config = engine.config().clone();
    let mut existing = existing;
    for (index, level) in levels.into_iter().enumerate() {
        let level: Vec<String> = level.into_iter().filter(|s| selected.contains(s)).collect();
        if index > 0 && summary.changes > 0 {
            // The levels below made containers this one may wait for or join.
            existing = project_containers(engine, &project.name)?;
        }
        let existing = &existing;
        for chunk in level.chunks(limit) {
            let results: Vec<Result<ServiceOutcome, ConvergeError>> = std::thread::scope(|scope| {
                let handles: Vec<_> = chunk
                    .iter()
                    .map(|name| {
                        let config = &config;
                        let services = &services;
                        let selected = &selected;
                        scope.spawn(move || {
                            let mut engine = LazyEngine {
                                config,
                                engine: None,
                            };
                            converge_service(
                                &mut engine,
                                existing,
                                project,
                                services,
                                selected,
                                name,
                                options,
                                reporter,
                            )
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|handle| {
                        handle.join().unwrap_or_else(|_| {
                            Err(ConvergeError::Failed("a service's worker panicked".into()))
                        })
                    })
                    .collect()
            });
            for result in results {
                let outcome = result?;
                summary.changes += outcome.changes;
                summary
                    .containers
                    .insert(outcome.service, outcome.containers);
            }
        }
    }
    if options.wait {
        for (service, containers) in &summary.containers {
            let has_check = services[service]
                .get("healthcheck")
                .is_some_and(|check| check.get("disable").is_none());
            for (id, name) in containers {
                if has_check {
                    reporter.progress("Container", name, "Waiting");
                    wait_for(
                        engine,
                        id,
                        name,
                        service,
                        Condition::Healthy,
                        options.wait_timeout,
                    )?;
                    reporter.progress("Container", name, "Healthy");
                }
            }
        }
    }
    Ok(summary)
}

fn build_refused(service: &str) -> ConvergeError {
    ConvergeError::Failed(format!(
        "service {service:?}: services.{service}.build: berth compose does not build images yet; build it with `berth build -t IMAGE` and name it in `image:`"
    ))
}

/// A worker's engine, opened only when the service has something to do: an unchanged
/// running service needs none, which keeps a no-op `up` cheap.
struct LazyEngine<'a> {
    config: &'a berth_engine::EngineConfig,
    engine: Option<Engine>,
}

impl LazyEngine<'_> {
    fn get(&mut self) -> Result<&mut Engine, ConvergeError> {
        if self.engine.is_none() {
            self.engine = Some(open(self.config)?);
        }
        self.engine
            .as_mut()
            .ok_or_else(|| ConvergeError::Failed("the engine did not open".into()))
    }
}

struct ServiceOutcome {
    service: String,
    changes: usize,
    containers: Vec<(String, String)>,
}

/// Waits for `name`'s dependencies, then makes its containers match its configuration.
#[allow(clippy::too_many_arguments)]
fn converge_service(
    engine: &mut LazyEngine<'_>,
    existing: &[ProjectContainer],
    project: &Project,
    services: &BTreeMap<String, Json>,
    selected: &BTreeSet<String>,
    name: &str,
    options: &UpOptions,
    reporter: &dyn Reporter,
) -> Result<ServiceOutcome, ConvergeError> {
    let service = &services[name];
    if let Some(depends) = service.get("depends_on").and_then(Json::as_object) {
        for (other, condition) in depends {
            if !selected.contains(other) {
                continue;
            }
            let condition = Condition::parse(
                condition
                    .get("condition")
                    .and_then(Json::as_str)
                    .unwrap_or("service_started"),
            );
            for container in existing.iter().filter(|c| c.service == *other && !c.oneoff) {
                if condition != Condition::Started {
                    reporter.progress("Container", &container.name, "Waiting");
                }
                if condition != Condition::Started {
                    wait_for(
                        engine.get()?,
                        &container.id,
                        &container.name,
                        other,
                        condition,
                        None,
                    )?;
                }
                match condition {
                    Condition::Healthy => {
                        reporter.progress("Container", &container.name, "Healthy")
                    }
                    Condition::CompletedSuccessfully => {
                        reporter.progress("Container", &container.name, "Exited")
                    }
                    Condition::Started => {}
                }
            }
        }
    }
    let hash = labels::config_hash(service);
    let wanted = replicas(service, options.scale.get(name).copied());
    let image = service
        .get("image")
        .and_then(Json::as_str)
        .unwrap_or_default();
    let mut image_id = None;
    let joined_container = service
        .get("network_mode")
        .and_then(Json::as_str)
        .and_then(|mode| mode.strip_prefix("service:"))
        .and_then(|other| {
            existing
                .iter()
                .find(|c| c.service == other && !c.oneoff)
                .map(|c| c.id.clone())
        });
    let mine: Vec<&ProjectContainer> = existing
        .iter()
        .filter(|c| c.service == name && !c.oneoff)
        .collect();
    let mut outcome = ServiceOutcome {
        service: name.to_owned(),
        changes: 0,
        containers: Vec::new(),
    };
    for number in 1..=wanted {
        let current = mine.iter().find(|c| c.number == number);
        let container_name = labels::container_name(&project.name, name, service, number);
        let failed = |step: &str| {
            engine_error(format!(
                "failed to {step} service {name:?} ({container_name})"
            ))
        };
        let keep = current.is_some_and(|c| {
            options.no_recreate || (c.config_hash == hash && !options.force_recreate)
        });
        let id = match current {
            Some(current) if keep => {
                if current.container.state.is_running() {
                    reporter.progress("Container", &current.name, "Running");
                } else if !options.no_start {
                    reporter.progress("Container", &current.name, "Starting");
                    start_container(engine.get()?, &current.id, None).map_err(failed("start"))?;
                    reporter.progress("Container", &current.name, "Started");
                    outcome.changes += 1;
                }
                current.id.clone()
            }
            _ => {
                let engine = engine.get()?;
                if let Some(current) = current {
                    reporter.progress("Container", &current.name, "Recreate");
                    stop_container(engine, &current.id, stop_timeout(service))
                        .map_err(failed("stop"))?;
                    remove_container(engine, &current.id, true).map_err(failed("remove"))?;
                }
                let image_id = image_id
                    .get_or_insert_with(|| {
                        berth_engine::images::resolve_image(engine.store(), image)
                            .map(|record| record.id.to_string())
                            .unwrap_or_default()
                    })
                    .clone();
                let plan = ContainerPlan {
                    project,
                    service: name,
                    config: service,
                    number,
                    name: container_name.clone(),
                    joined_container: joined_container.clone(),
                    image_id,
                };
                let request = create_request(&plan)?;
                if current.is_none() {
                    reporter.progress("Container", &container_name, "Creating");
                }
                let id = create_container(engine, &request).map_err(failed("create"))?;
                reporter.progress(
                    "Container",
                    &container_name,
                    if current.is_some() {
                        "Recreated"
                    } else {
                        "Created"
                    },
                );
                if !options.no_start {
                    reporter.progress("Container", &container_name, "Starting");
                    if let Err(error) = start_container(engine, &id, None) {
                        return Err(failed("start")(error));
                    }
                    reporter.progress("Container", &container_name, "Started");
                }
                outcome.changes += 1;
                id
            }
        };
        outcome.containers.push((id, container_name));
    }
    for extra in mine.iter().filter(|c| c.number > wanted) {
        let engine = engine.get()?;
        reporter.progress("Container", &extra.name, "Stopping");
        stop_container(engine, &extra.id, stop_timeout(service))
            .map_err(engine_error(format!("failed to stop {}", extra.name)))?;
        remove_container(engine, &extra.id, true)
            .map_err(engine_error(format!("failed to remove {}", extra.name)))?;
        reporter.progress("Container", &extra.name, "Removed");
        outcome.changes += 1;
    }
    Ok(outcome)
}

/// `stop_grace_period` in whole seconds (the engine's default when unset).
pub fn stop_timeout(service: &Json) -> Option<i64> {
    service
        .get("stop_grace_period")
        .and_then(Json::as_str)
        .and_then(crate::normalize::values::parse_duration)
        .map(|nanos| nanos / 1_000_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn project(text: &str) -> Project {
        crate::load::load_text(text, "p", Path::new("/p"), &BTreeMap::new()).expect("loads")
    }

    #[test]
    fn asked_services_bring_their_dependencies() {
        let project = project(
            "services:\n  db:\n    image: x\n  app:\n    image: x\n    depends_on: [db]\n  other:\n    image: x\n",
        );
        let asked = ["app".to_owned()];
        let selected = selected_services(&project, &asked, false).expect("known");
        assert_eq!(selected.into_iter().collect::<Vec<_>>(), ["app", "db"]);
        let alone = selected_services(&project, &asked, true).expect("known");
        assert_eq!(alone.into_iter().collect::<Vec<_>>(), ["app"]);
        let unknown = selected_services(&project, &["nope".to_owned()], false);
        assert_eq!(
            unknown.map_err(|e| e.to_string()).err().as_deref(),
            Some("no such service: nope")
        );
    }

    #[test]
    fn replicas_come_from_the_flag_scale_or_deploy() {
        let service = serde_json::json!({"deploy": {"replicas": 3}});
        assert_eq!(replicas(&service, None), 3);
        assert_eq!(replicas(&service, Some(1)), 1);
        assert_eq!(replicas(&serde_json::json!({"scale": 2}), None), 2);
        assert_eq!(replicas(&serde_json::json!({}), None), 1);
    }
}
