//! Exec instances: `POST /containers/{id}/exec` records one, `start` runs
//! it through the helper (hijacked, or detached), `resize` sets its
//! terminal, `json` reports it. Instances live in the server's memory.

use std::os::fd::{AsRawFd, OwnedFd};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use berth_engine::containers::find_container;
use berth_engine::containers::monitor::protocol::MonitorMessage;
use berth_engine::logs::Stream;
use berth_types::detach_keys::DetachMatcher;
use serde::Deserialize;
use serde_json::json;

use crate::error::ApiError;
use crate::helper::{ExecHelperRequest, Helper};
use crate::http::{Exchange, Response};
use crate::router::{reply, Handled};
use crate::routes::relay::{output_pipe, relay, Framing, Relayed, Streams};
use crate::server::{Outcome, Server};

/// `ExecConfig`, the body of `POST /containers/{id}/exec`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ExecConfig {
    pub attach_stdin: bool,
    pub attach_stdout: bool,
    pub attach_stderr: bool,
    pub tty: bool,
    pub env: Option<Vec<String>>,
    pub cmd: Option<Vec<String>>,
    pub user: String,
    pub working_dir: String,
    pub privileged: bool,
    /// docker-py sends `detachKeys` (Go's decoder matches names without
    /// regard to case).
    #[serde(alias = "detachKeys")]
    pub detach_keys: String,
}

#[derive(Debug, Default)]
pub struct ExecState {
    pub started: bool,
    pub running: bool,
    pub exit_code: Option<i32>,
    pub pid: i32,
    /// The pty master while a tty exec runs (for resize).
    pub master: Option<Arc<OwnedFd>>,
    /// A size that came before the terminal did.
    pub size: Option<(u16, u16)>,
}

pub struct ExecInstance {
    pub id: String,
    pub container_id: String,
    pub config: ExecConfig,
    pub state: Mutex<ExecState>,
}

pub fn create(server: &Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let config: ExecConfig = exchange.json()?;
    if config.cmd.as_ref().is_none_or(Vec::is_empty) {
        return Err(ApiError::bad_request("No exec command specified"));
    }
    // dockerd checks them here, and answers 500 with its words.
    if !config.detach_keys.is_empty()
        && berth_types::detach_keys::parse(&config.detach_keys).is_err()
    {
        return Err(ApiError::new(
            500,
            format!("Invalid escape keys ({}) provided", config.detach_keys),
        ));
    }
    let engine = server.engine()?;
    let engine_config = engine.config().clone();
    let container = find_container(engine.store(), &engine_config, id)?;
    if !container.state.is_running() {
        return Err(ApiError::new(
            409,
            format!("Container {} is not running", container.record.id),
        ));
    }
    let command = config.cmd.clone().unwrap_or_default();
    let exec_id = berth_engine::containers::exec_create(&engine, &container.record, &command);
    let instance = Arc::new(ExecInstance {
        id: exec_id.clone(),
        container_id: container.record.id.clone(),
        config,
        state: Mutex::new(ExecState::default()),
    });
    if let Ok(mut execs) = server.execs.lock() {
        // Finished instances older than the newest 256 go.
        if execs.len() > 256 {
            execs.retain(|_, exec| exec.state.lock().is_ok_and(|state| state.running));
        }
        execs.insert(exec_id.clone(), instance);
    }
    reply(Response::json(201, &json!({ "Id": exec_id })))
}

fn find(server: &Server, id: &str) -> Result<Arc<ExecInstance>, ApiError> {
    server
        .execs
        .lock()
        .ok()
        .and_then(|execs| execs.get(id).cloned())
        .ok_or_else(|| ApiError::not_found(format!("No such exec instance: {id}")))
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
struct StartBody {
    detach: bool,
    tty: bool,
}

fn helper_request(instance: &ExecInstance, tty: bool) -> ExecHelperRequest {
    let config = &instance.config;
    ExecHelperRequest {
        id: Some(instance.id.clone()),
        container: instance.container_id.clone(),
        command: config.cmd.clone().unwrap_or_default(),
        env: config.env.clone().unwrap_or_default(),
        working_dir: Some(config.working_dir.clone()).filter(|dir| !dir.is_empty()),
        user: Some(config.user.clone()).filter(|user| !user.is_empty()),
        tty,
        privileged: config.privileged,
        stdin: config.attach_stdin && !tty,
    }
}

pub fn start(server: &'static Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let body: StartBody = exchange.json_or_default()?;
    let instance = find(server, id)?;
    {
        let mut state = instance
            .state
            .lock()
            .map_err(|_| ApiError::internal("exec state poisoned"))?;
        if state.started {
            return Err(ApiError::new(
                409,
                format!("Error: Exec command {id} has already run"),
            ));
        }
        state.started = true;
    }
    // dockerd: the process has a terminal when the exec was created with
    // one; the start's `Tty` says only how the stream is framed (raw, or
    // multiplexed into stdout and stderr frames even for a terminal's
    // output, which docker-py reads when it starts without `tty=True`).
    let tty = instance.config.tty;
    let request = helper_request(&instance, tty);
    if body.detach {
        let null = || [Stdio::null(), Stdio::null(), Stdio::null()];
        let mut helper = Helper::spawn(
            &server.config.helper,
            &server.config.engine,
            "exec",
            &request,
            null(),
        )?;
        if tty {
            let _ = helper.receive_fd();
        }
        match helper.receive() {
            Some(MonitorMessage::Started { pid }) => {
                set_running(&instance, pid);
                let instance = Arc::clone(&instance);
                let _ = std::thread::Builder::new()
                    .name("berth-api-exec".to_owned())
                    .stack_size(64 * 1024)
                    .spawn(move || finish(&instance, helper));
                reply(Response::empty(200))
            }
            Some(MonitorMessage::Failed { message, status }) => {
                set_exited(&instance, status);
                helper.reap();
                Err(crate::helper::failure(message, status))
            }
            _ => {
                set_exited(&instance, 126);
                helper.reap();
                Err(ApiError::internal(
                    "the exec helper exited without a report",
                ))
            }
        }
    } else {
        let framing = if body.tty {
            Framing::Raw
        } else {
            Framing::Multiplex
        };
        attached(server, exchange, &instance, request, framing)
    }
}

fn attached(
    server: &Server,
    exchange: &mut Exchange<'_>,
    instance: &Arc<ExecInstance>,
    request: ExecHelperRequest,
    framing: Framing,
) -> Handled {
    let tty = request.tty;
    let config = &instance.config;
    let raw = matches!(framing, Framing::Raw);
    let (client, leftover) = exchange
        .hijack(crate::routes::attach::stream_type(exchange.version, raw))
        .map_err(|error| ApiError::internal(error.to_string()))?;
    let _open = server.activity.begin();
    let io_error =
        |error: std::io::Error| ApiError::internal(format!("failed to create a pipe: {error}"));
    let mut stdio = [Stdio::null(), Stdio::null(), Stdio::null()];
    let mut outputs = Vec::new();
    let mut input = None;
    if !tty {
        if config.attach_stdin {
            let (read, write) = output_pipe().map_err(io_error)?;
            stdio[0] = Stdio::from(read);
            input = Some(write);
        }
        // Output that nobody attached still has to go somewhere: a pipe
        // we drain keeps the process from blocking, as Docker discards it.
        let (read, write) = output_pipe().map_err(io_error)?;
        stdio[1] = Stdio::from(write);
        outputs.push((read, Stream::Stdout, config.attach_stdout));
        let (read, write) = output_pipe().map_err(io_error)?;
        stdio[2] = Stdio::from(write);
        outputs.push((read, Stream::Stderr, config.attach_stderr));
    }
    let mut helper = Helper::spawn(
        &server.config.helper,
        &server.config.engine,
        "exec",
        &request,
        stdio,
    )?;
    let master = if tty {
        helper.receive_fd().map(Arc::new)
    } else {
        None
    };
    match helper.receive() {
        Some(MonitorMessage::Started { pid }) => {
            set_running(instance, pid);
        }
        Some(MonitorMessage::Failed { message, status }) => {
            set_exited(instance, status);
            helper.reap();
            let text = format!("{message}\r\n");
            let bytes = if raw {
                text.into_bytes()
            } else {
                berth_engine::containers::monitor::frame(Stream::Stdout, text.as_bytes())
            };
            crate::http::write_quietly(&client, &bytes);
            return Ok(Outcome::Streamed { keep_alive: false });
        }
        _ => {
            set_exited(instance, 126);
            helper.reap();
            return Ok(Outcome::Streamed { keep_alive: false });
        }
    }
    let streams = match &master {
        Some(master) => {
            if let Ok(mut state) = instance.state.lock() {
                state.master = Some(Arc::clone(master));
                if let Some((height, width)) = state.size.take() {
                    set_size(master, height, width);
                }
            }
            let output = master.try_clone().ok();
            let input = if config.attach_stdin {
                master.try_clone().ok()
            } else {
                None
            };
            // A terminal's input is watched for the detach keys (the
            // exec's, else ctrl-p,ctrl-q), as dockerd's exec attach does.
            let detach = input.is_some().then(|| {
                let keys = Some(config.detach_keys.as_str());
                let keys = berth_types::detach_keys::parse_or_default(keys)
                    .unwrap_or_else(|_| berth_types::detach_keys::DEFAULT.to_vec());
                DetachMatcher::new(keys)
            });
            Streams {
                outputs: output.into_iter().map(|fd| (fd, Stream::Stdout)).collect(),
                input,
                framing,
                detach,
            }
        }
        None => {
            // Unattached streams are drained on a thread of their own.
            let mut attached_outputs = Vec::new();
            for (fd, stream, wanted) in outputs {
                if wanted {
                    attached_outputs.push((fd, stream));
                } else {
                    let _ = std::thread::Builder::new()
                        .stack_size(64 * 1024)
                        .spawn(move || {
                            let _ =
                                std::io::copy(&mut std::fs::File::from(fd), &mut std::io::sink());
                        });
                }
            }
            Streams {
                outputs: attached_outputs,
                input,
                framing,
                detach: None,
            }
        }
    };
    if relay(&client, &leftover, streams) == Relayed::Detached {
        if let Some(master) = master {
            detached(server, instance, master, helper);
            return Ok(Outcome::Streamed { keep_alive: false });
        }
    }
    finish(instance, helper);
    Ok(Outcome::Streamed { keep_alive: false })
}

/// The client detached from a terminal exec: the connection closes and
/// the process runs on (dockerd's `exec_detach`), its output read and
/// dropped until it exits, on a thread of its own.
fn detached(server: &Server, instance: &Arc<ExecInstance>, master: Arc<OwnedFd>, helper: Helper) {
    if let Ok(engine) = server.engine() {
        let config = engine.config().clone();
        if let Ok(container) = find_container(engine.store(), &config, &instance.container_id) {
            berth_engine::events::emit_container_with(
                &config.root,
                "exec_detach",
                &container.record,
                &[("execID", instance.id.as_str())],
            );
        }
    }
    let instance = Arc::clone(instance);
    let drained = std::thread::Builder::new()
        .name("berth-api-exec".to_owned())
        .stack_size(64 * 1024)
        .spawn(move || {
            let mut buffer = vec![0u8; 16 * 1024];
            // EIO once the process's side of the terminal is closed.
            loop {
                match nix::unistd::read(master.as_raw_fd(), &mut buffer) {
                    Ok(read) if read > 0 => {}
                    Err(nix::Error::EINTR) => {}
                    _ => break,
                }
            }
            finish(&instance, helper);
        });
    if let Err(error) = drained {
        tracing::warn!(%error, "failed to start a thread for a detached exec");
    }
}

fn set_running(instance: &ExecInstance, pid: i32) {
    if let Ok(mut state) = instance.state.lock() {
        state.running = true;
        state.pid = pid;
    }
}

fn set_exited(instance: &ExecInstance, code: i32) {
    if let Ok(mut state) = instance.state.lock() {
        state.running = false;
        state.exit_code = Some(code);
        state.master = None;
    }
}

/// Waits for the helper's exit report.
fn finish(instance: &ExecInstance, mut helper: Helper) {
    let mut code = None;
    while let Some(message) = helper.receive() {
        if let MonitorMessage::Exited { code: exited } = message {
            code = Some(exited);
            break;
        }
    }
    set_exited(instance, code.unwrap_or(-1));
    helper.reap();
}

fn set_size(master: &OwnedFd, height: u16, width: u16) {
    berth_runtime::console::set_window_size(master, &berth_runtime::console::window(height, width));
}

pub fn resize(server: &Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let (height, width) = crate::routes::attach::parse_size(exchange)?;
    let instance = find(server, id)?;
    let mut state = instance
        .state
        .lock()
        .map_err(|_| ApiError::internal("exec state poisoned"))?;
    match &state.master {
        Some(master) => set_size(master, height, width),
        None => state.size = Some((height, width)),
    }
    reply(Response::empty(200))
}

pub fn inspect(server: &Server, id: &str) -> Handled {
    let instance = find(server, id)?;
    let state = instance
        .state
        .lock()
        .map_err(|_| ApiError::internal("exec state poisoned"))?;
    let config = &instance.config;
    let command = config.cmd.clone().unwrap_or_default();
    let (entrypoint, arguments) = match command.split_first() {
        Some((first, rest)) => (first.clone(), rest.to_vec()),
        None => (String::new(), Vec::new()),
    };
    reply(Response::json(
        200,
        &json!({
            "ID": instance.id,
            "Running": state.running,
            "ExitCode": state.exit_code,
            "ProcessConfig": {
                "tty": config.tty,
                "entrypoint": entrypoint,
                "arguments": arguments,
                "privileged": config.privileged,
                "user": config.user,
            },
            "OpenStdin": config.attach_stdin,
            "OpenStderr": config.attach_stderr,
            "OpenStdout": config.attach_stdout,
            "CanRemove": false,
            "ContainerID": instance.container_id,
            // dockerd keeps the parsed keys (Go bytes: base64 in JSON).
            "DetachKeys": detach_keys_json(&config.detach_keys),
            "Pid": state.pid,
        }),
    ))
}

/// An exec's `DetachKeys` as dockerd's inspect shows them: the bytes of
/// the keys given, base64-encoded ("" when none were).
fn detach_keys_json(keys: &str) -> String {
    use base64::Engine as _;
    let bytes = if keys.is_empty() {
        Vec::new()
    } else {
        berth_types::detach_keys::parse(keys).unwrap_or_default()
    };
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
