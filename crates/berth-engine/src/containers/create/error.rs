//! What `create` refuses, in the daemon's words (moby `daemon/create.go`,
//! `runconfig`, `daemon/container.go`'s `verifyContainerSettings`): every
//! one of these is a bad request (400) but the few that are berth's own
//! failure.

use berth_runtime::devices::RuleSyntaxError;

use crate::containers::names::InvalidName;
use crate::ErrorKind;

#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    #[error(transparent)]
    InvalidName(#[from] InvalidName),
    #[error("No command specified")]
    NoCommand,
    #[error("the working directory '{directory}' is invalid, it needs to be an absolute path")]
    RelativeWorkingDirectory { directory: String },
    #[error("conflicting options: hostname and the UTS mode")]
    HostnameWithHostUts,
    #[error("invalid ulimit type: {name}")]
    InvalidUlimit { name: String },
    #[error("invalid restart policy '{name}'")]
    InvalidRestartPolicy { name: String },

    // --- networks and ports ---
    #[error("Invalid network mode: container: needs a container name or id")]
    EmptyContainerMode,
    #[error("container cannot be disconnected from host network or connected to host network ({network})")]
    HostNetwork { network: String },
    #[error("conflicting options: port publishing and the container type network mode")]
    PortsWithContainerMode,
    #[error("unable to derive the IP value for host-gateway: the default bridge has no gateway")]
    NoHostGateway,

    // --- devices ---
    #[error("could not select device driver {driver:?} with capabilities: [{capabilities}]: berth has no CDI support (devices: {devices})")]
    CdiDevices {
        driver: String,
        capabilities: String,
        devices: String,
    },
    #[error("could not select device driver {driver:?} with capabilities: [{capabilities}]: berth has no device drivers (--gpus)")]
    DeviceDriver {
        driver: String,
        capabilities: String,
    },
    #[error("bad mode specified: {mode}")]
    DeviceMode { mode: String },
    #[error("{path} is not an absolute path")]
    RelativeDevicePath { path: String },
    #[error(transparent)]
    DeviceRule(#[from] RuleSyntaxError),

    // --- resources ---
    #[error("Minimum memoryswap limit should be larger than memory limit, see usage")]
    SwapBelowMemory,
    #[error("Minimum memory limit allowed is 6MB")]
    MemoryTooLow,
    #[error("Conflicting options: Nano CPUs and CPU Period/Quota cannot both be set")]
    NanoCpusWithQuota,
    #[error("Range of CPUs is from 0.01 to {available}.00, as there are only {available} CPUs available")]
    TooManyCpus { available: u64 },

    // --- mounts ---
    #[error("invalid volume specification: '{bind}'")]
    VolumeSpecification { bind: String },
    #[error("error while creating mount source path '{path}'")]
    MountSourcePath {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("mount type {kind:?} is not supported")]
    MountType { kind: String },
    #[error("invalid mount config for type \"bind\": bind source path does not exist: {path}")]
    BindSourceMissing { path: String },
    #[error("invalid tmpfs mode {value:?}")]
    TmpfsMode { value: String },
    #[error("invalid mode: {mode}")]
    VolumesFromMode { mode: String },
    #[error("invalid tmpfs size {value:?}")]
    TmpfsSize { value: String },
    #[error("tmpfs option {option:?} for {destination} is not supported (berth takes size, mode, ro, rw, exec, noexec, nosuid, nodev)")]
    TmpfsOption { option: String, destination: String },
    #[error("invalid mount config: mount path must be absolute: {path}")]
    RelativeMountPath { path: String },

    // --- berth's own failures ---
    #[error("failed to serialize the container record")]
    Serialize(#[source] serde_json::Error),
    #[error("failed to create {path:?}")]
    CreateDirectory {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("could not generate a unique container name")]
    NameGeneration,
}

impl CreateError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Serialize(_) | Self::CreateDirectory { .. } | Self::NameGeneration => {
                ErrorKind::Internal
            }
            _ => ErrorKind::InvalidArgument,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EngineError, ErrorChain};

    #[test]
    fn create_refusals_are_bad_requests_in_dockers_words() {
        let error = EngineError::from(CreateError::NoCommand);
        assert_eq!(error.kind(), ErrorKind::InvalidArgument);
        assert_eq!(error.to_string(), "No command specified");
        let error = CreateError::TooManyCpus { available: 2 };
        assert_eq!(
            error.to_string(),
            "Range of CPUs is from 0.01 to 2.00, as there are only 2 CPUs available"
        );
        let error = CreateError::from(RuleSyntaxError {
            rule: "x".to_owned(),
        });
        assert_eq!(error.kind(), ErrorKind::InvalidArgument);
        assert_eq!(error.to_string(), "invalid device cgroup rule format: 'x'");
    }

    #[test]
    fn the_cause_of_a_mount_source_follows_its_path() {
        let error = CreateError::MountSourcePath {
            path: "/data".to_owned(),
            source: std::io::Error::from_raw_os_error(libc::EROFS),
        };
        assert_eq!(error.kind(), ErrorKind::InvalidArgument);
        assert_eq!(
            ErrorChain(&error).to_string(),
            "error while creating mount source path '/data': Read-only file system (os error 30)"
        );
        assert_eq!(CreateError::NameGeneration.kind(), ErrorKind::Internal);
    }
}
