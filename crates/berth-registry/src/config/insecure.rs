//! `insecure-registries` entries: `host[:port]` names or CIDRs (moby 20.10
//! `LoadInsecureRegistries`), and the address arithmetic to match them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A network in CIDR notation, as Go's `net.ParseCIDR` reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

impl Cidr {
    pub const fn new_v4(address: Ipv4Addr, prefix: u8) -> Self {
        Self {
            network: IpAddr::V4(address),
            prefix,
        }
    }

    pub const fn new_v6(address: Ipv6Addr, prefix: u8) -> Self {
        Self {
            network: IpAddr::V6(address),
            prefix,
        }
    }

    /// `address/prefix`; the address's host bits are dropped (`10.1.2.3/8`
    /// is `10.0.0.0/8`).
    pub fn parse(text: &str) -> Option<Self> {
        let (address, prefix) = text.split_once('/')?;
        let address: IpAddr = address.parse().ok()?;
        if prefix.is_empty() || !prefix.bytes().all(|byte| byte.is_ascii_digit()) {
            return None;
        }
        let prefix: u8 = prefix.parse().ok()?;
        let bits = if address.is_ipv4() { 32 } else { 128 };
        if prefix > bits {
            return None;
        }
        Some(Self {
            network: mask(address, prefix),
            prefix,
        })
    }

    pub fn contains(&self, address: IpAddr) -> bool {
        // Go compares IPv4 networks with IPv4-mapped IPv6 addresses as IPv4.
        let address = match address {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
            v4 => v4,
        };
        address.is_ipv4() == self.network.is_ipv4() && mask(address, self.prefix) == self.network
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}/{}", self.network, self.prefix)
    }
}

fn mask(address: IpAddr, prefix: u8) -> IpAddr {
    match address {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            let kept = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(bits & kept))
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let kept = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(bits & kept))
        }
    }
}

/// Go's `net.SplitHostPort`, leniently: `(host, Some(port))` for
/// `host:port` and `[v6]:port`, `(text, None)` for anything else.
pub fn split_host_port(text: &str) -> (&str, Option<&str>) {
    if let Some(rest) = text.strip_prefix('[') {
        if let Some((host, port)) = rest.split_once("]:") {
            return (host, Some(port));
        }
        return (text, None);
    }
    match text.split_once(':') {
        Some((host, port)) if !port.contains(':') => (host, Some(port)),
        _ => (text, None),
    }
}

/// distribution 2.7's `DomainRegexp`, anchored: dot-separated components
/// of letters, digits and inner hyphens, then an optional `:digits`.
fn is_domain(text: &str) -> bool {
    let (name, port) = match text.rsplit_once(':') {
        Some((name, port)) => (name, Some(port)),
        None => (text, None),
    };
    let component = |part: &str| {
        !part.is_empty()
            && part
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
            && !part.starts_with('-')
            && !part.ends_with('-')
    };
    name.split('.').all(component)
        && port.is_none_or(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
}

/// moby `validateHostPort`: the reason an entry is neither a CIDR nor a
/// usable `host[:port]`, in Docker's words.
pub fn validate_host_port(text: &str) -> Result<(), String> {
    let (host, port) = split_host_port(text);
    if !is_domain(text) && host.parse::<IpAddr>().is_err() {
        return Err(format!("invalid host {host:?}"));
    }
    if let Some(port) = port {
        let number: i64 = port
            .parse()
            .map_err(|_| format!("strconv.Atoi: parsing {port:?}: invalid syntax"))?;
        if !(0..=65535).contains(&number) {
            return Err(format!("invalid port {port:?}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs_parse_and_match_as_in_go() {
        let network = Cidr::parse("10.1.2.3/8").unwrap();
        assert_eq!(network.to_string(), "10.0.0.0/8");
        assert!(network.contains("10.200.0.1".parse().unwrap()));
        assert!(network.contains("::ffff:10.0.0.1".parse().unwrap()));
        assert!(!network.contains("11.0.0.1".parse().unwrap()));
        let v6 = Cidr::parse("fd00::/8").unwrap();
        assert!(v6.contains("fd12::1".parse().unwrap()));
        assert!(!v6.contains("10.0.0.1".parse().unwrap()));
        assert!(Cidr::parse("0.0.0.0/0")
            .unwrap()
            .contains("8.8.8.8".parse().unwrap()));
        for bad in [
            "10.0.0.0",
            "10.0.0.0/33",
            "10.0.0.0/",
            "host/8",
            "10.0.0.0/+8",
        ] {
            assert_eq!(Cidr::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn host_ports_validate_as_in_moby() {
        for good in [
            "registry.example",
            "registry.example:5000",
            "10.0.0.1:80",
            "[::1]:5000",
            "::1",
        ] {
            assert_eq!(validate_host_port(good), Ok(()), "{good}");
        }
        assert_eq!(
            validate_host_port("bad_host:5000"),
            Err("invalid host \"bad_host\"".into())
        );
        assert_eq!(
            validate_host_port("-bad.example"),
            Err("invalid host \"-bad.example\"".into())
        );
        assert_eq!(
            validate_host_port("registry.example:99999"),
            Err("invalid port \"99999\"".into())
        );
        assert_eq!(
            validate_host_port("[::1]:port"),
            Err("strconv.Atoi: parsing \"port\": invalid syntax".into())
        );
    }
}
