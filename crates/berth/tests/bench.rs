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

const METRICS: [&str; 9] = [
    "start", "memory", "cp", "bind", "build", "network", "seccomp", "pull", "binary",
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
    for id in ["start", "memory", "cp", "bind", "seccomp", "binary"] {
        assert!(measured(id), "no berth samples for {id}");
    }
    // Nothing of the run is left running under the test's root.
    let left = berth.run(&["ps", "-aq"]).ok();
    assert_eq!(left.trim(), "", "containers left behind");
}
