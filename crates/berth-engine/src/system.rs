//! `info`: where state lives, what the host offers, and how many images and
//! containers there are, in Docker's `Info` field names. The CLI prints it;
//! the API server returns it (with the fields only the API has). And
//! `system df`: what images, containers and volumes hold on disk.

use std::collections::BTreeSet;

use berth_store::UsageCounter;
use serde_json::{json, Value};

use crate::containers::list_containers;
use crate::containers::state::Status;
use crate::{Engine, EngineError, ErrorKind};

/// What can stop `info`.
#[derive(Debug, thiserror::Error)]
pub enum SystemError {
    #[error("failed to read the host's uname")]
    Uname(#[source] nix::Error),
}

impl SystemError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Uname(_) => ErrorKind::Internal,
        }
    }
}

pub fn system_info(engine: &Engine) -> Result<Value, EngineError> {
    let images = engine.store().image_count()?;
    let containers = list_containers(engine.store(), engine.config())?;
    let count = |wanted: &[Status]| {
        containers
            .iter()
            .filter(|container| wanted.contains(&container.state.status))
            .count()
    };
    let uname = nix::sys::utsname::uname().map_err(SystemError::Uname)?;
    let accelerator = berth_vm::accel::detect();
    Ok(json!({
        "Containers": containers.len(),
        "ContainersRunning": count(&[Status::Running, Status::Restarting]),
        "ContainersPaused": count(&[Status::Paused]),
        "ContainersStopped": count(&[Status::Created, Status::Exited, Status::Dead]),
        "Images": images,
        "Driver": "overlay",
        "CgroupDriver": "cgroupfs",
        "CgroupVersion": cgroup_version(),
        "KernelVersion": uname.release().to_string_lossy(),
        "OperatingSystem": operating_system(),
        "OSType": "linux",
        "Architecture": uname.machine().to_string_lossy(),
        "NCPU": std::thread::available_parallelism().map_or(1, |count| count.get()),
        "MemTotal": memory_total(),
        "DockerRootDir": engine.root().display().to_string(),
        "RunRoot": engine.config().run_root.display().to_string(),
        "ServerVersion": env!("CARGO_PKG_VERSION"),
        "Name": uname.nodename().to_string_lossy(),
        // berth is its own runc; `vm` is its microVM backend.
        "Runtimes": {
            "runc": { "path": "berth" },
            crate::containers::vm::RUNTIME_NAME: { "path": "berth" },
        },
        "DefaultRuntime": crate::containers::vm::default_runtime()
            .ok()
            .flatten()
            .filter(|runtime| !runtime.is_empty())
            .unwrap_or_else(|| "runc".to_owned()),
        "BerthVmAccelerator": {
            "Name": accelerator.accelerator.qemu_name(),
            "Reason": accelerator.reason,
        },
    }))
}

/// "2" when /sys/fs/cgroup is a cgroup2 mount (unified), else "1".
fn cgroup_version() -> &'static str {
    match nix::sys::statfs::statfs("/sys/fs/cgroup") {
        Ok(stat) if stat.filesystem_type() == nix::sys::statfs::CGROUP2_SUPER_MAGIC => "2",
        _ => "1",
    }
}

fn operating_system() -> String {
    fs_err::read_to_string("/etc/os-release")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("PRETTY_NAME="))
                .map(|name| name.trim_matches('"').to_owned())
        })
        .unwrap_or_else(|| "Linux".to_owned())
}

/// The host's memory in bytes (/proc/meminfo MemTotal).
pub fn memory_total() -> u64 {
    fs_err::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("MemTotal:"))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
        })
        .map_or(0, |kib| kib * 1024)
}

/// One row of `system df`: how many, how many in use, the bytes of disk
/// they hold and the bytes removing the unused ones would free.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UsageSummary {
    pub total: usize,
    pub active: usize,
    pub size: u64,
    pub reclaimable: u64,
}

/// `system df`, in Docker's rows. Every size is disk as `du` counts it
/// (blocks, each inode once), not the sizes an image's metadata records:
///
/// - images: the layer directories and blobs under the root, content
///   that no image references included (what a killed load or pull left
///   and the next command has not removed yet); reclaimable is all but
///   what images used by a container need, i.e. what `image prune -a`
///   frees. Active: images some container uses.
/// - containers: their writable layers; reclaimable is the layers of
///   containers that are not running, paused or restarting (Docker's
///   rule).
/// - local volumes: their data; reclaimable is that of volumes no
///   container mounts.
/// - build cache: berth has none yet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiskUsage {
    pub images: UsageSummary,
    pub containers: UsageSummary,
    pub volumes: UsageSummary,
    pub build_cache: UsageSummary,
}

pub fn disk_usage(engine: &Engine) -> Result<DiskUsage, EngineError> {
    let store = engine.store();
    let containers = list_containers(store, engine.config())?;

    // Content of images some container uses, measured first so that what
    // they share with unused images counts as used.
    let used_images: BTreeSet<String> = containers
        .iter()
        .map(|container| container.record.image_id.clone())
        .collect();
    let images = store.images()?;
    let mut counter = UsageCounter::new();
    let mut used = 0;
    let (layers, blobs) = (store.layers(), store.blobs());
    for image in images
        .iter()
        .filter(|image| used_images.contains(&image.id.to_string()))
    {
        for chain_id in &image.layers {
            used += counter.measure(&layers.path(chain_id))?;
        }
        for digest in store.image_blobs(&image.id)? {
            used += counter.measure(&blobs.path(&digest))?;
        }
    }
    let mut unused = 0;
    for chain_id in layers.list()? {
        unused += counter.measure(&layers.path(&chain_id))?;
    }
    for digest in blobs.list()? {
        unused += counter.measure(&blobs.path(&digest))?;
    }
    let image_usage = UsageSummary {
        total: images.len(),
        active: images
            .iter()
            .filter(|image| used_images.contains(&image.id.to_string()))
            .count(),
        size: used + unused,
        reclaimable: unused,
    };

    let mut container_usage = UsageSummary {
        total: containers.len(),
        ..UsageSummary::default()
    };
    for container in &containers {
        let paths = crate::containers::paths::ContainerPaths::new(
            engine.root(),
            &engine.config().run_root,
            &container.record.id,
        );
        let size = berth_store::disk_usage(&paths.rootfs().upper)?;
        container_usage.size += size;
        let active = matches!(
            container.state.status,
            Status::Running | Status::Paused | Status::Restarting
        );
        if active {
            container_usage.active += 1;
        } else {
            container_usage.reclaimable += size;
        }
    }

    let volumes = store.volumes()?;
    let mut volume_usage = UsageSummary {
        total: volumes.len(),
        ..UsageSummary::default()
    };
    for volume in &volumes {
        let size =
            berth_store::disk_usage(&crate::volumes::volume_data(engine.root(), &volume.name))?;
        volume_usage.size += size;
        if crate::volumes::volume_users(engine, &volume.name)?.is_empty() {
            volume_usage.reclaimable += size;
        } else {
            volume_usage.active += 1;
        }
    }

    Ok(DiskUsage {
        images: image_usage,
        containers: container_usage,
        volumes: volume_usage,
        build_cache: UsageSummary::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorChain;

    #[test]
    fn a_failed_uname_is_berths_failure_with_its_cause() {
        let error = EngineError::from(SystemError::Uname(nix::Error::EFAULT));
        assert_eq!(error.kind(), ErrorKind::Internal);
        assert_eq!(
            ErrorChain(&error).to_string(),
            "failed to read the host's uname: EFAULT: Bad address"
        );
    }
}
