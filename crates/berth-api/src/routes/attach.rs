//! `start`, `restart`, `attach` and `resize`.
//!
//! `docker run` attaches before it starts: the attach request waits here
//! (a [`PendingAttach`]) until the start, which then runs the helper with
//! pipes whose other ends the attach relays to its client. Attaching to a
//! running container joins its monitor's attach socket instead.

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::process::Stdio;
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::time::Duration;

use berth_engine::containers::monitor::protocol::MonitorMessage;
use berth_engine::containers::paths::ContainerPaths;
use berth_engine::containers::{find_container, stop_container};
use berth_engine::logs::Stream;

use crate::error::ApiError;
use crate::helper::{failure, Helper, StartRequest};
use crate::http::{Exchange, Response};
use crate::router::{reply, Handled};
use crate::routes::relay::{output_pipe, relay, Framing, Streams};
use crate::server::{client_gone, Outcome, Server};

/// An attach waiting for its container to start.
pub struct PendingAttach {
    stdin: bool,
    stdout: bool,
    stderr: bool,
    streams: Sender<Streams>,
}

/// The content type of an attached stream (API 1.42 named the
/// multiplexed one; older clients expect raw-stream for both).
pub fn stream_type(version: (u32, u32), tty: bool) -> &'static str {
    if tty || version < (1, 42) {
        "application/vnd.docker.raw-stream"
    } else {
        "application/vnd.docker.multiplexed-stream"
    }
}

pub fn attach(server: &Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let engine = server.engine()?;
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, id)?;
    let wants = |name: &str| exchange.query_bool(name);
    let (stdin, stdout, stderr, stream) = (
        wants("stdin"),
        wants("stdout"),
        wants("stderr"),
        wants("stream"),
    );
    if exchange
        .query("detachKeys")
        .is_some_and(|keys| !keys.is_empty())
    {
        tracing::debug!("detach keys are not supported; ignored");
    }
    let tty = container.record.run.tty;
    let id = container.record.id.clone();
    // Registered before the client hears back: it starts the container
    // as soon as the attach is answered.
    let receiver = if stream && !container.state.is_running() {
        let (sender, receiver) = channel();
        if let Ok(mut attaches) = server.attaches.lock() {
            attaches.insert(
                id.clone(),
                PendingAttach {
                    stdin,
                    stdout,
                    stderr,
                    streams: sender,
                },
            );
        }
        Some(receiver)
    } else {
        None
    };
    let forget = || {
        if let Ok(mut attaches) = server.attaches.lock() {
            attaches.remove(&id);
        }
    };
    let (client, leftover) = match exchange.hijack(stream_type(exchange.version, tty)) {
        Ok(hijacked) => hijacked,
        Err(error) => {
            forget();
            return Err(ApiError::internal(error.to_string()));
        }
    };
    if exchange.query_bool("logs") {
        replay_logs(&config, &id, &client, tty, stdout, stderr);
    }
    if !stream {
        return Ok(Outcome::Streamed { keep_alive: false });
    }
    let _open = server.activity.begin();
    let Some(receiver) = receiver else {
        attach_running(&config, &container, &client, &leftover, stdin);
        return Ok(Outcome::Streamed { keep_alive: false });
    };
    let mut checks = 0u32;
    loop {
        match receiver.recv_timeout(Duration::from_millis(200)) {
            Ok(streams) => {
                relay(&client, &leftover, streams);
                return Ok(Outcome::Streamed { keep_alive: false });
            }
            Err(RecvTimeoutError::Timeout) => {
                if client_gone(&client) {
                    forget();
                    return Ok(Outcome::Streamed { keep_alive: false });
                }
                checks += 1;
                if !checks.is_multiple_of(5) {
                    continue;
                }
                // Started by someone else (the CLI, another client), or
                // removed: join the monitor, or end the stream.
                match find_container(engine.store(), &config, &id) {
                    Ok(current) if current.state.is_running() => {
                        forget();
                        attach_running(&config, &current, &client, &leftover, stdin);
                        return Ok(Outcome::Streamed { keep_alive: false });
                    }
                    Ok(_) => {}
                    Err(_) => {
                        forget();
                        return Ok(Outcome::Streamed { keep_alive: false });
                    }
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Ok(Outcome::Streamed { keep_alive: false })
            }
        }
    }
}

/// Joins a running container's monitor (its attach socket).
fn attach_running(
    config: &berth_engine::EngineConfig,
    container: &berth_engine::containers::Container,
    client: &UnixStream,
    leftover: &[u8],
    stdin: bool,
) {
    let tty = container.record.run.tty;
    let paths = ContainerPaths::new(&config.root, &config.run_root, &container.record.id);
    let Ok(socket) = paths.with_short_attach_path(|path| UnixStream::connect(path)) else {
        crate::http::write_quietly(
            client,
            b"failed to attach: the container's monitor does not answer\r\n",
        );
        return;
    };
    let output = OwnedFd::from(socket);
    let input = if stdin && container.record.run.open_stdin {
        output.try_clone().ok()
    } else {
        None
    };
    relay(
        client,
        leftover,
        Streams {
            outputs: vec![(output, Stream::Stdout)],
            input,
            framing: if tty {
                Framing::Unframe
            } else {
                Framing::PassFrames
            },
        },
    );
}

/// `logs=1`: what the container wrote so far, before the live stream.
fn replay_logs(
    config: &berth_engine::EngineConfig,
    id: &str,
    client: &UnixStream,
    tty: bool,
    stdout: bool,
    stderr: bool,
) {
    let path = ContainerPaths::new(&config.root, &config.run_root, id).log(id);
    let options = berth_engine::logs::LogOptions {
        stdout,
        stderr,
        ..Default::default()
    };
    if !(stdout || stderr) || !path.exists() {
        return;
    }
    let _ = berth_engine::logs::read_logs(&path, &options, |stream, bytes| {
        let data = if tty {
            bytes.to_vec()
        } else {
            berth_engine::containers::monitor::frame(stream, bytes)
        };
        crate::http::write_quietly(client, &data);
    });
}

pub fn start(server: &'static Server, id: &str) -> Handled {
    let engine = server.engine()?;
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, id)?;
    if container.state.is_running() {
        return reply(Response::empty(304));
    }
    drop(engine);
    start_found(
        server,
        &container.record.id,
        container.record.run.tty,
        container.record.run.open_stdin,
        container.record.run.auto_remove,
    )?;
    reply(Response::empty(204))
}

/// Starts a container through the helper, with a waiting attach's pipes.
fn start_found(
    server: &'static Server,
    id: &str,
    tty: bool,
    open_stdin: bool,
    auto_remove: bool,
) -> Result<(), ApiError> {
    let pending = server
        .attaches
        .lock()
        .ok()
        .and_then(|mut attaches| attaches.remove(id));
    let io_error =
        |error: std::io::Error| ApiError::internal(format!("failed to create a pipe: {error}"));
    let mut stdio = [Stdio::null(), Stdio::null(), Stdio::null()];
    let mut outputs = Vec::new();
    let mut input = None;
    let mut request = StartRequest {
        container: id.to_owned(),
        wait: pending.is_some() || auto_remove,
        ..StartRequest::default()
    };
    if let Some(pending) = &pending {
        if pending.stdin && open_stdin {
            let (read, write) = output_pipe().map_err(io_error)?;
            stdio[0] = Stdio::from(read);
            input = Some(write);
            request.stdin = true;
        }
        if pending.stdout {
            let (read, write) = output_pipe().map_err(io_error)?;
            stdio[1] = Stdio::from(write);
            outputs.push((read, Stream::Stdout));
            request.stdout = true;
        }
        if pending.stderr && !tty {
            let (read, write) = output_pipe().map_err(io_error)?;
            stdio[2] = Stdio::from(write);
            outputs.push((read, Stream::Stderr));
            request.stderr = true;
        }
    }
    if request.wait {
        server.exits.expect(id);
    }
    let mut helper = Helper::spawn(
        &server.config.helper,
        &server.config.engine,
        "start",
        &request,
        stdio,
    )?;
    match helper.receive() {
        Some(MonitorMessage::Started { .. }) => {
            if let Some(pending) = pending {
                let _ = pending.streams.send(Streams {
                    outputs,
                    input,
                    framing: if tty {
                        Framing::Raw
                    } else {
                        Framing::Multiplex
                    },
                });
            }
            if request.wait {
                let board_id = id.to_owned();
                let exits = &server.exits;
                let _ = std::thread::Builder::new()
                    .name("berth-api-exit".to_owned())
                    .stack_size(64 * 1024)
                    .spawn(move || {
                        let mut code = None;
                        while let Some(message) = helper.receive() {
                            if let MonitorMessage::Exited { code: exited } = message {
                                code = Some(exited);
                                break;
                            }
                        }
                        exits.record(&board_id, code);
                        helper.reap();
                    });
            } else {
                helper.reap();
            }
            Ok(())
        }
        Some(MonitorMessage::Failed { message, status }) => {
            server.exits.record(id, Some(status));
            helper.reap();
            Err(failure(message, status))
        }
        Some(MonitorMessage::Exited { code }) => {
            server.exits.record(id, Some(code));
            helper.reap();
            Ok(())
        }
        None => {
            server.exits.record(id, Some(125));
            helper.reap();
            Err(ApiError::internal(
                "the start helper exited without a report",
            ))
        }
    }
}

pub fn restart(server: &'static Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let timeout = exchange
        .query("t")
        .filter(|text| !text.is_empty())
        .map(|text| {
            text.parse::<i64>()
                .map_err(|_| ApiError::bad_request(format!("invalid value for t: {text:?}")))
        })
        .transpose()?;
    let mut engine = server.engine()?;
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, id)?;
    stop_container(&mut engine, id, timeout)?;
    drop(engine);
    start_found(
        server,
        &container.record.id,
        container.record.run.tty,
        container.record.run.open_stdin,
        container.record.run.auto_remove,
    )?;
    reply(Response::empty(204))
}

/// Terminal size: checked, then applied to the container's terminal by its
/// monitor, which reads it from the attached side (nothing to do for
/// containers attached through pipes).
pub fn resize(server: &Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    parse_size(exchange)?;
    let engine = server.engine()?;
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, id)?;
    if !container.state.is_running() {
        return Err(ApiError::new(
            409,
            format!("Container {} is not running", container.record.id),
        ));
    }
    reply(Response::empty(200))
}

/// `h` and `w` (Docker requires both, as unsigned numbers).
pub fn parse_size(exchange: &Exchange<'_>) -> Result<(u16, u16), ApiError> {
    let number = |name: &str| {
        exchange
            .query(name)
            .unwrap_or_default()
            .parse::<u16>()
            .map_err(|_| {
                ApiError::bad_request(format!(
                    "invalid value for {name}: {:?}",
                    exchange.query(name).unwrap_or_default()
                ))
            })
    };
    Ok((number("h")?, number("w")?))
}
