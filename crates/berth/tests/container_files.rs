//! `cp` (both directions and tar streams), `commit`, `update` and `port`
//! through the CLI.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use support::Berth;

fn busybox() -> Berth {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth
}

#[test]
fn cp_copies_both_ways_and_streams_tar() {
    let berth = busybox();
    let id = berth.run_detached(&["busybox", "sleep", "100"]);
    let host = tempfile::tempdir().unwrap();
    fs_err::write(host.path().join("in.txt"), "from the host\n").unwrap();

    berth
        .run(&[
            "cp",
            host.path().join("in.txt").to_str().unwrap(),
            &format!("{id}:/tmp/"),
        ])
        .ok();
    assert_eq!(
        berth.run(&["exec", &id, "cat", "/tmp/in.txt"]).ok(),
        "from the host\n"
    );

    berth
        .run(&[
            "exec",
            &id,
            "sh",
            "-c",
            "mkdir /data && echo inside > /data/file",
        ])
        .ok();
    let out = host.path().join("out");
    berth
        .run(&["cp", &format!("{id}:/data"), out.to_str().unwrap()])
        .ok();
    assert_eq!(
        fs_err::read_to_string(out.join("file")).unwrap(),
        "inside\n"
    );

    // `-` writes a tar stream of the path.
    let tar = berth
        .run(&["cp", &format!("{id}:/data/file"), "-"])
        .output
        .stdout;
    let mut archive = tar::Archive::new(tar.as_slice());
    let names: Vec<String> = archive
        .entries()
        .unwrap()
        .map(|entry| entry.unwrap().path().unwrap().display().to_string())
        .collect();
    assert_eq!(names, ["file"]);

    let stderr = berth
        .run(&["cp", &format!("{id}:/nope"), out.to_str().unwrap()])
        .fails(1);
    assert!(
        stderr.contains("Could not find the file /nope in container"),
        "{stderr}"
    );
    berth.run(&["rm", "-f", &id]).ok();
}

#[test]
fn cp_works_on_a_stopped_container() {
    let berth = busybox();
    berth
        .run(&[
            "run",
            "--name",
            "done",
            "busybox",
            "sh",
            "-c",
            "echo kept > /kept",
        ])
        .ok();
    let host = tempfile::tempdir().unwrap();
    let target = host.path().join("kept");
    berth
        .run(&["cp", "done:/kept", target.to_str().unwrap()])
        .ok();
    assert_eq!(fs_err::read_to_string(&target).unwrap(), "kept\n");
    berth.run(&["rm", "done"]).ok();
}

/// Whether anything is mounted under the container's directories on the
/// host (a copy's mounts must all be gone when it returns).
fn host_mounts_of(id: &str) -> Vec<String> {
    fs_err::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|line| line.contains(id))
        .map(str::to_owned)
        .collect()
}

/// As Docker's: a created (never started) container's volumes — anonymous,
/// named — and bind mounts are where `cp` puts and finds files, a read-only
/// one refuses a copy in with dockerd's words, and nothing stays mounted.
#[test]
fn cp_sees_the_volumes_and_binds_of_a_created_container() {
    let berth = busybox();
    let host = tempfile::tempdir().unwrap();
    let bound = host.path().join("bound");
    fs_err::create_dir(&bound).unwrap();
    fs_err::write(bound.join("from-bind"), "bind\n").unwrap();
    let read_only = host.path().join("ro");
    fs_err::create_dir(&read_only).unwrap();
    let volume = format!("cpvol{}", std::process::id());
    let id = berth
        .run(&[
            "create",
            "-v",
            "/vol1",
            "-v",
            &format!("{volume}:/named"),
            "-v",
            &format!("{}:/bind", bound.display()),
            "-v",
            &format!("{}:/ro:ro", read_only.display()),
            "busybox",
            "sh",
            "-c",
            "cat /vol1/in.txt /named/in.txt; echo later > /vol1/later",
        ])
        .ok()
        .trim()
        .to_owned();
    let file = host.path().join("in.txt");
    fs_err::write(&file, "copied in\n").unwrap();
    for destination in ["/vol1/", "/named/"] {
        berth
            .run(&["cp", file.to_str().unwrap(), &format!("{id}:{destination}")])
            .ok();
    }
    assert!(host_mounts_of(&id).is_empty(), "{:?}", host_mounts_of(&id));
    // The volume got it, not the layer under its mount point.
    let data = berth.root().join("volumes").join(&volume).join("_data");
    assert_eq!(
        fs_err::read_to_string(data.join("in.txt")).unwrap(),
        "copied in\n"
    );
    // A bind's host files are there, and a read-only mount refuses.
    let from_bind = berth
        .run(&["cp", &format!("{id}:/bind/from-bind"), "-"])
        .ok();
    assert!(from_bind.contains("bind\n"), "{from_bind}");
    let stderr = berth
        .run(&["cp", file.to_str().unwrap(), &format!("{id}:/ro/")])
        .fails(1);
    assert!(
        stderr.contains("mounted volume is marked read-only"),
        "{stderr}"
    );
    assert!(fs_err::read_dir(&read_only).unwrap().next().is_none());

    assert_eq!(
        berth.run(&["start", "-a", &id]).ok(),
        "copied in\ncopied in\n"
    );
    // Stopped now: what it wrote to its volume comes out.
    let later = host.path().join("later");
    berth
        .run(&["cp", &format!("{id}:/vol1/later"), later.to_str().unwrap()])
        .ok();
    assert_eq!(fs_err::read_to_string(&later).unwrap(), "later\n");
    assert!(host_mounts_of(&id).is_empty(), "{:?}", host_mounts_of(&id));
    berth.run(&["rm", "-v", &id]).ok();
    berth.run(&["volume", "rm", &volume]).ok();
}

/// dockerd's `ErrRootFSReadOnly`: a `--read-only` container takes files
/// in its volumes only.
#[test]
fn cp_into_a_read_only_container_goes_to_its_volumes_only() {
    let berth = busybox();
    let id = berth
        .run(&["create", "--read-only", "-v", "/vol1", "busybox", "true"])
        .ok()
        .trim()
        .to_owned();
    let host = tempfile::tempdir().unwrap();
    let file = host.path().join("f");
    fs_err::write(&file, "x").unwrap();
    berth
        .run(&["cp", file.to_str().unwrap(), &format!("{id}:/vol1/")])
        .ok();
    let stderr = berth
        .run(&["cp", file.to_str().unwrap(), &format!("{id}:/")])
        .fails(1);
    assert!(
        stderr.contains("container rootfs is marked read-only"),
        "{stderr}"
    );
    assert!(berth.run(&["cp", &format!("{id}:/f"), "-"]).code() != 0);
    berth.run(&["rm", "-v", &id]).ok();
}

#[test]
fn commit_makes_an_image_with_the_changes_and_config() {
    let berth = busybox();
    berth
        .run(&[
            "run",
            "--name",
            "src",
            "busybox",
            "sh",
            "-c",
            "echo committed > /hello",
        ])
        .ok();
    let id = berth
        .run(&[
            "commit",
            "-c",
            "CMD [\"cat\", \"/hello\"]",
            "-m",
            "a message",
            "src",
            "snap:1",
        ])
        .ok();
    assert!(id.trim().starts_with("sha256:"), "{id}");
    assert_eq!(berth.run(&["run", "--rm", "snap:1"]).ok(), "committed\n");
    let history = berth
        .run(&["history", "--format", "{{.Comment}}", "snap:1"])
        .ok();
    assert_eq!(history.lines().next(), Some("a message"));
    // The base image is in use by the container: rmi refuses, as Docker.
    let stderr = berth.run(&["rmi", "busybox"]).fails(1);
    assert!(stderr.contains("is using its referenced image"), "{stderr}");
    berth.run(&["rm", "src"]).ok();
}

#[test]
fn update_changes_limits_of_a_running_container() {
    let berth = busybox();
    let id = berth.run_detached(&["-m", "64m", "busybox", "sleep", "100"]);
    let read_limit = || {
        berth
            .run(&[
                "exec",
                &id,
                "cat",
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
            ])
            .ok()
    };
    if std::path::Path::new("/sys/fs/cgroup/memory").is_dir() {
        assert_eq!(read_limit(), "67108864\n");
        berth
            .run(&["update", "-m", "128m", "--memory-swap", "256m", &id])
            .ok();
        assert_eq!(read_limit(), "134217728\n");
    } else {
        eprintln!("SKIP: no cgroup v1 memory hierarchy on this host");
    }
    // inspect shows the update, as dockerd's.
    berth.run(&["update", "--cpu-shares", "3", &id]).ok();
    let host = berth
        .run(&[
            "inspect",
            "-f",
            "{{.HostConfig.Memory}} {{.HostConfig.MemorySwap}} {{.HostConfig.CpuShares}}",
            &id,
        ])
        .ok();
    assert_eq!(host.trim(), "134217728 268435456 3");
    berth
        .run(&["update", "--restart", "on-failure:3", &id])
        .ok();
    let policy = berth
        .run(&[
            "inspect",
            "-f",
            "{{.HostConfig.RestartPolicy.Name}} {{.HostConfig.RestartPolicy.MaximumRetryCount}}",
            &id,
        ])
        .ok();
    assert_eq!(policy.trim(), "on-failure 3");
    assert_eq!(berth.run(&["rm", "-f", &id]).ok(), format!("{id}\n"));

    // A policy updated while the container runs is the one its exit meets.
    let id = berth.run_detached(&[
        "--restart",
        "always",
        "busybox",
        "sh",
        "-c",
        "sleep 1; exit 5",
    ]);
    berth.run(&["update", "--restart", "no", &id]).ok();
    assert_eq!(berth.run(&["wait", &id]).ok(), "5\n");
    std::thread::sleep(std::time::Duration::from_millis(500));
    let state = berth
        .run(&["inspect", "-f", "{{.State.Status}} {{.RestartCount}}", &id])
        .ok();
    assert_eq!(state.trim(), "exited 0");
    berth.run(&["rm", &id]).ok();
}

#[test]
fn port_without_published_ports() {
    let berth = busybox();
    let id = berth.run_detached(&["busybox", "sleep", "100"]);
    assert_eq!(berth.run(&["port", &id]).ok(), "");
    let stderr = berth.run(&["port", &id, "80"]).fails(1);
    assert!(
        stderr.contains("No public port '80/tcp' published for"),
        "{stderr}"
    );
    berth.run(&["rm", "-f", &id]).ok();
}

#[test]
fn exec_resolves_users_in_the_running_container() {
    let berth = busybox();
    let id = berth.run_detached(&["busybox", "sleep", "100"]);
    berth
        .run(&[
            "exec",
            &id,
            "sh",
            "-c",
            "echo late:x:4242:4242::/home/late:/bin/sh >> /etc/passwd; echo lategroup:x:4242: >> /etc/group",
        ])
        .ok();
    let out = berth
        .run(&["exec", "-u", "late", &id, "sh", "-c", "id; echo $HOME"])
        .ok();
    assert_eq!(
        out,
        "uid=4242(late) gid=4242(lategroup) groups=4242(lategroup)\n/home/late\n"
    );
    let stderr = berth.run(&["exec", "-u", "nosuch", &id, "id"]).fails(126);
    assert!(
        stderr.contains("unable to find user nosuch: no matching entries in passwd file"),
        "{stderr}"
    );
    berth.run(&["rm", "-f", &id]).ok();
}
