//! What a bench run found: the machine, the engines, and for every metric
//! its measurements (samples and their summary), comparisons with the host
//! baseline or with berth, and berth's targets. Written as Markdown, JSON
//! and an SVG chart.

pub mod json;
pub mod markdown;
pub mod svg;
mod units;

use serde::Serialize;

use crate::stats::Summary;
pub use units::{format_value, Unit};

/// The JSON format's version; bumped when a field changes meaning.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub format_version: u32,
    /// RFC 3339, UTC, when the run started.
    pub started: String,
    pub finished: String,
    /// "quick" or "full".
    pub mode: String,
    /// The command line of the run.
    pub command: String,
    pub machine: Machine,
    /// About the run as a whole (e.g. a busy machine).
    pub notes: Vec<String>,
    pub engines: Vec<EngineStatus>,
    pub metrics: Vec<MetricReport>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Machine {
    pub kernel: String,
    pub cpus: usize,
    pub cpu_model: String,
    pub memory_bytes: u64,
    pub load_average_start: String,
    pub load_average_end: String,
    /// File system type of the work directory (cp and build files).
    pub work_filesystem: String,
    pub cgroup: String,
    /// `/sys/devices/system/cpu/vulnerabilities/spec_store_bypass`.
    pub spec_store_bypass: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct EngineStatus {
    pub name: String,
    pub program: String,
    pub version: Option<String>,
    /// Where the engine was reached (DOCKER_HOST, berth's root).
    pub endpoint: Option<String>,
    /// None: measured; Some: why the engine was skipped.
    pub skipped: Option<String>,
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct MetricReport {
    pub id: String,
    pub title: String,
    /// How it is measured, in one or two sentences.
    pub method: String,
    /// Why the whole metric was skipped.
    pub skipped: Option<String>,
    pub measurements: Vec<Measurement>,
    /// Observations that are not numbers (e.g. Speculation_Store_Bypass).
    pub facts: Vec<Fact>,
    pub notes: Vec<String>,
}

impl MetricReport {
    pub fn new(id: &str, title: &str, method: impl Into<String>) -> Self {
        Self {
            id: id.to_owned(),
            title: title.to_owned(),
            method: method.into(),
            skipped: None,
            measurements: Vec::new(),
            facts: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub fn skipped(id: &str, title: &str, reason: impl Into<String>) -> Self {
        let mut report = Self::new(id, title, "");
        report.skipped = Some(reason.into());
        report
    }

    pub fn fact(&mut self, subject: impl Into<String>, name: &str, value: impl Into<String>) {
        self.facts.push(Fact {
            subject: subject.into(),
            name: name.to_owned(),
            value: value.into(),
        });
    }

    pub fn find(&self, name: &str, engine: &str) -> Option<&Measurement> {
        self.measurements
            .iter()
            .find(|measurement| measurement.name == name && measurement.engine == engine)
    }

    /// Adds a comparison of every measurement called `name` with the
    /// median of `(name, engine)` = `baseline`, labelled `label`.
    pub fn compare_with(&mut self, name: &str, baseline_engine: &str, label: &str) {
        self.compare_across(name, name, baseline_engine, label);
    }

    /// As [`MetricReport::compare_with`], with the baseline from another
    /// measurement name.
    pub fn compare_across(
        &mut self,
        name: &str,
        baseline_name: &str,
        baseline_engine: &str,
        label: &str,
    ) {
        let Some(base) = self
            .find(baseline_name, baseline_engine)
            .and_then(|measurement| measurement.summary.as_ref())
            .map(|summary| summary.median)
        else {
            return;
        };
        for measurement in &mut self.measurements {
            if measurement.name != name
                || (measurement.name == baseline_name && measurement.engine == baseline_engine)
            {
                continue;
            }
            if let Some(summary) = &measurement.summary {
                if base != 0.0 {
                    measurement.comparisons.push(Comparison {
                        against: label.to_owned(),
                        ratio: summary.median / base,
                    });
                }
            }
        }
    }
}

impl MetricReport {
    /// Adds, to each engine's `name` measurement, a comparison with the same
    /// engine's `baseline_name` measurement.
    pub fn compare_within_engine(&mut self, name: &str, baseline_name: &str, label: &str) {
        let bases: Vec<(String, f64)> = self
            .measurements
            .iter()
            .filter(|measurement| measurement.name == baseline_name)
            .filter_map(|measurement| {
                measurement
                    .median()
                    .map(|median| (measurement.engine.clone(), median))
            })
            .collect();
        for measurement in &mut self.measurements {
            if measurement.name != name {
                continue;
            }
            let base = bases
                .iter()
                .find(|(engine, _)| *engine == measurement.engine)
                .map(|(_, base)| *base);
            if let (Some(base), Some(median)) = (base, measurement.median()) {
                if base != 0.0 {
                    measurement.comparisons.push(Comparison {
                        against: label.to_owned(),
                        ratio: median / base,
                    });
                }
            }
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Fact {
    pub subject: String,
    pub name: String,
    pub value: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct Measurement {
    /// What was measured, e.g. "run --rm echo, cold (--network none)".
    pub name: String,
    /// berth, docker, podman, or host for a baseline.
    pub engine: String,
    pub unit: Unit,
    pub samples: Vec<f64>,
    pub summary: Option<Summary>,
    /// Why there are no samples.
    pub skipped: Option<String>,
    /// median ÷ another measurement's median.
    pub comparisons: Vec<Comparison>,
    pub target: Option<Target>,
}

impl Measurement {
    pub fn new(name: impl Into<String>, engine: impl Into<String>, unit: Unit) -> Self {
        Self {
            name: name.into(),
            engine: engine.into(),
            unit,
            samples: Vec::new(),
            summary: None,
            skipped: None,
            comparisons: Vec::new(),
            target: None,
        }
    }

    /// From the outcome of a series: samples, or the reason there are none.
    pub fn from_result(
        name: impl Into<String>,
        engine: impl Into<String>,
        unit: Unit,
        result: Result<Vec<f64>, String>,
    ) -> Self {
        let mut measurement = Self::new(name, engine, unit);
        match result {
            Ok(samples) => measurement.set_samples(samples),
            Err(reason) => measurement.skipped = Some(reason),
        }
        measurement
    }

    pub fn skipped(
        name: impl Into<String>,
        engine: impl Into<String>,
        unit: Unit,
        reason: impl Into<String>,
    ) -> Self {
        Self::from_result(name, engine, unit, Err(reason.into()))
    }

    pub fn set_samples(&mut self, samples: Vec<f64>) {
        self.summary = Summary::of(&samples);
        if self.summary.is_none() {
            self.skipped = Some("no valid samples".to_owned());
        }
        self.samples = samples;
    }

    pub fn median(&self) -> Option<f64> {
        self.summary.as_ref().map(|summary| summary.median)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// What the median is divided by, e.g. "host", "plain cp", "berth".
    pub against: String,
    pub ratio: f64,
}

/// One of berth's targets from the issue, checked against a measurement.
#[derive(Clone, Debug, Serialize)]
pub struct Target {
    /// e.g. "≤ 3 ms median".
    pub text: String,
    /// None when there is nothing to check it against.
    pub met: Option<bool>,
}

impl Target {
    /// Median (or ratio) `value` ≤ `limit`.
    pub fn at_most(text: impl Into<String>, value: Option<f64>, limit: f64) -> Self {
        Self {
            text: text.into(),
            met: value.map(|value| value <= limit),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A small report that exercises every part of the writers.
    pub fn sample_report() -> Report {
        let mut start = MetricReport::new("start", "Start latency", "hyperfine-style");
        let mut berth = Measurement::new("run --rm echo, cold", "berth", Unit::Seconds);
        berth.set_samples(vec![0.004, 0.005, 0.006]);
        berth.target = Some(Target::at_most("≤ 10 ms median", berth.median(), 0.010));
        let mut docker = Measurement::new("run --rm echo, cold", "docker", Unit::Seconds);
        docker.set_samples(vec![0.4, 0.5]);
        start.measurements.push(berth);
        start.measurements.push(docker);
        start.measurements.push(Measurement::skipped(
            "run --rm echo, warm pool",
            "berth",
            Unit::Seconds,
            "berth warm is not available",
        ));
        start.compare_with("run --rm echo, cold", "berth", "berth");
        start.fact("berth", "warm pool", "not available");
        start.notes.push("a note | with a pipe".to_owned());
        let mut network = MetricReport::new("network", "Network", "iperf3");
        let mut throughput = Measurement::new("container→container", "berth", Unit::BitsPerSecond);
        throughput.set_samples(vec![12.5e9]);
        network.measurements.push(throughput);
        Report {
            format_version: FORMAT_VERSION,
            started: "2026-11-30T10:00:00Z".to_owned(),
            finished: "2026-11-30T10:01:00Z".to_owned(),
            mode: "quick".to_owned(),
            command: "berth bench --quick".to_owned(),
            machine: Machine {
                kernel: "6.1.0".to_owned(),
                cpus: 2,
                ..Machine::default()
            },
            notes: vec!["the machine was busy".to_owned()],
            engines: vec![
                EngineStatus {
                    name: "berth".to_owned(),
                    program: "/usr/bin/berth".to_owned(),
                    version: Some("0.1.0".to_owned()),
                    endpoint: None,
                    skipped: None,
                    notes: vec![],
                },
                EngineStatus {
                    name: "podman".to_owned(),
                    program: "podman".to_owned(),
                    version: None,
                    endpoint: None,
                    skipped: Some("podman not found in PATH".to_owned()),
                    notes: vec![],
                },
            ],
            metrics: vec![
                start,
                network,
                MetricReport::skipped("pull", "Cold pull", "docker-registry not installed"),
            ],
        }
    }

    #[test]
    fn comparisons_divide_medians_and_skip_the_baseline_itself() {
        let report = sample_report();
        let start = &report.metrics[0];
        let berth = start.find("run --rm echo, cold", "berth").unwrap();
        assert!(berth.comparisons.is_empty());
        let docker = start.find("run --rm echo, cold", "docker").unwrap();
        assert_eq!(docker.comparisons.len(), 1);
        assert!((docker.comparisons[0].ratio - 0.45 / 0.005).abs() < 1e-9);
        assert_eq!(berth.target.as_ref().unwrap().met, Some(true));
    }

    #[test]
    fn comparisons_within_an_engine_use_that_engine_baseline() {
        let mut report = MetricReport::new("network", "Network", "");
        for (name, engine, value) in [
            ("published", "berth", 9.0),
            ("direct", "berth", 10.0),
            ("published", "docker", 5.0),
            ("direct", "docker", 20.0),
        ] {
            let mut measurement = Measurement::new(name, engine, Unit::BitsPerSecond);
            measurement.set_samples(vec![value]);
            report.measurements.push(measurement);
        }
        report.compare_within_engine("published", "direct", "direct");
        assert!(
            (report.find("published", "berth").unwrap().comparisons[0].ratio - 0.9).abs() < 1e-9
        );
        assert!(
            (report.find("published", "docker").unwrap().comparisons[0].ratio - 0.25).abs() < 1e-9
        );
        assert!(report
            .find("direct", "docker")
            .unwrap()
            .comparisons
            .is_empty());
    }

    #[test]
    fn targets_without_a_value_are_unknown() {
        assert_eq!(Target::at_most("≤ 1", None, 1.0).met, None);
        assert_eq!(Target::at_most("≤ 1", Some(1.5), 1.0).met, Some(false));
    }
}
