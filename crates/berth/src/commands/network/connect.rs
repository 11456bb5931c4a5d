//! `network connect` and `network disconnect`.

use berth_engine::networks::{connect_network, disconnect_network};
use berth_engine::Engine;
use clap::Args;

/// docker's `--link`, `--ip6`, `--link-local-ip` and `--driver-opt` are
/// not offered: berth networks are IPv4 bridges without legacy links.
#[derive(Debug, Args)]
pub struct ConnectArgs {
    /// Add network-scoped alias for the container
    #[arg(long = "alias", value_name = "strings", value_delimiter = ',')]
    pub aliases: Vec<String>,
    /// IPv4 address (e.g., 172.30.100.104)
    #[arg(long, value_name = "string")]
    pub ip: Option<String>,
    /// NETWORK
    #[arg(value_name = "NETWORK")]
    pub network: String,
    /// CONTAINER
    #[arg(value_name = "CONTAINER")]
    pub container: String,
}

#[derive(Debug, Args)]
pub struct DisconnectArgs {
    /// Force the container to disconnect from a network
    #[arg(short, long)]
    pub force: bool,
    /// NETWORK
    #[arg(value_name = "NETWORK")]
    pub network: String,
    /// CONTAINER
    #[arg(value_name = "CONTAINER")]
    pub container: String,
}

pub fn connect(engine: &mut Engine, args: &ConnectArgs) -> anyhow::Result<i32> {
    connect_network(
        engine,
        &args.network,
        &args.container,
        args.aliases.clone(),
        args.ip.clone().unwrap_or_default(),
    )?;
    Ok(0)
}

/// `--force` is accepted and changes nothing: docker uses it to drop an
/// endpoint its daemon lost track of, and berth's endpoints live in the
/// store, which disconnect always cleans.
pub fn disconnect(engine: &mut Engine, args: &DisconnectArgs) -> anyhow::Result<i32> {
    disconnect_network(engine, &args.network, &args.container)?;
    Ok(0)
}
