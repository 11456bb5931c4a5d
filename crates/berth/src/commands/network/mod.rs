//! `berth network connect|create|disconnect|inspect|ls|prune|rm`, as the
//! docker 20.10 CLI (`cli/command/network`) words and exits them: every
//! failure exits 1.

mod connect;
mod create;
mod filters;
mod inspect;
mod list;
mod remove;

use berth_engine::networks::NetworkError;
use berth_engine::{Engine, EngineError, ErrorChain};
use clap::Subcommand;

pub use connect::{ConnectArgs, DisconnectArgs};
pub use create::CreateArgs;
pub use inspect::InspectArgs;
pub use list::ListArgs;
pub use remove::{PruneArgs, RemoveArgs};

/// Declared in docker's (alphabetical) order so `--help` lists them alike.
#[derive(Debug, Subcommand)]
pub enum NetworkCommand {
    /// Connect a container to a network
    Connect(ConnectArgs),
    /// Create a network
    Create(CreateArgs),
    /// Disconnect a container from a network
    Disconnect(DisconnectArgs),
    /// Display detailed information on one or more networks
    Inspect(InspectArgs),
    /// List networks
    #[command(visible_alias = "list")]
    Ls(ListArgs),
    /// Remove all unused networks
    Prune(PruneArgs),
    /// Remove one or more networks
    #[command(visible_alias = "remove")]
    Rm(RemoveArgs),
}

pub fn run(engine: &mut Engine, command: &NetworkCommand) -> anyhow::Result<i32> {
    match command {
        NetworkCommand::Connect(args) => connect::connect(engine, args),
        NetworkCommand::Create(args) => create::run(engine, args),
        NetworkCommand::Disconnect(args) => connect::disconnect(engine, args),
        NetworkCommand::Inspect(args) => inspect::run(engine, args),
        NetworkCommand::Ls(args) => list::run(engine, args),
        NetworkCommand::Prune(args) => remove::prune(engine, args),
        NetworkCommand::Rm(args) => remove::remove(engine, args),
    }
}

/// An engine error in the words the docker CLI prints for `inspect` and
/// `rm`: the daemon's "network X not found" (a 404) becomes the client's
/// "No such network: X"; everything else is the daemon's message, with its
/// causes.
fn lookup_message(error: &EngineError) -> String {
    match error {
        EngineError::Network(NetworkError::NotFound(text)) => format!("No such network: {text}"),
        other => ErrorChain(other).to_string(),
    }
}

/// `k=v` list entries (`--label`, `--opt`) as docker's `ListOpts`/`MapOpts`
/// read them: a bare key has the empty value.
fn key_values(entries: &[String]) -> std::collections::BTreeMap<String, String> {
    entries
        .iter()
        .map(|entry| {
            let (key, value) = entry.split_once('=').unwrap_or((entry, ""));
            (key.to_owned(), value.to_owned())
        })
        .collect()
}
