//! The container's files over virtio-fs in real microVMs (TCG here): a host
//! directory holding the fixtures' busybox rootfs is the guest's root, more
//! shares are mounted inside it, read-only where asked, and nothing is left
//! once the VM ends.
//!
//! Needs what tests/boot.rs needs, plus virtiofsd (scripts/vm-tools.sh) and
//! the fixtures (scripts/make-fixtures.sh, BERTH_FIXTURES); each missing one
//! skips the test, saying so.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use berth_vm::vm::Shutdown;
use berth_vm::{virtiofs, GuestMount, GuestRoot, RunRequest, Share, Vm, VmError};
use common::{assert_nothing_left, fixture_rootfs, processes_mentioning, setup, Setup};

struct Shared {
    setup: Setup,
    root: PathBuf,
    data: PathBuf,
    read_only: PathBuf,
    _dirs: tempfile::TempDir,
}

/// A VM configuration with three shares: `root` (the fixture rootfs),
/// `data` (writable) and `ro` (read-only in virtiofsd).
fn shared() -> Option<Shared> {
    if let Err(error) = virtiofs::find_virtiofsd() {
        eprintln!("skipped: {error}");
        return None;
    }
    let mut setup = setup()?;
    let dirs = tempfile::tempdir().unwrap();
    let root = dirs.path().join("rootfs");
    fs_err::create_dir(&root).unwrap();
    fixture_rootfs(&root)?;
    let data = dirs.path().join("data");
    let read_only = dirs.path().join("read-only");
    for dir in [&data, &read_only] {
        fs_err::create_dir(dir).unwrap();
    }
    fs_err::write(read_only.join("hello"), "from the host\n").unwrap();
    setup.config.shares = vec![
        Share::root("root", &root, false),
        Share::new("data", &data, false),
        Share::new("ro", &read_only, true),
    ];
    Some(Shared {
        setup,
        root,
        data,
        read_only,
        _dirs: dirs,
    })
}

fn in_root(args: &[&str]) -> RunRequest {
    RunRequest {
        args: args.iter().map(|arg| arg.to_string()).collect(),
        env: vec![],
        cwd: "/".into(),
        root: Some(GuestRoot {
            tag: "root".into(),
            read_only: false,
            subdir: None,
        }),
        mounts: vec![
            GuestMount {
                tag: "data".into(),
                target: "/data".into(),
                read_only: false,
            },
            GuestMount {
                tag: "ro".into(),
                target: "/mnt/ro".into(),
                read_only: false,
            },
        ],
        container: None,
        stdin: false,
        networks: vec![],
        embedded_dns: false,
    }
}

/// Waits up to `timeout` for no live process to mention `needle`.
fn wait_gone(needle: &str, timeout: Duration) -> Vec<u32> {
    let deadline = Instant::now() + timeout;
    loop {
        let left = processes_mentioning(needle);
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_host_directory_is_the_guests_root() {
    let Some(shared) = shared() else { return };
    let mut vm = Vm::boot(&shared.setup.config).unwrap();
    let times = vm.boot_times();
    eprintln!("booted with 3 shares in {:?} ({times:?})", times.ready);
    let daemons = vm.virtiofsd_pids();
    assert_eq!(daemons.len(), 3);

    // The fixture's own /etc/passwd, not the initramfs's (which has none).
    let output = vm.run(&in_root(&["cat", "/etc/passwd"])).unwrap();
    assert_eq!(
        (output.exit.code, String::from_utf8_lossy(&output.stderr)),
        (0, "".into())
    );
    assert_eq!(
        output.stdout,
        fs_err::read(shared.root.join("etc/passwd")).unwrap()
    );

    // What the guest writes is on the host, in the root and in a share.
    let output = vm
        .run(&in_root(&[
            "sh",
            "-c",
            "echo root > /from-guest && echo data > /data/from-guest && cat /mnt/ro/hello",
        ]))
        .unwrap();
    assert_eq!(output.exit.code, 0, "{output:?}");
    assert_eq!(output.stdout, b"from the host\n");
    assert_eq!(
        fs_err::read_to_string(shared.root.join("from-guest")).unwrap(),
        "root\n"
    );
    assert_eq!(
        fs_err::read_to_string(shared.data.join("from-guest")).unwrap(),
        "data\n"
    );
    // ... and what the host writes, the guest reads.
    fs_err::write(shared.data.join("from-host"), "host\n").unwrap();
    let output = vm.run(&in_root(&["cat", "/data/from-host"])).unwrap();
    assert_eq!(output.stdout, b"host\n");

    // A read-only share refuses writes with EROFS (virtiofsd --readonly; the
    // host forced the mount read-only as well).
    let output = vm
        .run(&in_root(&["sh", "-c", "echo x > /mnt/ro/new"]))
        .unwrap();
    assert_ne!(output.exit.code, 0);
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("Read-only file system"),
        "{output:?}"
    );
    assert!(!shared.read_only.join("new").exists());

    // A mount asked read-only of a writable share is read-only in the guest.
    let mut request = in_root(&["touch", "/data-ro/x"]);
    request.mounts.push(GuestMount {
        tag: "data".into(),
        target: "/data-ro".into(),
        read_only: true,
    });
    let output = vm.run(&request).unwrap();
    assert_ne!(output.exit.code, 0);
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("Read-only file system"),
        "{output:?}"
    );
    assert!(!shared.data.join("x").exists());

    // The process is inside the root: its own /proc, /sys and a /dev with
    // Docker's nodes, not the guest's; the initramfs (the agent, its port)
    // out of reach; the working directory resolved in the root.
    let output = vm
        .run(&RunRequest {
            cwd: "/home/berthuser".into(),
            ..in_root(&[
                "sh",
                "-c",
                "pwd; test -c /dev/null && test -r /proc/self/status && test -d /sys/kernel && echo mounted; \
                 ls /dev | tr '\\n' ' '; echo; test -e /berth/agent.json || echo no-agent",
            ])
        })
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some("/home/berthuser"), "{output:?}");
    assert_eq!(lines.next(), Some("mounted"), "{output:?}");
    let dev = lines.next().unwrap_or_default();
    for node in ["null", "zero", "urandom", "tty", "pts", "shm", "ptmx"] {
        assert!(dev.split(' ').any(|name| name == node), "{node} in {dev:?}");
    }
    assert!(
        !dev.contains("vport"),
        "the agent's port is hidden: {dev:?}"
    );
    assert_eq!(lines.next(), Some("no-agent"), "{output:?}");

    // Bad requests: a tag the VM does not have is refused on the host; a
    // second root is refused by the agent, which starts nothing.
    let mut request = in_root(&["true"]);
    request.mounts[0].tag = "nope".into();
    let error = vm.run(&request).unwrap_err();
    assert!(matches!(error, VmError::UnknownShare { .. }), "{error}");
    let mut request = in_root(&["true"]);
    request.root.as_mut().unwrap().tag = "data".into();
    let error = vm.run(&request).unwrap_err();
    assert!(matches!(error, VmError::GuestSetup { .. }), "{error}");
    assert!(error.to_string().contains("\"root\" already"), "{error}");
    // The VM still serves.
    assert_eq!(vm.run(&in_root(&["true"])).unwrap().exit.code, 0);

    // After the VM: no QEMU, no virtiofsd (neither the processes berth
    // started nor their sandboxed children), nothing in the run directory.
    let (pid, dir) = (vm.pid().unwrap(), vm.dir().to_path_buf());
    assert_eq!(vm.shutdown(), Shutdown::Guest);
    assert_nothing_left(pid, &dir, &shared.setup.config.run_dir);
    for daemon in daemons {
        assert!(
            !Path::new(&format!("/proc/{daemon}")).exists(),
            "virtiofsd {daemon} left"
        );
    }
    let needle = shared.root.to_string_lossy().into_owned();
    assert_eq!(wait_gone(&needle, Duration::ZERO), Vec::<u32>::new());
}

#[test]
fn virtiofsd_ends_with_a_killed_qemu() {
    let Some(shared) = shared() else { return };
    let needle = shared.data.to_string_lossy().into_owned();
    let mut vm = Vm::boot(&shared.setup.config).unwrap();
    assert_eq!(vm.run(&in_root(&["true"])).unwrap().exit.code, 0);
    assert!(!processes_mentioning(&needle).is_empty());
    let (pid, dir) = (vm.pid().unwrap(), vm.dir().to_path_buf());
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::SIGKILL,
    )
    .unwrap();
    // The daemons see QEMU's end close and exit by themselves, before berth
    // reaps anything.
    assert_eq!(
        wait_gone(&needle, Duration::from_secs(10)),
        Vec::<u32>::new()
    );
    let error = vm.run(&in_root(&["true"])).unwrap_err();
    assert!(matches!(error, VmError::AgentGone { .. }), "{error}");
    drop(vm);
    assert_nothing_left(pid, &dir, &shared.setup.config.run_dir);
    assert_eq!(wait_gone(&needle, Duration::ZERO), Vec::<u32>::new());
}

/// A root share whose `root` directory holds the fixture rootfs, as a warm
/// member's share holds the claimed root.
fn subdir_root(subdir: &str, read_only: bool) -> GuestRoot {
    GuestRoot {
        tag: "root".into(),
        read_only,
        subdir: Some(subdir.into()),
    }
}

#[test]
fn a_staged_root_becomes_the_runs_root() {
    let Some(mut setup) = setup() else { return };
    if let Err(error) = virtiofs::find_virtiofsd() {
        eprintln!("skipped: {error}");
        return;
    }
    let share = tempfile::tempdir().unwrap();
    let root = share.path().join("root");
    fs_err::create_dir(&root).unwrap();
    if fixture_rootfs(&root).is_none() {
        return;
    }
    setup.config.shares = vec![Share::root("root", share.path(), false)];
    let mut vm = Vm::boot(&setup.config).unwrap();

    // What stages nothing, or names no subdir, is refused.
    let error = vm.stage_root(
        &GuestRoot {
            subdir: None,
            ..subdir_root("root", false)
        },
        &[],
    );
    assert!(
        matches!(&error, Err(VmError::GuestSetup { message }) if message.contains("subdir")),
        "{error:?}"
    );
    vm.stage_root(&subdir_root("root", false), &[]).unwrap();
    let error = vm.stage_root(&subdir_root("root", false), &[]);
    assert!(
        matches!(&error, Err(VmError::GuestSetup { message }) if message.contains("staged")),
        "{error:?}"
    );

    // The run's root is the subdir, read-only as asked, with the staged
    // /proc, /sys and /dev (its pts, shm and mqueue) in it.
    let mut request = in_root(&[
        "sh",
        "-c",
        "touch /x; cat /etc/passwd >/dev/null && echo own-files; \
         awk '$2 ~ \"^/(proc|sys|dev)\" {print $2, $3}' /proc/mounts | sort",
    ]);
    request.root = Some(subdir_root("root", true));
    request.mounts.clear();
    let output = vm.run(&request).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "own-files\n/dev tmpfs\n/dev/mqueue mqueue\n/dev/pts devpts\n\
         /dev/shm tmpfs\n/proc proc\n/sys sysfs\n",
        "{output:?}"
    );
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("Read-only file system"),
        "{output:?}"
    );
    assert!(!root.join("x").exists());

    // Another subdir is another root: refused.
    let mut request = in_root(&["true"]);
    request.root = Some(subdir_root("other", false));
    request.mounts.clear();
    let output = vm.run(&request);
    assert!(
        matches!(&output, Err(VmError::GuestSetup { .. })),
        "{output:?}"
    );
    let (pid, dir) = (vm.pid().unwrap(), vm.dir().to_path_buf());
    assert_eq!(vm.shutdown(), Shutdown::Guest);
    assert_nothing_left(pid, &dir, &setup.config.run_dir);
}
