//! Linux capability names as the Docker API spells them.

/// Every capability the engine knows, in kernel number order
/// (include/uapi/linux/capability.h).
pub const CAPABILITIES: &[&str] = &[
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_DAC_READ_SEARCH",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_MKNOD",
    "CAP_LEASE",
    "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",
    "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN",
    "CAP_SYSLOG",
    "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",
    "CAP_AUDIT_READ",
    "CAP_PERFMON",
    "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
];

/// `ALL` in `--cap-add`/`--cap-drop`.
pub const ALL_CAPABILITIES: &str = "ALL";

/// Upper-cases a name and adds the `CAP_` prefix, leaving `ALL` alone (what the
/// Docker client does before sending `CapAdd`/`CapDrop`).
pub fn normalize_capability(name: &str) -> String {
    let upper = name.trim().to_ascii_uppercase();
    if upper == ALL_CAPABILITIES || upper.starts_with("CAP_") {
        upper
    } else {
        format!("CAP_{upper}")
    }
}

pub fn is_known_capability(normalized: &str) -> bool {
    normalized == ALL_CAPABILITIES || CAPABILITIES.contains(&normalized)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_like_the_docker_client() {
        assert_eq!(normalize_capability("net_admin"), "CAP_NET_ADMIN");
        assert_eq!(normalize_capability("CAP_SYS_ADMIN"), "CAP_SYS_ADMIN");
        assert_eq!(normalize_capability("cap_chown"), "CAP_CHOWN");
        assert_eq!(normalize_capability("all"), "ALL");
        assert!(is_known_capability("CAP_BPF"));
        assert!(!is_known_capability("CAP_FOO"));
    }
}
