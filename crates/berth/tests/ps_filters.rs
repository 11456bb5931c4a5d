//! `ps --filter` keys beyond the basic ones (`network`, `volume`, `since`, `before`) and
//! `ps -s` — checked against Docker's answers for the same containers when a Docker engine is
//! reachable.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use support::{docker, docker_host, fixture, Berth};

/// Creates the same three containers in berth (and in Docker): `one` publishes 80 and
/// exposes 9000 and mounts volume `berth-test-filter-vol` at /data, `two` is on no network,
/// `three` is plain; returns the names each filter lists.
fn listed(run: &dyn Fn(&[&str]) -> (i32, String), filter: &str) -> (i32, String) {
    let (code, out) = run(&["ps", "-a", "--format", "{{.Names}}", "--filter", filter]);
    let mut names: Vec<&str> = out.lines().collect();
    names.sort_unstable();
    (code, names.join(","))
}

const FILTERS: &[(&str, &str)] = &[
    ("volume=berth-test-filter-vol", "one"),
    ("volume=/data", "one"),
    ("network=none", "two"),
    ("network=bridge", "one,three"),
    ("since=one", "three,two"),
    ("before=three", "one,two"),
];

fn create_all(run: &dyn Fn(&[&str]) -> (i32, String)) {
    for args in [
        &[
            "create",
            "--name",
            "one",
            "-p",
            "127.0.0.1::80",
            "--expose",
            "9000",
            "-v",
            "berth-test-filter-vol:/data",
            "busybox",
        ][..],
        &["create", "--name", "two", "--network", "none", "busybox"],
        &["create", "--name", "three", "busybox"],
    ] {
        let (code, out) = run(args);
        assert_eq!(code, 0, "{args:?}: {out}");
        // Creation times must differ for since/before.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn ps_filters_by_network_volume_and_creation_order() {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    let in_berth = |args: &[&str]| {
        let run = berth.run(args);
        (run.code(), format!("{}{}", run.stdout(), run.stderr()))
    };
    create_all(&in_berth);
    for (filter, wanted) in FILTERS {
        assert_eq!(
            listed(&in_berth, filter),
            (0, (*wanted).to_owned()),
            "{filter}"
        );
    }
    let (code, out) = in_berth(&["ps", "-a", "--filter", "since=nosuch"]);
    assert_eq!(code, 1);
    assert!(out.contains("No such container: nosuch"), "{out}");
    // Not implemented (Docker matches a running container's live ports): refused by name.
    let (code, out) = in_berth(&["ps", "-a", "--filter", "publish=80"]);
    assert_eq!(code, 1);
    assert!(out.contains("Invalid filter 'publish'"), "{out}");

    if let Some(host) = docker_host() {
        let archive = fixture("busybox-docker.tar");
        docker(&host, &["load", "-q", "-i", archive.to_str().unwrap()]);
        let in_docker = |args: &[&str]| {
            let output = docker(&host, args);
            (
                output.status.code().unwrap(),
                format!(
                    "{}{}",
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr)
                ),
            )
        };
        // A clean slate there: these names are the test's own.
        docker(&host, &["rm", "-f", "one", "two", "three"]);
        create_all(&in_docker);
        let answers: Vec<_> = FILTERS
            .iter()
            .map(|(filter, _)| (filter, listed(&in_docker, filter)))
            .collect();
        docker(&host, &["rm", "-f", "-v", "one", "two", "three"]);
        docker(&host, &["volume", "rm", "berth-test-filter-vol"]);
        for ((filter, wanted), (_, answer)) in FILTERS.iter().zip(answers) {
            assert_eq!(answer, (0, (*wanted).to_owned()), "docker: {filter}");
        }
    }
    berth.run(&["rm", "-f", "-v", "one", "two", "three"]).ok();
}

#[test]
fn ps_size_shows_the_writable_layer_and_the_virtual_size() {
    let script = "head -c 12345 /dev/zero > /f && ln /f /g && sleep 30";
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    let id = berth.run_detached(&["--network", "none", "busybox", "sh", "-c", script]);
    support::containers::wait_until(10.0, "the file is written", || {
        berth.run(&["exec", &id, "test", "-e", "/g"]).code() == 0
    });
    let size = berth.run(&["ps", "-s", "--format", "{{.Size}}"]).ok();
    let header = berth.run(&["ps", "-s"]).ok();
    let plain = berth.run(&["ps", "--format", "{{.Size}}"]).ok();
    berth.run(&["rm", "-f", &id]).ok();
    // A hard link counts once; the virtual size adds the image's.
    assert_eq!(size, "12.3kB (virtual 2MB)\n");
    let titles: Vec<&str> = header.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(titles[titles.len() - 2..], ["NAMES", "SIZE"], "{header}");
    assert_eq!(plain, "0B\n");
    if let Some(host) = docker_host() {
        let archive = fixture("busybox-docker.tar");
        docker(&host, &["load", "-q", "-i", archive.to_str().unwrap()]);
        let output = docker(
            &host,
            &[
                "run",
                "-d",
                "--network",
                "none",
                "busybox",
                "sh",
                "-c",
                script,
            ],
        );
        let id = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        support::containers::wait_until(10.0, "docker's file is written", || {
            docker(&host, &["exec", &id, "test", "-e", "/g"])
                .status
                .success()
        });
        let reference = docker(
            &host,
            &[
                "ps",
                "-s",
                "--filter",
                &format!("id={id}"),
                "--format",
                "{{.Size}}",
            ],
        );
        docker(&host, &["rm", "-f", &id]);
        assert_eq!(String::from_utf8_lossy(&reference.stdout), size);
    }
}
