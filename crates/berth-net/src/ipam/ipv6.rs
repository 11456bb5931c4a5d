//! IPv6 subnets and link-local addresses. As libnetwork's allocator, an
//! IPv6 subnet has no broadcast address: only its first (the subnet-router
//! anycast address, RFC 4291 2.6.1) is never given.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::str::FromStr;

use super::{FamilySubnet, IpamError};

/// An IPv6 network in CIDR form, e.g. `2001:db8::/64` (host bits cleared).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ipv6Net {
    address: Ipv6Addr,
    prefix_len: u8,
}

fn mask(prefix_len: u8) -> u128 {
    match prefix_len {
        0 => 0,
        bits => u128::MAX << (128 - u32::from(bits.min(128))),
    }
}

impl Ipv6Net {
    pub fn new(address: Ipv6Addr, prefix_len: u8) -> Self {
        let prefix_len = prefix_len.min(128);
        Self {
            address: Ipv6Addr::from(u128::from(address) & mask(prefix_len)),
            prefix_len,
        }
    }

    pub fn address(&self) -> Ipv6Addr {
        self.address
    }

    pub fn prefix_len(&self) -> u8 {
        self.prefix_len
    }

    pub fn contains(&self, address: Ipv6Addr) -> bool {
        u128::from(address) & mask(self.prefix_len) == u128::from(self.address)
    }

    pub fn overlaps(&self, other: &Ipv6Net) -> bool {
        let shorter = self.prefix_len.min(other.prefix_len);
        u128::from(self.address) & mask(shorter) == u128::from(other.address) & mask(shorter)
    }

    /// Whether `range` (`--ip-range`) lies wholly inside this subnet.
    pub fn holds(&self, range: &Ipv6Net) -> bool {
        range.prefix_len >= self.prefix_len && self.contains(range.address)
    }

    fn last(&self) -> u128 {
        u128::from(self.address) | !mask(self.prefix_len)
    }

    /// Whether `address` is the subnet's own address, which no endpoint,
    /// gateway or auxiliary address may take.
    pub fn is_network_address(&self, address: Ipv6Addr) -> bool {
        address == self.address
    }

    /// The lowest address of `range` (the whole subnet when None) that is
    /// neither the subnet's own address nor in `reserved`.
    pub fn next_free(
        &self,
        range: Option<Ipv6Net>,
        reserved: &[Ipv6Addr],
    ) -> Result<Ipv6Addr, IpamError> {
        let (mut first, mut last) = (u128::from(self.address).saturating_add(1), self.last());
        if let Some(range) = range {
            first = first.max(u128::from(range.address));
            last = last.min(range.last());
        }
        let mut candidate = first;
        while candidate <= last {
            let address = Ipv6Addr::from(candidate);
            if !reserved.contains(&address) {
                return Ok(address);
            }
            candidate = match candidate.checked_add(1) {
                Some(next) => next,
                None => break,
            };
        }
        Err(IpamError::Exhausted6(range.unwrap_or(*self)))
    }
}

impl FamilySubnet for Ipv6Net {
    type Address = Ipv6Addr;

    fn holds_address(&self, address: Ipv6Addr) -> bool {
        self.contains(address)
    }

    fn is_reserved(&self, address: Ipv6Addr) -> bool {
        self.is_network_address(address)
    }
}

impl fmt::Display for Ipv6Net {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}/{}", self.address, self.prefix_len)
    }
}

impl FromStr for Ipv6Net {
    type Err = IpamError;

    /// `x::/n`, with Go's `net.ParseCIDR` error wording.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || IpamError::InvalidCidr(text.to_owned());
        let (address, prefix) = text.split_once('/').ok_or_else(invalid)?;
        let address: Ipv6Addr = address.parse().map_err(|_| invalid())?;
        if prefix.is_empty() || !prefix.bytes().all(|byte| byte.is_ascii_digit()) {
            return Err(invalid());
        }
        let prefix_len: u8 = prefix.parse().map_err(|_| invalid())?;
        if prefix_len > 128 {
            return Err(invalid());
        }
        Ok(Ipv6Net::new(address, prefix_len))
    }
}

/// An endpoint's `--ip6` (IPAM `IPv6Address`), in dockerd's words.
pub fn parse_ipv6_address(text: &str) -> Result<Ipv6Addr, IpamError> {
    text.parse()
        .map_err(|_| IpamError::InvalidIpv6Address(text.to_owned()))
}

/// 169.254.0.0/16 (RFC 3927) or fe80::/10 (RFC 4291).
pub fn is_link_local(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(address) => address.is_link_local(),
        IpAddr::V6(address) => address.segments()[0] & 0xffc0 == 0xfe80,
    }
}

/// A `--link-local-ip` (IPAM `LinkLocalIPs`) and the prefix length it is
/// given on the interface: /16 for IPv4 and /64 for IPv6, as Docker does.
pub fn parse_link_local(text: &str) -> Result<(IpAddr, u8), IpamError> {
    let address: IpAddr = text
        .parse()
        .map_err(|_| IpamError::InvalidLinkLocal(text.to_owned()))?;
    if !is_link_local(address) {
        return Err(IpamError::NotLinkLocal(text.to_owned()));
    }
    Ok((address, if address.is_ipv4() { 16 } else { 64 }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn net(text: &str) -> Ipv6Net {
        text.parse().unwrap()
    }

    fn ip(text: &str) -> Ipv6Addr {
        text.parse().unwrap()
    }

    #[test]
    fn parses_and_formats_cidr_as_go_does() {
        assert_eq!(net("fd77:3::5/64").to_string(), "fd77:3::/64");
        assert_eq!(net("2001:389::/64").prefix_len(), 64);
        assert_eq!(net("::/0").to_string(), "::/0");
        for bad in [
            "2001:389::",
            "2001:389::/129",
            "bogus::/64",
            "10.0.0.0/8",
            "2001::/+64",
            "2001::/",
        ] {
            assert_eq!(
                bad.parse::<Ipv6Net>(),
                Err(IpamError::InvalidCidr(bad.to_owned())),
                "{bad}"
            );
        }
    }

    #[test]
    fn overlap_and_ranges_are_prefix_aware() {
        assert!(net("fd77:1::/64").overlaps(&net("fd77:1:0:0:1::/80")));
        assert!(net("fd77:1:0:0:1::/80").overlaps(&net("fd77:1::/64")));
        assert!(!net("fd77:1::/64").overlaps(&net("fd77:2::/64")));
        assert!(net("2001:389::/64").holds(&net("2001:389::/96")));
        assert!(!net("2001:389::/64").holds(&net("2001:389::/63")));
        assert!(!net("2001:389::/64").holds(&net("2001:38a::/96")));
    }

    /// Docker 20.10 here: `--subnet fd77:5::/64` gives the bridge ::1 and the
    /// first container ::2; a /96 range from the subnet's start with the
    /// gateway ::ffff (docker-py's test) gives ::1 first.
    #[test]
    fn addresses_skip_the_subnet_address_the_gateway_and_used_ones() {
        let subnet = net("fd77:5::/64");
        let gateway = subnet.next_free(None, &[]).unwrap();
        assert_eq!(gateway, ip("fd77:5::1"));
        assert_eq!(subnet.next_free(None, &[gateway]).unwrap(), ip("fd77:5::2"));
        let range = Some(net("2001:389::/96"));
        let subnet = net("2001:389::/64");
        assert_eq!(
            subnet.next_free(range, &[ip("2001:389::ffff")]).unwrap(),
            ip("2001:389::1")
        );
        // No broadcast: a /127 has one address to give, its last.
        let tiny = net("fd77:9::/127");
        assert_eq!(tiny.next_free(None, &[]).unwrap(), ip("fd77:9::1"));
        assert_eq!(
            tiny.next_free(None, &[ip("fd77:9::1")]),
            Err(IpamError::Exhausted6(tiny))
        );
        let full = net("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127");
        assert!(full
            .next_free(None, &[ip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")])
            .is_err());
    }

    #[test]
    fn requested_addresses_are_checked() {
        let subnet = net("fd77:5::/64");
        let gateway = ip("fd77:5::1");
        let used = [ip("fd77:5::9")];
        assert!(subnet
            .check_requested(ip("fd77:5::f00d"), gateway, &used)
            .is_ok());
        assert_eq!(
            subnet.check_requested(ip("fd77:5::9"), gateway, &used),
            Err(IpamError::InUse(ip("fd77:5::9").into()))
        );
        assert_eq!(
            subnet.check_requested(gateway, gateway, &used),
            Err(IpamError::InUse(gateway.into()))
        );
        for outside in ["fd77:6::f00d", "fd77:5::"] {
            assert!(matches!(
                subnet.check_requested(ip(outside), gateway, &used),
                Err(IpamError::OutsideSubnet { .. })
            ));
        }
        assert_eq!(
            parse_ipv6_address("10.77.5.9").unwrap_err().to_string(),
            "invalid IPv6 address: 10.77.5.9"
        );
    }

    /// dockerd 20.10's words for `--link-local-ip bogus` and `10.1.1.1`.
    #[test]
    fn link_local_addresses_are_parsed_with_their_prefix() {
        assert_eq!(
            parse_link_local("169.254.8.8").unwrap(),
            ("169.254.8.8".parse().unwrap(), 16)
        );
        assert_eq!(
            parse_link_local("fe80::8").unwrap(),
            ("fe80::8".parse().unwrap(), 64)
        );
        assert_eq!(
            parse_link_local("bogus").unwrap_err().to_string(),
            "Invalid link-local IP address: [bogus]"
        );
        assert_eq!(
            parse_link_local("10.1.1.1").unwrap_err().to_string(),
            "invalid link local IP address: 10.1.1.1"
        );
        assert!(parse_link_local("fd77::1").is_err());
    }
}
