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
    // Docker resolves an exec's user in the running container's own
    // /etc/passwd and /etc/group (users added at run time included); the
    // numeric result then needs no further lookup in the image.
    let live_root = std::path::PathBuf::from(format!("/proc/{}/root", container.state.pid));
    // An unknown user is Docker's 126 (the process cannot be invoked).
    let live_user =
        berth_runtime::user::resolve_user(&live_root, &record.run.user, &record.run.group_add)
            .map_err(|error| {
                EngineError::StartFailed(super::StartFailure {
                    message: error.to_string(),
                    status: 126,
                })
            })?;
    record.run.user = format!("{}:{}", live_user.uid, live_user.gid);
    record.run.group_add = Vec::new();
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
    process.additional_gids = live_user.additional_gids.clone();
    if !record
        .run
        .env
        .iter()
        .any(|entry| entry.starts_with("HOME="))
    {
        process.env.retain(|entry| !entry.starts_with("HOME="));
        process.env.push(format!("HOME={}", live_user.home));
    }
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
