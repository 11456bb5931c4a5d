//! Checks on `HostConfig` outside resources and networking (moby
//! `validateHostConfig` and the namespace checks of
//! `verifyPlatformContainerSettings`).

use super::{mounts, network, ValidationError};
use crate::container::capabilities::{is_known_capability, normalize_capability};
use crate::container::host_config::{container_of_mode, HostConfig};

pub(super) fn validate(host: &HostConfig) -> Result<(), ValidationError> {
    if host.auto_remove && !host.restart_policy.is_none() {
        return Err(ValidationError::AutoRemoveWithRestart);
    }
    for mount in host.mounts.iter().flatten() {
        mounts::validate_mount(mount)?;
    }
    for entry in host.extra_hosts.iter().flatten() {
        network::parse_extra_host(entry)?;
    }
    validate_port_bindings(host)?;
    validate_restart_policy(host)?;
    for (field, names) in [("CapAdd", &host.cap_add), ("CapDrop", &host.cap_drop)] {
        for name in names.iter().flatten() {
            if !is_known_capability(&normalize_capability(name)) {
                return Err(ValidationError::Capability {
                    field,
                    name: normalize_capability(name),
                });
            }
        }
    }
    let isolation = host.isolation.to_ascii_lowercase();
    if !matches!(isolation.as_str(), "" | "default" | "vm") {
        return Err(ValidationError::Isolation(host.isolation.clone()));
    }
    Ok(())
}

fn validate_restart_policy(host: &HostConfig) -> Result<(), ValidationError> {
    let policy = &host.restart_policy;
    match policy.name.as_str() {
        "" => Ok(()),
        "no" | "always" | "unless-stopped" if policy.maximum_retry_count != 0 => {
            Err(ValidationError::RetryCountNotAllowed(policy.name.clone()))
        }
        "no" | "always" | "unless-stopped" => Ok(()),
        "on-failure" if policy.maximum_retry_count < 0 => Err(ValidationError::NegativeRetryCount),
        "on-failure" => Ok(()),
        other => Err(ValidationError::RestartPolicy(other.to_owned())),
    }
}

/// Keys are `port[/proto]` with one port; host ports may be empty, one port or a
/// range (moby `validatePortBindings`).
fn validate_port_bindings(host: &HostConfig) -> Result<(), ValidationError> {
    for (key, bindings) in host.port_bindings.iter().flatten() {
        let port = split_proto_port(key);
        if !port.is_empty() && port.parse::<u16>().is_err() {
            return Err(ValidationError::PortSpecification(port.to_owned()));
        }
        for binding in bindings {
            let host_port = split_proto_port(&binding.host_port);
            if !host_port.is_empty() && parse_port_range(host_port).is_none() {
                return Err(ValidationError::PortSpecification(
                    binding.host_port.clone(),
                ));
            }
        }
    }
    Ok(())
}

/// The port part of `port/proto` (go-connections `SplitProtoPort`).
fn split_proto_port(text: &str) -> &str {
    let port = text.split('/').next().unwrap_or_default();
    if port.is_empty() {
        ""
    } else {
        port
    }
}

/// `start[-end]` with `start <= end` (go-connections `ParsePortRange`).
pub(crate) fn parse_port_range(text: &str) -> Option<(u16, u16)> {
    match text.split_once('-') {
        None => text.parse().ok().map(|port| (port, port)),
        Some((start, rest)) => {
            // Go splits on every '-' and reads the first two pieces.
            let end = rest.split('-').next().unwrap_or_default();
            let (start, end): (u16, u16) = (start.parse().ok()?, end.parse().ok()?);
            (start <= end).then_some((start, end))
        }
    }
}

/// Namespace modes, shm and OOM score (moby `verifyPlatformContainerSettings`).
pub(super) fn validate_platform(host: &HostConfig) -> Result<(), ValidationError> {
    if !valid_ipc_mode(&host.ipc_mode) {
        return Err(ValidationError::IpcMode(host.ipc_mode.clone()));
    }
    if !valid_pid_mode(&host.pid_mode) {
        return Err(ValidationError::PidMode(host.pid_mode.clone()));
    }
    if host.shm_size < 0 {
        return Err(ValidationError::ShmSize);
    }
    if !matches!(host.uts_mode.as_str(), "" | "host") {
        return Err(ValidationError::UtsMode(host.uts_mode.clone()));
    }
    if !matches!(host.userns_mode.as_str(), "" | "host") {
        return Err(ValidationError::UsernsMode(host.userns_mode.clone()));
    }
    if !(-1000..=1000).contains(&host.oom_score_adj) {
        return Err(ValidationError::OomScoreAdj(host.oom_score_adj));
    }
    for target in host.tmpfs.keys() {
        mounts::validate_tmpfs_target(target)?;
    }
    for spec in host.volumes_from.iter().flatten() {
        mounts::validate_volumes_from(spec)?;
    }
    if !matches!(host.cgroupns_mode.as_str(), "" | "private" | "host") {
        return Err(ValidationError::CgroupnsMode(host.cgroupns_mode.clone()));
    }
    host.security_opt
        .iter()
        .flatten()
        .try_for_each(|option| validate_security_option(option))
}

/// What the daemon understands in `SecurityOpt` (moby `parseSecurityOpt`); the
/// stage number is Docker's, telling a missing separator (1) from an unknown key or
/// bad value (2).
fn validate_security_option(option: &str) -> Result<(), ValidationError> {
    let invalid = |stage| ValidationError::SecurityOption {
        stage,
        option: option.to_owned(),
    };
    if option == "no-new-privileges" || option == "disable" {
        return Ok(());
    }
    let Some((key, value)) = option.split_once('=').or_else(|| option.split_once(':')) else {
        return Err(invalid(1));
    };
    match key {
        "label" | "apparmor" | "seccomp" => Ok(()),
        "no-new-privileges" | "writable-cgroups" if is_go_bool(value) => Ok(()),
        _ => Err(invalid(2)),
    }
}

/// The spellings Go's `strconv.ParseBool` accepts.
fn is_go_bool(value: &str) -> bool {
    matches!(
        value,
        "1" | "t" | "T" | "TRUE" | "true" | "True" | "0" | "f" | "F" | "FALSE" | "false" | "False"
    )
}

/// `""`, `none`, `private`, `shareable`, `host` or `container:<x>`.
pub(crate) fn valid_ipc_mode(mode: &str) -> bool {
    matches!(mode, "" | "none" | "private" | "shareable" | "host")
        || container_of_mode(mode).is_some_and(|name| !name.is_empty())
}

/// `""`, `host` or `container:<x>` (moby `PidMode.Valid`).
pub(crate) fn valid_pid_mode(mode: &str) -> bool {
    matches!(mode, "" | "host") || {
        let mut parts = mode.split(':');
        parts.next() == Some("container")
            && parts.next().is_some_and(|name| !name.is_empty())
            && parts.next().is_none()
    }
}
