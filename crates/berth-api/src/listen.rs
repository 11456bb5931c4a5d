//! Where the server listens: unix sockets from `-H unix://PATH` (mode 0660,
//! owned by root and the configured group), or sockets systemd passed
//! (`LISTEN_FDS`, `-H fd://`). TCP is refused: it would need TLS with client
//! certificates, which berth does not offer yet.

use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

pub const DEFAULT_SOCKET: &str = "/run/berth/docker.sock";

/// systemd's first passed descriptor (sd_listen_fds(3)).
const SD_LISTEN_FDS_START: RawFd = 3;

#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error("invalid host {0:?}: expected unix:///path or fd://")]
    InvalidHost(String),
    #[error("refusing to listen on {0:?}: TCP needs TLS with client certificates, which berth serve does not support yet; use a unix socket")]
    Tcp(String),
    #[error("failed to listen on {path:?}")]
    Bind {
        path: PathBuf,
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
}

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
    if text.starts_with("tcp://") || text.starts_with("http://") || text.starts_with("https://") {
        return Err(ListenError::Tcp(text.to_owned()));
    }
    if text.starts_with('/') {
        return Ok(Host::Unix(PathBuf::from(text)));
    }
    Err(ListenError::InvalidHost(text.to_owned()))
}

/// A listening socket and the path to remove when the server exits.
pub struct Listener {
    pub socket: UnixListener,
    pub path: Option<PathBuf>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Some(path) = &self.path {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Opens every listener. With no `-H`, systemd's sockets when it passed
/// some, else the default socket.
pub fn open_listeners(hosts: &[String], group: Option<&str>) -> Result<Vec<Listener>, ListenError> {
    let mut parsed = hosts
        .iter()
        .map(|host| parse_host(host))
        .collect::<Result<Vec<_>, _>>()?;
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
                listeners.extend(
                    sockets
                        .into_iter()
                        .map(|socket| Listener { socket, path: None }),
                );
            }
            Host::Unix(path) => listeners.push(bind_unix(&path, gid)?),
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
        std::fs::create_dir_all(parent).map_err(bind_error)?;
    }
    if path.exists() {
        // A socket nobody answers on is left from a crash; a live one is
        // another server's.
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(ListenError::InUse {
                path: path.to_owned(),
            });
        }
        let metadata = std::fs::symlink_metadata(path).map_err(bind_error)?;
        if !std::os::unix::fs::FileTypeExt::is_socket(&metadata.file_type()) {
            return Err(bind_error(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "exists and is not a socket",
            )));
        }
        std::fs::remove_file(path).map_err(bind_error)?;
    }
    // Created 0600 (no window in which others may connect), then opened to
    // the group once it is set.
    let old = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o177));
    let bound = UnixListener::bind(path);
    nix::sys::stat::umask(old);
    let socket = bound.map_err(bind_error)?;
    let listener = Listener {
        socket,
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
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660))
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
            parse_host("tcp://0.0.0.0:2375"),
            Err(ListenError::Tcp(_))
        ));
        assert!(matches!(
            parse_host("unix://relative"),
            Err(ListenError::InvalidHost(_))
        ));
        assert!(matches!(parse_host("x"), Err(ListenError::InvalidHost(_))));
    }

    #[test]
    fn socket_is_0660_and_stale_sockets_are_replaced() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("d.sock");
        let first = bind_unix(&path, None).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
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
