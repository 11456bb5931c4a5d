//! `info`: where state lives, what the host offers, and how many images and
//! containers there are, in Docker's `Info` field names. The CLI prints it;
//! the API server returns it (with the fields only the API has).

use serde_json::{json, Value};

use crate::containers::list_containers;
use crate::containers::state::Status;
use crate::{Engine, EngineError};

pub fn system_info(engine: &Engine) -> Result<Value, EngineError> {
    let images = engine.store().image_count()?;
    let containers = list_containers(engine.store(), engine.config())?;
    let count = |wanted: &[Status]| {
        containers
            .iter()
            .filter(|container| wanted.contains(&container.state.status))
            .count()
    };
    let uname = nix::sys::utsname::uname().map_err(|error| {
        EngineError::InvalidArgument(format!("failed to read the host's uname: {error}"))
    })?;
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
    std::fs::read_to_string("/etc/os-release")
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
    std::fs::read_to_string("/proc/meminfo")
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
