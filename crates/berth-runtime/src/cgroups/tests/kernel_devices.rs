//! Device rules on the kernel: v1 `devices.list` as Docker shows it, and the v2 BPF device
//! program attached to a real cgroup2 hierarchy (on a hybrid machine the one at
//! `/sys/fs/cgroup/unified`, which has no controllers but runs device programs all the same).
//! A forked child in the cgroup makes nodes in a private tmpfs and opens them.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use fs_err::os::unix::fs::OpenOptionsExt;
use nix::sys::wait::WaitStatus;

use super::kernel::{fork_waiting, read, running_as_root, unique_name, CgroupCleanup};
use crate::cgroups::{CgroupManager, CgroupVersion, Resources, V1Manager, V2Manager};
use crate::devices::{bpf, container_rules, Access, DeviceKind, DeviceRule};

/// What the child checks, one exit code per step that went wrong (0: all as expected).
/// Only raw syscalls: the test process has other threads whose locks the child inherits.
fn default_rules_hold() -> ! {
    // SAFETY: each call gets NUL-terminated static strings or null where the kernel
    // allows it; the child is single-threaded and ends with _exit.
    unsafe {
        let null = std::ptr::null::<libc::c_char>();
        let fail = |code: i32| -> ! { libc::_exit(code) };
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            fail(10);
        }
        let private = libc::MS_REC | libc::MS_PRIVATE;
        if libc::mount(null, c"/".as_ptr(), null, private, std::ptr::null()) != 0 {
            fail(11);
        }
        if libc::mount(
            c"tmpfs".as_ptr(),
            c"/tmp".as_ptr(),
            c"tmpfs".as_ptr(),
            0,
            std::ptr::null(),
        ) != 0
        {
            fail(12);
        }
        let errno = || *libc::__errno_location();
        let node = |path: &std::ffi::CStr, major: u32, minor: u32| {
            libc::mknod(
                path.as_ptr(),
                libc::S_IFCHR | 0o600,
                libc::makedev(major, minor),
            )
        };
        // /dev/null's numbers: made and opened.
        if node(c"/tmp/null", 1, 3) != 0 {
            fail(13);
        }
        let fd = libc::open(c"/tmp/null".as_ptr(), libc::O_WRONLY);
        if fd < 0 {
            fail(14);
        }
        libc::close(fd);
        // /dev/kmsg and /dev/kvm: mknod is allowed (`c *:* m`), opening is not.
        for (path, major, minor, step) in [(c"/tmp/kmsg", 1, 11, 15), (c"/tmp/kvm", 10, 232, 17)] {
            if node(path, major, minor) != 0 {
                fail(step);
            }
            let fd = libc::open(path.as_ptr(), libc::O_RDWR);
            if fd >= 0 {
                libc::close(fd);
                fail(step + 1);
            }
            if errno() != libc::EPERM {
                fail(step + 1);
            }
        }
        libc::_exit(0)
    }
}

/// Runs [`default_rules_hold`] in a child placed in `manager`'s cgroup and asserts it passed.
fn assert_child_restricted(manager: &dyn CgroupManager) {
    let mut child = fork_waiting(default_rules_hold);
    manager.add_process(child.pid).unwrap();
    child.release();
    assert_eq!(
        child.wait(),
        WaitStatus::Exited(child.pid, 0),
        "see default_rules_hold for the step that failed"
    );
}

fn default_resources() -> Resources {
    Resources {
        devices: Some(container_rules(false, &[])),
        ..Resources::default()
    }
}

/// Docker 20.10's `devices.list` in a default container, line for line.
const DOCKER_DEFAULT_LIST: &str = "\
b *:* m
c *:* m
c 1:3 rwm
c 1:5 rwm
c 1:7 rwm
c 1:8 rwm
c 1:9 rwm
c 5:0 rwm
c 5:1 rwm
c 5:2 rwm
c 10:200 rwm
c 136:* rwm";

#[test]
fn v1_devices_list_is_dockers_and_is_enforced() {
    let test = "v1_devices_list_is_dockers_and_is_enforced";
    if !running_as_root(test) {
        return;
    }
    let hierarchies = match CgroupVersion::detect() {
        Ok(CgroupVersion::V1(hierarchies)) if hierarchies.mount_point("devices").is_some() => {
            hierarchies
        }
        other => {
            eprintln!("skipping {test}: no v1 devices hierarchy ({other:?})");
            return;
        }
    };
    let name = unique_name();
    let _cleanup = CgroupCleanup {
        dirs: hierarchies
            .mount_points()
            .into_iter()
            .map(|point| point.join(&name))
            .collect(),
    };
    let manager = V1Manager::new(hierarchies, Path::new(&name).join("c"));
    manager.create(&default_resources()).unwrap();
    let list = manager.dir("devices").unwrap().join("devices.list");
    assert_eq!(read(&list), DOCKER_DEFAULT_LIST);
    assert_child_restricted(&manager);

    // --device /dev/fuse adds its line where Docker's list has it.
    let fuse = DeviceRule::allow(DeviceKind::Char, 10, 229, Access::ALL);
    manager
        .apply(&Resources {
            devices: Some(container_rules(false, &[fuse])),
            ..Resources::default()
        })
        .unwrap();
    let with_fuse = read(&list);
    assert!(
        with_fuse.contains("c 10:200 rwm\nc 10:229 rwm\nc 136:* rwm"),
        "{with_fuse}"
    );

    // --privileged.
    manager
        .apply(&Resources {
            devices: Some(container_rules(true, &[])),
            ..Resources::default()
        })
        .unwrap();
    assert_eq!(read(&list), "a *:* rwm");
}

/// The cgroup2 hierarchy to test device programs in, if this machine has one.
fn cgroup2_root() -> Option<PathBuf> {
    let unified = Path::new("/sys/fs/cgroup/unified");
    if unified.join("cgroup.procs").exists() {
        return Some(unified.to_owned());
    }
    match CgroupVersion::detect() {
        Ok(CgroupVersion::V2(root)) => Some(root.root),
        _ => None,
    }
}

fn open_dir(path: &Path) -> OwnedFd {
    fs_err::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(path)
        .map(OwnedFd::from)
        .unwrap()
}

#[test]
fn v2_device_program_is_enforced_on_the_kernel() {
    let test = "v2_device_program_is_enforced_on_the_kernel";
    if !running_as_root(test) {
        return;
    }
    let Some(root) = cgroup2_root() else {
        eprintln!(
            "skipping {test}: no cgroup2 hierarchy at /sys/fs/cgroup/unified or /sys/fs/cgroup"
        );
        return;
    };
    let name = unique_name();
    let _cleanup = CgroupCleanup {
        dirs: vec![root.join(&name)],
    };
    let manager = V2Manager::new(root.clone(), Path::new(&name).join("c"));
    manager.create(&default_resources()).unwrap();
    let cgroup = open_dir(&manager.dir());
    assert_eq!(bpf::attached(cgroup.as_fd()).unwrap().len(), 1);
    assert_child_restricted(&manager);

    // Applying again replaces the program rather than stacking a second one.
    manager.apply(&default_resources()).unwrap();
    assert_eq!(bpf::attached(cgroup.as_fd()).unwrap().len(), 1);
    assert_child_restricted(&manager);

    // --privileged: no program is left on the cgroup.
    manager
        .apply(&Resources {
            devices: Some(container_rules(true, &[])),
            ..Resources::default()
        })
        .unwrap();
    assert!(bpf::attached(cgroup.as_fd()).unwrap().is_empty());
}
