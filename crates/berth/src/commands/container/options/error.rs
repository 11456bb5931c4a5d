//! Everything that can be wrong with `run`/`create` flags, in the docker CLI's words.
//! Printed with its cause chain (`{:#}`), each reads exactly as Docker prints it.

use std::path::PathBuf;

use berth_types::container::platform::PlatformError;
use berth_types::container::ValidationError;

pub use super::values::ValueError;

#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    /// A flag's value could not be read: `invalid argument "x" for "-m, --memory"
    /// flag: invalid size: 'x'`.
    #[error("invalid argument {value:?} for {flag:?} flag")]
    InvalidArgument {
        flag: &'static str,
        value: String,
        #[source]
        source: ValueError,
    },

    #[error("conflicting options: cannot specify both --attach and --detach")]
    AttachWithDetach,
    #[error("conflicting options: cannot specify both --restart and --rm")]
    RestartWithRm,
    #[error("--no-healthcheck conflicts with --health-* options")]
    HealthcheckConflict,
    #[error("--{0} cannot be negative")]
    NegativeHealthSetting(&'static str),
    #[error("invalid value: {0}. Valid memory swappiness range is 0-100")]
    Swappiness(i64),
    #[error("{0} is not a valid mac address")]
    MacAddress(String),
    #[error("--pid: invalid PID mode")]
    PidMode,
    #[error("--uts: invalid UTS mode")]
    UtsMode,
    #[error("--userns: invalid USER mode")]
    UsernsMode,
    #[error("--cgroupns: invalid CGROUP mode")]
    CgroupnsMode,
    #[error("invalid restart policy format: no policy provided before colon")]
    RestartPolicyNoName,
    #[error("invalid restart policy format: maximum retry count must be an integer")]
    RestartPolicyCount,
    #[error("invalid pull option: '{0}': must be one of \"always\", \"missing\" or \"never\"")]
    PullPolicy(String),
    #[error("error parsing specified platform")]
    Platform(#[source] PlatformError),
    #[error("invalid logging opts for driver {0}")]
    LoggingOptions(String),
    #[error("invalid storage option")]
    StorageOption,
    #[error("Invalid --security-opt: {0:?}")]
    SecurityOption(String),
    #[error("opening seccomp profile ({path}) failed")]
    SeccompProfileRead {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("compacting json for seccomp profile ({path}) failed")]
    SeccompProfileJson {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("invalid hostname {0:?}: longer than 64 characters")]
    HostnameTooLong(String),

    // Ports.
    #[error("invalid publish opts format (should be name=value but got '{0}')")]
    PublishOptionFormat(String),
    #[error("invalid IP address: {0}")]
    PublishAddress(String),
    #[error("no port specified: {0}<empty>")]
    PublishNoPort(String),
    #[error("invalid containerPort: {0}")]
    PublishContainerPort(String),
    #[error("invalid hostPort: {0}")]
    PublishHostPort(String),
    #[error("invalid ranges specified for container and host Ports: {container} and {host}")]
    PublishRanges { container: String, host: String },
    #[error("invalid proto: {0}")]
    Protocol(String),
    #[error("invalid port format for --expose: {0}")]
    ExposeFormat(String),
    #[error("invalid range format for --expose: {value}, error: {problem}")]
    ExposeRange { value: String, problem: String },

    // Volumes and devices.
    #[error("invalid spec: {spec}: {problem}")]
    VolumeSpec { spec: String, problem: &'static str },
    #[error("invalid empty volume spec")]
    VolumeSpecEmpty,
    #[error("{0} is not an absolute path")]
    DevicePathNotAbsolute(String),
    #[error("bad format for path: {0}")]
    DevicePathFormat(String),
    #[error("bad mode specified: {0}")]
    DeviceMode(String),
    #[error("invalid device specification: {0}")]
    DeviceSpecification(String),

    // Files.
    /// Go's wording for a file that cannot be opened:
    /// `open /x: no such file or directory`.
    #[error("open {}: {}", path.display(), go_os_error(error))]
    ReadFile {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("invalid env file ({path}): {problem}")]
    KeyValueFile { path: PathBuf, problem: String },

    // Networks.
    #[error("no name set for network")]
    NetworkNameMissing,
    #[error("network {0:?} is specified multiple times")]
    NetworkRepeated(String),
    #[error(
        "conflicting options: cannot attach both user-defined and non-user-defined network-modes"
    )]
    NetworkKindsMixed,
    #[error("network-scoped aliases are only supported for user-defined networks")]
    AliasOnPredefinedNetwork,
    #[error("links are only supported for user-defined networks")]
    LinkOnPredefinedNetwork,
    #[error("conflicting options: cannot specify both --{flag} and per-network {what}")]
    NetworkOptionTwice {
        flag: &'static str,
        what: &'static str,
    },

    /// A check the Docker daemon makes; berth makes it before anything runs.
    #[error(transparent)]
    Validation(#[from] ValidationError),
}

impl OptionsError {
    pub(super) fn argument(flag: &'static str, value: &str, source: ValueError) -> Self {
        OptionsError::InvalidArgument {
            flag,
            value: value.to_owned(),
            source,
        }
    }

    /// A flag value rejected with one of Docker's own sentences.
    pub(super) fn docker(flag: &'static str, value: &str, message: String) -> Self {
        Self::argument(flag, value, ValueError::Docker(message))
    }
}

/// An OS error as Go prints it: the C library's text, lower-cased first
/// letter, no "(os error N)".
pub fn go_os_error(error: &std::io::Error) -> String {
    match error.raw_os_error() {
        Some(code) => {
            let text = nix::errno::Errno::from_raw(code).desc();
            let mut characters = text.chars();
            match characters.next() {
                Some(first) => first.to_lowercase().chain(characters).collect(),
                None => String::new(),
            }
        }
        None => error.to_string(),
    }
}
