//! Which cgroup version this machine runs, and where its hierarchies are mounted.
//!
//! A cgroup2 mount at the unified root (`/sys/fs/cgroup`) means v2. Otherwise the v1
//! hierarchies listed in `/proc/self/mountinfo` are used, even when a cgroup2 file system is
//! also mounted elsewhere ("hybrid", usually `/sys/fs/cgroup/unified`): in that layout every
//! resource controller is bound to v1, and v2 holds at most `hugetlb` or nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{files, CgroupError};

/// The real mount table and unified root.
pub const MOUNTINFO: &str = "/proc/self/mountinfo";
pub const UNIFIED_ROOT: &str = "/sys/fs/cgroup";

/// The v1 controllers berth knows. Options of a v1 mount that are not in this list
/// (`rw`, `nosuid`, `clone_children`…) are mount options, not controllers.
const V1_CONTROLLERS: [&str; 14] = [
    "blkio",
    "cpu",
    "cpuacct",
    "cpuset",
    "devices",
    "freezer",
    "hugetlb",
    "memory",
    "misc",
    "net_cls",
    "net_prio",
    "perf_event",
    "pids",
    "rdma",
];

/// The cgroup layout of the machine: what [`super::new_manager`] picks a manager by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupVersion {
    V1(V1Hierarchies),
    V2(V2Root),
}

/// v1: each controller (and named hierarchy such as `name=systemd`) → its mount point.
/// Co-mounted controllers (`cpu,cpuacct`) map to the same directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct V1Hierarchies {
    mounts: BTreeMap<String, PathBuf>,
}

/// v2: the unified hierarchy's root and the controllers it offers (`cgroup.controllers`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V2Root {
    pub root: PathBuf,
    pub controllers: Vec<String>,
}

impl CgroupVersion {
    /// Reads this machine's layout from [`MOUNTINFO`].
    pub fn detect() -> Result<Self, CgroupError> {
        Self::detect_from(Path::new(MOUNTINFO), Path::new(UNIFIED_ROOT))
    }

    /// Reads the layout from another mount table and unified root (tests point these at a
    /// fake directory).
    pub fn detect_from(mountinfo: &Path, unified_root: &Path) -> Result<Self, CgroupError> {
        let text = files::read(mountinfo)?;
        let mut hierarchies = V1Hierarchies::default();
        let mut unified_mounts = Vec::new();
        for mount in text.lines().filter_map(parse_mountinfo_line) {
            match mount.fs_type.as_str() {
                "cgroup2" => unified_mounts.push(mount.mount_point),
                "cgroup" => {
                    for controller in v1_controllers(&mount.super_options) {
                        hierarchies.insert(controller, mount.mount_point.clone());
                    }
                }
                _ => {}
            }
        }
        let unified = if unified_mounts.iter().any(|point| point == unified_root) {
            Some(unified_root.to_owned())
        } else if hierarchies.is_empty() {
            unified_mounts.into_iter().next()
        } else {
            None
        };
        match unified {
            Some(root) => V2Root::at(root).map(CgroupVersion::V2),
            None if !hierarchies.is_empty() => Ok(CgroupVersion::V1(hierarchies)),
            None => Err(CgroupError::NoCgroupFs {
                mountinfo: mountinfo.to_owned(),
            }),
        }
    }
}

impl V1Hierarchies {
    /// Hierarchies from explicit `(controller, mount point)` pairs.
    pub fn from_mounts<I, S, P>(mounts: I) -> Self
    where
        I: IntoIterator<Item = (S, P)>,
        S: Into<String>,
        P: Into<PathBuf>,
    {
        let mut hierarchies = Self::default();
        for (controller, point) in mounts {
            hierarchies.insert(controller.into(), point.into());
        }
        hierarchies
    }

    /// The mount point of a controller's hierarchy.
    pub fn mount_point(&self, controller: &str) -> Option<&Path> {
        self.mounts.get(controller).map(PathBuf::as_path)
    }

    /// Each mounted hierarchy once, whatever controllers share it.
    pub fn mount_points(&self) -> Vec<&Path> {
        let mut points: Vec<&Path> = self.mounts.values().map(PathBuf::as_path).collect();
        points.sort();
        points.dedup();
        points
    }

    pub fn is_empty(&self) -> bool {
        self.mounts.is_empty()
    }

    fn insert(&mut self, controller: String, point: PathBuf) {
        // The first mount of a hierarchy wins, as the kernel lists the original first.
        self.mounts.entry(controller).or_insert(point);
    }
}

impl V2Root {
    /// The unified hierarchy mounted at `root`, with its controllers read from there.
    pub fn at(root: PathBuf) -> Result<Self, CgroupError> {
        let controllers = files::read(&root.join("cgroup.controllers"))?
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        Ok(Self { root, controllers })
    }
}

struct MountEntry {
    mount_point: PathBuf,
    fs_type: String,
    super_options: String,
}

/// One line of mountinfo (proc(5)): `id parent major:minor root mount-point options
/// [optional…] - fs-type source super-options`.
fn parse_mountinfo_line(line: &str) -> Option<MountEntry> {
    let (before, after) = line.split_once(" - ")?;
    let mount_point = before.split(' ').nth(4)?;
    let mut after = after.split(' ');
    let fs_type = after.next()?;
    let _source = after.next()?;
    let super_options = after.next().unwrap_or_default();
    Some(MountEntry {
        mount_point: PathBuf::from(unescape_mountinfo(mount_point)),
        fs_type: fs_type.to_owned(),
        super_options: super_options.to_owned(),
    })
}

/// mountinfo writes space, tab, newline and backslash in paths as `\040`-style octal.
fn unescape_mountinfo(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let octal = bytes.get(index + 1..index + 4).filter(|digits| {
            bytes[index] == b'\\' && digits.iter().all(|digit| (b'0'..=b'7').contains(digit))
        });
        match octal {
            Some(digits) => {
                let value = digits
                    .iter()
                    .fold(0u32, |value, digit| value * 8 + u32::from(digit - b'0'));
                out.push(u8::try_from(value).unwrap_or(b'?'));
                index += 4;
            }
            None => {
                out.push(bytes[index]);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn v1_controllers(super_options: &str) -> impl Iterator<Item = String> + '_ {
    super_options
        .split(',')
        .filter(|option| V1_CONTROLLERS.contains(option) || option.starts_with("name="))
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This machine's layout: v1 hierarchies plus a cgroup2 mount holding only hugetlb.
    const HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset,clone_children
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
42 23 0:39 / /mnt/with\\040space rw - ext4 /dev/sda1 rw
";

    fn write_mountinfo(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("mountinfo");
        fs_err::write(&path, text).unwrap();
        path
    }

    #[test]
    fn hybrid_counts_as_v1() {
        let dir = tempfile::tempdir().unwrap();
        let mountinfo = write_mountinfo(dir.path(), HYBRID);
        let version = CgroupVersion::detect_from(&mountinfo, Path::new("/sys/fs/cgroup")).unwrap();
        let CgroupVersion::V1(hierarchies) = version else {
            panic!("expected v1, got {version:?}");
        };
        let cpu = Path::new("/sys/fs/cgroup/cpu,cpuacct");
        assert_eq!(hierarchies.mount_point("cpu"), Some(cpu));
        assert_eq!(hierarchies.mount_point("cpuacct"), Some(cpu));
        assert_eq!(
            hierarchies.mount_point("cpuset"),
            Some(Path::new("/sys/fs/cgroup/cpuset"))
        );
        assert_eq!(
            hierarchies.mount_point("name=systemd"),
            Some(Path::new("/sys/fs/cgroup/systemd"))
        );
        assert_eq!(hierarchies.mount_point("clone_children"), None);
        assert_eq!(hierarchies.mount_point("pids"), None);
        assert_eq!(hierarchies.mount_points().len(), 4);
    }

    #[test]
    fn unified_root_is_v2_with_its_controllers() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("cgroup");
        fs_err::create_dir(&root).unwrap();
        fs_err::write(
            root.join("cgroup.controllers"),
            "cpuset cpu io memory pids\n",
        )
        .unwrap();
        let mountinfo = write_mountinfo(
            dir.path(),
            &format!("30 23 0:26 / {} rw - cgroup2 cgroup2 rw\n", root.display()),
        );
        let version = CgroupVersion::detect_from(&mountinfo, &root).unwrap();
        assert_eq!(
            version,
            CgroupVersion::V2(V2Root {
                root,
                controllers: ["cpuset", "cpu", "io", "memory", "pids"]
                    .map(String::from)
                    .into(),
            })
        );
    }

    #[test]
    fn no_cgroup_mount_is_an_error_naming_the_table() {
        let dir = tempfile::tempdir().unwrap();
        let mountinfo = write_mountinfo(dir.path(), "1 0 0:1 / / rw - ext4 /dev/sda1 rw\n");
        let error = CgroupVersion::detect_from(&mountinfo, Path::new("/sys/fs/cgroup"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("mountinfo"), "{error}");
    }

    #[test]
    fn mountinfo_escapes_are_decoded() {
        let entry = parse_mountinfo_line(HYBRID.lines().last().unwrap()).unwrap();
        assert_eq!(entry.mount_point, Path::new("/mnt/with space"));
        assert_eq!(unescape_mountinfo("a\\134b\\011"), "a\\b\t");
        assert_eq!(unescape_mountinfo("trailing\\"), "trailing\\");
    }

    #[test]
    fn detects_this_machine() {
        // Whatever the machine runs, detection must succeed where cgroups are mounted.
        if !Path::new(UNIFIED_ROOT).exists() {
            eprintln!("skipping: {UNIFIED_ROOT} does not exist");
            return;
        }
        let version = CgroupVersion::detect().unwrap();
        eprintln!("detected {version:?}");
    }
}
