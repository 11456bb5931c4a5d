//! Addresses of links.

use std::net::{IpAddr, Ipv4Addr};

use super::error::NetlinkError;
use super::message::{
    address_header, MessageBuilder, AF_INET, AF_INET6, IFA_ADDRESS, IFA_BROADCAST, IFA_F_NODAD,
    IFA_LOCAL, NLM_F_CREATE, NLM_F_EXCL, RTM_DELADDR, RTM_NEWADDR,
};
use super::Netlink;

impl Netlink {
    /// Gives link `index` the address `address/prefix_len`: an IPv4 one
    /// with the broadcast address of its subnet as `ip addr add … brd +`
    /// does, an IPv6 one without duplicate address detection (`nodad`, as
    /// libnetwork gives them: berth's allocator already made it unique on
    /// the bridge, and DAD would keep it unusable for a second or more).
    /// An address the link already has is fine.
    pub fn add_address(
        &mut self,
        index: u32,
        address: IpAddr,
        prefix_len: u8,
    ) -> Result<(), NetlinkError> {
        let header = match address {
            IpAddr::V4(_) => address_header(AF_INET, prefix_len, 0, index),
            IpAddr::V6(_) => {
                if prefix_len > 128 {
                    return Err(NetlinkError::InvalidPrefixLength { prefix_len });
                }
                address_header(AF_INET6, prefix_len, IFA_F_NODAD, index)
            }
        };
        let mut message = MessageBuilder::new(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, &header);
        match address {
            IpAddr::V4(address) => {
                message
                    .attribute(IFA_LOCAL, &address.octets())
                    .attribute(IFA_ADDRESS, &address.octets());
                if let Some(broadcast) = broadcast(address, prefix_len)? {
                    message.attribute(IFA_BROADCAST, &broadcast.octets());
                }
            }
            IpAddr::V6(address) => {
                message.attribute(IFA_ADDRESS, &address.octets());
            }
        }
        match self.request("add address", message) {
            Err(error) if error.errno() == Some(libc::EEXIST) => Ok(()),
            result => result.map(drop),
        }
    }
}

impl Netlink {
    /// Takes `address/prefix_len` off link `index` (its connected route
    /// goes with it). An address the link does not have is fine.
    pub fn delete_address(
        &mut self,
        index: u32,
        address: IpAddr,
        prefix_len: u8,
    ) -> Result<(), NetlinkError> {
        let family = match address {
            IpAddr::V4(_) => AF_INET,
            IpAddr::V6(_) => AF_INET6,
        };
        let header = address_header(family, prefix_len, 0, index);
        let mut message = MessageBuilder::new(RTM_DELADDR, 0, &header);
        match address {
            IpAddr::V4(address) => {
                message
                    .attribute(IFA_LOCAL, &address.octets())
                    .attribute(IFA_ADDRESS, &address.octets());
            }
            IpAddr::V6(address) => {
                message.attribute(IFA_ADDRESS, &address.octets());
            }
        }
        match self.request("delete address", message) {
            Err(error) if error.errno() == Some(libc::EADDRNOTAVAIL) => Ok(()),
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
