//! Failures of the warm pool's own steps: its directory and lock, making a
//! member (in the caller and in the member's monitor), and handing a run to
//! the member that a claim took.

use std::path::PathBuf;

use berth_runtime::LaunchError;

use crate::ErrorKind;

#[derive(Debug, thiserror::Error)]
pub enum WarmError {
    #[error("failed to create the warm pool directory")]
    PoolDirectory(#[source] std::io::Error),
    /// The source (fs-err's) names the lock file.
    #[error("failed to open the warm pool's lock")]
    OpenLock(#[source] std::io::Error),
    #[error("failed to lock {path:?}")]
    Lock {
        path: PathBuf,
        #[source]
        source: nix::Error,
    },
    /// A member is made with every default, so only the image's own
    /// volumes (a volume mount) make its sandbox unclaimable.
    #[error("the image's own volumes keep {reference} out of the warm pool")]
    ImageVolumes { reference: String },
    #[error("failed to create the directories of pool member {id}")]
    MemberDirectory {
        id: String,
        #[source]
        source: std::io::Error,
    },
    /// The member's start record was held already (its monitor runs twice).
    #[error("pool member {id} is started twice")]
    StartedTwice { id: String },
    /// `reason` is the network's own text (with Docker's words for a port
    /// conflict).
    #[error("failed to set up the network of pool member {id}: {reason}")]
    Network { id: String, reason: String },
    /// Boxed, as `ContainerError::CreateCgroup`'s source.
    #[error("failed to build the sandbox of pool member {id}")]
    Sandbox {
        id: String,
        #[source]
        source: Box<LaunchError>,
    },
    /// `message` is the VM shim's whole chain (another process).
    #[error("failed to boot the VM of pool member {id}: {message}")]
    VmSandbox { id: String, message: String },
    #[error("failed to offer pool member {id}")]
    Offer {
        id: String,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to record pool member {id}")]
    Record {
        id: String,
        #[source]
        source: std::io::Error,
    },
    /// The member's monitor reported why it failed; `message` is its whole
    /// chain (the monitor is another process).
    #[error("failed to make pool member {id}: {message}")]
    Member { id: String, message: String },
    #[error("failed to make pool member {id}: its monitor exited before its sandbox was ready")]
    MonitorExited { id: String },
    /// The claimant connected without storing the container's row first.
    #[error("claimed pool member {id} has no container record")]
    NoRecord { id: String },
    #[error("failed to encode the claim of pool member {id}")]
    EncodeClaim {
        id: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("failed to hand the run to pool member {id}")]
    HandOver {
        id: String,
        #[source]
        source: std::io::Error,
    },
}

impl WarmError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            // berth does not pool such an image; the run itself is fine.
            Self::ImageVolumes { .. } => ErrorKind::Unsupported,
            Self::PoolDirectory(_)
            | Self::OpenLock(_)
            | Self::Lock { .. }
            | Self::MemberDirectory { .. }
            | Self::StartedTwice { .. }
            | Self::Network { .. }
            | Self::Sandbox { .. }
            | Self::VmSandbox { .. }
            | Self::Offer { .. }
            | Self::Record { .. }
            | Self::Member { .. }
            | Self::MonitorExited { .. }
            | Self::NoRecord { .. }
            | Self::EncodeClaim { .. }
            | Self::HandOver { .. } => ErrorKind::Internal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EngineError, ErrorChain};

    #[test]
    fn warm_errors_have_their_kinds() {
        let id = || "abc".to_owned();
        let io = || std::io::Error::from_raw_os_error(libc::EACCES);
        let volumes: EngineError = WarmError::ImageVolumes {
            reference: "postgres:latest".to_owned(),
        }
        .into();
        assert_eq!(volumes.kind(), ErrorKind::Unsupported);
        assert_eq!(
            volumes.to_string(),
            "the image's own volumes keep postgres:latest out of the warm pool"
        );
        for internal in [
            WarmError::PoolDirectory(io()),
            WarmError::OpenLock(io()),
            WarmError::Lock {
                path: "/run/berth/warm/.lock".into(),
                source: nix::Error::EINTR,
            },
            WarmError::MemberDirectory {
                id: id(),
                source: io(),
            },
            WarmError::StartedTwice { id: id() },
            WarmError::Network {
                id: id(),
                reason: "no address left".to_owned(),
            },
            WarmError::Sandbox {
                id: id(),
                source: Box::new(LaunchError::Clone(nix::Error::EPERM)),
            },
            WarmError::VmSandbox {
                id: id(),
                message: "no QEMU".to_owned(),
            },
            WarmError::Offer {
                id: id(),
                source: io(),
            },
            WarmError::Record {
                id: id(),
                source: io(),
            },
            WarmError::Member {
                id: id(),
                message: "x".to_owned(),
            },
            WarmError::MonitorExited { id: id() },
            WarmError::NoRecord { id: id() },
            WarmError::EncodeClaim {
                id: id(),
                source: serde_json::from_str::<u8>("x").unwrap_err(),
            },
            WarmError::HandOver {
                id: id(),
                source: io(),
            },
        ] {
            let engine: EngineError = internal.into();
            assert_eq!(engine.kind(), ErrorKind::Internal, "{engine}");
            assert_eq!(engine.run_status(), 125);
        }
    }

    #[test]
    fn the_cause_stays_in_the_chain() {
        let error = WarmError::Sandbox {
            id: "abc".to_owned(),
            source: Box::new(LaunchError::Clone(nix::Error::EPERM)),
        };
        assert_eq!(
            error.to_string(),
            "failed to build the sandbox of pool member abc"
        );
        let engine: EngineError = error.into();
        assert_eq!(
            ErrorChain(&engine).to_string(),
            "failed to build the sandbox of pool member abc: \
             failed to create the container's namespaces: EPERM: Operation not permitted"
        );
    }
}
