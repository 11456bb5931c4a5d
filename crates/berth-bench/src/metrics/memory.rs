//! 2. Engine memory: the resident processes of each engine with none of
//!    this run's containers (for berth: none at all), then the growth per
//!    running container, one `sleep` container at a time. For berth's VM
//!    containers the growth is the whole VM's: the monitor, the shim, QEMU
//!    (the guest's memory is QEMU's) and virtiofsd, idle, and idle again
//!    after the guest freed 150 MiB, with the balloon's free page reporting
//!    and without it (`BERTH_VM_BALLOON=off`).

use std::time::Duration;

use crate::context::{reason, Context};
use crate::engine::Engine;
use crate::image::Images;
use crate::options::Metric;
use crate::procfs::{descendants, process_table, usage, Usage};
use crate::report::{Measurement, MetricReport, Target, Unit};
use crate::vm::skip_reason;

const IDLE_RSS: &str = "idle, no container (RSS)";
const IDLE_PSS: &str = "idle, no container (PSS)";
const PER_RSS: &str = "per running container (RSS)";
const PER_PSS: &str = "per running container (PSS)";
const VM_PER_RSS: &str = "per idle VM container: monitor + shim + QEMU + virtiofsd (RSS)";
const VM_PER_PSS: &str = "per idle VM container: monitor + shim + QEMU + virtiofsd (PSS)";
const VM_BURST_PSS: &str = "per VM container, idle after the guest freed 150 MiB (PSS)";
/// What the guest touches and frees before it goes idle.
const BURST: &str = "dd if=/dev/zero of=/dev/null bs=150M count=1; exec sleep 3600";

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
             containers started one by one, each sample the growth after {} ms. \
             berth-vm: {} `run -d --isolation=vm --network none busybox sleep` containers \
             one by one, each sample the growth of berth's processes and their \
             descendants (shim, QEMU, virtiofsd) {} s after `run -d` returned, with the \
             balloon's free page reporting (default) and with BERTH_VM_BALLOON=off; then \
             as many of each whose process first runs `{BURST}`. The guest kernel image \
             QEMU maps is one page-cache copy shared by every VM: PSS divides it among \
             them, RSS counts it in each.",
            plan.memory_samples,
            plan.memory_containers,
            settle.as_millis(),
            plan.vm_memory_containers,
            vm_settle(&plan).as_secs()
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
        if engine.is_berth() {
            vm_rows(context, index, &engine, &image.reference, &mut report);
        }
    }
    for name in [PER_RSS, PER_PSS] {
        report.compare_with(name, "berth", "berth");
    }
    report
}

/// How long a VM container is left after `run -d` before it is measured:
/// the guest reports what it freed ≈ 2 s after the free (page reporting's
/// delay), and the burst itself takes a second or two under TCG.
fn vm_settle(plan: &crate::options::Plan) -> Duration {
    Duration::from_secs(if plan.quick { 4 } else { 8 })
}

/// berth's processes and everything under them (a VM container's shim,
/// QEMU and virtiofsd).
fn tree(engine: &Engine) -> Vec<u32> {
    let table = process_table();
    let mut pids = engine.resident_pids();
    for pid in pids.clone() {
        pids.extend(descendants(&table, pid));
    }
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// The growth of berth's process tree per VM container, started one by one
/// with `args` after `run -d --isolation=vm --network none --name NAME`.
fn grow_per_vm(
    context: &mut Context,
    index: usize,
    engine: &Engine,
    what: &str,
    env: &[(&str, &str)],
    args: &[&str],
) -> Result<Vec<Usage>, String> {
    let plan = context.plan.clone();
    let mut last = usage(&tree(engine));
    let mut names = Vec::new();
    let mut growth = Vec::new();
    let mut failure = None;
    for number in 0..plan.vm_memory_containers {
        let name = context.container_name(index, &format!("{what}-{number}"));
        names.push(name.clone());
        let mut command = engine.command([
            "run",
            "-d",
            "--isolation=vm",
            "--network",
            "none",
            "--name",
            &name,
        ]);
        command.args(args);
        for (key, value) in env {
            command.env(key, value);
        }
        if let Err(error) = crate::process::run_ok(&mut command, crate::engine::COMMAND_TIMEOUT) {
            failure = Some(reason(error));
            break;
        }
        std::thread::sleep(vm_settle(&plan));
        let now = usage(&tree(engine));
        growth.push(Usage {
            rss: now.rss.saturating_sub(last.rss),
            pss: now.pss.saturating_sub(last.pss),
        });
        last = now;
    }
    context.remove(index, &names);
    match failure {
        Some(why) => Err(why),
        None => Ok(growth),
    }
}

/// The VM container rows of berth (`engine`, at `index`).
fn vm_rows(
    context: &mut Context,
    index: usize,
    engine: &Engine,
    reference: &str,
    report: &mut MetricReport,
) {
    let support = match context.vm.clone() {
        Ok(support) => support,
        Err(why) => {
            for name in [VM_PER_RSS, VM_PER_PSS, VM_BURST_PSS] {
                report.measurements.push(Measurement::skipped(
                    name,
                    "berth-vm",
                    Unit::Bytes,
                    skip_reason(&why),
                ));
            }
            return;
        }
    };
    let label = support.label.as_str();
    let pss = |result: &Result<Vec<Usage>, String>| {
        result
            .as_ref()
            .map(|usages| usages.iter().map(|usage| usage.pss as f64).collect())
            .map_err(Clone::clone)
    };
    context.log(format!("memory: {label} idle containers"));
    let idle_args = [reference, "sleep", "3600"];
    let idle = grow_per_vm(context, index, engine, "vm", &[], &idle_args);
    report.measurements.push(Measurement::from_result(
        VM_PER_RSS,
        label,
        Unit::Bytes,
        idle.as_ref()
            .map(|usages| usages.iter().map(|usage| usage.rss as f64).collect())
            .map_err(Clone::clone),
    ));
    report.measurements.push(Measurement::from_result(
        VM_PER_PSS,
        label,
        Unit::Bytes,
        pss(&idle),
    ));
    let off_label = format!("{label}, BERTH_VM_BALLOON=off");
    let off = [(berth_vm::vm::BALLOON_ENV, "off")];
    let idle_off = grow_per_vm(context, index, engine, "vm-off", &off, &idle_args);
    report.measurements.push(Measurement::from_result(
        VM_PER_PSS,
        off_label.as_str(),
        Unit::Bytes,
        pss(&idle_off),
    ));
    context.log(format!("memory: {label} after a 150 MiB burst"));
    let burst_args = [reference, "sh", "-c", BURST];
    let burst = grow_per_vm(context, index, engine, "vm-burst", &[], &burst_args);
    report.measurements.push(Measurement::from_result(
        VM_BURST_PSS,
        label,
        Unit::Bytes,
        pss(&burst),
    ));
    let without = grow_per_vm(context, index, engine, "vm-burst-off", &off, &burst_args);
    report.measurements.push(Measurement::from_result(
        VM_BURST_PSS,
        off_label.as_str(),
        Unit::Bytes,
        pss(&without),
    ));
    report.compare_across(VM_BURST_PSS, VM_PER_PSS, label, "idle VM");
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
