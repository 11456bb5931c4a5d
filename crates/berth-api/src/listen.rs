//! Where the server listens: unix sockets from `-H unix://PATH` (mode 0660,
//! owned by root and the configured group), sockets systemd passed
//! (`LISTEN_FDS`, `-H fd://`), or `-H tcp://HOST:PORT`, which is accepted
//! only with TLS client certificates (`--tlsverify`, see [`crate::tls`]): the
//! API is root on the host, and the network must not reach it unauthenticated.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, RawFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::tls::TlsAcceptor;

pub const DEFAULT_SOCKET: &str = "/run/berth/docker.sock";

/// The port of `tcp://HOST` without one: 2375, as dockerd and the docker
/// CLI both take it (moby `opts.DefaultHTTPPort`; their 2376 applies only
/// to dockerd's default host when TLS is on and no `-H` is given), so that
/// the same `-H` on both sides meets.
pub const DEFAULT_TCP_PORT: u16 = 2375;

/// systemd's first passed descriptor (sd_listen_fds(3)).
const SD_LISTEN_FDS_START: RawFd = 3;

#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error("invalid host {0:?}: expected unix:///path, fd:// or tcp://IP:PORT")]
    InvalidHost(String),
    #[error("invalid host {0:?}: a TCP host is an IP address (tcp://127.0.0.1:2376, tcp://[::1]:2376), not a name")]
    TcpName(String),
    #[error("refusing to listen on {0:?} without TLS client certificates: anyone who reaches the API is root on this host; add --tlsverify with --tlscacert (the CA that signs client certificates), --tlscert and --tlskey, or use a unix socket")]
    TcpWithoutTls(String),
    #[error("failed to listen on {path:?}")]
    Bind {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to listen on tcp://{address}")]
    BindTcp {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("{path:?} is in use by a running server")]
    InUse { path: PathBuf },
    #[error("failed to set the owner and mode of {path:?}")]
    Permissions {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("unknown group {0:?}")]
    UnknownGroup(String),
    #[error("fd:// given but systemd passed no sockets (LISTEN_FDS)")]
    NoActivation,
}

/// One parsed `-H` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Host {
    Unix(PathBuf),
    /// Sockets passed by systemd.
    Activation,
    /// TLS with client certificates only.
    Tcp(SocketAddr),
}

/// Parses one `-H` value as dockerd does (moby `opts.ParseHost`), except
/// that a TCP host must be an IP address (a name may resolve to several,
/// or to a different one tomorrow): `unix:///path`, `unix://` (the default
/// socket), `/path`, `fd://`, `tcp://IP:PORT`, `tcp://IP` (port 2375),
/// `tcp://:PORT` (127.0.0.1, dockerd's "localhost"), `tcp://[::1]:PORT`,
/// and `IP:PORT` without a scheme.
pub fn parse_host(text: &str) -> Result<Host, ListenError> {
    if let Some(path) = text.strip_prefix("unix://") {
        if path.is_empty() {
            return Ok(Host::Unix(PathBuf::from(DEFAULT_SOCKET)));
        }
        if !path.starts_with('/') || path.contains('\0') {
            return Err(ListenError::InvalidHost(text.to_owned()));
        }
        return Ok(Host::Unix(PathBuf::from(path)));
    }
    if text.starts_with("fd://") {
        return Ok(Host::Activation);
    }
    if let Some(address) = text.strip_prefix("tcp://") {
        return parse_tcp(text, address).map(Host::Tcp);
    }
    if text.starts_with('/') {
        return Ok(Host::Unix(PathBuf::from(text)));
    }
    if !text.contains("://") && !text.is_empty() {
        // dockerd's `HOST:PORT`; anything else is a typo more likely
        // than a host name.
        return parse_tcp(text, text)
            .map(Host::Tcp)
            .map_err(|_| ListenError::InvalidHost(text.to_owned()));
    }
    Err(ListenError::InvalidHost(text.to_owned()))
}

/// `IP:PORT`, `IP`, `:PORT`, `[IPV6]:PORT`, `[IPV6]` or nothing (all of
/// `tcp://127.0.0.1:2375`). `text` is the whole `-H` value, for errors.
fn parse_tcp(text: &str, address: &str) -> Result<SocketAddr, ListenError> {
    let invalid = || ListenError::InvalidHost(text.to_owned());
    // dockerd ignores a path after the address (`tcp://1.2.3.4:2376/`);
    // berth refuses it rather than guess what was meant.
    if address.contains(['/', '?', '#', '@']) {
        return Err(invalid());
    }
    let (host, port) = if let Some(rest) = address.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or_else(invalid)?;
        match after {
            "" => (host, None),
            _ => (host, Some(after.strip_prefix(':').ok_or_else(invalid)?)),
        }
    } else {
        match address.rsplit_once(':') {
            // A bare IPv6 address needs brackets, as in a URL.
            Some((host, _)) if host.contains(':') => return Err(invalid()),
            Some((host, port)) => (host, Some(port)),
            None => (address, None),
        }
    };
    let port = match port {
        None | Some("") => DEFAULT_TCP_PORT,
        Some(port) => port.parse::<u16>().map_err(|_| invalid())?,
    };
    let ip = match host {
        "" | "localhost" => IpAddr::V4(Ipv4Addr::LOCALHOST),
        host => match host.parse::<IpAddr>() {
            Ok(ip) => ip,
            Err(_) if address.starts_with('[') => return Err(invalid()),
            Err(_) => return Err(ListenError::TcpName(text.to_owned())),
        },
    };
    Ok(SocketAddr::new(ip, port))
}

/// A listening socket and the path to remove when the server exits.
pub struct Listener {
    pub socket: Socket,
    pub path: Option<PathBuf>,
}

pub enum Socket {
    Unix(UnixListener),
    /// Every connection is TLS, with a client certificate the acceptor
    /// verifies before anything reaches the API.
    Tcp {
        listener: TcpListener,
        tls: Arc<TlsAcceptor>,
    },
}

impl AsFd for Socket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Self::Unix(listener) => listener.as_fd(),
            Self::Tcp { listener, .. } => listener.as_fd(),
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Some(path) = &self.path {
            let _ = fs_err::remove_file(path);
        }
    }
}

/// Opens every listener. With no `-H`, systemd's sockets when it passed
/// some, else the default socket. A `tcp://` host needs `tls` (client
/// certificates); without it nothing is opened.
pub fn open_listeners(
    hosts: &[String],
    group: Option<&str>,
    tls: Option<Arc<TlsAcceptor>>,
) -> Result<Vec<Listener>, ListenError> {
    let mut parsed = Vec::new();
    for text in hosts {
        let host = parse_host(text)?;
        if matches!(host, Host::Tcp(_)) && tls.is_none() {
            return Err(ListenError::TcpWithoutTls(text.clone()));
        }
        parsed.push(host);
    }
    let activated = take_activation_fds();
    if parsed.is_empty() {
        parsed.push(if activated.is_empty() {
            Host::Unix(PathBuf::from(DEFAULT_SOCKET))
        } else {
            Host::Activation
        });
    }
    let gid = resolve_group(group)?;
    let mut listeners = Vec::new();
    let mut activated = Some(activated);
    for host in parsed {
        match host {
            Host::Activation => {
                let sockets = activated.take().unwrap_or_default();
                if sockets.is_empty() && listeners.is_empty() {
                    return Err(ListenError::NoActivation);
                }
                listeners.extend(sockets.into_iter().map(|socket| Listener {
                    socket: Socket::Unix(socket),
                    path: None,
                }));
            }
            Host::Unix(path) => listeners.push(bind_unix(&path, gid)?),
            Host::Tcp(address) => {
                let tls = tls
                    .clone()
                    .ok_or_else(|| ListenError::TcpWithoutTls(address.to_string()))?;
                let listener = TcpListener::bind(address)
                    .map_err(|source| ListenError::BindTcp { address, source })?;
                listeners.push(Listener {
                    socket: Socket::Tcp { listener, tls },
                    path: None,
                });
            }
        }
    }
    Ok(listeners)
}

/// The sockets systemd passed to this process (sd_listen_fds(3)): only when
/// `LISTEN_PID` is ours. The variables are removed so that children do not
/// take them for their own.
fn take_activation_fds() -> Vec<UnixListener> {
    let pid_matches = std::env::var("LISTEN_PID")
        .ok()
        .and_then(|pid| pid.parse::<u32>().ok())
        .is_some_and(|pid| pid == std::process::id());
    let count = std::env::var("LISTEN_FDS")
        .ok()
        .and_then(|count| count.parse::<i32>().ok())
        .unwrap_or(0);
    // SAFETY: only this single-threaded start-up code reads or changes the
    // environment at this point (no threads exist yet).
    unsafe {
        std::env::remove_var("LISTEN_PID");
        std::env::remove_var("LISTEN_FDS");
        std::env::remove_var("LISTEN_FDNAMES");
    }
    if !pid_matches || count <= 0 {
        return Vec::new();
    }
    (SD_LISTEN_FDS_START..SD_LISTEN_FDS_START + count)
        .filter_map(|fd| {
            // Not ours to take unless it is a listening stream socket.
            let listening = nix::sys::socket::getsockopt(
                // SAFETY: systemd passed fds 3..3+LISTEN_FDS; this borrow
                // lives only for the call.
                &unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) },
                nix::sys::socket::sockopt::AcceptConn,
            )
            .unwrap_or(false);
            if !listening {
                tracing::warn!(fd, "passed descriptor is not a listening socket; ignored");
                return None;
            }
            // A TCP socket would be served without TLS: TCP is for
            // `-H tcp://` with --tlsverify only.
            let unix = nix::sys::socket::getsockname::<nix::sys::socket::SockaddrStorage>(fd)
                .ok()
                .and_then(|address| nix::sys::socket::SockaddrLike::family(&address))
                == Some(nix::sys::socket::AddressFamily::Unix);
            if !unix {
                tracing::warn!(fd, "passed descriptor is not a unix socket; ignored (TCP is -H tcp:// with --tlsverify)");
                return None;
            }
            let _ = nix::fcntl::fcntl(
                fd,
                nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
            );
            // SAFETY: systemd passed this descriptor to us and nothing else
            // in this process owns it.
            Some(unsafe { UnixListener::from_raw_fd(fd) })
        })
        .collect()
}

/// The socket's group: the named one (a name or a number). Without
/// `--group`, `docker` when that group exists (as dockerd), else root's.
fn resolve_group(group: Option<&str>) -> Result<Option<nix::unistd::Gid>, ListenError> {
    match group {
        Some(text) => {
            if let Ok(number) = text.parse::<u32>() {
                return Ok(Some(nix::unistd::Gid::from_raw(number)));
            }
            match nix::unistd::Group::from_name(text) {
                Ok(Some(group)) => Ok(Some(group.gid)),
                _ => Err(ListenError::UnknownGroup(text.to_owned())),
            }
        }
        None => Ok(nix::unistd::Group::from_name("docker")
            .ok()
            .flatten()
            .map(|group| group.gid)),
    }
}

fn bind_unix(path: &Path, gid: Option<nix::unistd::Gid>) -> Result<Listener, ListenError> {
    let bind_error = |source| ListenError::Bind {
        path: path.to_owned(),
        source,
    };
    if let Some(parent) = path.parent() {
        fs_err::create_dir_all(parent).map_err(bind_error)?;
    }
    if path.exists() {
        // A socket nobody answers on is left from a crash; a live one is
        // another server's.
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(ListenError::InUse {
                path: path.to_owned(),
            });
        }
        let metadata = fs_err::symlink_metadata(path).map_err(bind_error)?;
        if !std::os::unix::fs::FileTypeExt::is_socket(&metadata.file_type()) {
            return Err(bind_error(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "exists and is not a socket",
            )));
        }
        fs_err::remove_file(path).map_err(bind_error)?;
    }
    // Created 0600 (no window in which others may connect), then opened to
    // the group once it is set.
    let old = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o177));
    let bound = UnixListener::bind(path);
    nix::sys::stat::umask(old);
    let socket = bound.map_err(bind_error)?;
    let listener = Listener {
        socket: Socket::Unix(socket),
        path: Some(path.to_owned()),
    };
    let permission_error = |source| ListenError::Permissions {
        path: path.to_owned(),
        source,
    };
    if let Some(gid) = gid {
        nix::unistd::chown(path, None, Some(gid))
            .map_err(|error| permission_error(std::io::Error::from(error)))?;
    }
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(0o660))
        .map_err(permission_error)?;
    Ok(listener)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn hosts() {
        assert_eq!(
            parse_host("unix:///tmp/x.sock").unwrap(),
            Host::Unix(PathBuf::from("/tmp/x.sock"))
        );
        assert_eq!(
            parse_host("unix://").unwrap(),
            Host::Unix(PathBuf::from(DEFAULT_SOCKET))
        );
        assert_eq!(parse_host("fd://").unwrap(), Host::Activation);
        assert!(matches!(
            parse_host("unix://relative"),
            Err(ListenError::InvalidHost(_))
        ));
        assert!(matches!(parse_host("x"), Err(ListenError::InvalidHost(_))));
    }

    #[test]
    fn tcp_hosts() {
        let tcp = |text: &str| match parse_host(text) {
            Ok(Host::Tcp(address)) => address.to_string(),
            other => panic!("{text}: {other:?}"),
        };
        assert_eq!(tcp("tcp://127.0.0.1:2376"), "127.0.0.1:2376");
        assert_eq!(tcp("tcp://0.0.0.0:2376"), "0.0.0.0:2376");
        assert_eq!(tcp("tcp://[::1]:2376"), "[::1]:2376");
        assert_eq!(tcp("tcp://[::]:12345"), "[::]:12345");
        // dockerd's defaults: port 2375, host localhost.
        assert_eq!(tcp("tcp://127.0.0.1"), "127.0.0.1:2375");
        assert_eq!(tcp("tcp://127.0.0.1:"), "127.0.0.1:2375");
        assert_eq!(tcp("tcp://[::1]"), "[::1]:2375");
        assert_eq!(tcp("tcp://:2376"), "127.0.0.1:2376");
        assert_eq!(tcp("tcp://localhost:2376"), "127.0.0.1:2376");
        assert_eq!(tcp("tcp://"), "127.0.0.1:2375");
        // Without a scheme, as dockerd.
        assert_eq!(tcp("127.0.0.1:2376"), "127.0.0.1:2376");
        assert_eq!(tcp(":2376"), "127.0.0.1:2376");

        for invalid in [
            "tcp://127.0.0.1:99999",
            "tcp://127.0.0.1:x",
            "tcp://127.0.0.1:2376/path",
            "tcp://::1",
            "tcp://::1:2376",
            "tcp://[::1",
            "tcp://[::1]x",
            "tcp://[nope]:1",
            "tcp://user@127.0.0.1:1",
            "http://127.0.0.1:2375",
            "https://127.0.0.1:2376",
            "example.com:2376",
        ] {
            assert!(
                matches!(parse_host(invalid), Err(ListenError::InvalidHost(_))),
                "{invalid}: {:?}",
                parse_host(invalid)
            );
        }
        assert!(matches!(
            parse_host("tcp://example.com:2376"),
            Err(ListenError::TcpName(_))
        ));
    }

    #[test]
    fn tcp_needs_tls_and_nothing_is_bound_without_it() {
        let directory = tempfile::tempdir().unwrap();
        let socket = directory.path().join("d.sock");
        let hosts = [
            format!("unix://{}", socket.display()),
            "tcp://127.0.0.1:0".to_owned(),
        ];
        let error = open_listeners(&hosts, None, None).err().unwrap();
        assert!(matches!(error, ListenError::TcpWithoutTls(_)), "{error}");
        assert!(error.to_string().contains("--tlsverify"), "{error}");
        assert!(!socket.exists());
    }

    #[test]
    fn socket_is_0660_and_stale_sockets_are_replaced() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("d.sock");
        let first = bind_unix(&path, None).unwrap();
        let mode = fs_err::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o660);
        assert!(matches!(
            bind_unix(&path, None),
            Err(ListenError::InUse { .. })
        ));
        drop(first);
        assert!(!path.exists());
        // A socket file nobody listens on (left by a crash) is replaced.
        drop(UnixListener::bind(&path).unwrap());
        assert!(path.exists());
        let again = bind_unix(&path, None).unwrap();
        drop(again);
        assert!(!path.exists());
    }
}
