//! Crash safety of `rm`, `commit` and `cp` (issue 15): each is killed with
//! SIGKILL at several points, and the next command must leave the container
//! in a true state with nothing leaked: no mount, cgroup, process, intent
//! or temporary file, and a store that passes SQLite's integrity check.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use support::containers::{
    cgroup_dirs, detach_mounts_under, kill_cgroup, kill_processes_of_root, mounts_under,
    wait_child, wait_until,
};
use support::Berth;

/// A root with busybox:latest that, when dropped, kills what its tests left
/// running and detaches what they left mounted (a failed test must not
/// leave the machine dirty).
struct Root {
    berth: Berth,
    ids: Vec<String>,
}

impl Root {
    fn new() -> Self {
        let berth = Berth::new();
        berth.load("busybox-docker.tar");
        Self {
            berth,
            ids: Vec::new(),
        }
    }

    fn run_root(&self) -> &Path {
        self.berth.run_root.path()
    }

    fn upper(&self, id: &str) -> PathBuf {
        self.berth.root().join("containers").join(id).join("upper")
    }

    /// The files of the run root's container directory of `id` whose names
    /// start with `prefix` (the intents of `commit` and `cp`).
    fn intents(&self, id: &str, prefix: &str) -> Vec<String> {
        names(&self.run_root().join("containers").join(id))
            .into_iter()
            .filter(|name| name.starts_with(prefix))
            .collect()
    }

    /// Asserts that nothing of container `id` is left anywhere.
    #[track_caller]
    fn assert_gone(&self, id: &str) {
        assert!(
            !self.berth.all_ids().contains(&id.to_owned()),
            "{id} still listed"
        );
        for parent in [self.berth.root(), self.run_root()] {
            let left: Vec<_> = names(&parent.join("containers"))
                .into_iter()
                .filter(|name| name.starts_with(id))
                .collect();
            assert!(left.is_empty(), "{id} left {left:?} under {parent:?}");
        }
        self.berth.assert_no_leftovers(id);
    }

    #[track_caller]
    fn assert_store_intact(&self) {
        let store = berth_store::Store::open(self.berth.root()).unwrap();
        assert_eq!(store.integrity_check().unwrap(), "ok");
    }

    /// Asserts that no process of this root is left (a stopped container's
    /// monitor exits moments after it reported the exit).
    #[track_caller]
    fn assert_no_processes(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = self.processes();
            if left.is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "processes of the root left: {left:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn processes(&self) -> Vec<String> {
        let wanted = format!("BERTH_ROOT={}", self.berth.root().display());
        let own = std::process::id().to_string();
        let left: Vec<String> = names(Path::new("/proc"))
            .into_iter()
            .filter(|pid| pid.bytes().all(|byte| byte.is_ascii_digit()) && *pid != own)
            .filter(|pid| {
                fs_err::read(format!("/proc/{pid}/environ"))
                    .map(|environ| {
                        environ
                            .split(|byte| *byte == 0)
                            .any(|item| item == wanted.as_bytes())
                    })
                    .unwrap_or(false)
            })
            .collect();
        left
    }
}

impl Drop for Root {
    fn drop(&mut self) {
        kill_processes_of_root(self.berth.root());
        for id in &self.ids {
            kill_cgroup(id);
        }
        detach_mounts_under(self.berth.root());
    }
}

fn names(directory: &Path) -> Vec<String> {
    let mut found: Vec<String> = fs_err::read_dir(directory)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| entry.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

fn kill(child: &mut Child) {
    let _ = child.kill();
    wait_child(child, 10.0, "the killed command to be reaped");
}

// --------------------------------------------------------------------- rm

/// Files in the container's writable layer: enough that removing them
/// takes a while, so that kills land in the middle.
const FILES: usize = 6000;

/// The container's command: makes the files on its first run, and on any
/// later run prints how many it finds.
fn counting_script() -> String {
    format!(
        "if [ -d /many ]; then ls /many | wc -l; else mkdir /many && cd /many && \
         i=0; while [ $i -lt {FILES} ]; do : > f$i; i=$((i+1)); done; fi"
    )
}

#[test]
fn killed_rm_leaves_a_whole_container_or_finishes_removing() {
    let mut root = Root::new();
    let script = counting_script();
    // (wait for the removal to have begun, then wait this long) before the kill.
    let cases: [(bool, u64); 6] = [
        (false, 0),
        (false, 5),
        (true, 0),
        (true, 5),
        (true, 30),
        (true, 100),
    ];
    let mut killed_mid_removal = 0;
    for (after_start, delay) in cases {
        let id = root.berth.run_detached(&["busybox", "sh", "-c", &script]);
        root.ids.push(id.clone());
        root.berth.wait_status(&id, "exited", 60.0);
        let files = root.upper(&id).join("many");
        assert_eq!(names(&files).len(), FILES);

        let mut rm = root.berth.spawn(&["rm", &id]);
        if after_start {
            // The first file is gone: the removal is under way.
            let begun = Instant::now();
            while names(&files).len() == FILES && begun.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
        std::thread::sleep(Duration::from_millis(delay));
        kill(&mut rm);
        let left = names(&files).len();
        if left > 0 && left < FILES {
            killed_mid_removal += 1;
        }

        // The next command shows the truth: a whole container, or none
        // (the lookup finishes a removal whose remover is gone).
        let listed = root.berth.all_ids().contains(&id);
        let status = root.berth.status(&id);
        if listed {
            assert_eq!(
                status, "exited",
                "case {after_start}/{delay}: {left} files left"
            );
            let counted = root.berth.run(&["start", "-a", &id]).ok();
            assert_eq!(
                counted.trim(),
                FILES.to_string(),
                "case {after_start}/{delay}: a container that can start has all its files"
            );
        } else {
            assert!(
                root.berth.run(&["inspect", &id]).code() != 0,
                "case {after_start}/{delay}: inspect finds a container ps does not list"
            );
        }
        // A second rm -f leaves nothing.
        root.berth.run(&["rm", "-f", &id]);
        root.assert_gone(&id);
        root.assert_store_intact();
        root.assert_no_processes();
    }
    assert!(
        killed_mid_removal > 0,
        "no kill landed while the files were being removed: the test proved nothing"
    );
}

/// While `rm` is removing, the container is shown as being removed and
/// cannot be started, committed or removed a second time (Docker's words).
#[test]
fn a_container_being_removed_is_shown_so_and_refuses_start_and_commit() {
    let mut root = Root::new();
    let id = root
        .berth
        .run_detached(&["busybox", "sh", "-c", &counting_script()]);
    root.ids.push(id.clone());
    root.berth.wait_status(&id, "exited", 60.0);
    let files = root.upper(&id).join("many");
    // The rm is stopped (SIGSTOP) once it has begun: a removal in progress.
    let mut rm = root.berth.spawn(&["rm", &id]);
    wait_until(10.0, "the removal to begin", || names(&files).len() < FILES);
    let rm_pid = nix::unistd::Pid::from_raw(rm.id() as i32);
    nix::sys::signal::kill(rm_pid, nix::sys::signal::Signal::SIGSTOP).unwrap();

    let status = root
        .berth
        .run(&["ps", "-a", "--format", "{{.Status}}"])
        .ok();
    assert_eq!(status.trim(), "Removal In Progress");
    assert_eq!(root.berth.status(&id), "removing");
    let refused = root.berth.run(&["start", &id]).fails(1);
    assert!(
        refused.contains("container is marked for removal and cannot be started"),
        "{refused}"
    );
    let refused = root.berth.run(&["commit", &id]).fails(1);
    assert!(
        refused.contains(&format!(
            "You cannot commit container {id} which is being removed"
        )),
        "{refused}"
    );
    let refused = root.berth.run(&["rm", "-f", &id]).fails(1);
    assert!(
        refused.contains(&format!("removal of container {id} is already in progress")),
        "{refused}"
    );

    nix::sys::signal::kill(rm_pid, nix::sys::signal::Signal::SIGCONT).unwrap();
    let status = wait_child(&mut rm, 60.0, "rm to finish");
    assert!(status.success());
    root.assert_gone(&id);
    root.assert_store_intact();
}

// ----------------------------------------------------------------- commit

/// The container's cgroup freezer state: true when frozen (v1
/// `freezer.state`, v2 `cgroup.freeze`).
fn frozen(id: &str) -> bool {
    cgroup_dirs(id).iter().any(|directory| {
        let v1 = fs_err::read_to_string(directory.join("freezer.state")).unwrap_or_default();
        let v2 = fs_err::read_to_string(directory.join("cgroup.freeze")).unwrap_or_default();
        v1.trim() == "FROZEN" || v1.trim() == "FREEZING" || v2.trim() == "1"
    })
}

fn staged_commits(berth: &Berth) -> Vec<String> {
    names(&berth.root().join("tmp"))
        .into_iter()
        .filter(|name| name.starts_with("commit-"))
        .collect()
}

#[test]
fn killed_commit_is_thawed_by_the_next_command() {
    let mut root = Root::new();
    // Enough data that the commit takes a while (and a kill lands in it).
    let id = root.berth.run_detached(&[
        "busybox",
        "sh",
        "-c",
        "dd if=/dev/urandom of=/data bs=1M count=24 2>/dev/null && touch /ready && exec sleep 1000",
    ]);
    root.ids.push(id.clone());
    wait_until(60.0, "the container's data", || {
        root.upper(&id).join("ready").exists()
    });
    let mut killed_frozen = 0;
    for delay in [0, 20, 100, 300, 800] {
        let mut commit = root.berth.spawn(&["commit", &id, "killed:latest"]);
        std::thread::sleep(Duration::from_millis(delay));
        if frozen(&id) {
            // A live commit's freeze is its own: the next command leaves it.
            let status = root.berth.run(&["ps", "--format", "{{.Status}}"]).ok();
            if frozen(&id) && commit.try_wait().unwrap().is_none() {
                killed_frozen += 1;
                assert!(status.contains("(Paused)"), "{status}");
            }
        }
        kill(&mut commit);

        // The next command undoes the freeze of a commit that is gone.
        let status = root.berth.run(&["ps", "--format", "{{.Status}}"]).ok();
        assert!(
            status.starts_with("Up") && !status.contains("Paused"),
            "delay {delay}: {status}"
        );
        assert!(!frozen(&id), "delay {delay}: still frozen");
        assert_eq!(root.berth.status(&id), "running");
        let exec = root.berth.run(&["exec", &id, "echo", "alive"]).ok();
        assert_eq!(exec, "alive\n");
        assert_eq!(staged_commits(&root.berth), Vec::<String>::new());
        assert_eq!(root.intents(&id, "commit-"), Vec::<String>::new());
        root.assert_store_intact();
    }
    assert!(
        killed_frozen > 0,
        "no kill landed while the commit had the container frozen"
    );

    // A pause of the user's stays: the commit (which then freezes nothing)
    // is killed, and the container is still paused afterwards.
    root.berth.run(&["pause", &id]).ok();
    let mut commit = root.berth.spawn(&["commit", &id, "killed:paused"]);
    std::thread::sleep(Duration::from_millis(100));
    kill(&mut commit);
    let status = root.berth.run(&["ps", "--format", "{{.Status}}"]).ok();
    assert!(status.contains("(Paused)"), "{status}");
    assert!(frozen(&id));
    assert_eq!(root.intents(&id, "commit-"), Vec::<String>::new());
    root.berth.run(&["unpause", &id]).ok();

    // And a commit that is not killed still works.
    root.berth.run(&["commit", &id, "whole:latest"]).ok();
    root.berth.run(&["rm", "-f", &id]).ok();
    root.assert_gone(&id);
    root.assert_store_intact();
    root.assert_no_processes();
}

// --------------------------------------------------------------------- cp

#[test]
fn killed_cp_into_a_stopped_container_leaves_a_whole_file_and_no_mount() {
    let mut root = Root::new();
    let directory = tempfile::tempdir().unwrap();
    let large = directory.path().join("large");
    let old = directory.path().join("old");
    // Random (so no page of it is zero), large enough to take a while.
    let mut data = vec![0u8; 160 << 20];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for chunk in data.chunks_mut(8) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        chunk.copy_from_slice(&state.to_le_bytes()[..chunk.len()]);
    }
    fs_err::write(&large, &data).unwrap();
    fs_err::write(&old, b"the old content\n").unwrap();
    let id = root
        .berth
        .run(&["create", "busybox", "sh", "-c", "wc -c < /data"])
        .ok()
        .trim()
        .to_owned();
    root.ids.push(id.clone());
    let target = format!("{id}:/data");
    let upper_file = root.upper(&id).join("data");

    let mut killed_mid_copy = 0;
    for delay in [0, 10, 40, 100, 250] {
        root.berth.run(&["cp", old.to_str().unwrap(), &target]).ok();
        let mut cp = root.berth.spawn(&["cp", large.to_str().unwrap(), &target]);
        std::thread::sleep(Duration::from_millis(delay));
        if cp.try_wait().unwrap().is_none() {
            killed_mid_copy += 1;
        }
        kill(&mut cp);

        // Under its name: the old file or the new one, whole.
        let content = fs_err::read(&upper_file).unwrap();
        assert!(
            content == b"the old content\n" || content == data,
            "delay {delay}: /data has {} bytes",
            content.len()
        );
        // The next command unmounts what the dead cp mounted and removes
        // its journal (and any temporary file).
        root.berth.run(&["ps", "-a"]).ok();
        let mounts = mounts_under(root.berth.root());
        assert!(mounts.is_empty(), "delay {delay}: left mounted: {mounts:?}");
        assert_eq!(root.intents(&id, "cp-"), Vec::<String>::new());
        let temporary: Vec<_> = names(&root.upper(&id))
            .into_iter()
            .filter(|name| name.starts_with(".berth-cp-"))
            .collect();
        assert!(temporary.is_empty(), "delay {delay}: {temporary:?}");
        // The container starts and sees the same whole file.
        let size = root.berth.run(&["start", "-a", &id]).ok();
        assert_eq!(size.trim(), content.len().to_string());
        assert!(mounts_under(root.berth.root()).is_empty());
        root.assert_store_intact();
        root.assert_no_processes();
    }
    assert!(killed_mid_copy > 0, "every cp ended before its kill");

    // A cp that is not killed replaces the file whole.
    root.berth
        .run(&["cp", large.to_str().unwrap(), &target])
        .ok();
    assert!(fs_err::read(&upper_file).unwrap() == data);
    root.berth.run(&["rm", &id]).ok();
    root.assert_gone(&id);
    root.assert_store_intact();
}
