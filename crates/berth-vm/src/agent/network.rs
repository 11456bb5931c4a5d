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
//! Spare cards (`SpareCards`: a running container's `network connect`
//! takes one, microvm having no hotplug) are moved, down and without an
//! address, into a network namespace the agent makes and holds, so the
//! container never sees them; `ConnectNetwork` moves one back under its
//! network's name with its addresses, `DisconnectNetwork` parks it again
//! (the move takes its addresses and routes away). On the host their taps
//! are down and bridged to nothing until then: what the guest sends on a
//! spare is dropped there (docs/VM.md, *Spare cards*).

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
    #[error("failed to make the network namespace of the spare cards")]
    Parking(#[source] std::io::Error),
    #[error("the guest has no spare network card with MAC {mac}")]
    NoSpare { mac: String },
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
    /// Where the spare cards wait, and the container's own namespace (to
    /// move them back): see the module doc.
    pub(super) spares: SpareCards,
}

/// The network namespaces spare cards move between.
#[derive(Debug, Default)]
pub(super) struct SpareCards {
    namespaces: Option<Namespaces>,
}

#[derive(Debug)]
struct Namespaces {
    /// The agent's own (the container's): opened before the other is made.
    container: std::os::fd::OwnedFd,
    /// Nobody's: a namespace with only the parked cards (and its `lo`, down).
    parking: std::os::fd::OwnedFd,
}

impl SpareCards {
    /// Parks the cards with `macs` (see the module doc).
    pub(super) fn park(&mut self, macs: &[String]) -> Result<(), NetworkError> {
        if macs.is_empty() {
            return Ok(());
        }
        let parking = self
            .namespaces()?
            .parking
            .try_clone()
            .map_err(NetworkError::Parking)?;
        let mut netlink = Netlink::open()?;
        let links = netlink.links()?;
        for mac in macs {
            let card = find_card(&links, mac)?;
            netlink.set_down(card.index)?;
            // A name of its own in the parking namespace (the kernel's
            // `ethN` may be one a network's card is to take here).
            netlink.set_name(card.index, &parked_name(mac)?)?;
            netlink.set_namespace(card.index, std::os::fd::AsFd::as_fd(&parking))?;
        }
        Ok(())
    }

    /// `ConnectNetwork`: the parked card with `network.mac` into the
    /// container's namespace as `name`, with its addresses, up.
    pub(super) fn connect(
        &mut self,
        name: &str,
        network: &GuestNetwork,
    ) -> Result<(), NetworkError> {
        let no_spare = || NetworkError::NoSpare {
            mac: network.mac.clone(),
        };
        let Some(namespaces) = &self.namespaces else {
            return Err(no_spare());
        };
        let mut parked = Netlink::open_in(std::os::fd::AsFd::as_fd(&namespaces.parking))?;
        let mac = parse_mac(&network.mac)?;
        let card = parked
            .links()?
            .into_iter()
            .find(|link| link.mac == Some(mac))
            .ok_or_else(no_spare)?;
        parked.set_name(card.index, name)?;
        if let Err(error) =
            parked.set_namespace(card.index, std::os::fd::AsFd::as_fd(&namespaces.container))
        {
            let _ = parked.set_name(card.index, &parked_name(&network.mac)?);
            return Err(error.into());
        }
        let mut netlink = Netlink::open()?;
        let index = netlink.link_index(name)?.ok_or_else(no_spare)?;
        let configured = (|| {
            netlink.add_address(index, network.address.into(), network.prefix_len)?;
            for (address, prefix_len) in &network.more_addresses {
                netlink.add_address(index, *address, *prefix_len)?;
            }
            netlink.set_up(index)
        })();
        if let Err(error) = configured {
            let _ = self.disconnect(&network.mac);
            return Err(error.into());
        }
        Ok(())
    }

    /// `DisconnectNetwork`: the card with `mac` down and parked again.
    pub(super) fn disconnect(&mut self, mac: &str) -> Result<(), NetworkError> {
        let mut netlink = Netlink::open()?;
        let card = find_card(&netlink.links()?, mac)?;
        let parking = self
            .namespaces()?
            .parking
            .try_clone()
            .map_err(NetworkError::Parking)?;
        netlink.set_down(card.index)?;
        netlink.set_name(card.index, &parked_name(mac)?)?;
        netlink.set_namespace(card.index, std::os::fd::AsFd::as_fd(&parking))?;
        Ok(())
    }

    /// The two namespaces, the parking one made on first use (on a thread
    /// of its own: `unshare` moves only that thread, which then ends; its
    /// descriptor keeps the namespace).
    fn namespaces(&mut self) -> Result<&Namespaces, NetworkError> {
        if self.namespaces.is_none() {
            let container: std::os::fd::OwnedFd = fs_err::File::open("/proc/thread-self/ns/net")
                .map_err(NetworkError::Parking)?
                .into();
            let parking = std::thread::spawn(|| -> std::io::Result<std::os::fd::OwnedFd> {
                nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET)?;
                Ok(fs_err::File::open("/proc/thread-self/ns/net")?.into())
            })
            .join()
            .map_err(|_| NetworkError::Parking(std::io::Error::other("the thread panicked")))?
            .map_err(NetworkError::Parking)?;
            self.namespaces = Some(Namespaces { container, parking });
        }
        Ok(self.namespaces.as_ref().expect("made above"))
    }
}

/// Acts on a network message of the host's (`SpareCards`,
/// `ConnectNetwork`, `DisconnectNetwork`); the answer to send.
pub(super) fn change(
    spares: &mut SpareCards,
    message: &crate::protocol::HostMessage,
) -> crate::protocol::GuestMessage {
    use crate::protocol::HostMessage;
    let done = match message {
        HostMessage::SpareCards { macs } => spares.park(macs),
        HostMessage::ConnectNetwork { name, network } => spares.connect(name, network),
        HostMessage::DisconnectNetwork { mac } => spares.disconnect(mac),
        _ => Ok(()),
    };
    crate::protocol::GuestMessage::NetworkChanged {
        error: done.err().map(|error| super::error_chain(&error)),
    }
}

/// A parked card's name: its MAC's digits (unique among the cards, and
/// within the 15 bytes of a link name).
fn parked_name(mac: &str) -> Result<String, NetworkError> {
    let bytes = parse_mac(mac)?;
    Ok(format!(
        "p{}",
        bytes
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect::<String>()
    ))
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
                let cards = find_cards(&netlink.links()?, networks)?;
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
    /// a veth standing in for the card: parked out of sight, connected
    /// under its network's name with the address, parked again without it,
    /// connected to another network with only that one's address.
    #[test]
    fn a_spare_card_is_parked_connected_and_parked_again() {
        let checked = std::thread::spawn(|| {
            if let Err(errno) = nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET) {
                eprintln!("skipped: cannot create a network namespace ({errno}); needs root");
                return false;
            }
            let here = fs_err::File::open("/proc/thread-self/ns/net").unwrap();
            let mut netlink = Netlink::open().unwrap();
            // The kernel's name for the spare is one a network's card takes.
            netlink
                .create_veth("eth1", "other", std::os::fd::AsFd::as_fd(&here), None)
                .unwrap();
            let links = netlink.links().unwrap();
            let mac = links.iter().find(|link| link.name == "eth1").unwrap().mac;
            let mac: Vec<String> = mac.unwrap().iter().map(|b| format!("{b:02x}")).collect();
            let mac = mac.join(":");
            let addresses = || fs_err::read_to_string("/proc/thread-self/net/fib_trie").unwrap();
            let mut spares = SpareCards::default();
            spares.park(std::slice::from_ref(&mac)).unwrap();
            assert_eq!(netlink.link_index("eth1").unwrap(), None);
            // Connected as `eth2`, with its address, up.
            let mut first = network(&mac);
            first.address = std::net::Ipv4Addr::new(10, 97, 0, 5);
            spares.connect("eth2", &first).unwrap();
            let card = netlink
                .links()
                .unwrap()
                .into_iter()
                .find(|l| l.name == "eth2")
                .unwrap();
            assert!(card.up);
            assert!(addresses().contains("10.97.0.5"), "{}", addresses());
            // A second connect of the same card finds no spare.
            let error = spares.connect("eth3", &first).unwrap_err();
            assert!(matches!(error, NetworkError::NoSpare { .. }), "{error}");
            // Parked again: gone, and its address with it.
            spares.disconnect(&mac).unwrap();
            assert_eq!(netlink.link_index("eth2").unwrap(), None);
            assert!(!addresses().contains("10.97.0.5"), "{}", addresses());
            let error = spares.disconnect(&mac).unwrap_err();
            assert!(matches!(error, NetworkError::NoCard { .. }), "{error}");
            // Another network: only its address.
            let mut second = network(&mac);
            second.address = std::net::Ipv4Addr::new(10, 98, 0, 6);
            spares.connect("eth1", &second).unwrap();
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
