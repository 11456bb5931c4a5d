//! 7. Seccomp fidelity: a syscall-heavy loop (busybox `dd bs=1` from
//!    /dev/zero to /dev/null: two system calls per byte) and a CPU-bound
//!    interpreter loop (busybox `awk`), on the host without a filter, on the
//!    host under a one-instruction allow-all filter (the floor: the kernel's
//!    seccomp entry path), and in each engine's containers under its default
//!    profile and unconfined. Each loop's CPU time (user + system, from its
//!    rusage via busybox `time`) is the measurement: it is what the filter
//!    and any forced mitigation cost, the engine's start-up is not in it,
//!    and unlike wall time it barely moves when other work competes for the
//!    CPUs. Wall times are kept as facts. Rounds interleave every variant so
//!    a change in the machine's load reaches all alike.

use std::process::Command;
use std::time::Duration;

use crate::context::{host_script, reason, run_usage, usage_script, Context};
use crate::floor::under_allow_all_filter;
use crate::image::Images;
use crate::options::Metric;
use crate::process::run_ok;
use crate::report::format_value;
use crate::report::{Measurement, MetricReport, Target, Unit};
use crate::stats::Summary;

const SYSCALL: &str = "syscall loop";
const CPU: &str = "CPU loop";
const NO_FILTER: &str = "no filter";
const FLOOR: &str = "allow-all filter";
const DEFAULT: &str = "default profile";
const UNCONFINED: &str = "unconfined";
const TIMEOUT: Duration = Duration::from_secs(600);
const STATUS: &str = "$B grep -E '^(Seccomp|Speculation_Store_Bypass):' /proc/self/status";

fn name(loop_name: &str, variant: &str) -> String {
    format!("{loop_name}, {variant} (CPU time)")
}

struct Variant {
    engine: String,
    profile: &'static str,
    make: Box<dyn Fn(&str) -> Command>,
    /// CPU seconds of each round.
    syscall: Result<Vec<f64>, String>,
    cpu: Result<Vec<f64>, String>,
    /// Wall seconds of each round (syscall loop, CPU loop).
    wall: Vec<(f64, f64)>,
}

pub fn run(context: &mut Context) -> MetricReport {
    let plan = context.plan.clone();
    let syscall_step = format!(
        "$B dd if=/dev/zero of=/dev/null bs=1 count={} 2>/dev/null",
        plan.syscall_count
    );
    let cpu_step = format!(
        "$B awk 'BEGIN {{ for (i = 0; i < {}; i++) s += i; print s }}'",
        plan.awk_iterations
    );
    let mut report = MetricReport::new(
        Metric::Seccomp.id(),
        Metric::Seccomp.title(),
        format!(
            "Syscall loop: busybox `dd if=/dev/zero of=/dev/null bs=1 count={}`. CPU loop: \
             busybox `awk` summing {} integers. The same static busybox on the host (no \
             filter, and under a 1-instruction SECCOMP_RET_ALLOW filter installed with \
             SPEC_ALLOW: the floor) and in `ENGINE run --rm --network none` containers \
             (default profile, and `--security-opt seccomp=unconfined`). Each figure is \
             the loop's CPU time, user + system (busybox `time`, 10 ms resolution): \
             unlike wall time it hardly depends on what else the machine runs. {} \
             interleaved round(s).",
            plan.syscall_count, plan.awk_iterations, plan.seccomp_runs
        ),
    );
    let busybox = match context.images.busybox_binary() {
        Ok(path) => path,
        Err(why) => {
            report.skipped = Some(why);
            return report;
        }
    };
    let host_steps = [syscall_step.clone(), cpu_step.clone()];
    let mut variants: Vec<Variant> = Vec::new();
    let host_busybox = busybox.clone();
    variants.push(Variant {
        engine: "host".to_owned(),
        profile: NO_FILTER,
        make: Box::new(move |script| host_script(&host_busybox, script)),
        syscall: Ok(Vec::new()),
        cpu: Ok(Vec::new()),
        wall: Vec::new(),
    });
    let floor_busybox = busybox.clone();
    variants.push(Variant {
        engine: "host".to_owned(),
        profile: FLOOR,
        make: Box::new(move |script| {
            let mut command = host_script(&floor_busybox, script);
            under_allow_all_filter(&mut command);
            command
        }),
        syscall: Ok(Vec::new()),
        cpu: Ok(Vec::new()),
        wall: Vec::new(),
    });
    let host_temporary = context.scratch.join("seccomp-time").display().to_string();
    let host_script_text =
        usage_script(&busybox.display().to_string(), &host_temporary, &host_steps);
    let container_script_text = usage_script("/bin/busybox", "/tmp/berth-bench-time", &host_steps);

    for index in 0..context.engines.len() {
        let engine = context.engines[index].clone();
        let image = context.images.ready(&engine, Images::busybox);
        for profile in [DEFAULT, UNCONFINED] {
            let engine = engine.clone();
            let image = image.clone();
            let failed = image.as_ref().err().cloned();
            variants.push(Variant {
                engine: engine.label().to_owned(),
                profile,
                make: Box::new(move |script| {
                    let reference = image
                        .as_ref()
                        .map(|image| image.reference.clone())
                        .unwrap_or_default();
                    let mut args = vec!["run", "--rm", "--network", "none"];
                    if profile == UNCONFINED {
                        args.extend(["--security-opt", "seccomp=unconfined"]);
                    }
                    args.extend([reference.as_str(), "sh", "-c", script]);
                    engine.command(&args)
                }),
                syscall: failed.clone().map_or(Ok(Vec::new()), Err),
                cpu: failed.map_or(Ok(Vec::new()), Err),
                wall: Vec::new(),
            });
        }
    }

    for round in 0..plan.seccomp_runs {
        context.log(format!("seccomp: round {}", round + 1));
        for variant in &mut variants {
            if variant.syscall.is_err() {
                continue;
            }
            let script = if variant.engine == "host" {
                &host_script_text
            } else {
                &container_script_text
            };
            match run_usage(&mut (variant.make)(script), 2, TIMEOUT) {
                Ok(steps) => {
                    if let (Ok(syscall), Ok(cpu)) = (&mut variant.syscall, &mut variant.cpu) {
                        syscall.push(steps[0].cpu);
                        cpu.push(steps[1].cpu);
                        variant.wall.push((steps[0].wall, steps[1].wall));
                    }
                }
                Err(why) => {
                    variant.syscall = Err(why.clone());
                    variant.cpu = Err(why);
                }
            }
        }
    }

    // What the kernel shows inside each variant.
    let spec_store_bypass =
        fs_err::read_to_string("/sys/devices/system/cpu/vulnerabilities/spec_store_bypass")
            .unwrap_or_default();
    for variant in &variants {
        let script = if variant.engine == "host" {
            format!("B={}; {STATUS}", busybox.display())
        } else {
            format!("B=/bin/busybox; {STATUS}")
        };
        let status = run_ok(&mut (variant.make)(&script), Duration::from_secs(60))
            .map(|finished| {
                finished
                    .stdout()
                    .lines()
                    .map(|line| line.replace('\t', " "))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_else(reason);
        let subject = format!("{} ({})", variant.engine, variant.profile);
        let median = |values: Vec<f64>| {
            Summary::of(&values)
                .map(|summary| format_value(Unit::Seconds, summary.median))
                .unwrap_or_else(|| "n/a".to_owned())
        };
        if !variant.wall.is_empty() {
            report.fact(
                &subject,
                "wall time medians",
                format!(
                    "syscall loop {}, CPU loop {}",
                    median(variant.wall.iter().map(|wall| wall.0).collect()),
                    median(variant.wall.iter().map(|wall| wall.1).collect())
                ),
            );
        }
        if variant.profile == DEFAULT {
            report.fact(
                &subject,
                "SPEC_ALLOW",
                interpret(&status, &spec_store_bypass),
            );
        }
        report.fact(subject, "/proc/self/status", status);
    }

    for variant in variants {
        for (loop_name, result) in [(SYSCALL, variant.syscall), (CPU, variant.cpu)] {
            report.measurements.push(Measurement::from_result(
                name(loop_name, variant.profile),
                variant.engine.clone(),
                Unit::Seconds,
                result,
            ));
        }
    }
    for variant in [FLOOR, DEFAULT, UNCONFINED] {
        report.compare_across(
            &name(SYSCALL, variant),
            &name(SYSCALL, NO_FILTER),
            "host",
            "no filter",
        );
        report.compare_across(
            &name(SYSCALL, variant),
            &name(SYSCALL, FLOOR),
            "host",
            "floor",
        );
        report.compare_across(
            &name(CPU, variant),
            &name(CPU, NO_FILTER),
            "host",
            "no filter",
        );
    }
    for measurement in &mut report.measurements {
        if measurement.engine != "berth" {
            continue;
        }
        let ratio = |against: &str| {
            measurement
                .comparisons
                .iter()
                .find(|comparison| comparison.against == against)
                .map(|comparison| comparison.ratio)
        };
        if measurement.name == name(SYSCALL, DEFAULT) {
            let value = ratio("floor");
            measurement.target = Some(Target::at_most(
                "no slower than the allow-all floor (≤ 1.02×, 2 % for noise)",
                value,
                1.02,
            ));
        } else if measurement.name == name(CPU, DEFAULT) {
            let value = ratio("no filter");
            measurement.target = Some(Target::at_most("≤ 1 % slower than the host", value, 1.01));
        }
    }
    report
}

/// Whether SPEC_ALLOW is in effect, from the Seccomp and
/// Speculation_Store_Bypass lines a process under the profile sees.
pub fn interpret(status: &str, spec_store_bypass: &str) -> String {
    let filtered = status.contains("Seccomp: 2");
    if status.contains("force mitigated") {
        return "no: the kernel forced the Speculative Store Bypass mitigation on the filtered \
                process (the filter was installed without SECCOMP_FILTER_FLAG_SPEC_ALLOW), \
                which slows all code"
            .to_owned();
    }
    if !filtered {
        return "no seccomp filter in effect".to_owned();
    }
    if spec_store_bypass.contains("seccomp") {
        "yes: filtered, and the kernel (which ties SSBD to seccomp) did not force the mitigation"
            .to_owned()
    } else {
        format!(
            "cannot tell here: this kernel does not tie SSBD to seccomp ({}), so no filter \
             slows code this way",
            spec_store_bypass.trim()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_allow_is_read_from_the_status_lines() {
        let with_seccomp = "Mitigation: Speculative Store Bypass disabled via prctl and seccomp";
        let prctl_only = "Mitigation: Speculative Store Bypass disabled via prctl";
        assert!(interpret(
            "Seccomp: 2, Speculation_Store_Bypass: thread force mitigated",
            with_seccomp
        )
        .starts_with("no: the kernel forced"));
        assert!(interpret(
            "Seccomp: 2, Speculation_Store_Bypass: thread vulnerable",
            with_seccomp
        )
        .starts_with("yes"));
        assert!(interpret(
            "Seccomp: 2, Speculation_Store_Bypass: thread vulnerable",
            prctl_only
        )
        .starts_with("cannot tell here"));
        assert_eq!(
            interpret(
                "Seccomp: 0, Speculation_Store_Bypass: thread vulnerable",
                prctl_only
            ),
            "no seccomp filter in effect"
        );
    }
}
