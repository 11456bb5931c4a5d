//! `stop`, `start` and `rm` of a project's containers (all services, or the named ones).

use berth_engine::containers::{remove_container, start_container, stop_container};
use berth_engine::Engine;

use super::containers::{project_containers, ProjectContainer};
use super::{engine_error, ConvergeError, Reporter};
use crate::load::Project;

fn chosen(
    engine: &Engine,
    project: &Project,
    services: &[String],
) -> Result<Vec<ProjectContainer>, ConvergeError> {
    let known = project.services();
    for service in services {
        if !known.contains_key(service) {
            return Err(ConvergeError::Failed(format!("no such service: {service}")));
        }
    }
    Ok(project_containers(engine, &project.name)?
        .into_iter()
        .filter(|c| !c.oneoff && (services.is_empty() || services.contains(&c.service)))
        .collect())
}

/// Dependents before what they depend on.
fn reverse_dependency_order(project: &Project, containers: &mut [ProjectContainer]) {
    let levels = crate::graph::levels(&project.services()).unwrap_or_default();
    let level_of = |service: &str| {
        levels
            .iter()
            .position(|level| level.iter().any(|s| s == service))
            .unwrap_or(0)
    };
    containers.sort_by_key(|c| std::cmp::Reverse(level_of(&c.service)));
}

pub fn stop(
    engine: &mut Engine,
    project: &Project,
    services: &[String],
    timeout: Option<i64>,
    reporter: &dyn Reporter,
) -> Result<(), ConvergeError> {
    let mut containers = chosen(engine, project, services)?;
    reverse_dependency_order(project, &mut containers);
    for container in containers.iter().filter(|c| c.container.state.is_running()) {
        reporter.progress("Container", &container.name, "Stopping");
        stop_container(engine, &container.id, timeout)
            .map_err(engine_error(format!("failed to stop {}", container.name)))?;
        reporter.progress("Container", &container.name, "Stopped");
    }
    Ok(())
}

pub fn start(
    engine: &mut Engine,
    project: &Project,
    services: &[String],
    reporter: &dyn Reporter,
) -> Result<(), ConvergeError> {
    let mut containers = chosen(engine, project, services)?;
    reverse_dependency_order(project, &mut containers);
    containers.reverse();
    if containers.is_empty() {
        return Err(ConvergeError::Failed(
            "service has no container to start".into(),
        ));
    }
    for container in containers
        .iter()
        .filter(|c| !c.container.state.is_running())
    {
        reporter.progress("Container", &container.name, "Starting");
        start_container(engine, &container.id, None)
            .map_err(engine_error(format!("failed to start {}", container.name)))?;
        reporter.progress("Container", &container.name, "Started");
    }
    Ok(())
}

/// `rm`: stopped containers only (`stop` first with `-s`); running ones are left alone.
pub fn remove(
    engine: &mut Engine,
    project: &Project,
    services: &[String],
    stop_first: bool,
    reporter: &dyn Reporter,
) -> Result<Vec<String>, ConvergeError> {
    if stop_first {
        stop(engine, project, services, None, reporter)?;
    }
    let containers = chosen(engine, project, services)?;
    let mut removed = Vec::new();
    for container in containers {
        let fresh = berth_engine::containers::find_container(
            engine.store(),
            engine.config(),
            &container.id,
        )
        .map_err(engine_error(format!(
            "failed to inspect {}",
            container.name
        )))?;
        if fresh.state.is_running() {
            continue;
        }
        reporter.progress("Container", &container.name, "Removing");
        remove_container(engine, &container.id, false)
            .map_err(engine_error(format!("failed to remove {}", container.name)))?;
        reporter.progress("Container", &container.name, "Removed");
        removed.push(container.name);
    }
    Ok(removed)
}

/// `restart`: each container stopped and started again, dependencies first.
pub fn restart(
    engine: &mut Engine,
    project: &Project,
    services: &[String],
    timeout: Option<i64>,
    reporter: &dyn Reporter,
) -> Result<(), ConvergeError> {
    let mut containers = chosen(engine, project, services)?;
    reverse_dependency_order(project, &mut containers);
    containers.reverse();
    for container in &containers {
        reporter.progress("Container", &container.name, "Restarting");
        berth_engine::containers::restart_container(engine, &container.id, timeout).map_err(
            engine_error(format!("failed to restart {}", container.name)),
        )?;
        reporter.progress("Container", &container.name, "Started");
    }
    Ok(())
}

/// `kill [-s SIGNAL]`: the running containers get the signal (SIGKILL by default).
pub fn kill(
    engine: &mut Engine,
    project: &Project,
    services: &[String],
    signal: &str,
    reporter: &dyn Reporter,
) -> Result<(), ConvergeError> {
    let containers = chosen(engine, project, services)?;
    for container in containers.iter().filter(|c| c.container.state.is_running()) {
        reporter.progress("Container", &container.name, "Killing");
        berth_engine::containers::kill_container(engine, &container.id, signal)
            .map_err(engine_error(format!("failed to kill {}", container.name)))?;
        reporter.progress("Container", &container.name, "Killed");
    }
    Ok(())
}

/// `pause` (`pause: true`) or `unpause` of the running containers.
pub fn pause(
    engine: &mut Engine,
    project: &Project,
    services: &[String],
    pause: bool,
    reporter: &dyn Reporter,
) -> Result<(), ConvergeError> {
    use berth_engine::containers::state::Status;
    let containers = chosen(engine, project, services)?;
    // Pause what runs, unpause what is paused; the rest is left as it is.
    let wanted = if pause {
        Status::Running
    } else {
        Status::Paused
    };
    for container in containers
        .iter()
        .filter(|c| c.container.state.status == wanted)
    {
        let (verb, doing, done) = if pause {
            ("pause", "Pausing", "Paused")
        } else {
            ("unpause", "Unpausing", "Unpaused")
        };
        reporter.progress("Container", &container.name, doing);
        let result = if pause {
            berth_engine::containers::pause_container(engine, &container.id)
        } else {
            berth_engine::containers::unpause_container(engine, &container.id)
        };
        result.map_err(engine_error(format!("failed to {verb} {}", container.name)))?;
        reporter.progress("Container", &container.name, done);
    }
    Ok(())
}
