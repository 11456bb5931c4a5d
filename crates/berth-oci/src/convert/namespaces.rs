//! `linux.namespaces`: which namespaces are new, shared with the host (absent) or joined
//! (`path`, as Kubernetes pods join their sandbox's), and the `linux.sysctl` each allows.

use std::path::PathBuf;

use berth_runtime::NetworkMode;

use crate::config::Linux;
use crate::error::{OciError, Result};

/// The namespaces of a container, as berth-runtime takes them.
#[derive(Debug, Clone)]
pub(super) struct Namespaces {
    pub network: NetworkMode,
    pub host_pid: bool,
    pub host_ipc: bool,
    pub host_uts: bool,
    pub join_pid: Option<PathBuf>,
    pub join_ipc: Option<PathBuf>,
    pub join_uts: Option<PathBuf>,
    pub cgroup: bool,
    /// A network namespace of its own (new or joined).
    pub own_network: bool,
}

const KNOWN: &[&str] = &[
    "pid", "network", "mount", "ipc", "uts", "user", "cgroup", "time",
];

pub(super) fn convert(linux: &Linux) -> Result<Namespaces> {
    let mut seen = std::collections::BTreeMap::new();
    for (index, namespace) in linux.namespaces.iter().enumerate() {
        if !KNOWN.contains(&namespace.kind.as_str()) {
            return Err(OciError::invalid(
                format!("linux.namespaces[{index}].type"),
                format!("namespace type {:?} does not exist", namespace.kind),
            ));
        }
        let path = namespace.path.as_deref().filter(|path| !path.is_empty());
        if let Some(path) = path {
            if !path.starts_with('/') {
                return Err(OciError::invalid(
                    format!("linux.namespaces[{index}].path"),
                    format!("{path:?} is not an absolute path"),
                ));
            }
            if let Err(error) = fs_err::metadata(path) {
                return Err(OciError::invalid(
                    format!("linux.namespaces[{index}].path"),
                    format!("{path:?}: {}", error.kind()),
                ));
            }
        }
        if seen
            .insert(namespace.kind.as_str(), path.map(PathBuf::from))
            .is_some()
        {
            return Err(OciError::invalid(
                format!("linux.namespaces[{index}]"),
                format!("duplicate namespace type {:?}", namespace.kind),
            ));
        }
    }
    if seen.contains_key("user") || !linux.uid_mappings.is_empty() || !linux.gid_mappings.is_empty()
    {
        return Err(OciError::unsupported(
            "linux.namespaces: user",
            "user namespaces (and linux.uidMappings/gidMappings) are not supported by berth yet",
        ));
    }
    if seen.contains_key("time") {
        return Err(OciError::unsupported(
            "linux.namespaces: time",
            "time namespaces are not supported by berth",
        ));
    }
    match seen.get("mount") {
        Some(None) => {}
        Some(Some(path)) => {
            return Err(OciError::unsupported(
                "linux.namespaces: mount",
                format!("joining the mount namespace {path:?} is not supported by berth"),
            ))
        }
        None => {
            return Err(OciError::unsupported(
                "linux.namespaces: mount",
                "berth always gives a container a mount namespace of its own; a config without one is not supported",
            ))
        }
    }
    if let Some(Some(path)) = seen.get("cgroup") {
        return Err(OciError::unsupported(
            "linux.namespaces: cgroup",
            format!("joining the cgroup namespace {path:?} is not supported by berth"),
        ));
    }
    let network = match seen.get("network") {
        None => NetworkMode::Host,
        Some(None) => NetworkMode::New,
        Some(Some(path)) => NetworkMode::Join(path.clone()),
    };
    Ok(Namespaces {
        own_network: network != NetworkMode::Host,
        network,
        host_pid: !seen.contains_key("pid"),
        host_ipc: !seen.contains_key("ipc"),
        host_uts: !seen.contains_key("uts"),
        join_pid: seen.get("pid").cloned().flatten(),
        join_ipc: seen.get("ipc").cloned().flatten(),
        join_uts: seen.get("uts").cloned().flatten(),
        cgroup: seen.contains_key("cgroup"),
    })
}

/// `linux.sysctl`: only keys of namespaces the container has of its own (runc's rule: a
/// sysctl of a shared namespace would change the host).
pub(super) fn sysctls(linux: &Linux, namespaces: &Namespaces) -> Result<Vec<(String, String)>> {
    let own_ipc = !namespaces.host_ipc;
    let own_uts = !namespaces.host_uts;
    let mut sysctls = Vec::new();
    for (key, value) in &linux.sysctl {
        let allowed = if key.starts_with("net.") {
            namespaces.own_network
        } else if key.starts_with("fs.mqueue.")
            || matches!(
                key.as_str(),
                "kernel.msgmax"
                    | "kernel.msgmnb"
                    | "kernel.msgmni"
                    | "kernel.sem"
                    | "kernel.shmall"
                    | "kernel.shmmax"
                    | "kernel.shmmni"
                    | "kernel.shm_rmid_forced"
            )
        {
            own_ipc
        } else if key == "kernel.domainname" || key == "kernel.hostname" {
            own_uts
        } else {
            return Err(OciError::unsupported(
                format!("linux.sysctl.{key}"),
                "sysctl is not in a separate kernel namespace",
            ));
        };
        if !allowed {
            return Err(OciError::invalid(
                format!("linux.sysctl.{key}"),
                "sysctl is not allowed as the container shares that namespace with the host",
            ));
        }
        if key.contains("..") || key.contains('/') {
            return Err(OciError::invalid(
                format!("linux.sysctl.{key}"),
                "not a sysctl name",
            ));
        }
        sysctls.push((key.clone(), value.clone()));
    }
    Ok(sysctls)
}
