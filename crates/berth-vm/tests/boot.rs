//! Real microVMs under QEMU (TCG on this machine kind): berth's guest kernel
//! (or Debian's), the agent as /init, busybox from Debian's busybox-static as
//! the root.
//!
//! Needs qemu-system-x86_64 (skipped, saying so, without it), /bin/busybox,
//! and the kernel package: BERTH_VM_KERNEL_DIR, or else
//! scripts/vm-kernel-minimal.sh builds berth's into cargo's target tmp dir
//! once (scripts/vm-kernel.sh DIR puts Debian's package in DIR instead).

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod common;

use berth_vm::kernel::{self, KernelError};
use berth_vm::vm::Shutdown;
use berth_vm::{RunRequest, Vm, VmError};
use common::{assert_nothing_left, request, setup};

#[test]
fn boots_the_guest_kernel_and_runs_commands() {
    let Some(setup) = setup() else { return };
    let mut vm = Vm::boot(&setup.config).unwrap();
    let times = vm.boot_times();
    eprintln!(
        "booted {} in {:?} ({times:?})",
        vm.kernel_release(),
        times.ready
    );

    // The guest runs its own kernel, not the host's.
    let host = fs_err::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(vm.kernel_release(), setup.kernel.release);
    assert_ne!(vm.kernel_release(), host.trim());
    let output = vm.run(&request(&["uname", "-r"])).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("{}\n", setup.kernel.release)
    );
    assert_eq!((output.exit.code, output.exit.error), (0, None));

    let output = vm.run(&request(&["sh", "-c", "exit 3"])).unwrap();
    assert_eq!(output.exit.code, 3);

    let output = vm
        .run(&request(&["sh", "-c", "echo out; echo err >&2; echo more"]))
        .unwrap();
    assert_eq!(output.stdout, b"out\nmore\n");
    assert_eq!(output.stderr, b"err\n");
    assert_eq!(output.exit.code, 0);

    let output = vm.run(&request(&["no-such-command", "x"])).unwrap();
    assert_eq!(output.exit.code, 127);
    assert_eq!(
        output.exit.error.as_deref(),
        Some(r#"exec: "no-such-command": executable file not found in $PATH"#)
    );
    assert!(output.stdout.is_empty() && output.stderr.is_empty());

    let output = vm.run(&request(&["sh", "-c", "kill -9 $$"])).unwrap();
    assert_eq!(output.exit.code, 128 + 9);

    // The environment is exactly what was asked (plus Docker's default PATH),
    // and the working directory is made if missing, as Docker does.
    let output = vm
        .run(&RunRequest {
            args: vec![
                "sh".into(),
                "-c".into(),
                "echo $FOO; pwd; echo $PATH".into(),
            ],
            env: vec!["FOO=bar baz".into()],
            cwd: "/work/dir".into(),
            root: None,
            mounts: vec![],
            container: None,
            stdin: false,
            networks: vec![],
            embedded_dns: false,
        })
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "bar baz\n/work/dir\n/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
    );

    // Output larger than a frame and than the port's buffers arrives whole.
    let output = vm
        .run(&request(&["head", "-c", "300000", "/dev/zero"]))
        .unwrap();
    assert_eq!(output.stdout.len(), 300_000);
    assert!(output.stdout.iter().all(|&byte| byte == 0));

    // A paused VM runs nothing until it is resumed.
    vm.pause().unwrap();
    assert_eq!(vm.status().unwrap(), "paused");
    vm.resume().unwrap();
    assert_eq!(vm.status().unwrap(), "running");
    assert_eq!(
        vm.run(&request(&["echo", "again"])).unwrap().stdout,
        b"again\n"
    );

    let (pid, dir) = (vm.pid().unwrap(), vm.dir().to_path_buf());
    assert_eq!(vm.shutdown(), Shutdown::Guest);
    assert_nothing_left(pid, &dir, &setup.config.run_dir);
}

#[test]
fn dropping_a_vm_leaves_nothing_and_a_dead_one_is_reported() {
    let Some(setup) = setup() else { return };

    // Dropped while running: the guest is told to power off.
    let mut vm = Vm::boot(&setup.config).unwrap();
    assert_eq!(vm.run(&request(&["true"])).unwrap().exit.code, 0);
    let (pid, dir) = (vm.pid().unwrap(), vm.dir().to_path_buf());
    drop(vm);
    assert_nothing_left(pid, &dir, &setup.config.run_dir);

    // QEMU killed under it: the next run says so, with the console.
    let mut vm = Vm::boot(&setup.config).unwrap();
    let (pid, dir) = (vm.pid().unwrap(), vm.dir().to_path_buf());
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::SIGKILL,
    )
    .unwrap();
    let error = vm.run(&request(&["true"])).unwrap_err();
    assert!(matches!(error, VmError::AgentGone { .. }), "{error}");
    assert!(error.to_string().contains("signal: 9"), "{error}");
    drop(vm);
    assert_nothing_left(pid, &dir, &setup.config.run_dir);
}

#[test]
fn a_missing_kernel_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let error = kernel::prepare(&dir.path().join("no-kernel"), dir.path()).unwrap_err();
    assert!(matches!(error, KernelError::MissingDir { .. }));
    let message = error.to_string();
    assert!(
        message.contains("no-kernel") && message.contains("linux-image"),
        "{message}"
    );
}

#[test]
fn a_kernel_qemu_cannot_load_fails_clearly_and_leaves_nothing() {
    let Some(mut setup) = setup() else { return };
    let bogus = setup.config.run_dir.with_file_name("not-a-kernel");
    fs_err::write(&bogus, b"this is not a kernel").unwrap();
    setup.config.kernel = bogus;
    let error = Vm::boot(&setup.config).err().unwrap();
    assert!(matches!(error, VmError::BootFailed { .. }), "{error}");
    let message = error.to_string();
    eprintln!("{message}");
    // QEMU's own words reach the caller.
    assert!(message.contains("--- qemu"), "{message}");
    assert_eq!(fs_err::read_dir(&setup.config.run_dir).unwrap().count(), 0);
}
