//! The IPAM configs of a `network create`: one per address family, as
//! dockerd's bridge driver takes them, and the checks of the IPv6 one (the
//! IPv4 one is checked in `manage`, where its subnet may be chosen).

use std::collections::BTreeMap;
use std::net::Ipv6Addr;

use berth_net::ipam::{FamilySubnet, Ipv6Net};

use super::manage::NetworkCreate;
use super::record::Ipv6Pool;
use super::NetworkError;

/// One IPAM config of a `network create`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IpamPool {
    pub subnet: Option<String>,
    pub gateway: Option<String>,
    /// `--ip-range`: inside the subnet, which must be given.
    pub ip_range: Option<String>,
    /// `--aux-address NAME=IP`: addresses of the subnet no container gets.
    pub aux_addresses: BTreeMap<String, String>,
}

impl IpamPool {
    /// A pool of an IPv6 subnet (the family is the subnet's; a pool
    /// without one is taken for IPv4, whose checks then refuse it).
    fn is_ipv6(&self) -> bool {
        self.subnet
            .as_deref()
            .is_some_and(|subnet| subnet.contains(':'))
    }
}

/// The IPv4 and the IPv6 pool of a request; more than one of a family is
/// refused as by dockerd's bridge driver.
pub(super) fn split_pools(
    pools: &[IpamPool],
) -> Result<(IpamPool, Option<IpamPool>), NetworkError> {
    let (ipv6, ipv4): (Vec<&IpamPool>, Vec<&IpamPool>) =
        pools.iter().partition(|pool| pool.is_ipv6());
    if ipv4.len() > 1 || ipv6.len() > 1 {
        return Err(NetworkError::MultipleSubnets);
    }
    Ok((
        ipv4.first().map(|pool| (*pool).clone()).unwrap_or_default(),
        ipv6.first().map(|pool| (*pool).clone()),
    ))
}

/// `com.docker.network.enable_ipv6` as dockerd's bridge driver reads it
/// (Go's `strconv.ParseBool`): a bad value is refused; a good one is kept
/// in `Options` and, as by dockerd, changes nothing (`EnableIPv6` alone
/// gives a network IPv6).
pub(super) fn check_enable_ipv6_option(
    options: &BTreeMap<String, String>,
) -> Result<(), NetworkError> {
    match options.get("com.docker.network.enable_ipv6") {
        None => Ok(()),
        Some(value)
            if matches!(
                value.as_str(),
                "1" | "t"
                    | "T"
                    | "TRUE"
                    | "true"
                    | "True"
                    | "0"
                    | "f"
                    | "F"
                    | "FALSE"
                    | "false"
                    | "False"
            ) =>
        {
            Ok(())
        }
        Some(value) => Err(NetworkError::InvalidEnableIpv6Option {
            value: value.clone(),
        }),
    }
}

/// The IPv6 pool of a request, checked as libnetwork checks an IPv4 one
/// (`check_ipam`): the subnet, the gateway (given, else the range's first
/// free address, else the subnet's first), the range and the auxiliary
/// addresses. Kept as given (`Subnet` with its host bits, as dockerd shows
/// it); the bridge address is set only with `EnableIPv6`.
pub(super) fn check_ipv6_pool(
    request: &NetworkCreate,
    pool: &IpamPool,
) -> Result<(Ipv6Net, Ipv6Pool), NetworkError> {
    let text = pool.subnet.clone().unwrap_or_default();
    let subnet: Ipv6Net = text.parse().map_err(NetworkError::InvalidAddress)?;
    let gateway: Option<Ipv6Addr> = pool
        .gateway
        .as_deref()
        .map(|gateway| {
            gateway.parse().map_err(|_| {
                NetworkError::InvalidAddress(berth_net::ipam::IpamError::InvalidAddress(
                    gateway.to_owned(),
                ))
            })
        })
        .transpose()?;
    if let Some(gateway) = gateway {
        if !subnet.contains(gateway) {
            return Err(NetworkError::GatewayOutsideSubnet {
                gateway: gateway.into(),
                subnet: subnet.to_string(),
            });
        }
        if subnet.is_network_address(gateway) {
            return Err(NetworkError::GatewayInUse {
                gateway: gateway.into(),
            });
        }
    }
    let range = match pool.ip_range.as_deref() {
        None => None,
        Some(text) => {
            let range: Ipv6Net = text.parse().map_err(NetworkError::InvalidAddress)?;
            if !subnet.holds(&range) {
                return Err(NetworkError::RangeOutsideSubnet {
                    range: text.to_owned(),
                });
            }
            Some(range)
        }
    };
    let bridge_address = match gateway {
        Some(gateway) => gateway,
        None => subnet
            .next_free(range, &[])
            .map_err(NetworkError::InvalidAddress)?,
    };
    check_aux_addresses(&request.name, pool, &subnet, bridge_address)?;
    Ok((
        subnet,
        Ipv6Pool {
            subnet: text,
            gateway: pool.gateway.clone().unwrap_or_default(),
            bridge_address: if request.enable_ipv6 {
                bridge_address.to_string()
            } else {
                String::new()
            },
            ip_range: pool.ip_range.clone().unwrap_or_default(),
            aux_addresses: pool.aux_addresses.clone(),
        },
    ))
}

/// `pool`'s auxiliary addresses, checked as libnetwork checks them: each an
/// address of `subnet`'s family, in it, and taking neither an address the
/// subnet reserves, the `gateway` nor another's.
pub(super) fn check_aux_addresses<S: FamilySubnet>(
    network: &str,
    pool: &IpamPool,
    subnet: &S,
    gateway: S::Address,
) -> Result<(), NetworkError> {
    let mut taken = vec![gateway];
    for (name, text) in &pool.aux_addresses {
        let address: S::Address = text.parse().map_err(|_| NetworkError::InvalidAuxAddress {
            name: name.clone(),
            address: text.clone(),
            network: network.to_owned(),
        })?;
        if !subnet.holds_address(address) {
            return Err(NetworkError::AuxAddressOutsideSubnet {
                name: name.clone(),
                address: address.into(),
                subnet: subnet.to_string(),
            });
        }
        if subnet.is_reserved(address) || taken.contains(&address) {
            return Err(NetworkError::AuxAddressInUse {
                name: name.clone(),
                address: address.into(),
            });
        }
        taken.push(address);
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn pool(subnet: &str) -> IpamPool {
        IpamPool {
            subnet: Some(subnet.to_owned()),
            ..IpamPool::default()
        }
    }

    #[test]
    fn one_pool_per_family_whatever_their_order() {
        let (ipv4, ipv6) = split_pools(&[pool("fd77:3::5/64"), pool("10.77.3.0/24")]).unwrap();
        assert_eq!(ipv4.subnet.as_deref(), Some("10.77.3.0/24"));
        assert_eq!(ipv6.unwrap().subnet.as_deref(), Some("fd77:3::5/64"));
        let (ipv4, ipv6) = split_pools(&[]).unwrap();
        assert_eq!((ipv4, ipv6), (IpamPool::default(), None));
        for two in [
            [pool("10.77.1.0/24"), pool("10.77.2.0/24")],
            [pool("fd77:1::/64"), pool("fd77:2::/64")],
        ] {
            assert_eq!(
                split_pools(&two).unwrap_err().to_string(),
                "bridge driver doesn't support multiple subnets"
            );
        }
    }

    #[test]
    fn the_enable_ipv6_option_must_be_a_go_bool() {
        let options = |value: &str| {
            BTreeMap::from([(
                "com.docker.network.enable_ipv6".to_owned(),
                value.to_owned(),
            )])
        };
        for good in ["true", "1", "F", "False"] {
            assert!(check_enable_ipv6_option(&options(good)).is_ok(), "{good}");
        }
        assert_eq!(
            check_enable_ipv6_option(&options("yes"))
                .unwrap_err()
                .to_string(),
            r#"failed to parse com.docker.network.enable_ipv6 value: yes (strconv.ParseBool: parsing "yes": invalid syntax)"#
        );
        assert!(check_enable_ipv6_option(&BTreeMap::new()).is_ok());
    }

    /// Docker 20.10 here: `--ipv6 --subnet fd77:3::5/64 --gateway fd77:3::9
    /// --ip-range fd77:3::/80 --aux-address a=fd77:3::7` is shown as given;
    /// without a gateway the bridge takes the range's first address and
    /// inspect shows none.
    #[test]
    fn the_ipv6_pool_is_kept_as_given_and_checked() {
        let request = NetworkCreate {
            name: "n".to_owned(),
            enable_ipv6: true,
            ..NetworkCreate::default()
        };
        let mut given = pool("fd77:3::5/64");
        given.gateway = Some("fd77:3::9".to_owned());
        given.ip_range = Some("fd77:3::/80".to_owned());
        given.aux_addresses = BTreeMap::from([("a".to_owned(), "fd77:3::7".to_owned())]);
        let (subnet, kept) = check_ipv6_pool(&request, &given).unwrap();
        assert_eq!(subnet.to_string(), "fd77:3::/64");
        assert_eq!(kept.subnet, "fd77:3::5/64");
        assert_eq!(kept.bridge_address, "fd77:3::9");
        let mut ranged = pool("2001:389::/64");
        ranged.ip_range = Some("2001:389::100/120".to_owned());
        let (_, kept) = check_ipv6_pool(&request, &ranged).unwrap();
        assert_eq!(
            (kept.gateway.as_str(), kept.bridge_address.as_str()),
            ("", "2001:389::100")
        );
        let disabled = NetworkCreate {
            enable_ipv6: false,
            ..request.clone()
        };
        assert_eq!(
            check_ipv6_pool(&disabled, &ranged)
                .unwrap()
                .1
                .bridge_address,
            ""
        );
        let refused = |pool: IpamPool| check_ipv6_pool(&request, &pool).unwrap_err().to_string();
        let mut outside = pool("fd77:3::/64");
        outside.aux_addresses = BTreeMap::from([("a".to_owned(), "fd77:4::7".to_owned())]);
        assert_eq!(
            refused(outside),
            "auxiliary address: (a:fd77:4::7) must belong to the master pool: fd77:3::/64"
        );
        let mut bad = pool("fd77:3::/64");
        bad.gateway = Some("nonsense".to_owned());
        assert_eq!(refused(bad), "invalid IP address: nonsense");
    }
}
