//! The microVM backend (`--isolation=vm`, `--runtime vm`): each container
//! runs in a QEMU microVM of its own (berth-vm), made for it and ended
//! with it.
//!
//! ```text
//! monitor ── launch.rs ──► berth __vm-shim   (shim.rs; the container's "first process"
//!    │                        │               as the monitor sees it: its pid, exit
//!    │ stdio pipes            │               code, stdio, cgroup)
//!    ◄────────────────────────┤ private mount + network namespaces:
//!                             │   the overlay root + /etc files + -v mounts (host side)
//!                             ├─► virtiofsd (the root share)
//!                             └─► QEMU microvm ── virtio-serial ── berth's agent (PID 1)
//!                                                                   └─ the container's process
//! ```
//!
//! The shim stands where a namespace container's first process stands, so
//! the monitor (logs, attach, restart policy, `--rm`, exit codes, events)
//! is the same for both: signals sent to the shim are relayed to the
//! process in the guest, SIGKILL ends the shim and so the VM (QEMU dies
//! with it, PR_SET_PDEATHSIG), and its exit code is the process's. The
//! engine's other services reach it through [`runtime::VmRuntime`].
//!
//! A VM warm pool member (`berth warm --isolation vm`) is such a shim
//! started before its container is known: its VM boots with an empty root
//! share, and the claim brings the container (`launch::MemberShim`,
//! `shim.rs`'s member mode; docs/ARCHITECTURE.md, *VM containers*).

pub mod exec;
pub(crate) mod launch;
pub(crate) mod network;
mod output;
mod relay;
pub mod runtime;
pub mod shim;
mod terminal;

use berth_types::container::CreateRequest;

/// Where the VM helpers (`berth __vm-shim`, `berth __vm-exec`) find what
/// their starter gave them: the request (JSON, to end of file, or a
/// member's channel), the pipe for the one start report, and with `-t` the
/// console socket.
pub const REQUEST_FD: i32 = 3;
pub const STATUS_FD: i32 = 4;
pub const CONSOLE_FD: i32 = 5;

/// A VM helper's start descriptors, its own.
pub(crate) struct StartDescriptors {
    pub request: std::os::fd::OwnedFd,
    pub status: std::fs::File,
    pub console: Option<std::os::fd::OwnedFd>,
}

impl StartDescriptors {
    /// Takes the descriptors at [`REQUEST_FD`], [`STATUS_FD`] and
    /// [`CONSOLE_FD`] (if open), close-on-exec, and closes every other one
    /// above the standard streams: nothing the starter left open may reach
    /// QEMU or virtiofsd (a pipe's write end held there would keep its
    /// reader waiting). Called first in the helper's life, before it opens
    /// anything.
    pub(crate) fn take() -> StartDescriptors {
        use std::os::fd::FromRawFd;
        // SAFETY: close_range and fcntl act on descriptor numbers only; no
        // object of this process owns any of them yet.
        let console_open = unsafe {
            libc::syscall(libc::SYS_close_range, CONSOLE_FD + 1, u32::MAX, 0);
            for fd in [REQUEST_FD, STATUS_FD, CONSOLE_FD] {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
            libc::fcntl(CONSOLE_FD, libc::F_GETFD) >= 0
        };
        // SAFETY: the starter placed these descriptors at these numbers for
        // this process alone, and nothing here owns them yet.
        unsafe {
            StartDescriptors {
                request: std::os::fd::OwnedFd::from_raw_fd(REQUEST_FD),
                status: std::fs::File::from_raw_fd(STATUS_FD),
                console: console_open.then(|| std::os::fd::OwnedFd::from_raw_fd(CONSOLE_FD)),
            }
        }
    }
}

/// `--runtime vm`: the name berth's microVM backend answers to.
pub const RUNTIME_NAME: &str = "vm";

/// Where the guest kernel and initramfs are cached: `BERTH_VM_CACHE`, else
/// `<root>/vm` (tests share one cache between their many roots).
pub(crate) fn guest_cache(root: &std::path::Path) -> std::path::PathBuf {
    match std::env::var_os("BERTH_VM_CACHE") {
        Some(dir) if !dir.is_empty() => dir.into(),
        _ => root.join("vm"),
    }
}

/// The guest's side of each of the container's endpoints, in the
/// container's order: the veth the engine connected into the shim's
/// namespace (`eth0`, `eth1`, …), the guest card's MAC, the address and
/// prefix, and, for the first only, the gateway of the default route (as a
/// namespace container's). An address that does not parse leaves the guest
/// without one, which its first packet shows.
///
/// A card's further addresses go with it: its IPv6 one on a network with
/// IPv6 (and the first network's IPv6 gateway as the default IPv6 route),
/// and its `--link-local-ip` ones, as a namespace container's veth has them.
pub(crate) fn shim_networks(
    endpoints: &[crate::networks::record::Endpoint],
    requests: &[crate::networks::NetworkRequest],
) -> Result<Vec<shim::ShimNetwork>, String> {
    endpoints
        .iter()
        .enumerate()
        .map(|(position, endpoint)| {
            let guest = guest_network(endpoint, requests, position == 0)?;
            Ok(shim::ShimNetwork {
                veth: crate::networks::container_device(position),
                network_id: endpoint.network_id.clone(),
                guest,
            })
        })
        .collect()
}

/// The guest card's settings for `endpoint` (see [`shim_networks`]);
/// `first`: the network with the default route.
pub(crate) fn guest_network(
    endpoint: &crate::networks::record::Endpoint,
    requests: &[crate::networks::NetworkRequest],
    first: bool,
) -> Result<berth_vm::protocol::GuestNetwork, String> {
    let record = &endpoint.record;
    let mut more_addresses = Vec::new();
    if let Ok(address) = record.ipv6_address.parse() {
        more_addresses.push((std::net::IpAddr::V6(address), record.ipv6_prefix_len));
    }
    let link_local = requests
        .iter()
        .filter(|request| request.network_id == endpoint.network_id)
        .flat_map(|request| &request.link_local_ips);
    for text in link_local {
        more_addresses
            .push(berth_net::ipam::parse_link_local(text).map_err(|error| error.to_string())?);
    }
    Ok(berth_vm::protocol::GuestNetwork {
        mac: network::guest_mac(&record.mac_address)?,
        address: endpoint
            .address
            .parse()
            .unwrap_or(std::net::Ipv4Addr::UNSPECIFIED),
        prefix_len: record.prefix_len,
        gateway: first.then(|| record.gateway.parse().ok()).flatten(),
        more_addresses,
        ipv6_gateway: first.then(|| record.ipv6_gateway.parse().ok()).flatten(),
    })
}

/// The guest's memory when the container has no `--memory`.
const DEFAULT_MEMORY_MIB: u64 = 256;

/// The least memory a guest gets: Debian's kernel and the agent need
/// about 40 MiB under TCG before the container's process.
const MIN_MEMORY_MIB: u64 = 96;

/// The guest's memory for `record`'s container: its `--memory`, else the
/// default.
pub(crate) fn guest_memory_mib(record: &super::record::ContainerRecord) -> u32 {
    guest_memory_for_limit(match record.run.resources.memory {
        Some(berth_runtime::cgroups::Limit::Value(bytes)) => bytes,
        _ => 0,
    })
}

/// The guest's memory for a container limited to `limit` bytes (0: none):
/// the limit is the VM's size (its page cache included, as a cgroup's).
fn guest_memory_for_limit(limit: u64) -> u32 {
    let mib = if limit == 0 {
        DEFAULT_MEMORY_MIB
    } else {
        limit.div_ceil(1 << 20).max(MIN_MEMORY_MIB)
    };
    u32::try_from(mib).unwrap_or(u32::MAX)
}

/// What a VM container cannot do yet, refused by name at create (never
/// accepted and ignored); the message says what works instead.
pub(crate) fn refuse_unsupported(request: &CreateRequest) -> Result<(), String> {
    let host = &request.host_config;
    let refuse = |what: &str| {
        Err(format!(
            "{what} is not supported with --isolation=vm yet (the microVM backend, issue 16)"
        ))
    };
    let network = host.network_mode.as_str();
    if network == "host" || network.starts_with("container:") {
        // A VM has a kernel and a network stack of its own.
        return Err(format!(
            "--network {network} is not supported with --isolation=vm: a VM container joins \
             berth's networks (or none)"
        ));
    }
    if host.privileged {
        return refuse("--privileged");
    }
    if host
        .resources
        .devices
        .as_ref()
        .is_some_and(|devices| !devices.is_empty())
    {
        return refuse("--device");
    }
    // The host's cgroup holds QEMU, not the guest's processes.
    if host
        .resources
        .device_cgroup_rules
        .as_ref()
        .is_some_and(|rules| !rules.is_empty())
    {
        return refuse("--device-cgroup-rule");
    }
    // The guest's card has a MAC of its own (see `network.rs`), not this one.
    if !request.config.mac_address.is_empty()
        || request
            .networking_config
            .endpoints_config
            .values()
            .any(|endpoint| !endpoint.mac_address.is_empty())
    {
        return refuse("--mac-address");
    }
    for (flag, mode) in [
        ("--pid", &host.pid_mode),
        ("--ipc", &host.ipc_mode),
        ("--uts", &host.uts_mode),
    ] {
        if !mode.is_empty() && mode != "private" {
            return refuse(&format!("{flag} {mode}"));
        }
    }
    if host.init == Some(true) {
        return refuse("--init");
    }
    if !host.sysctls.is_empty() {
        return refuse("--sysctl");
    }
    if host.shm_size != 0 {
        return refuse("--shm-size");
    }
    if host.cgroupns_mode == "host" {
        return refuse("--cgroupns host");
    }
    let resources = &host.resources;
    if resources.pids_limit.is_some_and(|limit| limit > 0) {
        return refuse("--pids-limit");
    }
    if resources.memory_reservation != 0 {
        return refuse("--memory-reservation");
    }
    if resources.memory_swap != 0 && resources.memory_swap != -1 {
        return refuse("--memory-swap");
    }
    Ok(())
}

/// daemon.json's `default-runtime` in berth's config file (`vm` makes every
/// container without `--runtime`/`--isolation` a VM container); `None`
/// when the file or the key is absent.
pub fn default_runtime() -> Result<Option<String>, String> {
    let path = crate::networks::config_file();
    let text = match fs_err::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error.to_string()),
    };
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|error| format!("malformed config file {}: {error}", path.display()))?;
    match value.get("default-runtime") {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(runtime)) => Ok(Some(runtime.clone())),
        Some(other) => Err(format!(
            "default-runtime in {} must be a string, not {other}",
            path.display()
        )),
    }
}

/// `request` with the configured default runtime where it names neither a
/// runtime nor an isolation (Docker's `default-runtime`).
pub(crate) fn with_default_runtime(
    request: &CreateRequest,
) -> Result<std::borrow::Cow<'_, CreateRequest>, String> {
    let host = &request.host_config;
    let chosen = !host.runtime.is_empty()
        || !(host.isolation.is_empty() || host.isolation.eq_ignore_ascii_case("default"));
    match default_runtime()? {
        Some(runtime) if !chosen && !runtime.is_empty() => {
            let mut resolved = request.clone();
            resolved.host_config.runtime = runtime;
            Ok(std::borrow::Cow::Owned(resolved))
        }
        _ => Ok(std::borrow::Cow::Borrowed(request)),
    }
}

/// For a VM container (`request` resolved with the default runtime) on a
/// host without a usable KVM: the create's warning that its VM runs under
/// TCG emulation and why (unless `BERTH_VM_ACCEL=tcg` asked for it).
pub(crate) fn accelerator_warning(request: &CreateRequest) -> Option<String> {
    let host = &request.host_config;
    if super::record::Isolation::of_request(&host.isolation, &host.runtime)
        != super::record::Isolation::Vm
    {
        return None;
    }
    let choice = berth_vm::accel::detect();
    if choice.accelerator != berth_vm::Accelerator::Tcg || choice.requested {
        return None;
    }
    Some(format!(
        "VM containers run under TCG emulation here ({}): each VM boots in seconds, not \
         milliseconds",
        choice.reason
    ))
}

/// `--mount type=virtiofs` (Docker Desktop's form): for a VM container a
/// bind, which is how every bind reaches its guest (over virtio-fs, from the
/// shim's tree); a namespace container has no VM to share into, so it is
/// refused there rather than taken as something it is not.
pub(crate) fn resolve_virtiofs_mounts(
    request: &CreateRequest,
    isolation: super::record::Isolation,
) -> Result<std::borrow::Cow<'_, CreateRequest>, String> {
    use berth_types::container::mount::{TYPE_BIND, TYPE_VIRTIOFS};
    let mounts = request.host_config.mounts.iter().flatten();
    if !mounts.clone().any(|mount| mount.r#type == TYPE_VIRTIOFS) {
        return Ok(std::borrow::Cow::Borrowed(request));
    }
    if isolation != super::record::Isolation::Vm {
        return Err(
            "mount type \"virtiofs\" is for VM containers (--isolation=vm): use type=bind"
                .to_owned(),
        );
    }
    let mut resolved = request.clone();
    for mount in resolved.host_config.mounts.iter_mut().flatten() {
        if mount.r#type == TYPE_VIRTIOFS {
            mount.r#type = TYPE_BIND.to_owned();
        }
    }
    Ok(std::borrow::Cow::Owned(resolved))
}

/// The guest is x86-64 (`qemu-system-x86_64`): a VM container's image must
/// be for linux/amd64 (an image that names no platform is taken as that).
pub(crate) fn refuse_foreign_image(
    reference: &str,
    config: &berth_types::image::ImageConfig,
) -> Result<(), String> {
    let os = if config.os.is_empty() {
        "linux"
    } else {
        &config.os
    };
    if os == "linux" && matches!(config.architecture.as_str(), "" | "amd64") {
        return Ok(());
    }
    let platform = match &config.variant {
        Some(variant) => format!("{os}/{}/{variant}", config.architecture),
        None => format!("{os}/{}", config.architecture),
    };
    Err(format!(
        "image {reference} is for {platform}: a VM container's guest is linux/amd64 \
         (qemu-system-x86_64) and cannot run it"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_limit_sizes_the_guest() {
        assert_eq!(guest_memory_for_limit(0), 256);
        assert_eq!(guest_memory_for_limit(512 << 20), 512);
        assert_eq!(guest_memory_for_limit((300 << 20) + 1), 301);
        // Below what the guest needs to boot: the floor.
        assert_eq!(guest_memory_for_limit(16 << 20), 96);
    }

    #[test]
    fn only_amd64_images_run_in_the_guest() {
        let config = |architecture: &str, variant: Option<&str>| berth_types::image::ImageConfig {
            architecture: architecture.into(),
            os: "linux".into(),
            variant: variant.map(Into::into),
            ..Default::default()
        };
        assert_eq!(
            refuse_foreign_image("busybox", &config("amd64", None)),
            Ok(())
        );
        assert_eq!(refuse_foreign_image("busybox", &config("", None)), Ok(()));
        let error = refuse_foreign_image("arm", &config("arm64", Some("v8"))).unwrap_err();
        assert!(
            error.starts_with("image arm is for linux/arm64/v8:"),
            "{error}"
        );
    }

    #[test]
    fn what_a_vm_cannot_do_yet_is_refused_by_name() {
        let mut request = CreateRequest::default();
        assert_eq!(refuse_unsupported(&request), Ok(()));
        request.host_config.network_mode = "none".into();
        assert_eq!(refuse_unsupported(&request), Ok(()));
        // Several networks at create (`--network a --network b`): a card each.
        let mut several = CreateRequest::default();
        several.host_config.network_mode = "front".into();
        for name in ["front", "back"] {
            several
                .networking_config
                .endpoints_config
                .insert(name.into(), Default::default());
        }
        assert_eq!(refuse_unsupported(&several), Ok(()));
        type Change = fn(&mut CreateRequest);
        let cases: Vec<(&str, Change)> = vec![
            ("--network host", |r| {
                r.host_config.network_mode = "host".into()
            }),
            ("--network container:web", |r| {
                r.host_config.network_mode = "container:web".into()
            }),
            ("--privileged", |r| r.host_config.privileged = true),
            ("--pid host", |r| r.host_config.pid_mode = "host".into()),
            ("--init", |r| r.host_config.init = Some(true)),
            ("--mac-address", |r| {
                r.config.mac_address = "02:42:ac:11:00:09".into()
            }),
            ("--device-cgroup-rule", |r| {
                r.host_config.resources.device_cgroup_rules = Some(vec!["c 1:3 r".into()])
            }),
        ];
        for (flag, change) in cases {
            let mut request = request.clone();
            change(&mut request);
            let error = refuse_unsupported(&request).unwrap_err();
            assert!(error.contains(flag), "{flag}: {error}");
        }
    }
}
