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
    let mut user_mounts = mounts.user;
    let (cgroup_v1_hierarchies, cgroup_v2) = match (mounts.cgroup, namespaces.cgroup) {
        (false, _) => (Vec::new(), false),
        // In its own cgroup namespace the container mounts the hierarchies anew: their
        // roots are its cgroup.
        (true, true) => match cgroups {
            CgroupVersion::V1(hierarchies) => (v1_names(hierarchies), false),
            CgroupVersion::V2(_) => (Vec::new(), true),
        },
        // In the host's, a fresh mount would show the host's whole tree: as runc does, the
        // container's own cgroup directories are bound there instead.
        (true, false) => {
            let binds = cgroup_binds(cgroups, &cgroup_path, &rootfs, mounts.cgroup_readonly);
            user_mounts.splice(0..0, binds);
            (Vec::new(), false)
        }
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
        mounts: user_mounts,
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

/// The v1 hierarchies by the name their mount takes: a controller list (`cpu,cpuacct`) or
/// `name=` for a named one (`name=systemd`).
fn v1_names(hierarchies: &berth_runtime::cgroups::V1Hierarchies) -> Vec<String> {
    hierarchies
        .mount_points()
        .iter()
        .filter_map(|path| {
            path.file_name()
                .map(|name| name.to_string_lossy().into_owned())
        })
        .filter(|name| name != "unified")
        .map(|name| {
            if name == "systemd" {
                "name=systemd".to_owned()
            } else {
                name
            }
        })
        .collect()
}

/// `/sys/fs/cgroup` for a container without a cgroup namespace: on v1 a tmpfs with each
/// hierarchy's directory of the container bound below it, on v2 the container's directory.
fn cgroup_binds(
    cgroups: &CgroupVersion,
    cgroup_path: &Path,
    rootfs: &Path,
    readonly: bool,
) -> Vec<berth_runtime::MountSpec> {
    use berth_runtime::{MountKind, MountSpec};
    let bind = |source: PathBuf, destination: PathBuf| MountSpec {
        kind: MountKind::Bind {
            source,
            recursive: false,
        },
        destination,
        readonly,
        nosuid: true,
        nodev: true,
        noexec: true,
    };
    let root = Path::new("/sys/fs/cgroup");
    match cgroups {
        CgroupVersion::V1(hierarchies) => {
            let mut mounts = vec![MountSpec {
                kind: MountKind::Tmpfs {
                    size: None,
                    mode: Some(0o755),
                },
                destination: root.to_owned(),
                readonly: false,
                nosuid: true,
                nodev: true,
                noexec: true,
            }];
            for point in hierarchies.mount_points() {
                let Some(name) = point.file_name() else {
                    continue;
                };
                if name == "unified" {
                    continue;
                }
                mounts.push(bind(point.join(cgroup_path), root.join(name)));
            }
            if readonly {
                // The tmpfs read-only too, once the binds are on it: the tmpfs bound onto
                // itself with what is below it, and that bind's top remounted read-only.
                let mut top = bind(rootfs.join("sys/fs/cgroup"), root.to_owned());
                top.kind = MountKind::Bind {
                    source: rootfs.join("sys/fs/cgroup"),
                    recursive: true,
                };
                mounts.push(top);
            }
            mounts
        }
        CgroupVersion::V2(unified) => vec![bind(unified.root.join(cgroup_path), root.to_owned())],
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use berth_runtime::cgroups::V2Root;
    use berth_runtime::NetworkMode;
    use serde_json::json;

    fn v2() -> CgroupVersion {
        CgroupVersion::V2(V2Root {
            root: PathBuf::from("/sys/fs/cgroup"),
            controllers: Vec::new(),
        })
    }

    /// A bundle directory with a `rootfs` and `config` (merged over a minimal valid one).
    fn plan_for(edit: serde_json::Value) -> (tempfile::TempDir, Result<Plan>) {
        let dir = tempfile::tempdir().unwrap();
        fs_err::create_dir_all(dir.path().join("rootfs")).unwrap();
        let mut config = json!({
            "ociVersion": "1.0.2",
            "process": {"args": ["true"], "cwd": "/", "user": {"uid": 0, "gid": 0}},
            "root": {"path": "rootfs"},
            "mounts": [
                {"destination": "/proc", "type": "proc", "source": "proc"},
                {"destination": "/dev", "type": "tmpfs", "source": "tmpfs"},
                {"destination": "/dev/pts", "type": "devpts", "source": "devpts"},
                {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue"},
                {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["ro"]}
            ],
            "linux": {"namespaces": [{"type": "mount"}, {"type": "pid"}, {"type": "network"}]}
        });
        merge(&mut config, edit);
        let spec: Spec = serde_json::from_value(config).unwrap();
        let plan = plan(dir.path(), "c1", &spec, &v2());
        (dir, plan)
    }

    fn merge(target: &mut serde_json::Value, edit: serde_json::Value) {
        match (target, edit) {
            (serde_json::Value::Object(target), serde_json::Value::Object(edit)) => {
                for (key, value) in edit {
                    merge(target.entry(key).or_insert(serde_json::Value::Null), value);
                }
            }
            (target, edit) => *target = edit,
        }
    }

    fn error_of(edit: serde_json::Value) -> String {
        let (_dir, plan) = plan_for(edit);
        plan.unwrap_err().to_string()
    }

    #[test]
    fn a_minimal_bundle_converts() {
        let (dir, plan) = plan_for(json!({}));
        let plan = plan.unwrap();
        assert_eq!(
            plan.spec.rootfs,
            fs_err::canonicalize(dir.path().join("rootfs")).unwrap()
        );
        assert_eq!(plan.cgroup_path, Path::new("berth-runc/c1"));
        assert_eq!(plan.spec.network, NetworkMode::New);
        assert!(!plan.spec.host_namespaces.pid);
        assert!(plan.spec.host_namespaces.ipc && plan.spec.host_namespaces.uts);
        assert!(plan.spec.no_shm, "no /dev/shm asked for");
        assert!(!plan.spec.privileged, "sysfs is read-only");
        assert!(plan.spec.process.capabilities.is_empty());
        // No rules in the bundle: everything denied, then the devices every container needs.
        let rules = plan.resources.devices.as_ref().unwrap();
        assert_eq!(rules.len(), berth_runtime::devices::DEFAULT_RULES.len());
        assert!(!rules[0].allow);
    }

    #[test]
    fn namespaces_join_by_path_and_refuse_what_berth_lacks() {
        let (_dir, plan) = plan_for(json!({"linux": {"namespaces": [
            {"type": "mount"}, {"type": "network", "path": "/proc/self/ns/net"}, {"type": "ipc", "path": "/proc/self/ns/ipc"}
        ]}}));
        let plan = plan.unwrap();
        assert_eq!(
            plan.spec.network,
            NetworkMode::Join(PathBuf::from("/proc/self/ns/net"))
        );
        assert_eq!(
            plan.spec.joined_namespaces.ipc,
            Some(PathBuf::from("/proc/self/ns/ipc"))
        );
        assert!(plan.spec.host_namespaces.pid);
        let unknown =
            error_of(json!({"linux": {"namespaces": [{"type": "mount"}, {"type": "bogus"}]}}));
        assert!(
            unknown.contains("linux.namespaces[1].type") && unknown.contains("bogus"),
            "{unknown}"
        );
        assert!(
            error_of(json!({"linux": {"namespaces": [{"type": "mount"}, {"type": "user"}]}}))
                .contains("user")
        );
        assert!(
            error_of(json!({"linux": {"namespaces": [{"type": "pid"}]}}))
                .contains("mount namespace")
        );
        assert!(error_of(
            json!({"linux": {"namespaces": [{"type": "mount"}, {"type": "net", "path": "/nope"}]}})
        )
        .contains("net"));
        assert!(error_of(json!({"linux": {"namespaces": [{"type": "mount"}, {"type": "network", "path": "/nope"}]}})).contains("/nope"));
        assert!(error_of(
            json!({"linux": {"namespaces": [{"type": "mount"}, {"type": "pid"}, {"type": "pid"}]}})
        )
        .contains("duplicate"));
    }

    #[test]
    fn hostname_needs_a_uts_namespace() {
        let error = error_of(json!({"hostname": "h"}));
        assert!(error.starts_with("hostname:"), "{error}");
        let (_dir, plan) = plan_for(
            json!({"hostname": "h", "linux": {"namespaces": [{"type": "mount"}, {"type": "uts"}]}}),
        );
        assert_eq!(plan.unwrap().spec.hostname, "h");
    }

    #[test]
    fn capability_sets_must_be_berths_one_set() {
        let caps = json!(["CAP_KILL", "CAP_CHOWN"]);
        let (_dir, plan) = plan_for(
            json!({"process": {"capabilities": {"bounding": caps, "effective": caps, "permitted": caps}}}),
        );
        assert_eq!(plan.unwrap().spec.process.capabilities.len(), 2);
        let error = error_of(
            json!({"process": {"capabilities": {"bounding": caps, "effective": ["CAP_KILL"], "permitted": caps}}}),
        );
        assert!(
            error.starts_with("process.capabilities.effective"),
            "{error}"
        );
        let error = error_of(
            json!({"process": {"capabilities": {"bounding": caps, "effective": caps, "permitted": caps, "ambient": caps}}}),
        );
        assert!(error.starts_with("process.capabilities.ambient"), "{error}");
        let error = error_of(json!({"process": {"capabilities": {"bounding": ["CAP_NOPE"]}}}));
        assert!(error.contains("CAP_NOPE"), "{error}");
    }

    #[test]
    fn cgroup_paths_are_cgroupfs_paths_below_the_root() {
        let (_dir, plan) = plan_for(json!({"linux": {"cgroupsPath": "/default/c1"}}));
        assert_eq!(plan.unwrap().cgroup_path, Path::new("default/c1"));
        let (_dir, plan) = plan_for(json!({"linux": {"cgroupsPath": "kube/pod1/c1"}}));
        assert_eq!(plan.unwrap().cgroup_path, Path::new("kube/pod1/c1"));
        assert!(error_of(json!({"linux": {"cgroupsPath": "/a/../../b"}})).contains("\"..\""));
        assert!(
            error_of(json!({"linux": {"cgroupsPath": "system.slice:x:y"}})).contains("systemd")
        );
    }

    #[test]
    fn resources_convert_and_unknown_controls_are_refused() {
        let (_dir, plan) = plan_for(json!({"linux": {"resources": {
            "memory": {"limit": 1048576, "swap": -1},
            "cpu": {"shares": 512, "quota": 50000, "period": 100000, "cpus": "0"},
            "pids": {"limit": 10},
            "devices": [{"allow": false, "access": "rwm"}, {"allow": true, "type": "c", "major": 10, "minor": 229, "access": "rw"}]
        }}}));
        let plan = plan.unwrap();
        use berth_runtime::cgroups::Limit;
        assert_eq!(plan.resources.memory, Some(Limit::Value(1048576)));
        assert_eq!(plan.resources.memory_swap, Some(Limit::Unlimited));
        assert_eq!(plan.resources.cpu_shares, Some(512));
        assert_eq!(plan.resources.cpu_quota, Some(Limit::Value(50000)));
        assert_eq!(plan.resources.cpuset_cpus.as_deref(), Some("0"));
        assert_eq!(plan.resources.pids_limit, Some(Limit::Value(10)));
        let rules = plan.resources.devices.unwrap();
        assert!(!rules[0].allow && rules[1].allow && rules[1].major == Some(10));
        for (edit, field) in [
            (
                json!({"memory": {"kernel": 1}}),
                "linux.resources.memory.kernel",
            ),
            (
                json!({"hugepageLimits": [{"pageSize": "2MB", "limit": 1}]}),
                "linux.resources.hugepageLimits",
            ),
            (
                json!({"unified": {"memory.high": "1"}}),
                "linux.resources.unified",
            ),
            (
                json!({"blockIO": {"throttleReadBpsDevice": [{"major": 8, "minor": 0, "rate": 1}]}}),
                "linux.resources.blockIO.throttleReadBpsDevice",
            ),
            (
                json!({"devices": [{"allow": true, "type": "x"}]}),
                "linux.resources.devices[0].type",
            ),
        ] {
            let error = error_of(json!({"linux": {"resources": edit}}));
            assert!(error.starts_with(field), "{field}: {error}");
        }
    }

    #[test]
    fn seccomp_in_the_specs_form_compiles_and_notify_is_refused() {
        let (_dir, plan) = plan_for(json!({"linux": {"seccomp": {
            "defaultAction": "SCMP_ACT_ALLOW",
            "syscalls": [{"names": ["mkdir"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]
        }}}));
        assert!(plan.unwrap().spec.process.seccomp.is_some());
        let error = error_of(
            json!({"linux": {"seccomp": {"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": "/x"}}}),
        );
        assert!(error.starts_with("linux.seccomp.listenerPath"), "{error}");
        let error = error_of(
            json!({"linux": {"seccomp": {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["read"], "action": "SCMP_ACT_NOTIFY"}]}}}),
        );
        assert!(
            error.starts_with("linux.seccomp.syscalls[0].action"),
            "{error}"
        );
    }

    #[test]
    fn other_refusals_name_their_field() {
        for (edit, field) in [
            (json!({"process": {"args": []}}), "process.args"),
            (json!({"process": {"cwd": "relative"}}), "process.cwd"),
            (
                json!({"process": {"apparmorProfile": "docker-default"}}),
                "process.apparmorProfile",
            ),
            (
                json!({"process": {"rlimits": [{"type": "RLIMIT_BOGUS", "soft": 1, "hard": 1}]}}),
                "process.rlimits[0].type",
            ),
            (
                json!({"process": {"user": {"umask": 63}}}),
                "process.user.umask",
            ),
            (
                json!({"hooks": {"startContainer": [{"path": "/bin/true"}]}}),
                "hooks.startContainer",
            ),
            (
                json!({"hooks": {"prestart": [{"path": "relative"}]}}),
                "hooks.prestart[0].path",
            ),
            (
                json!({"linux": {"sysctl": {"kernel.panic": "1"}}}),
                "linux.sysctl.kernel.panic",
            ),
            (
                json!({"linux": {"sysctl": {"kernel.shmmax": "1"}}}),
                "linux.sysctl.kernel.shmmax",
            ),
            (
                json!({"linux": {"rootfsPropagation": "shared"}}),
                "linux.rootfsPropagation",
            ),
            (
                json!({"linux": {"devices": [{"type": "p", "path": "/dev/fifo"}]}}),
                "linux.devices[0].type",
            ),
            (
                json!({"annotations": {"io.berth.isolation": "vm"}}),
                "annotations.io.berth.isolation",
            ),
            (json!({"windows": {}}), "windows"),
            (json!({"ociVersion": "2.0.0"}), "ociVersion"),
            (json!({"root": {"path": "missing"}}), "invalid rootfs"),
        ] {
            let error = error_of(edit.clone());
            assert!(error.starts_with(field), "{edit}: {error}");
        }
    }
}
