//! The local driver's options (`volume create -o type=… -o device=… -o o=…`)
//! as Docker 20.10 takes them: checked at create, shown by `volume inspect`,
//! mounted at the volume's `_data` when the first container that uses it
//! starts and unmounted when the last one ends (counted across containers
//! and monitors), undone by the next command after a monitor is killed.
//! The expected words are what the private Docker engine answered for the
//! same commands.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::path::{Path, PathBuf};

use support::containers::{mounts_under, parent_pid, wait_until};
use support::Berth;

fn busybox() -> Berth {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth
}

impl Berth {
    fn volume_data(&self, name: &str) -> PathBuf {
        self.root().join("volumes").join(name).join("_data")
    }

    fn is_mounted(&self, name: &str) -> bool {
        mounts_under(self.root()).contains(&self.volume_data(name))
    }

    /// `volume create -o type=none -o o=bind -o device=DIR NAME`.
    fn bind_volume(&self, name: &str, directory: &Path) {
        let device = format!("device={}", directory.display());
        let out = self
            .run(&[
                "volume",
                "create",
                "-o",
                "type=none",
                "-o",
                "o=bind",
                "-o",
                &device,
                name,
            ])
            .ok();
        assert_eq!(out, format!("{name}\n"));
    }

    #[track_caller]
    fn run_with_volume(&self, name: &str, volume: &str, script: &str) -> String {
        let mount = format!("{volume}:/d");
        self.run(&[
            "run",
            "-d",
            "--network",
            "none",
            "--name",
            name,
            "-v",
            &mount,
            "busybox",
            "sh",
            "-c",
            script,
        ])
        .ok()
        .trim()
        .to_owned()
    }

    #[track_caller]
    fn wait_for_logs(&self, name: &str, text: &str) {
        wait_until(20.0, &format!("{text:?} in the logs of {name}"), || {
            self.run(&["logs", name]).stdout().contains(text)
        });
    }

    /// The holders the volume's use count names (`<run-root>/volumes/NAME/users`).
    fn holders(&self, name: &str) -> Vec<String> {
        let users = self.run_root().join("volumes").join(name).join("users");
        let mut found: Vec<String> = fs_err::read_dir(users)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|entry| entry.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        found.sort();
        found
    }
}

#[test]
fn a_bind_volume_shows_the_host_directory_in_two_containers_until_the_last_exits() {
    let berth = busybox();
    let host = tempfile::tempdir().unwrap();
    fs_err::write(host.path().join("from-host"), "host file\n").unwrap();
    berth.bind_volume("shared", host.path());
    let inspect = berth
        .run(&[
            "volume",
            "inspect",
            "-f",
            "{{json .Options}} {{.Mountpoint}}",
            "shared",
        ])
        .ok();
    assert_eq!(
        inspect.trim(),
        format!(
            r#"{{"device":"{}","o":"bind","type":"none"}} {}"#,
            host.path().display(),
            berth.volume_data("shared").display()
        )
    );
    assert!(
        !berth.is_mounted("shared"),
        "nothing is mounted before a container uses it"
    );
    // Each runs until told to stop (a file the other writes).
    let first = berth.run_with_volume(
        "first",
        "shared",
        "cat /d/from-host; echo first > /d/first; until [ -e /d/stop-first ]; do sleep 0.05; done",
    );
    let second = berth.run_with_volume(
        "second",
        "shared",
        "cat /d/from-host; cat /d/first; until [ -e /d/stop-second ]; do sleep 0.05; done",
    );
    berth.wait_for_logs("first", "host file");
    berth.wait_for_logs("second", "first");
    assert!(berth.is_mounted("shared"));
    assert_eq!(berth.holders("shared"), {
        let mut both = vec![first.clone(), second.clone()];
        both.sort();
        both
    });
    // What a container writes is in the host directory, not under `_data`.
    assert_eq!(
        fs_err::read_to_string(host.path().join("first")).unwrap(),
        "first\n"
    );
    let refused = berth.run(&["volume", "rm", "shared"]).fails(1);
    assert!(
        refused.starts_with("Error: remove shared: volume is in use - ["),
        "{refused}"
    );
    fs_err::write(host.path().join("stop-first"), "").unwrap();
    berth.run(&["wait", "first"]).ok();
    wait_until(10.0, "the first container's use to end", || {
        berth.holders("shared") == [second.clone()]
    });
    assert!(
        berth.is_mounted("shared"),
        "the second container still uses it"
    );
    berth
        .run(&["exec", "second", "cat", "/d/from-host"])
        .ok()
        .contains("host file")
        .then_some(())
        .unwrap();
    fs_err::write(host.path().join("stop-second"), "").unwrap();
    berth.run(&["wait", "second"]).ok();
    wait_until(10.0, "the last use to unmount the volume", || {
        !berth.is_mounted("shared")
    });
    assert!(berth.holders("shared").is_empty());
    // Removing the volume never touches the host directory.
    berth.run(&["rm", "first", "second"]).ok();
    berth.run(&["volume", "rm", "shared"]).ok();
    assert!(host.path().join("from-host").exists());
    assert!(!berth.root().join("volumes/shared").exists());
    assert!(!berth.run_root().join("volumes/shared").exists());
}

#[test]
fn a_tmpfs_volume_is_mounted_with_its_size_and_owner() {
    let berth = busybox();
    berth
        .run(&[
            "volume",
            "create",
            "-o",
            "type=tmpfs",
            "-o",
            "device=tmpfs",
            "-o",
            "o=size=10m,uid=1000",
            "scratch",
        ])
        .ok();
    let out = berth
        .run(&[
            "run", "--rm", "--network", "none", "-v", "scratch:/d", "busybox", "sh", "-c",
            "df -k /d | tail -1 | awk '{print $1, $2}'; stat -c %u /d; grep ' /d ' /proc/mounts | cut -d' ' -f3; echo x > /d/f",
        ])
        .ok();
    assert_eq!(out, "tmpfs 10240\n1000\ntmpfs\n");
    assert!(!berth.is_mounted("scratch"));
    // A tmpfs lives while it is mounted: the next run gets a new one, and
    // nothing was written under `_data` on the host.
    assert_eq!(
        fs_err::read_dir(berth.volume_data("scratch"))
            .unwrap()
            .count(),
        0
    );
    let out = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            "none",
            "-v",
            "scratch:/d",
            "busybox",
            "ls",
            "/d",
        ])
        .ok();
    assert_eq!(out, "");
}

#[test]
fn bad_options_are_refused_at_create_in_dockers_words_and_leave_nothing() {
    let berth = busybox();
    for (options, words) in [
        (&["foo=bar"][..], r#"invalid option: "foo""#),
        (&["type=none"][..], r#"missing required option: "device""#),
        (&["device=/tmp"][..], r#"missing required option: "type""#),
        (&["o=bind"][..], r#"missing required option: "device""#),
        (
            &["size=10m"][..],
            "quota size requested but no quota support",
        ),
    ] {
        let mut args = vec!["volume", "create"];
        for option in options {
            args.extend(["-o", option]);
        }
        args.push("bad");
        let stderr = berth.run(&args).fails(1);
        assert_eq!(
            stderr,
            format!("Error: create bad: {words}\n"),
            "{options:?}"
        );
    }
    assert_eq!(berth.run(&["volume", "ls", "-q"]).ok(), "");
    assert!(!berth.root().join("volumes/bad").exists());
    // An existing volume is answered as it is: dockerd looks at no options.
    berth.run(&["volume", "create", "plain"]).ok();
    let out = berth
        .run(&["volume", "create", "-o", "foo=bar", "plain"])
        .ok();
    assert_eq!(out, "plain\n");
    let options = berth
        .run(&["volume", "inspect", "-f", "{{json .Options}}", "plain"])
        .ok();
    assert_eq!(options, "null\n");
    let stderr = berth
        .run(&[
            "volume",
            "create",
            "-d",
            "nfs-plugin",
            "-o",
            "type=nfs",
            "x",
        ])
        .fails(1);
    assert!(
        stderr.contains("plugin \"nfs-plugin\" not found"),
        "{stderr}"
    );
}

#[test]
fn a_missing_device_fails_the_start_in_dockers_words_and_leaves_nothing_mounted() {
    let berth = busybox();
    let parent = tempfile::tempdir().unwrap();
    let missing = parent.path().join("gone");
    berth.bind_volume("nodir", &missing);
    let stderr = berth
        .run(&[
            "run",
            "--name",
            "nodir-user",
            "--network",
            "none",
            "-v",
            "nodir:/d",
            "busybox",
            "true",
        ])
        .fails(127);
    let data = berth.volume_data("nodir");
    assert!(
        stderr.contains(&format!(
            "error while mounting volume '{}': failed to mount local volume: mount {}:{}, flags: 0x1000: no such file or directory",
            data.display(),
            missing.display(),
            data.display()
        )),
        "{stderr}"
    );
    assert!(!berth.is_mounted("nodir"));
    assert!(berth.holders("nodir").is_empty());
    // dockerd's record of it: still created, exit code 128, the error.
    let state = berth
        .run(&[
            "inspect",
            "-f",
            "{{.State.Status}} {{.State.ExitCode}} {{.State.Error}}",
            "nodir-user",
        ])
        .ok();
    assert!(
        state.starts_with("created 128 error while mounting volume '"),
        "{state}"
    );
    // Options the kernel refuses: its errno, with the data, as Docker.
    berth
        .run(&[
            "volume",
            "create",
            "-o",
            "type=tmpfs",
            "-o",
            "device=tmpfs",
            "-o",
            "o=bogus",
            "badfs",
        ])
        .ok();
    let stderr = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            "none",
            "-v",
            "badfs:/d",
            "busybox",
            "true",
        ])
        .fails(125);
    assert!(
        stderr.contains(&format!(
            "failed to mount local volume: mount tmpfs:{}, data: bogus: invalid argument",
            berth.volume_data("badfs").display()
        )),
        "{stderr}"
    );
    // The device appears: the next start mounts it.
    fs_err::create_dir(&missing).unwrap();
    fs_err::write(missing.join("now"), "here\n").unwrap();
    let out = berth.run(&["start", "-a", "nodir-user"]).ok();
    assert_eq!(out, "");
    let out = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            "none",
            "-v",
            "nodir:/d",
            "busybox",
            "cat",
            "/d/now",
        ])
        .ok();
    assert_eq!(out, "here\n");
    assert!(!berth.is_mounted("nodir"));
    // A start that fails after the mount (no such program) releases it.
    let stderr = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            "none",
            "-v",
            "nodir:/d",
            "busybox",
            "/no/such",
        ])
        .fails(127);
    assert!(stderr.contains("no such file or directory"), "{stderr}");
    assert!(!berth.is_mounted("nodir"));
    assert!(berth.holders("nodir").is_empty());
}

#[test]
fn a_killed_monitors_mount_is_undone_by_the_next_command() {
    let berth = busybox();
    let host = tempfile::tempdir().unwrap();
    berth.bind_volume("kept", host.path());
    for next in ["ps", "run"] {
        let name = format!("killed-{next}");
        berth.run_with_volume(&name, "kept", "echo up; sleep 1000");
        berth.wait_for_logs(&name, "up");
        assert!(berth.is_mounted("kept"));
        let pid: i32 = berth
            .run(&["inspect", "-f", "{{.State.Pid}}", &name])
            .ok()
            .trim()
            .parse()
            .unwrap();
        let monitor = parent_pid(pid);
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(monitor),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        wait_until(10.0, "the monitor to die", || {
            !support::containers::pid_alive(monitor)
        });
        assert!(berth.is_mounted("kept"), "nobody has looked yet");
        match next {
            // Any command that reads the container reconciles it.
            "ps" => {
                berth.run(&["ps", "-a"]).ok();
            }
            // Any start, of a container without the volume too.
            _ => {
                berth
                    .run(&["run", "--rm", "--network", "none", "busybox", "true"])
                    .ok();
            }
        }
        assert!(!berth.is_mounted("kept"), "after {next}");
        assert!(berth.holders("kept").is_empty(), "after {next}");
    }
    // The volume works as before.
    let out = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            "none",
            "-v",
            "kept:/d",
            "busybox",
            "sh",
            "-c",
            "echo again > /d/again; cat /d/again",
        ])
        .ok();
    assert_eq!(out, "again\n");
    assert_eq!(
        fs_err::read_to_string(host.path().join("again")).unwrap(),
        "again\n"
    );
}

#[test]
fn cp_of_a_stopped_container_reaches_the_mounted_volume() {
    let berth = busybox();
    let host = tempfile::tempdir().unwrap();
    fs_err::write(host.path().join("from-host"), "host file\n").unwrap();
    berth.bind_volume("copied", host.path());
    berth
        .run(&[
            "create",
            "--name",
            "stopped",
            "-v",
            "copied:/d",
            "busybox",
            "true",
        ])
        .ok();
    let outside = tempfile::tempdir().unwrap();
    let local = outside.path().join("local");
    fs_err::write(&local, "copied in\n").unwrap();
    berth
        .run(&["cp", local.to_str().unwrap(), "stopped:/d/in"])
        .ok();
    assert_eq!(
        fs_err::read_to_string(host.path().join("in")).unwrap(),
        "copied in\n"
    );
    let back = outside.path().join("back");
    berth
        .run(&["cp", "stopped:/d/from-host", back.to_str().unwrap()])
        .ok();
    assert_eq!(fs_err::read_to_string(&back).unwrap(), "host file\n");
    assert!(!berth.is_mounted("copied"));
    assert!(berth.holders("copied").is_empty());
    // Nothing went under the mount point on the host.
    assert_eq!(
        fs_err::read_dir(berth.volume_data("copied"))
            .unwrap()
            .count(),
        0
    );
}

#[test]
fn an_empty_bind_volume_is_filled_from_the_image_as_docker_fills_it() {
    let berth = busybox();
    let host = tempfile::tempdir().unwrap();
    berth.bind_volume("filled", host.path());
    // Docker copies the image's /bin into the host directory at the first
    // mount (the mount is there first: nothing lands under `_data`).
    let out = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            "none",
            "-v",
            "filled:/bin",
            "busybox",
            "/bin/ls",
            "/bin/sh",
        ])
        .ok();
    assert_eq!(out, "/bin/sh\n");
    assert!(host.path().join("sh").exists());
    assert_eq!(
        fs_err::read_dir(berth.volume_data("filled"))
            .unwrap()
            .count(),
        0
    );
}

#[test]
fn mount_volume_opt_creates_the_volume_with_its_options() {
    let berth = busybox();
    let mount = "type=volume,src=made,dst=/d,volume-opt=type=tmpfs,volume-opt=device=tmpfs,\"volume-opt=o=size=5m\"";
    let out = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            "none",
            "--mount",
            mount,
            "busybox",
            "sh",
            "-c",
            "df -k /d | tail -1 | awk '{print $1, $2}'",
        ])
        .ok();
    assert_eq!(out, "tmpfs 5120\n");
    let options = berth
        .run(&["volume", "inspect", "-f", "{{json .Options}}", "made"])
        .ok();
    assert_eq!(
        options,
        "{\"device\":\"tmpfs\",\"o\":\"size=5m\",\"type\":\"tmpfs\"}\n"
    );
    // Refused options: Docker's words, and no container and no volume.
    let stderr = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            "none",
            "--mount",
            "type=volume,src=never,dst=/d,volume-opt=foo=bar",
            "busybox",
            "true",
        ])
        .fails(125);
    assert!(
        stderr.contains("create never: invalid option: \"foo\""),
        "{stderr}"
    );
    assert_eq!(berth.run(&["ps", "-aq"]).ok(), "");
    assert_eq!(berth.run(&["volume", "ls", "-q"]).ok(), "made\n");
}
