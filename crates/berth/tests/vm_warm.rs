//! The VM warm pool: `berth warm --isolation vm IMAGE` keeps booted microVMs
//! (QEMU microvm under TCG here, Debian's kernel, berth's agent ready) whose
//! root share is empty until a run claims one; the claim builds the
//! container's root there and runs its process in the booted guest. The
//! namespace pool's rules hold: single use, TTL, depth, `warm ls`/`warm rm`,
//! and a member whose VM or shim died is discarded, never repaired.
//!
//! The guest kernel and cache are found as in `vm_isolation.rs`; without
//! QEMU or virtiofsd the tests skip, saying so.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use support::containers::{cgroup_dirs, mounts_under, parent_pid, pid_alive, wait_until};
use support::vm::{command_of, free_port, http_get, kill9, vm_environment, vm_processes};
use support::{Berth, Run};

/// Every VM pool and run here: the microVM backend, no network (the test
/// with a published port says otherwise).
const VM: &[&str] = &["--isolation=vm", "--network", "none"];
const VM_POOL: &[&str] = &["--isolation", "vm", "--network", "none"];

/// A private root with busybox loaded whose commands find the guest
/// kernel and the shared cache.
struct VmPool {
    berth: Berth,
    kernel: PathBuf,
    cache: PathBuf,
}

/// How long a VM member may take to boot under TCG on a loaded machine.
const BOOT_SECONDS: f64 = 120.0;

impl VmPool {
    fn new() -> Option<VmPool> {
        let (kernel, cache) = vm_environment()?;
        let berth = Berth::new();
        berth.load("busybox-docker.tar");
        Some(VmPool {
            berth,
            kernel,
            cache,
        })
    }

    fn command(&self) -> Command {
        let mut command = self.berth.command();
        command
            .env("BERTH_VM_KERNEL_DIR", &self.kernel)
            .env("BERTH_VM_CACHE", &self.cache);
        command
    }

    fn run(&self, args: &[&str]) -> Run {
        self.run_env(args, &[])
    }

    fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        self.run_with_stdin(args, env, None)
    }

    fn run_with_stdin(&self, args: &[&str], env: &[(&str, &str)], stdin: Option<&[u8]>) -> Run {
        let mut command = self.command();
        command.args(args);
        for (name, value) in env {
            command.env(name, value);
        }
        Run {
            output: support::output_with_stdin(command, stdin),
        }
    }

    /// `berth warm FLAGS busybox --depth N`: the new members' short ids.
    #[track_caller]
    fn fill(&self, flags: &[&str], depth: usize, env: &[(&str, &str)]) -> Vec<String> {
        let mut args = vec!["warm"];
        args.extend_from_slice(flags);
        let depth_text = depth.to_string();
        args.extend_from_slice(&["busybox", "--depth", &depth_text]);
        let made: Vec<String> = self
            .run_env(&args, env)
            .ok()
            .lines()
            .map(str::to_owned)
            .collect();
        assert_eq!(made.len(), depth, "{made:?}");
        made
    }

    /// The offered members' full ids, as `warm ls` finds them (which
    /// discards dead ones first).
    fn offered(&self) -> BTreeSet<String> {
        let short: BTreeSet<String> = self
            .run(&["warm", "ls", "-q"])
            .ok()
            .lines()
            .map(str::to_owned)
            .collect();
        support::warm_member_ids(self.berth.run_root())
            .into_iter()
            .filter(|id| short.contains(&id[..12]))
            .collect()
    }

    /// Waits until `depth` members other than `old` are offered (a refill
    /// boots its VMs in the background).
    #[track_caller]
    fn wait_refilled(&self, depth: usize, old: &BTreeSet<String>) -> BTreeSet<String> {
        let mut offered = BTreeSet::new();
        wait_until(BOOT_SECONDS, "the pool to be refilled", || {
            offered = self.offered();
            offered.len() == depth && offered.is_disjoint(old)
        });
        offered
    }

    /// A member's pid of its shim (its `sandbox_pid`).
    fn shim_of(&self, id: &str) -> i32 {
        let info = fs_err::read(
            self.berth
                .run_root()
                .join("warm")
                .join(&id[..16])
                .join("member.json"),
        )
        .unwrap();
        let info: serde_json::Value = serde_json::from_slice(&info).unwrap();
        i32::try_from(info["sandbox_pid"].as_i64().unwrap()).unwrap()
    }

    fn inspect(&self, id: &str, format: &str) -> String {
        self.run(&["inspect", "-f", format, id])
            .ok()
            .trim()
            .to_owned()
    }

    /// Nothing of member or container `id` left: no process of its VM
    /// (shim, QEMU, virtiofsd), no network namespace those held, no mount,
    /// no cgroup, no VM directory.
    #[track_caller]
    fn assert_nothing_left(&self, id: &str, processes: &[i32], netns: &[String]) {
        wait_until(
            30.0,
            &format!("the processes {processes:?} of {id} to end"),
            || processes.iter().all(|pid| !pid_alive(*pid)),
        );
        wait_until(30.0, &format!("the cgroups of {id} to go"), || {
            cgroup_dirs(id).is_empty()
        });
        // The monitor removes the cgroup, then the mounts, then the VM's
        // directory.
        let vm_dir = self.berth.run_root().join("vm").join(&id[..12]);
        wait_until(30.0, &format!("{vm_dir:?} to go"), || !vm_dir.exists());
        self.berth.assert_no_leftovers(id);
        let mounts = mounts_under(self.berth.root());
        assert!(mounts.is_empty(), "mounts left: {mounts:?}");
        // nsfs reuses a freed namespace's inode number at once, so only
        // this root's processes count (another engineer's container may
        // hold a new namespace with the old number).
        let ours = shims_and_monitors_of(self.berth.root());
        let holders: Vec<i32> = processes_in(netns)
            .into_iter()
            .filter(|pid| ours.contains(pid) || processes.contains(pid))
            .collect();
        assert!(holders.is_empty(), "{netns:?} still held by {holders:?}");
    }
}

/// The VM shims started for the berth root `root`.
fn shims_of(root: &Path) -> Vec<i32> {
    shims_and_monitors_of(root)
        .into_iter()
        .filter(|pid| command_of(*pid).contains("__vm-shim"))
        .collect()
}

/// The processes whose environment names the berth root `root` (its
/// monitors and shims; QEMU and virtiofsd get an empty environment).
fn shims_and_monitors_of(root: &Path) -> Vec<i32> {
    let wanted = format!("BERTH_ROOT={}", root.display());
    fs_err::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            fs_err::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
                environ
                    .split(|byte| *byte == 0)
                    .any(|entry| entry == wanted.as_bytes())
            })
        })
        .collect()
}

/// The network namespace of `pid` (`net:[inode]`).
fn netns_of(pid: i32) -> String {
    fs_err::read_link(format!("/proc/{pid}/ns/net"))
        .map(|link| link.to_string_lossy().into_owned())
        .unwrap()
}

/// The processes in any of the network namespaces `netns`.
fn processes_in(netns: &[String]) -> Vec<i32> {
    fs_err::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            fs_err::read_link(format!("/proc/{pid}/ns/net"))
                .is_ok_and(|link| netns.contains(&link.to_string_lossy().into_owned()))
        })
        .collect()
}

/// The member's processes and network namespace, found by its shim.
fn member_processes(pool: &VmPool, id: &str) -> (Vec<i32>, Vec<String>) {
    let shim = pool.shim_of(id);
    let processes = vm_processes(shim);
    assert!(
        command_of(shim).contains("__vm-shim"),
        "{}",
        command_of(shim)
    );
    assert!(
        processes
            .iter()
            .any(|pid| command_of(*pid).contains("qemu-system")),
        "a booted VM: {processes:?}"
    );
    (processes, vec![netns_of(shim)])
}

#[test]
fn a_claimed_vm_runs_as_a_cold_one_does() {
    let Some(pool) = VmPool::new() else { return };
    // (run options, command, stdin)
    type Case<'a> = (&'a [&'a str], &'a [&'a str], Option<&'a [u8]>);
    let cases: &[Case] = &[
        (&[], &["echo", "hello", "world"], None),
        (&[], &["sh", "-c", "echo out; echo err >&2; exit 3"], None),
        (&[], &["no-such-program"], None),
        (
            &[],
            &[
                "sh",
                "-c",
                "echo $$; hostname | wc -c; ls /proc/acpi 2>/dev/null | wc -l",
            ],
            None,
        ),
        // A read-only root and the filesystems a member staged before its
        // claim (/proc, /sys, /dev moved into the claimed root) as a cold
        // VM mounts them.
        (&[], MOUNTS_AND_DEVICES, None),
        // The process settings and stdin come with the claim.
        (
            &["-i", "-u", "1000", "-w", "/tmp/work", "-e", "FOO=bar baz"],
            &["sh", "-c", "id; pwd; echo $FOO; cat"],
            Some(b"line one\nline two\n"),
        ),
    ];
    pool.fill(VM_POOL, 1, &[]);
    let mut offered = pool.offered();
    for (index, (options, args, stdin)) in cases.iter().enumerate() {
        let member = offered.iter().next().unwrap().clone();
        let name = format!("warm{index}");
        let mut warm = vec!["run", "--name", &name];
        warm.extend_from_slice(VM);
        warm.extend_from_slice(options);
        warm.push("busybox");
        warm.extend_from_slice(args);
        let warm = pool.run_with_stdin(&warm, &[], *stdin);
        // The member became this container: its id is the member's.
        assert_eq!(pool.inspect(&name, "{{.Id}}"), member, "{args:?} was warm");
        pool.run(&["rm", &name]).ok();
        let mut cold = vec!["run", "--rm"];
        cold.extend_from_slice(VM);
        cold.extend_from_slice(options);
        cold.push("busybox");
        cold.extend_from_slice(args);
        let cold = pool.run_with_stdin(&cold, &[("BERTH_WARM", "off")], *stdin);
        assert_eq!(
            (warm.code(), warm.stdout(), warm.stderr()),
            (cold.code(), cold.stdout(), cold.stderr()),
            "{options:?} {args:?}: the claimed VM (left) differs from a cold one (right)"
        );
        offered = pool.wait_refilled(1, &offered);
    }
    pool.run(&["warm", "rm"]).ok();
    assert!(pool.berth.all_ids().is_empty());
}

/// What a container sees of its root's mounts and /dev, and whether it can
/// write to its root.
const MOUNTS_AND_DEVICES: &[&str] = &[
    "sh",
    "-c",
    "touch /x; echo $?; awk '{print $2, $3, $4}' /proc/mounts; ls /dev /dev/pts",
];

#[test]
fn a_claimed_vm_on_a_user_network_has_its_address_and_names() {
    let Some(pool) = VmPool::new() else { return };
    pool.run(&["network", "create", "wnet"]).ok();
    let peer = pool
        .run(&[
            "run",
            "-d",
            "--name",
            "wpeer",
            "--network",
            "wnet",
            "busybox",
            "sleep",
            "300",
        ])
        .ok()
        .trim()
        .to_owned();
    let peer_address = pool.inspect("wpeer", "{{.NetworkSettings.Networks.wnet.IPAddress}}");
    // The member's card has its address before the claim; the claim adds
    // the embedded DNS.
    pool.fill(&["--isolation", "vm", "--network", "wnet"], 1, &[]);
    let member = pool.offered().into_iter().next().unwrap();
    let id = pool
        .run(&[
            "run",
            "-d",
            "--isolation=vm",
            "--network",
            "wnet",
            "busybox",
            "sleep",
            "300",
        ])
        .ok()
        .trim()
        .to_owned();
    assert_eq!(id, member, "the run claimed the member");
    let address = pool.inspect(&id, "{{.NetworkSettings.Networks.wnet.IPAddress}}");
    let out = pool
        .run(&[
            "exec",
            &id,
            "sh",
            "-c",
            "ip -4 -o addr show eth0 | awk '{print $4}'; ping -c 1 -W 20 wpeer | head -1",
        ])
        .ok();
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with(&format!("{address}/")), "{out}");
    assert!(lines[1].contains(&format!("({peer_address})")), "{out}");
    // A claimed member has its spare cards too: connected to a second
    // network while it runs, it reaches a container there by name.
    pool.run(&["network", "create", "wnet2"]).ok();
    let far = pool
        .run(&[
            "run",
            "-d",
            "--name",
            "wfar",
            "--network",
            "wnet2",
            "busybox",
            "sleep",
            "300",
        ])
        .ok()
        .trim()
        .to_owned();
    let far_address = pool.inspect("wfar", "{{.NetworkSettings.Networks.wnet2.IPAddress}}");
    pool.run(&["network", "connect", "wnet2", &id]).ok();
    let address = pool.inspect(&id, "{{.NetworkSettings.Networks.wnet2.IPAddress}}");
    let out = pool
        .run(&[
            "exec",
            &id,
            "sh",
            "-c",
            "ip -4 -o addr show eth1 | awk '{print $4}'; ping -c 1 -W 20 wfar | head -1",
        ])
        .ok();
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with(&format!("{address}/")), "{out}");
    assert!(lines[1].contains(&format!("({far_address})")), "{out}");
    pool.run(&["network", "disconnect", "wnet2", &id]).ok();
    let links = pool.run(&["exec", &id, "ip", "-o", "link"]).ok();
    assert!(
        !support::vm::links_up(&links).contains(&"eth1".to_owned()),
        "{links}"
    );
    let processes = vm_processes(pool.inspect(&id, "{{.State.Pid}}").parse().unwrap());
    let netns = vec![netns_of(processes[0])];
    pool.run(&["rm", "-f", &id, &peer, &far]).ok();
    pool.assert_nothing_left(&id, &processes, &netns);
    pool.run(&["warm", "rm"]).ok();
    pool.run(&["network", "rm", "wnet", "wnet2"]).ok();
}

#[test]
fn concurrent_claims_on_a_pool_of_two_never_share_a_vm() {
    let Some(pool) = VmPool::new() else { return };
    pool.fill(VM_POOL, 2, &[]);
    let first = pool.offered();
    assert_eq!(first.len(), 2, "{first:?}");
    let names: Vec<String> = (0..4).map(|index| format!("claim{index}")).collect();
    let runs: Vec<Run> = std::thread::scope(|scope| {
        let handles: Vec<_> = names
            .iter()
            .map(|name| {
                let pool = &pool;
                scope.spawn(move || {
                    let mut args = vec!["run", "--name", name.as_str()];
                    args.extend_from_slice(VM);
                    args.extend_from_slice(&["busybox", "cat", "/proc/sys/kernel/random/boot_id"]);
                    pool.run(&args)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .collect()
    });
    let boot_ids: BTreeSet<String> = runs.iter().map(|run| run.ok().trim().to_owned()).collect();
    assert_eq!(
        boot_ids.len(),
        4,
        "each run had a VM of its own: {boot_ids:?}"
    );
    let ids: BTreeSet<String> = names
        .iter()
        .map(|name| pool.inspect(name, "{{.Id}}"))
        .collect();
    assert!(
        first.is_subset(&ids),
        "both members were claimed, each by one run: {first:?} in {ids:?}"
    );
    // The pool is refilled to its depth with new VMs.
    let refilled = pool.wait_refilled(2, &first);
    assert!(refilled.is_disjoint(&ids), "no member is used twice");
    for name in &names {
        pool.run(&["rm", name]).ok();
    }
    pool.run(&["warm", "rm"]).ok();
    for id in ids.iter().chain(&refilled) {
        pool.assert_nothing_left(id, &[], &[]);
    }
}

#[test]
fn vm_and_namespace_members_of_one_image_serve_their_own_runs() {
    let Some(pool) = VmPool::new() else { return };
    // The VM member is the older one: a namespace run must pass it by.
    pool.fill(VM_POOL, 1, &[]);
    let vm_member = pool.offered().into_iter().next().unwrap();
    pool.fill(&["--network", "none"], 1, &[]);
    let listing = pool.run(&["warm", "ls"]).ok();
    assert!(
        listing.contains(" vm ") && listing.contains(" default "),
        "{listing}"
    );
    let namespace_member = pool
        .offered()
        .into_iter()
        .find(|id| *id != vm_member)
        .unwrap();
    pool.run(&[
        "run",
        "--name",
        "in-ns",
        "--network",
        "none",
        "busybox",
        "true",
    ])
    .ok();
    assert_eq!(pool.inspect("in-ns", "{{.Id}}"), namespace_member);
    assert_eq!(pool.inspect("in-ns", "{{.HostConfig.Isolation}}"), "");
    let mut args = vec!["run", "--name", "in-vm"];
    args.extend_from_slice(VM);
    args.extend_from_slice(&["busybox", "true"]);
    pool.run(&args).ok();
    assert_eq!(pool.inspect("in-vm", "{{.Id}}"), vm_member);
    assert_eq!(pool.inspect("in-vm", "{{.HostConfig.Isolation}}"), "vm");
    // Each pool is refilled with its own kind.
    wait_until(BOOT_SECONDS, "both pools to be refilled", || {
        let listing = pool.run(&["warm", "ls"]).ok();
        listing.contains(" vm ") && listing.contains(" default ")
    });
    pool.run(&["rm", "in-ns", "in-vm"]).ok();
    pool.run(&["warm", "rm"]).ok();
}

#[test]
fn a_claimed_vm_container_is_stopped_and_logged_as_a_cold_one() {
    let Some(pool) = VmPool::new() else { return };
    pool.fill(VM_POOL, 1, &[]);
    let member = pool.offered().into_iter().next().unwrap();
    let mut args = vec!["run", "-d"];
    args.extend_from_slice(VM);
    args.extend_from_slice(&[
        "busybox",
        "sh",
        "-c",
        "trap 'echo got TERM; exit 42' TERM; echo ready; while :; do sleep 0.1; done",
    ]);
    let id = pool.run(&args).ok().trim().to_owned();
    assert_eq!(id, member, "the run claimed the member");
    wait_until(BOOT_SECONDS, "ready in the logs", || {
        pool.run(&["logs", &id]).ok().contains("ready")
    });
    // The member's virtiofsd keeps its own sandbox (pid/mount namespaces,
    // `pivot_root` into the share): the claimed root reached it by mount
    // propagation, not by giving the sandbox up.
    let shim: i32 = pool.inspect(&id, "{{.State.Pid}}").parse().unwrap();
    let daemons: Vec<String> = vm_processes(shim)
        .into_iter()
        .map(command_of)
        .filter(|command| command.contains("virtiofsd"))
        .collect();
    assert!(!daemons.is_empty(), "the member's virtiofsd");
    assert!(
        daemons
            .iter()
            .all(|command| command.contains("--sandbox=namespace")),
        "{daemons:?}"
    );
    // SIGTERM reaches the process in the claimed guest through the shim.
    pool.run(&["stop", &id]).ok();
    assert_eq!(pool.inspect(&id, "{{.State.ExitCode}}"), "42");
    assert_eq!(pool.run(&["logs", &id]).ok(), "ready\ngot TERM\n");
    pool.run(&["rm", &id]).ok();
    pool.assert_nothing_left(&id, &[], &[]);
    pool.wait_refilled(1, &BTreeSet::from([member]));
    pool.run(&["warm", "rm"]).ok();
}

#[test]
fn ttl_expiry_and_warm_rm_leave_nothing() {
    let Some(pool) = VmPool::new() else { return };
    // An idle member ends itself after its TTL.
    let made = pool.fill(VM_POOL, 1, &[("BERTH_WARM_TTL", "3s")]);
    let id = pool.offered().into_iter().next().unwrap();
    assert!(id.starts_with(&made[0]));
    let listing = pool.run(&["warm", "ls"]).ok();
    assert!(listing.contains(" vm "), "{listing}");
    let (processes, netns) = member_processes(&pool, &id);
    wait_until(BOOT_SECONDS, "the member's TTL to end it", || {
        pool.offered().is_empty()
    });
    pool.assert_nothing_left(&id, &processes, &netns);
    // `warm rm` ends them at once.
    pool.fill(VM_POOL, 1, &[]);
    let id = pool.offered().into_iter().next().unwrap();
    let (processes, netns) = member_processes(&pool, &id);
    assert_eq!(pool.run(&["warm", "rm", "busybox"]).ok(), "1\n");
    assert!(pool.offered().is_empty());
    pool.assert_nothing_left(&id, &processes, &netns);
}

#[test]
fn a_member_whose_shim_or_vm_was_killed_is_discarded() {
    let Some(pool) = VmPool::new() else { return };
    for victim in ["qemu-system", "virtiofsd", "__vm-shim", "monitor"] {
        pool.fill(VM_POOL, 1, &[]);
        let id = pool.offered().into_iter().next().unwrap();
        let (processes, netns) = member_processes(&pool, &id);
        let target = if victim == "monitor" {
            parent_pid(pool.shim_of(&id))
        } else {
            *processes
                .iter()
                .find(|pid| command_of(**pid).contains(victim))
                .unwrap_or_else(|| panic!("no {victim} among {processes:?}"))
        };
        eprintln!("kill -9 {victim} ({target})");
        kill9(target);
        // The next pool operation no longer offers it, and nothing of it stays.
        wait_until(
            30.0,
            &format!("the member to be discarded after kill -9 of {victim}"),
            || pool.offered().is_empty(),
        );
        pool.assert_nothing_left(&id, &processes, &netns);
        // The member's directory goes last (a listing that no longer shows
        // it may come first).
        wait_until(30.0, "the member's directory to go", || {
            support::warm_member_ids(pool.berth.run_root()).is_empty()
        });
    }
    // The monitor (and the `warm` that waits for it) killed while the VM
    // boots: the next pool operation removes what it had built.
    let mut args = vec!["warm"];
    args.extend_from_slice(VM_POOL);
    args.extend_from_slice(&["busybox", "--depth", "1"]);
    let mut warm = pool
        .command()
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut shim = None;
    wait_until(BOOT_SECONDS, "a member's shim to start booting", || {
        shim = shims_of(pool.berth.root()).first().copied();
        shim.is_some()
    });
    let shim = shim.unwrap();
    let monitor = parent_pid(shim);
    let building = support::warm_member_ids(pool.berth.run_root());
    assert!(building.is_empty(), "not offered yet: {building:?}");
    let processes = vm_processes(shim);
    let netns = vec![netns_of(shim)];
    kill9(i32::try_from(warm.id()).unwrap());
    kill9(monitor);
    let _ = warm.wait();
    wait_until(30.0, "the half-built member to be removed", || {
        pool.run(&["warm", "ls", "-q"]).ok().is_empty()
            && fs_err::read_dir(pool.berth.run_root().join("warm"))
                .map(|entries| entries.flatten().all(|entry| !entry.path().is_dir()))
                .unwrap_or(true)
    });
    wait_until(30.0, "the half-built member's processes to end", || {
        processes.iter().all(|pid| !pid_alive(*pid))
    });
    let ours = shims_and_monitors_of(pool.berth.root());
    assert!(
        processes_in(&netns)
            .iter()
            .all(|pid| !ours.contains(pid) && !processes.contains(pid)),
        "the half-built member's network namespace is held"
    );
    assert!(pool.berth.container_dirs().is_empty());
    assert!(mounts_under(pool.berth.root()).is_empty());
    // A run then starts cold and works.
    let mut args = vec!["run", "--rm"];
    args.extend_from_slice(VM);
    args.extend_from_slice(&["busybox", "echo", "cold"]);
    assert_eq!(pool.run_env(&args, &[("BERTH_WARM", "off")]).ok(), "cold\n");
}

#[test]
fn a_claimed_vm_with_a_bind_and_a_published_port() {
    let Some(pool) = VmPool::new() else { return };
    let port = free_port();
    let publish = format!("127.0.0.1:{port}:80");
    // A fixed host port: one member at a time holds it.
    pool.fill(&["--isolation", "vm", "-p", &publish], 1, &[]);
    let member = pool.offered().into_iter().next().unwrap();
    let host = tempfile::tempdir().unwrap();
    fs_err::write(host.path().join("index.html"), "from the host\n").unwrap();
    let bind = format!("{}:/www:ro", host.path().display());
    let id = pool
        .run(&[
            "run",
            "-d",
            "--isolation=vm",
            "-p",
            &publish,
            "-v",
            &bind,
            "busybox",
            "sh",
            "-c",
            "echo written > /www/x 2>/dev/null || echo read-only > /tmp/ro; httpd -f -p 80 -h /www",
        ])
        .ok()
        .trim()
        .to_owned();
    assert_eq!(id, member, "the run claimed the member");
    let mut answer = String::new();
    wait_until(
        BOOT_SECONDS,
        "the claimed VM's httpd on the published port",
        || {
            answer = http_get(port, "/index.html").unwrap_or_default();
            !answer.is_empty()
        },
    );
    assert!(answer.ends_with("\n\nfrom the host\n"), "{answer:?}");
    assert!(!host.path().join("x").exists(), "the bind is read-only");
    let processes = vm_processes(pool.inspect(&id, "{{.State.Pid}}").parse().unwrap());
    let netns = vec![netns_of(processes[0])];
    pool.run(&["rm", "-f", &id]).ok();
    pool.assert_nothing_left(&id, &processes, &netns);
    // The refill could not take the port while the container held it; a
    // new fill can now.
    pool.run(&["warm", "rm"]).ok();
    pool.fill(&["--isolation", "vm", "-p", &publish], 1, &[]);
    pool.run(&["warm", "rm"]).ok();
    assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_ok());
}

#[test]
fn what_a_vm_pool_cannot_hold_is_refused_and_leaves_nothing() {
    let Some(pool) = VmPool::new() else { return };
    for (flags, words) in [
        (&["--isolation", "foo"][..], "Invalid isolation: \"foo\""),
        (
            &["--isolation", "vm", "--network", "host"][..],
            "--network host is not supported with --isolation=vm",
        ),
    ] {
        let mut args = vec!["warm"];
        args.extend_from_slice(flags);
        args.push("busybox");
        // `warm`'s bad input, as its other errors, exits 1.
        let stderr = pool.run(&args).fails(1);
        assert!(stderr.contains(words), "{flags:?}: {stderr}");
        assert!(pool.offered().is_empty());
        assert!(support::warm_member_ids(pool.berth.run_root()).is_empty());
        assert!(pool.berth.container_dirs().is_empty(), "{flags:?}");
    }
    // A member whose VM cannot boot (no guest kernel) is not made, and
    // leaves no member, container, cgroup or process.
    let mut args = vec!["warm"];
    args.extend_from_slice(VM_POOL);
    args.push("busybox");
    let stderr = pool
        .run_env(&args, &[("BERTH_VM_KERNEL_DIR", "/nonexistent/kernel")])
        .fails(1);
    assert!(
        stderr.contains("failed to boot the VM of pool member")
            && stderr.contains("\"/nonexistent/kernel\" does not exist"),
        "{stderr}"
    );
    assert!(support::warm_member_ids(pool.berth.run_root()).is_empty());
    assert!(pool.berth.container_dirs().is_empty());
    let member_dirs: Vec<_> = fs_err::read_dir(pool.berth.run_root().join("warm"))
        .map(|entries| {
            entries
                .flatten()
                .filter(|entry| entry.path().is_dir())
                .collect()
        })
        .unwrap_or_default();
    assert!(member_dirs.is_empty(), "{member_dirs:?}");
}
