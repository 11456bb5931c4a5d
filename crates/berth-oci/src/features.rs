//! `features` (runtime-spec `features.md`): what this runtime supports, as data a caller
//! (containerd, Kubernetes) can check before it sends a bundle. Only what berth honours is
//! listed; the rest is refused at `create`.

use serde_json::{json, Value};

/// The mount options berth applies (or that are its behaviour anyway) on binds and tmpfs.
const MOUNT_OPTIONS: &[&str] = &[
    "async", "bind", "dev", "exec", "nodev", "noexec", "nosuid", "private", "rbind", "ro",
    "rprivate", "rw", "suid",
];

pub fn features() -> Value {
    let capabilities: Vec<&str> = berth_runtime::capabilities::host_bounding_set()
        .into_iter()
        .map(berth_runtime::capabilities::name)
        .collect();
    json!({
        "ociVersionMin": "1.0.0",
        "ociVersionMax": crate::state::OCI_VERSION,
        "hooks": ["prestart", "createRuntime", "poststart", "poststop"],
        "mountOptions": MOUNT_OPTIONS,
        "linux": {
            "namespaces": ["cgroup", "ipc", "mount", "network", "pid", "uts"],
            "capabilities": capabilities,
            "cgroup": {"v1": true, "v2": true, "systemd": false, "systemdUser": false},
            "seccomp": {
                "enabled": true,
                "actions": [
                    "SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS",
                    "SCMP_ACT_KILL_THREAD", "SCMP_ACT_LOG", "SCMP_ACT_TRACE", "SCMP_ACT_TRAP"
                ],
                "operators": [
                    "SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_LE", "SCMP_CMP_LT",
                    "SCMP_CMP_MASKED_EQ", "SCMP_CMP_NE"
                ],
                "archs": ["SCMP_ARCH_X86", "SCMP_ARCH_X86_64"]
            },
            "apparmor": {"enabled": false},
            "selinux": {"enabled": false}
        },
        "annotations": {
            "io.berth.version": env!("CARGO_PKG_VERSION"),
            "io.berth.checkpoint.enabled": "false"
        }
    })
}
