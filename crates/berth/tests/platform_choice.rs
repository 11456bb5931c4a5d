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
