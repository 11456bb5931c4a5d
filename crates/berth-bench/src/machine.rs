//! The machine a run measured, for the report's header.

use std::path::Path;

use crate::report::Machine;

fn read(path: &str) -> String {
    fs_err::read_to_string(path)
        .map(|text| text.trim().to_owned())
        .unwrap_or_default()
}

/// The first three fields of /proc/loadavg.
pub fn load_average() -> String {
    read("/proc/loadavg")
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn describe(work_dir: &Path) -> Machine {
    let cpuinfo = read("/proc/cpuinfo");
    let meminfo = read("/proc/meminfo");
    Machine {
        kernel: read("/proc/sys/kernel/osrelease"),
        cpus: std::thread::available_parallelism()
            .map(usize::from)
            .unwrap_or(1),
        cpu_model: cpuinfo
            .lines()
            .find_map(|line| line.strip_prefix("model name"))
            .and_then(|rest| rest.split_once(':'))
            .map(|(_, model)| model.trim().to_owned())
            .unwrap_or_default(),
        memory_bytes: meminfo
            .lines()
            .find_map(|line| line.strip_prefix("MemTotal:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kilobytes| kilobytes.parse::<u64>().ok())
            .map(|kilobytes| kilobytes * 1024)
            .unwrap_or(0),
        load_average_start: load_average(),
        load_average_end: String::new(),
        work_filesystem: filesystem(work_dir),
        cgroup: if Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
            "cgroup v2".to_owned()
        } else {
            "cgroup v1".to_owned()
        },
        spec_store_bypass: read("/sys/devices/system/cpu/vulnerabilities/spec_store_bypass"),
    }
}

/// The file system type of `path` by its statfs magic number.
pub fn filesystem(path: &Path) -> String {
    let Ok(path) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return "unknown".to_owned();
    };
    // SAFETY: an all-zero statfs is a valid value of this plain C struct.
    let mut stats: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is a NUL-terminated string and `stats` a writable
    // statfs, both alive across the call.
    if unsafe { libc::statfs(path.as_ptr(), &mut stats) } != 0 {
        return "unknown".to_owned();
    }
    match stats.f_type as u64 {
        0xEF53 => "ext4".to_owned(),
        0x5846_5342 => "xfs".to_owned(),
        0x9123_683E => "btrfs".to_owned(),
        0x0102_1994 => "tmpfs".to_owned(),
        0x794C_7630 => "overlayfs".to_owned(),
        0x2FC1_2FC1 => "zfs".to_owned(),
        other => format!("fs magic {other:#x}"),
    }
}

/// Bytes free for an unprivileged writer under `path`.
pub fn free_bytes(path: &Path) -> Option<u64> {
    let path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: an all-zero statvfs is a valid value of this plain C struct.
    let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and `stats` writable for the call.
    if unsafe { libc::statvfs(path.as_ptr(), &mut stats) } != 0 {
        return None;
    }
    Some(stats.f_bavail * stats.f_frsize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_is_described() {
        let machine = describe(Path::new("/"));
        assert!(machine.cpus >= 1);
        assert!(machine.memory_bytes > 0);
        assert!(!machine.kernel.is_empty());
        assert_eq!(machine.load_average_start.split_whitespace().count(), 3);
        assert!(free_bytes(Path::new("/")).is_some());
        assert_ne!(filesystem(Path::new("/proc")), "unknown");
    }
}
