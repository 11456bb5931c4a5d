//! Names of the host-wide objects one berth root owns. Bridges, nftables
//! tables and routes are shared by every berth root on the host (the
//! default `/var/lib/berth`, and the private roots tests and users make with
//! `--root`): each root gets its own default bridge and table, named from
//! its path, so two roots never program each other's rules.

use std::os::fd::AsRawFd;
use std::path::Path;

/// The default root keeps the plain names.
pub const DEFAULT_ROOT: &str = "/var/lib/berth";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    /// The default bridge network's device: `berth0`, or `berth<8 hex>`.
    pub default_bridge: String,
    /// berth's nftables table (family ip): `berth`, or `berth_<8 hex>`.
    pub table: String,
}

impl Instance {
    pub fn for_root(root: &Path) -> Self {
        if root == Path::new(DEFAULT_ROOT) {
            return Self {
                default_bridge: "berth0".to_owned(),
                table: "berth".to_owned(),
            };
        }
        let tag = format!("{:08x}", fnv1a(root.as_os_str().as_encoded_bytes()));
        Self {
            default_bridge: format!("berth{tag}"),
            table: format!("berth_{tag}"),
        }
    }
}

/// 32-bit FNV-1a: stable across Rust releases (names must not change when
/// berth is rebuilt).
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5, |hash: u32, byte| {
        (hash ^ u32::from(*byte)).wrapping_mul(0x0100_0193)
    })
}

/// Held while a root chooses an address range and creates its bridge: the
/// choice reads the host's routes, which only show a range once its bridge
/// exists, so two roots choosing at once would otherwise pick the same one.
pub struct HostNetworkLock {
    _file: std::fs::File,
}

pub fn lock_host_networks() -> std::io::Result<HostNetworkLock> {
    let directory = Path::new("/run/lock");
    std::fs::create_dir_all(directory)?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(directory.join("berth-networks.lock"))?;
    loop {
        // SAFETY: flock takes a descriptor this function owns and a flag.
        let result = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        if result == 0 {
            return Ok(HostNetworkLock { _file: file });
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_root_has_plain_names_and_others_stable_distinct_ones() {
        let default = Instance::for_root(Path::new(DEFAULT_ROOT));
        assert_eq!(default.default_bridge, "berth0");
        assert_eq!(default.table, "berth");
        let one = Instance::for_root(Path::new("/tmp/a"));
        let two = Instance::for_root(Path::new("/tmp/b"));
        assert_ne!(one, two);
        assert_eq!(one, Instance::for_root(Path::new("/tmp/a")));
        assert_eq!(one.default_bridge.len(), 13);
        assert!(one.table.starts_with("berth_"));
        // Known value: the names must never change between builds.
        assert_eq!(fnv1a(b"a"), 0xe40c_292c);
    }
}
