//! `berth bench`: the benchmark suites that users of Docker Desktop, OrbStack
//! and Apple's container run, for berth and every other engine found on the
//! machine (docker, podman), side by side in one run. Each engine is driven
//! through its own CLI; images come from Debian packages, built here. The
//! results go to `bench-results.md`, `bench-results.json` and
//! `bench-results.svg`: per measurement the samples, runs, mean ± σ,
//! median, min…max and p95, the ratio to the host baseline or to berth, and
//! berth's targets met or missed.
//!
//! Timings belong here, never in pass/fail tests (STYLE.md); the test of
//! this suite only checks that a quick run produces complete files.

mod context;
mod engine;
mod floor;
pub mod image;
mod machine;
mod metrics;
pub mod options;
mod process;
mod procfs;
mod registry;
pub mod report;
mod resident;
pub mod stats;
mod vm;

use std::path::{Path, PathBuf};

pub use options::{parse_size, BenchOptions, BerthBinary, EngineName, Metric, OptionsError};
pub use report::Report;

use context::Context;
use report::{MetricReport, FORMAT_VERSION};

pub const MARKDOWN_FILE: &str = "bench-results.md";
pub const JSON_FILE: &str = "bench-results.json";
pub const SVG_FILE: &str = "bench-results.svg";

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("failed to prepare the directory {path:?}")]
    Directory {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to write {path:?}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to encode the JSON report")]
    Json(#[source] serde_json::Error),
}

/// The files a run wrote and the report in them.
#[derive(Debug)]
pub struct Outcome {
    pub markdown: PathBuf,
    pub json: PathBuf,
    pub svg: PathBuf,
    pub report: Report,
}

fn directory(path: &Path) -> Result<(), BenchError> {
    fs_err::create_dir_all(path).map_err(|source| BenchError::Directory {
        path: path.to_owned(),
        source,
    })
}

fn write(path: &Path, text: &str) -> Result<(), BenchError> {
    let partial = path.with_extension("partial");
    fs_err::write(&partial, text)
        .and_then(|()| fs_err::rename(&partial, path))
        .map_err(|source| BenchError::Write {
            path: path.to_owned(),
            source,
        })
}

/// Runs the suite as `options` say and writes the three result files.
/// Only an unwritable output or work directory fails the run; anything
/// that cannot be measured is in the report with its reason.
pub fn run(options: &BenchOptions) -> Result<Outcome, BenchError> {
    directory(&options.out_dir)?;
    directory(&options.work_dir)?;
    let started = chrono::Utc::now();
    let mut machine = machine::describe(&options.work_dir);
    let (engines, mut statuses) = engine::discover(options);
    let berth = engines.iter().find(|engine| engine.is_berth());
    let vm = match berth {
        Some(_) => vm::probe(&options.berth),
        None => Err("berth is not among the engines measured".to_owned()),
    };
    if let Some(berth) = berth {
        statuses.push(vm_status(berth, &vm));
    }
    for status in &statuses {
        match &status.skipped {
            Some(reason) => eprintln!("bench: {}: skipped: {reason}", status.name),
            None => eprintln!(
                "bench: {}: {} ({})",
                status.name,
                status.version.as_deref().unwrap_or("?"),
                status.endpoint.as_deref().unwrap_or("")
            ),
        }
    }
    let scratch = tempfile::Builder::new()
        .prefix("run-")
        .tempdir_in(&options.work_dir)
        .map_err(|source| BenchError::Directory {
            path: options.work_dir.clone(),
            source,
        })?;
    let mut context = Context::new(options, engines, vm, scratch.path().to_owned());
    let mut metrics = Vec::new();
    for metric in Metric::ALL {
        if !options.metrics.contains(&metric) {
            metrics.push(MetricReport::skipped(
                metric.id(),
                metric.title(),
                "not selected (--metrics)",
            ));
            continue;
        }
        let report = if context.engines.is_empty() {
            MetricReport::skipped(metric.id(), metric.title(), "no engine to measure")
        } else {
            context.log(format!("== {}", metric.title()));
            metrics::run(metric, &mut context)
        };
        context.cleanup();
        log_results(&report);
        metrics.push(report);
    }
    drop(context);
    drop(scratch);
    machine.load_average_end = machine::load_average();
    let notes = busy_note(&machine).into_iter().collect();
    let report = Report {
        format_version: FORMAT_VERSION,
        started: started.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        finished: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        mode: if options.quick { "quick" } else { "full" }.to_owned(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        notes,
        engines: statuses,
        metrics,
    };
    let outcome = Outcome {
        markdown: options.out_dir.join(MARKDOWN_FILE),
        json: options.out_dir.join(JSON_FILE),
        svg: options.out_dir.join(SVG_FILE),
        report,
    };
    write(
        &outcome.markdown,
        &report::markdown::render(&outcome.report),
    )?;
    write(
        &outcome.json,
        &report::json::render(&outcome.report).map_err(BenchError::Json)?,
    )?;
    write(&outcome.svg, &report::svg::render(&outcome.report))?;
    Ok(outcome)
}

/// The Engines table's row for berth's VM containers: the same binary with
/// `--isolation=vm`, the accelerator and why, or why there are no VM rows.
fn vm_status(berth: &engine::Engine, vm: &Result<vm::VmSupport, String>) -> report::EngineStatus {
    let mut status = berth.status();
    status.name = "berth-vm".to_owned();
    status.notes.clear();
    match vm {
        Ok(support) => {
            status.endpoint = Some(format!(
                "run --isolation=vm; accelerator {}: {}",
                support.accelerator_name(),
                support.reason
            ));
        }
        Err(why) => {
            status.endpoint = Some("run --isolation=vm".to_owned());
            status.skipped = Some(format!("VM rows skipped: {why}"));
        }
    }
    status
}

/// A note when other work competed for the CPUs during the run (1-minute
/// load average above half the CPUs at its start or end).
fn busy_note(machine: &report::Machine) -> Option<String> {
    let first = |text: &str| {
        text.split_whitespace()
            .next()
            .and_then(|load| load.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let load = first(&machine.load_average_start).max(first(&machine.load_average_end));
    (load > machine.cpus as f64 * 0.5).then(|| {
        format!(
            "The machine was busy: 1-minute load average up to {load:.1} on {} CPUs during \
             the run. Wall times are inflated and spread out; compare engines by the ratios \
             within this run, and prefer the CPU-time rows where there are some.",
            machine.cpus
        )
    })
}

fn log_results(report: &MetricReport) {
    if let Some(reason) = &report.skipped {
        eprintln!("bench: {}: skipped: {reason}", report.id);
        return;
    }
    for measurement in &report.measurements {
        match (&measurement.summary, &measurement.skipped) {
            (Some(summary), _) => eprintln!(
                "bench: {}: {} [{}]: median {} ({} runs)",
                report.id,
                measurement.name,
                measurement.engine,
                report::format_value(measurement.unit, summary.median),
                summary.runs
            ),
            (None, reason) => eprintln!(
                "bench: {}: {} [{}]: skipped: {}",
                report.id,
                measurement.name,
                measurement.engine,
                reason.as_deref().unwrap_or("no samples")
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_machine_is_noted() {
        let mut machine = report::Machine {
            cpus: 2,
            load_average_start: "0.30 0.20 0.10".to_owned(),
            load_average_end: "0.90 0.50 0.20".to_owned(),
            ..report::Machine::default()
        };
        assert_eq!(busy_note(&machine), None);
        machine.load_average_end = "4.74 4.31 3.97".to_owned();
        let note = busy_note(&machine).unwrap();
        assert!(note.contains("load average up to 4.7 on 2 CPUs"), "{note}");
    }
}
