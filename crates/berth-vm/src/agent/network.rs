//! The guest's network: `lo` up for every container, and one virtio-net
//! card per network of the container (each on the tap the host bridged to
//! one of the container's veths) with the container's address on it, once,
//! before the first process that names them. berth-net's netlink, as the
//! host uses it.
//!
//! A card is found by its MAC, which the host gave QEMU, never by the
//! order the guest kernel probed the cards in; it is then named as the
//! namespace container's veth would be (`eth0` for the first network,
//! `eth1`, …). Only the network that has the gateway gets the default
//! route (the first, as for a namespace container).
//!
//! Spare cards (microvm has no hotplug: a VM boots with a few more cards
//! than networks, for `network connect` while it runs) stay as the kernel
//! made them: down and without an address; one that has a name a
//! network's card is to take gets another (`p` and its MAC's digits).
//! `ConnectNetwork` names one after its network's veth, gives it the
//! addresses and brings it up; `DisconnectNetwork` takes it down and its
//! addresses away. On the host its tap is down and bridged to nothing
//! until it is given a network: what the guest sends on a spare is dropped
//! there (docs/VM.md, *Spare cards*).

use berth_net::netlink::{Link, Netlink, NetlinkError};

use crate::protocol::GuestNetwork;

#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    #[error("failed to configure the guest's network")]
    Netlink(#[from] NetlinkError),
    #[error("the guest has no network card with MAC {mac} (is virtio_net loaded?)")]
    NoCard { mac: String },
    #[error("malformed MAC address {mac:?} for a guest network card")]
    MalformedMac { mac: String },
    #[error("the guest's cards have other networks already (a warm member's are its own)")]
    OtherNetworks,
    #[error("failed to listen on the embedded DNS address 127.0.0.11:53")]
    Dns(#[source] std::io::Error),
    #[error("the guest's network card with MAC {mac} is in use (up)")]
    NotSpare { mac: String },
    #[error("the guest's link {name} is in use (up)")]
    NameInUse { name: String },
}

/// What is configured so far.
#[derive(Debug, Default)]
pub(super) struct GuestLinks {
    loopback_up: bool,
    /// The networks whose cards have their addresses: one container per
    /// VM, so its first networks stay.
    configured: Option<Vec<GuestNetwork>>,
    /// 127.0.0.11:53, when a network of the container has the embedded DNS.
    pub(super) dns: Option<crate::dns_relay::GuestDns>,
}

/// `ConnectNetwork`: the spare card with `network.mac` named `name`, with
/// the network's addresses, up.
fn connect(name: &str, network: &GuestNetwork) -> Result<(), NetworkError> {
    let mut netlink = Netlink::open()?;
    let links = netlink.links()?;
    let card = find_card(&links, &network.mac)?;
    if card.up {
        return Err(NetworkError::NotSpare {
            mac: network.mac.clone(),
        });
    }
    if card.name != name {
        // The host names a new card after a veth name free in its own
        // namespace, which the guest's configured cards mirror: only a
        // spare (down) can have it here.
        if let Some(other) = links.iter().find(|link| link.name == name) {
            if other.up {
                return Err(NetworkError::NameInUse {
                    name: name.to_owned(),
                });
            }
            netlink.set_name(other.index, &spare_name(other))?;
        }
        netlink.set_name(card.index, name)?;
    }
    let configured = (|| {
        netlink.add_address(card.index, network.address.into(), network.prefix_len)?;
        for (address, prefix_len) in &network.more_addresses {
            netlink.add_address(card.index, *address, *prefix_len)?;
        }
        netlink.set_up(card.index)
    })();
    if let Err(error) = configured {
        let _ = disconnect(network);
        return Err(error.into());
    }
    Ok(())
}

/// `DisconnectNetwork`: the card with `network.mac` down, without the
/// network's addresses (the routes through it go with them and the link).
fn disconnect(network: &GuestNetwork) -> Result<(), NetworkError> {
    let mut netlink = Netlink::open()?;
    let card = find_card(&netlink.links()?, &network.mac)?;
    netlink.set_down(card.index)?;
    netlink.delete_address(card.index, network.address.into(), network.prefix_len)?;
    for (address, prefix_len) in &network.more_addresses {
        netlink.delete_address(card.index, *address, *prefix_len)?;
    }
    Ok(())
}

/// A spare's name when the kernel's is one a network's card takes: `p`
/// and its MAC's digits (unique, and within a link name's 15 bytes).
fn spare_name(link: &Link) -> String {
    let digits: String = link
        .mac
        .unwrap_or_default()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("p{digits}")
}

/// Renames, out of the way, each link that is not one of `cards` but has
/// the name one of them is to take (a spare the kernel probed before a
/// network's card).
fn move_spares_aside(
    netlink: &mut Netlink,
    links: &[Link],
    cards: &[Link],
) -> Result<(), NetworkError> {
    for position in 0..cards.len() {
        let name = card_name(position);
        if let Some(other) = links
            .iter()
            .find(|link| link.name == name && cards.iter().all(|card| card.index != link.index))
        {
            netlink.set_name(other.index, &spare_name(other))?;
        }
    }
    Ok(())
}

/// Acts on a network message of the host's (`ConnectNetwork`,
/// `DisconnectNetwork`); the answer to send.
pub(super) fn change(message: &crate::protocol::HostMessage) -> crate::protocol::GuestMessage {
    use crate::protocol::HostMessage;
    let done = match message {
        HostMessage::ConnectNetwork { name, network } => connect(name, network),
        HostMessage::DisconnectNetwork { network } => disconnect(network),
        _ => Ok(()),
    };
    crate::protocol::GuestMessage::NetworkChanged {
        error: done.err().map(|error| super::error_chain(&error)),
    }
}

/// The link with `mac` among `links`.
fn find_card(links: &[Link], mac: &str) -> Result<Link, NetworkError> {
    let bytes = parse_mac(mac)?;
    links
        .iter()
        .find(|link| link.mac == Some(bytes))
        .cloned()
        .ok_or_else(|| NetworkError::NoCard {
            mac: mac.to_owned(),
        })
}

impl GuestLinks {
    /// `lo` up, then (once) each of `networks` on its card, and the DNS
    /// listener when asked. A warm member has its networks configured
    /// before its claim (`StageRoot`); a run naming other networks than the
    /// configured ones is refused.
    pub(super) fn prepare(
        &mut self,
        networks: &[GuestNetwork],
        embedded_dns: bool,
    ) -> Result<(), NetworkError> {
        let configure = !networks.is_empty() && self.configured.is_none();
        if let Some(configured) = &self.configured {
            if !networks.is_empty() && configured != networks {
                return Err(NetworkError::OtherNetworks);
            }
        }
        if !self.loopback_up || configure {
            let mut netlink = Netlink::open()?;
            if !self.loopback_up {
                if let Some(index) = netlink.link_index("lo")? {
                    netlink.set_up(index)?;
                }
                self.loopback_up = true;
            }
            if configure {
                let links = netlink.links()?;
                let cards = find_cards(&links, networks)?;
                move_spares_aside(&mut netlink, &links, &cards)?;
                name_cards(&mut netlink, &cards)?;
                for (card, network) in cards.iter().zip(networks) {
                    netlink.add_address(card.index, network.address.into(), network.prefix_len)?;
                    for (address, prefix_len) in &network.more_addresses {
                        netlink.add_address(card.index, *address, *prefix_len)?;
                    }
                    netlink.set_up(card.index)?;
                }
                // Once every card has its address: the gateway is on one of them.
                for (card, network) in cards.iter().zip(networks) {
                    if let Some(gateway) = network.gateway {
                        netlink.add_default_route(gateway.into(), card.index)?;
                    }
                    if let Some(gateway) = network.ipv6_gateway {
                        netlink.add_default_route(gateway.into(), card.index)?;
                    }
                }
                self.configured = Some(networks.to_vec());
            }
        }
        if embedded_dns && self.dns.is_none() {
            self.dns = Some(crate::dns_relay::GuestDns::bind().map_err(NetworkError::Dns)?);
        }
        Ok(())
    }
}

/// The card of each network, in the networks' order, by MAC.
fn find_cards(links: &[Link], networks: &[GuestNetwork]) -> Result<Vec<Link>, NetworkError> {
    networks
        .iter()
        .map(|network| find_card(links, &network.mac))
        .collect()
}

/// The name of the card of the network at `position`: a namespace
/// container's veth's.
fn card_name(position: usize) -> String {
    format!("eth{position}")
}

/// Names `cards` `eth0`, `eth1`, … in their order (still down). When the
/// kernel probed them in another order, the names are swapped through
/// temporary ones, which no card has (a rename to a name in use fails).
fn name_cards(netlink: &mut Netlink, cards: &[Link]) -> Result<(), NetworkError> {
    if cards
        .iter()
        .enumerate()
        .all(|(position, card)| card.name == card_name(position))
    {
        return Ok(());
    }
    for (position, card) in cards.iter().enumerate() {
        netlink.set_name(card.index, &format!("berthcard{position}"))?;
    }
    for (position, card) in cards.iter().enumerate() {
        netlink.set_name(card.index, &card_name(position))?;
    }
    Ok(())
}

fn parse_mac(text: &str) -> Result<[u8; 6], NetworkError> {
    let malformed = || NetworkError::MalformedMac {
        mac: text.to_owned(),
    };
    let bytes: Vec<u8> = text
        .split(':')
        .map(|byte| {
            (byte.len() == 2)
                .then(|| u8::from_str_radix(byte, 16).ok())
                .flatten()
        })
        .collect::<Option<_>>()
        .ok_or_else(malformed)?;
    bytes.try_into().map_err(|_| malformed())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn link(index: u32, name: &str, mac: [u8; 6]) -> Link {
        Link {
            index,
            name: name.into(),
            kind: None,
            master: None,
            up: false,
            mac: Some(mac),
        }
    }

    fn network(mac: &str) -> GuestNetwork {
        GuestNetwork {
            mac: mac.into(),
            address: std::net::Ipv4Addr::new(10, 88, 0, 2),
            prefix_len: 16,
            gateway: None,
            more_addresses: Vec::new(),
            ipv6_gateway: None,
        }
    }

    #[test]
    fn cards_are_found_by_mac_whatever_the_probe_order() {
        let links = [
            link(1, "lo", [0; 6]),
            link(2, "eth0", [6, 0x42, 10, 89, 0, 2]),
            link(3, "eth1", [6, 0x42, 10, 88, 0, 2]),
        ];
        let cards = find_cards(
            &links,
            &[network("06:42:0a:58:00:02"), network("06:42:0A:59:00:02")],
        )
        .unwrap();
        let indexes: Vec<u32> = cards.iter().map(|card| card.index).collect();
        assert_eq!(indexes, [3, 2]);
        let error = find_cards(&links, &[network("06:42:0a:5a:00:02")]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the guest has no network card with MAC 06:42:0a:5a:00:02 (is virtio_net loaded?)"
        );
        for bad in [
            "06:42:0a:58:00",
            "06:42:0a:58:00:02:03",
            "6:42:0a:58:00:02",
            "zz:42:0a:58:00:02",
        ] {
            assert!(
                matches!(parse_mac(bad), Err(NetworkError::MalformedMac { .. })),
                "{bad}"
            );
        }
    }

    /// A spare card's life, in a network namespace of the test's own with
    /// bridges standing in for the cards: moved aside when it has the name
    /// a network's card takes, connected under its network's name (another
    /// spare with that name moved aside) with the address, down without it
    /// once disconnected, connected to another network with only that
    /// one's address.
    #[test]
    fn a_spare_card_is_connected_disconnected_and_connected_again() {
        let checked = std::thread::spawn(|| {
            if let Err(errno) = nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET) {
                eprintln!("skipped: cannot create a network namespace ({errno}); needs root");
                return false;
            }
            let mut netlink = Netlink::open().unwrap();
            // The kernel probed two spares first: they have eth0 and eth1.
            for name in ["eth0", "eth1", "eth2"] {
                netlink.create_bridge(name).unwrap();
            }
            let links = netlink.links().unwrap();
            let mac_of = |name: &str| {
                let link = links.iter().find(|link| link.name == name).unwrap();
                let text: Vec<String> = link
                    .mac
                    .unwrap()
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                (link.clone(), text.join(":"))
            };
            let (first_spare, spare_mac) = mac_of("eth0");
            let (_, other_spare_mac) = mac_of("eth1");
            let (card, card_mac) = mac_of("eth2");
            let cards = find_cards(&links, &[network(&card_mac)]).unwrap();
            move_spares_aside(&mut netlink, &links, &cards).unwrap();
            name_cards(&mut netlink, &cards).unwrap();
            assert_eq!(netlink.link_index("eth0").unwrap(), Some(card.index));
            let aside = spare_name(&first_spare);
            assert_eq!(netlink.link_index(&aside).unwrap(), Some(first_spare.index));
            // eth1 is the other spare's, which steps aside for this one.
            let addresses = || fs_err::read_to_string("/proc/thread-self/net/fib_trie").unwrap();
            let mut first = network(&spare_mac);
            first.address = std::net::Ipv4Addr::new(10, 97, 0, 5);
            connect("eth1", &first).unwrap();
            let links = netlink.links().unwrap();
            let connected = links.iter().find(|link| link.name == "eth1").unwrap();
            assert_eq!(connected.index, first_spare.index);
            assert!(connected.up);
            assert!(links
                .iter()
                .any(|link| link.name.starts_with('p') && !link.up));
            assert!(addresses().contains("10.97.0.5"), "{}", addresses());
            // A card in use is no spare.
            let error = connect("eth3", &first).unwrap_err();
            assert!(matches!(error, NetworkError::NotSpare { .. }), "{error}");
            // Nor is a name in use one a spare can take.
            let error = connect("eth1", &network(&other_spare_mac)).unwrap_err();
            assert!(matches!(error, NetworkError::NameInUse { .. }), "{error}");
            // Disconnected: down, and its address gone.
            disconnect(&first).unwrap();
            let links = netlink.links().unwrap();
            assert!(!links.iter().find(|link| link.name == "eth1").unwrap().up);
            assert!(!addresses().contains("10.97.0.5"), "{}", addresses());
            // Another network: only its address.
            let mut second = network(&spare_mac);
            second.address = std::net::Ipv4Addr::new(10, 98, 0, 6);
            connect("eth1", &second).unwrap();
            let text = addresses();
            assert!(
                text.contains("10.98.0.6") && !text.contains("10.97.0.5"),
                "{text}"
            );
            true
        })
        .join()
        .unwrap();
        if !checked {
            eprintln!("(not checked)");
        }
    }

    /// Two links named against their networks' order (as a guest kernel
    /// that probed the cards the other way round would name them) get
    /// their names swapped, in a network namespace of the test's own.
    #[test]
    fn cards_probed_in_another_order_are_renamed_to_the_networks_order() {
        let swapped = std::thread::spawn(|| {
            if let Err(errno) = nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET) {
                eprintln!("skipped: cannot create a network namespace ({errno}); needs root");
                return None;
            }
            let mut netlink = Netlink::open().unwrap();
            // Bridges stand in for the cards: links with a MAC of their own.
            netlink.create_bridge("eth0").unwrap();
            netlink.create_bridge("eth1").unwrap();
            let links = netlink.links().unwrap();
            let mac_of = |name: &str| {
                let link = links.iter().find(|link| link.name == name).unwrap();
                let mac = link.mac.unwrap();
                let text: Vec<String> = mac.iter().map(|byte| format!("{byte:02x}")).collect();
                (link.index, text.join(":"))
            };
            let (first, first_mac) = mac_of("eth1");
            let (second, second_mac) = mac_of("eth0");
            let cards = find_cards(&links, &[network(&first_mac), network(&second_mac)]).unwrap();
            name_cards(&mut netlink, &cards).unwrap();
            Some((
                netlink.link_index("eth0").unwrap() == Some(first),
                netlink.link_index("eth1").unwrap() == Some(second),
            ))
        })
        .join()
        .unwrap();
        if let Some(swapped) = swapped {
            assert_eq!(swapped, (true, true));
        }
    }
}
