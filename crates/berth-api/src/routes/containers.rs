//! `/containers/…`: create, list, inspect, stop, kill, wait, rename,
//! pause, update, top, stats, changes, prune, DELETE. Starting (and
//! attaching) lives in `attach.rs`; archives in `archive.rs`.

use std::time::{Duration, Instant};

use berth_engine::containers::{
    container_diff, container_stats, container_top, create_for_run, find_container,
    inspect_container, kill_container, list_containers, pause_container, prune_containers,
    published_ports, remove_container_with, rename_container, status_text, stop_container_with,
    unpause_container, update_container, Container, ContainerFilters, RunFrontEnd, StopOptions,
    CONTAINER_FILTERS,
};
use berth_engine::{EngineConfig, EngineError};
use berth_store::Store;
use berth_types::container::{CreateBody, CreateRequest};
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::http::{Exchange, Response};
use crate::router::{reply, Handled};
use crate::routes::unix_time;
use crate::server::{client_gone, Outcome, Server};

pub fn create(server: &Server, exchange: &mut Exchange<'_>) -> Handled {
    let name = exchange
        .query("name")
        .filter(|name| !name.is_empty())
        .map(|name| name.trim_start_matches('/').to_owned());
    let platform = match exchange.query("platform").filter(|text| !text.is_empty()) {
        Some(text) => Some(
            berth_engine::images::pull::parse_platform(text)
                .map_err(|error| ApiError::bad_request(error.to_string()))?,
        ),
        None => None,
    };
    let body: CreateBody = exchange.json()?;
    let request = CreateRequest::from_body(body, name, platform);
    if request.config.image.is_empty() {
        return Err(ApiError::bad_request("No image was specified"));
    }
    // The same checks `berth create` runs on its flags.
    request
        .validate()
        .map_err(|error| ApiError::bad_request(error.to_string()))?;
    let mut engine = server.engine()?;
    // Docker's exact 404 for a missing image: clients pull on it.
    if let Err(EngineError::NoSuchImage(_)) =
        berth_engine::images::resolve_image(engine.store(), &request.config.image)
    {
        let shown = berth_engine::images::parse_reference(&request.config.image)
            .map(|reference| reference.with_default_tag().familiar_string())
            .unwrap_or_else(|_| request.config.image.clone());
        return Err(ApiError::not_found(format!("No such image: {shown}")));
    }
    // A ready sandbox from the warm pool when one is offered and the request
    // fits it (`berth run`'s rules), held for the start (see `HeldClaims`).
    let prepared = create_for_run(&mut engine, &request, &mut ApiRun)?;
    let id = prepared.id.clone();
    if prepared.is_warm() {
        server.claims.hold(prepared);
    }
    let warnings = berth_engine::containers::create_warnings(&engine, &request);
    reply(Response::json(
        201,
        &json!({ "Id": id, "Warnings": warnings }),
    ))
}

/// The API's part in a run: none. Its create never pulls (clients pull on
/// the 404 for a missing image), and the server runs sealed already.
struct ApiRun;

impl RunFrontEnd for ApiRun {
    type Error = ApiError;
}

/// Before `rm`, `update` or `prune` changes a container created from the
/// warm pool and not started yet: its member is released, so that the
/// container is an ordinary created one.
fn release_claim(server: &Server, engine: &berth_engine::Engine, text: &str) {
    if server.claims.is_empty() {
        return;
    }
    let found = berth_engine::containers::find_container(engine.store(), engine.config(), text);
    if let Ok(container) = found {
        server.claims.release(&container.record.id);
    }
}

/// One row of `GET /containers/json` (Docker's `types.Container`).
pub fn summary(store: &Store, config: &EngineConfig, container: &Container) -> Value {
    let record = &container.record;
    let ports: Vec<Value> = published_ports(store, container)
        .iter()
        .map(|port| {
            json!({
                "IP": port.host_ip,
                "PrivatePort": port.container_port,
                "PublicPort": port.host_port,
                "Type": port.protocol,
            })
        })
        .collect();
    let inspected = inspect_container(store, config, container);
    let networks: serde_json::Map<String, Value> = inspected["NetworkSettings"]["Networks"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    json!({
        "Id": record.id,
        "Names": [format!("/{}", record.name)],
        "Image": berth_engine::containers::listed_image(store, record),
        "ImageID": record.image_id,
        "Command": shell_join(&record.run.args),
        "Created": unix_time(Some(&record.created)),
        "Ports": ports,
        "Labels": record.run.labels,
        "State": container.state.status.as_str(),
        "Status": status_text(container, chrono::Utc::now(), human_duration),
        "HostConfig": { "NetworkMode": record.run.network_mode },
        "NetworkSettings": { "Networks": networks },
        // Docker's MountPoints, as inspect shows them (Type, Name, Source,
        // Driver…): compose v2 compares them to decide on a recreate.
        "Mounts": inspected["Mounts"],
    })
}

/// Docker's COMMAND column text: arguments joined by spaces, each quoted
/// only when it needs it.
fn shell_join(args: &[String]) -> String {
    args.iter()
        .map(|arg| {
            if !arg.is_empty()
                && !arg.contains(|c: char| c.is_whitespace() || "'\"\\$`".contains(c))
            {
                arg.clone()
            } else {
                format!("'{}'", arg.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Go's `units.HumanDuration`, as dockerd writes `Status`.
pub fn human_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    let hours = seconds / 3600;
    match seconds {
        0 => "Less than a second".to_owned(),
        1 => "1 second".to_owned(),
        s if s < 60 => format!("{s} seconds"),
        s if s / 60 == 1 => "About a minute".to_owned(),
        s if s < 3600 => format!("{} minutes", s / 60),
        _ if hours == 1 => "About an hour".to_owned(),
        _ if hours < 48 => format!("{hours} hours"),
        _ if hours < 24 * 7 * 2 => format!("{} days", hours / 24),
        _ if hours < 24 * 30 * 2 => format!("{} weeks", hours / 24 / 7),
        _ if hours < 24 * 365 * 2 => format!("{} months", hours / 24 / 30),
        _ => format!("{} years", hours / 24 / 365),
    }
}

pub fn list(server: &Server, exchange: &mut Exchange<'_>) -> Handled {
    let filters = crate::filters::parse(exchange.query("filters").unwrap_or_default())?;
    crate::filters::check(&filters, CONTAINER_FILTERS)?;
    let all = exchange.query_bool("all");
    let limit = exchange
        .query("limit")
        .filter(|text| !text.is_empty())
        .map(|text| {
            text.parse::<i64>()
                .map_err(|_| ApiError::bad_request(format!("invalid limit {text:?}")))
        })
        .transpose()?
        .unwrap_or(-1);
    let engine = server.engine()?;
    let config = engine.config().clone();
    let mut containers = list_containers(engine.store(), &config)?;
    let has_status_filter = filters
        .iter()
        .any(|(key, _)| key == "status" || key == "exited");
    let show_all = all || limit > 0;
    let filter = ContainerFilters::new(&filters, engine.store())?;
    containers.retain(|container| {
        (show_all || has_status_filter || container.state.is_running()) && filter.matches(container)
    });
    if limit > 0 {
        containers.truncate(limit as usize);
    }
    let rows: Vec<Value> = containers
        .iter()
        .map(|container| summary(engine.store(), &config, container))
        .collect();
    reply(Response::json(200, &Value::Array(rows)))
}

pub fn inspect(server: &Server, id: &str) -> Handled {
    let engine = server.engine()?;
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, id)?;
    let mut value = inspect_container(engine.store(), &config, &container);
    let execs: Vec<String> = server
        .execs
        .lock()
        .map(|execs| {
            execs
                .iter()
                .filter(|(_, exec)| exec.container_id == container.record.id)
                .map(|(id, _)| id.clone())
                .collect()
        })
        .unwrap_or_default();
    if !execs.is_empty() {
        value["ExecIDs"] = json!(execs);
    }
    reply(Response::json(200, &value))
}

fn timeout_parameter(exchange: &Exchange<'_>) -> Result<Option<i64>, ApiError> {
    exchange
        .query("t")
        .or_else(|| exchange.query("timeout"))
        .filter(|text| !text.is_empty())
        .map(|text| {
            text.parse::<i64>()
                .map_err(|_| ApiError::bad_request(format!("invalid value for t: {text:?}")))
        })
        .transpose()
}

/// `t` and `signal` of `stop` and `restart`. The signal (API 1.42 on, as
/// moby: earlier versions ignore it) is sent instead of the container's
/// stop signal; a bad one is 400 before the container is looked up.
pub(crate) fn stop_options(exchange: &Exchange<'_>) -> Result<StopOptions, ApiError> {
    let timeout = timeout_parameter(exchange)?;
    let signal = exchange
        .query("signal")
        .filter(|text| !text.is_empty() && exchange.version >= (1, 42))
        .map(str::to_owned);
    if let Some(signal) = &signal {
        berth_engine::containers::parse_signal(signal)?;
    }
    Ok(StopOptions { timeout, signal })
}

pub fn stop(server: &Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let options = stop_options(exchange)?;
    let mut engine = server.engine()?;
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, id)?;
    if !container.state.is_running() {
        return reply(Response::empty(304));
    }
    stop_container_with(&mut engine, id, &options)?;
    reply(Response::empty(204))
}

pub fn kill(server: &Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let signal = exchange
        .query("signal")
        .filter(|text| !text.is_empty())
        .unwrap_or("KILL")
        .to_owned();
    let mut engine = server.engine()?;
    kill_container(&mut engine, id, &signal)?;
    reply(Response::empty(204))
}

/// What `wait` waits for (`condition=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Condition {
    NotRunning,
    NextExit,
    Removed,
}

/// Docker writes the head at once (the client then knows the wait is in
/// place) and the status when the condition holds.
pub fn wait(server: &Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let condition = match exchange.query("condition").unwrap_or("") {
        "" | "not-running" => Condition::NotRunning,
        "next-exit" => Condition::NextExit,
        "removed" => Condition::Removed,
        other => {
            return Err(ApiError::bad_request(format!(
                "invalid condition: {other:?}"
            )))
        }
    };
    let engine = server.engine()?;
    let config = engine.config().clone();
    let first = match find_container(engine.store(), &config, id) {
        Ok(container) => Some(container),
        Err(error @ EngineError::NoSuchContainer(_)) => {
            // Started by this server and already removed (`--rm`)?
            if server.exits.get(id).is_none() {
                return Err(error.into());
            }
            None
        }
        Err(error) => return Err(error.into()),
    };
    let full_id = first
        .as_ref()
        .map_or_else(|| id.to_owned(), |container| container.record.id.clone());
    let stream = exchange
        .connection
        .stream()
        .try_clone()
        .map_err(|error| ApiError::internal(error.to_string()))?;
    let Ok(mut writer) = exchange.chunked(200, "application/json", &[]) else {
        return Ok(Outcome::Streamed { keep_alive: false });
    };
    let code = wait_for(server, &engine, &full_id, first, condition, &stream);
    let Some(code) = code else {
        // The client went away.
        return Ok(Outcome::Streamed { keep_alive: false });
    };
    let written = writer
        .json_line(&json!({ "StatusCode": code, "Error": Value::Null }))
        .and_then(|()| writer.finish());
    Ok(Outcome::Streamed {
        keep_alive: written.is_ok(),
    })
}

/// Polls the store (and the server's own exit board) until `condition`
/// holds; None when the client left first.
fn wait_for(
    server: &Server,
    engine: &berth_engine::Engine,
    id: &str,
    first: Option<Container>,
    condition: Condition,
    stream: &std::os::unix::net::UnixStream,
) -> Option<i32> {
    let config = engine.config().clone();
    let Some(first) = first else {
        return server.exits.wait(id, Duration::from_secs(u64::MAX / 4));
    };
    let initial_finished = first.state.finished_at.clone();
    let mut last_code = first.state.exit_code;
    if condition == Condition::NotRunning && !first.state.is_running() {
        return Some(last_code);
    }
    let mut checked = Instant::now();
    loop {
        match find_container(engine.store(), &config, id) {
            Ok(container) => {
                last_code = container.state.exit_code;
                // A run that ended with a restart to come has ended for dockerd's
                // waiters too.
                let exited = container.state.run_ended_since(&initial_finished);
                let holds = match condition {
                    Condition::NotRunning => exited,
                    Condition::NextExit => {
                        exited && container.state.finished_at != initial_finished
                    }
                    Condition::Removed => false,
                };
                if holds {
                    return Some(last_code);
                }
            }
            Err(_) => {
                // Gone: the code the server saw, else the last one stored.
                return Some(
                    server
                        .exits
                        .wait(id, Duration::from_secs(10))
                        .unwrap_or(last_code),
                );
            }
        }
        if server.exits.get(id) == Some(None) || checked.elapsed() < Duration::from_secs(1) {
            // A watched container: its exit arrives on the board.
            if let Some(code) = server.exits.wait(id, Duration::from_millis(50)) {
                if condition != Condition::Removed {
                    return Some(code);
                }
            }
        } else {
            std::thread::sleep(Duration::from_millis(50));
        }
        if client_gone(stream) {
            return None;
        }
        checked = Instant::now();
    }
}

pub fn rename(server: &Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let name = exchange
        .query("name")
        .filter(|name| !name.is_empty())
        .ok_or_else(|| ApiError::bad_request("Neither old nor new names may be empty"))?
        .trim_start_matches('/')
        .to_owned();
    let mut engine = server.engine()?;
    rename_container(&mut engine, id, &name)?;
    reply(Response::empty(204))
}

pub fn pause(server: &Server, id: &str, pause: bool) -> Handled {
    let mut engine = server.engine()?;
    if pause {
        pause_container(&mut engine, id)?;
    } else {
        unpause_container(&mut engine, id)?;
    }
    reply(Response::empty(204))
}

/// `docker update`: the resources and restart policy of a `HostConfig`.
pub fn update(server: &Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let body: Value = exchange.json()?;
    let host_config: berth_types::container::HostConfig = serde_json::from_value(body.clone())
        .map_err(|error| ApiError::bad_request(format!("invalid update: {error}")))?;
    let resources = berth_engine::containers::runtime_resources(&host_config.resources)?;
    let restart = body
        .get("RestartPolicy")
        .filter(|policy| policy.is_object())
        .map(|_| berth_engine::containers::record::RestartPolicy {
            name: host_config.restart_policy.name.clone(),
            maximum_retry_count: host_config.restart_policy.maximum_retry_count.max(0) as u32,
        });
    let mut engine = server.engine()?;
    release_claim(server, &engine, id);
    let fields = body.as_object().cloned().unwrap_or_default();
    update_container(&mut engine, id, &resources, restart, &fields)?;
    reply(Response::json(200, &json!({ "Warnings": [] })))
}

pub fn top(server: &Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let arguments: Vec<String> = exchange
        .query("ps_args")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let engine = server.engine()?;
    let table = container_top(&engine, id, &arguments)?;
    reply(Response::json(
        200,
        &json!({ "Titles": table.titles, "Processes": table.processes }),
    ))
}

/// One `stats` sample in Docker's shape (the fields `docker stats` reads).
fn stats_sample(engine: &berth_engine::Engine, container: &Container, previous: &Value) -> Value {
    let stats = container_stats(engine, container).ok();
    let stats = stats.as_ref();
    let network = berth_engine::containers::container_network_io(engine, container);
    let memory_total = berth_engine::system::memory_total();
    let limit = match stats.and_then(|stats| stats.memory_limit) {
        Some(berth_runtime::cgroups::Limit::Value(limit)) if limit < memory_total => limit,
        _ => memory_total,
    };
    let system_usage = system_cpu_ns();
    json!({
        "read": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true),
        "preread": previous.get("read").cloned().unwrap_or(json!("0001-01-01T00:00:00Z")),
        "id": container.record.id,
        "name": format!("/{}", container.record.name),
        "pids_stats": { "current": stats.and_then(|stats| stats.pids_current).unwrap_or(0) },
        "cpu_stats": {
            "cpu_usage": { "total_usage": stats.and_then(|stats| stats.cpu_usage_ns).unwrap_or(0) },
            "system_cpu_usage": system_usage,
            "online_cpus": std::thread::available_parallelism().map_or(1, |count| count.get()),
        },
        "precpu_stats": previous.get("cpu_stats").cloned().unwrap_or(json!({ "cpu_usage": { "total_usage": 0 } })),
        "memory_stats": {
            "usage": stats.and_then(|stats| stats.memory_usage).unwrap_or(0),
            "limit": limit,
            "stats": { "total_inactive_file": stats.and_then(|stats| stats.memory_inactive_file).unwrap_or(0) },
        },
        "blkio_stats": {},
        // One entry for all interfaces: what `docker stats` sums for NET I/O.
        "networks": { "eth0": { "rx_bytes": network.received, "tx_bytes": network.sent } },
    })
}

/// The host's CPU time in nanoseconds (/proc/stat's first line, in
/// USER_HZ ticks), as dockerd reports `system_cpu_usage`.
fn system_cpu_ns() -> u64 {
    fs_err::read_to_string("/proc/stat")
        .ok()
        .and_then(|text| {
            text.lines().next().map(|line| {
                line.split_whitespace()
                    .skip(1)
                    .take(7)
                    .filter_map(|field| field.parse::<u64>().ok())
                    .sum::<u64>()
            })
        })
        .map_or(0, |ticks| ticks * 10_000_000)
}

pub fn stats(server: &Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let stream_mode = exchange
        .query("stream")
        .is_none_or(|_| exchange.query_bool("stream"))
        && !exchange.query_bool("one-shot");
    let engine = server.engine()?;
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, id)?;
    if !stream_mode {
        let sample = stats_sample(&engine, &container, &Value::Null);
        return reply(Response::json(200, &sample));
    }
    let stream = exchange
        .connection
        .stream()
        .try_clone()
        .map_err(|error| ApiError::internal(error.to_string()))?;
    let Ok(mut writer) = exchange.chunked(200, "application/json", &[]) else {
        return Ok(Outcome::Streamed { keep_alive: false });
    };
    let mut previous = Value::Null;
    loop {
        let container = match find_container(engine.store(), &config, id) {
            Ok(container) if container.state.is_running() => container,
            _ => break,
        };
        let sample = stats_sample(&engine, &container, &previous);
        if writer.json_line(&sample).is_err() || client_gone(&stream) {
            return Ok(Outcome::Streamed { keep_alive: false });
        }
        previous = sample;
        std::thread::sleep(Duration::from_secs(1));
    }
    let keep_alive = writer.finish().is_ok();
    Ok(Outcome::Streamed { keep_alive })
}

pub fn changes(server: &Server, id: &str) -> Handled {
    let engine = server.engine()?;
    let changes = container_diff(&engine, id)?;
    let rows: Vec<Value> = changes
        .iter()
        .map(|change| json!({ "Path": change.path, "Kind": change.kind.api_kind() }))
        .collect();
    reply(Response::json(200, &Value::Array(rows)))
}

pub fn prune(server: &Server) -> Handled {
    let mut engine = server.engine()?;
    server.claims.release_all();
    let pruned = prune_containers(&mut engine)?;
    reply(Response::json(
        200,
        // dockerd's nil list is null.
        &json!({
            "ContainersDeleted": Some(pruned.ids).filter(|ids| !ids.is_empty()),
            "SpaceReclaimed": pruned.reclaimed,
        }),
    ))
}

pub fn remove(server: &Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let force = exchange.query_bool("force");
    let volumes = exchange.query_bool("v");
    let mut engine = server.engine()?;
    if exchange.query_bool("link") {
        berth_engine::containers::remove_link(&mut engine, id)?;
        return reply(Response::empty(204));
    }
    release_claim(server, &engine, id);
    remove_container_with(&mut engine, id, force, volumes)?;
    reply(Response::empty(204))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations_match_go() {
        assert_eq!(human_duration(Duration::from_secs(0)), "Less than a second");
        assert_eq!(human_duration(Duration::from_secs(1)), "1 second");
        assert_eq!(human_duration(Duration::from_secs(59)), "59 seconds");
        assert_eq!(human_duration(Duration::from_secs(60)), "About a minute");
        assert_eq!(human_duration(Duration::from_secs(600)), "10 minutes");
        assert_eq!(human_duration(Duration::from_secs(3600)), "About an hour");
        assert_eq!(human_duration(Duration::from_secs(7200)), "2 hours");
    }

    #[test]
    fn commands_are_quoted_like_docker() {
        assert_eq!(
            shell_join(&["sh".to_owned(), "-c".to_owned(), "echo hi".to_owned()]),
            "sh -c 'echo hi'"
        );
    }
}
