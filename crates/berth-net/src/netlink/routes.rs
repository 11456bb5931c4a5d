//! Routes of the main table.

use std::net::{IpAddr, Ipv4Addr};

use super::error::NetlinkError;
use super::message::{
    attributes, read_u32, route_header, MessageBuilder, AF_INET, AF_INET6, NLM_F_CREATE,
    NLM_F_EXCL, ROUTE_HEADER_LEN, RTA_DST, RTA_GATEWAY, RTA_OIF, RTA_TABLE, RTM_GETROUTE,
    RTM_NEWROUTE, RT_TABLE_MAIN,
};
use super::Netlink;

impl Netlink {
    /// Adds the default route via `gateway` to the main table. An IPv4
    /// gateway must be on a connected subnet of a link that is up; an
    /// IPv6 one is reached through link `index` (which a link-local
    /// gateway, e.g. `fe80::1001:1`, needs: it is on every link).
    pub fn add_default_route(&mut self, gateway: IpAddr, index: u32) -> Result<(), NetlinkError> {
        let family = if gateway.is_ipv4() { AF_INET } else { AF_INET6 };
        let mut message = MessageBuilder::new(
            RTM_NEWROUTE,
            NLM_F_CREATE | NLM_F_EXCL,
            &route_header(family, 0),
        );
        match gateway {
            IpAddr::V4(gateway) => {
                message.attribute(RTA_GATEWAY, &gateway.octets());
            }
            IpAddr::V6(gateway) => {
                message
                    .attribute(RTA_GATEWAY, &gateway.octets())
                    .attribute(RTA_OIF, &index.to_ne_bytes());
            }
        }
        self.request("add default route", message).map(drop)
    }

    /// Destination and prefix length of every IPv4 route in the main
    /// table; the default route is `0.0.0.0/0`.
    pub fn ipv4_routes(&mut self) -> Result<Vec<(Ipv4Addr, u8)>, NetlinkError> {
        const OPERATION: &str = "list routes";
        let message = MessageBuilder::new(RTM_GETROUTE, 0, &route_header(AF_INET, 0));
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
