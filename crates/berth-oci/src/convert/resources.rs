//! `linux.resources` → berth-runtime's cgroup [`Resources`] (the same v1 units Docker
//! uses; v2 conversions happen in the cgroup manager), `linux.resources.devices` → device
//! rules, `linux.devices` → device nodes. Controls berth's cgroup managers lack are refused.

use std::path::PathBuf;

use berth_runtime::cgroups::{Limit, Resources};
use berth_runtime::devices::{Access, DeviceKind, DeviceNode, DeviceRule, DEFAULT_RULES};

use crate::config::{self, Device, DeviceCgroup};
use crate::error::{OciError, Result};

/// The resources and device rules of `resources` (absent: none set, Docker's default device
/// rules). As runc does, the devices every container needs (`/dev/null`, the ptys, …) are
/// allowed after the bundle's own rules. With `update`, `for_update` leaves the devices alone.
pub fn convert_resources(
    resources: Option<&config::Resources>,
    for_update: bool,
) -> Result<(Resources, Vec<DeviceRule>)> {
    let mut out = Resources::default();
    let Some(resources) = resources else {
        let rules = DEFAULT_RULES.to_vec();
        if !for_update {
            out.devices = Some(rules.clone());
        }
        return Ok((out, rules));
    };
    if let Some(memory) = &resources.memory {
        let field = "linux.resources.memory";
        out.memory = memory.limit.map(limit);
        out.memory_reservation = memory.reservation.map(limit);
        out.memory_swap = memory.swap.map(limit);
        for (name, set) in [
            ("kernel", memory.kernel.is_some()),
            ("kernelTCP", memory.kernel_tcp.is_some()),
            ("swappiness", memory.swappiness.is_some()),
            ("disableOOMKiller", memory.disable_oom_killer == Some(true)),
            ("useHierarchy", memory.use_hierarchy == Some(true)),
            (
                "checkBeforeUpdate",
                memory.check_before_update == Some(true),
            ),
        ] {
            if set {
                return Err(OciError::unsupported(
                    format!("{field}.{name}"),
                    "not supported by berth",
                ));
            }
        }
    }
    if let Some(cpu) = &resources.cpu {
        let field = "linux.resources.cpu";
        out.cpu_shares = cpu.shares.filter(|shares| *shares != 0);
        out.cpu_quota = cpu.quota.filter(|quota| *quota != 0).map(limit);
        out.cpu_period = cpu.period.filter(|period| *period != 0);
        out.cpu_realtime_runtime = cpu.realtime_runtime.filter(|runtime| *runtime != 0);
        out.cpu_realtime_period = cpu.realtime_period.filter(|period| *period != 0);
        out.cpuset_cpus = cpu.cpus.clone().filter(|cpus| !cpus.is_empty());
        out.cpuset_mems = cpu.mems.clone().filter(|mems| !mems.is_empty());
        for (name, set) in [
            ("burst", cpu.burst.is_some()),
            ("idle", cpu.idle.is_some_and(|idle| idle != 0)),
        ] {
            if set {
                return Err(OciError::unsupported(
                    format!("{field}.{name}"),
                    "not supported by berth",
                ));
            }
        }
    }
    if let Some(pids) = &resources.pids {
        out.pids_limit = Some(Limit::from_docker_pids(pids.limit));
    }
    if let Some(block_io) = &resources.block_io {
        let field = "linux.resources.blockIO";
        out.blkio_weight = block_io.weight.filter(|weight| *weight != 0);
        for (name, set) in [
            ("leafWeight", block_io.leaf_weight.is_some()),
            ("weightDevice", !block_io.weight_device.is_empty()),
            (
                "throttleReadBpsDevice",
                !block_io.throttle_read_bps_device.is_empty(),
            ),
            (
                "throttleWriteBpsDevice",
                !block_io.throttle_write_bps_device.is_empty(),
            ),
            (
                "throttleReadIOPSDevice",
                !block_io.throttle_read_iops_device.is_empty(),
            ),
            (
                "throttleWriteIOPSDevice",
                !block_io.throttle_write_iops_device.is_empty(),
            ),
        ] {
            if set {
                return Err(OciError::unsupported(
                    format!("{field}.{name}"),
                    "not supported by berth",
                ));
            }
        }
    }
    for (name, set) in [
        ("hugepageLimits", !resources.hugepage_limits.is_empty()),
        ("network", resources.network.is_some()),
        ("rdma", resources.rdma.is_some()),
        ("unified", !resources.unified.is_empty()),
    ] {
        if set {
            return Err(OciError::unsupported(
                format!("linux.resources.{name}"),
                "not supported by berth",
            ));
        }
    }
    let mut rules = Vec::new();
    for (index, device) in resources.devices.iter().enumerate() {
        rules.push(device_rule(device, index)?);
    }
    if for_update {
        if !rules.is_empty() {
            return Err(OciError::unsupported(
                "linux.resources.devices",
                "the device rules of a running container cannot be changed by berth",
            ));
        }
        return Ok((out, rules));
    }
    // runc's specconv: the devices every container needs come after the bundle's rules.
    rules.extend(DEFAULT_RULES.iter().skip(1).copied());
    out.devices = Some(rules.clone());
    Ok((out, rules))
}

fn limit(value: i64) -> Limit {
    u64::try_from(value).map_or(Limit::Unlimited, Limit::Value)
}

fn device_rule(device: &DeviceCgroup, index: usize) -> Result<DeviceRule> {
    let field = format!("linux.resources.devices[{index}]");
    let kind = match device.kind.as_deref().unwrap_or("a") {
        "a" | "" => DeviceKind::All,
        "b" => DeviceKind::Block,
        "c" => DeviceKind::Char,
        other => {
            return Err(OciError::invalid(
                format!("{field}.type"),
                format!("invalid device type {other:?}"),
            ))
        }
    };
    let number = |value: Option<i64>, name: &str| -> Result<Option<u32>> {
        match value {
            None | Some(-1) => Ok(None),
            Some(value) => u32::try_from(value).map(Some).map_err(|_| {
                OciError::invalid(
                    format!("{field}.{name}"),
                    format!("invalid device number {value}"),
                )
            }),
        }
    };
    let access = match device.access.as_deref() {
        None | Some("") => Access::ALL,
        Some(letters) => Access::parse(letters).ok_or_else(|| {
            OciError::invalid(
                format!("{field}.access"),
                format!("invalid access {letters:?}"),
            )
        })?,
    };
    Ok(DeviceRule {
        allow: device.allow,
        kind,
        major: number(device.major, "major")?,
        minor: number(device.minor, "minor")?,
        access,
    })
}

/// `linux.devices`: nodes made in the container's /dev.
pub(super) fn device_nodes(devices: &[Device]) -> Result<Vec<DeviceNode>> {
    devices
        .iter()
        .enumerate()
        .filter(|(_, device)| !is_default_node(device))
        .map(|(index, device)| {
            let field = format!("linux.devices[{index}]");
            let kind = match device.kind.as_str() {
                "c" | "u" => DeviceKind::Char,
                "b" => DeviceKind::Block,
                other => {
                    return Err(OciError::unsupported(
                        format!("{field}.type"),
                        format!("device type {other:?} is not supported by berth (c, u and b are)"),
                    ))
                }
            };
            if !device.path.starts_with("/dev/") {
                return Err(OciError::invalid(
                    format!("{field}.path"),
                    format!("{:?} is not below /dev", device.path),
                ));
            }
            let number = |value: i64, name: &str| {
                u32::try_from(value).map_err(|_| {
                    OciError::invalid(
                        format!("{field}.{name}"),
                        format!("invalid device number {value}"),
                    )
                })
            };
            Ok(DeviceNode {
                path: PathBuf::from(&device.path),
                kind,
                major: number(device.major, "major")?,
                minor: number(device.minor, "minor")?,
                mode: device.file_mode.unwrap_or(0o666) & 0o7777,
                uid: device.uid.unwrap_or(0),
                gid: device.gid.unwrap_or(0),
            })
        })
        .collect()
}

/// The nodes berth-runtime always makes (`/dev/null`, …): listed again in a bundle (as
/// containerd and Kubernetes do), they are already there.
fn is_default_node(device: &Device) -> bool {
    berth_runtime::devices::DEFAULT_NODES
        .iter()
        .any(|(name, major, minor)| {
            device.path.strip_prefix("/dev/") == Some(name)
                && u64::try_from(device.major).ok() == Some(*major)
                && u64::try_from(device.minor).ok() == Some(*minor)
                && matches!(device.kind.as_str(), "c" | "u")
        })
}
