//! The guest's network: `lo` up for every container, and `eth0` (the
//! virtio-net card, on the tap the host bridged to the container's veth)
//! with the container's address and default route, once, before the first
//! process that names it. berth-net's netlink, as the host uses it.

use berth_net::netlink::{Netlink, NetlinkError};

use crate::protocol::GuestNetwork;

/// The card's name: the kernel's first Ethernet device (no udev here).
const CARD: &str = "eth0";

#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    #[error("failed to configure the guest's network")]
    Netlink(#[from] NetlinkError),
    #[error("the guest has no network card {CARD} (is virtio_net loaded?)")]
    NoCard,
    #[error("failed to listen on the embedded DNS address 127.0.0.11:53")]
    Dns(#[source] std::io::Error),
}

/// What is configured so far.
#[derive(Debug, Default)]
pub(super) struct GuestLinks {
    loopback_up: bool,
    configured: Option<GuestNetwork>,
    /// 127.0.0.11:53, when the network has the embedded DNS.
    pub(super) dns: Option<crate::dns_relay::GuestDns>,
}

impl GuestLinks {
    pub(super) fn prepare(&mut self, network: Option<&GuestNetwork>) -> Result<(), NetworkError> {
        if self.loopback_up && (network.is_none() || self.configured.as_ref() == network) {
            return Ok(());
        }
        let mut netlink = Netlink::open()?;
        if !self.loopback_up {
            if let Some(index) = netlink.link_index("lo")? {
                netlink.set_up(index)?;
            }
            self.loopback_up = true;
        }
        let Some(network) = network else {
            return Ok(());
        };
        if self.configured.is_some() {
            return Ok(()); // one container per VM: its first address stays
        }
        let index = netlink.link_index(CARD)?.ok_or(NetworkError::NoCard)?;
        netlink.add_address(index, network.address, network.prefix_len)?;
        netlink.set_up(index)?;
        if let Some(gateway) = network.gateway {
            netlink.add_default_route(gateway)?;
        }
        if network.embedded_dns {
            self.dns = Some(crate::dns_relay::GuestDns::bind().map_err(NetworkError::Dns)?);
        }
        self.configured = Some(network.clone());
        Ok(())
    }
}
