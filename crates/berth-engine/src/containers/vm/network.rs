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
//! microvm has no hotplug: the cards are the networks the container had
//! when its VM booted (`network connect` to a running VM container is
//! refused; a stopped one gets the network at its next start).

use std::os::fd::OwnedFd;

use berth_net::netlink::Netlink;

/// The tap QEMU gets for one card.
pub(crate) struct Tap {
    pub fd: OwnedFd,
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
    let failed = |what: &str, error: &dyn std::fmt::Display| {
        format!("failed to connect the VM to its network ({veth}): {what}: {error}")
    };
    let tap_name = format!("tap{position}");
    let fd = open_tap(&tap_name).map_err(|error| failed("open /dev/net/tun", &error))?;
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
    Ok(Tap { fd })
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
    Ok(OwnedFd::from(file))
}

#[cfg(test)]
mod tests {
    use super::*;

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
