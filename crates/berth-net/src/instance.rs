//! Names of the host-wide objects one berth root owns. Bridges, nftables
//! tables and routes are shared by every berth root on the host (the
//! default `/var/lib/berth`, and the private roots tests and users make with
//! `--root`): each root gets its own default bridge and table, named from
//! its path, so two roots never program each other's rules.

use std::os::fd::AsRawFd;
use std::path::Path;

use crate::ipam::Ipv4Net;

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

/// The host-wide record of the address ranges roots chose: one
/// `SUBNET ROOT` line per range. A root's bridge exists only while it has
/// a network user (see berth-engine `networks::host`), so the host's
/// routes alone would hand its range to the next root that chooses while
/// it has none, and its containers would come back on other addresses.
/// A line whose root no longer exists is dropped by the next reader:
/// deleting a root frees its ranges without anyone's help.
const RANGES: &str = "/run/lock/berth-ranges";

impl HostNetworkLock {
    fn read_ranges() -> Vec<(Ipv4Net, std::path::PathBuf)> {
        let Ok(text) = fs_err::read_to_string(RANGES) else {
            return Vec::new();
        };
        text.lines()
            .filter_map(|line| {
                let (subnet, root) = line.split_once(' ')?;
                Some((subnet.parse().ok()?, std::path::PathBuf::from(root)))
            })
            .filter(|(_, root)| root.join("metadata.db").exists())
            .collect()
    }

    fn write_ranges(ranges: &[(Ipv4Net, std::path::PathBuf)]) -> std::io::Result<()> {
        let mut text = String::new();
        for (subnet, root) in ranges {
            if let Some(root) = root.to_str().filter(|root| !root.contains('\n')) {
                text.push_str(&format!("{subnet} {root}\n"));
            }
        }
        let staging = format!("{RANGES}.{}", std::process::id());
        fs_err::write(&staging, text)?;
        fs_err::rename(&staging, RANGES)
    }

    /// The ranges other roots (that still exist) chose.
    pub fn ranges_of_other_roots(&self, root: &Path) -> Vec<Ipv4Net> {
        Self::read_ranges()
            .into_iter()
            .filter(|(_, owner)| owner != root)
            .map(|(subnet, _)| subnet)
            .collect()
    }

    /// Records `subnet` as `root`'s, in place of `previous`.
    pub fn reserve_range(
        &self,
        root: &Path,
        subnet: Ipv4Net,
        previous: Option<Ipv4Net>,
    ) -> std::io::Result<()> {
        let mut ranges = Self::read_ranges();
        ranges.retain(|(range, owner)| !(owner == root && Some(*range) == previous));
        if !ranges
            .iter()
            .any(|(range, owner)| owner == root && *range == subnet)
        {
            ranges.push((subnet, root.to_owned()));
        }
        Self::write_ranges(&ranges)
    }

    /// Forgets `root`'s `subnet` (its network was removed).
    pub fn release_range(&self, root: &Path, subnet: Ipv4Net) -> std::io::Result<()> {
        let mut ranges = Self::read_ranges();
        ranges.retain(|(range, owner)| !(owner == root && *range == subnet));
        Self::write_ranges(&ranges)
    }
}

pub fn lock_host_networks() -> std::io::Result<HostNetworkLock> {
    let directory = Path::new("/run/lock");
    fs_err::create_dir_all(directory)?;
    let file = fs_err::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(directory.join("berth-networks.lock"))?
        .into_file();
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

/// A root's hold on its own host objects (default bridge, table,
/// `DOCKER-USER` rules). Shared: a connect that found or made the bridge,
/// held until its endpoint is in the store (from then on the root is in
/// use). Exclusive: the removal of those objects once the root has no
/// network user, which checks the store under it. So a connect either sees
/// the bridge after a removal finished (and makes it again) or keeps the
/// removal from starting.
pub struct RootNetworkLock {
    _lock: nix::fcntl::Flock<std::fs::File>,
}

/// `<root>/locks/host-network.lock`, shared or exclusive; waits.
pub fn lock_root_network(root: &Path, exclusive: bool) -> std::io::Result<RootNetworkLock> {
    use fs_err::os::unix::fs::OpenOptionsExt;
    let directory = root.join("locks");
    fs_err::create_dir_all(&directory)?;
    let mut file = fs_err::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(directory.join("host-network.lock"))?
        .into_file();
    let arg = if exclusive {
        nix::fcntl::FlockArg::LockExclusive
    } else {
        nix::fcntl::FlockArg::LockShared
    };
    loop {
        match nix::fcntl::Flock::lock(file, arg) {
            Ok(lock) => return Ok(RootNetworkLock { _lock: lock }),
            Err((returned, nix::Error::EINTR)) => file = returned,
            Err((_, error)) => return Err(error.into()),
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

    /// On the host's real record (other roots' lines are kept).
    #[test]
    fn a_range_is_held_for_its_root_until_released_or_the_root_is_gone() {
        let one = tempfile::tempdir().unwrap();
        let two = tempfile::tempdir().unwrap();
        for root in [&one, &two] {
            fs_err::write(root.path().join("metadata.db"), b"").unwrap();
        }
        let range: Ipv4Net = "10.254.77.0/24".parse().unwrap();
        let moved: Ipv4Net = "10.254.78.0/24".parse().unwrap();
        {
            let lock = lock_host_networks().unwrap();
            lock.reserve_range(one.path(), range, None).unwrap();
            assert!(lock.ranges_of_other_roots(two.path()).contains(&range));
            assert!(!lock.ranges_of_other_roots(one.path()).contains(&range));
            lock.reserve_range(one.path(), moved, Some(range)).unwrap();
            let others = lock.ranges_of_other_roots(two.path());
            assert!(others.contains(&moved) && !others.contains(&range));
            lock.release_range(one.path(), moved).unwrap();
            assert!(!lock.ranges_of_other_roots(two.path()).contains(&moved));
            lock.reserve_range(two.path(), range, None).unwrap();
        }
        let path = two.path().to_owned();
        drop(two);
        let lock = lock_host_networks().unwrap();
        assert!(!lock.ranges_of_other_roots(one.path()).contains(&range));
        // The next write drops the line of the root that is gone.
        lock.reserve_range(one.path(), moved, None).unwrap();
        let text = fs_err::read_to_string(RANGES).unwrap();
        assert!(!text.contains(path.to_str().unwrap()), "{text}");
        lock.release_range(one.path(), moved).unwrap();
    }

    #[test]
    fn the_root_lock_is_shared_among_users_and_exclusive_for_removal() {
        use nix::fcntl::{Flock, FlockArg};
        let root = tempfile::tempdir().unwrap();
        let one = lock_root_network(root.path(), false).unwrap();
        let two = lock_root_network(root.path(), false).unwrap();
        let path = root.path().join("locks/host-network.lock");
        let probe = || {
            let file = fs_err::File::open(&path).unwrap().into_file();
            Flock::lock(file, FlockArg::LockExclusiveNonblock).is_ok()
        };
        assert!(!probe(), "users must keep the removal out");
        drop(one);
        assert!(!probe());
        drop(two);
        assert!(probe());
        let removal = lock_root_network(root.path(), true).unwrap();
        let file = fs_err::File::open(&path).unwrap().into_file();
        assert!(Flock::lock(file, FlockArg::LockSharedNonblock).is_err());
        drop(removal);
    }
}
