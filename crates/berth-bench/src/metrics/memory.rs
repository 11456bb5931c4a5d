//! 2. Engine memory: the resident processes of each engine with none of
//!    this run's containers (for berth: none at all), then the growth per
//!    running container, one `sleep` container at a time.

use std::time::Duration;

use crate::context::{reason, Context};
use crate::engine::Engine;
use crate::image::Images;
use crate::options::Metric;
use crate::procfs::{process_table, usage, Usage};
use crate::report::{Measurement, MetricReport, Target, Unit};

const IDLE_RSS: &str = "idle, no container (RSS)";
const IDLE_PSS: &str = "idle, no container (PSS)";
const PER_RSS: &str = "per running container (RSS)";
const PER_PSS: &str = "per running container (PSS)";

pub fn run(context: &mut Context) -> MetricReport {
    let plan = context.plan.clone();
    let settle = if plan.quick {
        Duration::from_millis(500)
    } else {
        Duration::from_secs(2)
    };
    let mut report = MetricReport::new(
        Metric::Memory.id(),
        Metric::Memory.title(),
        format!(
            "Summed RSS and PSS (/proc/PID/smaps_rollup) of the engine's resident processes: \
             berth's monitors (processes of the berth binary with this root), dockerd with \
             its children, containerd and the containerd shims, podman's conmon. Idle: {} \
             samples 0.2 s apart. Per container: {} `run -d --network none busybox sleep` \
             containers started one by one, each sample the growth after {} ms.",
            plan.memory_samples,
            plan.memory_containers,
            settle.as_millis()
        ),
    );
    for index in 0..context.engines.len() {
        let engine = context.engines[index].clone();
        let label = engine.label();
        let image = match context.images.ready(&engine, Images::busybox) {
            Ok(image) => image,
            Err(why) => {
                for name in [IDLE_RSS, IDLE_PSS, PER_RSS, PER_PSS] {
                    report.measurements.push(Measurement::skipped(
                        name,
                        label,
                        Unit::Bytes,
                        why.clone(),
                    ));
                }
                continue;
            }
        };
        let running = engine.running_containers();
        if !running.is_empty() {
            report.notes.push(format!(
                "{label} already had {} running container(s); its idle figures include them",
                running.len()
            ));
        }
        if engine.is_berth() {
            // Warm pool members are monitors too; none should be left here.
            let members = engine
                .run(["warm", "ls", "-q"])
                .map(|finished| finished.stdout().split_whitespace().count())
                .unwrap_or(0);
            if members > 0 {
                report.notes.push(format!(
                    "berth had {members} warm pool member(s); its idle figures include them"
                ));
            }
        }
        context.log(format!("memory: {label} idle"));
        let mut idle_rss = Vec::new();
        let mut idle_pss = Vec::new();
        let mut last = Usage::default();
        for sample in 0..plan.memory_samples {
            if sample > 0 {
                std::thread::sleep(Duration::from_millis(200));
            }
            last = usage(&engine.resident_pids());
            idle_rss.push(last.rss as f64);
            idle_pss.push(last.pss as f64);
        }
        report.fact(label, "resident processes, idle", describe(&engine));
        let mut idle = Measurement::new(IDLE_RSS, label, Unit::Bytes);
        idle.set_samples(idle_rss);
        if engine.is_berth() {
            idle.target = Some(Target::at_most("0 with no container", idle.median(), 0.0));
        }
        report.measurements.push(idle);
        let mut idle = Measurement::new(IDLE_PSS, label, Unit::Bytes);
        idle.set_samples(idle_pss);
        report.measurements.push(idle);

        context.log(format!(
            "memory: {label} with {} container(s)",
            plan.memory_containers
        ));
        let mut names = Vec::new();
        let mut per_rss = Vec::new();
        let mut per_pss = Vec::new();
        let mut failure = None;
        for number in 0..plan.memory_containers {
            let name = context.container_name(index, &format!("memory-{number}"));
            names.push(name.clone());
            if let Err(error) = engine.run([
                "run",
                "-d",
                "--network",
                "none",
                "--name",
                &name,
                &image.reference,
                "sleep",
                "3600",
            ]) {
                failure = Some(reason(error));
                break;
            }
            std::thread::sleep(settle);
            let now = usage(&engine.resident_pids());
            per_rss.push(now.rss as f64 - last.rss as f64);
            per_pss.push(now.pss as f64 - last.pss as f64);
            last = now;
        }
        report.fact(
            label,
            "resident processes, with containers",
            describe(&engine),
        );
        context.remove(index, &names);
        let result = |samples: Vec<f64>| match &failure {
            Some(why) => Err(why.clone()),
            None => Ok(samples),
        };
        let mut per = Measurement::from_result(PER_RSS, label, Unit::Bytes, result(per_rss));
        if engine.is_berth() {
            per.target = Some(Target::at_most("≤ 2 MB RSS", per.median(), 2e6));
        }
        report.measurements.push(per);
        report.measurements.push(Measurement::from_result(
            PER_PSS,
            label,
            Unit::Bytes,
            result(per_pss),
        ));
    }
    for name in [PER_RSS, PER_PSS] {
        report.compare_with(name, "berth", "berth");
    }
    report
}

/// "dockerd, containerd, containerd-shim ×2", or "none".
fn describe(engine: &Engine) -> String {
    let pids = engine.resident_pids();
    let table = process_table();
    let mut names: Vec<(String, usize)> = Vec::new();
    for pid in pids {
        let comm = table
            .iter()
            .find(|process| process.pid == pid)
            .map(|process| process.comm.clone())
            .unwrap_or_else(|| pid.to_string());
        match names.iter_mut().find(|(name, _)| *name == comm) {
            Some((_, count)) => *count += 1,
            None => names.push((comm, 1)),
        }
    }
    if names.is_empty() {
        return "none".to_owned();
    }
    names
        .into_iter()
        .map(|(name, count)| {
            if count == 1 {
                name
            } else {
                format!("{name} ×{count}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}
