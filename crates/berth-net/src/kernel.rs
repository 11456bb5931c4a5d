//! The kernel edge of networking, behind one narrow trait: the engine asks
//! for bridges, container links and rules; `HostKernel` does it with
//! rtnetlink, sysctl files and nft; `RecordingKernel` records the calls for
//! unit tests of the engine's logic.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::BorrowedFd;

use crate::ipam::{Ipv4Net, Ipv6Net};
use crate::netlink::{Netlink, NetlinkError};
use crate::nft::{NftError, Ruleset};

/// One container's interface on one bridge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerLink {
    /// The host's end of the veth pair, e.g. `veth1a2b3c4`.
    pub host_device: String,
    /// The name inside the container, e.g. `eth0`.
    pub container_device: String,
    pub bridge: String,
    pub address: Ipv4Addr,
    pub prefix_len: u8,
    /// The default route's gateway (the first network's only).
    pub gateway: Option<Ipv4Addr>,
    pub mac: Option<[u8; 6]>,
    /// The IPv6 address and prefix length on a network with IPv6.
    pub ipv6: Option<(Ipv6Addr, u8)>,
    /// The default IPv6 route's gateway (the first network with IPv6).
    pub ipv6_gateway: Option<Ipv6Addr>,
    /// `--link-local-ip` addresses with their prefix lengths (/16, /64).
    pub link_local: Vec<(IpAddr, u8)>,
}

/// A bridge's IPv6 side: the gateway address, on the subnet's prefix.
pub type BridgeIpv6 = Option<(Ipv6Addr, Ipv6Net)>;

#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error(transparent)]
    Netlink(#[from] NetlinkError),
    #[error(transparent)]
    Nft(#[from] NftError),
    #[error("the bridge {0} does not exist")]
    NoBridge(String),
    #[error(transparent)]
    DockerUser(#[from] crate::docker_user::DockerUserError),
    #[error("failed to write {path}")]
    Sysctl {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

pub trait Kernel {
    /// Destinations of the host's IPv4 routes (to choose subnets that do
    /// not clash).
    fn host_routes(&mut self) -> Result<Vec<Ipv4Net>, KernelError>;
    /// Makes the bridge exist, up, with `gateway` as its address (and the
    /// IPv6 gateway of a network with IPv6); true when it had to be created.
    fn ensure_bridge(
        &mut self,
        device: &str,
        gateway: Ipv4Addr,
        subnet: Ipv4Net,
        ipv6: BridgeIpv6,
    ) -> Result<bool, KernelError>;
    /// Whether a link of that name exists.
    fn link_exists(&mut self, device: &str) -> Result<bool, KernelError>;
    /// Deletes a link (bridge or veth); fine when it is gone.
    fn remove_link(&mut self, device: &str) -> Result<(), KernelError>;
    /// Creates the veth pair into the namespace `netns` and configures the
    /// container's end.
    fn connect(&mut self, netns: BorrowedFd<'_>, link: &ContainerLink) -> Result<(), KernelError>;
    /// Replaces berth's nftables table.
    fn apply_rules(&mut self, rules: &Ruleset) -> Result<(), KernelError>;
    /// Removes berth's nftables table `table` and the rules tagged with it
    /// in Docker's `DOCKER-USER` chain; fine when they are gone.
    fn remove_rules(&mut self, table: &str) -> Result<(), KernelError>;
    /// A root's last objects: its default bridge `device`, then its rules
    /// (`remove_rules`). Fine when they are gone.
    fn remove_bridge_and_rules(&mut self, device: &str, table: &str) -> Result<(), KernelError> {
        self.remove_link(device)?;
        self.remove_rules(table)
    }
}

/// The real kernel, in the calling thread's network namespace.
#[derive(Default)]
pub struct HostKernel {
    netlink: Option<Netlink>,
}

impl HostKernel {
    pub fn new() -> Self {
        Self::default()
    }

    fn netlink(&mut self) -> Result<&mut Netlink, KernelError> {
        if self.netlink.is_none() {
            self.netlink = Some(Netlink::open()?);
        }
        Ok(self
            .netlink
            .as_mut()
            .expect("the netlink socket was opened just above"))
    }
}

fn write_sysctl(path: &str, value: &str) -> Result<(), KernelError> {
    if fs_err::read_to_string(path).is_ok_and(|current| current.trim() == value) {
        return Ok(());
    }
    fs_err::write(path, value).map_err(|source| KernelError::Sysctl {
        path: path.to_owned(),
        source,
    })
}

impl Kernel for HostKernel {
    fn host_routes(&mut self) -> Result<Vec<Ipv4Net>, KernelError> {
        Ok(self
            .netlink()?
            .ipv4_routes()?
            .into_iter()
            .map(|(address, prefix_len)| Ipv4Net::new(address, prefix_len))
            .collect())
    }

    fn ensure_bridge(
        &mut self,
        device: &str,
        gateway: Ipv4Addr,
        subnet: Ipv4Net,
        ipv6: BridgeIpv6,
    ) -> Result<bool, KernelError> {
        let netlink = self.netlink()?;
        let existed = netlink.link_index(device)?.is_some();
        let index = netlink.create_bridge(device)?;
        netlink.add_address(index, gateway.into(), subnet.prefix_len())?;
        if let Some((gateway, subnet)) = ipv6 {
            // The bridge is berth's own: IPv6 on it only, never the host's
            // `all`/`default` settings, nor forwarding (docs/API.md).
            write_sysctl(
                &format!("/proc/sys/net/ipv6/conf/{device}/disable_ipv6"),
                "0",
            )?;
            netlink.add_address(index, gateway.into(), subnet.prefix_len())?;
        }
        netlink.set_up(index)?;
        // Published ports on 127.0.0.1 are DNATed out of this bridge.
        write_sysctl(
            &format!("/proc/sys/net/ipv4/conf/{device}/route_localnet"),
            "1",
        )?;
        write_sysctl("/proc/sys/net/ipv4/ip_forward", "1")?;
        Ok(!existed)
    }

    fn link_exists(&mut self, device: &str) -> Result<bool, KernelError> {
        Ok(self.netlink()?.link_index(device)?.is_some())
    }

    fn remove_link(&mut self, device: &str) -> Result<(), KernelError> {
        let netlink = self.netlink()?;
        if let Some(index) = netlink.link_index(device)? {
            netlink.delete_link(index)?;
        }
        Ok(())
    }

    fn connect(&mut self, netns: BorrowedFd<'_>, link: &ContainerLink) -> Result<(), KernelError> {
        let netlink = self.netlink()?;
        let bridge = netlink
            .link_index(&link.bridge)?
            .ok_or_else(|| KernelError::NoBridge(link.bridge.clone()))?;
        let host =
            netlink.create_veth(&link.host_device, &link.container_device, netns, link.mac)?;
        tracing::debug!("veth created");
        netlink.set_master(host, bridge)?;
        netlink.set_up(host)?;
        tracing::debug!("veth up on the bridge");
        let mut inside = Netlink::open_in(netns)?;
        tracing::debug!("netlink socket in the container");
        let index = inside
            .link_index(&link.container_device)?
            .ok_or_else(|| KernelError::NoBridge(link.container_device.clone()))?;
        inside.add_address(index, link.address.into(), link.prefix_len)?;
        if let Some((address, prefix_len)) = link.ipv6 {
            inside.add_address(index, address.into(), prefix_len)?;
        }
        for (address, prefix_len) in &link.link_local {
            inside.add_address(index, *address, *prefix_len)?;
        }
        inside.set_up(index)?;
        if let Some(gateway) = link.gateway {
            inside.add_default_route(gateway.into(), index)?;
        }
        if let Some(gateway) = link.ipv6_gateway {
            inside.add_default_route(gateway.into(), index)?;
        }
        Ok(())
    }

    fn apply_rules(&mut self, rules: &Ruleset) -> Result<(), KernelError> {
        rules.apply()?;
        let bridges: Vec<String> = rules
            .bridges
            .iter()
            .map(|bridge| bridge.device.clone())
            .collect();
        // Not fatal: berth's own rules are in place; only a Docker engine
        // running beside it could still drop the bridges' traffic.
        if let Err(error) = crate::docker_user::sync_docker_user(&rules.table, &bridges) {
            tracing::warn!(%error, "traffic of berth's bridges may be dropped by Docker's rules");
        }
        Ok(())
    }

    fn remove_rules(&mut self, table: &str) -> Result<(), KernelError> {
        crate::nft::remove_table(table)?;
        crate::docker_user::sync_docker_user(table, &[])?;
        Ok(())
    }

    /// Both at once: deleting a bridge and committing an nftables
    /// transaction each wait for an RCU grace period (tens of
    /// milliseconds on a busy host), and neither needs the other.
    fn remove_bridge_and_rules(&mut self, device: &str, table: &str) -> Result<(), KernelError> {
        let netlink = self.netlink()?;
        std::thread::scope(|scope| {
            let bridge = scope.spawn(|| -> Result<(), KernelError> {
                if let Some(index) = netlink.link_index(device)? {
                    netlink.delete_link(index)?;
                }
                Ok(())
            });
            let rules = crate::nft::remove_table(table)
                .map_err(KernelError::from)
                .and_then(|()| {
                    crate::docker_user::sync_docker_user(table, &[])
                        .map(drop)
                        .map_err(KernelError::from)
                });
            let bridge = bridge
                .join()
                .unwrap_or_else(|_| Err(KernelError::NoBridge(device.to_owned())));
            bridge.and(rules)
        })
    }
}

/// Records every call; for unit tests of logic above the kernel.
#[derive(Debug, Default)]
pub struct RecordingKernel {
    pub routes: Vec<Ipv4Net>,
    pub calls: Vec<String>,
    pub rules: Option<Ruleset>,
    /// Links that exist: bridges made by `ensure_bridge`, less removed ones.
    pub links: Vec<String>,
}

impl Kernel for RecordingKernel {
    fn host_routes(&mut self) -> Result<Vec<Ipv4Net>, KernelError> {
        Ok(self.routes.clone())
    }

    fn ensure_bridge(
        &mut self,
        device: &str,
        gateway: Ipv4Addr,
        subnet: Ipv4Net,
        ipv6: BridgeIpv6,
    ) -> Result<bool, KernelError> {
        let mut call = format!("bridge {device} {gateway}/{}", subnet.prefix_len());
        if let Some((gateway, subnet)) = ipv6 {
            call.push_str(&format!(" {gateway}/{}", subnet.prefix_len()));
        }
        self.calls.push(call);
        let created = !self.links.iter().any(|link| link == device);
        if created {
            self.links.push(device.to_owned());
        }
        Ok(created)
    }

    fn link_exists(&mut self, device: &str) -> Result<bool, KernelError> {
        Ok(self.links.iter().any(|link| link == device))
    }

    fn remove_link(&mut self, device: &str) -> Result<(), KernelError> {
        self.calls.push(format!("remove {device}"));
        self.links.retain(|link| link != device);
        Ok(())
    }

    fn connect(&mut self, _netns: BorrowedFd<'_>, link: &ContainerLink) -> Result<(), KernelError> {
        let mut call = format!(
            "connect {} {} {}/{}",
            link.host_device, link.bridge, link.address, link.prefix_len
        );
        if let Some((address, prefix_len)) = link.ipv6 {
            call.push_str(&format!(" {address}/{prefix_len}"));
        }
        for (address, prefix_len) in &link.link_local {
            call.push_str(&format!(" {address}/{prefix_len}"));
        }
        self.calls.push(call);
        Ok(())
    }

    fn apply_rules(&mut self, rules: &Ruleset) -> Result<(), KernelError> {
        self.calls.push("rules".to_owned());
        self.rules = Some(rules.clone());
        Ok(())
    }

    fn remove_rules(&mut self, table: &str) -> Result<(), KernelError> {
        self.calls.push(format!("remove rules {table}"));
        self.rules = None;
        Ok(())
    }
}
