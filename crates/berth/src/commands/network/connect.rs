//! `network connect` and `network disconnect`.

use berth_engine::networks::{connect_network, disconnect_network};
use berth_engine::Engine;
use clap::Args;

/// docker's `--driver-opt` is not offered: berth's bridge driver takes no
/// endpoint options.
#[derive(Debug, Args)]
pub struct ConnectArgs {
    /// Add network-scoped alias for the container
    #[arg(long = "alias", value_name = "strings", value_delimiter = ',')]
    pub aliases: Vec<String>,
    /// IPv4 address (e.g., 172.30.100.104)
    #[arg(long, value_name = "string")]
    pub ip: Option<String>,
    /// IPv6 address (e.g., 2001:db8::33)
    #[arg(long, value_name = "string")]
    pub ip6: Option<String>,
    /// Add a link-local address for the container
    #[arg(long = "link-local-ip", value_name = "strings", value_delimiter = ',')]
    pub link_local_ips: Vec<String>,
    /// Add link to another container
    #[arg(long = "link", value_name = "list")]
    pub links: Vec<String>,
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
    let settings = berth_types::container::EndpointSettings {
        aliases: Some(args.aliases.clone()),
        ipam_config: Some(berth_types::container::EndpointIpamConfig {
            ipv4_address: args.ip.clone().unwrap_or_default(),
            ipv6_address: args.ip6.clone().unwrap_or_default(),
            link_local_ips: args.link_local_ips.clone(),
        }),
        links: Some(args.links.clone()),
        ..Default::default()
    };
    connect_network(engine, &args.network, &args.container, &settings)?;
    Ok(0)
}

/// `--force` is accepted and changes nothing: docker uses it to drop an
/// endpoint its daemon lost track of, and berth's endpoints live in the
/// store, which disconnect always cleans.
pub fn disconnect(engine: &mut Engine, args: &DisconnectArgs) -> anyhow::Result<i32> {
    disconnect_network(engine, &args.network, &args.container)?;
    Ok(0)
}
