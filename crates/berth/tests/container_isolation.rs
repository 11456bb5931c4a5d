//! Isolation, security defaults and resource limits of `berth run`, checked
//! from inside the container (busybox) and, for cgroups, from the host side.
//! Where a Docker engine is reachable the same probes run against Docker and
//! the outputs must be identical.
//!
//! This machine kind: cgroup v1 (hybrid), a capability bounding set without
//! CAP_SYS_RESOURCE, no /proc/kcore or /proc/sysrq-trigger. Checks that
//! depend on such details print why they skip where the host differs.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use support::{docker, docker_host, fixture, Berth, Run};

/// Docker's 14 default capabilities (moby `oci/caps/defaults.go`).
const DOCKER_DEFAULT_CAPS: &str = "00000000a80425fb";
const CAP_NET_ADMIN: u64 = 12;
const CAP_SYS_MODULE: u64 = 16;
const CAP_SYS_RESOURCE: u64 = 24;

// ---------------------------------------------------------------- helpers

/// A private root with the busybox fixture loaded.
fn busybox() -> Berth {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth
}

/// `berth run --rm OPTIONS busybox sh -c SCRIPT`, stderr folded into stdout
/// inside the container so the order of lines is the program's.
fn sh(berth: &Berth, options: &[&str], script: &str) -> Run {
    let script = format!("exec 2>&1\n{script}");
    let mut args = vec!["run", "--rm"];
    args.extend_from_slice(options);
    args.extend_from_slice(&["busybox", "sh", "-c", &script]);
    berth.run(&args)
}

/// Like [`sh`] but the run must succeed; returns its output.
#[track_caller]
fn sh_ok(berth: &Berth, options: &[&str], script: &str) -> String {
    sh(berth, options, script).ok()
}

/// The value of `Name:` in a /proc/<pid>/status text.
fn status_field<'a>(status: &'a str, name: &str) -> Option<&'a str> {
    status.lines().find_map(|line| {
        line.strip_prefix(name)?
            .strip_prefix(':')
            .map(|value| value.trim())
    })
}

#[track_caller]
fn field<'a>(status: &'a str, name: &str) -> &'a str {
    status_field(status, name).unwrap_or_else(|| panic!("no {name}: in\n{status}"))
}

fn host_status() -> String {
    fs_err::read_to_string("/proc/self/status").unwrap()
}

fn capability_mask(hex: &str) -> u64 {
    u64::from_str_radix(hex, 16).unwrap()
}

/// A detached container, removed (`rm -f`) when dropped.
struct Detached<'a> {
    berth: &'a Berth,
    id: String,
}

impl<'a> Detached<'a> {
    #[track_caller]
    fn start(berth: &'a Berth, options: &[&str], command: &[&str]) -> Self {
        let mut args = vec!["run", "-d"];
        args.extend_from_slice(options);
        args.push("busybox");
        args.extend_from_slice(command);
        let id = berth.run(&args).ok().trim().to_owned();
        assert_eq!(id.len(), 64, "run -d printed {id:?}");
        Self { berth, id }
    }

    #[track_caller]
    fn inspect(&self, format: &str) -> String {
        self.berth
            .run(&["inspect", "-f", format, &self.id])
            .ok()
            .trim()
            .to_owned()
    }

    #[track_caller]
    fn pid(&self) -> i32 {
        let pid = self.inspect("{{.State.Pid}}");
        pid.parse()
            .unwrap_or_else(|_| panic!("State.Pid is {pid:?}"))
    }
}

impl Drop for Detached<'_> {
    fn drop(&mut self) {
        let _ = self.berth.run(&["rm", "-f", &self.id]);
    }
}

/// Polls `check` until it holds or `timeout` passes.
#[track_caller]
fn wait_for(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The host-side cgroup directories of a process, by controller
/// ("memory", "cpu", "name=systemd", "" for the v2 line), from
/// /proc/<pid>/cgroup. The test process lives in the host's cgroup
/// namespace, so the paths are hierarchy paths.
fn cgroup_dirs(pid: i32) -> Vec<(String, PathBuf)> {
    let text = fs_err::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    let unified = if Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        PathBuf::from("/sys/fs/cgroup")
    } else {
        PathBuf::from("/sys/fs/cgroup/unified")
    };
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            if path == "/" {
                return None; // not placed in this hierarchy
            }
            let mount = if controllers.is_empty() {
                unified.clone()
            } else {
                Path::new("/sys/fs/cgroup").join(controllers.trim_start_matches("name="))
            };
            Some((
                controllers.to_owned(),
                mount.join(path.trim_start_matches('/')),
            ))
        })
        .collect()
}

/// The v1 directory of `controller` for `pid`, or None (printed) when the
/// host has no such v1 hierarchy.
fn v1_cgroup_dir(pid: i32, controller: &str) -> Option<PathBuf> {
    let found = cgroup_dirs(pid)
        .into_iter()
        .find(|(controllers, _)| controllers.split(',').any(|name| name == controller))
        .map(|(_, dir)| dir);
    if found.is_none() {
        eprintln!("SKIP: no cgroup v1 {controller} hierarchy for pid {pid} (cgroup v2 host?)");
    }
    found
}

fn cgroup_v1_host() -> bool {
    let v1 = Path::new("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists();
    if !v1 {
        eprintln!("SKIP: not a cgroup v1 host (no /sys/fs/cgroup/memory/memory.limit_in_bytes)");
    }
    v1
}

#[track_caller]
fn read_trimmed(path: &Path) -> String {
    fs_err::read_to_string(path)
        .unwrap_or_else(|error| panic!("read {path:?}: {error}"))
        .trim()
        .to_owned()
}

/// The readlink of /proc/self/ns/<kind> for the test process.
fn host_namespace(kind: &str) -> String {
    fs_err::read_link(format!("/proc/self/ns/{kind}"))
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// The Docker engine with the busybox fixture loaded, or None (printed).
fn docker_with_busybox() -> Option<String> {
    let host = docker_host()?;
    let present = docker(&host, &["image", "inspect", "busybox:latest"])
        .status
        .success();
    if !present {
        let archive = fixture("busybox-docker.tar");
        let loaded = docker(&host, &["load", "-q", "-i", archive.to_str().unwrap()]);
        assert!(
            loaded.status.success(),
            "docker load: {}",
            String::from_utf8_lossy(&loaded.stderr)
        );
    }
    Some(host)
}

/// The same `sh -c` probe in Docker and in berth (both `--network none`:
/// the private test engine has no bridge); returns (docker, berth) outputs
/// with exit codes.
fn both(host: &str, berth: &Berth, options: &[&str], script: &str) -> (String, String) {
    let script = format!("exec 2>&1\n{script}");
    let mut args = vec!["run", "--rm", "--network", "none"];
    args.extend_from_slice(options);
    args.extend_from_slice(&["busybox", "sh", "-c", &script]);
    let from_docker = docker(host, &args);
    let from_berth = berth.run(&args);
    (
        format!(
            "exit {:?}\n{}",
            from_docker.status.code(),
            String::from_utf8_lossy(&from_docker.stdout)
        ),
        format!(
            "exit {:?}\n{}",
            Some(from_berth.code()),
            from_berth.stdout()
        ),
    )
}

// ------------------------------------------------------------- namespaces

#[test]
fn the_command_is_pid_1_and_sees_only_container_processes() {
    let berth = busybox();
    // `exit` keeps sh from exec'ing ps in its place.
    let out = sh_ok(&berth, &[], "echo $$; ps -o pid,comm; exit 0");
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("1"), "{out}");
    assert_eq!(
        lines
            .next()
            .map(str::split_whitespace)
            .map(Iterator::collect::<Vec<_>>),
        Some(vec!["PID", "COMMAND"]),
        "{out}"
    );
    let processes: Vec<(u32, &str)> = lines
        .map(|line| {
            let mut fields = line.split_whitespace();
            (
                fields.next().unwrap().parse().unwrap(),
                fields.next().unwrap(),
            )
        })
        .collect();
    // sh and the ps it forked; no host process (the host's pid 1, our own
    // pid) is visible in a new pid namespace.
    assert_eq!(processes.len(), 2, "{out}");
    assert_eq!(processes[0], (1, "sh"), "{out}");
    assert_eq!(processes[1].1, "ps", "{out}");
    assert!(processes[1].0 < 10, "{out}");

    let inside = sh_ok(&berth, &[], "readlink /proc/self/ns/pid");
    assert_ne!(inside.trim(), host_namespace("pid"));
}

#[test]
fn hostname_defaults_to_the_short_id_and_follows_hostname_flag() {
    let berth = busybox();
    let out = berth
        .run(&[
            "run",
            "--name",
            "uts",
            "busybox",
            "sh",
            "-c",
            "hostname; cat /etc/hostname; readlink /proc/self/ns/uts",
        ])
        .ok();
    let id = berth.run(&["inspect", "-f", "{{.Id}}", "uts"]).ok();
    berth.run(&["rm", "uts"]).ok();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[..2], [&id[..12], &id[..12]], "{out}");
    assert_ne!(lines[2], host_namespace("uts"));

    let out = sh_ok(&berth, &["--hostname", "x"], "hostname; cat /etc/hostname");
    assert_eq!(out, "x\nx\n");
}

#[test]
fn network_none_has_only_loopback_and_the_default_adds_eth0() {
    let berth = busybox();
    for (options, links) in [
        (&["--network", "none"][..], &["lo"][..]),
        (&[], &["lo", "eth0"]),
    ] {
        let out = sh_ok(
            &berth,
            options,
            "ip -o link | cut -d: -f2 | tr -d ' ' | cut -d@ -f1; readlink /proc/self/ns/net",
        );
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[..lines.len() - 1], *links, "{options:?}: {out}");
        assert_ne!(lines[lines.len() - 1], host_namespace("net"), "{options:?}");
    }
}

/// Docker brings `lo` up in every container it gives a network namespace
/// (runc's loopback setup), `--network none` included: 127.0.0.1 works.
#[test]
fn loopback_is_up_in_a_private_network_namespace() {
    let berth = busybox();
    for options in [&["--network", "none"][..], &[]] {
        let out = sh_ok(
            &berth,
            options,
            "ip link show lo | head -1; ping -c 1 -W 2 127.0.0.1 >/dev/null; echo ping=$?",
        );
        assert!(
            out.contains("<LOOPBACK,UP,LOWER_UP>"),
            "{options:?}: lo is not up:\n{out}"
        );
        assert!(out.ends_with("ping=0\n"), "{options:?}: {out}");
    }
}

#[test]
fn network_host_sees_the_host_interfaces() {
    let berth = busybox();
    // Other tests' roots make and remove bridges meanwhile: the container must see every
    // interface the host had throughout, and none it never had.
    let host_interfaces = || -> BTreeSet<String> {
        fs_err::read_dir("/sys/class/net")
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    let before = host_interfaces();
    let out = sh_ok(
        &berth,
        &["--network", "host"],
        "readlink /proc/self/ns/net; ls /sys/class/net",
    );
    let after = host_interfaces();
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some(host_namespace("net").as_str()), "{out}");
    let inside: BTreeSet<String> = lines.map(str::to_owned).collect();
    let throughout: BTreeSet<String> = before.intersection(&after).cloned().collect();
    let ever: BTreeSet<String> = before.union(&after).cloned().collect();
    assert!(
        inside.is_superset(&throughout),
        "{inside:?} vs {throughout:?}"
    );
    // (A bridge or veth another test made and removed while this ran is no surprise.)
    let transient = |name: &str| name.starts_with("berth") || name.starts_with("veth");
    let unexpected: Vec<&String> = inside
        .iter()
        .filter(|name| !ever.contains(*name) && !transient(name))
        .collect();
    assert!(unexpected.is_empty(), "{unexpected:?} not on the host");
}

/// Docker: with `--network host` and no `--hostname`, the container takes
/// the host's name (daemon/container_operations_unix.go, `initializeNetworking`).
#[test]
fn network_host_uses_the_host_hostname() {
    let berth = busybox();
    let host_name = nix::unistd::gethostname().unwrap();
    let out = sh_ok(&berth, &["--network", "host"], "hostname");
    assert_eq!(out.trim(), host_name.to_string_lossy());
}

#[test]
fn ipc_namespace_is_private() {
    /// A SysV shared memory segment of the test process, removed on drop.
    struct Segment(i32);
    impl Drop for Segment {
        fn drop(&mut self) {
            // SAFETY: IPC_RMID ignores the buffer argument, so null is valid;
            // the id is the segment this test created.
            unsafe { libc::shmctl(self.0, libc::IPC_RMID, std::ptr::null_mut()) };
        }
    }
    // SAFETY: shmget takes no pointers; IPC_PRIVATE always creates a new
    // segment that only this test knows about.
    let id = unsafe { libc::shmget(libc::IPC_PRIVATE, 4096, libc::IPC_CREAT | 0o600) };
    assert!(id >= 0, "shmget: {}", std::io::Error::last_os_error());
    let _segment = Segment(id);
    let host = fs_err::read_to_string("/proc/sysvipc/shm").unwrap();
    assert!(
        host.lines()
            .skip(1)
            .any(|line| line.split_whitespace().nth(1) == Some(&id.to_string())),
        "our segment {id} is not in the host's /proc/sysvipc/shm:\n{host}"
    );

    let berth = busybox();
    let out = sh_ok(
        &berth,
        &[],
        "readlink /proc/self/ns/ipc; for kind in shm msg sem; do tail -n +2 /proc/sysvipc/$kind; done",
    );
    assert_eq!(out.lines().count(), 1, "host IPC objects visible:\n{out}");
    assert_ne!(out.trim(), host_namespace("ipc"));
}

#[test]
fn mount_namespace_shows_only_the_container_mounts() {
    let berth = busybox();
    let out = sh_ok(
        &berth,
        &[],
        "readlink /proc/self/ns/mnt; cat /proc/self/mountinfo",
    );
    let mut lines = out.lines();
    assert_ne!(lines.next().unwrap(), host_namespace("mnt"));
    let mounts: Vec<Vec<&str>> = lines.map(|line| line.split(' ').collect()).collect();

    // The root is the container's overlay, its upper dir in our berth root.
    let root = &mounts[0];
    assert_eq!(root[4], "/", "{out}");
    let separator = root.iter().position(|field| *field == "-").unwrap();
    assert_eq!(root[separator + 1], "overlay", "{out}");
    assert!(
        root[separator + 3].contains(&format!("upperdir={}", berth.root().display())),
        "{out}"
    );

    // Nothing of the host's mount table (the test's temp dirs, /work, the
    // Docker data root, other containers' overlays) is visible.
    let allowed = |point: &str| {
        point == "/"
            || ["/proc", "/dev", "/sys"]
                .iter()
                .any(|top| point == *top || point.starts_with(&format!("{top}/")))
            || ["/etc/hosts", "/etc/hostname", "/etc/resolv.conf"].contains(&point)
    };
    for mount in &mounts {
        assert!(allowed(mount[4]), "unexpected mount {:?}\n{out}", mount[4]);
    }
}

/// The cgroup namespace's root is the container's own cgroup, so every
/// line of /proc/self/cgroup reads `/` (Docker `--cgroupns private`; berth's
/// default per DESIGN.md).
#[test]
fn cgroup_namespace_root_is_the_container_cgroup() {
    let berth = busybox();
    for options in [&[][..], &["--cgroupns", "private"]] {
        let out = sh_ok(
            &berth,
            options,
            "readlink /proc/self/ns/cgroup; cat /proc/self/cgroup",
        );
        let mut lines = out.lines();
        assert_ne!(
            lines.next().unwrap(),
            host_namespace("cgroup"),
            "{options:?}"
        );
        for line in lines {
            assert!(line.ends_with(":/"), "{options:?}: {line:?} in\n{out}");
        }
    }
}

#[test]
fn cgroupns_host_shares_the_host_cgroup_namespace() {
    let berth = busybox();
    let out = sh_ok(
        &berth,
        &["--cgroupns", "host"],
        "readlink /proc/self/ns/cgroup",
    );
    assert_eq!(out.trim(), host_namespace("cgroup"));
}

// ------------------------------------------------------------- filesystem

/// Docker's masked paths: a path that exists on the host is empty inside
/// (/dev/null bind over files, an empty read-only tmpfs over directories).
#[test]
fn masked_paths_are_empty() {
    let berth = busybox();
    let paths = [
        "/proc/acpi",
        "/proc/kcore",
        "/proc/keys",
        "/proc/latency_stats",
        "/proc/timer_list",
        "/proc/timer_stats",
        "/proc/sched_debug",
        "/proc/scsi",
        "/sys/firmware",
    ];
    let mut script = String::new();
    for path in paths {
        if !Path::new(path).exists() {
            eprintln!("SKIP: {path} does not exist on this host, nothing to mask");
            continue;
        }
        script += &format!(
            "if [ -d {path} ]; then echo \"{path} $(ls -A {path} | wc -l)\"; \
             else echo \"{path} $(cat {path} | wc -c)\"; fi\n"
        );
    }
    let out = sh_ok(&berth, &[], &script);
    for line in out.lines() {
        assert!(line.ends_with(" 0"), "not masked: {line}\n{out}");
    }
    assert!(out.contains("/proc/keys 0"), "{out}");
    assert!(out.contains("/sys/firmware 0"), "{out}");
}

#[test]
fn readonly_paths_and_sys_are_read_only() {
    let berth = busybox();
    let mut paths = vec![];
    for path in [
        "/proc/sys",
        "/proc/sysrq-trigger",
        "/proc/bus",
        "/proc/fs",
        "/proc/irq",
    ] {
        if Path::new(path).exists() {
            paths.push(path);
        } else {
            eprintln!("SKIP: {path} does not exist on this host");
        }
    }
    paths.extend(["/sys/kernel", "/sys/fs/cgroup"]);
    let script = format!(
        "touch {}\n\
         echo 1 > /proc/sys/kernel/hostname\n\
         awk '$5 == \"/sys\" {{ split($6, options, \",\"); print options[1] }}' /proc/self/mountinfo",
        paths.join(" ")
    );
    let out = sh_ok(&berth, &[], &script);
    let mut want: Vec<String> = paths
        .iter()
        .map(|path| format!("touch: {path}: Read-only file system"))
        .collect();
    want.push("sh: can't create /proc/sys/kernel/hostname: Read-only file system".to_owned());
    want.push("ro".to_owned()); // the /sys mount
    assert_eq!(out.lines().collect::<Vec<_>>(), want, "{out}");
}

#[test]
fn dev_has_docker_default_devices() {
    let berth = busybox();
    let out = sh_ok(
        &berth,
        &[],
        "stat -c '%n %F %a %t:%T' /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty /dev/pts/ptmx\n\
         readlink /dev/ptmx\n\
         stat -c '%n %a' /dev/shm /dev/mqueue\n\
         for point in /dev /dev/pts /dev/shm /dev/mqueue; do grep \" $point \" /proc/self/mountinfo | sed 's/.* - \\([^ ]*\\) .*/\\1/'; done\n\
         ls -A /dev | tr '\\n' ' '",
    );
    let mut lines = out.lines();
    let expected = [
        "/dev/null character special file 666 1:3",
        "/dev/zero character special file 666 1:5",
        "/dev/full character special file 666 1:7",
        "/dev/random character special file 666 1:8",
        "/dev/urandom character special file 666 1:9",
        "/dev/tty character special file 666 5:0",
        "/dev/pts/ptmx character special file 666 5:2",
        "pts/ptmx",
        "/dev/shm 1777",
        "/dev/mqueue 1777",
        "tmpfs",
        "devpts",
        "tmpfs",
        "mqueue",
    ];
    for line in expected {
        assert_eq!(lines.next(), Some(line), "{out}");
    }
    // Exactly Docker's set; runc links /dev/core only where /proc/kcore
    // exists (libcontainer/rootfs_linux.go setupDevSymlinks).
    let mut want: BTreeSet<&str> = [
        "fd", "full", "mqueue", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin",
        "stdout", "tty", "urandom", "zero",
    ]
    .into();
    if Path::new("/proc/kcore").exists() {
        want.insert("core");
    }
    let listed: BTreeSet<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(listed, want, "{out}");
}

#[test]
fn dev_shm_is_64m_by_default_and_follows_shm_size() {
    let berth = busybox();
    let script = "df -k /dev/shm | tail -1 | awk '{print $2}'; grep ' /dev/shm ' /proc/self/mountinfo | sed 's/.* - //'";
    let out = sh_ok(&berth, &[], script);
    assert_eq!(out, "65536\ntmpfs shm rw,size=65536k\n");
    let out = sh_ok(&berth, &["--shm-size", "8m"], script);
    assert_eq!(out, "8192\ntmpfs shm rw,size=8192k\n");
}

#[test]
fn etc_hosts_hostname_resolv_conf_are_bind_mounted_files() {
    let berth = busybox();
    let out = sh_ok(
        &berth,
        &[],
        "for file in /etc/hosts /etc/hostname /etc/resolv.conf; do \
           stat -c '%n %F' $file; grep -c \" $file \" /proc/self/mountinfo; \
         done; grep -c '^127.0.0.1[[:space:]]*localhost' /etc/hosts",
    );
    assert_eq!(
        out,
        "/etc/hosts regular file\n1\n/etc/hostname regular file\n1\n\
         /etc/resolv.conf regular file\n1\n1\n"
    );
}

#[test]
fn read_only_root_filesystem() {
    let berth = busybox();
    let out = sh(
        &berth,
        &["--read-only"],
        "touch /x; mkdir /tmp/y; touch /dev/shm/ok && echo shm-writable",
    )
    .ok();
    assert_eq!(
        out,
        "touch: /x: Read-only file system\n\
         mkdir: can't create directory '/tmp/y': Read-only file system\n\
         shm-writable\n"
    );
    // Without the flag the root is writable.
    assert_eq!(sh_ok(&berth, &[], "touch /x && echo ok"), "ok\n");
}

// --------------------------------------------------------------- security

#[test]
fn mount_is_denied() {
    let berth = busybox();
    let out = sh(&berth, &[], "mount -t tmpfs none /mnt; echo exit=$?").ok();
    assert_eq!(out, "mount: permission denied (are you root?)\nexit=1\n");
}

#[test]
fn kernel_modules_cannot_be_loaded() {
    let berth = busybox();
    let out = sh_ok(
        &berth,
        &[],
        "grep CapEff /proc/self/status; insmod /bin/busybox; echo exit=$?",
    );
    let effective = capability_mask(field(&out, "CapEff"));
    assert_eq!(effective & (1 << CAP_SYS_MODULE), 0, "{out}");
    // busybox insmod reads the file, then init_module fails.
    assert!(
        out.contains("insmod: can't insert '/bin/busybox': Operation not permitted\nexit=1"),
        "{out}"
    );
}

const CAPS: &str = "grep -E '^(Cap|Seccomp:|NoNewPrivs)' /proc/self/status";

#[test]
fn default_capabilities_are_dockers() {
    let berth = busybox();
    let out = sh_ok(&berth, &[], CAPS);
    for name in ["CapPrm", "CapEff", "CapBnd"] {
        assert_eq!(field(&out, name), DOCKER_DEFAULT_CAPS, "{name}\n{out}");
    }
    assert_eq!(field(&out, "CapAmb"), "0000000000000000", "{out}");
}

/// runc clears the inheritable set since CVE-2022-24769 (runc 1.1.2, Docker
/// 20.10.14): with it set, a program with inheritable file capabilities
/// would gain them across execve, even for a non-root user.
#[test]
fn inheritable_capabilities_are_empty() {
    let berth = busybox();
    for options in [
        &[][..],
        &["-u", "1000"],
        &["--cap-add", "NET_ADMIN"],
        &["--privileged"],
    ] {
        let out = sh_ok(&berth, options, CAPS);
        assert_eq!(
            field(&out, "CapInh"),
            "0000000000000000",
            "{options:?}\n{out}"
        );
    }
}

#[test]
fn cap_drop_all_and_cap_add() {
    let berth = busybox();
    let out = sh_ok(&berth, &["--cap-drop", "ALL"], CAPS);
    for name in ["CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        assert_eq!(field(&out, name), "0000000000000000", "{name}\n{out}");
    }

    let out = sh_ok(&berth, &["--cap-add", "NET_ADMIN"], CAPS);
    let want = format!(
        "{:016x}",
        capability_mask(DOCKER_DEFAULT_CAPS) | 1 << CAP_NET_ADMIN
    );
    assert_eq!(want, "00000000a80435fb");
    for name in ["CapPrm", "CapEff", "CapBnd"] {
        assert_eq!(field(&out, name), want, "{name}\n{out}");
    }
}

#[test]
fn non_root_user_has_no_effective_capabilities() {
    let berth = busybox();
    let out = sh_ok(&berth, &["-u", "1000"], &format!("id -u; {CAPS}"));
    assert!(out.starts_with("1000\n"), "{out}");
    assert_eq!(field(&out, "CapPrm"), "0000000000000000", "{out}");
    assert_eq!(field(&out, "CapEff"), "0000000000000000", "{out}");
    assert_eq!(field(&out, "CapBnd"), DOCKER_DEFAULT_CAPS, "{out}");
}

/// `--privileged` gets the whole bounding set of the host — here without
/// CAP_SYS_RESOURCE — and no seccomp filter. Docker fails on such a host
/// ("unable to apply caps: operation not permitted"); berth must run.
#[test]
fn privileged_gets_the_host_bounding_set_and_runs() {
    let berth = busybox();
    let host = host_status();
    let host_bounding = field(&host, "CapBnd");
    if capability_mask(host_bounding) & (1 << CAP_SYS_RESOURCE) != 0 {
        eprintln!("note: this host's bounding set has CAP_SYS_RESOURCE");
    }
    let out = sh(&berth, &["--privileged"], CAPS).ok();
    for name in ["CapPrm", "CapEff", "CapBnd"] {
        assert_eq!(field(&out, name), host_bounding, "{name}\n{out}");
    }
    assert_eq!(field(&out, "Seccomp"), "0", "{out}");
}

#[test]
fn seccomp_filter_modes() {
    let berth = busybox();
    let cases: [(&[&str], &str); 3] = [
        (&[], "2"),
        (&["--security-opt", "seccomp=unconfined"], "0"),
        (&["--privileged"], "0"),
    ];
    for (options, want) in cases {
        let out = sh_ok(&berth, options, CAPS);
        assert_eq!(field(&out, "Seccomp"), want, "{options:?}\n{out}");
    }
}

#[test]
fn no_new_privileges() {
    let berth = busybox();
    let out = sh_ok(&berth, &[], CAPS);
    assert_eq!(field(&out, "NoNewPrivs"), "0", "{out}");
    let out = sh_ok(&berth, &["--security-opt", "no-new-privileges"], CAPS);
    assert_eq!(field(&out, "NoNewPrivs"), "1", "{out}");
}

/// Docker's profile allows unshare(2) only with CAP_SYS_ADMIN. `unshare -U`
/// needs no capability, so its EPERM comes from seccomp alone: it works
/// once the filter is off.
#[test]
fn default_seccomp_profile_blocks_namespace_syscalls() {
    let berth = busybox();
    let script = "unshare -U true; echo user=$?; unshare -m true; echo mount=$?; chroot / true; echo chroot=$?";
    let out = sh_ok(&berth, &[], script);
    assert_eq!(
        out,
        "unshare: unshare(0x10000000): Operation not permitted\nuser=1\n\
         unshare: unshare(0x20000): Operation not permitted\nmount=1\n\
         chroot=0\n"
    );
    let out = sh_ok(&berth, &["--security-opt", "seccomp=unconfined"], script);
    assert!(out.starts_with("user=0\n"), "{out}");
}

/// The filter is installed with SECCOMP_FILTER_FLAG_SPEC_ALLOW, so kernels
/// whose SSBD mitigation follows seccomp (spec_store_bypass_disable=seccomp)
/// do not force the mitigation on the container. On a "prctl" kernel like
/// this one the check holds trivially.
#[test]
fn seccomp_does_not_force_ssbd_mitigation() {
    let berth = busybox();
    let out = sh_ok(
        &berth,
        &[],
        "grep -E '^(Seccomp|Speculation_Store_Bypass):' /proc/self/status",
    );
    assert_eq!(field(&out, "Seccomp"), "2", "{out}");
    match status_field(&out, "Speculation_Store_Bypass") {
        None => eprintln!("SKIP: no Speculation_Store_Bypass in /proc/self/status"),
        Some(state) => assert_ne!(state, "thread force mitigated", "{out}"),
    }
}

#[test]
fn custom_seccomp_profile_denying_mkdir() {
    let berth = busybox();
    let work = tempfile::tempdir().unwrap();
    let profile = work.path().join("no-mkdir.json");
    fs_err::write(
        &profile,
        r#"{"defaultAction": "SCMP_ACT_ALLOW",
            "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO"}]}"#,
    )
    .unwrap();
    let option = format!("seccomp={}", profile.display());
    let out = sh_ok(
        &berth,
        &["--security-opt", &option],
        "mkdir /x; echo mkdir=$?; touch /y; echo touch=$?; grep Seccomp: /proc/self/status",
    );
    assert_eq!(
        out,
        "mkdir: can't create directory '/x': Operation not permitted\nmkdir=1\ntouch=0\nSeccomp:\t2\n"
    );
}

#[test]
fn bad_seccomp_profile_fails_the_run() {
    let berth = busybox();
    let work = tempfile::tempdir().unwrap();
    let malformed = work.path().join("malformed.json");
    fs_err::write(&malformed, "{\"defaultAction\": \n").unwrap();
    let option = format!("seccomp={}", malformed.display());
    let stderr = sh(&berth, &["--security-opt", &option], "echo ran").fails(125);
    // Docker: "compacting json for seccomp profile (PATH) failed: unexpected
    // end of JSON input" — the cause, not only the step.
    assert!(stderr.contains("seccomp profile"), "{stderr}");
    assert!(stderr.contains(malformed.to_str().unwrap()), "{stderr}");
    let lower = stderr.to_lowercase();
    assert!(
        lower.contains("eof") || lower.contains("end of"),
        "the parse error is not reported: {stderr}"
    );

    let missing = work.path().join("missing.json");
    let option = format!("seccomp={}", missing.display());
    let stderr = sh(&berth, &["--security-opt", &option], "echo ran").fails(125);
    assert!(stderr.contains(missing.to_str().unwrap()), "{stderr}");
    assert!(
        stderr.to_lowercase().contains("no such file"),
        "the cause is not reported: {stderr}"
    );
    assert!(
        berth.run(&["ps", "-aq"]).ok().is_empty(),
        "--rm left a container"
    );
}

// ---------------------------------------------------------------- ulimits

#[test]
fn ulimit_nofile_is_applied() {
    let berth = busybox();
    let out = sh_ok(
        &berth,
        &["--ulimit", "nofile=1024:2048"],
        "ulimit -n; ulimit -Hn",
    );
    assert_eq!(out, "1024\n2048\n");
}

#[test]
fn raising_a_hard_limit_without_cap_sys_resource_fails_clearly() {
    let berth = busybox();
    if capability_mask(field(&host_status(), "CapBnd")) & (1 << CAP_SYS_RESOURCE) != 0 {
        eprintln!("SKIP: this host grants CAP_SYS_RESOURCE, raising a hard limit is allowed");
        return;
    }
    let (_, hard) = host_rlimit(libc::RLIMIT_NOFILE);
    let Ok(hard) = hard.parse::<u64>() else {
        eprintln!("SKIP: the hard nofile limit is unlimited, nothing to raise");
        return;
    };
    let option = format!("nofile=1024:{}", hard + 1000);
    let run = sh(&berth, &["--ulimit", &option], "echo ran");
    assert_eq!(run.stdout(), "", "the command ran");
    let stderr = run.fails(125);
    assert!(
        stderr.to_lowercase().contains("nofile"),
        "the message does not name the limit: {stderr}"
    );
    assert!(stderr.contains("CAP_SYS_RESOURCE"), "{stderr}");
}

/// The test process's (soft, hard) limit, printed as sh's `ulimit` does.
fn host_rlimit(resource: libc::__rlimit_resource_t) -> (String, String) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the valid struct we pass.
    assert_eq!(unsafe { libc::getrlimit(resource, &mut limit) }, 0);
    let show = |value: libc::rlim_t| {
        if value == libc::RLIM_INFINITY {
            "unlimited".to_owned()
        } else {
            value.to_string()
        }
    };
    (show(limit.rlim_cur), show(limit.rlim_max))
}

/// Without --ulimit the container keeps the limits berth was started with,
/// like any child of the test process.
#[test]
fn a_plain_run_sets_no_limits() {
    let berth = busybox();
    let (files, files_hard) = host_rlimit(libc::RLIMIT_NOFILE);
    let (processes, processes_hard) = host_rlimit(libc::RLIMIT_NPROC);
    let out = sh_ok(&berth, &[], "ulimit -n; ulimit -Hn; ulimit -u; ulimit -Hu");
    assert_eq!(
        out,
        format!("{files}\n{files_hard}\n{processes}\n{processes_hard}\n")
    );
}

// ---------------------------------------------------------------- cgroups

#[test]
fn cgroup_v1_limits_are_written() {
    let berth = busybox();
    if !cgroup_v1_host() {
        return;
    }
    let container = Detached::start(
        &berth,
        &[
            "-m",
            "64m",
            "--cpus",
            "0.5",
            "--cpu-shares",
            "512",
            "--cpuset-cpus",
            "0",
            "--pids-limit",
            "20",
        ],
        &["sleep", "30"],
    );
    let pid = container.pid();
    let memory = v1_cgroup_dir(pid, "memory").unwrap();
    assert_eq!(
        read_trimmed(&memory.join("memory.limit_in_bytes")),
        "67108864"
    );
    let swap = memory.join("memory.memsw.limit_in_bytes");
    if swap.exists() {
        // No --memory-swap: Docker allows as much swap as memory.
        assert_eq!(read_trimmed(&swap), "134217728");
    } else {
        eprintln!("SKIP: no swap accounting (memory.memsw.*) on this host");
    }
    let cpu = v1_cgroup_dir(pid, "cpu").unwrap();
    assert_eq!(read_trimmed(&cpu.join("cpu.cfs_quota_us")), "50000");
    assert_eq!(read_trimmed(&cpu.join("cpu.cfs_period_us")), "100000");
    assert_eq!(read_trimmed(&cpu.join("cpu.shares")), "512");
    let cpuset = v1_cgroup_dir(pid, "cpuset").unwrap();
    assert_eq!(read_trimmed(&cpuset.join("cpuset.cpus")), "0");
    let pids = v1_cgroup_dir(pid, "pids").unwrap();
    assert_eq!(read_trimmed(&pids.join("pids.max")), "20");
}

#[test]
fn memory_swap_limit() {
    let berth = busybox();
    if !cgroup_v1_host() {
        return;
    }
    if !Path::new("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes").exists() {
        eprintln!("SKIP: no swap accounting (memory.memsw.*) on this host");
        return;
    }
    let container = Detached::start(
        &berth,
        &["-m", "64m", "--memory-swap", "100m"],
        &["sleep", "30"],
    );
    let memory = v1_cgroup_dir(container.pid(), "memory").unwrap();
    assert_eq!(
        read_trimmed(&memory.join("memory.limit_in_bytes")),
        "67108864"
    );
    assert_eq!(
        read_trimmed(&memory.join("memory.memsw.limit_in_bytes")),
        "104857600"
    );
}

#[test]
fn pids_limit_stops_a_fork_loop() {
    let berth = busybox();
    // The sleepers hold no pipe, so the run ends as soon as sh does (pid 1
    // exiting kills them).
    let script = "(i=0; while [ $i -lt 40 ]; do sleep 30 >/dev/null 2>&1 & i=$((i+1)); done; echo all forked) 2>&1 | head -1";
    let out = sh_ok(&berth, &["--pids-limit", "20"], script);
    assert_eq!(out, "sh: can't fork: Resource temporarily unavailable\n");
    // And without the limit all 40 fork.
    assert_eq!(sh_ok(&berth, &[], script), "all forked\n");
}

#[test]
fn memory_hog_is_oom_killed() {
    let berth = busybox();
    let container = Detached::start(
        &berth,
        &["-m", "16m"],
        &[
            "sh",
            "-c",
            "x=$(head -c 100000000 /dev/zero | tr '\\0' a); echo survived",
        ],
    );
    let waited = berth.run(&["wait", &container.id]).ok();
    assert_eq!(waited.trim(), "137");
    assert_eq!(
        container.inspect("{{.State.OOMKilled}} {{.State.ExitCode}}"),
        "true 137"
    );
    let logs = berth.run(&["logs", &container.id]).ok();
    assert!(!logs.contains("survived"), "{logs}");
}

#[test]
fn cgroup_directories_are_removed_when_the_container_exits() {
    let berth = busybox();
    let container = Detached::start(&berth, &["-m", "32m"], &["sleep", "30"]);
    let dirs = cgroup_dirs(container.pid());
    assert!(!dirs.is_empty(), "the container is in no cgroup of its own");
    for (_, dir) in &dirs {
        assert!(dir.is_dir(), "{dir:?} missing while running");
    }
    berth.run(&["kill", &container.id]).ok();
    assert_eq!(berth.run(&["wait", &container.id]).ok().trim(), "137");
    // The container still exists (no --rm), but its cgroups are gone.
    wait_for(
        "the cgroup directories to go",
        Duration::from_secs(5),
        || dirs.iter().all(|(_, dir)| !dir.exists()),
    );
    assert_eq!(container.inspect("{{.State.Status}}"), "exited");
}

/// Inside, /sys/fs/cgroup is read-only and shows the container's own
/// cgroup (runc binds it there for `--cgroupns host`; a private cgroup
/// namespace mounts it as its root).
#[test]
fn sys_fs_cgroup_inside_is_read_only_and_shows_own_limits() {
    let berth = busybox();
    if !cgroup_v1_host() {
        return;
    }
    let out = sh_ok(
        &berth,
        &["-m", "64m", "--pids-limit", "20", "--cpu-shares", "512"],
        "cd /sys/fs/cgroup\n\
         cat memory/memory.limit_in_bytes pids/pids.max cpu/cpu.shares\n\
         echo 1 > memory/memory.limit_in_bytes\n\
         mkdir memory/child\n\
         true",
    );
    assert_eq!(
        out,
        "67108864\n20\n512\n\
         sh: can't create memory/memory.limit_in_bytes: Read-only file system\n\
         mkdir: can't create directory 'memory/child': Read-only file system\n"
    );
}

// ------------------------------------------------------ the same in Docker

const ISOLATION_PROBE: &str = r#"echo pid=$$
grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):' /proc/self/status
for f in /proc/acpi /proc/kcore /proc/keys /proc/latency_stats /proc/timer_list /proc/timer_stats /proc/sched_debug /proc/scsi /sys/firmware; do
  if [ -d $f ]; then echo "$f: $(ls -A $f | wc -l) entries"
  elif [ -e $f ]; then echo "$f: $(cat $f | wc -c) bytes"
  else echo "$f: absent"; fi
done
for f in /proc/bus /proc/fs /proc/irq /proc/sys /proc/sysrq-trigger /sys /sys/kernel; do
  [ -e $f ] && touch $f
done
mount -t tmpfs none /mnt; echo mount=$?
unshare -U true; echo unshare=$?
ulimit -n; ulimit -Hn"#;

#[test]
fn docker_agrees_on_default_isolation() {
    let Some(host) = docker_with_busybox() else {
        return;
    };
    let berth = busybox();
    let (from_docker, from_berth) = both(&host, &berth, &[], ISOLATION_PROBE);
    assert_eq!(from_berth, from_docker);
}

/// Option sets Docker can run on this host. Not `--privileged` or
/// `--cap-add ALL`: runc cannot raise a bounding set that lacks
/// CAP_SYS_RESOURCE and Docker fails with "unable to apply caps".
#[test]
fn docker_agrees_on_security_options() {
    let Some(host) = docker_with_busybox() else {
        return;
    };
    let berth = busybox();
    let option_sets: [&[&str]; 5] = [
        &["-u", "1000"],
        &["--cap-drop", "ALL"],
        &["--cap-add", "NET_ADMIN"],
        &["--security-opt", "seccomp=unconfined"],
        &["--security-opt", "no-new-privileges"],
    ];
    let mut differences = Vec::new();
    for options in option_sets {
        let (from_docker, from_berth) = both(&host, &berth, options, ISOLATION_PROBE);
        if from_berth != from_docker {
            differences.push(format!(
                "{options:?}:\n--- docker\n{from_docker}--- berth\n{from_berth}"
            ));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

#[test]
fn docker_agrees_on_ulimit_and_memory_limit() {
    let Some(host) = docker_with_busybox() else {
        return;
    };
    let berth = busybox();
    let (from_docker, from_berth) = both(
        &host,
        &berth,
        &["--ulimit", "nofile=1024:2048"],
        "ulimit -n; ulimit -Hn",
    );
    assert_eq!(from_berth, from_docker);
    assert_eq!(from_berth, "exit Some(0)\n1024\n2048\n");

    let (from_docker, from_berth) = both(
        &host,
        &berth,
        &["-m", "64m"],
        "cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes",
    );
    assert_eq!(from_berth, from_docker);
}

#[test]
fn tmpfs_is_noexec_unless_exec_is_given() {
    let berth = busybox();
    let script = "grep -E ' /(x|y) ' /proc/mounts | cut -d' ' -f2,4";
    let cases: &[(&[&str], &str)] = &[
        (&["--tmpfs", "/x"], "/x rw,nosuid,nodev,noexec,relatime\n"),
        (
            &["--tmpfs", "/x:exec,size=1m"],
            "/x rw,nosuid,nodev,relatime,size=1024k\n",
        ),
        (
            &["--mount", "type=tmpfs,dst=/y"],
            "/y rw,nosuid,nodev,noexec,relatime\n",
        ),
    ];
    for (options, wanted) in cases {
        assert_eq!(sh_ok(&berth, options, script), *wanted, "{options:?}");
        if let Some(host) = docker_with_busybox() {
            let (docker, berth_out) = both(&host, &berth, options, script);
            assert_eq!(docker, berth_out, "{options:?}");
        }
    }
    let stderr = berth
        .run(&["run", "--rm", "--tmpfs", "/x:uid=1000", "busybox", "true"])
        .fails(125);
    assert!(
        stderr.contains("tmpfs option \"uid=1000\" for /x is not supported"),
        "{stderr}"
    );
}
