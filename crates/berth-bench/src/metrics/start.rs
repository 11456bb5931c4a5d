//! 1. Start latency of `run --rm IMAGE echo hi`, hyperfine-style: warm-up
//!    runs, then timed runs from spawn to exit. Cold is a new container per
//!    run; warm uses berth's warm pool (`berth warm`) when this build has
//!    one. berth's VM containers (`--isolation=vm`) get the same rows under
//!    the engine label `berth-vm (ACCELERATOR)`, and the phases of a VM's
//!    boot (`vm_phases`).

use std::time::Duration;

use crate::context::{reason, series, Context};
use crate::engine::Engine;
use crate::image::Images;
use crate::options::Metric;
use crate::process::run as run_process;
use crate::report::{Measurement, MetricReport, Target, Unit};
use crate::vm::{skip_reason, VmSupport};

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
             waits for the refill a claim starts in the background), emptied afterwards. \
             berth-vm: the same with `--isolation=vm` (a microVM per container: QEMU, \
             the guest kernel, virtiofsd), {} warm-up run(s) and {} timed runs; its \
             warm row needs `berth warm --isolation=vm`. The VM boot phases come from \
             a VM booted by berth-vm directly (the containers' kernel, initramfs and \
             memory; the busybox binary as its virtio-fs root), {} runs.",
            plan.start_warmup,
            plan.start_runs,
            plan.vm_start_warmup,
            plan.vm_start_runs,
            plan.vm_start_runs
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
            (plan.start_runs, plan.start_warmup),
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
                (plan.start_runs, plan.start_warmup),
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
                (plan.start_runs, plan.start_warmup),
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
        if engine.is_berth() {
            let vm = context.vm.clone();
            match vm {
                Ok(support) => {
                    vm_rows(&engine, reference, &support, cold_env, &mut report, context);
                    super::vm_phases::measure(context, &support, &mut report);
                }
                Err(why) => {
                    context.log(format!("start: berth-vm: skipped: {why}"));
                    for name in [COLD_NONE, COLD_DEFAULT, WARM] {
                        report.measurements.push(Measurement::skipped(
                            name,
                            "berth-vm",
                            Unit::Seconds,
                            skip_reason(&why),
                        ));
                    }
                }
            }
        }
    }
    for name in [COLD_NONE, COLD_DEFAULT, WARM] {
        report.compare_with(name, "berth", "berth");
    }
    add_targets(&mut report);
    if let Ok(support) = &context.vm {
        add_vm_targets(&mut report, support);
    }
    report
}

/// berth's VM containers: cold runs with `--isolation=vm`, and warm ones
/// from a VM warm pool when `berth warm --isolation=vm` takes the image.
fn vm_rows(
    engine: &Engine,
    reference: &str,
    support: &VmSupport,
    cold_env: &[(&str, &str)],
    report: &mut MetricReport,
    context: &Context,
) {
    let plan = &context.plan;
    let label = support.label.as_str();
    let runs = (plan.vm_start_runs, plan.vm_start_warmup);
    context.log(format!("start: {label} cold"));
    let cold = time_runs(
        engine,
        &[
            "run",
            "--rm",
            "--isolation=vm",
            "--network",
            "none",
            reference,
            "echo",
            "hi",
        ],
        cold_env,
        runs,
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
            engine,
            &["run", "--rm", "--isolation=vm", reference, "echo", "hi"],
            cold_env,
            runs,
            &|| Ok(()),
        );
        report.measurements.push(Measurement::from_result(
            COLD_DEFAULT,
            label,
            Unit::Seconds,
            cold,
        ));
    }
    // The seam for the VM warm pool: its rows appear once `berth warm`
    // takes `--isolation=vm`; until then the refusal is the reason.
    let fill = || {
        engine
            .run(["warm", "--isolation=vm", reference, "--depth", "1"])
            .map(|_| ())
            .map_err(reason)
    };
    match fill() {
        Err(why) => {
            report.measurements.push(Measurement::skipped(
                WARM,
                label,
                Unit::Seconds,
                no_pool(&why),
            ));
            report.fact(
                label,
                "warm pool",
                "no VM pool (`berth warm --isolation=vm` refused)",
            );
        }
        Ok(()) => {
            context.log(format!("start: {label} warm"));
            let warm = time_runs(
                engine,
                &["run", "--rm", "--isolation=vm", reference, "echo", "hi"],
                &[("BERTH_WARM", "on")],
                runs,
                &fill,
            );
            report
                .measurements
                .push(Measurement::from_result(WARM, label, Unit::Seconds, warm));
            if !drain_pool(engine, reference) {
                report.notes.push(format!(
                    "the VM warm pool of {reference} could not be emptied after the warm runs"
                ));
            }
        }
    }
    report.fact(
        label,
        "accelerator",
        format!("{}: {}", support.accelerator_name(), support.reason),
    );
}

/// The warm VM row's reason while `berth warm --isolation=vm` fails:
/// berth's own words, without the command line the failure starts with.
fn no_pool(failure: &str) -> String {
    let words = failure
        .split_once("): ")
        .map_or(failure, |(_, words)| words);
    format!(
        "no VM pool: `berth warm --isolation=vm` is refused ({})",
        words.trim()
    )
}

/// Issue 16's targets for VM containers: under TCG cold ≤ 1.0 s and warm ≤
/// 60 ms median; on a KVM host cold ≤ 150 ms and warm ≤ 10 ms.
fn add_vm_targets(report: &mut MetricReport, support: &VmSupport) {
    let (cold, warm) = match support.accelerator {
        berth_vm::Accelerator::Tcg => (
            ("cold ≤ 1.0 s median (TCG)", 1.0),
            ("warm ≤ 60 ms median (TCG)", 0.060),
        ),
        berth_vm::Accelerator::Kvm => (
            ("cold ≤ 150 ms median (KVM)", 0.150),
            ("warm ≤ 10 ms median (KVM)", 0.010),
        ),
    };
    for measurement in &mut report.measurements {
        if measurement.engine != support.label {
            continue;
        }
        let (text, limit) = match measurement.name.as_str() {
            COLD_NONE => cold,
            WARM => warm,
            _ => continue,
        };
        measurement.target = Some(Target::at_most(text, measurement.median(), limit));
    }
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

/// `(runs, warmup)` timed runs of `ENGINE ARGS`, `before` each (untimed).
fn time_runs(
    engine: &Engine,
    args: &[&str],
    env: &[(&str, &str)],
    (runs, warmup): (usize, usize),
    before: &dyn Fn() -> Result<(), String>,
) -> Result<Vec<f64>, String> {
    series(runs, warmup, || {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn support(accelerator: berth_vm::Accelerator) -> VmSupport {
        VmSupport {
            label: "berth-vm (X)".to_owned(),
            accelerator,
            reason: "because".to_owned(),
            cache: "/cache".into(),
        }
    }

    #[test]
    fn vm_rows_get_the_targets_of_their_accelerator() {
        let mut report = MetricReport::new("start", "Start", "");
        let mut cold = Measurement::new(COLD_NONE, "berth-vm (X)", Unit::Seconds);
        cold.set_samples(vec![0.9, 1.1, 0.95]);
        report.measurements.push(cold);
        report.measurements.push(Measurement::skipped(
            WARM,
            "berth-vm (X)",
            Unit::Seconds,
            "no VM pool",
        ));
        let mut namespace = Measurement::new(COLD_NONE, "berth", Unit::Seconds);
        namespace.set_samples(vec![0.02]);
        report.measurements.push(namespace);
        let mut kvm = report.clone();

        add_vm_targets(&mut report, &support(berth_vm::Accelerator::Tcg));
        let target = report.measurements[0].target.as_ref().unwrap();
        assert_eq!(
            (target.text.as_str(), target.met),
            ("cold ≤ 1.0 s median (TCG)", Some(true))
        );
        let warm = report.measurements[1].target.as_ref().unwrap();
        assert_eq!(warm.met, None, "nothing to check it against");
        assert!(report.measurements[2].target.is_none(), "not a VM row");

        add_vm_targets(&mut kvm, &support(berth_vm::Accelerator::Kvm));
        let target = kvm.measurements[0].target.as_ref().unwrap();
        assert_eq!(
            (target.text.as_str(), target.met),
            ("cold ≤ 150 ms median (KVM)", Some(false))
        );
    }

    #[test]
    fn a_refused_pool_is_said_in_berths_words() {
        let failure = "berth --root /r warm --isolation=vm busybox --depth 1 failed \
                       (exit status: 125): unknown flag: --isolation\n";
        assert_eq!(
            no_pool(failure),
            "no VM pool: `berth warm --isolation=vm` is refused (unknown flag: --isolation)"
        );
        assert_eq!(
            no_pool("no such thing"),
            "no VM pool: `berth warm --isolation=vm` is refused (no such thing)"
        );
    }
}
