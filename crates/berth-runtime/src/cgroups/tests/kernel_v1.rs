//! V1Manager on this machine's v1 hierarchies (root only; skipped with a reason elsewhere).

use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::Signal;
use nix::sys::wait::WaitStatus;

use super::kernel::{
    fork_waiting, hog, hold_memory, proc_cgroup, read, running_as_root, unique_name, CgroupCleanup,
    Sleeper,
};
use crate::cgroups::{
    CgroupError, CgroupManager, CgroupVersion, Limit, Resources, V1Hierarchies, V1Manager,
};

const MIB: u64 = 1 << 20;

/// A manager for `<unique>/c` on the machine's v1 hierarchies, and the cleanup of `<unique>`.
fn v1_setup(test: &str) -> Option<(V1Manager, CgroupCleanup, V1Hierarchies)> {
    if !running_as_root(test) {
        return None;
    }
    let hierarchies = match CgroupVersion::detect() {
        Ok(CgroupVersion::V1(hierarchies)) => hierarchies,
        other => {
            eprintln!("skipping {test}: this machine is not cgroup v1 ({other:?})");
            return None;
        }
    };
    for controller in ["memory", "cpu", "pids", "freezer", "cpuset"] {
        if hierarchies.mount_point(controller).is_none() {
            eprintln!("skipping {test}: the v1 {controller} hierarchy is not mounted");
            return None;
        }
    }
    let name = unique_name();
    let cleanup = CgroupCleanup {
        dirs: hierarchies
            .mount_points()
            .into_iter()
            .map(|point| point.join(&name))
            .collect(),
    };
    let manager = V1Manager::new(hierarchies.clone(), Path::new(&name).join("c"));
    Some((manager, cleanup, hierarchies))
}

fn file(manager: &V1Manager, controller: &str, name: &str) -> PathBuf {
    manager
        .dir(controller)
        .expect("hierarchy mounted")
        .join(name)
}

#[test]
fn v1_container_lifecycle_on_the_kernel() {
    let Some((manager, _cleanup, hierarchies)) = v1_setup("v1_container_lifecycle_on_the_kernel")
    else {
        return;
    };
    let mut resources = Resources {
        memory: Some(Limit::Value(64 * MIB)),
        memory_swap: Some(Limit::Value(64 * MIB)),
        cpu_shares: Some(512),
        pids_limit: Some(Limit::Value(32)),
        cpuset_cpus: Some("0".to_owned()),
        ..Resources::default()
    };
    resources.set_nano_cpus(500_000_000);
    manager.create(&resources).unwrap();

    assert_eq!(
        read(&file(&manager, "memory", "memory.limit_in_bytes")),
        "67108864"
    );
    assert_eq!(read(&file(&manager, "cpu", "cpu.cfs_quota_us")), "50000");
    assert_eq!(read(&file(&manager, "cpu", "cpu.cfs_period_us")), "100000");
    assert_eq!(read(&file(&manager, "cpu", "cpu.shares")), "512");
    assert_eq!(read(&file(&manager, "pids", "pids.max")), "32");
    assert_eq!(read(&file(&manager, "cpuset", "cpuset.cpus")), "0");
    // mems was inherited from the parent, or no process could join.
    assert!(!read(&file(&manager, "cpuset", "cpuset.mems")).is_empty());

    let mut sleeper = Sleeper::spawn();
    let pid = sleeper.pid();
    manager.add_process(pid).unwrap();
    assert_eq!(manager.processes().unwrap(), vec![pid]);
    let expected = format!("/{}", manager.path().display());
    for controllers in ["memory", "pids", "freezer", "cpu"] {
        assert_eq!(
            proc_cgroup(pid, controllers).as_deref(),
            Some(expected.as_str())
        );
    }

    manager.freeze().unwrap();
    assert_eq!(read(&file(&manager, "freezer", "freezer.state")), "FROZEN");
    eprintln!(
        "frozen child: {:?}",
        read(Path::new(&format!("/proc/{pid}/status")))
            .lines()
            .find(|line| line.starts_with("State:"))
    );
    manager.thaw().unwrap();
    assert_eq!(read(&file(&manager, "freezer", "freezer.state")), "THAWED");

    let stats = manager.stats().unwrap();
    eprintln!("{stats:?}");
    assert_eq!(stats.pids_current, Some(1));
    assert_eq!(stats.memory_limit, Some(Limit::Value(64 * MIB)));
    // v1 does not move a process's old charges with it, so usage may still read 0.
    assert!(stats.memory_usage.is_some());
    assert!(stats.cpu_usage_ns.is_some());
    assert_eq!(stats.oom_kills, Some(0));

    manager.kill_all(Signal::SIGKILL).unwrap();
    let status = sleeper.child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    // The kill thawed the cgroup again.
    assert_eq!(read(&file(&manager, "freezer", "freezer.state")), "THAWED");

    manager.delete().unwrap();
    for point in hierarchies.mount_points() {
        let dir = point.join(manager.path());
        assert!(!dir.exists(), "{} is left behind", dir.display());
    }
    // Deleting again is fine.
    manager.delete().unwrap();
    assert_eq!(manager.processes().unwrap(), Vec::new());
}

#[test]
fn v1_kill_all_sends_other_signals_to_each_process() {
    let Some((manager, _cleanup, _)) = v1_setup("v1_kill_all_sends_other_signals") else {
        return;
    };
    manager.create(&Resources::default()).unwrap();
    let mut sleepers = [Sleeper::spawn(), Sleeper::spawn()];
    for sleeper in &sleepers {
        manager.add_process(sleeper.pid()).unwrap();
    }
    assert_eq!(manager.processes().unwrap().len(), 2);
    manager.kill_all(Signal::SIGTERM).unwrap();
    for sleeper in &mut sleepers {
        let status = sleeper.child.wait().unwrap();
        assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    }
    manager.delete().unwrap();
}

#[test]
fn v1_memory_and_swap_update_in_a_kernel_accepted_order() {
    let Some((manager, _cleanup, _)) = v1_setup("v1_memory_and_swap_update_order") else {
        return;
    };
    let limits = |memory, memory_swap| Resources {
        memory: Some(Limit::Value(memory)),
        memory_swap: Some(Limit::Value(memory_swap)),
        ..Resources::default()
    };
    manager.create(&limits(64 * MIB, 64 * MIB)).unwrap();
    // Raising: memory+swap must go first (128 MiB > the old 64 MiB memory+swap).
    manager.apply(&limits(128 * MIB, 256 * MIB)).unwrap();
    assert_eq!(
        read(&file(&manager, "memory", "memory.limit_in_bytes")),
        "134217728"
    );
    assert_eq!(
        read(&file(&manager, "memory", "memory.memsw.limit_in_bytes")),
        "268435456"
    );
    // Lowering: memory must go first (32 MiB memory+swap < the current 128 MiB memory).
    manager.apply(&limits(32 * MIB, 32 * MIB)).unwrap();
    assert_eq!(
        read(&file(&manager, "memory", "memory.limit_in_bytes")),
        "33554432"
    );
    assert_eq!(
        read(&file(&manager, "memory", "memory.memsw.limit_in_bytes")),
        "33554432"
    );
    // Lifting the memory limit alone lifts memory+swap with it.
    let unlimited = Resources {
        memory: Some(Limit::Unlimited),
        ..Resources::default()
    };
    manager.apply(&unlimited).unwrap();
    assert_eq!(
        manager.stats().unwrap().memory_limit,
        Some(Limit::Unlimited)
    );
    manager.delete().unwrap();
}

#[test]
fn v1_memory_limit_below_usage_fails_naming_file_and_value() {
    let Some((manager, _cleanup, _)) = v1_setup("v1_memory_limit_below_usage") else {
        return;
    };
    manager.create(&Resources::default()).unwrap();
    let mut holder = fork_waiting(hold_memory);
    manager.add_process(holder.pid).unwrap();
    holder.release();
    let start = Instant::now();
    while manager.stats().unwrap().memory_usage.unwrap_or(0) < 16 * MIB {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "child never touched its memory"
        );
        thread::sleep(Duration::from_millis(10));
    }

    let too_small = Resources {
        memory: Some(Limit::Value(MIB)),
        ..Resources::default()
    };
    let error = manager.apply(&too_small).unwrap_err();
    let message = error.to_string();
    assert!(message.contains("memory.limit_in_bytes"), "{message}");
    assert!(message.contains("\"1048576\""), "{message}");
    let CgroupError::Write { source, .. } = &error else {
        panic!("expected a write error, got {error:?}");
    };
    assert_eq!(
        source.raw_os_error(),
        Some(Errno::EBUSY as i32),
        "{error:?}"
    );

    manager.kill_all(Signal::SIGKILL).unwrap();
    assert!(matches!(
        holder.wait(),
        WaitStatus::Signaled(_, Signal::SIGKILL, _)
    ));
    manager.delete().unwrap();
}

#[test]
fn v1_memory_hog_is_oom_killed_and_counted() {
    let Some((manager, _cleanup, _)) = v1_setup("v1_memory_hog_is_oom_killed") else {
        return;
    };
    let resources = Resources {
        memory: Some(Limit::Value(32 * MIB)),
        memory_swap: Some(Limit::Value(32 * MIB)),
        ..Resources::default()
    };
    manager.create(&resources).unwrap();
    assert_eq!(manager.stats().unwrap().oom_kills, Some(0));

    let mut hog_child = fork_waiting(hog);
    manager.add_process(hog_child.pid).unwrap();
    hog_child.release();
    let status = hog_child.wait();
    assert!(
        matches!(status, WaitStatus::Signaled(_, Signal::SIGKILL, _)),
        "the hog was not OOM-killed: {status:?}"
    );
    let stats = manager.stats().unwrap();
    assert!(stats.oom_kills.is_some_and(|kills| kills >= 1), "{stats:?}");
    assert_eq!(manager.oom_kills().unwrap(), stats.oom_kills);
    manager.delete().unwrap();
}

/// A forked child moves itself into every hierarchy through `open_self_join` (the `tasks`
/// files), as a container's first process does.
#[test]
fn v1_a_child_joins_its_cgroup_itself() {
    let Some((manager, _cleanup, hierarchies)) = v1_setup("v1_a_child_joins_its_cgroup_itself")
    else {
        return;
    };
    manager.create(&Resources::default()).unwrap();
    let files = manager.open_self_join().unwrap();
    assert_eq!(files.len(), hierarchies.mount_points().len());
    let (result_read, result_write) = nix::unistd::pipe().unwrap();
    let (release_read, release_write) = nix::unistd::pipe().unwrap();
    // SAFETY: the child only writes to cgroupfs and pipes, then _exits.
    match unsafe { nix::unistd::fork() }.unwrap() {
        nix::unistd::ForkResult::Child => {
            drop((result_read, release_write));
            let code = u8::from(crate::cgroups::join_self(&files).is_err());
            let _ = nix::unistd::write(&result_write, &[code]);
            // Stay until the parent has looked.
            let mut byte = [0u8; 1];
            let _ = nix::unistd::read(release_read.as_raw_fd(), &mut byte);
            // SAFETY: ends the forked test child without running the harness's handlers.
            unsafe { libc::_exit(0) }
        }
        nix::unistd::ForkResult::Parent { child } => {
            drop((files, result_write, release_read));
            let mut code = [9u8; 1];
            nix::unistd::read(result_read.as_raw_fd(), &mut code).unwrap();
            assert_eq!(code[0], 0, "join_self failed in the child");
            assert_eq!(manager.processes().unwrap(), vec![child]);
            let expected = format!("/{}", manager.path().display());
            for controllers in ["memory", "pids", "freezer", "cpu", "blkio"] {
                assert_eq!(
                    proc_cgroup(child, controllers).as_deref(),
                    Some(expected.as_str()),
                    "{controllers}"
                );
            }
            drop(release_write);
            let _ = nix::sys::wait::waitpid(child, None);
        }
    }
}
