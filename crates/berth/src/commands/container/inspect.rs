//! `inspect` (containers first, then images, networks and volumes, as
//! Docker), `container inspect`.

use berth_engine::containers::{find_container, inspect_container};
use berth_engine::images::{inspect_image, resolve_image};
use berth_engine::networks::{find_network, network_json};
use berth_engine::volumes::{find_volume, volume_json};
use berth_engine::Engine;
use clap::Args;

use crate::commands::output;

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Format output using a custom template ('json' or a Go template)
    #[arg(short, long)]
    pub format: Option<String>,
    /// Return JSON for specified type
    #[arg(long = "type", value_name = "type")]
    pub kind: Option<String>,
    /// Display total file sizes if the type is container
    #[arg(short, long)]
    pub size: bool,
    /// NAME|ID
    #[arg(required = true)]
    pub names: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Containers, then images, networks and volumes: the first that has the name.
    Any,
    Container,
    Image,
    Network,
    Volume,
}

/// What `--type` takes, in Docker's words.
const TYPES: &str = r#""config", "container", "image", "network", "node", "plugin", "secret", "service", "task", "volume""#;

/// Swarm objects: berth's single-node swarm runs no services and holds no
/// nodes, secrets or configs to inspect, so none exists.
const SWARM_TYPES: [&str; 5] = ["config", "node", "secret", "service", "task"];

pub fn run(engine: &mut Engine, args: &InspectArgs, kind: Kind) -> anyhow::Result<i32> {
    let kind = match (kind, args.kind.as_deref()) {
        (Kind::Any, Some("container")) => Kind::Container,
        (Kind::Any, Some("image")) => Kind::Image,
        (Kind::Any, Some("network")) => Kind::Network,
        (Kind::Any, Some("volume")) => Kind::Volume,
        (Kind::Any, Some(other)) if SWARM_TYPES.contains(&other) || other == "plugin" => {
            // Docker's answers: the daemon's for each name, and an empty list.
            for name in &args.names {
                if other == "plugin" {
                    eprintln!("Error: plugin \"{name}\" not found");
                } else {
                    eprintln!("Error: {NOT_A_SWARM_MANAGER}");
                }
            }
            output::print_inspect(args.format.as_deref(), &[])?;
            return Ok(crate::exit::FAILURE);
        }
        (Kind::Any, Some(other)) => {
            anyhow::bail!("unknown type: \"{other}\": must be one of {TYPES}")
        }
        (kind, _) => kind,
    };
    let mut found = Vec::new();
    let mut status = 0;
    for name in &args.names {
        match find(engine, name, kind, args.format.as_deref())? {
            Ok(value) => found.push(value),
            Err(message) => {
                eprintln!("Error: {message}");
                status = crate::exit::FAILURE;
            }
        }
    }
    output::print_inspect(args.format.as_deref(), &found)?;
    Ok(status)
}

const NOT_A_SWARM_MANAGER: &str = "This node is not a swarm manager. Use \"docker swarm init\" or \"docker swarm join\" to connect this node to swarm and try again.";

/// The object `name` of `kind` as its own `inspect` shows it, or what to
/// say when there is none (Docker's wording per type); an error for any
/// failure but not finding it.
fn find(
    engine: &mut Engine,
    name: &str,
    kind: Kind,
    format: Option<&str>,
) -> anyhow::Result<Result<serde_json::Value, String>> {
    let wanted = |candidate: Kind| kind == Kind::Any || kind == candidate;
    if wanted(Kind::Container) {
        let config = engine.config().clone();
        match find_container(engine.store(), &config, name) {
            Ok(container) => {
                let mut value = inspect_container(engine.store(), &config, &container);
                if format.is_some_and(|format| format != "json") {
                    typed_defaults(&mut value);
                }
                return Ok(Ok(value));
            }
            Err(error) if error.is_not_found() => {}
            Err(error) => return Err(error.into()),
        }
    }
    if wanted(Kind::Image) {
        match resolve_image(engine.store(), name) {
            Ok(image) => return Ok(Ok(inspect_image(engine.store(), &image)?)),
            Err(error) if error.is_not_found() => {}
            Err(error) => return Err(error.into()),
        }
    }
    if wanted(Kind::Network) {
        let (store, kernel) = engine.network_parts();
        match find_network(store, kernel, name) {
            Ok(network) => return Ok(Ok(network_json(store, &network))),
            Err(error) if error.is_not_found() => {}
            Err(error) => return Err(error.into()),
        }
    }
    if wanted(Kind::Volume) {
        match find_volume(engine, name) {
            Ok(row) => return Ok(Ok(volume_json(engine, &row))),
            Err(error) if error.is_not_found() => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(Err(match kind {
        Kind::Any => format!("No such object: {name}"),
        Kind::Container => format!("No such container: {name}"),
        Kind::Image => format!("No such image: {name}"),
        Kind::Network => format!("No such network: {name}"),
        Kind::Volume => format!("No such volume: {name}"),
    }))
}

/// docker/cli hands a template the container decoded into its typed struct, where
/// `State.Health` (a pointer the JSON leaves out when unset) is there as nil:
/// `{{json .State.Health}}` is `null` for a container without a health check, not an error.
fn typed_defaults(container: &mut serde_json::Value) {
    if let Some(state) = container
        .get_mut("State")
        .and_then(serde_json::Value::as_object_mut)
    {
        state.entry("Health").or_insert(serde_json::Value::Null);
    }
}
