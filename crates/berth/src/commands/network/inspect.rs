//! `network inspect`.

use berth_engine::networks::{find_network, network_json};
use berth_engine::Engine;
use clap::Args;

use super::lookup_message;
use crate::commands::output;

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Format the output using the given Go template
    #[arg(short, long, value_name = "string")]
    pub format: Option<String>,
    /// NETWORK
    #[arg(required = true, value_name = "NETWORK")]
    pub names: Vec<String>,
}

/// Prints what was found (an empty array when nothing was), then exits 1
/// if any name was not: docker's `inspect.Inspect`.
pub fn run(engine: &mut Engine, args: &InspectArgs) -> anyhow::Result<i32> {
    let mut found = Vec::new();
    let mut status = 0;
    for name in &args.names {
        let (store, kernel) = engine.network_parts();
        match find_network(store, kernel, name) {
            Ok(network) => found.push(network_json(store, &network)),
            Err(error) => {
                eprintln!("Error: {}", lookup_message(&error));
                status = crate::exit::FAILURE;
            }
        }
    }
    output::print_inspect(args.format.as_deref(), &found)?;
    Ok(status)
}
