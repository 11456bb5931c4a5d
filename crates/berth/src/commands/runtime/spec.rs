//! `spec`: a starting `config.json` that berth runs as written: `sh` on a terminal in
//! `rootfs`, read-only, new pid/network/ipc/uts/mount namespaces, a few capabilities (no
//! ambient set: berth refuses one), Docker's masked and read-only paths.

use serde_json::json;

use super::cli::SpecArgs;

pub fn run(args: &SpecArgs) -> anyhow::Result<i32> {
    let path = args.bundle.join("config.json");
    if path.exists() {
        anyhow::bail!("File {} exists. Remove it first", path.display());
    }
    let capabilities = ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"];
    let config = json!({
        "ociVersion": berth_oci::state::OCI_VERSION,
        "process": {
            "terminal": true,
            "user": {"uid": 0, "gid": 0},
            "args": ["sh"],
            "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm"],
            "cwd": "/",
            "capabilities": {
                "bounding": capabilities,
                "effective": capabilities,
                "permitted": capabilities
            },
            "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
            "noNewPrivileges": true
        },
        "root": {"path": "rootfs", "readonly": true},
        "hostname": "berth",
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
             "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
            {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
             "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
            {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
             "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
            {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue",
             "options": ["nosuid", "noexec", "nodev"]},
            {"destination": "/sys", "type": "sysfs", "source": "sysfs",
             "options": ["nosuid", "noexec", "nodev", "ro"]},
            {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
             "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]}
        ],
        "linux": {
            "resources": {"devices": [{"allow": false, "access": "rwm"}]},
            "namespaces": [
                {"type": "pid"}, {"type": "network"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}
            ],
            "maskedPaths": [
                "/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
                "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi"
            ],
            "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]
        }
    });
    let mut text = serde_json::to_string_pretty(&config)?;
    text.push('\n');
    fs_err::write(&path, text)?;
    Ok(0)
}
