//! Networks: the predefined `bridge`, `host` and `none`, user-defined bridge
//! networks, the endpoints of running containers, published ports and the
//! names the embedded DNS answers. Kernel work goes through
//! `berth_net::kernel::Kernel`. A root's host objects (default bridge,
//! nftables table, `DOCKER-USER` rules) live while it has a network user
//! (`host`).

mod connect;
mod endpoints;
mod error;
mod host;
mod lookup;
mod manage;
mod names;
mod pools;
pub mod ports;
pub mod record;
mod rules;

pub(crate) use connect::bind_awaiting_networks;
pub use connect::{connect_network, disconnect_network};
pub use endpoints::{
    connect_container, container_device, container_endpoints, disconnect_container,
    release_container_endpoints, ContainerIdentity,
};
pub use error::NetworkError;
pub use host::release_unused_host_objects;
pub use lookup::{all_networks, config_file, find_network};
pub use manage::{create_network, network_json, prune_networks, remove_network, NetworkCreate};
pub use names::ContainerNames;
pub use pools::IpamPool;
pub use record::{Endpoint, Network, NetworkRequest, PublishedPort};
pub use rules::{ruleset, sync_rules};
