//! `--platform` and `FROM --platform`: a build for linux/arm64 on this
//! amd64 host takes the arm64 base image (Debian's arm64 busybox-static,
//! `busybox-arm64-docker.tar`), gives its image that platform, runs its RUN
//! steps through qemu-user-static's binfmt_misc handler when one is
//! registered, and refuses them with what to install when none is. The
//! test registers a handler of its own for the emulated part and removes
//! it (and the binfmt_misc mount, if it made it) when it ends.

use std::path::Path;

use super::{context, inspect};
use crate::support::{fixtures, Berth};

const BINFMT: &str = "/proc/sys/fs/binfmt_misc";
const EMULATOR: &str = "/usr/bin/qemu-aarch64-static";
/// qemu-user-static's handler for systemd-binfmt.
const DEBIAN_HANDLER: &str = "/usr/lib/binfmt.d/qemu-aarch64.conf";
const HANDLER: &str = "berth-test-aarch64";

/// A binfmt_misc handler for aarch64 ELF binaries that this test
/// registered (Debian's qemu-user-static line, with its F flag);
/// removed on drop, with the mount when the test made it.
struct Aarch64Handler {
    mounted: bool,
}

impl Aarch64Handler {
    fn register() -> Self {
        let mounted = !Path::new(BINFMT).join("status").exists();
        if mounted {
            let status = std::process::Command::new("mount")
                .args(["-t", "binfmt_misc", "binfmt_misc", BINFMT])
                .status()
                .unwrap();
            assert!(status.success(), "failed to mount binfmt_misc");
        }
        let handler = Self { mounted };
        // Debian's own registration (its interpreter is the `-binfmt-P`
        // name, which tells qemu that argv[0] is kept: busybox's applets
        // need it), under a name of this test's.
        let debian = fs_err::read_to_string(DEBIAN_HANDLER).unwrap();
        let line = debian
            .trim()
            .replacen(":qemu-aarch64:", &format!(":{HANDLER}:"), 1);
        fs_err::write(Path::new(BINFMT).join("register"), line).unwrap();
        handler
    }
}

impl Drop for Aarch64Handler {
    fn drop(&mut self) {
        let _ = fs_err::write(Path::new(BINFMT).join(HANDLER), "-1");
        if self.mounted {
            let _ = std::process::Command::new("umount").arg(BINFMT).status();
        }
    }
}

/// An enabled handler for aarch64 binaries other than this test's.
fn host_has_aarch64_handler() -> bool {
    let Ok(entries) = fs_err::read_dir(BINFMT) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let text = fs_err::read_to_string(entry.path()).unwrap_or_default();
        text.starts_with("enabled") && text.contains("0200b700")
    })
}

#[test]
fn a_build_for_arm64_takes_the_arm64_base_and_runs_through_the_emulator() {
    let archive = fixtures().join("busybox-arm64-docker.tar");
    if !archive.exists() {
        eprintln!(
            "SKIP: no busybox-arm64-docker.tar (make-fixtures.sh could not reach Debian's mirror)"
        );
        return;
    }
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth.load("busybox-arm64-docker.tar");
    berth.run(&["tag", "busybox-arm64", "base:multi"]).ok();

    // No RUN: nothing to emulate. The target platform reaches the args and
    // the image; FROM --platform=$BUILDPLATFORM stays on the host's.
    let copy_only = context(&[
        (
            "Dockerfile",
            "FROM --platform=$BUILDPLATFORM busybox AS tools\n\
             FROM busybox-arm64 AS app\nARG TARGETPLATFORM\nARG BUILDARCH\n\
             ENV BUILT_FOR=$TARGETPLATFORM BUILT_ON=$BUILDARCH\n\
             COPY --from=tools /bin/busybox /host-busybox\n\
             FROM scratch AS empty\nCOPY f /f\n",
        ),
        ("f", "x"),
    ]);
    let path = copy_only.path().to_str().unwrap();
    berth
        .run(&[
            "build",
            "--platform",
            "linux/arm64",
            "--target",
            "app",
            "-t",
            "for-arm",
            path,
        ])
        .ok();
    assert_eq!(inspect(&berth, "for-arm", "{{.Architecture}}"), "arm64");
    let env = inspect(&berth, "for-arm", "{{json .Config.Env}}");
    assert!(env.contains("BUILT_FOR=linux/arm64"), "{env}");
    assert!(env.contains("BUILT_ON=amd64"), "{env}");
    berth
        .run(&[
            "build",
            "--platform",
            "linux/arm64",
            "--target",
            "empty",
            "-t",
            "empty-arm",
            path,
        ])
        .ok();
    assert_eq!(inspect(&berth, "empty-arm", "{{.Architecture}}"), "arm64");
    // The same scratch stage for the host is another image, not a cache hit.
    berth
        .run(&["build", "--target", "empty", "-t", "empty-host", path])
        .ok();
    assert_eq!(inspect(&berth, "empty-host", "{{.Architecture}}"), "amd64");

    // A local image of another platform is not taken for the one asked.
    let wrong = context(&[("Dockerfile", "FROM busybox\nCOPY Dockerfile /\n")]);
    let failed = berth.run(&[
        "build",
        "--platform",
        "linux/arm64",
        wrong.path().to_str().unwrap(),
    ]);
    assert_eq!(failed.code(), 1, "{}", failed.stderr());
    assert!(
        failed
            .stderr()
            .contains("the local image busybox is for linux/amd64, not linux/arm64"),
        "{}",
        failed.stderr()
    );
    let bad = berth.run(&["build", "--platform", "windows/amd64", path]);
    assert_eq!(bad.code(), 1);
    assert!(
        bad.stderr().contains("berth builds images for linux only"),
        "{}",
        bad.stderr()
    );

    let run = context(&[(
        "Dockerfile",
        "FROM busybox-arm64\nRUN uname -m > /machine && ls /bin | wc -l > /applets\n",
    )]);
    let run_path = run.path().to_str().unwrap();
    if !Path::new(EMULATOR).exists() || !Path::new(DEBIAN_HANDLER).exists() {
        eprintln!("SKIP (emulated part): {EMULATOR} missing (apt-get install qemu-user-static)");
        return;
    }
    if host_has_aarch64_handler() {
        eprintln!("SKIP (the no-emulator part): the host has an aarch64 binfmt_misc handler");
    } else {
        let refused = berth.run(&["build", "--platform", "linux/arm64", run_path]);
        assert_eq!(refused.code(), 1, "{}", refused.stderr());
        assert!(
            refused
                .stderr()
                .contains("cannot run RUN steps for platform linux/arm64"),
            "{}",
            refused.stderr()
        );
        assert!(
            refused.stderr().contains("qemu-user-static"),
            "{}",
            refused.stderr()
        );
        assert_eq!(berth.run(&["ps", "-aq"]).ok(), "", "no step container left");
    }

    let _handler = Aarch64Handler::register();
    berth
        .run(&[
            "build",
            "--platform",
            "linux/arm64",
            "-t",
            "ran-arm",
            run_path,
        ])
        .ok();
    assert_eq!(inspect(&berth, "ran-arm", "{{.Architecture}}"), "arm64");
    let machine = berth.run(&[
        "run",
        "--rm",
        "--platform",
        "linux/arm64",
        "ran-arm",
        "cat",
        "/machine",
    ]);
    assert_eq!(machine.ok(), "aarch64\n");
    assert_eq!(berth.run(&["ps", "-aq"]).ok(), "");
}
