//! IPv4 routes of the main table.

use std::net::Ipv4Addr;

use super::error::NetlinkError;
use super::message::{
    attributes, read_u32, route_header, MessageBuilder, AF_INET, NLM_F_CREATE, NLM_F_EXCL,
    ROUTE_HEADER_LEN, RTA_DST, RTA_GATEWAY, RTA_TABLE, RTM_GETROUTE, RTM_NEWROUTE, RT_TABLE_MAIN,
};
use super::Netlink;

impl Netlink {
    /// Adds the default route via `gateway` to the main table. The gateway
    /// must be on a connected subnet of a link that is up.
    pub fn add_default_route(&mut self, gateway: Ipv4Addr) -> Result<(), NetlinkError> {
        let mut message =
            MessageBuilder::new(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, &route_header(0));
        message.attribute(RTA_GATEWAY, &gateway.octets());
        self.request("add default route", message).map(drop)
    }

    /// Destination and prefix length of every IPv4 route in the main
    /// table; the default route is `0.0.0.0/0`.
    pub fn ipv4_routes(&mut self) -> Result<Vec<(Ipv4Addr, u8)>, NetlinkError> {
        const OPERATION: &str = "list routes";
        let message = MessageBuilder::new(RTM_GETROUTE, 0, &route_header(0));
        let mut routes = Vec::new();
        let replies = self.dump(OPERATION, message)?;
        for reply in replies.iter().filter(|reply| reply.kind == RTM_NEWROUTE) {
            let (header, route_attributes) =
                reply
                    .split(ROUTE_HEADER_LEN)
                    .map_err(|source| NetlinkError::Malformed {
                        operation: OPERATION,
                        source,
                    })?;
            let mut table = u32::from(header[4]);
            let mut destination = Ipv4Addr::UNSPECIFIED;
            for (kind, payload) in attributes(route_attributes) {
                match kind {
                    // rtm_table holds only 8 bits; RTA_TABLE is the real one.
                    RTA_TABLE => table = read_u32(payload, 0).unwrap_or(table),
                    RTA_DST => {
                        if let Ok(octets) = <[u8; 4]>::try_from(payload) {
                            destination = Ipv4Addr::from(octets);
                        }
                    }
                    _ => {}
                }
            }
            if header[0] == AF_INET && table == u32::from(RT_TABLE_MAIN) {
                routes.push((destination, header[1]));
            }
        }
        Ok(routes)
    }
}
