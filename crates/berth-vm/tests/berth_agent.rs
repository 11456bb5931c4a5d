//! berth's own binary as the guest's /init: PID 1 with /berth/agent.json
//! runs the agent (crates/berth/src/main.rs), any other berth process in the
//! guest is the CLI.
//!
//! The binary is the workspace's `berth` (BERTH_VM_BERTH, else beside this
//! test's `deps/` directory, where `cargo build`/`nextest run --workspace`
//! put it); without it the test is skipped, saying so.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod common;

use std::path::PathBuf;

use berth_vm::{GuestRoot, RunRequest, Share, Vm};
use common::{assert_nothing_left, fixture_rootfs, request, setup_with};

fn berth_binary() -> Option<PathBuf> {
    let path = match std::env::var_os("BERTH_VM_BERTH") {
        Some(path) => PathBuf::from(path),
        None => std::env::current_exe()
            .ok()?
            .parent()?
            .parent()?
            .join("berth"),
    };
    if path.is_file() {
        Some(path)
    } else {
        eprintln!(
            "skipped: no berth binary at {path:?} (cargo build -p berth, or set BERTH_VM_BERTH)"
        );
        None
    }
}

#[test]
fn berth_itself_is_the_guest_agent() {
    let Some(berth) = berth_binary() else { return };
    let Some(setup) = setup_with(&berth, true) else {
        return;
    };
    let mut vm = Vm::boot(&setup.config).unwrap();
    eprintln!("booted berth as /init in {:?}", vm.boot_times().ready);
    assert_eq!(vm.kernel_release(), setup.kernel.release);

    // In the guest, a berth that is not PID 1 is the ordinary CLI.
    let output = vm.run(&request(&["/init", "--version"])).unwrap();
    assert_eq!(output.exit.code, 0, "{output:?}");
    assert!(
        String::from_utf8_lossy(&output.stdout).starts_with("berth version "),
        "{output:?}"
    );
    let output = vm.run(&request(&["sh", "-c", "exit 7"])).unwrap();
    assert_eq!(output.exit.code, 7);

    let (pid, dir) = (vm.pid().unwrap(), vm.dir().to_path_buf());
    drop(vm);
    assert_nothing_left(pid, &dir, &setup.config.run_dir);
}

#[test]
fn berth_as_agent_runs_a_virtiofs_root() {
    let Some(berth) = berth_binary() else { return };
    if let Err(error) = berth_vm::virtiofs::find_virtiofsd() {
        eprintln!("skipped: {error}");
        return;
    }
    // No busybox in the initramfs: berth is all there is besides modules.
    let Some(mut setup) = setup_with(&berth, false) else {
        return;
    };
    let rootfs = setup.dir.path().join("rootfs");
    fs_err::create_dir(&rootfs).unwrap();
    let Some(rootfs) = fixture_rootfs(&rootfs) else {
        return;
    };
    setup.config.shares = vec![Share::root("root", &rootfs, false)];
    let mut vm = Vm::boot(&setup.config).unwrap();
    let output = vm
        .run(&RunRequest {
            root: Some(GuestRoot {
                tag: "root".into(),
                read_only: false,
                subdir: None,
            }),
            ..request(&["sh", "-c", "echo hi; head -n 1 /etc/passwd"])
        })
        .unwrap();
    assert_eq!(output.exit.code, 0, "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "hi\nroot:x:0:0:root:/root:/bin/sh\n"
    );
    let (pid, dir) = (vm.pid().unwrap(), vm.dir().to_path_buf());
    drop(vm);
    assert_nothing_left(pid, &dir, &setup.config.run_dir);
}
