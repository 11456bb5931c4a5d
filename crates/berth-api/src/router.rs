//! Paths to handlers: `/v1.NN/` prefix or none, then Docker's routes.

use crate::error::ApiError;
use crate::http::{request::percent_decode, Connection, Exchange, Request, Response};
use crate::routes::{
    archive, attach, build, commit, containers, exec, images, logs, networks, swarm, system,
    volumes,
};
use crate::server::{Outcome, Server};

/// What a handler returns: a response, or `Streamed` when it wrote one.
pub type Handled = Result<Outcome, ApiError>;

pub fn reply(response: Response) -> Handled {
    Ok(Outcome::Reply {
        response,
        body_read: true,
    })
}

pub fn route(server: &'static Server, request: Request, connection: &mut Connection) -> Outcome {
    let (version, path) = match crate::version::split_version(&request.target) {
        Ok((version, path)) => (version, path.to_owned()),
        Err(message) => {
            return Outcome::Reply {
                response: ApiError::bad_request(message).response(),
                body_read: request.body == crate::http::BodyKind::Empty,
            }
        }
    };
    let mut exchange = Exchange::new(request, connection, version);
    let result = match segments(&path) {
        Ok(segments) => {
            let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
            dispatch(server, &mut exchange, &segments)
        }
        Err(error) => Err(error),
    };
    let body_read = exchange.body_read();
    match result {
        Ok(Outcome::Reply { response, .. }) => Outcome::Reply {
            response,
            body_read,
        },
        Ok(streamed) => streamed,
        Err(error) => {
            if error.status >= 500 {
                tracing::warn!(status = error.status, message = %error.message, "request failed");
            }
            Outcome::Reply {
                response: error.response(),
                body_read,
            }
        }
    }
}

/// The decoded path segments; empty ones (`//`, a trailing `/`) dropped.
fn segments(path: &str) -> Result<Vec<String>, ApiError> {
    path.split('/')
        .filter(|segment| !segment.is_empty())
        .map(|segment| {
            percent_decode(segment).map_err(|error| ApiError::bad_request(error.to_string()))
        })
        .collect()
}

fn not_found() -> ApiError {
    ApiError::not_found("page not found")
}

fn dispatch(server: &'static Server, exchange: &mut Exchange<'_>, path: &[&str]) -> Handled {
    let method = exchange.request.method.clone();
    let method = method.as_str();
    match (method, path) {
        ("GET" | "HEAD", ["_ping"]) => system::ping(exchange),
        ("GET", ["version"]) => system::version(),
        ("GET", ["info"]) => system::info(server),
        ("GET", ["events"]) => system::events(server, exchange),
        ("GET", ["system", "df"]) => system::disk_usage(server),
        ("POST", ["auth"]) => system::auth(exchange),
        ("POST", ["build"]) => build::build(server, exchange),
        ("POST", ["build", "prune"]) => build::prune(server, exchange),
        // BuildKit's: its session and its cancel by build id.
        ("POST", ["session"]) | ("POST", ["build", "cancel"]) => Err(ApiError::new(
            501,
            "berth serve has only the classic builder (POST /build): BuildKit's session and cancel are not implemented",
        )),

        ("POST", ["commit"]) => commit::commit(server, exchange),

        ("POST", ["containers", "create"]) => containers::create(server, exchange),
        ("GET", ["containers", "json"]) => containers::list(server, exchange),
        ("POST", ["containers", "prune"]) => containers::prune(server),
        ("GET", ["containers", id, "json"]) => containers::inspect(server, id),
        ("POST", ["containers", id, "start"]) => attach::start(server, id),
        ("POST", ["containers", id, "stop"]) => containers::stop(server, exchange, id),
        ("POST", ["containers", id, "restart"]) => attach::restart(server, exchange, id),
        ("POST", ["containers", id, "kill"]) => containers::kill(server, exchange, id),
        ("POST", ["containers", id, "wait"]) => containers::wait(server, exchange, id),
        ("POST", ["containers", id, "attach"]) => attach::attach(server, exchange, id),
        ("GET", ["containers", id, "attach", "ws"]) => {
            attach::attach_websocket(server, exchange, id)
        }
        ("POST", ["containers", id, "resize"]) => attach::resize(server, exchange, id),
        ("POST", ["containers", id, "rename"]) => containers::rename(server, exchange, id),
        ("POST", ["containers", id, "pause"]) => containers::pause(server, id, true),
        ("POST", ["containers", id, "unpause"]) => containers::pause(server, id, false),
        ("POST", ["containers", id, "update"]) => containers::update(server, exchange, id),
        ("POST", ["containers", id, "exec"]) => exec::create(server, exchange, id),
        ("GET", ["containers", id, "logs"]) => logs::logs(server, exchange, id),
        ("GET", ["containers", id, "top"]) => containers::top(server, exchange, id),
        ("GET", ["containers", id, "stats"]) => containers::stats(server, exchange, id),
        ("GET", ["containers", id, "changes"]) => containers::changes(server, id),
        ("GET", ["containers", id, "export"]) => archive::export(server, exchange, id),
        ("GET", ["containers", id, "archive"]) => archive::get(server, exchange, id),
        ("HEAD", ["containers", id, "archive"]) => archive::head(server, exchange, id),
        ("PUT", ["containers", id, "archive"]) => archive::put(server, exchange, id),
        ("DELETE", ["containers", id]) => containers::remove(server, exchange, id),
        // `?link=1` names a link: `/containers//PARENT/ALIAS` (the docker CLI's path).
        ("DELETE", ["containers", parent, alias]) if exchange.query_bool("link") => {
            containers::remove(server, exchange, &format!("/{parent}/{alias}"))
        }

        ("POST", ["exec", id, "start"]) => exec::start(server, exchange, id),
        ("POST", ["exec", id, "resize"]) => exec::resize(server, exchange, id),
        ("GET", ["exec", id, "json"]) => exec::inspect(server, id),

        ("POST", ["images", "create"]) => images::pull(server, exchange),
        ("GET", ["images", "json"]) => images::list(server, exchange),
        ("POST", ["images", "load"]) => images::load(server, exchange),
        ("GET", ["images", "get"]) => images::save(server, exchange, None),
        ("POST", ["images", "prune"]) => images::prune(server, exchange),
        ("GET", ["images", "search"]) => {
            Err(ApiError::new(501, "berth serve does not search registries"))
        }
        ("GET", ["images", name @ .., "json"]) if !name.is_empty() => {
            images::inspect(server, &name.join("/"), exchange.version)
        }
        ("GET", ["images", name @ .., "history"]) if !name.is_empty() => {
            images::history(server, &name.join("/"))
        }
        ("GET", ["images", name @ .., "get"]) if !name.is_empty() => {
            images::save(server, exchange, Some(name.join("/")))
        }
        ("POST", ["images", name @ .., "tag"]) if !name.is_empty() => {
            images::tag(server, exchange, &name.join("/"))
        }
        ("POST", ["images", name @ .., "push"]) if !name.is_empty() => {
            images::push(server, exchange, &name.join("/"))
        }
        ("DELETE", ["images", name @ ..]) if !name.is_empty() => {
            images::remove(server, exchange, &name.join("/"))
        }
        ("GET", ["distribution", name @ .., "json"]) if !name.is_empty() => {
            images::distribution(exchange, &name.join("/"))
        }

        ("GET", ["networks"]) => networks::list(server, exchange),
        ("POST", ["networks", "create"]) => networks::create(server, exchange),
        ("POST", ["networks", "prune"]) => networks::prune(server),
        ("GET", ["networks", id]) => networks::inspect(server, exchange, id),
        ("DELETE", ["networks", id]) => networks::remove(server, id),
        ("POST", ["networks", id, "connect"]) => networks::connect(server, exchange, id),
        ("POST", ["networks", id, "disconnect"]) => networks::disconnect(server, exchange, id),

        ("GET", ["volumes"]) => volumes::list(server, exchange),
        ("POST", ["volumes", "create"]) => volumes::create(server, exchange),
        ("POST", ["volumes", "prune"]) => volumes::prune(server, exchange),
        ("GET", ["volumes", name]) => volumes::inspect(server, name),
        ("DELETE", ["volumes", name]) => volumes::remove(server, exchange, name),

        // Swarm mode: a single-node swarm (`berth_engine::swarm`). Outside
        // it, Docker's answers for a node in no swarm (clients such as
        // docker-py's tests expect them); inside, what one node without
        // services cannot do is refused by name.
        ("POST", ["swarm", "init"]) => swarm::init(server, exchange),
        ("POST", ["swarm", "join"]) => swarm::join(server),
        ("POST", ["swarm", "leave"]) => swarm::leave(server, exchange),
        ("GET", ["swarm"]) => swarm::inspect(server),
        (_, [what @ ("swarm" | "nodes" | "services" | "tasks"), ..])
        | (_, [what @ ("secrets" | "configs"), ..]) => swarm::refused(server, what),

        _ => Err(not_found()),
    }
}
