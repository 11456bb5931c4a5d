//! `berth bench --quick` end to end, so the suite cannot rot: every metric
//! runs once, small, against berth with a private root, and the three result
//! files must be complete. No timing is checked (timings belong in the
//! bench's own report, not in pass/fail tests).
//!
//! The suite builds its images from Debian packages into its cache
//! (/var/tmp/berth-bench, shared between runs); a metric whose tools are
//! missing here is reported skipped with its reason, which this test
//! accepts. Network traffic goes to 127.0.0.1 and to the bridge and
//! container addresses of the test's own root.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use std::time::Instant;

use support::Berth;

const METRICS: [&str; 11] = [
    "start",
    "memory",
    "cp",
    "bind",
    "build",
    "network",
    "seccomp",
    "pull",
    "binary",
    "dockerfile",
    "oci",
];

#[test]
fn quick_bench_writes_every_metric() {
    let berth = Berth::new();
    let out = tempfile::Builder::new()
        .prefix("berth-bench-out-")
        .tempdir()
        .unwrap();
    let started = Instant::now();
    let mut command = berth.command();
    command.args(["bench", "--quick", "--engine", "berth", "--out"]);
    command.arg(out.path());
    let output = support::output_with_stdin(command, None);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "berth bench failed ({:?}):\n{stderr}",
        output.status
    );
    println!(
        "berth bench --quick took {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let markdown = out.path().join("bench-results.md");
    let json = out.path().join("bench-results.json");
    let svg = out.path().join("bench-results.svg");
    for file in [&markdown, &json, &svg] {
        assert!(file.is_file(), "missing {file:?}; stderr:\n{stderr}");
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("bench-results.json"), "{stdout}");
    let text = fs_err::read_to_string(&markdown).unwrap();
    println!("{text}");
    assert!(text.starts_with("# berth bench results"));
    let chart = fs_err::read_to_string(&svg).unwrap();
    assert!(chart.starts_with("<svg") && chart.trim_end().ends_with("</svg>"));

    let report: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["mode"], "quick");
    assert_eq!(report["engines"][0]["name"], "berth");
    assert!(report["engines"][0]["skipped"].is_null(), "{report:#}");
    let metrics = report["metrics"].as_array().unwrap();
    let ids: Vec<&str> = metrics
        .iter()
        .map(|metric| metric["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, METRICS);
    for metric in metrics {
        let id = metric["id"].as_str().unwrap();
        if let Some(reason) = metric["skipped"].as_str() {
            assert!(!reason.is_empty(), "metric {id} skipped without a reason");
            println!("metric {id} skipped: {reason}");
            continue;
        }
        let measurements = metric["measurements"].as_array().unwrap();
        assert!(!measurements.is_empty(), "metric {id} has no measurements");
        for measurement in measurements {
            let samples = measurement["samples"].as_array().unwrap();
            match measurement["skipped"].as_str() {
                Some(reason) => {
                    assert!(!reason.is_empty(), "{id}: skipped without a reason");
                    println!(
                        "{id}: {} [{}] skipped: {reason}",
                        measurement["name"], measurement["engine"]
                    );
                }
                None => {
                    assert!(!samples.is_empty(), "{id}: no samples: {measurement:#}");
                    assert_eq!(
                        measurement["summary"]["runs"].as_u64(),
                        Some(samples.len() as u64),
                        "{id}: {measurement:#}"
                    );
                }
            }
        }
    }
    // What needs nothing but busybox must really have been measured.
    let measured = |id: &str| {
        metrics
            .iter()
            .find(|metric| metric["id"] == id)
            .and_then(|metric| metric["measurements"].as_array())
            .is_some_and(|measurements| {
                measurements.iter().any(|measurement| {
                    measurement["engine"] == "berth"
                        && !measurement["samples"].as_array().unwrap().is_empty()
                })
            })
    };
    for id in [
        "start",
        "memory",
        "cp",
        "bind",
        "seccomp",
        "binary",
        "dockerfile",
        "oci",
    ] {
        assert!(measured(id), "no berth samples for {id}");
    }
    // Nothing of the run is left running under the test's root.
    let left = berth.run(&["ps", "-aq"]).ok();
    assert_eq!(left.trim(), "", "containers left behind");
}

/// `berth bench --quick --engine berth --metrics start,memory,bind` with
/// `env` added; the parsed JSON report.
fn quick_vm_report(berth: &Berth, env: &[(&str, &str)]) -> serde_json::Value {
    let out = tempfile::Builder::new()
        .prefix("berth-bench-vm-")
        .tempdir()
        .unwrap();
    let mut command = berth.command();
    command.args([
        "bench",
        "--quick",
        "--engine",
        "berth",
        "--metrics",
        "start,memory,bind",
        "--out",
    ]);
    command.arg(out.path());
    for (name, value) in env {
        command.env(name, value);
    }
    let output = support::output_with_stdin(command, None);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "berth bench failed ({:?}):\n{stderr}",
        output.status
    );
    println!("{stderr}");
    serde_json::from_str(&fs_err::read_to_string(out.path().join("bench-results.json")).unwrap())
        .unwrap()
}

/// Every measurement of `report` whose engine is berth's VM containers.
fn vm_rows(report: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
    let mut rows = Vec::new();
    for metric in report["metrics"].as_array().unwrap() {
        for measurement in metric["measurements"].as_array().unwrap() {
            if measurement["engine"]
                .as_str()
                .unwrap()
                .starts_with("berth-vm")
            {
                rows.push((
                    metric["id"].as_str().unwrap().to_owned(),
                    measurement.clone(),
                ));
            }
        }
    }
    rows
}

/// berth's VM containers get rows beside the namespace ones (cold start,
/// warm, the boot phases, memory per idle VM, virtio-fs throughput): skipped
/// with the reason where VMs cannot run, measured where they can, and the
/// run succeeds either way.
#[test]
fn quick_bench_has_vm_rows_or_says_why_not() {
    let berth = Berth::new();

    // No guest kernel: every VM row is there, skipped, naming what is missing.
    let report = quick_vm_report(&berth, &[("BERTH_VM_KERNEL_DIR", "/nonexistent/kernel")]);
    let rows = vm_rows(&report);
    for id in ["start", "memory", "bind"] {
        assert!(
            rows.iter().any(|(metric, _)| metric == id),
            "no VM row in {id}: {report:#}"
        );
    }
    for (id, row) in &rows {
        let reason = row["skipped"].as_str().unwrap_or_default();
        assert!(
            reason.contains("/nonexistent/kernel"),
            "{id}: {row:#} should be skipped for the missing kernel"
        );
    }
    let status = report["engines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|engine| engine["name"] == "berth-vm")
        .unwrap();
    assert!(
        status["skipped"]
            .as_str()
            .unwrap()
            .starts_with("VM rows skipped"),
        "{status:#}"
    );
    // The namespace rows are measured all the same.
    let start = &report["metrics"][0];
    assert!(start["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .any(|row| row["engine"] == "berth" && row["summary"].is_object()));

    // With a kernel (and QEMU, virtiofsd): measured.
    let Some(kernel) = std::env::var_os("BERTH_VM_KERNEL_DIR") else {
        println!("skipped the measured half: BERTH_VM_KERNEL_DIR is not set");
        return;
    };
    let has_qemu = std::process::Command::new("qemu-system-x86_64")
        .arg("--version")
        .output()
        .is_ok();
    if !has_qemu || !std::path::Path::new(&kernel).is_dir() {
        println!("skipped the measured half: no QEMU or no kernel at {kernel:?}");
        return;
    }
    let report = quick_vm_report(&berth, &[]);
    let rows = vm_rows(&report);
    let row = |id: &str, name: &str| {
        rows.iter()
            .find(|(metric, row)| {
                metric == id
                    && row["name"] == name
                    && !row["engine"].as_str().unwrap().contains('=')
            })
            .map(|(_, row)| row.clone())
            .unwrap_or_else(|| panic!("no VM row {name:?} in {id}: {rows:#?}"))
    };
    let measured = |id: &str, name: &str| {
        let row = row(id, name);
        assert!(row["summary"].is_object(), "{id}: {row:#}");
        row["summary"]["median"].as_f64().unwrap()
    };
    let cold = measured("start", "run --rm echo, cold (--network none)");
    assert!(cold > 0.0);
    assert!(measured("start", "VM boot: guest kernel → /init") > 0.0);
    // The VM warm pool is another piece of work: until `berth warm
    // --isolation=vm` exists the row says so.
    let warm = row("start", "run --rm echo, warm pool (default network)");
    assert!(
        warm["summary"].is_object() || warm["skipped"].as_str().unwrap().starts_with("no VM pool"),
        "{warm:#}"
    );
    // A VM holds at least its guest kernel's memory.
    let idle = measured(
        "memory",
        "per idle VM container: monitor + shim + QEMU + virtiofsd (PSS)",
    );
    assert!(idle > 20e6, "{idle}");
    assert!(measured("bind", "bind-mount write, 16 MiB, conv=fsync") > 0.0);
    let engine = row("start", "run --rm echo, cold (--network none)")["engine"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        engine == "berth-vm (TCG)" || engine == "berth-vm (KVM)",
        "{engine}"
    );
    // Nothing of the run is left.
    let left = berth.run(&["ps", "-aq"]).ok();
    assert_eq!(left.trim(), "", "containers left behind");
    // QEMU's console log and virtiofsd's directory are under the roots.
    for root in [berth.root(), berth.run_root()] {
        let left = std::process::Command::new("pgrep")
            .arg("-af")
            .arg(root)
            .output()
            .unwrap();
        assert!(
            left.stdout.is_empty(),
            "processes of the run left: {}",
            String::from_utf8_lossy(&left.stdout)
        );
    }
}
