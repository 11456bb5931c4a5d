//! `/swarm/…`: berth's single-node swarm (see `berth_engine::swarm`).
//! Nodes, services, tasks, secrets and configs are refused by the router.

use berth_engine::swarm::{self, SwarmInit};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::http::{Exchange, Response};
use crate::router::{reply, Handled};
use crate::server::Server;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
struct InitBody {
    listen_addr: Option<String>,
    advertise_addr: Option<String>,
    force_new_cluster: bool,
    spec: Option<Value>,
    data_path_addr: Option<String>,
    data_path_port: Option<u32>,
    default_addr_pool: Option<Vec<String>>,
    subnet_size: Option<u32>,
    availability: Option<String>,
}

/// The docker CLI's defaults for the fields of an init that a one-node swarm
/// without services has no use for: anything else is refused by name rather
/// than kept and ignored. The `Spec`'s raft, dispatcher, orchestration and
/// task defaults only govern other nodes and services, so they are kept and
/// shown; its manager autolock and external CAs would change this node, so
/// they are refused.
fn refuse_unsupported(body: &InitBody) -> Result<(), ApiError> {
    let refused = |field: &str| {
        Err(ApiError::new(
            501,
            format!("berth's swarm mode has one node: {field} is not supported"),
        ))
    };
    if body
        .data_path_addr
        .as_deref()
        .is_some_and(|text| !text.is_empty())
    {
        return refused("DataPathAddr");
    }
    if body.data_path_port.is_some_and(|port| port != 0) {
        return refused("DataPathPort");
    }
    if body
        .default_addr_pool
        .as_ref()
        .is_some_and(|pools| !pools.is_empty())
    {
        return refused("DefaultAddrPool");
    }
    if body.subnet_size.is_some_and(|size| size != 0 && size != 24) {
        return refused("SubnetSize");
    }
    if body
        .availability
        .as_deref()
        .is_some_and(|text| !text.is_empty() && text != "active")
    {
        return refused("Availability");
    }
    if let Some(spec) = &body.spec {
        if spec["EncryptionConfig"]["AutoLockManagers"] == Value::Bool(true) {
            return refused("Spec.EncryptionConfig.AutoLockManagers");
        }
        if spec["CAConfig"]["ExternalCAs"]
            .as_array()
            .is_some_and(|cas| !cas.is_empty())
        {
            return refused("Spec.CAConfig.ExternalCAs");
        }
        if spec["CAConfig"]["SigningCACert"]
            .as_str()
            .is_some_and(|text| !text.is_empty())
        {
            return refused("Spec.CAConfig.SigningCACert");
        }
    }
    Ok(())
}

/// The answer is the node id as a JSON string, as dockerd's.
pub fn init(server: &Server, exchange: &mut Exchange<'_>) -> Handled {
    let body: InitBody = exchange.json_or_default()?;
    refuse_unsupported(&body)?;
    let listen_addr = body
        .listen_addr
        .filter(|text| !text.is_empty())
        .unwrap_or_else(|| "0.0.0.0:2377".to_owned());
    let port = listen_addr
        .rsplit_once(':')
        .map_or("2377", |(_, port)| port);
    let advertise_addr = match body.advertise_addr.filter(|text| !text.is_empty()) {
        Some(address) if address.contains(':') => address,
        Some(address) => format!("{address}:{port}"),
        None => format!("127.0.0.1:{port}"),
    };
    let request = SwarmInit {
        listen_addr,
        advertise_addr,
        force_new_cluster: body.force_new_cluster,
        spec: body.spec.unwrap_or(Value::Null),
    };
    let mut engine = server.engine()?;
    let (store, kernel) = engine.network_parts();
    let node_id = swarm::init(store, kernel, &request)?;
    reply(Response::json(200, &json!(node_id)))
}

pub fn leave(server: &Server, exchange: &mut Exchange<'_>) -> Handled {
    let force = exchange.query_bool("force");
    let mut engine = server.engine()?;
    let (store, kernel) = engine.network_parts();
    swarm::leave(store, kernel, force)?;
    reply(Response::empty(200))
}

/// `GET /swarm`; outside a swarm dockerd answers that this is no manager.
pub fn inspect(server: &Server) -> Handled {
    match swarm::load(&server.config.engine.root).map_err(berth_engine::EngineError::from)? {
        Some(state) => reply(Response::json(200, &swarm::inspect_json(&state))),
        None => Err(ApiError::new(503, NOT_A_MANAGER)),
    }
}

/// `POST /swarm/join`: a node already in the swarm gets dockerd's answer;
/// otherwise berth says it cannot join.
pub fn join(server: &Server) -> Handled {
    let error = if swarm::is_manager(&server.config.engine.root) {
        swarm::SwarmError::AlreadyInSwarm
    } else {
        swarm::SwarmError::JoinUnsupported
    };
    Err(berth_engine::EngineError::from(error).into())
}

/// Everything else under `/swarm`, `/nodes`, `/services`, `/tasks`,
/// `/secrets`, `/configs`: outside a swarm dockerd's answer; inside,
/// berth's clear refusal.
pub fn refused(server: &Server, what: &str) -> Handled {
    if swarm::is_manager(&server.config.engine.root) {
        Err(ApiError::new(
            501,
            format!(
                "berth's swarm mode has one node and runs no services: /{what} is not implemented"
            ),
        ))
    } else {
        Err(ApiError::new(503, NOT_A_MANAGER))
    }
}

/// Docker's words for swarm requests on a node that is in no swarm.
pub const NOT_A_MANAGER: &str = "This node is not a swarm manager. Use \"docker swarm init\" or \"docker swarm join\" to connect this node to swarm and try again.";
