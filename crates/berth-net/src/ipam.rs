//! Address management: IPv4 subnets, choosing one that clashes with nothing
//! on the host, and the next free address in one; IPv6 subnets (given by
//! the user only, as Docker's bridge has no default IPv6 pool) in
//! [`Ipv6Net`]. Pure logic; the store keeps the allocations.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::str::FromStr;

mod ipv6;

pub use ipv6::{is_link_local, parse_ipv6_address, parse_link_local, Ipv6Net};

/// An IPv4 network in CIDR form, e.g. `172.18.0.0/16`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ipv4Net {
    address: Ipv4Addr,
    prefix_len: u8,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum IpamError {
    #[error("invalid CIDR address: {0}")]
    InvalidCidr(String),
    #[error("invalid IP address: {0}")]
    InvalidAddress(String),
    #[error("no available IPv4 address pool: every candidate overlaps a route or a network")]
    NoPool,
    #[error("no available IPv4 addresses on this network's address pools: {0}")]
    Exhausted(Ipv4Net),
    #[error("no available IPv6 addresses on this network's address pools: {0}")]
    Exhausted6(Ipv6Net),
    #[error("the address {address} is not in the subnet {subnet}")]
    OutsideSubnet { address: IpAddr, subnet: String },
    #[error("Address already in use: {0}")]
    InUse(IpAddr),
    /// dockerd's words (`verifyNetworkingConfig`).
    #[error("invalid IPv6 address: {0}")]
    InvalidIpv6Address(String),
    #[error("Invalid link-local IP address: [{0}]")]
    InvalidLinkLocal(String),
    #[error("invalid link local IP address: {0}")]
    NotLinkLocal(String),
}

impl Ipv4Net {
    /// The network containing `address` with `prefix_len` bits (host bits
    /// cleared).
    pub fn new(address: Ipv4Addr, prefix_len: u8) -> Self {
        let prefix_len = prefix_len.min(32);
        Self {
            address: Ipv4Addr::from(u32::from(address) & mask(prefix_len)),
            prefix_len,
        }
    }

    pub fn address(&self) -> Ipv4Addr {
        self.address
    }

    pub fn prefix_len(&self) -> u8 {
        self.prefix_len
    }

    pub fn contains(&self, address: Ipv4Addr) -> bool {
        u32::from(address) & mask(self.prefix_len) == u32::from(self.address)
    }

    pub fn overlaps(&self, other: &Ipv4Net) -> bool {
        let shorter = self.prefix_len.min(other.prefix_len);
        u32::from(self.address) & mask(shorter) == u32::from(other.address) & mask(shorter)
    }

    /// Docker's default gateway: the first host address.
    pub fn first_host(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.address) + 1)
    }

    fn broadcast(&self) -> u32 {
        u32::from(self.address) | !mask(self.prefix_len)
    }

    /// The lowest address of `range` (the whole subnet when None) that is
    /// neither the subnet's network or broadcast address nor in `reserved`
    /// (the gateway, the auxiliary addresses, the addresses in use). As
    /// libnetwork's allocator, a range's own first and last addresses are
    /// hosts like any other: only the subnet's two are never given.
    pub fn next_free(
        &self,
        range: Option<Ipv4Net>,
        reserved: &[Ipv4Addr],
    ) -> Result<Ipv4Addr, IpamError> {
        let (mut first, mut last) = (
            u32::from(self.address) + 1,
            self.broadcast().saturating_sub(1),
        );
        if let Some(range) = range {
            first = first.max(u32::from(range.address));
            last = last.min(range.broadcast());
        }
        (first..=last)
            .map(Ipv4Addr::from)
            .find(|candidate| !reserved.contains(candidate))
            .ok_or(IpamError::Exhausted(range.unwrap_or(*self)))
    }

    /// Whether `range` (`--ip-range`) lies wholly inside this subnet.
    pub fn holds(&self, range: &Ipv4Net) -> bool {
        range.prefix_len >= self.prefix_len && self.contains(range.address)
    }

    /// Whether `address` is the subnet's network or broadcast address,
    /// which no endpoint, gateway or auxiliary address may take.
    pub fn is_network_or_broadcast(&self, address: Ipv4Addr) -> bool {
        let raw = u32::from(address);
        raw == u32::from(self.address) || raw == self.broadcast()
    }
}

/// A subnet of one address family, as the checks both families share see
/// it: a requested address here, an auxiliary address in the engine.
pub trait FamilySubnet: fmt::Display {
    type Address: FromStr + PartialEq + Copy + Into<IpAddr>;

    fn holds_address(&self, address: Self::Address) -> bool;

    /// An address no host of the subnet may have: its own address, and for
    /// IPv4 its broadcast address.
    fn is_reserved(&self, address: Self::Address) -> bool;

    /// Checks a requested address (`--ip`, `--ip6`).
    fn check_requested(
        &self,
        address: Self::Address,
        gateway: Self::Address,
        used: &[Self::Address],
    ) -> Result<(), IpamError> {
        if !self.holds_address(address) || self.is_reserved(address) {
            return Err(IpamError::OutsideSubnet {
                address: address.into(),
                subnet: self.to_string(),
            });
        }
        if address == gateway || used.contains(&address) {
            return Err(IpamError::InUse(address.into()));
        }
        Ok(())
    }
}

impl FamilySubnet for Ipv4Net {
    type Address = Ipv4Addr;

    fn holds_address(&self, address: Ipv4Addr) -> bool {
        self.contains(address)
    }

    fn is_reserved(&self, address: Ipv4Addr) -> bool {
        self.is_network_or_broadcast(address)
    }
}

fn mask(prefix_len: u8) -> u32 {
    match prefix_len {
        0 => 0,
        bits => u32::MAX << (32 - u32::from(bits.min(32))),
    }
}

impl fmt::Display for Ipv4Net {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}/{}", self.address, self.prefix_len)
    }
}

impl FromStr for Ipv4Net {
    type Err = IpamError;

    /// `a.b.c.d/n`; Docker keeps host bits as given, we clear them (the
    /// subnet `10.1.2.3/24` is `10.1.2.0/24`).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || IpamError::InvalidCidr(text.to_owned());
        let (address, prefix) = text.split_once('/').ok_or_else(invalid)?;
        let address: Ipv4Addr = address.parse().map_err(|_| invalid())?;
        let prefix_len: u8 = prefix.parse().map_err(|_| invalid())?;
        if prefix_len > 32 {
            return Err(invalid());
        }
        Ok(Ipv4Net::new(address, prefix_len))
    }
}

pub fn parse_address(text: &str) -> Result<Ipv4Addr, IpamError> {
    text.parse()
        .map_err(|_| IpamError::InvalidAddress(text.to_owned()))
}

/// Docker's default local pools, in its order: 172.17–31.0.0/16, then
/// 192.168.0.0/16 cut into /20s.
pub fn default_pools() -> impl Iterator<Item = Ipv4Net> {
    let sixteens = (17..=31).map(|second| Ipv4Net::new(Ipv4Addr::new(172, second, 0, 0), 16));
    let twenties = (0..16).map(|index| Ipv4Net::new(Ipv4Addr::new(192, 168, index * 16, 0), 20));
    sixteens.chain(twenties)
}

/// The first pool that overlaps neither a host route (the default route
/// aside) nor a network berth already has.
pub fn choose_subnet(
    pools: impl Iterator<Item = Ipv4Net>,
    host_routes: &[Ipv4Net],
    taken: &[Ipv4Net],
) -> Result<Ipv4Net, IpamError> {
    pools
        .into_iter()
        .find(|pool| {
            !host_routes
                .iter()
                .filter(|route| route.prefix_len > 0)
                .chain(taken)
                .any(|used| used.overlaps(pool))
        })
        .ok_or(IpamError::NoPool)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn net(text: &str) -> Ipv4Net {
        text.parse().unwrap()
    }

    #[test]
    fn parses_and_formats_cidr() {
        assert_eq!(net("10.1.2.3/24").to_string(), "10.1.2.0/24");
        assert_eq!(net("0.0.0.0/0").to_string(), "0.0.0.0/0");
        for bad in ["10.1.2.0", "10.1.2.0/33", "10.1.2/24", "x/8", "10.0.0.0/-1"] {
            assert_eq!(
                bad.parse::<Ipv4Net>(),
                Err(IpamError::InvalidCidr(bad.to_owned()))
            );
        }
    }

    #[test]
    fn overlap_is_symmetric_and_prefix_aware() {
        assert!(net("172.17.0.0/16").overlaps(&net("172.17.5.0/24")));
        assert!(net("172.17.5.0/24").overlaps(&net("172.17.0.0/16")));
        assert!(!net("172.17.0.0/16").overlaps(&net("172.18.0.0/16")));
        assert!(net("0.0.0.0/0").overlaps(&net("10.0.0.0/8")));
    }

    #[test]
    fn subnet_choice_skips_host_routes_and_taken_networks_but_not_the_default_route() {
        let routes = [net("0.0.0.0/0"), net("172.17.0.0/16"), net("192.0.2.0/24")];
        let taken = [net("172.18.0.0/16")];
        assert_eq!(
            choose_subnet(default_pools(), &routes, &taken).unwrap(),
            net("172.19.0.0/16")
        );
        let everything = [net("172.16.0.0/12"), net("192.168.0.0/16")];
        assert_eq!(
            choose_subnet(default_pools(), &everything, &[]),
            Err(IpamError::NoPool)
        );
    }

    #[test]
    fn addresses_skip_network_gateway_broadcast_and_used() {
        let subnet = net("10.5.0.0/29");
        let gateway = subnet.first_host();
        assert_eq!(gateway, Ipv4Addr::new(10, 5, 0, 1));
        let mut used = vec![gateway];
        for expected in 2..=6 {
            let address = subnet.next_free(None, &used).unwrap();
            assert_eq!(address, Ipv4Addr::new(10, 5, 0, expected));
            used.push(address);
        }
        assert_eq!(
            subnet.next_free(None, &used),
            Err(IpamError::Exhausted(subnet))
        );
        used.retain(|address| *address != Ipv4Addr::new(10, 5, 0, 3));
        assert_eq!(
            subnet.next_free(None, &used).unwrap(),
            Ipv4Addr::new(10, 5, 0, 3)
        );
    }

    /// Docker 20.10 here: `--subnet 10.241.0.0/24 --ip-range 10.241.0.128/25`
    /// gives the bridge 10.241.0.128 and the first container .130 when .129
    /// is an auxiliary address; a /30 range at the subnet's start holds the
    /// gateway .1 and containers .2 and .3, then "no available IPv4
    /// addresses".
    #[test]
    fn ranges_bound_dynamic_addresses_as_libnetwork_does() {
        let subnet = net("10.241.0.0/24");
        let range = Some(net("10.241.0.128/25"));
        let gateway = subnet.next_free(range, &[]).unwrap();
        assert_eq!(gateway, Ipv4Addr::new(10, 241, 0, 128));
        let aux = Ipv4Addr::new(10, 241, 0, 129);
        assert_eq!(
            subnet.next_free(range, &[gateway, aux]).unwrap(),
            Ipv4Addr::new(10, 241, 0, 130)
        );
        let last = Ipv4Addr::new(10, 241, 0, 254);
        let full: Vec<Ipv4Addr> = (128..=254).map(|d| Ipv4Addr::new(10, 241, 0, d)).collect();
        assert_eq!(
            subnet.next_free(range, &full),
            Err(IpamError::Exhausted(net("10.241.0.128/25")))
        );
        assert!(
            full.contains(&last),
            "the broadcast .255 is never a candidate"
        );

        let small = Some(net("10.251.0.0/30"));
        let subnet = net("10.251.0.0/24");
        let gateway = subnet.next_free(small, &[]).unwrap();
        assert_eq!(gateway, Ipv4Addr::new(10, 251, 0, 1));
        let second = subnet.next_free(small, &[gateway]).unwrap();
        let third = subnet.next_free(small, &[gateway, second]).unwrap();
        assert_eq!(
            (second, third),
            (Ipv4Addr::new(10, 251, 0, 2), Ipv4Addr::new(10, 251, 0, 3))
        );
        assert!(subnet.next_free(small, &[gateway, second, third]).is_err());
    }

    #[test]
    fn a_range_must_lie_inside_its_subnet() {
        let subnet = net("10.242.0.0/24");
        assert!(subnet.holds(&net("10.242.0.128/25")));
        assert!(subnet.holds(&net("10.242.0.0/24")));
        assert!(subnet.holds(&net("10.242.0.7/32")));
        assert!(!subnet.holds(&net("10.242.0.0/23")));
        assert!(!subnet.holds(&net("10.243.0.0/25")));
    }

    #[test]
    fn requested_addresses_are_checked() {
        let subnet = net("10.5.0.0/24");
        let gateway = subnet.first_host();
        let used = [Ipv4Addr::new(10, 5, 0, 9)];
        assert!(subnet
            .check_requested(Ipv4Addr::new(10, 5, 0, 10), gateway, &used)
            .is_ok());
        assert_eq!(
            subnet.check_requested(Ipv4Addr::new(10, 5, 0, 9), gateway, &used),
            Err(IpamError::InUse(Ipv4Addr::new(10, 5, 0, 9).into()))
        );
        assert_eq!(
            subnet.check_requested(gateway, gateway, &used),
            Err(IpamError::InUse(gateway.into()))
        );
        for outside in [
            Ipv4Addr::new(10, 6, 0, 2),
            Ipv4Addr::new(10, 5, 0, 0),
            Ipv4Addr::new(10, 5, 0, 255),
        ] {
            assert!(matches!(
                subnet.check_requested(outside, gateway, &used),
                Err(IpamError::OutsideSubnet { .. })
            ));
        }
    }
}
