//! `exec`: a process in a running container, built from the container's
//! settings plus the exec's own (`-e`, `-w`, `-u`, `--privileged`, `-t`).

use berth_runtime::cgroups::{new_manager, CgroupDriver, CgroupVersion};
use berth_runtime::Stdio;
use nix::unistd::Pid;

use super::lookup::find_container;
use super::paths::ContainerPaths;
use super::spec::build_spec;
use crate::{Engine, EngineError};

#[derive(Clone, Debug, Default)]
pub struct ExecRequest {
    pub command: Vec<String>,
    pub env: Vec<String>,
    pub working_dir: Option<String>,
    pub user: Option<String>,
    pub tty: bool,
    pub privileged: bool,
}

/// Starts the process; the caller waits for it (it is the caller's child).
pub fn exec_in_container(
    engine: &Engine,
    text: &str,
    request: &ExecRequest,
    stdio: Stdio,
) -> Result<Pid, EngineError> {
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, text)?;
    if !container.state.is_running() || container.state.pid <= 0 {
        return Err(EngineError::ContainerNotRunning {
            id: container.record.id.clone(),
        });
    }
    if container.state.status == super::state::Status::Paused {
        return Err(EngineError::InvalidArgument(format!(
            "Container {} is paused, unpause the container before exec",
            container.record.id
        )));
    }
    let mut record = container.record.clone();
    if let Some(user) = &request.user {
        record.run.user = user.clone();
    }
    if request.privileged {
        record.run.privileged = true;
    }
    record.run.tty = request.tty;
    let paths = ContainerPaths::new(&config.root, &config.run_root, &record.id);
    let version = CgroupVersion::detect().map_err(|error| EngineError::Start(error.to_string()))?;
    let layers = super::start::container_layers(engine.store(), &record, &paths)?;
    let spec = build_spec(
        &record,
        &paths,
        &layers,
        &config.root,
        &config.root.join("volumes"),
        &version,
    )?;
    let mut process = spec.process;
    process.args = request.command.clone();
    for entry in &request.env {
        let key = entry.split('=').next().unwrap_or(entry);
        process
            .env
            .retain(|existing| existing.split('=').next() != Some(key));
        process.env.push(entry.clone());
    }
    if let Some(directory) = &request.working_dir {
        process.cwd = directory.clone();
    }
    let cgroup_path = CgroupDriver::default()
        .container_path(None, &record.id)
        .map_err(|error| EngineError::Start(error.to_string()))?;
    let cgroup = new_manager(&version, cgroup_path);
    berth_runtime::exec::exec_in(container.state.pid, &process, stdio, cgroup.as_ref()).map_err(
        |error| {
            EngineError::StartFailed(super::StartFailure {
                status: error.exit_status().max(126),
                message: error.to_string(),
            })
        },
    )
}
