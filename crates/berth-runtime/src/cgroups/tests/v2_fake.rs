//! V2Manager on a fake unified tree: the exact files and values written.

use std::path::PathBuf;

use nix::sys::signal::Signal;
use nix::unistd::Pid;

use super::fake_tree::{FakeV2, CONTAINER};
use crate::cgroups::{
    new_manager, CgroupError, CgroupManager, CgroupStats, CgroupVersion, Limit, Resources,
    V2Manager,
};

const MIB: u64 = 1 << 20;

fn manager(fake: &FakeV2) -> V2Manager {
    V2Manager::new(fake.root(), PathBuf::from(CONTAINER))
}

fn file(name: &str) -> String {
    format!("{CONTAINER}/{name}")
}

#[test]
fn create_enables_controllers_down_the_path() {
    let fake = FakeV2::new();
    manager(&fake).create(&Resources::default()).unwrap();
    // hugetlb, rdma and misc are not needed and stay off; berth already had cpu.
    assert_eq!(
        fake.read("cgroup.subtree_control"),
        "+cpuset +cpu +io +memory +pids"
    );
    assert_eq!(
        fake.read("berth/cgroup.subtree_control"),
        "+cpuset +io +memory +pids"
    );
    // The container's own subtree_control is untouched: it has no children.
    assert_eq!(fake.read(&file("cgroup.subtree_control")), "");
}

#[test]
fn create_writes_each_resource_to_its_v2_file() {
    let fake = FakeV2::new();
    let mut resources = Resources {
        memory: Some(Limit::Value(256 * MIB)),
        memory_swap: Some(Limit::Value(768 * MIB)),
        memory_reservation: Some(Limit::Value(128 * MIB)),
        cpu_shares: Some(1024),
        cpuset_cpus: Some("0-1".to_owned()),
        cpuset_mems: Some("0".to_owned()),
        pids_limit: Some(Limit::Value(100)),
        blkio_weight: Some(500),
        ..Resources::default()
    };
    resources.set_nano_cpus(500_000_000);
    manager(&fake).create(&resources).unwrap();

    assert_eq!(fake.read(&file("memory.max")), "268435456");
    // memory.swap.max holds the swap part only: 768 MiB - 256 MiB.
    assert_eq!(fake.read(&file("memory.swap.max")), "536870912");
    assert_eq!(fake.read(&file("memory.low")), "134217728");
    assert_eq!(fake.read(&file("cpu.weight")), "39");
    assert_eq!(fake.read(&file("cpu.max")), "50000 100000");
    assert_eq!(fake.read(&file("cpuset.cpus")), "0-1");
    assert_eq!(fake.read(&file("cpuset.mems")), "0");
    assert_eq!(fake.read(&file("pids.max")), "100");
    assert_eq!(fake.read(&file("io.weight")), "4950");
}

#[test]
fn unlimited_is_max() {
    let fake = FakeV2::new();
    let resources = Resources {
        memory: Some(Limit::Unlimited),
        memory_swap: Some(Limit::Unlimited),
        cpu_quota: Some(Limit::Unlimited),
        cpu_period: Some(100_000),
        pids_limit: Some(Limit::Unlimited),
        ..Resources::default()
    };
    manager(&fake).apply(&resources).unwrap();
    assert_eq!(fake.read(&file("memory.max")), "max");
    assert_eq!(fake.read(&file("memory.swap.max")), "max");
    assert_eq!(fake.read(&file("cpu.max")), "max 100000");
    assert_eq!(fake.read(&file("pids.max")), "max");
}

#[test]
fn cpu_max_keeps_the_other_half() {
    let fake = FakeV2::new();
    let manager = manager(&fake);
    fake.write(&file("cpu.max"), "25000 50000");
    let period_only = Resources {
        cpu_period: Some(200_000),
        ..Resources::default()
    };
    manager.apply(&period_only).unwrap();
    assert_eq!(fake.read(&file("cpu.max")), "25000 200000");

    let quota_only = Resources {
        cpu_quota: Some(Limit::Value(30_000)),
        ..Resources::default()
    };
    manager.apply(&quota_only).unwrap();
    // The kernel keeps the period when only the quota is written.
    assert_eq!(fake.read(&file("cpu.max")), "30000");
}

#[test]
fn bfq_weight_is_written_unconverted_when_present() {
    let fake = FakeV2::new();
    fake.write(&file("io.bfq.weight"), "default 100");
    let resources = Resources {
        blkio_weight: Some(500),
        ..Resources::default()
    };
    manager(&fake).apply(&resources).unwrap();
    assert_eq!(fake.read(&file("io.bfq.weight")), "500");
    assert_eq!(fake.read(&file("io.weight")), "default 100");
}

#[test]
fn v1_only_and_inconsistent_resources_are_refused() {
    let fake = FakeV2::new();
    let manager = manager(&fake);
    let realtime = Resources {
        cpu_realtime_runtime: Some(1000),
        ..Resources::default()
    };
    assert!(matches!(
        manager.apply(&realtime),
        Err(CgroupError::UnsupportedOnV2 { .. })
    ));
    let swap_alone = Resources {
        memory_swap: Some(Limit::Value(MIB)),
        ..Resources::default()
    };
    assert!(matches!(
        manager.apply(&swap_alone),
        Err(CgroupError::SwapWithoutMemory)
    ));
}

#[test]
fn a_controller_missing_from_the_cgroup_is_named() {
    let fake = FakeV2::new();
    fake.write(&file("cgroup.controllers"), "cpu io");
    let resources = Resources {
        memory: Some(Limit::Value(MIB)),
        ..Resources::default()
    };
    let error = manager(&fake).apply(&resources).unwrap_err();
    assert!(
        matches!(
            error,
            CgroupError::ControllerUnavailable {
                controller: "memory",
                ..
            }
        ),
        "{error}"
    );
    assert_eq!(fake.read(&file("memory.max")), "max");
}

#[test]
fn stats_parse_the_v2_files() {
    let fake = FakeV2::new();
    let stats = manager(&fake).stats().unwrap();
    assert_eq!(
        stats,
        CgroupStats {
            memory_usage: Some(4_096_000),
            memory_limit: Some(Limit::Unlimited),
            memory_inactive_file: Some(8192),
            oom_kills: Some(1),
            cpu_usage_ns: Some(2_500_000),
            pids_current: Some(3),
            block_io: None,
        }
    );
    assert_eq!(manager(&fake).oom_kills().unwrap(), Some(1));
    fake.write(&file("memory.max"), "1048576");
    assert_eq!(
        manager(&fake).stats().unwrap().memory_limit,
        Some(Limit::Value(MIB))
    );
}

#[test]
fn stats_without_controllers_are_none() {
    let fake = FakeV2::new();
    for name in [
        "memory.current",
        "memory.max",
        "memory.stat",
        "memory.events",
        "pids.current",
    ] {
        fs_err::remove_file(fake.dir.path().join(file(name))).unwrap();
    }
    let stats = manager(&fake).stats().unwrap();
    assert_eq!(stats.memory_usage, None);
    assert_eq!(stats.memory_limit, None);
    assert_eq!(stats.oom_kills, None);
    assert_eq!(manager(&fake).oom_kills().unwrap(), None);
    assert_eq!(stats.pids_current, None);
    assert_eq!(stats.cpu_usage_ns, Some(2_500_000));
}

#[test]
fn freeze_writes_cgroup_freeze_and_waits_for_the_event() {
    let fake = FakeV2::new();
    let manager = manager(&fake);
    // The fake "kernel" reports frozen at once.
    fake.write(&file("cgroup.events"), "populated 1\nfrozen 1\n");
    manager.freeze().unwrap();
    assert_eq!(fake.read(&file("cgroup.freeze")), "1");
    fake.write(&file("cgroup.events"), "populated 1\nfrozen 0\n");
    manager.thaw().unwrap();
    assert_eq!(fake.read(&file("cgroup.freeze")), "0");
}

#[test]
fn sigkill_uses_cgroup_kill() {
    let fake = FakeV2::new();
    manager(&fake).kill_all(Signal::SIGKILL).unwrap();
    assert_eq!(fake.read(&file("cgroup.kill")), "1");
}

#[test]
fn add_process_and_processes_use_cgroup_procs() {
    let fake = FakeV2::new();
    let manager = manager(&fake);
    manager.add_process(Pid::from_raw(77)).unwrap();
    assert_eq!(fake.read(&file("cgroup.procs")), "77");
    assert_eq!(manager.processes().unwrap(), vec![Pid::from_raw(77)]);
}

#[test]
fn a_missing_cgroup_deletes_fine() {
    let fake = FakeV2::new();
    let manager = V2Manager::new(fake.root(), PathBuf::from("berth/gone"));
    manager.delete().unwrap();
    assert_eq!(manager.processes().unwrap(), Vec::new());
    assert!(manager.open_for_clone_into().is_err());
}

#[test]
fn open_for_clone_into_opens_the_directory() {
    let fake = FakeV2::new();
    assert!(manager(&fake).open_for_clone_into().unwrap().is_some());
}

#[test]
fn detection_of_a_unified_root_picks_v2() {
    let fake = FakeV2::new();
    let mountinfo = fake.dir.path().join("mountinfo");
    fs_err::write(
        &mountinfo,
        format!(
            "30 23 0:26 / {} rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
            fake.root().display()
        ),
    )
    .unwrap();
    let version = CgroupVersion::detect_from(&mountinfo, &fake.root()).unwrap();
    let manager = new_manager(&version, PathBuf::from(CONTAINER));
    let resources = Resources {
        pids_limit: Some(Limit::Value(9)),
        ..Resources::default()
    };
    manager.create(&resources).unwrap();
    assert_eq!(fake.read(&file("pids.max")), "9");
}
