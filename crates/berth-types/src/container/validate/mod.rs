//! The checks the Docker daemon makes on a create request before anything exists,
//! limited to those that need nothing but the request itself: no file system, no
//! store, no kernel. The CLI runs them right after parsing flags and the API server
//! right after decoding a body, so both fail early with the daemon's words.
//!
//! Left to the engine because they need the host: bind sources that must exist,
//! `--cpus` above the CPU count, cpuset availability, log drivers, runtimes, and
//! whether named containers, networks and volumes exist.

mod config;
mod host;
mod mounts;
mod network;
mod resources;

use super::names::{is_valid_container_name, RESTRICTED_NAME_CHARS};
use super::request::CreateRequest;

pub use mounts::{parse_bind, validate_volume_name, BindSpec};
pub use network::{parse_extra_host, HOST_GATEWAY};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    #[error("Invalid container name ({0}), only {RESTRICTED_NAME_CHARS} are allowed")]
    ContainerName(String),

    // Config.
    #[error("the working directory '{0}' is invalid, it needs to be an absolute path")]
    WorkingDirNotAbsolute(String),
    #[error(transparent)]
    StopSignal(#[from] super::signal::InvalidSignal),
    #[error("invalid environment variable: {0}")]
    Environment(String),
    #[error("{field} in Healthcheck cannot be less than 1ms")]
    HealthcheckDuration { field: &'static str },
    #[error("Retries in Healthcheck cannot be negative")]
    HealthcheckRetries,

    // HostConfig.
    #[error("can't create 'AutoRemove' container with restart policy")]
    AutoRemoveWithRestart,
    #[error("invalid restart policy '{0}'")]
    RestartPolicy(String),
    #[error("maximum retry count cannot be used with restart policy '{0}'")]
    RetryCountNotAllowed(String),
    #[error("maximum retry count cannot be negative")]
    NegativeRetryCount,
    #[error("invalid {field}: unknown capability: {name:?}")]
    Capability { field: &'static str, name: String },
    #[error("Invalid isolation: {0:?} - linux only supports 'default' or 'vm'")]
    Isolation(String),
    #[error("invalid port specification: {0:?}")]
    PortSpecification(String),
    #[error("bad format for add-host: {0:?}")]
    ExtraHostFormat(String),
    #[error("invalid IP address in add-host: {0:?}")]
    ExtraHostAddress(String),
    #[error("invalid IPC mode: {0}")]
    IpcMode(String),
    #[error("invalid PID mode: {0}")]
    PidMode(String),
    #[error("invalid UTS mode: {0}")]
    UtsMode(String),
    #[error("invalid USER mode: {0}")]
    UsernsMode(String),
    #[error("invalid cgroup namespace mode: {0}")]
    CgroupnsMode(String),
    #[error("invalid --security-opt {stage}: {option:?}")]
    SecurityOption { stage: u8, option: String },
    #[error("SHM size can not be less than 0")]
    ShmSize,
    #[error("Invalid value {0}, range for oom score adj is [-1000, 1000]")]
    OomScoreAdj(i64),

    // Resources.
    #[error("Minimum memory limit allowed is 6MB")]
    MemoryMinimum,
    #[error("Minimum memoryswap limit should be larger than memory limit, see usage")]
    SwapBelowMemory,
    #[error("You should always set the Memory limit when using Memoryswap limit, see usage")]
    SwapWithoutMemory,
    #[error("Invalid value: {0}, valid memory swappiness range is 0-100")]
    Swappiness(i64),
    #[error("Minimum memory reservation allowed is 6MB")]
    ReservationMinimum,
    #[error("Minimum memory limit can not be less than memory reservation limit, see usage")]
    MemoryBelowReservation,
    #[error("Minimum kernel memory limit allowed is 6MB")]
    KernelMemoryMinimum,
    #[error("Conflicting options: Nano CPUs and CPU Period cannot both be set")]
    NanoCpusWithPeriod,
    #[error("Conflicting options: Nano CPUs and CPU Quota cannot both be set")]
    NanoCpusWithQuota,
    #[error(
        "CPU cfs period can not be less than 1ms (i.e. 1000) or larger than 1s (i.e. 1000000)"
    )]
    CpuPeriod,
    #[error("CPU cfs quota can not be less than 1ms (i.e. 1000)")]
    CpuQuota,
    #[error("cpu real-time runtime cannot be higher than cpu real-time period")]
    RealtimeRuntime,
    #[error("Range of blkio weight is from 10 to 1000")]
    BlkioWeight,
    #[error(
        "Invalid QoS settings: linux does not support Maximum IO Bandwidth or Maximum IO IOps"
    )]
    MaximumIo,

    // Network modes.
    #[error("Invalid network mode: invalid container format container:<name|id>")]
    NetworkContainerFormat,
    #[error("conflicting options: hostname and the network mode")]
    NetworkAndHostname,
    #[error("conflicting options: container type network can't be used with links. This would result in undefined behavior")]
    ContainerNetworkAndLinks,
    #[error("conflicting options: dns and the network mode")]
    NetworkAndDns,
    #[error("conflicting options: custom host-to-IP mapping and the network mode")]
    NetworkAndExtraHosts,
    #[error("conflicting options: mac-address and the network mode")]
    NetworkAndMacAddress,
    #[error("conflicting options: port publishing and the container type network mode")]
    NetworkAndPublish,
    #[error("conflicting options: port exposing and the container type network mode")]
    NetworkAndExpose,
    #[error("conflicting options: hostname and the UTS mode")]
    UtsAndHostname,
    #[error("conflicting options: host type networking can't be used with links. This would result in undefined behavior")]
    HostNetworkAndLinks,
    #[error("user specified IP address is supported on user defined networks only")]
    IpOnPredefinedNetwork,
    #[error("network-scoped alias is supported only for containers in user defined networks")]
    AliasOnPredefinedNetwork,
    #[error("invalid IPv4 address: {0}")]
    Ipv4Address(String),
    #[error("invalid IPv6 address: {0}")]
    Ipv6Address(String),

    // Mounts.
    #[error("invalid mount config for type {mount_type:?}: {reason}")]
    MountConfig {
        mount_type: String,
        reason: MountProblem,
    },
    #[error("invalid volume specification: '{0}'")]
    VolumeSpecification(String),
    #[error("invalid volume specification: '{spec}': {reason}")]
    VolumeSpecificationMount {
        spec: String,
        reason: Box<ValidationError>,
    },
    #[error("invalid mode: {0}")]
    VolumeMode(String),
    #[error("create {0}: volume name is too short, names should be at least two alphanumeric characters")]
    VolumeNameTooShort(String),
    #[error("create {0}: {0:?} includes invalid characters for a local volume name, only \"{RESTRICTED_NAME_CHARS}\" are allowed. If you intended to pass a host directory, use absolute path")]
    VolumeName(String),
    #[error("volumes-from specification cannot be an empty string")]
    VolumesFromEmpty,
    #[error("invalid specification: destination can't be '/'")]
    TmpfsTargetIsRoot,
    #[error("invalid mount path: '{0}' mount path must be absolute")]
    TmpfsTargetNotAbsolute(String),
}

/// Why one mount is wrong (the part after `invalid mount config for type "x": `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MountProblem {
    #[error("field {0} must not be empty")]
    MissingField(&'static str),
    #[error("field {0} must not be specified")]
    ExtraField(&'static str),
    #[error("invalid specification: destination can't be '/'")]
    TargetIsRoot,
    #[error("invalid mount path: '{0}' mount path must be absolute")]
    NotAbsolute(String),
    #[error("invalid propagation mode: {0}")]
    Propagation(String),
    #[error("must not set ReadOnly mode when using anonymous volumes")]
    ReadOnlyAnonymousVolume,
    #[error("mount type unknown")]
    UnknownType,
}

impl CreateRequest {
    /// Runs the daemon's request-only checks in the daemon's order (decode-time
    /// network checks, `Config`, `HostConfig`, platform checks, endpoints, name,
    /// volumes) and returns the first failure.
    pub fn validate(&self) -> Result<(), ValidationError> {
        network::validate_modes(&self.config, &self.host_config, &self.networking_config)?;
        resources::validate_realtime(&self.host_config.resources)?;
        config::validate(&self.config)?;
        host::validate(&self.host_config)?;
        resources::validate(&self.host_config.resources)?;
        host::validate_platform(&self.host_config)?;
        network::validate_endpoints(&self.networking_config)?;
        if let Some(name) = &self.name {
            if !is_valid_container_name(name) {
                return Err(ValidationError::ContainerName(name.clone()));
            }
        }
        mounts::validate_binds(&self.host_config)
    }
}

#[cfg(test)]
mod tests;
