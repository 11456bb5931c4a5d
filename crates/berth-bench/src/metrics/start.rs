//! 1. Start latency of `run --rm IMAGE echo hi`, hyperfine-style: warm-up
//!    runs, then timed runs from spawn to exit. Cold is a new container per
//!    run; warm uses berth's warm pool (`berth warm`) when this build has
//!    one.

use std::time::Duration;

use crate::context::{reason, series, Context};
use crate::engine::Engine;
use crate::image::Images;
use crate::options::Metric;
use crate::process::run as run_process;
use crate::report::{Measurement, MetricReport, Target, Unit};

pub const COLD_NONE: &str = "run --rm echo, cold (--network none)";
pub const COLD_DEFAULT: &str = "run --rm echo, cold (default network)";
pub const WARM: &str = "run --rm echo, warm pool (default network)";
const TIMEOUT: Duration = Duration::from_secs(120);

pub fn run(context: &mut Context) -> MetricReport {
    let plan = context.plan.clone();
    let mut report = MetricReport::new(
        Metric::Start.id(),
        Metric::Start.title(),
        format!(
            "Wall time of `ENGINE run --rm berth-bench/busybox echo hi` from spawn to exit, \
             output to files (hyperfine -N style): {} warm-up run(s), then {} timed runs. \
             Cold: a new container every run (berth with BERTH_WARM=off where a warm pool \
             exists). Warm: a sandbox from berth's warm pool (BERTH_WARM=on), the pool \
             filled with `berth warm IMAGE --depth 1` before each run (untimed; it also \
             waits for the refill a claim starts in the background), emptied afterwards.",
            plan.start_warmup, plan.start_runs
        ),
    );
    for index in 0..context.engines.len() {
        let engine = context.engines[index].clone();
        let label = engine.label();
        let image = match context.images.ready(&engine, Images::busybox) {
            Ok(image) => image,
            Err(why) => {
                for name in [COLD_NONE, COLD_DEFAULT, WARM] {
                    report.measurements.push(Measurement::skipped(
                        name,
                        label,
                        Unit::Seconds,
                        why.clone(),
                    ));
                }
                continue;
            }
        };
        let warm_pool = engine.is_berth() && engine.run(["warm", "--help"]).is_ok();
        let cold_env: &[(&str, &str)] = if warm_pool {
            &[("BERTH_WARM", "off")]
        } else {
            &[]
        };
        let reference = image.reference.as_str();
        context.log(format!("start: {label} cold"));
        let cold = time_runs(
            &engine,
            &["run", "--rm", "--network", "none", reference, "echo", "hi"],
            cold_env,
            &plan,
            &|| Ok(()),
        );
        report.measurements.push(Measurement::from_result(
            COLD_NONE,
            label,
            Unit::Seconds,
            cold,
        ));
        if engine.has_bridge {
            let cold = time_runs(
                &engine,
                &["run", "--rm", reference, "echo", "hi"],
                cold_env,
                &plan,
                &|| Ok(()),
            );
            report.measurements.push(Measurement::from_result(
                COLD_DEFAULT,
                label,
                Unit::Seconds,
                cold,
            ));
        } else {
            report.measurements.push(Measurement::skipped(
                COLD_DEFAULT,
                label,
                Unit::Seconds,
                "the engine has no default bridge network",
            ));
        }
        if !engine.is_berth() {
            report.measurements.push(Measurement::skipped(
                WARM,
                label,
                Unit::Seconds,
                format!("{label} has no warm pool"),
            ));
        } else if !warm_pool {
            report.measurements.push(Measurement::skipped(
                WARM,
                label,
                Unit::Seconds,
                "not available: this berth has no `berth warm` yet",
            ));
            report.fact(
                label,
                "warm pool",
                "not available (`berth warm --help` fails)",
            );
        } else {
            context.log(format!("start: {label} warm"));
            let refill = || {
                engine
                    .run(["warm", reference, "--depth", "1"])
                    .map(|_| ())
                    .map_err(reason)
            };
            let warm = time_runs(
                &engine,
                &["run", "--rm", reference, "echo", "hi"],
                &[("BERTH_WARM", "on")],
                &plan,
                &refill,
            );
            report
                .measurements
                .push(Measurement::from_result(WARM, label, Unit::Seconds, warm));
            if !drain_pool(&engine, reference) {
                report.notes.push(format!(
                    "the warm pool of {reference} could not be emptied after the warm runs"
                ));
            }
        }
    }
    for name in [COLD_NONE, COLD_DEFAULT, WARM] {
        report.compare_with(name, "berth", "berth");
    }
    add_targets(&mut report);
    report
}

/// Empties berth's pool of `reference`. A claim starts a refill in the
/// background: `warm IMAGE` waits for a refill in flight (the pool lock),
/// then `warm rm` ends the members, until `warm ls` shows none.
fn drain_pool(engine: &Engine, reference: &str) -> bool {
    let _ = engine.run(["warm", reference, "--depth", "1"]);
    for _ in 0..10 {
        let _ = engine.run(["warm", "rm", reference]);
        std::thread::sleep(Duration::from_millis(300));
        let empty = engine
            .run(["warm", "ls", "-q"])
            .map(|finished| finished.stdout().trim().is_empty())
            .unwrap_or(false);
        if empty {
            return true;
        }
    }
    false
}

fn add_targets(report: &mut MetricReport) {
    let has_default = report
        .find(COLD_DEFAULT, "berth")
        .is_some_and(|measurement| measurement.summary.is_some());
    for measurement in &mut report.measurements {
        if measurement.engine != "berth" {
            continue;
        }
        let cold_row = if has_default { COLD_DEFAULT } else { COLD_NONE };
        if measurement.name == cold_row {
            measurement.target = Some(Target::at_most(
                "cold ≤ 10 ms median",
                measurement.median(),
                0.010,
            ));
        } else if measurement.name == WARM {
            measurement.target = Some(Target::at_most(
                "warm ≤ 3 ms median",
                measurement.median(),
                0.003,
            ));
        }
    }
}

fn time_runs(
    engine: &Engine,
    args: &[&str],
    env: &[(&str, &str)],
    plan: &crate::options::Plan,
    before: &dyn Fn() -> Result<(), String>,
) -> Result<Vec<f64>, String> {
    series(plan.start_runs, plan.start_warmup, || {
        before()?;
        let mut command = engine.command(args);
        for (name, value) in env {
            command.env(name, value);
        }
        let finished = run_process(&mut command, TIMEOUT)
            .and_then(|finished| finished.check())
            .map_err(reason)?;
        Ok(finished.elapsed.as_secs_f64())
    })
}
