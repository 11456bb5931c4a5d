//! A root's host objects have an owner: its default bridge (`berth<hex>`), its nftables
//! table (`ip berth_<hex>`) and its `DOCKER-USER` rules are made by the first connect, stay
//! when the last user goes (as docker0 does), and go with `network prune` (or the removal of
//! the last user network) once the root has no network user; a run racing that removal
//! still gets a working network; a killed removal is finished by the next command; and
//! nothing of another root is touched.
//!
//! Every check names this test's own roots' objects only (see
//! `berth_net::instance::Instance`).

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use berth_net::instance::Instance;
use support::containers::wait_until;
use support::Berth;

fn busybox() -> Berth {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth
}

fn table_exists(table: &str) -> bool {
    Command::new("nft")
        .args(["list", "table", "ip", table])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// (bridge, table) of a root, as they exist on the host now.
fn host_objects(root: &Path) -> (bool, bool) {
    let instance = Instance::for_root(root);
    (
        support::link_exists(&instance.default_bridge),
        table_exists(&instance.table),
    )
}

/// A container that reaches its gateway (the bridge) over its own veth.
const PING_GATEWAY: &str = "ping -c 1 -W 3 $(ip route | awk '/^default/ {print $3}')";

#[test]
fn a_roots_bridge_and_table_stay_until_network_prune() {
    let berth = busybox();
    let root = berth.root().to_owned();
    // Looking networks up makes no host object.
    berth.run(&["network", "ls"]).ok();
    assert_eq!(host_objects(&root), (false, false));
    let ids: Vec<String> = (0..3)
        .map(|_| {
            berth
                .run(&["run", "-d", "busybox", "sleep", "300"])
                .ok()
                .trim()
                .to_owned()
        })
        .collect();
    assert_eq!(host_objects(&root), (true, true));
    // A prune while containers use them keeps them.
    berth.run(&["network", "prune", "-f"]).ok();
    assert_eq!(
        host_objects(&root),
        (true, true),
        "containers still use them"
    );
    for id in &ids {
        berth.run(&["rm", "-f", id]).ok();
    }
    // Like Docker's docker0, they stay when the last user goes (no cost on the next run)…
    assert_eq!(host_objects(&root), (true, true));
    let output = berth
        .run(&["run", "--rm", "busybox", "sh", "-c", PING_GATEWAY])
        .ok();
    assert!(output.contains("1 packets received"), "{output}");
    // …until `network prune` takes them.
    berth.run(&["network", "prune", "-f"]).ok();
    assert_eq!(host_objects(&root), (false, false));
    // The next run makes them again.
    let output = berth
        .run(&["run", "--rm", "busybox", "sh", "-c", PING_GATEWAY])
        .ok();
    assert!(output.contains("1 packets received"), "{output}");
    assert_eq!(host_objects(&root), (true, true));
    berth.run(&["network", "prune", "-f"]).ok();
    assert_eq!(host_objects(&root), (false, false));
}

#[test]
fn a_user_network_keeps_the_table_until_it_is_removed() {
    let berth = busybox();
    let root = berth.root().to_owned();
    let table = Instance::for_root(&root).table;
    berth.run(&["network", "create", "cleanup-net"]).ok();
    let device = berth
        .run(&["network", "inspect", "-f", "{{.Id}}", "cleanup-net"])
        .ok()
        .trim()[..9]
        .to_owned();
    let device = format!("berth-{device}");
    assert!(support::link_exists(&device));
    assert!(table_exists(&table));
    berth
        .run(&[
            "run",
            "--rm",
            "--network",
            "cleanup-net",
            "busybox",
            "sh",
            "-c",
            PING_GATEWAY,
        ])
        .ok();
    assert!(table_exists(&table), "the network still needs its rules");
    assert!(support::link_exists(&device));
    berth.run(&["network", "rm", "cleanup-net"]).ok();
    assert!(!support::link_exists(&device));
    assert_eq!(host_objects(&root), (false, false));
}

/// Runs start while `network prune` removes the root's unused bridge; each must still
/// reach its gateway, and a prune once all are gone leaves nothing.
#[test]
fn a_run_racing_the_removal_still_works() {
    let berth = busybox();
    let root = berth.root().to_owned();
    for round in 0..16 {
        berth.run(&["run", "--rm", "busybox", "true"]).ok();
        let mut prune = berth.command();
        prune.args(["network", "prune", "-f"]);
        let pruner = std::thread::spawn(move || support::output_with_stdin(prune, None));
        // Stagger the race across rounds: before, during, after the removal.
        std::thread::sleep(Duration::from_millis(round * 4));
        let run = berth.run(&["run", "--rm", "busybox", "sh", "-c", PING_GATEWAY]);
        let pruned = pruner.join().unwrap();
        assert!(pruned.status.success(), "prune: {pruned:?}");
        let output = run.ok();
        assert!(
            output.contains("1 packets received"),
            "round {round}: {output}"
        );
    }
    berth.run(&["network", "prune", "-f"]).ok();
    assert_eq!(host_objects(&root), (false, false));
}

#[test]
fn another_roots_bridge_and_table_are_left_alone() {
    let one = busybox();
    let two = busybox();
    let running = one
        .run(&["run", "-d", "busybox", "sleep", "300"])
        .ok()
        .trim()
        .to_owned();
    two.run(&["run", "--rm", "busybox", "true"]).ok();
    let id = two
        .run(&["run", "-d", "busybox", "sleep", "300"])
        .ok()
        .trim()
        .to_owned();
    two.run(&["rm", "-f", &id]).ok();
    two.run(&["network", "prune", "-f"]).ok();
    assert_eq!(host_objects(two.root()), (false, false));
    assert_eq!(host_objects(one.root()), (true, true));
    let output = one.run(&["exec", &running, "sh", "-c", PING_GATEWAY]).ok();
    assert!(output.contains("1 packets received"), "{output}");
    one.run(&["rm", "-f", &running]).ok();
    one.run(&["network", "prune", "-f"]).ok();
    assert_eq!(host_objects(one.root()), (false, false));
}

/// `network prune` killed at several moments while it removes the unused bridge and table:
/// the next command finishes what it left, and the store is sound.
#[test]
fn a_killed_removal_is_finished_by_the_next_command() {
    let berth = busybox();
    let root = berth.root().to_owned();
    for delay_ms in [0u64, 2, 5, 10, 20, 40, 80] {
        berth.run(&["run", "--rm", "busybox", "true"]).ok();
        assert_eq!(host_objects(&root), (true, true));
        let mut prune = berth.command();
        let mut child = prune
            .args(["network", "prune", "-f"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        // The next command: a listing of networks (every run and create looks networks up
        // the same way) finishes a removal that had begun.
        berth.run(&["network", "ls"]).ok();
        let (bridge, table) = host_objects(&root);
        assert_eq!(
            bridge, table,
            "after a prune killed at {delay_ms} ms: both or neither"
        );
        // Whatever was left, a run works and a prune cleans up.
        let output = berth
            .run(&["run", "--rm", "busybox", "sh", "-c", PING_GATEWAY])
            .ok();
        assert!(
            output.contains("1 packets received"),
            "{delay_ms} ms: {output}"
        );
        berth.run(&["network", "prune", "-f"]).ok();
        assert_eq!(host_objects(&root), (false, false), "{delay_ms} ms");
    }
    let store = berth_store::Store::open(&root).unwrap();
    assert!(store.endpoints(None, None).unwrap().is_empty());
    assert_eq!(store.integrity_check().unwrap(), "ok");
}

/// A monitor killed while its container runs: the reconcile of the next command frees the
/// endpoint, and `network prune` then finds the bridge and table unused.
#[test]
fn a_killed_monitor_leaves_no_bridge_after_the_next_command() {
    let berth = busybox();
    let root = berth.root().to_owned();
    let id = berth
        .run(&["run", "-d", "busybox", "sleep", "300"])
        .ok()
        .trim()
        .to_owned();
    let pid: i32 = berth
        .run(&["inspect", "-f", "{{.State.Pid}}", &id])
        .ok()
        .trim()
        .parse()
        .unwrap();
    let monitor = support::containers::parent_pid(pid);
    assert!(monitor > 1);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(monitor),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_until(5.0, "the monitor to die", || {
        !support::containers::pid_alive(monitor)
    });
    assert_eq!(host_objects(&root), (true, true));
    let status = berth.run(&["ps", "-a", "--format", "{{.Status}}"]).ok();
    assert!(status.starts_with("Exited (137)"), "{status}");
    let store = berth_store::Store::open(&root).unwrap();
    assert!(
        store.endpoints(None, None).unwrap().is_empty(),
        "the endpoint is freed"
    );
    berth.run(&["network", "prune", "-f"]).ok();
    assert_eq!(host_objects(&root), (false, false));
    berth.run(&["rm", &id]).ok();
}
