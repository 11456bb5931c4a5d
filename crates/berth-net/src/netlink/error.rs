//! Errors of the rtnetlink client.

use std::io;

use super::message::MalformedMessage;

/// A failed netlink operation. `operation` says what was asked ("create
/// bridge", "set link up", …); the cause is in the source.
#[derive(Debug, thiserror::Error)]
pub enum NetlinkError {
    #[error("failed to open a netlink socket")]
    Open {
        #[source]
        source: io::Error,
    },
    #[error("failed to enter a network namespace to open a netlink socket")]
    EnterNamespace {
        #[source]
        source: io::Error,
    },
    /// Sending or receiving on the socket failed.
    #[error("failed to {operation}")]
    Io {
        operation: &'static str,
        #[source]
        source: io::Error,
    },
    /// The kernel refused the request; see [`NetlinkError::errno`].
    #[error("failed to {operation}")]
    Kernel {
        operation: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("failed to {operation}")]
    Malformed {
        operation: &'static str,
        #[source]
        source: MalformedMessage,
    },
    /// Linux names are 1 to 15 bytes (`IFNAMSIZ` 16 with the NUL), without
    /// '/', ':', NUL or whitespace (`dev_valid_name`).
    #[error("invalid network interface name {name:?}")]
    InvalidName { name: String },
    #[error("invalid IPv4 prefix length {prefix_len}")]
    InvalidPrefixLength { prefix_len: u8 },
}

impl NetlinkError {
    pub(crate) fn kernel(operation: &'static str, errno: i32) -> Self {
        Self::Kernel {
            operation,
            source: io::Error::from_raw_os_error(errno),
        }
    }

    /// The errno the kernel answered with (`libc::EEXIST`, `libc::ENODEV`,
    /// …), for [`NetlinkError::Kernel`] only.
    pub fn errno(&self) -> Option<i32> {
        match self {
            Self::Kernel { source, .. } => source.raw_os_error(),
            _ => None,
        }
    }
}

/// Rejects what `dev_valid_name` (net/core/dev.c) would.
pub(crate) fn check_name(name: &str) -> Result<(), NetlinkError> {
    let valid = !name.is_empty()
        && name.len() < 16
        && name != "."
        && name != ".."
        && !name
            .bytes()
            .any(|b| b == b'/' || b == b':' || b == 0 || b.is_ascii_whitespace());
    if valid {
        Ok(())
    } else {
        Err(NetlinkError::InvalidName {
            name: name.to_owned(),
        })
    }
}
