//! `down`: the project's containers stopped and removed in reverse dependency order (the
//! services of a level in parallel), then its networks, with `-v` its volumes.

use berth_engine::containers::{remove_container, stop_container};
use berth_engine::Engine;

use super::containers::{project_containers, ProjectContainer};
use super::{engine_error, open, resources, ConvergeError, Reporter};
use crate::load::Project;

#[derive(Clone, Debug, Default)]
pub struct DownOptions {
    pub volumes: bool,
    pub remove_orphans: bool,
    /// `-t`: seconds before SIGKILL.
    pub timeout: Option<i64>,
}

pub fn down(
    engine: &mut Engine,
    project: &Project,
    options: &DownOptions,
    reporter: &dyn Reporter,
) -> Result<(), ConvergeError> {
    let services = project.services();
    let containers = project_containers(engine, &project.name)?;
    let orphans: Vec<&ProjectContainer> = containers
        .iter()
        .filter(|c| !services.contains_key(&c.service))
        .collect();
    if !orphans.is_empty() && !options.remove_orphans {
        let names: Vec<&str> = orphans.iter().map(|o| o.name.as_str()).collect();
        reporter.warn(&format!(
            "Found orphan containers ([{}]) for this project. If you removed or renamed this service in your compose file, you can run this command with the --remove-orphans flag to clean it up.",
            names.join(" ")
        ));
    }
    let levels = crate::graph::levels(&services)?;
    let mut groups: Vec<Vec<&ProjectContainer>> = levels
        .iter()
        .rev()
        .map(|level| {
            containers
                .iter()
                .filter(|c| level.contains(&c.service))
                .collect()
        })
        .collect();
    if options.remove_orphans {
        groups.insert(0, orphans);
    }
    let config = engine.config().clone();
    for group in groups {
        let results: Vec<Result<(), ConvergeError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = group
                .iter()
                .map(|container| {
                    let config = &config;
                    let timeout = options.timeout.or_else(|| {
                        services
                            .get(&container.service)
                            .and_then(super::up::stop_timeout)
                    });
                    scope.spawn(move || {
                        let mut engine = open(config)?;
                        remove_one(&mut engine, container, timeout, reporter)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| {
                    handle
                        .join()
                        .unwrap_or_else(|_| Err(ConvergeError::Failed("a worker panicked".into())))
                })
                .collect()
        });
        for result in results {
            result?;
        }
    }
    resources::remove_networks(engine, project, reporter)?;
    if options.volumes {
        resources::remove_volumes(engine, project, reporter)?;
    }
    Ok(())
}

fn remove_one(
    engine: &mut Engine,
    container: &ProjectContainer,
    timeout: Option<i64>,
    reporter: &dyn Reporter,
) -> Result<(), ConvergeError> {
    if container.container.state.is_running() {
        reporter.progress("Container", &container.name, "Stopping");
        stop_container(engine, &container.id, timeout)
            .map_err(engine_error(format!("failed to stop {}", container.name)))?;
        reporter.progress("Container", &container.name, "Stopped");
    }
    reporter.progress("Container", &container.name, "Removing");
    remove_container(engine, &container.id, true)
        .map_err(engine_error(format!("failed to remove {}", container.name)))?;
    reporter.progress("Container", &container.name, "Removed");
    Ok(())
}
