//! The monitor's part in networking: it holds the container's published
//! host ports for as long as it lives, connects each run of the container
//! to its networks before the program starts, serves the embedded DNS of
//! user-defined networks, and disconnects after each run.

use std::os::fd::AsFd;
use std::path::PathBuf;

use berth_net::dns::DnsServer;
use berth_net::kernel::HostKernel;
use berth_runtime::NetworkMode;
use berth_store::Store;

use super::super::paths::ContainerPaths;
use super::super::record::ContainerRecord;
use super::super::spec::{embedded_dns_upstreams, uses_embedded_dns, write_hosts, EMBEDDED_DNS};
use crate::networks::ports::{reserve_ports, PortReservation};
use crate::networks::{
    connect_container, disconnect_container, release_container_endpoints, ContainerIdentity,
};
use crate::EngineConfig;

pub(super) struct MonitorNetwork {
    kernel: HostKernel,
    ports: PortReservation,
    /// The embedded DNS socket of the current run, bound inside the
    /// container's namespace before its program starts (a query can come
    /// at once).
    dns_socket: Option<std::net::UdpSocket>,
    /// The endpoints the last `connect` made, in the container's order
    /// (the first has the default route; the one at position N is the
    /// container's `ethN`): a VM container's guest takes their addresses.
    endpoints: Vec<crate::networks::record::Endpoint>,
    /// The /etc/hosts lines of the run's legacy links (`links.rs`).
    link_hosts: Vec<String>,
}

impl MonitorNetwork {
    /// Takes the container's host ports; Docker's message when one is
    /// taken.
    pub fn new(record: &ContainerRecord) -> Result<Self, String> {
        let ports = reserve_ports(&record.run.ports).map_err(|reason| {
            format!(
                "driver failed programming external connectivity on endpoint {} ({}): {}",
                record.name,
                record.id,
                crate::ErrorChain(&reason)
            )
        })?;
        Ok(Self {
            kernel: HostKernel::new(),
            ports,
            dns_socket: None,
            endpoints: Vec::new(),
            link_hosts: Vec::new(),
        })
    }

    /// Connects the just-cloned container `pid` and writes its hosts file.
    pub fn connect(
        &mut self,
        store: &mut Store,
        record: &ContainerRecord,
        paths: &ContainerPaths,
        pid: i32,
    ) -> Result<(), String> {
        let identity = ContainerIdentity {
            id: &record.id,
            name: &record.name,
        };
        let endpoints = connect_container(
            store,
            &mut self.kernel,
            &identity,
            pid,
            &record.run.networks,
            &self.ports.published,
        )
        .map_err(|error| crate::ErrorChain(&error).to_string())?;
        self.endpoints = endpoints;
        if let Some(first) = self.endpoints.first() {
            if let Err(error) = write_hosts(record, paths, &first.addresses(), &self.link_hosts) {
                self.disconnect(store, record);
                return Err(crate::ErrorChain(&error).to_string());
            }
        }
        self.dns_socket = None;
        if uses_embedded_dns(&record.run) {
            match bind_dns_socket(pid) {
                Ok(socket) => self.dns_socket = Some(socket),
                Err(error) => {
                    self.disconnect(store, record);
                    return Err(format!("failed to start the embedded DNS server: {error}"));
                }
            }
        }
        Ok(())
    }

    /// The next `connect`'s hosts lines for the run's links.
    pub fn set_link_hosts(&mut self, lines: Vec<String>) {
        self.link_hosts = lines;
    }

    /// After a run that got as far as its namespaces.
    pub fn disconnect(&mut self, store: &mut Store, record: &ContainerRecord) {
        disconnect_container(store, &mut self.kernel, &record.id, None);
    }

    /// After the container's program exited: the kernel removes the veths
    /// with the namespace unless another running container joined it
    /// (`--network container:`), which would keep it (and them) alive.
    pub fn release(&mut self, store: &mut Store, record: &ContainerRecord) {
        if namespace_shared(store, record) {
            disconnect_container(store, &mut self.kernel, &record.id, None);
        } else {
            release_container_endpoints(store, &mut self.kernel, &record.id);
        }
    }

    /// The endpoints the last `connect` made, in the container's order.
    pub fn endpoints(&self) -> &[crate::networks::record::Endpoint] {
        &self.endpoints
    }

    /// The embedded DNS server for a container on a user-defined network:
    /// its socket (bound by `connect`) inside the container's namespace,
    /// forwarding from the host's.
    pub fn dns_server(&mut self, record: &ContainerRecord) -> Option<DnsServer> {
        let socket = self.dns_socket.take()?;
        DnsServer::new(socket, embedded_dns_upstreams(&record.run))
            .map_err(|error| tracing::warn!(%error, "no embedded DNS server"))
            .ok()
    }
}

/// A UDP socket on 127.0.0.11:53 in the network namespace of `pid`.
fn bind_dns_socket(pid: i32) -> Result<std::net::UdpSocket, String> {
    let netns =
        fs_err::File::open(format!("/proc/{pid}/ns/net")).map_err(|error| error.to_string())?;
    berth_net::netns::in_netns(netns.as_fd(), || -> Result<std::net::UdpSocket, String> {
        // The container brings lo up itself, but maybe not yet: 127.0.0.11
        // exists only once it is up.
        let mut netlink = berth_net::netlink::Netlink::open().map_err(|error| error.to_string())?;
        if let Some(lo) = netlink
            .link_index("lo")
            .map_err(|error| error.to_string())?
        {
            netlink.set_up(lo).map_err(|error| error.to_string())?;
        }
        std::net::UdpSocket::bind((EMBEDDED_DNS, 53)).map_err(|error| error.to_string())
    })
    .map_err(|error| error.to_string())?
}

/// The network namespace to join and the /etc files to bind instead of the
/// container's own.
pub(super) struct JoinedNetwork {
    pub mode: NetworkMode,
    pub etc_files: Vec<(PathBuf, PathBuf)>,
}

/// `--network container:NAME`: the namespace of that running container and
/// its /etc files (Docker shares its hosts and resolv.conf too).
pub(super) fn joined_network(
    store: &Store,
    config: &EngineConfig,
    record: &ContainerRecord,
) -> Result<Option<JoinedNetwork>, String> {
    let Some(name) = record.run.network_mode.strip_prefix("container:") else {
        return Ok(None);
    };
    let target = super::super::lookup::find_container(store, config, name)
        .map_err(|error| error.to_string())?;
    if !target.state.is_running() {
        return Err(format!(
            "cannot join network of a non running container: {}",
            target.record.id
        ));
    }
    let paths = ContainerPaths::new(&config.root, &config.run_root, &target.record.id);
    Ok(Some(JoinedNetwork {
        mode: NetworkMode::Join(PathBuf::from(format!("/proc/{}/ns/net", target.state.pid))),
        etc_files: vec![
            (paths.hostname(), PathBuf::from("/etc/hostname")),
            (paths.hosts(), PathBuf::from("/etc/hosts")),
            (paths.resolv_conf(), PathBuf::from("/etc/resolv.conf")),
        ],
    }))
}

/// True when a running container joined this one's network namespace. Read
/// from the rows as stored (a monitor reconciles nobody), matching the
/// target as `find_container` can: the name, or any prefix of the id (a
/// false "shared" only costs an explicit veth deletion).
fn namespace_shared(store: &Store, record: &ContainerRecord) -> bool {
    let Ok(rows) = store.containers() else {
        return true;
    };
    rows.iter()
        .filter_map(|row| super::super::lookup::parse_row(row).ok())
        .any(|other| {
            other.state.is_running()
                && other
                    .record
                    .run
                    .network_mode
                    .strip_prefix("container:")
                    .map(|target| target.trim_start_matches('/'))
                    .is_some_and(|target| {
                        !target.is_empty()
                            && (target == record.name || record.id.starts_with(target))
                    })
        })
}
