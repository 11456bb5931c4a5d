//! Turning a stored record into the runtime's `ContainerSpec` at each start:
//! user lookup in the image, capabilities, seccomp (compiled once, cached),
//! mounts, limits and the per-container /etc files.

use std::path::{Path, PathBuf};

use berth_runtime::capabilities::{self, CapabilityError};
use berth_runtime::cgroups::{CgroupVersion, Resources};
use berth_runtime::devices::{self, DeviceError, DeviceNode, DeviceRule};
use berth_runtime::seccomp::{compile_cached, Profile, ProfileSource, SeccompError};
use berth_runtime::spec::{DEFAULT_MASKED_PATHS, DEFAULT_READONLY_PATHS};
use berth_runtime::user::UserError;
use berth_runtime::{ContainerSpec, MountKind, MountSpec, NetworkMode, ProcessSpec, Rlimit};

use super::paths::ContainerPaths;
use super::record::{ContainerRecord, MountSource, RunSettings, SeccompChoice};
use crate::{EngineError, ErrorKind};

/// What can stop a start before any process exists. The runtime's own
/// errors are Docker's words (`unable to find user x: …`,
/// `invalid capability: …`) and pass through as they are.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error(transparent)]
    User(#[from] UserError),
    #[error(transparent)]
    Capability(#[from] CapabilityError),
    #[error("invalid seccomp profile")]
    SeccompProfile(#[source] SeccompError),
    #[error("failed to compile the seccomp profile")]
    CompileSeccomp(#[source] SeccompError),
    #[error("invalid ulimit type: {name}")]
    InvalidUlimit { name: String },
    #[error(transparent)]
    Device(#[from] DeviceError),
    #[error("failed to create {path:?}")]
    CreateDirectory {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// One of the container's /etc files; the error names the file.
    #[error(transparent)]
    WriteFile(std::io::Error),
}

impl SpecError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Capability(_)
            | Self::SeccompProfile(_)
            | Self::InvalidUlimit { .. }
            | Self::Device(_) => ErrorKind::InvalidArgument,
            Self::User(_)
            | Self::CompileSeccomp(_)
            | Self::CreateDirectory { .. }
            | Self::WriteFile(_) => ErrorKind::Internal,
        }
    }
}

/// Resolves everything that can fail before any process exists.
pub fn build_spec(
    record: &ContainerRecord,
    paths: &ContainerPaths,
    layers: &[PathBuf],
    root: &Path,
    volumes_directory: &Path,
    cgroups: &CgroupVersion,
) -> Result<ContainerSpec, EngineError> {
    let run = &record.run;
    let rootfs_paths = paths.rootfs();
    let rootfs = rootfs_paths.merged.clone();
    // Users are looked up in the image's files (top layer first), since the
    // root is only mounted inside the container.
    let user = resolve_user_in_layers(layers, &rootfs_paths.upper, &run.user, &run.group_add)
        .map_err(SpecError::from)?;

    let capability_set = capabilities::resolve(&run.cap_add, &run.cap_drop, run.privileged)
        .map_err(SpecError::from)?;
    let capability_names: Vec<String> = capability_set
        .iter()
        .map(|capability| capabilities::name(*capability).to_owned())
        .collect();
    let custom;
    let source = match &run.seccomp {
        SeccompChoice::Unconfined => None,
        // Docker: --privileged runs without the default filter.
        SeccompChoice::Default if run.privileged => None,
        SeccompChoice::Default => Some(ProfileSource::Default),
        SeccompChoice::Custom(json) => {
            custom = Profile::from_json(json.as_bytes()).map_err(SpecError::SeccompProfile)?;
            (!custom.is_unconfined()).then_some(ProfileSource::Parsed(&custom))
        }
    };
    let seccomp = source
        .map(|source| compile_cached(source, &capability_names, &root.join("cache/seccomp")))
        .transpose()
        .map_err(SpecError::CompileSeccomp)?;

    let mut env = run.env.clone();
    if !env.iter().any(|entry| entry.starts_with("HOME=")) {
        env.push(format!("HOME={}", user.home));
    }
    if !env.iter().any(|entry| entry.starts_with("HOSTNAME=")) {
        env.insert(0, format!("HOSTNAME={}", run.hostname));
    }
    if run.tty && !env.iter().any(|entry| entry.starts_with("TERM=")) {
        env.push("TERM=xterm".to_owned());
    }

    let rlimits = run
        .ulimits
        .iter()
        .map(|limit| {
            Ok(Rlimit {
                resource: berth_runtime::spec::rlimit_resource(&limit.name).ok_or_else(|| {
                    SpecError::InvalidUlimit {
                        name: limit.name.clone(),
                    }
                })?,
                soft: limit.soft,
                hard: limit.hard,
            })
        })
        .collect::<Result<Vec<_>, SpecError>>()?;

    let mounts = run
        .mounts
        .iter()
        .map(|request| {
            let kind = match &request.source {
                MountSource::Bind {
                    host_path,
                    recursive,
                } => MountKind::Bind {
                    source: PathBuf::from(host_path),
                    recursive: *recursive,
                },
                MountSource::Volume { name } => MountKind::Bind {
                    source: volumes_directory.join(name).join("_data"),
                    recursive: true,
                },
                MountSource::Tmpfs { size, mode, .. } => MountKind::Tmpfs {
                    size: *size,
                    mode: *mode,
                },
            };
            let is_tmpfs = matches!(request.source, MountSource::Tmpfs { .. });
            let tmpfs_noexec = matches!(request.source, MountSource::Tmpfs { exec: false, .. });
            MountSpec {
                kind,
                destination: PathBuf::from(&request.destination),
                readonly: request.readonly,
                nosuid: is_tmpfs,
                nodev: is_tmpfs,
                noexec: tmpfs_noexec,
            }
        })
        .collect();

    let (devices, device_rules) = device_settings(run)?;

    let network = match run.network_mode.as_str() {
        "host" => NetworkMode::Host,
        _ => NetworkMode::New,
    };
    let (cgroup_v1_hierarchies, cgroup_v2) = match cgroups {
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
    };
    let overlay = Some(berth_runtime::spec::OverlaySpec {
        lower: layers.to_vec(),
        upper: rootfs_paths.upper.clone(),
        work: rootfs_paths.work.clone(),
    });
    for directory in [
        &rootfs_paths.upper,
        &rootfs_paths.work,
        &rootfs_paths.merged,
    ] {
        fs_err::create_dir_all(directory).map_err(|source| SpecError::CreateDirectory {
            path: directory.clone(),
            source,
        })?;
    }
    Ok(ContainerSpec {
        id: record.id.clone(),
        rootfs,
        overlay,
        readonly_rootfs: run.readonly_rootfs,
        hostname: run.hostname.clone(),
        process: ProcessSpec {
            args: run.args.clone(),
            env,
            cwd: if run.working_dir.is_empty() {
                "/".to_owned()
            } else {
                run.working_dir.clone()
            },
            uid: user.uid,
            gid: user.gid,
            additional_gids: user.additional_gids,
            capabilities: capability_set,
            no_new_privileges: run.no_new_privileges,
            rlimits,
            seccomp,
            tty: run.tty,
            console_size: None,
            oom_score_adj: (run.oom_score_adj != 0).then_some(run.oom_score_adj),
        },
        mounts,
        etc_files: vec![
            (paths.hostname(), PathBuf::from("/etc/hostname")),
            (paths.hosts(), PathBuf::from("/etc/hosts")),
            (paths.resolv_conf(), PathBuf::from("/etc/resolv.conf")),
        ],
        network,
        masked_paths: if run.privileged {
            Vec::new()
        } else {
            DEFAULT_MASKED_PATHS.iter().map(|p| p.to_string()).collect()
        },
        readonly_paths: if run.privileged {
            Vec::new()
        } else {
            DEFAULT_READONLY_PATHS
                .iter()
                .map(|p| p.to_string())
                .collect()
        },
        privileged: run.privileged,
        init: run.init,
        shm_size: if run.shm_size == 0 {
            64 << 20
        } else {
            run.shm_size
        },
        cgroup_v1_hierarchies,
        cgroup_v2,
        cgroup_namespace: !run.cgroupns_host,
        devices,
        device_rules,
        host_namespaces: berth_runtime::spec::HostNamespaces {
            pid: run.pid_mode == "host",
            ipc: run.ipc_mode == "host",
            uts: run.uts_mode == "host",
        },
        no_shm: run.ipc_mode == "none",
        joined_namespaces: Default::default(),
        domainname: run.domainname.clone(),
    })
}

/// The container's device nodes and rules for this start: each `--device`
/// looked up on the host now (Docker resolves them at every start: a device
/// may have been replugged with other numbers), then `--device-cgroup-rule`,
/// after Docker's defaults. `--privileged` (as moby's `WithDevices`) gets
/// every host device, then the `--device` ones at other paths, and no
/// restriction at all.
fn device_settings(run: &RunSettings) -> Result<(Vec<DeviceNode>, Vec<DeviceRule>), SpecError> {
    let mut nodes = if run.privileged {
        devices::host_devices()
    } else {
        Vec::new()
    };
    let mut rules = Vec::new();
    for mapping in &run.devices {
        let found =
            devices::devices_from_path(&mapping.host_path, Path::new(&mapping.container_path))
                .map_err(SpecError::from)?;
        if run.privileged && mapping.host_path == mapping.container_path {
            // Already there with the host's devices.
            continue;
        }
        rules.extend(found.iter().map(|node| node.rule(mapping.access)));
        nodes.extend(found);
    }
    rules.extend(run.device_cgroup_rules.iter().copied());
    Ok((nodes, devices::container_rules(run.privileged, &rules)))
}

/// What the container's cgroup is created with at a start: the stored
/// limits and the device rules of this start's spec.
pub fn cgroup_resources(record: &ContainerRecord, spec: &ContainerSpec) -> Resources {
    Resources {
        devices: Some(spec.device_rules.clone()),
        ..record.run.resources.clone()
    }
}

/// `-u` resolution against /etc/passwd and /etc/group as the container
/// will see them: the container's own changes first, then the layers from
/// the top. Each file is read inside its layer's directory, so a symlink
/// in the image cannot point the lookup at host files.
fn resolve_user_in_layers(
    layers: &[PathBuf],
    upper: &Path,
    user: &str,
    group_add: &[String],
) -> Result<berth_runtime::user::ExecUser, UserError> {
    let mut view = tempfile_view();
    let directories: Vec<&Path> = std::iter::once(upper)
        .chain(layers.iter().rev().map(PathBuf::as_path))
        .collect();
    for file in ["etc/passwd", "etc/group"] {
        for directory in &directories {
            if let Ok(Some(bytes)) =
                berth_runtime::in_root::read_in_root(directory, Path::new(file))
            {
                view.files.push((file, bytes));
                break;
            }
        }
    }
    berth_runtime::user::resolve_user_from(
        &view.text("etc/passwd"),
        &view.text("etc/group"),
        user,
        group_add,
    )
}

struct FileView {
    files: Vec<(&'static str, Vec<u8>)>,
}

impl FileView {
    fn text(&self, name: &str) -> String {
        self.files
            .iter()
            .find(|(file, _)| *file == name)
            .map(|(_, bytes)| String::from_utf8_lossy(bytes).into_owned())
            .unwrap_or_default()
    }
}

fn tempfile_view() -> FileView {
    FileView { files: Vec::new() }
}

/// Writes /etc/hostname, /etc/hosts and /etc/resolv.conf for the container
/// (the hosts file without the container's address, which is only known
/// once it is connected: see `write_hosts`).
pub fn write_etc_files(
    record: &ContainerRecord,
    paths: &ContainerPaths,
) -> Result<(), EngineError> {
    let run = &record.run;
    write_file(paths.hostname(), format!("{}\n", run.hostname))?;
    write_hosts(record, paths, &[], &[])?;
    let host_resolv = fs_err::read_to_string("/etc/resolv.conf").unwrap_or_default();
    Ok(write_file(
        paths.resolv_conf(),
        resolv_conf(run, &host_resolv),
    )?)
}

/// Writes one of the container's /etc files. They are bind-mounted into the container, whose
/// processes may run as any user: 0644 as dockerd's, whatever berth's own umask (0077).
fn write_file(path: PathBuf, content: String) -> Result<(), SpecError> {
    let write = || -> std::io::Result<()> {
        let mut file = fs_err::File::create(&path)?;
        std::io::Write::write_all(&mut file, content.as_bytes())?;
        file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(
            crate::permissions::SHARED_FILE,
        ))
    };
    write().map_err(SpecError::WriteFile)
}

/// Docker's /etc/hosts: localhost lines, `--add-host` entries, the lines of
/// its legacy links (`links::hosts_lines`), then the container's own
/// addresses on its first network (IPv4, then IPv6 on a network with IPv6,
/// as libnetwork writes them) with its hostname.
pub fn write_hosts(
    record: &ContainerRecord,
    paths: &ContainerPaths,
    addresses: &[std::net::IpAddr],
    link_lines: &[String],
) -> Result<(), EngineError> {
    let run = &record.run;
    let mut hosts = String::from(
        "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nff00::0\tip6-mcastprefix\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n",
    );
    for entry in &run.extra_hosts {
        if let Some((name, address)) = entry.split_once(':') {
            hosts.push_str(&format!("{address}\t{name}\n"));
        }
    }
    for line in link_lines {
        hosts.push_str(line);
        hosts.push('\n');
    }
    for address in addresses {
        hosts.push_str(&format!("{address}\t{}\n", run.hostname));
    }
    Ok(write_file(paths.hosts(), hosts)?)
}

/// True when one of the container's networks is user-defined: it then
/// asks berth's embedded DNS (127.0.0.11), which knows the containers of
/// all its networks (as Docker's resolver serves a container with any
/// endpoint outside the default bridge, whichever network came first).
pub fn uses_embedded_dns(run: &super::record::RunSettings) -> bool {
    run.networks.iter().any(|network| network.name != "bridge")
}

/// The embedded resolver's address inside the container.
pub const EMBEDDED_DNS: &str = "127.0.0.11";

/// Docker's resolv.conf rules: `--dns*` replace the host's values; on the
/// default bridge, the host's nameservers on loopback (unreachable from the
/// container) are dropped, and Google's are used when none is left; on
/// user-defined networks the container asks the embedded resolver, which
/// forwards to the servers it would otherwise have had.
pub fn resolv_conf(run: &super::record::RunSettings, host: &str) -> String {
    let lines = |key: &str| -> Vec<String> {
        host.lines()
            .filter_map(|line| {
                let mut words = line.split_whitespace();
                (words.next() == Some(key)).then(|| words.collect::<Vec<_>>().join(" "))
            })
            .collect()
    };
    let search = if run.dns_search.is_empty() {
        lines("search").last().cloned().unwrap_or_default()
    } else {
        run.dns_search.join(" ")
    };
    let options = if run.dns_options.is_empty() {
        lines("options").join(" ")
    } else {
        run.dns_options.join(" ")
    };
    let mut text = String::new();
    if !search.is_empty() {
        text.push_str(&format!("search {search}\n"));
    }
    if run.network_mode == "host" && run.dns.is_empty() {
        return host.to_owned();
    }
    if uses_embedded_dns(run) {
        text.push_str(&format!("nameserver {EMBEDDED_DNS}\n"));
        let options = if options.is_empty() {
            "ndots:0".to_owned()
        } else {
            format!("ndots:0 {options}")
        };
        text.push_str(&format!("options {options}\n"));
        return text;
    }
    let mut servers: Vec<String> = if run.dns.is_empty() {
        lines("nameserver")
            .into_iter()
            .filter(|server| {
                !server
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|address| address.is_loopback())
            })
            .collect()
    } else {
        run.dns.clone()
    };
    if servers.is_empty() {
        servers = vec!["8.8.8.8".to_owned(), "8.8.4.4".to_owned()];
    }
    for server in servers {
        text.push_str(&format!("nameserver {server}\n"));
    }
    if !options.is_empty() {
        text.push_str(&format!("options {options}\n"));
    }
    text
}

/// The servers the embedded resolver forwards to: `--dns`, else the host's.
pub fn embedded_dns_upstreams(run: &super::record::RunSettings) -> Vec<std::net::SocketAddr> {
    if run.dns.is_empty() {
        let host = fs_err::read_to_string("/etc/resolv.conf").unwrap_or_default();
        berth_net::dns::upstreams_from_resolv_conf(&host)
    } else {
        run.dns
            .iter()
            .filter_map(|server| server.parse::<std::net::IpAddr>().ok())
            .map(|address| std::net::SocketAddr::new(address, 53))
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ErrorChain;

    #[test]
    fn the_runtimes_words_pass_through_and_causes_follow() {
        let user = SpecError::from(UserError::NoUser("nosuch".to_owned()));
        assert_eq!(
            EngineError::from(user).to_string(),
            "unable to find user nosuch: no matching entries in passwd file"
        );
        let profile = Profile::from_json(b"{\"defaultAction\": ").unwrap_err();
        let error = EngineError::from(SpecError::SeccompProfile(profile));
        assert_eq!(error.kind(), ErrorKind::InvalidArgument);
        assert_eq!(error.to_string(), "invalid seccomp profile");
        let chain = ErrorChain(&error).to_string();
        assert!(
            chain.starts_with("invalid seccomp profile: failed to parse seccomp profile: EOF"),
            "{chain}"
        );
        let ulimit = SpecError::InvalidUlimit {
            name: "nofiles".to_owned(),
        };
        assert_eq!(ulimit.to_string(), "invalid ulimit type: nofiles");
        assert_eq!(ulimit.kind(), ErrorKind::InvalidArgument);
        let directory = SpecError::CreateDirectory {
            path: PathBuf::from("/c/upper"),
            source: std::io::Error::from_raw_os_error(libc::ENOSPC),
        };
        assert_eq!(directory.kind(), ErrorKind::Internal);
        assert_eq!(
            ErrorChain(&directory).to_string(),
            "failed to create \"/c/upper\": No space left on device (os error 28)"
        );
    }
}
