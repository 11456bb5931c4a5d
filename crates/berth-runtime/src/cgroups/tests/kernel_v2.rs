//! V2Manager on a real cgroup2 file system mounted for the test. On a hybrid machine the
//! unified hierarchy has no resource controllers (they are bound to v1), but the core —
//! cgroup.procs, cgroup.freeze, cgroup.kill, CLONE_INTO_CGROUP — works all the same.

use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::mount::{mount, umount2, MntFlags, MsFlags};
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::waitpid;
use nix::unistd::Pid;
use tempfile::TempDir;

use super::kernel::{proc_cgroup, read, running_as_root, unique_name, CgroupCleanup, Sleeper};
use crate::cgroups::{CgroupError, CgroupManager, Limit, Resources, V2Manager, V2Root};

/// A cgroup2 mount in a temporary directory, unmounted on drop.
struct Cgroup2Mount {
    dir: TempDir,
}

impl Drop for Cgroup2Mount {
    fn drop(&mut self) {
        if let Err(error) = umount2(self.dir.path(), MntFlags::MNT_DETACH) {
            eprintln!(
                "cleanup: failed to unmount {}: {error}",
                self.dir.path().display()
            );
        }
    }
}

/// Fields drop in order: the test's cgroups go before the mount, the mount before its dir.
struct V2Fixture {
    manager: V2Manager,
    _cleanup: CgroupCleanup,
    mount: Cgroup2Mount,
}

fn v2_setup(test: &str) -> Option<V2Fixture> {
    if !running_as_root(test) {
        return None;
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    if let Err(error) = mount(
        Some("cgroup2"),
        dir.path(),
        Some("cgroup2"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&str>,
    ) {
        eprintln!("skipping {test}: failed to mount cgroup2: {error}");
        return None;
    }
    let mount = Cgroup2Mount { dir };
    let root = mount.dir.path().to_owned();
    let name = unique_name();
    Some(V2Fixture {
        manager: V2Manager::new(root.clone(), Path::new(&name).join("c")),
        _cleanup: CgroupCleanup {
            dirs: vec![root.join(&name)],
        },
        mount,
    })
}

impl V2Fixture {
    fn root(&self) -> PathBuf {
        self.mount.dir.path().to_owned()
    }

    fn file(&self, name: &str) -> PathBuf {
        self.manager.dir().join(name)
    }
}

#[test]
fn v2_container_lifecycle_on_the_kernel() {
    let Some(fixture) = v2_setup("v2_container_lifecycle_on_the_kernel") else {
        return;
    };
    let manager = &fixture.manager;
    let unified = V2Root::at(fixture.root()).unwrap();
    eprintln!("cgroup2 controllers here: {:?}", unified.controllers);
    manager.create(&Resources::default()).unwrap();
    assert!(manager.dir().is_dir());

    if !unified.controllers.iter().any(|name| name == "pids") {
        // pids is bound to v1 on this machine: asking for a limit must say so.
        let pids = Resources {
            pids_limit: Some(Limit::Value(10)),
            ..Resources::default()
        };
        let error = manager.apply(&pids).unwrap_err();
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

    let mut sleeper = Sleeper::spawn();
    let pid = sleeper.pid();
    manager.add_process(pid).unwrap();
    assert_eq!(manager.processes().unwrap(), vec![pid]);
    let expected = format!("/{}", manager.path().display());
    assert_eq!(proc_cgroup(pid, "").as_deref(), Some(expected.as_str()));

    manager.freeze().unwrap();
    assert!(read(&fixture.file("cgroup.events")).contains("frozen 1"));
    manager.thaw().unwrap();
    assert!(read(&fixture.file("cgroup.events")).contains("frozen 0"));

    let stats = manager.stats().unwrap();
    eprintln!("{stats:?}");
    assert!(stats.cpu_usage_ns.is_some(), "cpu.stat is core on v2");

    manager.kill_all(Signal::SIGKILL).unwrap();
    let status = sleeper.child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");

    manager.delete().unwrap();
    assert!(!manager.dir().exists());
    manager.delete().unwrap();
}

/// `struct clone_args` of clone3(2), up to `cgroup` (CLONE_ARGS_SIZE_VER2).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// From linux/sched.h; libc's constant is an overflowing `c_int`.
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

#[test]
fn v2_clone_into_cgroup_starts_the_child_inside() {
    let Some(fixture) = v2_setup("v2_clone_into_cgroup_starts_the_child_inside") else {
        return;
    };
    let manager = &fixture.manager;
    manager.create(&Resources::default()).unwrap();
    let cgroup = manager.open_for_clone_into().unwrap().expect("v2 has a fd");

    let args = CloneArgs {
        flags: CLONE_INTO_CGROUP,
        exit_signal: libc::SIGCHLD as u64,
        cgroup: cgroup.as_raw_fd() as u64,
        ..CloneArgs::default()
    };
    // SAFETY: args is a valid clone_args of the size passed. With no stack given, the child
    // runs on a copy of this stack like after fork(2), and only calls pause(2) until killed.
    let result = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &args as *const CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    if result == 0 {
        loop {
            // SAFETY: pause(2) only waits for a signal.
            unsafe { libc::pause() };
        }
    }
    if result < 0 {
        let errno = Errno::last();
        eprintln!("skipping: clone3(CLONE_INTO_CGROUP) failed: {errno}");
        assert!(matches!(errno, Errno::ENOSYS | Errno::E2BIG), "{errno}");
        return;
    }
    let child = Pid::from_raw(i32::try_from(result).expect("pid fits in i32"));
    let in_cgroup = manager.processes();
    let path = proc_cgroup(child, "");
    let _ = kill(child, Signal::SIGKILL);
    let _ = waitpid(child, None);

    assert_eq!(in_cgroup.unwrap(), vec![child]);
    assert_eq!(path, Some(format!("/{}", manager.path().display())));
    manager.delete().unwrap();
}

#[test]
fn v2_kill_all_without_cgroup_kill_signals_each_process() {
    let Some(fixture) = v2_setup("v2_kill_all_signals_each_process") else {
        return;
    };
    let manager = &fixture.manager;
    manager.create(&Resources::default()).unwrap();
    let mut sleeper = Sleeper::spawn();
    manager.add_process(sleeper.pid()).unwrap();
    // SIGTERM cannot go through cgroup.kill, which only kills.
    manager.kill_all(Signal::SIGTERM).unwrap();
    let status = sleeper.child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    manager.delete().unwrap();
}
