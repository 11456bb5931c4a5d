//! A VM container's networks, in its shim's network namespace: the
//! engine connected the container's veths there as `eth0`, `eth1`, … (with
//! their addresses, as for a namespace container); for each the shim adds
//! a tap for one of QEMU's virtio-net cards and a bridge joining the two,
//! so the guest's card takes the container's place on that network: the
//! same address (set by the agent, which finds the card by its MAC), the
//! same published ports (the host's DNAT to the first network's address),
//! the same bridge on the host.
//!
//! ```text
//! host bridge A ── veth ══ eth0 ─┐ br0 ┌─ tap0 ══ QEMU virtio-net ══ guest eth0 (A's address)
//! host bridge B ── veth ══ eth1 ─┐ br1 ┌─ tap1 ══ QEMU virtio-net ══ guest eth1 (B's address)
//!                                (shim's namespace; no address answers there)
//! ```
//!
//! microvm has no hotplug, so every VM with a network also boots with
//! [`spare_cards`] cards more (2 by default), whose taps are made here but
//! left down and bridged to nothing; `network connect` of the running
//! container gives the next spare the new network (its bridge joins the tap
//! and the new veth, the agent gives the guest's card the address), and
//! `network disconnect` takes it back (bridge deleted, tap down, the guest's
//! card down without its addresses). A down tap drops every frame the guest writes to it
//! (`tun_get_user`: `-EIO` unless `IFF_UP`), and nothing else is on it:
//! a spare reaches nothing until it is given a network.

use std::os::fd::{AsFd, OwnedFd};

use berth_net::netlink::Netlink;

/// The tap QEMU gets for one card.
pub(crate) struct Tap {
    pub fd: OwnedFd,
}

/// How many spare cards a VM with a network gets when
/// `BERTH_VM_SPARE_CARDS` does not say.
pub const DEFAULT_SPARE_CARDS: usize = 2;

/// The variable that sets it (0–8; 0: `network connect` of a running VM
/// container is refused).
pub const SPARE_CARDS_ENV: &str = "BERTH_VM_SPARE_CARDS";

/// The most spare cards a VM may ask for.
const MAX_SPARE_CARDS: usize = 8;

/// microvm's virtio-mmio transports (24, QEMU 7.2 with its second
/// IOAPIC), less the agent's serial port, the balloon and the root share:
/// the most network cards, spares included, a VM can have.
pub const MAX_CARDS: usize = 21;

/// The spare cards of a VM that boots with `networks` networks:
/// `BERTH_VM_SPARE_CARDS` or [`DEFAULT_SPARE_CARDS`], within what microvm
/// has room for; none without a network (`--network none` cannot be
/// connected, as with Docker).
pub(crate) fn spare_cards(networks: usize) -> Result<usize, String> {
    spare_cards_for(std::env::var(SPARE_CARDS_ENV).ok().as_deref(), networks)
}

/// [`spare_cards`] with `BERTH_VM_SPARE_CARDS`'s value.
fn spare_cards_for(value: Option<&str>, networks: usize) -> Result<usize, String> {
    let asked = match value {
        None | Some("") => DEFAULT_SPARE_CARDS,
        Some(text) => match text.parse::<usize>() {
            Ok(count) if count <= MAX_SPARE_CARDS => count,
            _ => {
                return Err(format!(
                    "{SPARE_CARDS_ENV}={text:?} is not valid (expected a number from 0 to \
                     {MAX_SPARE_CARDS})"
                ))
            }
        },
    };
    if networks == 0 {
        return Ok(0);
    }
    Ok(asked.min(MAX_CARDS.saturating_sub(networks)))
}

/// One of the VM's network cards: tap `tap{position}` in the shim's
/// namespace, and while it has a network, bridge `br{position}` joining the
/// tap and the network's veth.
pub(crate) struct Card {
    tap: Tap,
    /// The guest card's MAC (QEMU's `mac=`), fixed for the VM's life.
    mac: String,
    /// The network it is on: its id, and the guest card's settings there;
    /// `None`: a spare.
    network: Option<(String, berth_vm::protocol::GuestNetwork)>,
}

/// Every network card of a VM, in QEMU's order.
pub(crate) struct Cards {
    cards: Vec<Card>,
}

impl Cards {
    /// The cards of `networks` (each bridged to its veth) and `spares`
    /// spare cards (taps down, bridged to nothing) with MACs of their own.
    pub(crate) fn make(
        networks: &[super::shim::ShimNetwork],
        spares: usize,
    ) -> Result<Cards, String> {
        let mut cards = Vec::with_capacity(networks.len() + spares);
        for (position, network) in networks.iter().enumerate() {
            cards.push(Card {
                tap: bridge_to_tap(position, &network.veth)?,
                mac: network.guest.mac.clone(),
                network: Some((network.network_id.clone(), network.guest.clone())),
            });
        }
        let id = crate::containers::names::new_id();
        for spare in 0..spares {
            let position = networks.len() + spare;
            let name = format!("tap{position}");
            let fd = open_tap(&name).map_err(|error| {
                format!("failed to make the VM's spare network card {name}: {error}")
            })?;
            cards.push(Card {
                tap: Tap { fd },
                mac: spare_mac(&id, position),
                network: None,
            });
        }
        Ok(Cards { cards })
    }

    /// QEMU's devices, one per card.
    pub(crate) fn devices(&self) -> Vec<berth_vm::qemu::NetworkDevice> {
        self.cards
            .iter()
            .map(|card| berth_vm::qemu::NetworkDevice {
                tap_fd: std::os::fd::AsRawFd::as_raw_fd(&card.tap.fd),
                mac: card.mac.clone(),
            })
            .collect()
    }

    /// Gives the next spare card `network_id`, bridging its tap to `veth`
    /// (in the shim's namespace, where the engine just connected it);
    /// returns `guest` with the card's MAC, what the agent is to set up.
    /// All in use: an error naming the limit (and `true`).
    pub(crate) fn take_spare(
        &mut self,
        network_id: &str,
        veth: &str,
        mut guest: berth_vm::protocol::GuestNetwork,
    ) -> Result<berth_vm::protocol::GuestNetwork, (String, bool)> {
        if self
            .cards
            .iter()
            .any(|card| matches!(&card.network, Some((id, _)) if id == network_id))
        {
            return Err((
                "the VM has a card on that network already".to_owned(),
                false,
            ));
        }
        let total = self.cards.len();
        let Some((position, card)) = self
            .cards
            .iter_mut()
            .enumerate()
            .find(|(_, card)| card.network.is_none())
        else {
            return Err((
                format!(
                    "all {total} network cards of its VM are in use (a VM boots with a card \
                     per network and {} spare ones, {SPARE_CARDS_ENV}): stop the container \
                     and start it again, its next VM has a card for every network",
                    spare_cards(1).unwrap_or(DEFAULT_SPARE_CARDS)
                ),
                true,
            ));
        };
        bridge_existing_tap(position, veth).map_err(|error| (error, false))?;
        guest.mac = card.mac.clone();
        card.network = Some((network_id.to_owned(), guest.clone()));
        Ok(guest)
    }

    /// Takes `network_id`'s card off it: its bridge deleted, its tap down;
    /// returns what the guest's card had there (to take it away). None
    /// when no card has that network.
    pub(crate) fn release(&mut self, network_id: &str) -> Option<berth_vm::protocol::GuestNetwork> {
        let (position, card) = self
            .cards
            .iter_mut()
            .enumerate()
            .find(|(_, card)| matches!(&card.network, Some((id, _)) if id == network_id))?;
        let (_, guest) = card.network.take()?;
        if let Err(error) = unbridge_tap(position) {
            tracing::warn!(%error, position, "failed to unbridge a VM network card");
        }
        Some(guest)
    }
}

/// A spare card's MAC: locally administered unicast (`0a:` differs from
/// the endpoints' `02:42:` and the guest cards' `06:` of [`guest_mac`]),
/// then four bytes of the VM's random id and the card's position.
fn spare_mac(id: &str, position: usize) -> String {
    let mut out = String::from("0a");
    for pair in id.as_bytes().chunks(2).take(4) {
        out.push(':');
        out.push_str(std::str::from_utf8(pair).unwrap_or("00"));
    }
    out.push_str(&format!(":{:02x}", position as u8));
    out
}

/// The lowest `ethN` no link of the namespace of the shim `pid` has: the
/// name of a running VM container's new veth there (and of its card in the
/// guest).
pub(crate) fn free_device_name(pid: i32) -> Result<String, String> {
    let failed = |error: &dyn std::fmt::Display| {
        format!("failed to list the links of the VM's network namespace: {error}")
    };
    let netns =
        fs_err::File::open(format!("/proc/{pid}/ns/net")).map_err(|error| failed(&error))?;
    let mut netlink = Netlink::open_in(netns.as_fd()).map_err(|error| failed(&error))?;
    let links = netlink.links().map_err(|error| failed(&error))?;
    let name = (0..)
        .map(crate::networks::container_device)
        .find(|name| links.iter().all(|link| &link.name != name))
        .expect("some ethN is free");
    Ok(name)
}

/// The guest's MAC for an endpoint's `mac`: the same address with the
/// first byte's 0x04 bit set (still locally administered unicast), so it
/// differs from the veth's (a bridge delivers frames for a port's own MAC
/// to itself, not to the other ports) and from every endpoint berth makes
/// (`02:42:…`, Docker's address-derived MACs).
pub(crate) fn guest_mac(mac: &str) -> Result<String, String> {
    let bytes: Vec<u8> = mac
        .split(':')
        .map(|byte| u8::from_str_radix(byte, 16))
        .collect::<Result<_, _>>()
        .map_err(|_| format!("malformed MAC address {mac:?}"))?;
    let [first, rest @ ..] = bytes.as_slice() else {
        return Err(format!("malformed MAC address {mac:?}"));
    };
    if rest.len() != 5 {
        return Err(format!("malformed MAC address {mac:?}"));
    }
    let mut out = format!("{:02x}", (first | 0x04) & !0x01);
    for byte in rest {
        out.push_str(&format!(":{byte:02x}"));
    }
    Ok(out)
}

/// `lo` up in the shim `pid`'s new namespace, before the engine connects
/// the container there: the embedded DNS socket is bound on 127.0.0.11.
pub(crate) fn loopback_up(pid: i32) -> Result<(), String> {
    let failed = |error: &dyn std::fmt::Display| {
        format!("failed to set up the VM's network namespace: {error}")
    };
    let netns =
        fs_err::File::open(format!("/proc/{pid}/ns/net")).map_err(|error| failed(&error))?;
    let mut netlink =
        Netlink::open_in(std::os::fd::AsFd::as_fd(&netns)).map_err(|error| failed(&error))?;
    if let Some(index) = netlink.link_index("lo").map_err(|error| failed(&error))? {
        netlink.set_up(index).map_err(|error| failed(&error))?;
    }
    Ok(())
}

/// Makes the tap and the bridge of the network at `position` (whose veth
/// the engine named `veth`) in the current (the shim's) namespace.
pub(crate) fn bridge_to_tap(position: usize, veth: &str) -> Result<Tap, String> {
    let tap_name = format!("tap{position}");
    let fd = open_tap(&tap_name).map_err(|error| {
        format!("failed to connect the VM to its network ({veth}): open /dev/net/tun: {error}")
    })?;
    bridge_existing_tap(position, veth)?;
    Ok(Tap { fd })
}

/// The spare card at `position`, no longer a spare: bridge `br{position}`
/// deleted (its ports leave it) and tap `tap{position}` down, so what the
/// guest sends there is dropped again.
fn unbridge_tap(position: usize) -> Result<(), String> {
    let failed = |what: &str, error: &dyn std::fmt::Display| {
        format!("failed to take the VM's card tap{position} off its network: {what}: {error}")
    };
    let mut netlink = Netlink::open().map_err(|error| failed("netlink", &error))?;
    if let Some(tap) = netlink
        .link_index(&format!("tap{position}"))
        .map_err(|error| failed("look up the tap", &error))?
    {
        netlink
            .set_down(tap)
            .map_err(|error| failed("set the tap down", &error))?;
    }
    if let Some(bridge) = netlink
        .link_index(&format!("br{position}"))
        .map_err(|error| failed("look up the bridge", &error))?
    {
        netlink
            .delete_link(bridge)
            .map_err(|error| failed("delete the bridge", &error))?;
    }
    Ok(())
}

/// Bridges the existing tap at `position` to `veth`, both up.
fn bridge_existing_tap(position: usize, veth: &str) -> Result<(), String> {
    let failed = |what: &str, error: &dyn std::fmt::Display| {
        format!("failed to connect the VM to its network ({veth}): {what}: {error}")
    };
    let tap_name = format!("tap{position}");
    let mut netlink = Netlink::open().map_err(|error| failed("netlink", &error))?;
    let index = |netlink: &mut Netlink, name: &str| {
        netlink
            .link_index(name)
            .map_err(|error| failed(name, &error))?
            .ok_or_else(|| failed(name, &"no such link"))
    };
    let veth = index(&mut netlink, veth)?;
    let tap = index(&mut netlink, &tap_name)?;
    let bridge = netlink
        .create_bridge(&format!("br{position}"))
        .map_err(|error| failed("create the bridge", &error))?;
    for port in [veth, tap] {
        netlink
            .set_master(port, bridge)
            .map_err(|error| failed("bridge a port", &error))?;
    }
    for link in [bridge, veth, tap] {
        netlink
            .set_up(link)
            .map_err(|error| failed("set a link up", &error))?;
    }
    // The addresses stay on the veths (the engine's view of the
    // endpoints), but this namespace must not answer for them: the guest
    // does. (`all` counts for every interface: the kernel takes the
    // larger of `all` and the interface's own.)
    fs_err::write("/proc/sys/net/ipv4/conf/all/arp_ignore", "8")
        .map_err(|error| failed("arp_ignore", &error))?;
    // Nor for their IPv6 ones (neighbour discovery would answer them):
    // this namespace has no IPv6 at all, which takes the veths' IPv6
    // addresses and routes away; the bridge still carries the guest's.
    fs_err::write("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1")
        .map_err(|error| failed("disable_ipv6", &error))?;
    Ok(())
}

/// `/dev/net/tun` as tap `name`, without packet information (what QEMU's
/// `-netdev tap,fd=` takes).
fn open_tap(name: &str) -> std::io::Result<OwnedFd> {
    const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
    let file = fs_err::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")?
        .into_parts()
        .0;
    // struct ifreq: the name (16 bytes), then the flags (a short).
    let mut request = [0u8; 40];
    request[..name.len()].copy_from_slice(name.as_bytes());
    let flags = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
    request[16..18].copy_from_slice(&flags.to_ne_bytes());
    // SAFETY: TUNSETIFF reads an ifreq of 40 bytes from `request`, which
    // lives across the call, on the descriptor `file` owns.
    let result = unsafe {
        libc::ioctl(
            std::os::fd::AsRawFd::as_raw_fd(&file),
            TUNSETIFF,
            request.as_mut_ptr(),
        )
    };
    if result < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // Persistent: closing the last descriptor (QEMU's or the shim's, at the
    // VM's end) no longer unregisters the tap then and there, which waits
    // for an RCU grace period per tap in the exiting process; the tap goes
    // with the shim's network namespace instead, whose cleanup the kernel
    // does in the background (as the veths', `release_container_endpoints`).
    const TUNSETPERSIST: libc::c_ulong = 0x4004_54cb;
    // SAFETY: TUNSETPERSIST takes an int by value on the tap `file` owns.
    let result = unsafe {
        libc::ioctl(
            std::os::fd::AsRawFd::as_raw_fd(&file),
            TUNSETPERSIST,
            1 as libc::c_ulong,
        )
    };
    if result < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(OwnedFd::from(file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spare_cards_are_counted_within_microvm_room() {
        assert_eq!(spare_cards_for(None, 1), Ok(DEFAULT_SPARE_CARDS));
        assert_eq!(spare_cards_for(Some(""), 3), Ok(DEFAULT_SPARE_CARDS));
        assert_eq!(spare_cards_for(Some("0"), 1), Ok(0));
        assert_eq!(spare_cards_for(Some("8"), 1), Ok(8));
        // No network: nothing to connect to (`--network none`).
        assert_eq!(spare_cards_for(Some("4"), 0), Ok(0));
        // Within the transports QEMU has.
        assert_eq!(spare_cards_for(Some("8"), 19), Ok(2));
        assert_eq!(spare_cards_for(Some("8"), 21), Ok(0));
        for bad in ["9", "-1", "two", " 2"] {
            let error = spare_cards_for(Some(bad), 1).unwrap_err();
            assert!(error.starts_with("BERTH_VM_SPARE_CARDS="), "{error}");
            assert!(error.contains("from 0 to 8"), "{error}");
        }
    }

    #[test]
    fn a_spare_mac_is_local_unicast_and_its_own() {
        let id = "3fa9c1d2e4b5a6978877665544332211";
        assert_eq!(spare_mac(id, 2), "0a:3f:a9:c1:d2:02");
        assert_ne!(spare_mac(id, 2), spare_mac(id, 3));
        let first = u8::from_str_radix(&spare_mac(id, 0)[..2], 16).unwrap();
        assert_eq!(first & 0x03, 0x02, "locally administered, unicast");
        // Not one an endpoint (02:42:…) or a network's guest card (06:…) has.
        assert_ne!(first, 0x02);
        assert_ne!(first, 0x06);
    }

    #[test]
    fn the_guest_mac_differs_from_every_endpoint_mac() {
        assert_eq!(guest_mac("02:42:0a:58:00:02").unwrap(), "06:42:0a:58:00:02");
        assert_eq!(guest_mac("02:42:AC:11:00:05").unwrap(), "06:42:ac:11:00:05");
        // A multicast bit given (a --mac-address typo) is cleared.
        assert_eq!(guest_mac("03:00:00:00:00:01").unwrap(), "06:00:00:00:00:01");
        assert!(guest_mac("02:42").is_err());
        assert!(guest_mac("zz:42:0a:58:00:02").is_err());
    }
}
