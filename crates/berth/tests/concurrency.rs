//! Many `berth` processes on one root at once.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use support::containers::succeeded;
use support::{fixture, fixture_id, Berth};

#[test]
fn twenty_concurrent_loads_leave_a_consistent_store() {
    let berth = Berth::new();
    let archives = [
        "busybox-docker.tar",
        "busybox-oci.tar",
        "layers-docker.tar",
        "busybox-extra.tar",
        "layers-docker-gzip.tar",
    ];
    let children: Vec<_> = (0..20)
        .map(|index| {
            let archive = fixture(archives[index % archives.len()]);
            berth
                .command()
                .args(["load", "-q", "-i", archive.to_str().unwrap()])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "a concurrent load failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    let listed = berth
        .run(&["images", "--format", "{{.Repository}}:{{.Tag}}"])
        .ok();
    let mut listed: Vec<&str> = listed.lines().collect();
    listed.sort();
    assert_eq!(
        listed,
        [
            "busybox-oci:latest",
            "busybox:latest",
            "extra:1",
            "extra:latest",
            "layers:latest",
            "other:latest"
        ]
    );
    for (archive, reference) in [
        ("busybox-docker.tar", "busybox:latest"),
        ("layers-docker.tar", "layers:latest"),
        ("busybox-extra.tar", "other:latest"),
    ] {
        let id = berth.run(&["inspect", "-f", "{{.Id}}", reference]).ok();
        assert_eq!(id.trim(), fixture_id(archive, reference));
    }
    // Every layer is unpacked exactly once and nothing is left in staging.
    let layer_count = fs_err::read_dir(berth.root().join("layers"))
        .unwrap()
        .count();
    let tmp_count = fs_err::read_dir(berth.root().join("tmp")).unwrap().count();
    assert_eq!(tmp_count, 0);
    // busybox rootfs (shared), 3 upper layers of layers:latest, and other:latest's own.
    let distinct_chains: std::collections::BTreeSet<String> =
        ["busybox", "layers", "other", "extra:1"]
            .iter()
            .flat_map(|name| {
                let lower = berth
                    .run(&["inspect", "-f", "{{.GraphDriver.Data.LowerDir}}", name])
                    .ok();
                lower
                    .trim()
                    .split(':')
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .collect();
    assert_eq!(layer_count, distinct_chains.len());

    // The store still works for writes afterwards.
    berth.run(&["rmi", "layers"]).ok();
    berth.run(&["image", "prune", "-a", "-f"]).ok();
    assert!(berth.content().is_empty(), "{:?}", berth.content());
}

/// Listing containers removes the files of removed ones (`orphans.rs`); it
/// must never take those of a container being created, started or removed
/// at the same moment. Runs, `--rm` runs and listings all at once: every
/// created container keeps its files and runs, and the `--rm` ones leave
/// nothing.
#[test]
fn listings_during_runs_and_removals_leave_live_containers_alone() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    let stop = std::sync::atomic::AtomicBool::new(false);
    let ids = std::thread::scope(|scope| {
        let lister = scope.spawn(|| {
            let mut listings = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                berth.run(&["ps", "-aq"]).ok();
                listings += 1;
            }
            listings
        });
        let removed: Vec<_> = (0..10)
            .map(|_| berth.spawn(&["run", "--rm", "busybox", "true"]))
            .collect();
        let detached: Vec<_> = (0..10)
            .map(|_| berth.spawn(&["run", "-d", "busybox", "sleep", "100"]))
            .collect();
        for child in removed {
            succeeded(child);
        }
        let ids: Vec<String> = detached.into_iter().map(succeeded).collect();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(lister.join().unwrap() > 0);
        ids
    });
    let running = berth.run(&["ps", "-q", "--no-trunc"]).ok();
    let mut running: Vec<&str> = running.lines().collect();
    running.sort();
    let mut expected: Vec<&str> = ids.iter().map(String::as_str).collect();
    expected.sort();
    assert_eq!(running, expected, "only the detached containers remain");
    for id in &ids {
        assert!(berth.root().join("containers").join(id).is_dir());
        // Their files are whole: exec works in each.
        assert_eq!(berth.run(&["exec", id, "echo", "ok"]).ok(), "ok\n");
    }
    for id in &ids {
        berth.run(&["rm", "-f", id]).ok();
    }
    // A listing now leaves no file of any of them.
    assert_eq!(berth.run(&["ps", "-aq"]).ok(), "");
    let left: Vec<_> = fs_err::read_dir(berth.root().join("containers"))
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
