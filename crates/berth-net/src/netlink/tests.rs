//! Against the real kernel (as root), in network namespaces the tests make:
//! a "host" with the bridge and a "container" with the veth peer. The
//! namespace the test process runs in is never touched: `unshare` and
//! `setns` happen on short-lived threads and move only those.

#![allow(clippy::unwrap_used)] // tests: a failed step is a failed test

use std::fs::File;
use std::net::{Ipv4Addr, UdpSocket};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use nix::sched::{setns, unshare, CloneFlags};

use super::{Link, Netlink, NetlinkError};

const BRIDGE: &str = "berth-test0";
const HOST_VETH: &str = "vethtest0";
const CONTAINER_VETH: &str = "eth0";
const PEER_MAC: [u8; 6] = [0x02, 0x42, 0x0a, 0x58, 0x00, 0x02];
const GATEWAY: Ipv4Addr = Ipv4Addr::new(10, 88, 0, 1);
const CONTAINER_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 88, 0, 2);
const SUBNET: (Ipv4Addr, u8) = (Ipv4Addr::new(10, 88, 0, 0), 24);

/// A new network namespace, kept alive by the returned descriptor. `None`
/// (after saying why) where namespaces cannot be made.
fn new_namespace() -> Option<OwnedFd> {
    std::thread::spawn(|| {
        if let Err(errno) = unshare(CloneFlags::CLONE_NEWNET) {
            eprintln!("skipped: cannot create a network namespace ({errno}); needs root");
            return None;
        }
        Some(OwnedFd::from(
            fs_err::File::open("/proc/thread-self/ns/net").unwrap(),
        ))
    })
    .join()
    .unwrap()
}

/// Runs `work` on a thread inside `netns`.
fn in_namespace<T: Send>(netns: BorrowedFd<'_>, work: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                setns(netns, CloneFlags::CLONE_NEWNET).unwrap();
                work()
            })
            .join()
            .unwrap()
    })
}

struct Namespaces {
    host: OwnedFd,
    container: OwnedFd,
}

fn namespaces() -> Option<Namespaces> {
    Some(Namespaces {
        host: new_namespace()?,
        container: new_namespace()?,
    })
}

/// What an engine does for one container: bridge with the gateway address,
/// veth host end on it, peer in the container with its address, all up.
struct Wired {
    host: Netlink,
    container: Netlink,
    bridge: u32,
    veth: u32,
    peer: u32,
}

fn wire(namespaces: &Namespaces) -> Wired {
    let mut host = Netlink::open_in(namespaces.host.as_fd()).unwrap();
    let mut container = Netlink::open_in(namespaces.container.as_fd()).unwrap();
    let bridge = host.create_bridge(BRIDGE).unwrap();
    host.add_address(bridge, GATEWAY.into(), SUBNET.1).unwrap();
    host.set_up(bridge).unwrap();
    let container_netns = namespaces.container.as_fd();
    let veth = host
        .create_veth(HOST_VETH, CONTAINER_VETH, container_netns, Some(PEER_MAC))
        .unwrap();
    host.set_master(veth, bridge).unwrap();
    host.set_up(veth).unwrap();
    let peer = container.link_index(CONTAINER_VETH).unwrap().unwrap();
    container
        .add_address(peer, CONTAINER_ADDRESS.into(), SUBNET.1)
        .unwrap();
    container.set_up(peer).unwrap();
    Wired {
        host,
        container,
        bridge,
        veth,
        peer,
    }
}

fn find<'a>(links: &'a [Link], name: &str) -> Option<&'a Link> {
    links.iter().find(|link| link.name == name)
}

#[test]
fn bridge_creation_is_idempotent() {
    let Some(host) = new_namespace() else { return };
    let mut netlink = Netlink::open_in(host.as_fd()).unwrap();
    let index = netlink.create_bridge(BRIDGE).unwrap();
    assert_eq!(netlink.create_bridge(BRIDGE).unwrap(), index);
    assert_eq!(netlink.link_index(BRIDGE).unwrap(), Some(index));
    let links = netlink.links().unwrap();
    let bridge = find(&links, BRIDGE).unwrap();
    assert_eq!(
        (bridge.index, bridge.kind.as_deref()),
        (index, Some("bridge"))
    );
    assert!(!bridge.up);
    assert_eq!(find(&links, "lo").unwrap().kind, None);
    // A link of that name that is no bridge is not taken for one.
    let error = netlink.create_bridge("lo").unwrap_err();
    assert_eq!(error.errno(), Some(libc::EEXIST));
    // `open` on a thread in that namespace sees the same links.
    let mut same = in_namespace(host.as_fd(), Netlink::open).unwrap();
    assert_eq!(same.link_index(BRIDGE).unwrap(), Some(index));
}

#[test]
fn veth_peer_is_created_inside_the_other_namespace() {
    let Some(namespaces) = namespaces() else {
        return;
    };
    let mut wired = wire(&namespaces);
    assert_eq!(wired.host.link_index(CONTAINER_VETH).unwrap(), None);
    assert_eq!(wired.container.link_index(HOST_VETH).unwrap(), None);
    assert_eq!(wired.container.link_index(BRIDGE).unwrap(), None);
    assert_eq!(
        wired.container.mac_address(wired.peer).unwrap(),
        Some(PEER_MAC)
    );
    assert!(wired.host.mac_address(wired.veth).unwrap().is_some());

    let host_links = wired.host.links().unwrap();
    let veth = find(&host_links, HOST_VETH).unwrap();
    assert_eq!(veth.kind.as_deref(), Some("veth"));
    assert_eq!(
        (veth.index, veth.master, veth.up),
        (wired.veth, Some(wired.bridge), true)
    );
    assert!(find(&host_links, BRIDGE).unwrap().up);

    let container_links = wired.container.links().unwrap();
    let names = |links: &[Link]| {
        links
            .iter()
            .map(|link| link.name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&container_links), ["lo", CONTAINER_VETH]);
    assert_eq!(names(&host_links), ["lo", BRIDGE, HOST_VETH]);
    let peer = find(&container_links, CONTAINER_VETH).unwrap();
    assert_eq!(peer.kind.as_deref(), Some("veth"));
    assert_eq!(
        (peer.master, peer.up, peer.mac),
        (None, true, Some(PEER_MAC))
    );
}

#[test]
fn addresses_and_routes() {
    let Some(namespaces) = namespaces() else {
        return;
    };
    let mut wired = wire(&namespaces);
    // Adding an address twice is fine.
    wired
        .host
        .add_address(wired.bridge, GATEWAY.into(), SUBNET.1)
        .unwrap();
    assert_eq!(wired.host.ipv4_routes().unwrap(), [SUBNET]);

    wired
        .container
        .add_default_route(GATEWAY.into(), wired.peer)
        .unwrap();
    let routes = wired.container.ipv4_routes().unwrap();
    assert!(routes.contains(&(Ipv4Addr::UNSPECIFIED, 0)), "{routes:?}");
    assert!(routes.contains(&SUBNET), "{routes:?}");
    // Local-table routes (the address itself, broadcast) are not listed.
    assert_eq!(routes.len(), 2, "{routes:?}");
    let error = wired
        .container
        .add_default_route(GATEWAY.into(), wired.peer)
        .unwrap_err();
    assert_eq!(error.errno(), Some(libc::EEXIST));
}

#[test]
fn udp_datagram_crosses_the_bridge() {
    let Some(namespaces) = namespaces() else {
        return;
    };
    let _wired = wire(&namespaces);
    // Sockets stay in the namespace they were made in.
    let receiver = in_namespace(namespaces.container.as_fd(), || {
        UdpSocket::bind((CONTAINER_ADDRESS, 0)).unwrap()
    });
    let sender = in_namespace(namespaces.host.as_fd(), || {
        UdpSocket::bind((GATEWAY, 0)).unwrap()
    });
    for socket in [&receiver, &sender] {
        socket
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
    }
    let mut buffer = [0; 16];
    sender
        .send_to(b"hello", receiver.local_addr().unwrap())
        .unwrap();
    let (length, from) = receiver.recv_from(&mut buffer).unwrap();
    assert_eq!(
        (&buffer[..length], from),
        (&b"hello"[..], sender.local_addr().unwrap())
    );
    receiver.send_to(b"back", from).unwrap();
    let (length, _) = sender.recv_from(&mut buffer).unwrap();
    assert_eq!(&buffer[..length], b"back");
}

/// IPv6 without duplicate address detection: usable at once, on the
/// bridge and in the container, with a default route through the link
/// (here to a link-local gateway, as compose's `fe80::/64` networks have).
#[test]
fn ipv6_addresses_and_a_default_route_carry_a_datagram() {
    let Some(namespaces) = namespaces() else {
        return;
    };
    let mut wired = wire(&namespaces);
    let gateway: std::net::Ipv6Addr = "fd88::1".parse().unwrap();
    let container: std::net::Ipv6Addr = "fd88::2".parse().unwrap();
    let link_local: std::net::Ipv6Addr = "fe80::1001:1".parse().unwrap();
    wired
        .host
        .add_address(wired.bridge, gateway.into(), 64)
        .unwrap();
    wired
        .host
        .add_address(wired.bridge, link_local.into(), 64)
        .unwrap();
    wired
        .container
        .add_address(wired.peer, container.into(), 64)
        .unwrap();
    // Twice is fine, as for IPv4.
    wired
        .container
        .add_address(wired.peer, container.into(), 64)
        .unwrap();
    wired
        .container
        .add_default_route(link_local.into(), wired.peer)
        .unwrap();
    let error = wired
        .container
        .add_default_route(link_local.into(), wired.peer)
        .unwrap_err();
    assert_eq!(error.errno(), Some(libc::EEXIST));
    let receiver = in_namespace(namespaces.container.as_fd(), || {
        UdpSocket::bind((container, 0)).unwrap()
    });
    let sender = in_namespace(namespaces.host.as_fd(), || {
        UdpSocket::bind((gateway, 0)).unwrap()
    });
    receiver
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    sender
        .send_to(b"hello6", receiver.local_addr().unwrap())
        .unwrap();
    let mut buffer = [0; 16];
    let (length, from) = receiver.recv_from(&mut buffer).unwrap();
    assert_eq!(
        (&buffer[..length], from),
        (&b"hello6"[..], sender.local_addr().unwrap())
    );
}

#[test]
fn deleting_a_veth_removes_its_peer() {
    let Some(namespaces) = namespaces() else {
        return;
    };
    let mut wired = wire(&namespaces);
    wired.host.delete_link(wired.veth).unwrap();
    assert_eq!(wired.host.link_index(HOST_VETH).unwrap(), None);
    assert_eq!(wired.container.link_index(CONTAINER_VETH).unwrap(), None);
    // Already gone, and never there, are both fine.
    wired.host.delete_link(wired.veth).unwrap();
    wired.host.delete_link(999_999).unwrap();
    wired.host.delete_link(wired.bridge).unwrap();
    assert_eq!(wired.host.link_index(BRIDGE).unwrap(), None);
}

#[test]
fn a_link_that_is_down_can_be_renamed() {
    let Some(host) = new_namespace() else { return };
    let mut netlink = Netlink::open_in(host.as_fd()).unwrap();
    let index = netlink.create_bridge(BRIDGE).unwrap();
    netlink.set_name(index, "renamed0").unwrap();
    assert_eq!(netlink.link_index(BRIDGE).unwrap(), None);
    assert_eq!(netlink.link_index("renamed0").unwrap(), Some(index));
    // Another link's name is taken.
    let error = netlink.set_name(index, "lo").unwrap_err();
    assert_eq!(error.errno(), Some(libc::EEXIST));
    assert!(netlink.set_name(index, "no/slash").is_err());
}

/// What a VM's guest agent does with a card taken off its network: down,
/// and its address deleted (with the connected route); deleting it again
/// is fine.
#[test]
fn a_link_goes_down_and_loses_its_address() {
    let Some(netns) = new_namespace() else { return };
    let mut netlink = Netlink::open_in(netns.as_fd()).unwrap();
    let index = netlink.create_bridge(BRIDGE).unwrap();
    netlink
        .add_address(index, CONTAINER_ADDRESS.into(), 24)
        .unwrap();
    let v6: std::net::Ipv6Addr = "fd00:88::5".parse().unwrap();
    netlink.add_address(index, v6.into(), 64).unwrap();
    netlink.set_up(index).unwrap();
    assert!(find(&netlink.links().unwrap(), BRIDGE).unwrap().up);
    let fib = || {
        in_namespace(netns.as_fd(), || {
            fs_err::read_to_string("/proc/thread-self/net/fib_trie").unwrap()
        })
    };
    assert!(fib().contains(&CONTAINER_ADDRESS.to_string()));
    netlink.set_down(index).unwrap();
    assert!(!find(&netlink.links().unwrap(), BRIDGE).unwrap().up);
    netlink
        .delete_address(index, CONTAINER_ADDRESS.into(), 24)
        .unwrap();
    netlink.delete_address(index, v6.into(), 64).unwrap();
    assert!(!fib().contains(&CONTAINER_ADDRESS.to_string()), "{}", fib());
    let v6_table = in_namespace(netns.as_fd(), || {
        fs_err::read_to_string("/proc/thread-self/net/if_inet6").unwrap_or_default()
    });
    assert!(!v6_table.contains("fd000088"), "{v6_table}");
    netlink
        .delete_address(index, CONTAINER_ADDRESS.into(), 24)
        .unwrap();
}

#[test]
fn links_dump_spans_several_datagrams() {
    let Some(host) = new_namespace() else { return };
    let mut netlink = Netlink::open_in(host.as_fd()).unwrap();
    // About 1.5 KiB a link: 80 links need several 32 KiB datagrams.
    for pair in 0..40 {
        let (name, peer) = (format!("a{pair}"), format!("b{pair}"));
        netlink
            .create_veth(&name, &peer, host.as_fd(), None)
            .unwrap();
    }
    let links = netlink.links().unwrap();
    assert_eq!(links.len(), 81);
    for pair in 0..40 {
        for name in [format!("a{pair}"), format!("b{pair}")] {
            assert_eq!(find(&links, &name).unwrap().kind.as_deref(), Some("veth"));
        }
    }
}

#[test]
fn errors_name_the_operation() {
    let Some(host) = new_namespace() else { return };
    let mut netlink = Netlink::open_in(host.as_fd()).unwrap();
    let error = netlink.set_up(999_999).unwrap_err();
    assert_eq!(error.to_string(), "failed to set link up");
    assert_eq!(error.errno(), Some(libc::ENODEV));
    let source = std::error::Error::source(&error).unwrap().to_string();
    assert!(source.contains("No such device"), "{source}");

    let error = netlink.mac_address(999_999).unwrap_err();
    assert_eq!(error.to_string(), "failed to read MAC address");

    // No link is up, so no gateway is reachable.
    let error = netlink
        .add_default_route(Ipv4Addr::new(10, 88, 0, 1).into(), 1)
        .unwrap_err();
    assert_eq!(error.to_string(), "failed to add default route");
    assert_eq!(error.errno(), Some(libc::ENETUNREACH));

    let error = netlink.create_bridge("sixteen-bytes-xx").unwrap_err();
    assert!(matches!(error, NetlinkError::InvalidName { .. }));
    assert_eq!(
        error.to_string(),
        r#"invalid network interface name "sixteen-bytes-xx""#
    );
}

#[test]
fn open_in_leaves_the_calling_thread_where_it_is() {
    let Some(host) = new_namespace() else { return };
    let own = || fs_err::metadata("/proc/thread-self/ns/net").unwrap().ino();
    let before = own();
    let _netlink = Netlink::open_in(host.as_fd()).unwrap();
    assert_eq!(own(), before);
    let other = File::from(host.try_clone().unwrap()).metadata().unwrap();
    assert_ne!(other.ino(), before);
}
