//! V1Manager on a fake v1 tree: the exact files and values written.

use std::path::PathBuf;

use nix::unistd::Pid;

use super::fake_tree::{FakeV1, CONTAINER, V1_CONTROLLERS};
use crate::cgroups::{
    new_manager, CgroupError, CgroupManager, CgroupStats, CgroupVersion, Limit, Resources,
    V1Hierarchies, V1Manager,
};

const MIB: u64 = 1 << 20;

fn manager(fake: &FakeV1) -> V1Manager {
    V1Manager::new(fake.hierarchies(), PathBuf::from(CONTAINER))
}

fn all_resources() -> Resources {
    let mut resources = Resources {
        memory: Some(Limit::Value(256 * MIB)),
        memory_swap: Some(Limit::Value(512 * MIB)),
        memory_reservation: Some(Limit::Value(128 * MIB)),
        cpu_shares: Some(512),
        cpuset_cpus: Some("1".to_owned()),
        cpuset_mems: Some("0".to_owned()),
        pids_limit: Some(Limit::Value(100)),
        blkio_weight: Some(300),
        cpu_realtime_period: Some(500_000),
        cpu_realtime_runtime: Some(-1),
        ..Resources::default()
    };
    resources.set_nano_cpus(1_500_000_000);
    resources
}

#[test]
fn create_writes_each_resource_to_its_v1_file() {
    let fake = FakeV1::new();
    manager(&fake).create(&all_resources()).unwrap();

    assert_eq!(fake.read("memory", "memory.limit_in_bytes"), "268435456");
    assert_eq!(
        fake.read("memory", "memory.memsw.limit_in_bytes"),
        "536870912"
    );
    assert_eq!(
        fake.read("memory", "memory.soft_limit_in_bytes"),
        "134217728"
    );
    assert_eq!(fake.read("cpu", "cpu.shares"), "512");
    assert_eq!(fake.read("cpu", "cpu.cfs_period_us"), "100000");
    assert_eq!(fake.read("cpu", "cpu.cfs_quota_us"), "150000");
    assert_eq!(fake.read("cpu", "cpu.rt_period_us"), "500000");
    assert_eq!(fake.read("cpu", "cpu.rt_runtime_us"), "-1");
    assert_eq!(fake.read("cpuset", "cpuset.cpus"), "1");
    assert_eq!(fake.read("cpuset", "cpuset.mems"), "0");
    assert_eq!(fake.read("pids", "pids.max"), "100");
    assert_eq!(fake.read("blkio", "blkio.bfq.weight"), "300");
}

#[test]
fn create_makes_the_cgroup_in_every_hierarchy() {
    let fake = FakeV1::new();
    // Without cpuset: a fake new directory lacks the cpuset files the kernel would add.
    let without_cpuset = V1_CONTROLLERS.into_iter().filter(|name| *name != "cpuset");
    let hierarchies = V1Hierarchies::from_mounts(
        without_cpuset
            .clone()
            .map(|controller| (controller, fake.dir.path().join(controller))),
    );
    let manager = V1Manager::new(hierarchies, PathBuf::from("berth/new"));
    manager.create(&Resources::default()).unwrap();
    for controller in without_cpuset {
        assert!(fake.dir.path().join(controller).join("berth/new").is_dir());
    }
}

#[test]
fn empty_cpusets_are_copied_from_the_parent() {
    let fake = FakeV1::new();
    manager(&fake).create(&Resources::default()).unwrap();
    let parent = fake.dir.path().join("cpuset/berth");
    assert_eq!(
        fs_err::read_to_string(parent.join("cpuset.cpus")).unwrap(),
        "0-3"
    );
    assert_eq!(
        fs_err::read_to_string(parent.join("cpuset.mems")).unwrap(),
        "0"
    );
    assert_eq!(fake.read("cpuset", "cpuset.cpus"), "0-3");
    assert_eq!(fake.read("cpuset", "cpuset.mems"), "0");
}

#[test]
fn unlimited_is_minus_one_except_for_pids() {
    let fake = FakeV1::new();
    fake.write("memory", "memory.limit_in_bytes", "1048576");
    fake.write("memory", "memory.memsw.limit_in_bytes", "1048576");
    let resources = Resources {
        memory: Some(Limit::Unlimited),
        cpu_quota: Some(Limit::Unlimited),
        pids_limit: Some(Limit::Unlimited),
        ..Resources::default()
    };
    manager(&fake).apply(&resources).unwrap();
    assert_eq!(fake.read("memory", "memory.limit_in_bytes"), "-1");
    // Lifting the memory limit lifts memory+swap too, or the kernel would refuse it.
    assert_eq!(fake.read("memory", "memory.memsw.limit_in_bytes"), "-1");
    assert_eq!(fake.read("cpu", "cpu.cfs_quota_us"), "-1");
    assert_eq!(fake.read("pids", "pids.max"), "max");
}

#[test]
fn apply_leaves_unset_fields_alone() {
    let fake = FakeV1::new();
    let resources = Resources {
        pids_limit: Some(Limit::Value(5)),
        ..Resources::default()
    };
    manager(&fake).apply(&resources).unwrap();
    assert_eq!(fake.read("pids", "pids.max"), "5");
    assert_eq!(
        fake.read("memory", "memory.limit_in_bytes"),
        "9223372036854771712"
    );
    assert_eq!(fake.read("cpu", "cpu.shares"), "1024");
}

#[test]
fn swap_below_memory_is_refused_before_writing() {
    let fake = FakeV1::new();
    let resources = Resources {
        memory: Some(Limit::Value(2 * MIB)),
        memory_swap: Some(Limit::Value(MIB)),
        ..Resources::default()
    };
    let error = manager(&fake).apply(&resources).unwrap_err();
    assert!(
        matches!(error, CgroupError::SwapBelowMemory { .. }),
        "{error}"
    );
    assert_eq!(
        fake.read("memory", "memory.limit_in_bytes"),
        "9223372036854771712"
    );
}

#[test]
fn swap_is_discarded_without_swap_accounting() {
    let fake = FakeV1::new();
    let memsw = fake
        .dir
        .path()
        .join("memory")
        .join(CONTAINER)
        .join("memory.memsw.limit_in_bytes");
    fs_err::remove_file(&memsw).unwrap();
    let resources = Resources {
        memory: Some(Limit::Value(MIB)),
        memory_swap: Some(Limit::Value(2 * MIB)),
        ..Resources::default()
    };
    manager(&fake).apply(&resources).unwrap();
    assert_eq!(fake.read("memory", "memory.limit_in_bytes"), "1048576");
    assert!(!memsw.exists());
}

#[test]
fn a_missing_hierarchy_is_named() {
    let fake = FakeV1::new();
    let hierarchies = V1Hierarchies::from_mounts([("memory", fake.dir.path().join("memory"))]);
    let manager = V1Manager::new(hierarchies, PathBuf::from(CONTAINER));
    let resources = Resources {
        pids_limit: Some(Limit::Value(5)),
        ..Resources::default()
    };
    let error = manager.apply(&resources).unwrap_err();
    assert!(
        matches!(
            error,
            CgroupError::ControllerUnavailable {
                controller: "pids",
                ..
            }
        ),
        "{error}"
    );
}

#[test]
fn a_rejected_write_names_the_file_and_the_value() {
    let fake = FakeV1::new();
    // A directory in place of the file makes the write fail, as a kernel refusal would.
    let limit = fake
        .dir
        .path()
        .join("memory")
        .join(CONTAINER)
        .join("memory.limit_in_bytes");
    fs_err::remove_file(&limit).unwrap();
    fs_err::create_dir(&limit).unwrap();
    let resources = Resources {
        memory: Some(Limit::Value(MIB)),
        ..Resources::default()
    };
    let error = manager(&fake).apply(&resources).unwrap_err().to_string();
    assert!(error.contains("\"1048576\""), "{error}");
    assert!(error.contains("memory.limit_in_bytes"), "{error}");
}

#[test]
fn stats_are_read_from_each_hierarchy() {
    let fake = FakeV1::new();
    let stats = manager(&fake).stats().unwrap();
    assert_eq!(
        stats,
        CgroupStats {
            memory_usage: Some(4_096_000),
            memory_limit: Some(Limit::Unlimited),
            memory_inactive_file: Some(8192),
            oom_kills: Some(2),
            cpu_usage_ns: Some(123_456_789),
            pids_current: Some(3),
            block_io: None,
        }
    );

    fake.write("memory", "memory.limit_in_bytes", "1048576");
    // Kernels before 4.13 have no oom_kill line.
    fake.write(
        "memory",
        "memory.oom_control",
        "oom_kill_disable 0\nunder_oom 0\n",
    );
    let stats = manager(&fake).stats().unwrap();
    assert_eq!(stats.memory_limit, Some(Limit::Value(MIB)));
    assert_eq!(stats.oom_kills, None);
    assert_eq!(manager(&fake).oom_kills().unwrap(), None);
}

#[test]
fn oom_kills_are_read_from_oom_control_alone() {
    let fake = FakeV1::new();
    assert_eq!(manager(&fake).oom_kills().unwrap(), Some(2));
    // A malformed memory.stat does not matter to the OOM count.
    fake.write(
        "memory",
        "memory.stat",
        "total_inactive_file not-a-number\n",
    );
    assert!(manager(&fake).stats().is_err());
    assert_eq!(manager(&fake).oom_kills().unwrap(), Some(2));
}

#[test]
fn freeze_and_thaw_write_the_freezer_state() {
    let fake = FakeV1::new();
    let manager = manager(&fake);
    manager.freeze().unwrap();
    assert_eq!(fake.read("freezer", "freezer.state"), "FROZEN");
    manager.thaw().unwrap();
    assert_eq!(fake.read("freezer", "freezer.state"), "THAWED");
}

#[test]
fn add_process_joins_every_hierarchy_and_processes_reads_them_back() {
    let fake = FakeV1::new();
    let manager = manager(&fake);
    manager.add_process(Pid::from_raw(4242)).unwrap();
    for controller in V1_CONTROLLERS {
        assert_eq!(fake.read(controller, "cgroup.procs"), "4242");
    }
    fake.write("freezer", "cgroup.procs", "4242\n4243\n");
    assert_eq!(
        manager.processes().unwrap(),
        vec![Pid::from_raw(4242), Pid::from_raw(4243)]
    );
}

#[test]
fn a_missing_cgroup_has_no_processes_and_deletes_fine() {
    let fake = FakeV1::new();
    let manager = V1Manager::new(fake.hierarchies(), PathBuf::from("berth/gone"));
    assert_eq!(manager.processes().unwrap(), Vec::new());
    manager.delete().unwrap();
    assert!(manager.open_for_clone_into().unwrap().is_none());
}

#[test]
fn detection_from_a_fake_mount_table_picks_v1() {
    let fake = FakeV1::new();
    let mut mountinfo = String::new();
    for (index, controller) in V1_CONTROLLERS.iter().enumerate() {
        let point = fake.dir.path().join(controller);
        mountinfo.push_str(&format!(
            "{id} 31 0:{id} / {point} rw,relatime - cgroup cgroup rw,{controller}\n",
            id = 40 + index,
            point = point.display(),
        ));
    }
    let mountinfo_path = fake.dir.path().join("mountinfo");
    fs_err::write(&mountinfo_path, mountinfo).unwrap();

    let version = CgroupVersion::detect_from(&mountinfo_path, fake.dir.path()).unwrap();
    assert!(matches!(version, CgroupVersion::V1(_)));
    let manager = new_manager(&version, PathBuf::from(CONTAINER));
    let resources = Resources {
        memory: Some(Limit::Value(MIB)),
        ..Resources::default()
    };
    manager.apply(&resources).unwrap();
    assert_eq!(fake.read("memory", "memory.limit_in_bytes"), "1048576");
}

#[test]
fn device_rules_without_a_devices_hierarchy_fail_unless_everything_is_allowed() {
    use crate::devices::container_rules;
    // The fake layout has no devices hierarchy.
    let fake = FakeV1::new();
    let restricted = Resources {
        devices: Some(container_rules(false, &[])),
        ..Resources::default()
    };
    let error = manager(&fake).create(&restricted).unwrap_err();
    assert!(
        matches!(
            error,
            CgroupError::ControllerUnavailable {
                controller: "devices",
                ..
            }
        ),
        "{error}"
    );
    let privileged = Resources {
        devices: Some(container_rules(true, &[])),
        ..Resources::default()
    };
    manager(&fake).create(&privileged).unwrap();
}
