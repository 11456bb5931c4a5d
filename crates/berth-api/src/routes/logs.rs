//! `GET /containers/{id}/logs`: the container's log (json-file or local, its
//! rotated files included) as Docker's stream (multiplexed frames without a
//! tty, raw with one), followed when asked; `none` is dockerd's 501.

use std::cell::Cell;

use berth_engine::containers::paths::ContainerPaths;
use berth_engine::containers::{find_container, log_location};
use berth_engine::logs::{follow_logs, parse_docker_time, read_logs, LogOptions, Stream};

use crate::error::ApiError;
use crate::http::Exchange;
use crate::router::Handled;
use crate::server::{client_gone, Outcome, Server};

/// `since`/`until`: what the CLI sends is Unix seconds (`1700000000.5`);
/// `0` or empty is none.
fn time_parameter(
    exchange: &Exchange<'_>,
    name: &str,
) -> Result<Option<chrono::DateTime<chrono::Utc>>, ApiError> {
    match exchange
        .query(name)
        .filter(|text| !text.is_empty() && *text != "0")
    {
        None => Ok(None),
        Some(text) => parse_docker_time(text, &chrono::Utc::now())
            .map(Some)
            .map_err(|error| ApiError::bad_request(error.to_string())),
    }
}

pub fn logs(server: &Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let stdout = exchange.query_bool("stdout");
    let stderr = exchange.query_bool("stderr");
    if !stdout && !stderr {
        return Err(ApiError::bad_request(
            "Bad parameters: you must choose at least one stream",
        ));
    }
    let tail = match exchange.query("tail").unwrap_or("all") {
        "" | "all" | "-1" => None,
        number => Some(number.parse::<usize>().map_err(|_| {
            ApiError::bad_request(format!("invalid value for \"tail\": {number:?}"))
        })?),
    };
    let options = LogOptions {
        tail,
        since: time_parameter(exchange, "since")?,
        until: time_parameter(exchange, "until")?,
        timestamps: exchange.query_bool("timestamps"),
        stdout,
        stderr,
        details: exchange.query_bool("details"),
    };
    let follow = exchange.query_bool("follow");
    let engine = server.engine()?;
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, id)?;
    let tty = container.record.run.tty;
    let paths = ContainerPaths::new(&config.root, &config.run_root, &container.record.id);
    let location =
        log_location(&paths, &container.record).map_err(berth_engine::EngineError::from)?;
    let content_type = crate::routes::attach::stream_type(exchange.version, tty);
    // Watched while following, as `wait` and `events` watch theirs: a silent
    // container writes nothing that would find a client gone.
    let socket = exchange
        .connection
        .stream()
        .try_clone()
        .map_err(|error| ApiError::internal(error.to_string()))?;
    let Ok(mut writer) = exchange.chunked(200, content_type, &[]) else {
        return Ok(Outcome::Streamed { keep_alive: false });
    };
    // The client is gone (a write failed, or its end of the socket hung up).
    let broken = Cell::new(false);
    let sink = |stream: Stream, bytes: &[u8]| {
        if broken.get() {
            return;
        }
        let data = if tty {
            bytes.to_vec()
        } else {
            berth_engine::containers::monitor::frame(stream, bytes)
        };
        if std::io::Write::write_all(&mut writer, &data).is_err() {
            broken.set(true);
        }
    };
    let result = if follow && container.state.is_running() {
        let id = container.record.id.clone();
        let is_running = || {
            if client_gone(&socket) {
                broken.set(true);
            }
            !broken.get()
                && find_container(engine.store(), &config, &id)
                    .map(|container| container.state.is_running())
                    .unwrap_or(false)
        };
        follow_logs(&location, &options, is_running, sink)
    } else {
        read_logs(&location, &options, sink)
    };
    if broken.get() {
        return Ok(Outcome::Streamed { keep_alive: false });
    }
    if let Err(error) = result {
        tracing::warn!(%error, "reading the log failed");
        return Ok(Outcome::Streamed { keep_alive: false });
    }
    let keep_alive = writer.finish().is_ok();
    Ok(Outcome::Streamed { keep_alive })
}
