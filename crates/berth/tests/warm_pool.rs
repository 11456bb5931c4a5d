//! The warm pool: `warm IMAGE`, `warm ls`, `warm rm`, runs that claim a
//! pre-built sandbox, and everything that ends a member (TTL, a retired
//! image, a dead sandbox, a killed monitor).

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use support::{warm_member_ids, Berth};

fn pool(depth: &str) -> Berth {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    let made = berth.run(&["warm", "busybox", "--depth", depth]).ok();
    assert_eq!(
        made.lines().count(),
        depth.parse::<usize>().unwrap(),
        "{made}"
    );
    berth
}

/// One member that ends one second after it was made.
fn pool_with_ttl_of_one_second() -> Berth {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    let output = berth
        .command()
        .env("BERTH_WARM_TTL", "1s")
        .args(["warm", "busybox", "--depth", "1"])
        .output()
        .unwrap();
    assert!(output.status.success());
    berth
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

fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn cgroup_exists(id: &str) -> bool {
    ["/sys/fs/cgroup/pids/berth", "/sys/fs/cgroup/berth"]
        .iter()
        .any(|parent| Path::new(parent).join(id).exists())
}

fn member_info(berth: &Berth) -> Vec<serde_json::Value> {
    fs_err::read_dir(berth.run_root.path().join("warm"))
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| fs_err::read(entry.path().join("member.json")).ok())
                .map(|bytes| serde_json::from_slice(&bytes).unwrap())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_run_takes_a_ready_sandbox_and_a_replacement_is_built() {
    let berth = pool("2");
    let before = members(&berth);
    // Members have files and no row: listing containers leaves them be.
    assert_eq!(berth.run(&["ps", "-aq"]).ok(), "");
    assert_eq!(members(&berth), before);
    let listing = berth.run(&["warm", "ls"]).ok();
    let (header, rows) = support::table(&listing);
    assert_eq!(
        header,
        [
            "SANDBOX ID",
            "IMAGE",
            "ISOLATION",
            "CREATED",
            "EXPIRES",
            "MEMORY"
        ]
    );
    assert_eq!(rows.len(), 2);
    assert!(
        rows.iter()
            .all(|row| row[1] == "busybox:latest" && row[2] == "default"),
        "{listing}"
    );
    assert!(rows.iter().all(|row| row[5].ends_with("B")), "{listing}");

    let output = berth
        .run(&[
            "run",
            "--rm",
            "busybox",
            "sh",
            "-c",
            "echo $$; hostname; ls /proc | grep -c '^[0-9]'",
        ])
        .ok();
    let lines: Vec<&str> = output.lines().collect();
    assert_eq!(
        lines[0], "1",
        "the command is the container's pid 1: {output}"
    );
    assert!(
        before.contains(lines[1]),
        "ran in a pool member: {output} {before:?}"
    );
    assert!(
        lines[2].parse::<u32>().unwrap() <= 3,
        "no placeholder process: {output}"
    );
    assert_eq!(berth.run(&["ps", "-aq"]).ok(), "", "--rm removed it");
    // The claimed member is gone from the pool; a new one takes its place.
    eventually("the pool is refilled", || {
        let now = members(&berth);
        now.len() == 2 && !now.contains(lines[1])
    });
}

#[test]
fn the_eligible_flags_reach_the_process() {
    let berth = pool("1");
    let before = members(&berth);
    let data = tempfile::tempdir().unwrap();
    fs_err::write(data.path().join("note"), "from the host\n").unwrap();
    let volume = format!("{}:/data:ro", data.path().display());
    let output = berth
        .run(&[
            "run",
            "--name",
            "picked",
            "-e",
            "GREETING=hi",
            "-w",
            "/tmp",
            "-u",
            "1000:1000",
            "-v",
            &volume,
            "busybox",
            "sh",
            "-c",
            "echo $GREETING; pwd; id -u; cat /data/note; hostname",
        ])
        .ok();
    let lines: Vec<&str> = output.lines().collect();
    assert_eq!(
        lines[..4],
        ["hi", "/tmp", "1000", "from the host"],
        "{output}"
    );
    assert!(before.contains(lines[4]), "ran in the member: {output}");
    let inspect: serde_json::Value =
        serde_json::from_str(&berth.run(&["inspect", "picked"]).ok()).unwrap();
    assert_eq!(inspect[0]["Name"], "/picked");
    assert_eq!(inspect[0]["Config"]["WorkingDir"], "/tmp");
    assert_eq!(inspect[0]["State"]["Status"], "exited");
    assert!(inspect[0]["Id"].as_str().unwrap().starts_with(lines[4]));
    berth.run(&["rm", "picked"]).ok();

    // stdin (-i) reaches a claimed container too.
    eventually("the pool is refilled", || members(&berth).len() == 1);
    let before = members(&berth);
    let run = berth.run_with_stdin(
        &["run", "--rm", "-i", "busybox", "sh", "-c", "cat; hostname"],
        Some(b"piped in\n"),
    );
    let output = run.ok();
    let lines: Vec<&str> = output.lines().collect();
    assert_eq!(lines[0], "piped in");
    assert!(before.contains(lines[1]), "ran in the member: {output}");

    // -t: the claimed container gets a terminal of its own.
    eventually("the pool is refilled", || members(&berth).len() == 1);
    let before = members(&berth);
    let output = berth
        .run(&["run", "--rm", "-t", "busybox", "sh", "-c", "tty; hostname"])
        .ok();
    let lines: Vec<&str> = output
        .lines()
        .map(|line| line.trim_end_matches('\r'))
        .collect();
    assert_eq!(lines[0], "/dev/pts/0", "{output:?}");
    assert!(before.contains(lines[1]), "ran in the member: {output:?}");
}

#[test]
fn ineligible_runs_start_cold_and_leave_the_pool_alone() {
    let berth = pool("1");
    let before = members(&berth);
    for args in [
        vec!["run", "--rm", "--memory", "64m", "busybox", "hostname"],
        vec!["run", "--rm", "--network", "none", "busybox", "hostname"],
        vec!["run", "--rm", "--hostname", "custom", "busybox", "hostname"],
        vec!["run", "--rm", "--tmpfs", "/scratch", "busybox", "hostname"],
    ] {
        let output = berth.run(&args).ok();
        assert!(
            !before.contains(output.trim()),
            "{args:?} used the pool: {output}"
        );
        assert_eq!(members(&berth), before, "{args:?} changed the pool");
    }
    // BERTH_WARM=off keeps even an eligible run out of the pool.
    let output = berth
        .command()
        .env("BERTH_WARM", "off")
        .args(["run", "--rm", "busybox", "hostname"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let hostname = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    assert!(!before.contains(&hostname));
    assert_eq!(members(&berth), before);
    // A taken name is Docker's conflict, pool or not.
    berth.run(&["create", "--name", "taken", "busybox"]).ok();
    let error = berth
        .run(&["run", "--name", "taken", "busybox", "true"])
        .fails(125);
    assert!(error.contains("is already in use by container"), "{error}");
}

#[test]
fn concurrent_runs_never_share_a_sandbox() {
    let berth = pool("2");
    let runs: Vec<_> = (0..8)
        .map(|_| {
            berth
                .command()
                .args(["run", "--rm", "busybox", "hostname"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut hostnames = BTreeSet::new();
    for run in runs {
        hostnames.insert(support::containers::succeeded(run));
    }
    assert_eq!(
        hostnames.len(),
        8,
        "every run had its own container: {hostnames:?}"
    );
    assert_eq!(berth.run(&["ps", "-aq"]).ok(), "");
}

#[test]
fn a_new_image_under_the_name_retires_the_old_members() {
    let berth = pool("2");
    let old = member_info(&berth);
    assert_eq!(old.len(), 2);
    // Another image takes the name busybox:latest.
    berth
        .run(&[
            "import",
            support::fixture("rootfs.tar").to_str().unwrap(),
            "other:1",
        ])
        .ok();
    berth.run(&["tag", "other:1", "busybox:latest"]).ok();
    let now = member_info(&berth);
    assert!(
        now.iter()
            .all(|info| old.iter().all(|gone| gone["id"] != info["id"])),
        "old members retired: {now:?}"
    );
    for info in &old {
        assert!(!cgroup_exists(info["id"].as_str().unwrap()), "{info}");
    }
}

#[test]
fn idle_members_end_after_their_ttl() {
    let berth = pool_with_ttl_of_one_second();
    let ids = warm_member_ids(berth.run_root.path());
    assert_eq!(ids.len(), 1);
    eventually("the member ends", || members(&berth).is_empty());
    eventually("its files and cgroup are gone", || {
        member_info(&berth).is_empty() && !cgroup_exists(&ids[0])
    });
    let root_containers = berth.root.path().join("containers").join(&ids[0]);
    assert!(!root_containers.exists(), "{root_containers:?}");
}

/// A member whose pool directory was removed under it (its run root
/// deleted) still ends at its TTL and takes its cgroup with it.
#[test]
fn a_member_whose_directory_vanished_still_ends() {
    let berth = pool_with_ttl_of_one_second();
    let infos = member_info(&berth);
    let id = infos[0]["id"].as_str().unwrap().to_owned();
    let monitor = infos[0]["monitor_pid"].as_i64().unwrap() as i32;
    fs_err::remove_dir_all(berth.run_root.path().join("warm")).unwrap();
    eventually("the member's monitor exits", || {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(monitor), None).is_err()
    });
    assert!(!cgroup_exists(&id));
}

#[test]
fn a_dead_sandbox_or_monitor_takes_its_member_out_of_the_pool() {
    let berth = pool("2");
    let infos = member_info(&berth);
    // The sandbox's first process is killed: its monitor ends the member.
    let sandbox = infos[0]["sandbox_pid"].as_i64().unwrap() as i32;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(sandbox),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let first = infos[0]["id"].as_str().unwrap().to_owned();
    eventually("the member with the dead sandbox ends", || {
        !warm_member_ids(berth.run_root.path()).contains(&first)
    });
    assert!(!cgroup_exists(&first));

    // The other member's monitor is killed: the next pool command reaps it.
    let second = infos[1]["id"].as_str().unwrap().to_owned();
    let monitor = infos[1]["monitor_pid"].as_i64().unwrap() as i32;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(monitor),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    eventually("the orphaned sandbox ends", || {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(infos[1]["sandbox_pid"].as_i64().unwrap() as i32),
            None,
        )
        .is_err()
    });
    assert!(!members(&berth).contains(&second[..12]));
    assert!(!warm_member_ids(berth.run_root.path()).contains(&second));
    assert!(
        !cgroup_exists(&second),
        "the leaked member's cgroup was removed"
    );
    // Runs keep working.
    berth.run(&["run", "--rm", "busybox", "true"]).ok();
}

#[test]
fn warm_rm_ends_members_and_bad_input_is_refused() {
    let berth = pool("2");
    assert_eq!(berth.run(&["warm", "rm", "busybox"]).ok().trim(), "2");
    assert!(members(&berth).is_empty());
    assert!(member_info(&berth).is_empty());
    let error = berth.run(&["warm", "busybox", "--depth", "0"]).fails(1);
    assert!(error.contains("invalid pool depth"), "{error}");
    let error = berth.run(&["warm", "no-such-image"]).fails(1);
    assert!(error.contains("No such image"), "{error}");
    assert!(
        member_info(&berth).is_empty(),
        "a failed fill leaves nothing"
    );
}
