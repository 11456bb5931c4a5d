//! A bundle's `config.json` turned into what berth-runtime launches (a
//! [`ContainerSpec`]) plus what the OCI runtime itself does around the launch (cgroup,
//! sysctls, joined UTS namespace, hooks). Every field berth cannot honour is refused here,
//! before anything is made, with an error naming it.

mod mounts;
mod namespaces;
mod process;
mod resources;
mod seccomp;

use std::path::{Path, PathBuf};

use berth_runtime::cgroups::{CgroupVersion, Resources};
use berth_runtime::ContainerSpec;

use crate::config::{Hooks, Spec};
use crate::error::{OciError, Result};

pub use process::convert_process;
pub use resources::convert_resources;

/// The annotation that picks the microVM backend (issue 20); not available through this
/// runtime yet, so refused.
pub const ISOLATION_ANNOTATION: &str = "io.berth.isolation";

/// Where a container's cgroup goes when the bundle names none: below a parent of berth's
/// own, so that it is never confused with another engine's.
pub const DEFAULT_CGROUP_PARENT: &str = "berth-runc";

/// Everything `create` needs, resolved and validated.
#[derive(Debug)]
pub struct Plan {
    pub spec: ContainerSpec,
    /// Relative to the hierarchy roots.
    pub cgroup_path: PathBuf,
    pub resources: Resources,
    /// `linux.sysctl`, written inside the container's namespaces before it starts.
    pub sysctls: Vec<(String, String)>,
    /// A UTS namespace to join (`linux.namespaces[].path`), entered before the clone.
    pub join_uts: Option<PathBuf>,
    pub hooks: Hooks,
    pub rootfs: PathBuf,
}

/// Reads `<bundle>/config.json`.
pub fn read_config(bundle: &Path) -> Result<Spec> {
    let path = bundle.join("config.json");
    // std::fs: the error names the path itself (fs-err would name it twice).
    #[allow(clippy::disallowed_methods)]
    let bytes = std::fs::read(&path).map_err(|source| OciError::ReadConfig {
        path: path.clone(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|source| OciError::ParseConfig { path, source })
}

/// Converts `config` (from `bundle`) for container `id` on this machine's cgroup layout.
pub fn plan(bundle: &Path, id: &str, config: &Spec, cgroups: &CgroupVersion) -> Result<Plan> {
    check_platform(config)?;
    let root = config
        .root
        .as_ref()
        .ok_or_else(|| OciError::invalid("root", "the root must be set on Linux"))?;
    let rootfs = resolve_rootfs(bundle, &root.path)?;
    let linux = config.linux.clone().unwrap_or_default();
    let process = config.process.as_ref().ok_or_else(|| {
        OciError::invalid("process", "the process must be set to create a container")
    })?;
    for (key, value) in &config.annotations {
        if key == ISOLATION_ANNOTATION && value != "namespace" && value != "process" {
            return Err(OciError::unsupported(
                format!("annotations.{ISOLATION_ANNOTATION}"),
                format!("isolation {value:?} is not available through berth's OCI runtime yet (only namespace isolation)"),
            ));
        }
    }
    let namespaces = namespaces::convert(&linux)?;
    let mounts = mounts::convert(&config.mounts, bundle)?;
    let process = convert_process(process, &linux)?;
    if linux
        .rootfs_propagation
        .as_deref()
        .is_some_and(|mode| !matches!(mode, "private" | "rprivate" | ""))
    {
        return Err(OciError::unsupported(
            "linux.rootfsPropagation",
            format!(
                "{:?}: berth keeps the container's mounts private",
                linux.rootfs_propagation.as_deref().unwrap_or_default()
            ),
        ));
    }
    for (field, set) in [
        ("linux.mountLabel", linux.mount_label.is_some()),
        ("linux.intelRdt", linux.intel_rdt.is_some()),
        ("linux.personality", linux.personality.is_some()),
        ("linux.timeOffsets", linux.time_offsets.is_some()),
    ] {
        if set {
            return Err(OciError::unsupported(field, "not supported by berth"));
        }
    }
    let (resources, device_rules) = convert_resources(linux.resources.as_ref(), false)?;
    let devices = resources::device_nodes(&linux.devices)?;
    let cgroup_path = cgroup_path(&linux, id)?;
    let sysctls = namespaces::sysctls(&linux, &namespaces)?;
    let hooks = config.hooks.clone().unwrap_or_default();
    check_hooks(&hooks)?;
    let (cgroup_v1_hierarchies, cgroup_v2) = if mounts.cgroup {
        match cgroups {
            CgroupVersion::V1(hierarchies) => (
                hierarchies
                    .mount_points()
                    .iter()
                    .filter_map(|path| {
                        path.file_name()
                            .map(|name| name.to_string_lossy().into_owned())
                    })
                    .filter(|name| name != "systemd" && name != "unified")
                    .collect(),
                false,
            ),
            CgroupVersion::V2(_) => (Vec::new(), true),
        }
    } else {
        (Vec::new(), false)
    };
    let hostname = match &config.hostname {
        Some(name) if !name.is_empty() => {
            if namespaces.host_uts || namespaces.join_uts.is_some() {
                return Err(OciError::invalid(
                    "hostname",
                    "unable to set the hostname without a private UTS namespace",
                ));
            }
            name.clone()
        }
        // A new UTS namespace starts with the host's name, which stays.
        _ => nix::unistd::gethostname()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    let domainname = config.domainname.clone().unwrap_or_default();
    if !domainname.is_empty() && (namespaces.host_uts || namespaces.join_uts.is_some()) {
        return Err(OciError::invalid(
            "domainname",
            "unable to set the domain name without a private UTS namespace",
        ));
    }
    let spec = ContainerSpec {
        id: id.to_owned(),
        rootfs: rootfs.clone(),
        overlay: None,
        readonly_rootfs: root.readonly,
        hostname,
        process,
        mounts: mounts.user,
        etc_files: Vec::new(),
        network: namespaces.network.clone(),
        masked_paths: linux.masked_paths.clone(),
        readonly_paths: linux.readonly_paths.clone(),
        privileged: !mounts.sysfs_readonly,
        init: false,
        shm_size: mounts.shm_size.unwrap_or(64 << 20),
        cgroup_v1_hierarchies,
        cgroup_v2,
        cgroup_namespace: namespaces.cgroup,
        devices,
        device_rules: device_rules.clone(),
        host_namespaces: berth_runtime::spec::HostNamespaces {
            pid: namespaces.host_pid,
            ipc: namespaces.host_ipc,
            uts: namespaces.host_uts || namespaces.join_uts.is_some(),
        },
        no_shm: mounts.shm_size.is_none() && !mounts.shm_bound,
        joined_namespaces: berth_runtime::spec::JoinedNamespaces {
            pid: namespaces.join_pid.clone(),
            ipc: namespaces.join_ipc.clone(),
            shm_of: None,
        },
        domainname,
    };
    Ok(Plan {
        spec,
        cgroup_path,
        resources,
        sysctls,
        join_uts: namespaces.join_uts,
        hooks,
        rootfs,
    })
}

fn check_platform(config: &Spec) -> Result<()> {
    for (field, set) in [
        ("solaris", config.solaris.is_some()),
        ("windows", config.windows.is_some()),
        ("vm", config.vm.is_some()),
    ] {
        if set {
            return Err(OciError::unsupported(
                field,
                "berth runs Linux containers only",
            ));
        }
    }
    if config.oci_version.is_empty() {
        return Ok(());
    }
    if !config.oci_version.starts_with("1.") {
        return Err(OciError::unsupported(
            "ociVersion",
            format!(
                "{:?}: berth reads version 1 of the runtime specification",
                config.oci_version
            ),
        ));
    }
    Ok(())
}

/// `root.path`, relative to the bundle or absolute; a directory, not a symlink (runc's rule).
fn resolve_rootfs(bundle: &Path, path: &str) -> Result<PathBuf> {
    let joined = bundle.join(path);
    // std::fs: the error names the path itself (fs-err would name it twice).
    #[allow(clippy::disallowed_methods)]
    let metadata =
        std::fs::symlink_metadata(&joined).map_err(|source| OciError::InvalidRootfs {
            path: joined.clone(),
            source,
        })?;
    if !metadata.is_dir() {
        return Err(OciError::InvalidRootfs {
            path: joined,
            source: std::io::Error::other("not a directory (a symlink is not followed)"),
        });
    }
    #[allow(clippy::disallowed_methods)]
    std::fs::canonicalize(&joined).map_err(|source| OciError::InvalidRootfs {
        path: joined,
        source,
    })
}

/// `linux.cgroupsPath`: `/a/b` or `a/b` below the hierarchy root (cgroupfs's meaning);
/// systemd's `slice:prefix:name` needs `--systemd-cgroup`, which berth refuses.
fn cgroup_path(linux: &crate::config::Linux, id: &str) -> Result<PathBuf> {
    let Some(path) = linux
        .cgroups_path
        .as_deref()
        .filter(|path| !path.is_empty())
    else {
        return Ok(Path::new(DEFAULT_CGROUP_PARENT).join(id));
    };
    if path.contains(':') {
        return Err(OciError::unsupported(
            "linux.cgroupsPath",
            format!("{path:?} is a systemd cgroup path; berth supports only cgroupfs paths (no --systemd-cgroup)"),
        ));
    }
    let mut relative = PathBuf::new();
    for component in Path::new(path).components() {
        match component {
            std::path::Component::RootDir | std::path::Component::CurDir => {}
            std::path::Component::Normal(part) => relative.push(part),
            _ => {
                return Err(OciError::invalid(
                    "linux.cgroupsPath",
                    format!("{path:?} must stay below the cgroup root (no \"..\")"),
                ))
            }
        }
    }
    if relative.as_os_str().is_empty() {
        return Err(OciError::invalid(
            "linux.cgroupsPath",
            format!("{path:?} must name a cgroup below the root"),
        ));
    }
    Ok(relative)
}

/// createContainer and startContainer hooks run inside the container's mount namespace, from
/// its init, which berth's does not do yet.
fn check_hooks(hooks: &Hooks) -> Result<()> {
    for (field, list) in [
        ("hooks.createContainer", &hooks.create_container),
        ("hooks.startContainer", &hooks.start_container),
    ] {
        if !list.is_empty() {
            return Err(OciError::unsupported(
                field,
                "hooks in the container's namespaces are not supported by berth",
            ));
        }
    }
    for (kind, list) in [
        ("prestart", &hooks.prestart),
        ("createRuntime", &hooks.create_runtime),
        ("poststart", &hooks.poststart),
        ("poststop", &hooks.poststop),
    ] {
        for (index, hook) in list.iter().enumerate() {
            if !hook.path.starts_with('/') {
                return Err(OciError::invalid(
                    format!("hooks.{kind}[{index}].path"),
                    format!("{:?} is not an absolute path", hook.path),
                ));
            }
            if hook.timeout.is_some_and(|timeout| timeout <= 0) {
                return Err(OciError::invalid(
                    format!("hooks.{kind}[{index}].timeout"),
                    "must be greater than zero",
                ));
            }
        }
    }
    Ok(())
}
