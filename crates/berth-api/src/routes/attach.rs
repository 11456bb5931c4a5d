//! `start`, `restart`, `attach` (hijacked, or over a websocket) and
//! `resize`.
//!
//! `docker run` attaches before it starts: the attach request waits here
//! (a [`PendingAttach`]) until the start, which then hands the container's
//! monitor pipes whose other ends the attach relays to its client.
//! Attaching to a running container joins its monitor's attach socket
//! instead.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use berth_engine::containers::paths::ContainerPaths;
use berth_engine::containers::{
    find_container, start_container, stop_container_with, Attachment, Container,
};
use berth_engine::logs::Stream;
use berth_engine::{Engine, EngineConfig};
use berth_types::detach_keys::DetachMatcher;
use fs_err::os::unix::fs::OpenOptionsExt;

use crate::error::ApiError;
use crate::helper::failure;
use crate::http::websocket::{self, Opcode};
use crate::http::{Exchange, Response};
use crate::router::{reply, Handled};
use crate::routes::relay::{output_pipe, relay, Framing, Relayed, Streams};
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

/// What one attach asked for.
#[derive(Clone, Copy, Debug)]
struct AttachOptions {
    stdin: bool,
    stdout: bool,
    stderr: bool,
    logs: bool,
    stream: bool,
    /// Docker's 8-byte frames around each write (a hijacked attach without
    /// a tty); else the bytes as the container wrote them (a tty, or a
    /// websocket, whose own frames carry them).
    multiplexed: bool,
}

/// The streams the query asks for (`all`: all three, whatever it says),
/// and the detach sequence: `detachKeys`, else ctrl-p,ctrl-q (dockerd's
/// `copyEscapable` default); keys it cannot parse are its 400.
fn requested(exchange: &Exchange<'_>, all: bool) -> Result<(AttachOptions, Vec<u8>), ApiError> {
    let keys = exchange.query("detachKeys");
    let detach_keys = berth_types::detach_keys::parse_or_default(keys).map_err(|_| {
        ApiError::bad_request(format!(
            "Invalid detach keys ({}) provided",
            keys.unwrap_or_default()
        ))
    })?;
    let wants = |name: &str| exchange.query_bool(name);
    let options = AttachOptions {
        stdin: all || wants("stdin"),
        stdout: all || wants("stdout"),
        stderr: all || wants("stderr"),
        logs: wants("logs"),
        stream: wants("stream"),
        multiplexed: false,
    };
    Ok((options, detach_keys))
}

/// The matcher for an attach's input: only a terminal's is watched
/// (dockerd copies a non-tty stdin as it comes).
fn watch_input(
    container: &Container,
    options: AttachOptions,
    keys: Vec<u8>,
) -> Option<DetachMatcher> {
    (container.record.run.tty && options.stdin && container.record.run.open_stdin)
        .then(|| DetachMatcher::new(keys))
}

pub fn attach(server: &Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let engine = server.engine()?;
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, id)?;
    let tty = container.record.run.tty;
    let (requested, keys) = requested(exchange, false)?;
    let options = AttachOptions {
        multiplexed: !tty,
        ..requested
    };
    let detach = watch_input(&container, options, keys);
    let waiting = wait_for_start(server, &container, options);
    let (client, leftover) = match exchange.hijack(stream_type(exchange.version, tty)) {
        Ok(hijacked) => hijacked,
        Err(error) => {
            forget(server, &container.record.id);
            return Err(ApiError::internal(error.to_string()));
        }
    };
    serve_attach(
        server,
        &engine,
        &container,
        (&client, &leftover),
        options,
        waiting,
        detach,
    );
    Ok(Outcome::Streamed { keep_alive: false })
}

/// `GET /containers/{id}/attach/ws`: the same attach over a websocket
/// (RFC 6455). As Docker: the output is not multiplexed, each read of it
/// goes in a binary frame (text before API 1.28), the client's data frames
/// go to stdin, and before API 1.42 all three streams are attached
/// whatever the query says.
pub fn attach_websocket(server: &Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let engine = server.engine()?;
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, id)?;
    let handshake = match websocket::check_handshake(&exchange.request) {
        Ok(handshake) => handshake,
        Err(error) => return reply(error.response()),
    };
    let (options, keys) = requested(exchange, exchange.version < (1, 42))?;
    let detach = watch_input(&container, options, keys);
    let data = if exchange.version >= (1, 28) {
        Opcode::Binary
    } else {
        Opcode::Text
    };
    // The attach streams on one end, as on a hijacked connection; a
    // thread carries the other end over the websocket.
    let (near, far) = UnixStream::pair()
        .map_err(|error| ApiError::internal(format!("failed to create a socket pair: {error}")))?;
    let waiting = wait_for_start(server, &container, options);
    let (client, leftover) = match websocket::upgrade(exchange, &handshake) {
        Ok(upgraded) => upgraded,
        Err(error) => {
            forget(server, &container.record.id);
            return Err(ApiError::internal(error.to_string()));
        }
    };
    std::thread::scope(|scope| {
        let carrier = std::thread::Builder::new()
            .name("berth-api-websocket".to_owned())
            .stack_size(256 * 1024)
            .spawn_scoped(scope, || {
                websocket::serve_stream(&client, &leftover, far, data);
            });
        match carrier {
            Ok(_) => serve_attach(
                server,
                &engine,
                &container,
                (&near, &[]),
                options,
                waiting,
                detach,
            ),
            Err(error) => {
                tracing::warn!(%error, "failed to start a websocket thread");
                forget(server, &container.record.id);
            }
        }
        // Its end tells the carrier the stream is over.
        drop(near);
    });
    Ok(Outcome::Streamed { keep_alive: false })
}

/// A stream for a container that is not running waits for its start,
/// registered before the client hears back: `docker run` starts the
/// container as soon as the attach is answered.
fn wait_for_start(
    server: &Server,
    container: &Container,
    options: AttachOptions,
) -> Option<Receiver<Streams>> {
    if !options.stream || container.state.is_running() {
        return None;
    }
    let (sender, receiver) = channel();
    if let Ok(mut attaches) = server.attaches.lock() {
        attaches.insert(
            container.record.id.clone(),
            PendingAttach {
                stdin: options.stdin,
                stdout: options.stdout,
                stderr: options.stderr,
                streams: sender,
            },
        );
    }
    Some(receiver)
}

fn forget(server: &Server, id: &str) {
    if let Ok(mut attaches) = server.attaches.lock() {
        attaches.remove(id);
    }
}

/// Streams an attach to `client` (the hijacked connection, or a
/// websocket's end of a socket pair): the log so far with `logs`, then the
/// live streams with `stream`, until the container's streams end or the
/// client leaves.
///
/// The detach keys (`detach`, with a terminal) end the attach as dockerd
/// ends it: the connection closes, a `detach` event is logged, and the
/// container runs on.
fn serve_attach(
    server: &Server,
    engine: &Engine,
    container: &Container,
    (client, leftover): (&UnixStream, &[u8]),
    options: AttachOptions,
    waiting: Option<Receiver<Streams>>,
    detach: Option<DetachMatcher>,
) {
    let config = engine.config();
    let id = &container.record.id;
    if options.logs {
        replay_logs(config, &container.record, client, options);
    }
    if !options.stream {
        return;
    }
    let _open = server.activity.begin();
    let relayed = |relayed: Relayed| {
        if relayed == Relayed::Detached {
            berth_engine::events::emit_container(engine.store(), "detach", &container.record);
        }
    };
    let Some(receiver) = waiting else {
        relayed(attach_running(
            config, container, client, leftover, options, detach,
        ));
        return;
    };
    let mut detach = detach;
    let mut checks = 0u32;
    loop {
        match receiver.recv_timeout(Duration::from_millis(200)) {
            Ok(mut streams) => {
                if !options.multiplexed && streams.framing == Framing::Multiplex {
                    streams.framing = Framing::Raw;
                }
                streams.detach = detach.take();
                relayed(relay(client, leftover, streams));
                return;
            }
            Err(RecvTimeoutError::Timeout) => {
                if client_gone(client) {
                    forget(server, id);
                    return;
                }
                checks += 1;
                if !checks.is_multiple_of(5) {
                    continue;
                }
                // Started by someone else (the CLI, another client), or
                // removed: join the monitor, or end the stream.
                match find_container(engine.store(), config, id) {
                    Ok(current) if current.state.is_running() => {
                        forget(server, id);
                        let detach = detach.take();
                        relayed(attach_running(
                            config, &current, client, leftover, options, detach,
                        ));
                        return;
                    }
                    Ok(_) => {}
                    Err(_) => {
                        forget(server, id);
                        return;
                    }
                }
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Joins a running container's monitor (its attach socket).
fn attach_running(
    config: &EngineConfig,
    container: &Container,
    client: &UnixStream,
    leftover: &[u8],
    options: AttachOptions,
    detach: Option<DetachMatcher>,
) -> Relayed {
    let paths = ContainerPaths::new(&config.root, &config.run_root, &container.record.id);
    let Ok(socket) = paths.with_short_attach_path(|path| UnixStream::connect(path)) else {
        crate::http::write_quietly(
            client,
            b"failed to attach: the container's monitor does not answer\r\n",
        );
        return Relayed::Ended;
    };
    let output = OwnedFd::from(socket);
    let input = if options.stdin && container.record.run.open_stdin {
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
            // The monitor sends frames; a raw stream takes their payloads.
            framing: if options.multiplexed {
                Framing::PassFrames
            } else {
                Framing::Unframe
            },
            detach,
        },
    )
}

/// `logs=1`: what the container wrote so far, before the live stream.
fn replay_logs(
    config: &EngineConfig,
    record: &berth_engine::containers::record::ContainerRecord,
    client: &UnixStream,
    options: AttachOptions,
) {
    let log_options = berth_engine::logs::LogOptions {
        stdout: options.stdout,
        stderr: options.stderr,
        ..Default::default()
    };
    if !(options.stdout || options.stderr) {
        return;
    }
    // `none` keeps nothing to replay.
    let paths = ContainerPaths::new(&config.root, &config.run_root, &record.id);
    let Ok(location) = berth_engine::containers::log_location(&paths, record) else {
        return;
    };
    let _ = berth_engine::logs::read_logs(&location, &log_options, |stream, bytes| {
        let data = if options.multiplexed {
            berth_engine::containers::monitor::frame(stream, bytes)
        } else {
            bytes.to_vec()
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

/// Starts a container with a waiting attach's pipes as its streams, in
/// this process: the member of a warm pool claim held since its create
/// takes them, or `start_container` starts it cold (its monitor is started
/// without a fork of this multi-threaded process, see berth-engine
/// `monitor/launch.rs`). The exit code of a container someone waits for
/// (an attach, `--rm`) goes on the exit board.
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
    let mut attachment = Attachment::default();
    let mut outputs = Vec::new();
    let mut input = None;
    if let Some(pending) = &pending {
        if pending.stdin && open_stdin {
            let (read, write) = output_pipe().map_err(io_error)?;
            attachment.stdin = Some(read);
            input = Some(write);
        }
        if pending.stdout {
            let (read, write) = output_pipe().map_err(io_error)?;
            attachment.stdout = Some(write);
            outputs.push((read, Stream::Stdout));
        }
        if pending.stderr && !tty {
            let (read, write) = output_pipe().map_err(io_error)?;
            attachment.stderr = Some(write);
            outputs.push((read, Stream::Stderr));
        }
    }
    let wait = pending.is_some() || auto_remove;
    if wait {
        server.exits.expect(id);
    }
    let mut engine = server.engine()?;
    let mut refill = None;
    let started = match server.claims.take(id) {
        Some(mut claimed) => {
            claimed.keep_claim_if_it_fits(&engine);
            refill = claimed.take_refill();
            claimed.start(&mut engine, Some(attachment))
        }
        None => start_container(&mut engine, id, Some(attachment)),
    };
    let mut started = match started {
        Ok(started) => started,
        Err(error) => {
            let status = error.run_status();
            server.exits.record(id, Some(status));
            return Err(failure(ApiError::from(error).message, status));
        }
    };
    if let Some(pending) = pending {
        let _ = pending.streams.send(Streams {
            outputs,
            input,
            framing: if tty {
                Framing::Raw
            } else {
                Framing::Multiplex
            },
            // The attach that waited sets its own.
            detach: None,
        });
    }
    if !wait {
        return Ok(());
    }
    let board_id = id.to_owned();
    let exits = &server.exits;
    let watcher = std::thread::Builder::new()
        .name("berth-api-exit".to_owned())
        .stack_size(64 * 1024)
        .spawn(move || {
            let code = started.wait_exit().unwrap_or(-1);
            exits.record(&board_id, Some(code));
            // A claimed member's replacement is built once a short run is
            // done (or its delay has passed).
            drop(refill);
        });
    if let Err(error) = watcher {
        tracing::warn!(%error, "failed to start a thread to wait for a container's exit");
    }
    Ok(())
}

pub fn restart(server: &'static Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let options = super::containers::stop_options(exchange)?;
    let mut engine = server.engine()?;
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, id)?;
    stop_container_with(&mut engine, id, &options)?;
    drop(engine);
    start_found(
        server,
        &container.record.id,
        container.record.run.tty,
        container.record.run.open_stdin,
        container.record.run.auto_remove,
    )?;
    if let Ok(engine) = server.engine() {
        berth_engine::containers::restarted(&engine, &container.record.id);
    }
    reply(Response::empty(204))
}

/// Terminal size: checked, then set on a tty container's terminal. As
/// Docker: 409 when the container is not running, 200 (and nothing to do)
/// for one without a tty.
pub fn resize(server: &Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let (height, width) = parse_size(exchange)?;
    let engine = server.engine()?;
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, id)?;
    if !container.state.is_running() {
        return Err(ApiError::new(
            409,
            format!("Container {} is not running", container.record.id),
        ));
    }
    if container.record.run.tty {
        let size = libc::winsize {
            ws_row: height,
            ws_col: width,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        match container_terminal(container.state.pid) {
            Some(terminal) => berth_runtime::console::set_window_size(&terminal, &size),
            None => tracing::debug!(
                container = %container.record.id,
                "resize: the container's first process has no terminal open"
            ),
        }
    }
    reply(Response::empty(200))
}

/// The container's terminal, opened anew through its first process's
/// stdin, stdout or stderr. The pty's master is its monitor's, which the
/// server cannot reach (the monitor copies a size only from the terminal
/// of a CLI attached at start); TIOCSWINSZ on the slave resizes the same
/// pty and signals its foreground process group (tty_ioctl(4)).
fn container_terminal(pid: i32) -> Option<fs_err::File> {
    for descriptor in 0..3 {
        // O_PATH finds the file without opening it: whatever the process
        // put there, no device is opened until it is known to be a pty.
        let Ok(found) = fs_err::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH)
            .open(format!("/proc/{pid}/fd/{descriptor}"))
        else {
            continue;
        };
        let Ok(metadata) = found.metadata() else {
            continue;
        };
        if !(metadata.file_type().is_char_device() && is_pty_slave(metadata.rdev())) {
            continue;
        }
        // Through our own descriptor: the very file checked above.
        return fs_err::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
            .open(format!("/proc/self/fd/{}", found.as_raw_fd()))
            .ok();
    }
    None
}

/// Unix98 pty slaves have majors 136 to 143 (the kernel's
/// Documentation/admin-guide/devices.txt).
fn is_pty_slave(device: u64) -> bool {
    (136..=143).contains(&nix::sys::stat::major(device))
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
