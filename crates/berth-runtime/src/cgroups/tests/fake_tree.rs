//! Fake cgroupfs trees in a temporary directory, laid out as the kernel would show them after
//! `mkdir` (files exist with their default values), so the managers' writes land in files a
//! test can read back.

use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::cgroups::V1Hierarchies;

/// The container cgroup path every fake tree holds.
pub(super) const CONTAINER: &str = "berth/c1";

/// Files of one v1 hierarchy, with the values a fresh cgroup shows.
fn v1_files(controller: &str) -> &'static [(&'static str, &'static str)] {
    match controller {
        "cpu" => &[
            ("cpu.shares", "1024"),
            ("cpu.cfs_period_us", "100000"),
            ("cpu.cfs_quota_us", "-1"),
            ("cpu.rt_period_us", "1000000"),
            ("cpu.rt_runtime_us", "0"),
        ],
        "cpuacct" => &[("cpuacct.usage", "123456789")],
        "cpuset" => &[("cpuset.cpus", ""), ("cpuset.mems", "")],
        "memory" => &[
            ("memory.limit_in_bytes", "9223372036854771712"),
            ("memory.memsw.limit_in_bytes", "9223372036854771712"),
            ("memory.soft_limit_in_bytes", "9223372036854771712"),
            ("memory.usage_in_bytes", "4096000"),
            (
                "memory.stat",
                "cache 0\nrss 4096\ntotal_inactive_file 8192\n",
            ),
            (
                "memory.oom_control",
                "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
            ),
        ],
        "pids" => &[("pids.max", "max"), ("pids.current", "3")],
        "freezer" => &[("freezer.state", "THAWED")],
        "blkio" => &[("blkio.bfq.weight", "100")],
        _ => &[],
    }
}

pub(super) const V1_CONTROLLERS: [&str; 7] = [
    "blkio", "cpu", "cpuacct", "cpuset", "freezer", "memory", "pids",
];

/// A v1 layout: `<tmp>/<controller>/` per hierarchy, each with `berth/` and `berth/c1/`.
pub(super) struct FakeV1 {
    pub dir: TempDir,
}

impl FakeV1 {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        for controller in V1_CONTROLLERS {
            let root = dir.path().join(controller);
            for cgroup in ["", "berth", CONTAINER] {
                let path = root.join(cgroup);
                fs_err::create_dir_all(&path).unwrap();
                fs_err::write(path.join("cgroup.procs"), "").unwrap();
                for (file, value) in v1_files(controller) {
                    fs_err::write(path.join(file), value).unwrap();
                }
            }
            if controller == "cpuset" {
                fs_err::write(root.join("cpuset.cpus"), "0-3").unwrap();
                fs_err::write(root.join("cpuset.mems"), "0").unwrap();
            }
        }
        Self { dir }
    }

    pub fn hierarchies(&self) -> V1Hierarchies {
        V1Hierarchies::from_mounts(
            V1_CONTROLLERS.map(|controller| (controller, self.dir.path().join(controller))),
        )
    }

    /// The content of a file of the container's cgroup.
    pub fn read(&self, controller: &str, file: &str) -> String {
        read(&self.dir.path().join(controller).join(CONTAINER).join(file))
    }

    pub fn write(&self, controller: &str, file: &str, value: &str) {
        let path = self.dir.path().join(controller).join(CONTAINER).join(file);
        fs_err::write(path, value).unwrap();
    }
}

/// Files of a v2 cgroup with its controllers enabled.
const V2_FILES: [(&str, &str); 21] = [
    ("cgroup.procs", ""),
    ("cgroup.freeze", "0"),
    ("cgroup.events", "populated 0\nfrozen 0\n"),
    ("cgroup.kill", ""),
    ("memory.max", "max"),
    ("memory.low", "0"),
    ("memory.swap.max", "max"),
    ("memory.current", "4096000"),
    ("memory.stat", "anon 4096\nfile 0\ninactive_file 8192\n"),
    (
        "memory.events",
        "low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\noom_group_kill 0\n",
    ),
    ("cpu.weight", "100"),
    ("cpu.max", "max 100000"),
    (
        "cpu.stat",
        "usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n",
    ),
    ("cpuset.cpus", ""),
    ("cpuset.mems", ""),
    ("pids.max", "max"),
    ("pids.current", "3"),
    ("io.weight", "default 100"),
    ("cgroup.type", "domain"),
    ("cgroup.max.depth", "max"),
    ("cgroup.stat", "nr_descendants 0\n"),
];

/// A v2 layout: the root offers every controller and has enabled none for its children;
/// `berth/` already passes `cpu` down; `berth/c1/` has all five.
pub(super) struct FakeV2 {
    pub dir: TempDir,
}

impl FakeV2 {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        let root = dir.path();
        let cgroups = [
            ("", "cpuset cpu io memory hugetlb pids rdma misc", ""),
            ("berth", "cpuset cpu io memory pids", "cpu"),
            (CONTAINER, "cpuset cpu io memory pids", ""),
        ];
        for (cgroup, controllers, subtree) in cgroups {
            let path = root.join(cgroup);
            fs_err::create_dir_all(&path).unwrap();
            fs_err::write(path.join("cgroup.controllers"), controllers).unwrap();
            fs_err::write(path.join("cgroup.subtree_control"), subtree).unwrap();
            if cgroup == CONTAINER {
                for (file, value) in V2_FILES {
                    fs_err::write(path.join(file), value).unwrap();
                }
            }
        }
        Self { dir }
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().to_owned()
    }

    /// A file below the root, e.g. `berth/cgroup.subtree_control`.
    pub fn read(&self, path: &str) -> String {
        read(&self.dir.path().join(path))
    }

    pub fn write(&self, path: &str, value: &str) {
        fs_err::write(self.dir.path().join(path), value).unwrap();
    }
}

fn read(path: &Path) -> String {
    fs_err::read_to_string(path)
        .unwrap_or_else(|error| panic!("reading {}: {error}", path.display()))
}
