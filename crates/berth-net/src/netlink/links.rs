//! Links: bridges, veth pairs, their master, state and removal.

use std::os::fd::{AsRawFd, BorrowedFd};

use super::error::{check_name, NetlinkError};
use super::message::{
    attributes, link_header, read_string, read_u32, MalformedMessage, Message, MessageBuilder,
    IFF_UP, IFLA_ADDRESS, IFLA_IFNAME, IFLA_INFO_DATA, IFLA_INFO_KIND, IFLA_LINKINFO, IFLA_MASTER,
    IFLA_NET_NS_FD, LINK_HEADER_LEN, NLM_F_CREATE, NLM_F_EXCL, RTM_DELLINK, RTM_GETLINK,
    RTM_NEWLINK, RTM_SETLINK, VETH_INFO_PEER,
};
use super::Netlink;

/// A network interface as the kernel lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub index: u32,
    pub name: String,
    /// `IFLA_INFO_KIND`: "bridge", "veth", …; `None` for devices without a
    /// driver kind such as `lo`.
    pub kind: Option<String>,
    /// The bridge (or bond) this link is a port of.
    pub master: Option<u32>,
    /// Administratively up (`IFF_UP`).
    pub up: bool,
    /// The hardware address, when it is an Ethernet one.
    pub mac: Option<[u8; 6]>,
}

impl Netlink {
    /// The index of the link called `name`, `None` if there is none.
    pub fn link_index(&mut self, name: &str) -> Result<Option<u32>, NetlinkError> {
        Ok(self
            .link_by_name("look up link", name)?
            .map(|link| link.index))
    }

    /// Every link of this namespace.
    pub fn links(&mut self) -> Result<Vec<Link>, NetlinkError> {
        const OPERATION: &str = "list links";
        let message = MessageBuilder::new(RTM_GETLINK, 0, &link_header(0, 0, 0));
        self.dump(OPERATION, message)?
            .iter()
            .filter(|reply| reply.kind == RTM_NEWLINK)
            .map(|reply| parse_link(OPERATION, reply))
            .collect()
    }

    /// The Ethernet address of link `index` (`None` if it has none, like a
    /// tunnel); a missing link is an `ENODEV` error.
    pub fn mac_address(&mut self, index: u32) -> Result<Option<[u8; 6]>, NetlinkError> {
        const OPERATION: &str = "read MAC address";
        let message = MessageBuilder::new(RTM_GETLINK, 0, &link_header(index, 0, 0));
        let link = self.single_link(OPERATION, message)?;
        Ok(link.mac)
    }

    /// Creates bridge `name` and returns its index. An existing bridge of
    /// that name is returned as is; any other link of that name is `EEXIST`.
    pub fn create_bridge(&mut self, name: &str) -> Result<u32, NetlinkError> {
        const OPERATION: &str = "create bridge";
        check_name(name)?;
        let mut message = MessageBuilder::new(
            RTM_NEWLINK,
            NLM_F_CREATE | NLM_F_EXCL,
            &link_header(0, 0, 0),
        );
        message
            .attribute_string(IFLA_IFNAME, name)
            .nested(IFLA_LINKINFO, |info| {
                info.attribute_string(IFLA_INFO_KIND, "bridge");
            });
        match self.request(OPERATION, message) {
            Err(error) if error.errno() != Some(libc::EEXIST) => return Err(error),
            _ => {}
        }
        match self.link_by_name(OPERATION, name)? {
            Some(link) if link.kind.as_deref() == Some("bridge") => Ok(link.index),
            Some(_) => Err(NetlinkError::kernel(OPERATION, libc::EEXIST)),
            None => Err(NetlinkError::kernel(OPERATION, libc::ENODEV)),
        }
    }

    /// Creates the veth pair `name` (here) and `peer`, the peer created
    /// directly inside `peer_netns` with `peer_mac` if given. Returns the
    /// index of `name`.
    pub fn create_veth(
        &mut self,
        name: &str,
        peer: &str,
        peer_netns: BorrowedFd<'_>,
        peer_mac: Option<[u8; 6]>,
    ) -> Result<u32, NetlinkError> {
        const OPERATION: &str = "create veth pair";
        check_name(name)?;
        check_name(peer)?;
        let netns = u32::try_from(peer_netns.as_raw_fd())
            .map_err(|_| NetlinkError::kernel(OPERATION, libc::EBADF))?;
        let mut message = MessageBuilder::new(
            RTM_NEWLINK,
            NLM_F_CREATE | NLM_F_EXCL,
            &link_header(0, 0, 0),
        );
        message
            .attribute_string(IFLA_IFNAME, name)
            .nested(IFLA_LINKINFO, |info| {
                info.attribute_string(IFLA_INFO_KIND, "veth");
                info.nested(IFLA_INFO_DATA, |data| {
                    // The peer is described like a link of its own:
                    // `ifinfomsg` then attributes (drivers/net/veth.c).
                    data.nested(VETH_INFO_PEER, |peer_link| {
                        peer_link
                            .header(&link_header(0, 0, 0))
                            .attribute_string(IFLA_IFNAME, peer)
                            .attribute_u32(IFLA_NET_NS_FD, netns);
                        if let Some(mac) = peer_mac {
                            peer_link.attribute(IFLA_ADDRESS, &mac);
                        }
                    });
                });
            });
        self.request(OPERATION, message)?;
        self.link_by_name(OPERATION, name)?
            .map(|link| link.index)
            .ok_or_else(|| NetlinkError::kernel(OPERATION, libc::ENODEV))
    }

    /// Makes link `index` a port of bridge `master`.
    pub fn set_master(&mut self, index: u32, master: u32) -> Result<(), NetlinkError> {
        let mut message = MessageBuilder::new(RTM_SETLINK, 0, &link_header(index, 0, 0));
        message.attribute_u32(IFLA_MASTER, master);
        self.request("set link master", message).map(drop)
    }

    /// Brings link `index` up.
    pub fn set_up(&mut self, index: u32) -> Result<(), NetlinkError> {
        let message = MessageBuilder::new(RTM_SETLINK, 0, &link_header(index, IFF_UP, IFF_UP));
        self.request("set link up", message).map(drop)
    }

    /// Takes link `index` down.
    pub fn set_down(&mut self, index: u32) -> Result<(), NetlinkError> {
        let message = MessageBuilder::new(RTM_SETLINK, 0, &link_header(index, 0, IFF_UP));
        self.request("set link down", message).map(drop)
    }

    /// Renames link `index` to `name` (`EEXIST` when another link has it;
    /// rename a link before it is up: most drivers refuse a running one).
    pub fn set_name(&mut self, index: u32, name: &str) -> Result<(), NetlinkError> {
        check_name(name)?;
        let mut message = MessageBuilder::new(RTM_SETLINK, 0, &link_header(index, 0, 0));
        message.attribute_string(IFLA_IFNAME, name);
        self.request("rename link", message).map(drop)
    }

    /// Deletes link `index` (a veth's peer goes with it). A link that is
    /// already gone is fine.
    pub fn delete_link(&mut self, index: u32) -> Result<(), NetlinkError> {
        let message = MessageBuilder::new(RTM_DELLINK, 0, &link_header(index, 0, 0));
        match self.request("delete link", message) {
            Err(error) if error.errno() == Some(libc::ENODEV) => Ok(()),
            result => result.map(drop),
        }
    }

    fn link_by_name(
        &mut self,
        operation: &'static str,
        name: &str,
    ) -> Result<Option<Link>, NetlinkError> {
        check_name(name)?;
        let mut message = MessageBuilder::new(RTM_GETLINK, 0, &link_header(0, 0, 0));
        message.attribute_string(IFLA_IFNAME, name);
        match self.single_link(operation, message) {
            Ok(link) => Ok(Some(link)),
            Err(error) if error.errno() == Some(libc::ENODEV) => Ok(None),
            Err(error) => Err(error),
        }
    }

    fn single_link(
        &mut self,
        operation: &'static str,
        message: MessageBuilder,
    ) -> Result<Link, NetlinkError> {
        let replies = self.request(operation, message)?;
        let reply = replies
            .iter()
            .find(|reply| reply.kind == RTM_NEWLINK)
            .ok_or(NetlinkError::Malformed {
                operation,
                source: MalformedMessage("no link in the reply"),
            })?;
        parse_link(operation, reply)
    }
}

fn parse_link(operation: &'static str, reply: &Message) -> Result<Link, NetlinkError> {
    let malformed = |source| NetlinkError::Malformed { operation, source };
    let (header, link_attributes) = reply.split(LINK_HEADER_LEN).map_err(malformed)?;
    let mut link = Link {
        index: read_u32(header, 4).unwrap_or(0),
        name: String::new(),
        kind: None,
        master: None,
        up: read_u32(header, 8).unwrap_or(0) & IFF_UP != 0,
        mac: None,
    };
    for (kind, payload) in attributes(link_attributes) {
        match kind {
            IFLA_IFNAME => link.name = read_string(payload),
            IFLA_MASTER => link.master = read_u32(payload, 0),
            IFLA_ADDRESS => link.mac = payload.try_into().ok(),
            IFLA_LINKINFO => {
                link.kind = attributes(payload)
                    .find(|(info, _)| *info == IFLA_INFO_KIND)
                    .map(|(_, value)| read_string(value));
            }
            _ => {}
        }
    }
    if link.name.is_empty() {
        return Err(malformed(MalformedMessage("link without a name")));
    }
    Ok(link)
}
