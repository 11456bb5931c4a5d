//! Everything that can go wrong in the OCI runtime, worded as runc words it where runc
//! has a well-known message (containerd and its users match on some of them).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum OciError {
    #[error("failed to read {path:?}")]
    ReadConfig {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to parse {path:?}")]
    ParseConfig {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A field berth reads but cannot honour: refused rather than ignored.
    #[error("{field}: {reason}")]
    Unsupported { field: String, reason: String },
    /// A field whose value is wrong.
    #[error("{field}: {reason}")]
    Invalid { field: String, reason: String },
    #[error("invalid rootfs {path:?}")]
    InvalidRootfs {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid container ID format")]
    InvalidId,
    #[error("container with given ID already exists")]
    Exists,
    #[error("container does not exist")]
    NotFound,
    #[error("{0}")]
    WrongState(String),
    #[error("failed to {action} {path:?}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to {action}")]
    Sys {
        action: &'static str,
        #[source]
        source: nix::Error,
    },
    #[error("failed to set up the container's cgroup")]
    Cgroup(#[source] berth_runtime::cgroups::CgroupError),
    #[error("failed to compile the seccomp filter")]
    Seccomp(#[source] berth_runtime::seccomp::SeccompError),
    #[error(transparent)]
    Launch(berth_runtime::LaunchError),
    #[error("error running {kind} hook #{index} {path:?}: {reason}")]
    Hook {
        kind: &'static str,
        index: usize,
        path: String,
        reason: String,
    },
    #[error("failed to encode the container state")]
    Encode(#[source] serde_json::Error),
    #[error("failed to decode the container state {path:?}")]
    Decode {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

impl OciError {
    pub(crate) fn unsupported(field: impl Into<String>, reason: impl Into<String>) -> Self {
        OciError::Unsupported {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        OciError::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| OciError::Io {
            action,
            path,
            source,
        }
    }
}

pub type Result<T, E = OciError> = std::result::Result<T, E>;
