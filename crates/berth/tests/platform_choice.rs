//! `--platform` on `run` and `create`: a local image of another platform is treated as
//! missing, as Docker does (it pulls the one asked for), never run without a word.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use support::Berth;

#[test]
fn a_local_image_of_another_platform_is_not_used() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar"); // linux/amd64
    for command in ["run", "create"] {
        let mut args = vec![command];
        if command == "run" {
            args.push("--rm");
        }
        args.extend([
            "--pull",
            "never",
            "--platform",
            "linux/arm64",
            "busybox",
            "true",
        ]);
        let stderr = berth.run(&args).fails(125);
        assert!(
            stderr.contains(
                "image with reference busybox was found but does not match the specified platform: wanted linux/arm64, actual: linux/amd64"
            ),
            "{command}: {stderr}"
        );
    }
    assert_eq!(berth.run(&["ps", "-aq"]).ok(), "", "nothing was created");
    // The platform the image is for runs.
    berth
        .run(&[
            "run",
            "--rm",
            "--network",
            "none",
            "--platform",
            "linux/amd64",
            "busybox",
            "true",
        ])
        .ok();
}

/// An image of another platform than the host's, with no `--platform`: it
/// runs (here its programs are the host's), with dockerd's warning first;
/// asking for its platform silences it.
#[test]
fn an_image_of_another_platform_runs_with_dockers_warning() {
    let berth = Berth::new();
    let archive = tempfile::NamedTempFile::new().unwrap();
    support::write_arm64_busybox(archive.path());
    berth
        .run(&["load", "-i", archive.path().to_str().unwrap()])
        .ok();
    let warning = "WARNING: The requested image's platform (linux/arm64/v8) does not match the \
                   detected host platform (linux/amd64) and no specific platform was requested\n";
    for command in ["run", "create"] {
        let mut args = vec![command];
        if command == "run" {
            args.extend(["--rm", "--network", "none"]);
        }
        args.extend(["busybox-arm64", "echo", "hi"]);
        let run = berth.run(&args);
        assert_eq!(run.code(), 0, "{}", run.stderr());
        assert_eq!(run.stderr(), warning, "{command}");
    }
    let run = berth.run(&[
        "run",
        "--rm",
        "--network",
        "none",
        "--platform",
        "linux/arm64",
        "busybox-arm64",
        "echo",
        "hi",
    ]);
    assert_eq!((run.stdout().as_str(), run.stderr().as_str()), ("hi\n", ""));
    berth.run(&["container", "prune", "-f"]).ok();
}
