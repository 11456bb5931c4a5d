//! `berth swarm init|leave`: berth's single-node swarm (see
//! `berth_engine::swarm`). `join` and the rest of docker's `swarm`
//! commands are refused by clap as unknown: the swarm has one node.

use berth_engine::swarm::{self, SwarmInit};
use berth_engine::Engine;
use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum SwarmCommand {
    /// Initialize a swarm (of this one node)
    Init(InitArgs),
    /// Leave the swarm
    Leave(LeaveArgs),
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Advertised address (format: "<ip|interface>[:port]")
    #[arg(
        long,
        default_value = "",
        value_name = "string",
        hide_default_value = true
    )]
    pub advertise_addr: String,
    /// Listen address (format: "<ip|interface>[:port]")
    #[arg(long, default_value = "0.0.0.0:2377", value_name = "node-addr")]
    pub listen_addr: String,
    /// Force create a new cluster from current state
    #[arg(long)]
    pub force_new_cluster: bool,
}

#[derive(Debug, Args)]
pub struct LeaveArgs {
    /// Force this node to leave the swarm, ignoring warnings
    #[arg(short, long)]
    pub force: bool,
}

pub fn run(engine: &mut Engine, command: &SwarmCommand) -> anyhow::Result<i32> {
    let (store, kernel) = engine.network_parts();
    match command {
        SwarmCommand::Init(args) => {
            let port = args
                .listen_addr
                .rsplit_once(':')
                .map_or("2377", |(_, port)| port);
            let advertise_addr = match args.advertise_addr.as_str() {
                "" => format!("127.0.0.1:{port}"),
                address if address.contains(':') => address.to_owned(),
                address => format!("{address}:{port}"),
            };
            let request = SwarmInit {
                listen_addr: args.listen_addr.clone(),
                advertise_addr,
                force_new_cluster: args.force_new_cluster,
                spec: serde_json::Value::Null,
            };
            let node_id = swarm::init(store, kernel, &request)?;
            println!("Swarm initialized: current node ({node_id}) is now a manager.");
            println!();
            println!(
                "berth's swarm has this one node: nothing can join it, and it runs no services."
            );
        }
        SwarmCommand::Leave(args) => {
            swarm::leave(store, kernel, args.force)?;
            println!("Node left the swarm.");
        }
    }
    Ok(0)
}
