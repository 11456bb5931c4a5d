//! Failures of the container lifecycle's own steps (its processes, pipes,
//! records and the host's cgroup layout), with their causes.

use berth_runtime::cgroups::CgroupError;
use berth_runtime::rootfs::RootfsError;
use berth_types::DigestError;

#[derive(Debug, thiserror::Error)]
pub enum ContainerError {
    #[error("failed to create a pipe")]
    Pipe(#[source] nix::Error),
    #[error("failed to fork {what}")]
    Fork {
        what: &'static str,
        #[source]
        source: nix::Error,
    },
    #[error("failed to open /dev/null")]
    DevNull(#[source] std::io::Error),
    #[error("failed to read the host's cgroup layout")]
    CgroupLayout(#[source] CgroupError),
    #[error("failed to encode the record of container {id}")]
    EncodeRecord {
        id: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("failed to encode the commit's intent")]
    EncodeIntent(#[source] serde_json::Error),
    #[error("failed to run ps")]
    RunPs(#[source] std::io::Error),
    /// `top`'s ps arguments were refused by ps (Docker: 500 with ps's words).
    #[error("ps failed: {0}")]
    Ps(String),
    /// Docker's words.
    #[error("Couldn't find PID field in ps output")]
    NoPidColumn,
    /// Another `start` or `stop` held the container's start record for
    /// longer than `start` waits.
    #[error("container {id} is being started or stopped by another process")]
    StartInProgress { id: String },
    /// The source quotes the id.
    #[error("invalid image id in the record of container {id}")]
    ImageId {
        id: String,
        #[source]
        source: DigestError,
    },
    #[error("failed to mount the root of container {id} to fill its new volumes")]
    MountRootfs {
        id: String,
        #[source]
        source: RootfsError,
    },
    /// Boxed: a `CgroupError` beside the id would make every
    /// `EngineError` larger.
    #[error("failed to create the cgroup of container {id}")]
    CreateCgroup {
        id: String,
        #[source]
        source: Box<CgroupError>,
    },
    /// Moving a descriptor for `berth __monitor` above the fixed numbers.
    #[error("failed to duplicate a descriptor for berth's monitor")]
    DuplicateDescriptor(#[source] std::io::Error),
    #[error("failed to run berth's monitor (`berth __monitor`)")]
    SpawnMonitor(#[source] std::io::Error),
    /// `berth __monitor` forks the monitor only while it has one thread.
    #[error("failed to fork the monitor: its starter has other threads")]
    StarterThreads,
    #[error("failed to encode pool member {id}")]
    EncodeMember {
        id: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("failed to read the pool member")]
    ReadMember(#[source] std::io::Error),
    #[error("failed to decode the pool member")]
    DecodeMember(#[source] serde_json::Error),
    /// The descriptors `berth api-helper exec` gives the process (`what`:
    /// "terminal", "streams").
    #[error("failed to set up the exec's {what}")]
    ExecStdio {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
}

impl ContainerError {
    pub fn kind(&self) -> crate::ErrorKind {
        match self {
            // Docker answers 500 for ps failures too.
            Self::Ps(_) | Self::NoPidColumn => crate::ErrorKind::InvalidArgument,
            Self::StartInProgress { .. } => crate::ErrorKind::Conflict,
            Self::Pipe(_)
            | Self::Fork { .. }
            | Self::DevNull(_)
            | Self::CgroupLayout(_)
            | Self::EncodeRecord { .. }
            | Self::EncodeIntent(_)
            | Self::RunPs(_)
            | Self::ImageId { .. }
            | Self::MountRootfs { .. }
            | Self::CreateCgroup { .. }
            | Self::DuplicateDescriptor(_)
            | Self::SpawnMonitor(_)
            | Self::StarterThreads
            | Self::EncodeMember { .. }
            | Self::ReadMember(_)
            | Self::DecodeMember(_)
            | Self::ExecStdio { .. } => crate::ErrorKind::Internal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_stay_in_the_chain() {
        let error = ContainerError::Fork {
            what: "the exec's waiter",
            source: nix::Error::EAGAIN,
        };
        assert_eq!(error.to_string(), "failed to fork the exec's waiter");
        let engine: crate::EngineError = error.into();
        assert_eq!(
            crate::ErrorChain(&engine).to_string(),
            "failed to fork the exec's waiter: EAGAIN: Try again"
        );
        assert_eq!(engine.kind(), crate::ErrorKind::Internal);
        let ps: crate::EngineError = ContainerError::NoPidColumn.into();
        assert_eq!(ps.kind(), crate::ErrorKind::InvalidArgument);
    }

    #[test]
    fn the_start_variants_have_their_kinds() {
        let id = || "abc".to_owned();
        let io = || std::io::Error::from_raw_os_error(libc::EMFILE);
        let busy: crate::EngineError = ContainerError::StartInProgress { id: id() }.into();
        assert_eq!(busy.kind(), crate::ErrorKind::Conflict);
        assert!(busy.is_conflict());
        assert_eq!(
            busy.to_string(),
            "container abc is being started or stopped by another process"
        );
        for internal in [
            ContainerError::Pipe(nix::Error::EMFILE),
            ContainerError::ImageId {
                id: id(),
                source: berth_types::Digest::parse("nope").unwrap_err(),
            },
            ContainerError::MountRootfs {
                id: id(),
                source: RootfsError::Mount {
                    target: "/m".into(),
                    layers: 2,
                    source: nix::Error::EINVAL,
                },
            },
            ContainerError::CreateCgroup {
                id: id(),
                source: Box::new(CgroupError::Read {
                    path: "/sys/fs/cgroup/x".into(),
                    source: io(),
                }),
            },
            ContainerError::DuplicateDescriptor(io()),
            ContainerError::SpawnMonitor(io()),
            ContainerError::StarterThreads,
            ContainerError::EncodeMember {
                id: id(),
                source: serde_json::from_str::<u8>("x").unwrap_err(),
            },
            ContainerError::ReadMember(io()),
            ContainerError::DecodeMember(serde_json::from_str::<u8>("x").unwrap_err()),
            ContainerError::ExecStdio {
                what: "streams",
                source: io(),
            },
        ] {
            assert_eq!(internal.kind(), crate::ErrorKind::Internal, "{internal}");
        }
    }

    #[test]
    fn the_rootfs_mount_keeps_its_cause() {
        let error = ContainerError::MountRootfs {
            id: "abc".to_owned(),
            source: RootfsError::Mount {
                target: "/m".into(),
                layers: 2,
                source: nix::Error::EINVAL,
            },
        };
        assert_eq!(
            error.to_string(),
            "failed to mount the root of container abc to fill its new volumes"
        );
        assert_eq!(
            crate::ErrorChain(&error).to_string(),
            "failed to mount the root of container abc to fill its new volumes: \
             failed to mount the container root at \"/m\" (lowerdir has 2 layers): \
             EINVAL: Invalid argument"
        );
    }
}
