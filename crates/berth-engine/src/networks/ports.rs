//! Published ports: what a container asks for (`-p`, `-P`), and holding the
//! host ports while it runs. The monitor keeps a socket per host port:
//! the kernel then refuses that port to anyone else (another container, a
//! host server) for exactly as long as the container needs it, and a killed
//! monitor gives it back. The traffic itself never touches these sockets;
//! nftables forwards it in the kernel.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::OwnedFd;

use nix::sys::socket::{
    bind, getsockname, listen, setsockopt, socket, sockopt, AddressFamily, Backlog, SockFlag,
    SockType, SockaddrIn,
};
use serde::{Deserialize, Serialize};

use super::record::PublishedPort;

/// One `-p` binding, or one `-P` port: host port range 0–0 asks the kernel
/// for an ephemeral one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortRequest {
    pub protocol: String,
    pub container_port: u16,
    /// Empty for every address.
    pub host_ip: String,
    pub host_port_start: u16,
    pub host_port_end: u16,
}

/// A port request that is wrong, or a host port that cannot be held.
#[derive(Debug, thiserror::Error)]
pub enum PortError {
    #[error("berth publishes tcp and udp ports only, not {port}")]
    UnsupportedProtocol { port: String },
    #[error("invalid port {port}")]
    InvalidPort { port: String },
    /// docker/cli's words.
    #[error("invalid hostPort: {port}")]
    InvalidHostPort { port: String },
    #[error("invalid host IP {address:?}: berth publishes IPv4 addresses only")]
    InvalidHostIp { address: String },
    /// A stored request's address (checked at create) that no longer parses.
    #[error("invalid host IP {address}")]
    StoredHostIp { address: String },
    #[error("failed to bind {address}:{port}/{protocol}")]
    Bind {
        address: Ipv4Addr,
        port: u16,
        protocol: String,
        #[source]
        source: nix::Error,
    },
    /// Docker's words.
    #[error("Bind for {address}:{ports} failed: port is already allocated")]
    Allocated { address: Ipv4Addr, ports: String },
}

impl PortError {
    pub fn kind(&self) -> crate::ErrorKind {
        match self {
            Self::UnsupportedProtocol { .. }
            | Self::InvalidPort { .. }
            | Self::InvalidHostPort { .. }
            | Self::InvalidHostIp { .. } => crate::ErrorKind::InvalidArgument,
            Self::StoredHostIp { .. } | Self::Bind { .. } | Self::Allocated { .. } => {
                crate::ErrorKind::Internal
            }
        }
    }
}

/// The host ports a running container holds.
#[derive(Debug, Default)]
pub struct PortReservation {
    pub published: Vec<PublishedPort>,
    _sockets: Vec<OwnedFd>,
}

/// `HostConfig.PortBindings` (`"80/tcp": [{HostIp, HostPort}]`) and, with
/// `-P`, every exposed port without a binding, as requests.
pub fn port_requests(
    bindings: &std::collections::BTreeMap<String, Vec<berth_types::container::PortBinding>>,
    exposed: &[String],
    publish_all: bool,
) -> Result<Vec<PortRequest>, PortError> {
    let mut requests = Vec::new();
    for (port, list) in bindings {
        let (container_port, protocol) = parse_container_port(port)?;
        let list = if list.is_empty() {
            vec![berth_types::container::PortBinding::default()]
        } else {
            list.clone()
        };
        for binding in list {
            let (start, end) = parse_host_ports(&binding.host_port)?;
            if !binding.host_ip.is_empty() && binding.host_ip.parse::<Ipv4Addr>().is_err() {
                return Err(PortError::InvalidHostIp {
                    address: binding.host_ip.clone(),
                });
            }
            requests.push(PortRequest {
                protocol: protocol.clone(),
                container_port,
                host_ip: binding.host_ip.clone(),
                host_port_start: start,
                host_port_end: end,
            });
        }
    }
    if publish_all {
        for port in exposed {
            if bindings.contains_key(port) {
                continue;
            }
            let (container_port, protocol) = parse_container_port(port)?;
            requests.push(PortRequest {
                protocol,
                container_port,
                host_ip: String::new(),
                host_port_start: 0,
                host_port_end: 0,
            });
        }
    }
    Ok(requests)
}

/// `80/tcp` → (80, "tcp").
fn parse_container_port(text: &str) -> Result<(u16, String), PortError> {
    let (port, protocol) = text.split_once('/').unwrap_or((text, "tcp"));
    let protocol = protocol.to_ascii_lowercase();
    if protocol != "tcp" && protocol != "udp" {
        return Err(PortError::UnsupportedProtocol {
            port: text.to_owned(),
        });
    }
    let port: u16 =
        port.parse()
            .ok()
            .filter(|port| *port != 0)
            .ok_or_else(|| PortError::InvalidPort {
                port: text.to_owned(),
            })?;
    Ok((port, protocol))
}

/// "" → ephemeral; "8080"; "8000-8010" (the first free one).
fn parse_host_ports(text: &str) -> Result<(u16, u16), PortError> {
    if text.is_empty() {
        return Ok((0, 0));
    }
    let invalid = || PortError::InvalidHostPort {
        port: text.to_owned(),
    };
    let (start, end) = text.split_once('-').unwrap_or((text, text));
    let start: u16 = start.parse().map_err(|_| invalid())?;
    let end: u16 = end.parse().map_err(|_| invalid())?;
    if end < start {
        return Err(invalid());
    }
    Ok((start, end))
}

/// Binds every requested host port; on the first that is taken, releases
/// what it bound and says which, in Docker's words.
pub fn reserve_ports(requests: &[PortRequest]) -> Result<PortReservation, PortError> {
    let mut reservation = PortReservation::default();
    for request in requests {
        let host_ip: Ipv4Addr = if request.host_ip.is_empty() {
            Ipv4Addr::UNSPECIFIED
        } else {
            request
                .host_ip
                .parse()
                .map_err(|_| PortError::StoredHostIp {
                    address: request.host_ip.clone(),
                })?
        };
        let mut bound = None;
        for port in request.host_port_start..=request.host_port_end {
            match bind_port(&request.protocol, host_ip, port) {
                Ok(found) => {
                    bound = Some(found);
                    break;
                }
                Err(nix::Error::EADDRINUSE) => continue,
                Err(source) => {
                    return Err(PortError::Bind {
                        address: host_ip,
                        port,
                        protocol: request.protocol.clone(),
                        source,
                    })
                }
            }
        }
        let Some((socket, port)) = bound else {
            let ports = if request.host_port_start == request.host_port_end {
                request.host_port_start.to_string()
            } else {
                format!("{}-{}", request.host_port_start, request.host_port_end)
            };
            return Err(PortError::Allocated {
                address: host_ip,
                ports,
            });
        };
        reservation._sockets.push(socket);
        reservation.published.push(PublishedPort {
            protocol: request.protocol.clone(),
            container_port: request.container_port,
            host_ip: host_ip.to_string(),
            host_port: port,
        });
    }
    Ok(reservation)
}

/// A socket that holds the port: nobody else can bind it while it lives.
/// TCP: bound with SO_REUSEADDR (so connections of an earlier user of the
/// port in TIME_WAIT do not block it, as with any server) and listening
/// (a listening socket refuses every other bind, SO_REUSEADDR or not). It
/// never sees a connection: DNAT sends them to the container first. UDP:
/// bound without SO_REUSEADDR. Port 0 takes an ephemeral port; returns the
/// port bound.
fn bind_port(protocol: &str, ip: Ipv4Addr, port: u16) -> nix::Result<(OwnedFd, u16)> {
    let kind = if protocol == "udp" {
        SockType::Datagram
    } else {
        SockType::Stream
    };
    let socket = socket(AddressFamily::Inet, kind, SockFlag::SOCK_CLOEXEC, None)?;
    if kind == SockType::Stream {
        setsockopt(&socket, sockopt::ReuseAddr, &true)?;
    }
    bind(
        std::os::fd::AsRawFd::as_raw_fd(&socket),
        &SockaddrIn::from(SocketAddrV4::new(ip, port)),
    )?;
    if kind == SockType::Stream {
        listen(&socket, Backlog::new(1)?)?;
    }
    let bound: SockaddrIn = getsockname(std::os::fd::AsRawFd::as_raw_fd(&socket))?;
    Ok((socket, bound.port()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::BTreeMap;

    use berth_types::container::PortBinding;

    use super::*;

    fn binding(ip: &str, port: &str) -> PortBinding {
        PortBinding {
            host_ip: ip.to_owned(),
            host_port: port.to_owned(),
        }
    }

    #[test]
    fn bindings_and_publish_all_become_requests() {
        let bindings = BTreeMap::from([
            ("80/tcp".to_owned(), vec![binding("127.0.0.1", "8080")]),
            ("53/udp".to_owned(), vec![binding("", "")]),
        ]);
        let exposed = vec!["80/tcp".to_owned(), "9000/tcp".to_owned()];
        let requests = port_requests(&bindings, &exposed, true).unwrap();
        let summary: Vec<_> = requests
            .iter()
            .map(|r| {
                format!(
                    "{}/{} {}:{}-{}",
                    r.container_port, r.protocol, r.host_ip, r.host_port_start, r.host_port_end
                )
            })
            .collect();
        assert_eq!(
            summary,
            ["53/udp :0-0", "80/tcp 127.0.0.1:8080-8080", "9000/tcp :0-0"]
        );
        assert!(port_requests(&bindings, &exposed, false).unwrap().len() == 2);
        let sctp = BTreeMap::from([("80/sctp".to_owned(), vec![])]);
        assert!(port_requests(&sctp, &[], false).is_err());
        let backwards = BTreeMap::from([("80/tcp".to_owned(), vec![binding("", "9-8")])]);
        assert!(port_requests(&backwards, &[], false).is_err());
    }

    #[test]
    fn port_errors_say_what_is_wrong_and_keep_the_cause_apart() {
        let sctp = BTreeMap::from([("80/sctp".to_owned(), vec![])]);
        let error = port_requests(&sctp, &[], false).unwrap_err();
        assert_eq!(
            error.to_string(),
            "berth publishes tcp and udp ports only, not 80/sctp"
        );
        assert_eq!(error.kind(), crate::ErrorKind::InvalidArgument);
        let backwards = BTreeMap::from([("80/tcp".to_owned(), vec![binding("", "9-8")])]);
        let error = port_requests(&backwards, &[], false).unwrap_err();
        assert_eq!(error.to_string(), "invalid hostPort: 9-8");
        let error = PortError::Bind {
            address: Ipv4Addr::LOCALHOST,
            port: 80,
            protocol: "tcp".to_owned(),
            source: nix::Error::EACCES,
        };
        assert_eq!(error.kind(), crate::ErrorKind::Internal);
        assert_eq!(error.to_string(), "failed to bind 127.0.0.1:80/tcp");
        assert_eq!(
            crate::ErrorChain(&error).to_string(),
            "failed to bind 127.0.0.1:80/tcp: EACCES: Permission denied"
        );
    }

    /// A port whose last server closed its connections first has them in
    /// TIME_WAIT for a minute; it is free all the same, as for any server.
    #[test]
    fn a_port_with_connections_in_time_wait_can_be_reserved() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (served, _) = listener.accept().unwrap();
        drop(served); // the server side closes first: its end waits
        drop(listener);
        let mut buffer = [0u8; 1];
        let _ = std::io::Read::read(&mut &client, &mut buffer);
        drop(client);
        let request = PortRequest {
            protocol: "tcp".to_owned(),
            container_port: 80,
            host_ip: "127.0.0.1".to_owned(),
            host_port_start: port,
            host_port_end: port,
        };
        let reserved = reserve_ports(&[request]).unwrap();
        assert_eq!(reserved.published[0].host_port, port);
    }

    #[test]
    fn a_reserved_port_is_refused_to_the_next_and_freed_on_drop() {
        let ephemeral = PortRequest {
            protocol: "tcp".to_owned(),
            container_port: 80,
            host_ip: "127.0.0.1".to_owned(),
            host_port_start: 0,
            host_port_end: 0,
        };
        let first = reserve_ports(std::slice::from_ref(&ephemeral)).unwrap();
        let port = first.published[0].host_port;
        assert_ne!(port, 0);
        let fixed = PortRequest {
            host_port_start: port,
            host_port_end: port,
            ..ephemeral.clone()
        };
        assert_eq!(
            reserve_ports(std::slice::from_ref(&fixed))
                .unwrap_err()
                .to_string(),
            format!("Bind for 127.0.0.1:{port} failed: port is already allocated")
        );
        // A host server cannot take it either (std's listener sets
        // SO_REUSEADDR, as most servers do).
        assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_err());
        // A range moves on to the next free port.
        let range = PortRequest {
            host_port_end: port.saturating_add(1),
            ..fixed.clone()
        };
        if let Ok(second) = reserve_ports(std::slice::from_ref(&range)) {
            assert_eq!(second.published[0].host_port, port + 1);
        }
        drop(first);
        assert!(reserve_ports(std::slice::from_ref(&fixed)).is_ok());
    }
}
