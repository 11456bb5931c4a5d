//! The device cgroup of `berth run`, as Docker's: a default container may
//! mknod any node but open only Docker's default devices; `--device`,
//! `--device-cgroup-rule` and `--privileged` really give devices; exec'd
//! processes, warm-pool runs, restarts and the API path are held to the same
//! rules. Where a Docker engine is reachable (`BERTH_TEST_DOCKER_HOST`), the
//! probes run in Docker too and the outputs must be identical.
//!
//! The devices opened on purpose are harmless: /dev/fuse (open does nothing
//! until a file system is mounted) and /dev/null. The refused ones (/dev/kmsg,
//! /dev/kvm, /dev/hwrng) are only written to when berth fails to refuse them.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

#[path = "api/harness.rs"]
mod harness;
mod support;

use std::collections::BTreeSet;
use std::path::Path;

use support::{docker, docker_host, fixture, Berth, Run};

const DENIED: &str = "Operation not permitted";

/// Docker 20.10's `devices.list` in a default container (runc 1.1 writes it sorted).
const DOCKER_DEFAULT_LIST: [&str; 12] = [
    "b *:* m",
    "c *:* m",
    "c 1:3 rwm",
    "c 1:5 rwm",
    "c 1:7 rwm",
    "c 1:8 rwm",
    "c 1:9 rwm",
    "c 5:0 rwm",
    "c 5:1 rwm",
    "c 5:2 rwm",
    "c 10:200 rwm",
    "c 136:* rwm",
];

fn busybox() -> Berth {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth
}

/// `berth run --rm --network none OPTIONS busybox sh -c SCRIPT`, stderr in stdout.
fn sh(berth: &Berth, options: &[&str], script: &str) -> Run {
    let script = format!("exec 2>&1\n{script}");
    let mut args = vec!["run", "--rm", "--network", "none"];
    args.extend_from_slice(options);
    args.extend_from_slice(&["busybox", "sh", "-c", &script]);
    berth.run(&args)
}

/// The same probe in Docker, when one is reachable: (exit code, output).
fn in_docker(options: &[&str], script: &str) -> Option<(Option<i32>, String)> {
    let host = docker_host()?;
    let present = docker(&host, &["image", "inspect", "busybox:latest"])
        .status
        .success();
    if !present {
        let archive = fixture("busybox-docker.tar");
        let loaded = docker(&host, &["load", "-q", "-i", archive.to_str().unwrap()]);
        assert!(loaded.status.success(), "docker load failed");
    }
    let script = format!("exec 2>&1\n{script}");
    let mut args = vec!["run", "--rm", "--network", "none"];
    args.extend_from_slice(options);
    args.extend_from_slice(&["busybox", "sh", "-c", &script]);
    let output = docker(&host, &args);
    Some((
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    ))
}

/// Runs the probe in berth, checks it with `check`, and when Docker is there
/// checks that Docker gives the same exit code and output.
#[track_caller]
fn probe(berth: &Berth, options: &[&str], script: &str, check: impl Fn(i32, &str)) {
    let run = sh(berth, options, script);
    check(run.code(), &run.stdout());
    if let Some((code, output)) = in_docker(options, script) {
        assert_eq!(
            (code, output.as_str()),
            (Some(run.code()), run.stdout().as_str()),
            "docker (left) and berth (right) differ for {options:?}"
        );
    }
}

fn devices_list_readable() -> bool {
    let v1 = Path::new("/sys/fs/cgroup/devices").exists();
    if !v1 {
        eprintln!("SKIP: no v1 devices hierarchy here (cgroup v2 uses a BPF program instead)");
    }
    v1
}

/// mknod works (Docker's `c *:* m`), opening the host's kmsg, kvm and hwrng
/// does not; the default devices still work.
const HOST_DEVICES_SCRIPT: &str = "\
rm -f /tmp/k /tmp/kvm /tmp/rng
mknod /tmp/k c 1 11 && echo made
echo x > /tmp/k; echo kmsg=$?
mknod /tmp/kvm c 10 232 && cat /tmp/kvm; echo kvm=$?
mknod /tmp/rng c 10 183 && head -c1 /tmp/rng; echo rng=$?
echo x > /dev/null && head -c1 /dev/zero | wc -c";

#[track_caller]
fn assert_host_devices_refused(code: i32, output: &str) {
    assert_eq!(code, 0, "{output}");
    assert!(output.starts_with("made\n"), "{output}");
    assert_eq!(output.matches(DENIED).count(), 3, "{output}");
    for line in ["kmsg=1", "kvm=1", "rng=1"] {
        assert!(output.lines().any(|l| l == line), "{line}: {output}");
    }
    assert!(
        output.ends_with("1\n"),
        "/dev/null and /dev/zero work: {output}"
    );
}

#[test]
fn a_default_container_cannot_open_host_devices() {
    let berth = busybox();
    probe(
        &berth,
        &[],
        HOST_DEVICES_SCRIPT,
        assert_host_devices_refused,
    );
}

/// A tar of the busybox rootfs plus char nodes of /dev/kmsg and /dev/kvm.
fn rootfs_with_device_nodes(path: &Path) {
    let mut builder = tar::Builder::new(fs_err::File::create(path).unwrap());
    let mut archive = tar::Archive::new(fs_err::File::open(fixture("rootfs.tar")).unwrap());
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let mut header = entry.header().clone();
        let name = entry.path().unwrap().into_owned();
        match entry.link_name().unwrap().map(|link| link.into_owned()) {
            Some(link) => builder.append_link(&mut header, &name, link).unwrap(),
            None => builder.append_data(&mut header, &name, &mut entry).unwrap(),
        }
    }
    for (name, major, minor) in [("kmsg", 1, 11), ("kvm", 10, 232)] {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Char);
        header.set_device_major(major).unwrap();
        header.set_device_minor(minor).unwrap();
        header.set_mode(0o666);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        header.set_size(0);
        builder
            .append_data(&mut header, name, std::io::empty())
            .unwrap();
    }
    builder.finish().unwrap();
}

#[test]
fn a_device_node_shipped_in_an_image_cannot_be_opened() {
    let berth = Berth::new();
    let directory = tempfile::tempdir().unwrap();
    let archive = directory.path().join("devices.tar");
    rootfs_with_device_nodes(&archive);
    berth
        .run(&["import", archive.to_str().unwrap(), "devices-in-image:1"])
        .ok();
    let output = berth
        .run(&[
            "run",
            "--rm",
            "--network",
            "none",
            "devices-in-image:1",
            "sh",
            "-c",
            "exec 2>&1; ls -l /kmsg /kvm | cut -c1-10; echo x > /kmsg; echo kmsg=$?; cat /kvm; echo kvm=$?",
        ])
        .ok();
    assert_eq!(
        output.lines().take(2).collect::<Vec<_>>(),
        ["crw-rw-rw-", "crw-rw-rw-"],
        "the nodes are in the image: {output}"
    );
    assert_eq!(output.matches(DENIED).count(), 2, "{output}");
    assert!(
        output.contains("kmsg=1\n") && output.contains("kvm=1\n"),
        "{output}"
    );
}

#[test]
fn device_flag_makes_the_node_and_allows_it() {
    if !Path::new("/dev/fuse").exists() {
        eprintln!("SKIP: no /dev/fuse on this host");
        return;
    }
    let berth = busybox();
    // Without --device there is no node, and a node made by hand is refused.
    probe(
        &berth,
        &[],
        "ls /dev/fuse; mknod /tmp/fuse c 10 229; exec 3<>/tmp/fuse && echo opened",
        |code, output| {
            assert_eq!(code, 1, "{output}");
            assert!(output.contains("No such file or directory"), "{output}");
            assert!(output.contains(DENIED), "{output}");
        },
    );
    // The node has the host's type, numbers, mode and owner.
    let stat = "%F %a %t:%T %u:%g";
    let host = std::process::Command::new("stat")
        .args(["-c", stat, "/dev/fuse"])
        .output()
        .unwrap();
    let host = String::from_utf8_lossy(&host.stdout).into_owned();
    probe(
        &berth,
        &["--device", "/dev/fuse"],
        &format!("stat -c '{stat}' /dev/fuse; exec 3<>/dev/fuse && echo opened"),
        |code, output| {
            assert_eq!(code, 0, "{output}");
            assert_eq!(output, format!("{host}opened\n"));
        },
    );
    // Another path and read-only permissions: reading opens, writing does not.
    probe(
        &berth,
        &["--device", "/dev/fuse:/dev/other/fuse:r"],
        "exec 3</dev/other/fuse && echo read; exec 4<>/dev/other/fuse && echo written",
        |code, output| {
            assert_eq!(code, 1, "{output}");
            assert!(output.starts_with("read\n"), "{output}");
            assert!(output.contains(DENIED), "{output}");
        },
    );
}

#[test]
fn device_cgroup_rule_allows_what_it_names() {
    let berth = busybox();
    probe(
        &berth,
        &["--device-cgroup-rule", "c 10:229 rwm"],
        "mknod /tmp/fuse c 10 229; exec 3<>/tmp/fuse && echo opened; echo x > /tmp/kmsg-free; mknod /tmp/k c 1 11; echo x > /tmp/k",
        |code, output| {
            assert_eq!(code, 1, "{output}");
            assert!(output.starts_with("opened\n"), "{output}");
            assert_eq!(output.matches(DENIED).count(), 1, "kmsg still refused: {output}");
        },
    );
    // A malformed rule is refused before anything runs.
    let error = sh(&berth, &["--device-cgroup-rule", "c 10:229"], "true").fails(125);
    assert!(
        error.contains("invalid device cgroup format 'c 10:229'"),
        "{error}"
    );
}

#[test]
fn devices_list_is_dockers_for_the_same_flags() {
    if !devices_list_readable() {
        return;
    }
    let berth = busybox();
    let with = |line: &str| -> Vec<String> {
        let mut list: Vec<String> = DOCKER_DEFAULT_LIST.iter().map(|l| l.to_string()).collect();
        list.insert(11, line.to_owned());
        list
    };
    let default: Vec<String> = DOCKER_DEFAULT_LIST.iter().map(|l| l.to_string()).collect();
    let mut cases: Vec<(Vec<&str>, Vec<String>)> = vec![
        (vec![], default.clone()),
        (
            vec!["--device-cgroup-rule", "c 10:200 rwm"],
            default.clone(),
        ),
        (
            vec!["--device-cgroup-rule", "c 10:229 rw"],
            with("c 10:229 rw"),
        ),
    ];
    if Path::new("/dev/fuse").exists() {
        cases.push((vec!["--device", "/dev/fuse"], with("c 10:229 rwm")));
        cases.push((
            vec!["--device", "/dev/fuse:/dev/myfuse:r"],
            with("c 10:229 r"),
        ));
    }
    for (options, expected) in cases {
        probe(
            &berth,
            &options,
            "cat /sys/fs/cgroup/devices/devices.list",
            |code, output| {
                assert_eq!(code, 0, "{output}");
                assert_eq!(output.lines().collect::<Vec<_>>(), expected, "{options:?}");
            },
        );
    }
}

#[test]
fn privileged_allows_every_device_and_has_the_hosts() {
    let berth = busybox();
    let run = sh(
        &berth,
        &["--privileged"],
        "cat /sys/fs/cgroup/devices/devices.list 2>/dev/null || echo no-v1; \
         mknod /tmp/fuse c 10 229 && exec 3<>/tmp/fuse && echo opened; ls /dev",
    );
    let output = run.ok();
    let mut lines = output.lines();
    let first = lines.next().unwrap();
    if devices_list_readable() {
        assert_eq!(first, "a *:* rwm", "{output}");
    }
    assert_eq!(lines.next(), Some("opened"), "{output}");
    // The host's device nodes are there (not its pts, shm or console).
    let inside: BTreeSet<&str> = lines.collect();
    for name in ["null", "fuse", "kmsg", "net"] {
        if Path::new("/dev").join(name).exists() {
            assert!(inside.contains(name), "/dev/{name} missing: {output}");
        }
    }
    assert!(!inside.contains("console"), "{output}");
}

#[test]
fn a_missing_device_is_dockers_error_and_cdi_names_are_refused() {
    let berth = busybox();
    let missing = "/dev/berth-no-such-device";
    let error = sh(&berth, &["--device", missing], "true").fails(125);
    let expected = format!(
        "error gathering device information while adding custom device \"{missing}\": no such file or directory"
    );
    assert!(error.contains(&expected), "{error}");
    if let Some(host) = docker_host() {
        let docker_error = docker(
            &host,
            &[
                "run",
                "--rm",
                "--network",
                "none",
                "--device",
                missing,
                "busybox",
                "true",
            ],
        );
        // Docker's CLI exits 127 here: its `run` reads "no such file or
        // directory" in any start error as a missing command. berth says 125,
        // the engine error it is.
        assert_eq!(docker_error.status.code(), Some(127));
        assert!(String::from_utf8_lossy(&docker_error.stderr).contains(&expected));
    }
    let error = sh(&berth, &["--device", "/etc/hostname"], "true").fails(125);
    assert!(
        error.contains("\"/etc/hostname\": not a device node"),
        "{error}"
    );

    // berth has no CDI: the name is refused, never silently dropped.
    let error = sh(&berth, &["--device", "vendor.example/gpu=all"], "true").fails(125);
    assert!(
        error.contains("could not select device driver \"cdi\"")
            && error.contains("vendor.example/gpu=all"),
        "{error}"
    );
}

/// A detached container, removed when dropped.
struct Detached<'a> {
    berth: &'a Berth,
    id: String,
}

impl<'a> Detached<'a> {
    fn start(berth: &'a Berth, options: &[&str]) -> Self {
        let mut args = vec!["run", "-d", "--network", "none"];
        args.extend_from_slice(options);
        args.extend_from_slice(&["busybox", "sleep", "300"]);
        let id = berth.run(&args).ok().trim().to_owned();
        Self { berth, id }
    }
}

impl Drop for Detached<'_> {
    fn drop(&mut self) {
        let _ = self.berth.run(&["rm", "-f", &self.id]);
    }
}

#[test]
fn exec_processes_are_restricted_too() {
    let berth = busybox();
    let container = Detached::start(&berth, &[]);
    for privileged in [false, true] {
        let mut args = vec!["exec"];
        if privileged {
            // The exec gets every capability, but the device cgroup is the
            // container's (as in Docker).
            args.push("--privileged");
        }
        let script = format!("exec 2>&1\n{HOST_DEVICES_SCRIPT}");
        args.extend_from_slice(&[&container.id, "sh", "-c", &script]);
        let run = berth.run(&args);
        assert_host_devices_refused(run.code(), &run.stdout());
    }
    // A container given /dev/fuse lets its exec'd processes use it.
    if Path::new("/dev/fuse").exists() {
        let given = Detached::start(&berth, &["--device", "/dev/fuse"]);
        let output = berth
            .run(&[
                "exec",
                &given.id,
                "sh",
                "-c",
                "exec 3<>/dev/fuse && echo opened",
            ])
            .ok();
        assert_eq!(output, "opened\n");
    }
}

#[test]
fn rules_are_applied_at_every_start() {
    let berth = busybox();
    let script = "exec 2>&1; rm -f /tmp/fuse /tmp/k; mknod /tmp/fuse c 10 229; exec 3<>/tmp/fuse && echo opened; mknod /tmp/k c 1 11; echo x > /tmp/k";
    let id = berth
        .run(&[
            "create",
            "--network",
            "none",
            "--device-cgroup-rule",
            "c 10:229 rwm",
            "busybox",
            "sh",
            "-c",
            script,
        ])
        .ok()
        .trim()
        .to_owned();
    for start in 0..2 {
        let output = berth.run(&["start", "-a", &id]).stdout();
        assert!(output.starts_with("opened\n"), "start {start}: {output}");
        assert_eq!(output.matches(DENIED).count(), 1, "start {start}: {output}");
    }
    berth.run(&["rm", &id]).ok();
}

/// The 12-character ids `warm ls -q` lists.
fn members(berth: &Berth) -> BTreeSet<String> {
    berth
        .run(&["warm", "ls", "-q"])
        .ok()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_warm_pool_run_is_restricted_and_device_runs_start_cold() {
    let berth = busybox();
    berth.run(&["warm", "busybox", "--depth", "1"]).ok();
    let before = members(&berth);
    assert_eq!(before.len(), 1);
    let script = format!("exec 2>&1\nhostname\n{HOST_DEVICES_SCRIPT}");
    let run = berth.run(&["run", "--rm", "busybox", "sh", "-c", &script]);
    let output = run.stdout();
    let (hostname, rest) = output.split_once('\n').unwrap();
    assert!(before.contains(hostname), "not from the pool: {output}");
    assert_host_devices_refused(run.code(), rest);

    // Runs with their own devices never take a member built with the defaults.
    support::containers::wait_until(20.0, "the pool is refilled", || members(&berth).len() == 1);
    let before = members(&berth);
    let mut runs = vec![
        vec!["--device-cgroup-rule", "c 10:229 rwm"],
        vec!["--privileged"],
    ];
    if Path::new("/dev/fuse").exists() {
        runs.push(vec!["--device", "/dev/fuse"]);
    }
    for options in runs {
        let mut args = vec!["run", "--rm"];
        args.extend_from_slice(&options);
        args.extend_from_slice(&[
            "busybox",
            "sh",
            "-c",
            "hostname; mknod /tmp/fuse c 10 229; exec 3<>/tmp/fuse && echo opened",
        ]);
        let output = berth.run(&args).ok();
        let (hostname, rest) = output.split_once('\n').unwrap();
        assert!(!before.contains(hostname), "{options:?} used the pool");
        assert_eq!(rest, "opened\n", "{options:?}");
        assert_eq!(members(&berth), before, "{options:?} changed the pool");
    }
}

#[test]
fn the_api_path_applies_the_same_rules() {
    let Some(server) = harness::Server::start() else {
        return;
    };
    let script = format!("exec 2>&1\n{HOST_DEVICES_SCRIPT}");
    let run = server.docker(&[
        "run",
        "--rm",
        "--network",
        "none",
        "busybox",
        "sh",
        "-c",
        &script,
    ]);
    assert_host_devices_refused(run.code(), &run.stdout());
    let run = server.docker(&[
        "run",
        "--rm",
        "--network",
        "none",
        "--device-cgroup-rule",
        "c 10:229 rwm",
        "busybox",
        "sh",
        "-c",
        "mknod /tmp/fuse c 10 229; exec 3<>/tmp/fuse && echo opened",
    ]);
    assert_eq!(run.ok(), "opened\n");
    // The docker CLI's --gpus becomes a device request berth cannot serve.
    let error = server
        .docker(&["run", "--rm", "--gpus", "all", "busybox", "true"])
        .fails(125);
    assert!(
        error.contains("could not select device driver \"\" with capabilities: [[gpu]]"),
        "{error}"
    );
}
