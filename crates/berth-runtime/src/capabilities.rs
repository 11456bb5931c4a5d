//! Linux capabilities: Docker's names and default set, `--cap-add`,
//! `--cap-drop`, `--privileged`, and applying a set to the calling process.

use std::collections::BTreeSet;

/// Capability names in number order (include/uapi/linux/capability.h);
/// one list for the whole project, in `berth-types`.
const NAMES: &[&str] = berth_types::container::capabilities::CAPABILITIES;

/// Docker's default capability set (moby `oci/caps/defaults.go`).
pub const DOCKER_DEFAULT: &[&str] = &[
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FSETID",
    "CAP_FOWNER",
    "CAP_MKNOD",
    "CAP_NET_RAW",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETFCAP",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT",
    "CAP_KILL",
    "CAP_AUDIT_WRITE",
];

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CapabilityError {
    /// Docker's wording.
    #[error("invalid capability: {0}")]
    Unknown(String),
    #[error("failed to {operation} capabilities")]
    Syscall {
        operation: &'static str,
        #[source]
        source: nix::Error,
    },
}

/// A capability number.
pub type Capability = u8;

/// Parses `NET_ADMIN`, `cap_net_admin` or `CAP_NET_ADMIN`.
pub fn parse(name: &str) -> Result<Capability, CapabilityError> {
    let upper = name.to_ascii_uppercase();
    let full = if upper.starts_with("CAP_") {
        upper
    } else {
        format!("CAP_{upper}")
    };
    NAMES
        .iter()
        .position(|known| *known == full)
        .map(|index| index as Capability)
        .ok_or_else(|| CapabilityError::Unknown(name.to_owned()))
}

pub fn name(capability: Capability) -> &'static str {
    NAMES
        .get(capability as usize)
        .copied()
        .unwrap_or("CAP_UNKNOWN")
}

/// The capabilities in this process's bounding set: what `--privileged`
/// (and `--cap-add ALL`) can grant. On hosts whose bounding set lacks some
/// (this one lacks CAP_SYS_RESOURCE), asking for more would fail the run.
pub fn host_bounding_set() -> BTreeSet<Capability> {
    let mask = fs_err::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("CapBnd:"))
                .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        })
        .unwrap_or(u64::MAX);
    (0..NAMES.len() as u8)
        .filter(|capability| mask & (1u64 << capability) != 0)
        .collect()
}

/// Docker's rule: start from the defaults (or everything with
/// `--privileged`), add `--cap-add`, remove `--cap-drop`; `ALL` works in
/// both. The result never exceeds the host's bounding set.
pub fn resolve(
    add: &[String],
    drop: &[String],
    privileged: bool,
) -> Result<BTreeSet<Capability>, CapabilityError> {
    let host = host_bounding_set();
    let is_all = |name: &String| name.eq_ignore_ascii_case("ALL");
    let mut set: BTreeSet<Capability> = if privileged || add.iter().any(is_all) {
        host.clone()
    } else {
        DOCKER_DEFAULT
            .iter()
            .map(|name| parse(name))
            .collect::<Result<_, _>>()?
    };
    if drop.iter().any(is_all) {
        set.clear();
    }
    for name in drop.iter().filter(|name| !is_all(name)) {
        set.remove(&parse(name)?);
    }
    // Docker applies adds after drops when both name the same capability.
    for name in add.iter().filter(|name| !is_all(name)) {
        set.insert(parse(name)?);
    }
    Ok(set.intersection(&host).copied().collect())
}

fn mask(set: &BTreeSet<Capability>) -> u64 {
    set.iter()
        .fold(0u64, |mask, capability| mask | (1u64 << capability))
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// Drops every capability outside `set` from the bounding set. Needs
/// CAP_SETPCAP, so it runs before the final `set_process`.
pub fn limit_bounding_set(set: &BTreeSet<Capability>) -> Result<(), CapabilityError> {
    let last = last_capability();
    for capability in 0..=last {
        if set.contains(&capability) {
            continue;
        }
        // SAFETY: PR_CAPBSET_DROP takes one integer argument and touches no memory.
        let result =
            unsafe { libc::prctl(libc::PR_CAPBSET_DROP, capability as libc::c_ulong, 0, 0, 0) };
        if result != 0 {
            let error = nix::Error::last();
            // Capabilities this kernel does not know cannot be dropped; fine.
            if error != nix::Error::EINVAL {
                return Err(CapabilityError::Syscall {
                    operation: "drop bounding",
                    source: error,
                });
            }
        }
    }
    Ok(())
}

/// Sets effective and permitted to `set` (inheritable empty), and the
/// ambient set too when `ambient` (so a non-root user keeps them across
/// exec, which Docker does not do by default: it passes `false`).
pub fn set_process(set: &BTreeSet<Capability>, ambient: bool) -> Result<(), CapabilityError> {
    let bits = mask(set);
    let header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    // The inheritable set stays empty, as runc has kept it since
    // CVE-2022-24769: a non-root user must not gain the capabilities of a
    // binary with inheritable file capabilities.
    let data = [
        CapData {
            effective: bits as u32,
            permitted: bits as u32,
            inheritable: 0,
        },
        CapData {
            effective: (bits >> 32) as u32,
            permitted: (bits >> 32) as u32,
            inheritable: 0,
        },
    ];
    // SAFETY: header and data are valid, correctly laid out (repr(C)) for
    // _LINUX_CAPABILITY_VERSION_3, which takes exactly two data elements.
    let result =
        unsafe { libc::syscall(libc::SYS_capset, &header as *const CapHeader, data.as_ptr()) };
    if result != 0 {
        return Err(CapabilityError::Syscall {
            operation: "set",
            source: nix::Error::last(),
        });
    }
    // SAFETY: PR_CAP_AMBIENT_CLEAR_ALL takes integer arguments only.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    };
    if ambient {
        // Ambient capabilities must also be inheritable; callers that want
        // them accept that trade-off explicitly.
        for capability in set {
            // SAFETY: PR_CAP_AMBIENT_RAISE takes integer arguments only; a
            // failure (capability not permitted) leaves the set unchanged.
            unsafe {
                libc::prctl(
                    libc::PR_CAP_AMBIENT,
                    libc::PR_CAP_AMBIENT_RAISE,
                    *capability as libc::c_ulong,
                    0,
                    0,
                )
            };
        }
    }
    Ok(())
}

fn last_capability() -> Capability {
    fs_err::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or((NAMES.len() - 1) as Capability)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(set: &BTreeSet<Capability>) -> Vec<&'static str> {
        set.iter().map(|capability| name(*capability)).collect()
    }

    #[test]
    fn parses_every_spelling() {
        assert_eq!(parse("NET_ADMIN").unwrap(), 12);
        assert_eq!(parse("cap_net_admin").unwrap(), 12);
        assert_eq!(parse("CAP_NET_ADMIN").unwrap(), 12);
        assert_eq!(
            parse("BOGUS").unwrap_err().to_string(),
            "invalid capability: BOGUS"
        );
    }

    #[test]
    fn defaults_adds_and_drops() {
        let default = resolve(&[], &[], false).unwrap();
        assert_eq!(
            default.len(),
            DOCKER_DEFAULT.len().min(host_bounding_set().len())
        );
        let set = resolve(&["NET_ADMIN".into()], &["CHOWN".into()], false).unwrap();
        assert!(names(&set).contains(&"CAP_NET_ADMIN"));
        assert!(!names(&set).contains(&"CAP_CHOWN"));
        let only = resolve(&["KILL".into()], &["ALL".into()], false).unwrap();
        assert_eq!(names(&only), ["CAP_KILL"]);
    }

    #[test]
    fn privileged_is_the_host_bounding_set() {
        assert_eq!(resolve(&[], &[], true).unwrap(), host_bounding_set());
        assert_eq!(
            resolve(&["ALL".into()], &[], false).unwrap(),
            host_bounding_set()
        );
    }
}
