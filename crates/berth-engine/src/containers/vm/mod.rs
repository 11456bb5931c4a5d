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

pub(crate) mod launch;
pub(crate) mod network;
pub mod runtime;
pub mod shim;

use berth_types::container::CreateRequest;

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

/// The guest's side of the container's endpoint: its address, prefix and
/// gateway (an address that does not parse leaves the guest without one,
/// which its first packet shows).
pub(crate) fn shim_network(
    endpoint: &crate::networks::record::Endpoint,
    embedded_dns: bool,
) -> shim::ShimNetwork {
    shim::ShimNetwork {
        guest: berth_vm::protocol::GuestNetwork {
            address: endpoint
                .address
                .parse()
                .unwrap_or(std::net::Ipv4Addr::UNSPECIFIED),
            prefix_len: endpoint.record.prefix_len,
            gateway: endpoint.record.gateway.parse().ok(),
            embedded_dns,
        },
        mac: endpoint.record.mac_address.clone(),
    }
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
    if request.config.tty {
        return refuse("--tty");
    }
    let network = host.network_mode.as_str();
    if network == "host" || network.starts_with("container:") {
        // A VM has a kernel and a network stack of its own.
        return Err(format!(
            "--network {network} is not supported with --isolation=vm: a VM container joins \
             berth's networks (or none)"
        ));
    }
    if request.networking_config.endpoints_config.len() > 1 {
        return refuse("more than one network");
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

/// What the merged settings (the image's included) ask of a VM container
/// that it cannot do yet.
pub(crate) fn refuse_unsupported_record(
    record: &super::record::ContainerRecord,
) -> Result<(), String> {
    if record.run.isolation != super::record::Isolation::Vm {
        return Ok(());
    }
    // A probe is an exec in the container, which a VM container does not
    // have yet: its health would only ever fail.
    if super::health::HealthSettings::of_record(record).is_some() {
        return Err(
            "health checks are not supported with --isolation=vm yet (the image's \
             HEALTHCHECK included: use --no-healthcheck)"
                .to_owned(),
        );
    }
    Ok(())
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
    fn what_a_vm_cannot_do_yet_is_refused_by_name() {
        let mut request = CreateRequest::default();
        assert_eq!(refuse_unsupported(&request), Ok(()));
        request.host_config.network_mode = "none".into();
        assert_eq!(refuse_unsupported(&request), Ok(()));
        type Change = fn(&mut CreateRequest);
        let cases: Vec<(&str, Change)> = vec![
            ("--tty", |r| r.config.tty = true),
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
