//! IPv4 addresses of links.

use std::net::Ipv4Addr;

use super::error::NetlinkError;
use super::message::{
    address_header, MessageBuilder, IFA_ADDRESS, IFA_BROADCAST, IFA_LOCAL, NLM_F_CREATE,
    NLM_F_EXCL, RTM_NEWADDR,
};
use super::Netlink;

impl Netlink {
    /// Gives link `index` the address `address/prefix_len`, with the
    /// broadcast address of its subnet as `ip addr add … brd +` does. An
    /// address the link already has is fine.
    pub fn add_address(
        &mut self,
        index: u32,
        address: Ipv4Addr,
        prefix_len: u8,
    ) -> Result<(), NetlinkError> {
        let mut message = MessageBuilder::new(
            RTM_NEWADDR,
            NLM_F_CREATE | NLM_F_EXCL,
            &address_header(prefix_len, index),
        );
        message
            .attribute(IFA_LOCAL, &address.octets())
            .attribute(IFA_ADDRESS, &address.octets());
        if let Some(broadcast) = broadcast(address, prefix_len)? {
            message.attribute(IFA_BROADCAST, &broadcast.octets());
        }
        match self.request("add address", message) {
            Err(error) if error.errno() == Some(libc::EEXIST) => Ok(()),
            result => result.map(drop),
        }
    }
}

/// The subnet's broadcast address; none for /31 (RFC 3021) and /32.
fn broadcast(address: Ipv4Addr, prefix_len: u8) -> Result<Option<Ipv4Addr>, NetlinkError> {
    match prefix_len {
        0..=30 => Ok(Some(Ipv4Addr::from(
            u32::from(address) | (u32::MAX >> prefix_len),
        ))),
        31 | 32 => Ok(None),
        _ => Err(NetlinkError::InvalidPrefixLength { prefix_len }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // unit tests: a failed step is a failed test
mod tests {
    use super::*;

    #[test]
    fn broadcast_of_subnet() {
        let address = Ipv4Addr::new(10, 88, 3, 7);
        assert_eq!(
            broadcast(address, 24).unwrap(),
            Some(Ipv4Addr::new(10, 88, 3, 255))
        );
        assert_eq!(broadcast(address, 0).unwrap(), Some(Ipv4Addr::BROADCAST));
        assert_eq!(broadcast(address, 31).unwrap(), None);
        assert!(matches!(
            broadcast(address, 33),
            Err(NetlinkError::InvalidPrefixLength { prefix_len: 33 })
        ));
    }
}
