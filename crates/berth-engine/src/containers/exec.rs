//! `exec`: a process in a running container, built from the container's
//! settings plus the exec's own (`-e`, `-w`, `-u`, `--privileged`, `-t`).
//!
//! Docker's events: `exec_create` when the exec gets its id (here, or the
//! API's `POST /containers/{id}/exec` through [`exec_create`]),
//! `exec_start` just before the process starts, and `exec_die` from
//! whoever waits for it ([`ExecProcess::wait`]; for `exec -d`, a waiter
//! forked as a container's monitor is).

use std::path::PathBuf;

use berth_runtime::{ContainerRef, ProcessSpec, Runtime, RuntimeError, Stdio};
use nix::unistd::{fork, ForkResult, Pid};

use super::error::ContainerError;
use super::lookup::find_container;
use super::monitor::protocol::{MonitorMessage, MonitorReceiver};
use super::paths::ContainerPaths;
use super::record::ContainerRecord;
use super::spec::build_spec;
use crate::{Engine, EngineError};

#[derive(Clone, Debug, Default)]
pub struct ExecRequest {
    /// The id [`exec_create`] gave the exec; None creates it now (`berth
    /// exec` creates and starts at once).
    pub id: Option<String>,
    pub command: Vec<String>,
    pub env: Vec<String>,
    pub working_dir: Option<String>,
    pub user: Option<String>,
    pub tty: bool,
    /// With `tty`: the terminal's first size (rows, columns), set before
    /// the process starts.
    pub console_size: Option<(u16, u16)>,
    pub privileged: bool,
}

/// A new exec id for a command to run in `record`'s container later,
/// logged as Docker's `exec_create` (the API's exec instances).
pub fn exec_create(engine: &Engine, record: &ContainerRecord, command: &[String]) -> String {
    let id = super::names::new_id();
    log_exec(engine, "exec_create", record, &id, command);
    id
}

fn log_exec(engine: &Engine, action: &str, record: &ContainerRecord, id: &str, command: &[String]) {
    let action = crate::events::exec_action(action, command);
    let root = &engine.config().root;
    crate::events::emit_container_with(root, &action, record, &[("execID", id)]);
}

/// A started exec process, the caller's child.
pub struct ExecProcess {
    pub pid: Pid,
    /// The exec's id (`execID` in its events).
    pub id: String,
    record: ContainerRecord,
    root: PathBuf,
}

impl ExecProcess {
    /// Waits for the process to exit and logs Docker's `exec_die`; returns
    /// its exit status (128 + the signal when killed).
    pub fn wait(self) -> i32 {
        let code = berth_runtime::wait_exit_code(self.pid);
        let exit_code = code.to_string();
        let attributes = [("execID", self.id.as_str()), ("exitCode", &exit_code)];
        crate::events::emit_container_with(&self.root, "exec_die", &self.record, &attributes);
        code
    }
}

/// Everything an exec needs, resolved in the calling process.
pub(super) struct PreparedExec {
    container_pid: i32,
    process: ProcessSpec,
    runtime: std::sync::Arc<dyn Runtime>,
    pub(super) record: ContainerRecord,
    id: String,
    root: PathBuf,
}

impl PreparedExec {
    pub(super) fn launch(self, stdio: Stdio) -> Result<ExecProcess, EngineError> {
        let container = ContainerRef {
            id: &self.record.id,
            pid: self.container_pid,
        };
        let launched = self.runtime.exec(container, &self.process, stdio);
        // Docker's exec answers 126 to any process that could not start,
        // a command not found included (`run` says 127 for that).
        let pid = launched.map_err(|error| match error {
            RuntimeError::Exec(error) => EngineError::StartFailed(super::StartFailure {
                status: 126,
                message: error.to_string(),
            }),
            other => EngineError::Runtime(Box::new(other)),
        })?;
        Ok(ExecProcess {
            pid,
            id: self.id,
            record: self.record,
            root: self.root,
        })
    }
}

/// Starts the process; the caller waits for it (it is the caller's child)
/// with [`ExecProcess::wait`].
pub fn exec_in_container(
    engine: &Engine,
    text: &str,
    request: &ExecRequest,
    stdio: Stdio,
) -> Result<ExecProcess, EngineError> {
    prepare(engine, text, request)?.launch(stdio)
}

/// `exec -d`: the process runs under a waiter of its own, forked as a
/// container's monitor is, which logs its `exec_die`; returns the exec's
/// id once the process runs (or why it could not start). Call it with no
/// other thread running, as [`super::start_container`].
pub fn exec_detached(
    engine: &mut Engine,
    text: &str,
    request: &ExecRequest,
) -> Result<String, EngineError> {
    let prepared = prepare(engine, text, request)?;
    let id = prepared.id.clone();
    let (status_read, status_write) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(ContainerError::Pipe)?;
    // No SQLite connection may cross the fork (see Store::suspend).
    engine.store_mut().suspend()?;
    // SAFETY: the caller runs no other thread (see above), so the child
    // cannot inherit a lock held by another thread.
    let forked = unsafe { fork() }.map_err(|source| ContainerError::Fork {
        what: "the exec's waiter",
        source,
    })?;
    match forked {
        ForkResult::Child => {
            drop(status_read);
            let container_id = prepared.record.id.clone();
            super::monitor::run_monitor(status_write, &container_id, |sender| {
                // The waiter's stdio is /dev/null by now; so is the exec's.
                let null = || -> Result<std::os::fd::OwnedFd, EngineError> {
                    fs_err::OpenOptions::new()
                        .read(true)
                        .write(true)
                        .open("/dev/null")
                        .map(Into::into)
                        .map_err(|error| ContainerError::DevNull(error).into())
                };
                let stdio = Stdio {
                    stdin: null()?,
                    stdout: null()?,
                    stderr: null()?,
                    console: None,
                };
                match prepared.launch(stdio) {
                    Ok(process) => {
                        sender.send(&MonitorMessage::Started {
                            pid: process.pid.as_raw(),
                        });
                        sender.close();
                        super::monitor::release_read_only_pages();
                        process.wait();
                    }
                    Err(error) => sender.send(&MonitorMessage::Failed {
                        message: crate::ErrorChain(&error).to_string(),
                        status: match &error {
                            EngineError::StartFailed(failure) => failure.status,
                            _ => 126,
                        },
                    }),
                }
                Ok(())
            })
        }
        ForkResult::Parent { child } => {
            drop(status_write);
            let started = MonitorReceiver::new(status_read).receive();
            let failure = |message: String, status| {
                let _ = nix::sys::wait::waitpid(child, None);
                Err(EngineError::StartFailed(super::StartFailure {
                    message,
                    status,
                }))
            };
            match started {
                Some(MonitorMessage::Started { .. }) => Ok(id),
                Some(MonitorMessage::Failed { message, status }) => failure(message, status),
                _ => failure("the exec's waiter exited without a report".to_owned(), 126),
            }
        }
    }
}

/// Checks the container, resolves the process, and logs `exec_create`
/// (for a new exec) and `exec_start`: Docker logs both before the process
/// starts, so an exec whose command cannot run has no `exec_die`.
pub(super) fn prepare(
    engine: &Engine,
    text: &str,
    request: &ExecRequest,
) -> Result<PreparedExec, EngineError> {
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, text)?;
    super::lifecycle::check(
        container.state.status,
        &container.record.id,
        super::lifecycle::Operation::Exec,
    )?;
    if container.state.pid <= 0 {
        return Err(EngineError::ContainerNotRunning {
            id: container.record.id.clone(),
        });
    }
    let id = match &request.id {
        Some(id) => id.clone(),
        None => exec_create(engine, &container.record, &request.command),
    };
    log_exec(
        engine,
        "exec_start",
        &container.record,
        &id,
        &request.command,
    );
    let mut record = container.record.clone();
    if let Some(user) = &request.user {
        record.run.user = user.clone();
    }
    // Docker resolves an exec's user in the running container's own
    // /etc/passwd and /etc/group (users added at run time included); the
    // numeric result then needs no further lookup in the image.
    let runtime = config.runtime_of(&container.record);
    let live_root = runtime.root(super::manage::runtime_ref(&container));
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
    let version =
        berth_runtime::cgroups::CgroupVersion::detect().map_err(ContainerError::CgroupLayout)?;
    let layers = super::start::container_layers(engine.store(), &record)?;
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
    process.console_size = request.console_size.filter(|_| request.tty);
    Ok(PreparedExec {
        container_pid: container.state.pid,
        process,
        runtime: std::sync::Arc::clone(config.shared_runtime_of(&container.record)),
        record: container.record,
        id,
        root: config.root.clone(),
    })
}
