//! 3. `cp` of a large file between the host and a running container, both
//!    directions, against plain `cp` on the host (same source file, page
//!    cache warm, `sync` before every copy so one copy's writeback does not
//!    land in the next).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::context::{reason, sync_disks, Context};
use crate::image::pull::MixedContent;
use crate::image::Images;
use crate::machine::free_bytes;
use crate::options::Metric;
use crate::process::run_ok;
use crate::report::{format_value, Measurement, MetricReport, Target, Unit};

/// What is kept free beyond the bench's own files.
const MARGIN: u64 = 2 << 30;

fn size_text(size: u64) -> String {
    if size >= 1 << 30 && size.is_multiple_of(1 << 30) {
        format!("{} GiB", size >> 30)
    } else {
        format!("{} MiB", size >> 20)
    }
}

fn timeout(size: u64) -> Duration {
    // 60 s plus 20 MB/s: a copy slower than that is broken, not slow.
    Duration::from_secs(60 + size / 20_000_000)
}

fn timed(command: &mut Command, size: u64) -> Result<f64, String> {
    sync_disks();
    run_ok(command, timeout(size))
        .map(|finished| finished.elapsed.as_secs_f64())
        .map_err(reason)
}

pub fn run(context: &mut Context) -> MetricReport {
    let plan = context.plan.clone();
    let mut report = MetricReport::new(
        Metric::Copy.id(),
        Metric::Copy.title(),
        format!(
            "A file of seeded pseudo-random data (half random bytes, half hex text) copied \
             {} time(s) per size: `cp FILE DEST` on the host; `ENGINE cp FILE C:/tmp/blob` \
             into a running busybox container and `ENGINE cp C:/tmp/blob DEST` back out. \
             Wall time of each command; `sync` before each.",
            plan.copy_runs
        ),
    );
    let directory = match context.scratch_dir("cp") {
        Ok(directory) => directory,
        Err(why) => {
            report.skipped = Some(why);
            return report;
        }
    };
    // One running container per engine, for every size.
    let mut containers: Vec<Result<String, String>> = Vec::new();
    for index in 0..context.engines.len() {
        let engine = context.engines[index].clone();
        let started = context
            .images
            .ready(&engine, Images::busybox)
            .and_then(|image| {
                let name = context.container_name(index, "cp");
                engine
                    .run([
                        "run",
                        "-d",
                        "--network",
                        "none",
                        "--name",
                        &name,
                        &image.reference,
                        "sleep",
                        "36000",
                    ])
                    .map(|_| name)
                    .map_err(reason)
            });
        containers.push(started);
    }
    for &size in &plan.copy_sizes {
        let text = size_text(size);
        let plain = format!("plain cp, {text}");
        let into = format!("cp {text}, host → container");
        let out_of = format!("cp {text}, container → host");
        let needed = size * (2 + context.engines.len() as u64) + MARGIN;
        let free = free_bytes(&directory).unwrap_or(0);
        if free < needed {
            let why = format!(
                "not enough disk space: needs {} free, {} available",
                format_value(Unit::Bytes, needed as f64),
                format_value(Unit::Bytes, free as f64)
            );
            report.measurements.push(Measurement::skipped(
                &plain,
                "host",
                Unit::Seconds,
                why.clone(),
            ));
            for engine in &context.engines {
                for name in [&into, &out_of] {
                    report.measurements.push(Measurement::skipped(
                        name.as_str(),
                        engine.label(),
                        Unit::Seconds,
                        why.clone(),
                    ));
                }
            }
            continue;
        }
        context.log(format!("cp: writing a {text} file"));
        let source = directory.join(format!("source-{size}"));
        if let Err(error) = write_source(&source, size) {
            report
                .notes
                .push(format!("could not write the {text} source file: {error}"));
            continue;
        }
        let destination = directory.join("copy");
        let mut host = Vec::new();
        let mut engines_in: Vec<Result<Vec<f64>, String>> = containers
            .iter()
            .map(|started| started.clone().map(|_| Vec::new()))
            .collect();
        let mut engines_out = engines_in.clone();
        let mut host_error = None;
        for round in 0..plan.copy_runs {
            context.log(format!("cp: {text}, round {}", round + 1));
            match timed(Command::new("cp").arg(&source).arg(&destination), size) {
                Ok(seconds) => host.push(seconds),
                Err(why) => host_error = Some(why),
            }
            let _ = fs_err::remove_file(&destination);
            for (index, engine) in context.engines.iter().enumerate() {
                let Ok(name) = &containers[index] else {
                    continue;
                };
                if let Ok(samples) = &mut engines_in[index] {
                    let mut command = engine.command(["cp"]);
                    command.arg(&source).arg(format!("{name}:/tmp/blob"));
                    match timed(&mut command, size) {
                        Ok(seconds) => samples.push(seconds),
                        Err(why) => engines_in[index] = Err(why),
                    }
                }
                if let Ok(samples) = &mut engines_out[index] {
                    let mut command = engine.command(["cp"]);
                    command.arg(format!("{name}:/tmp/blob")).arg(&destination);
                    let copied = timed(&mut command, size).and_then(|seconds| {
                        let length = fs_err::metadata(&destination)
                            .map(|metadata| metadata.len())
                            .unwrap_or(0);
                        if length == size {
                            Ok(seconds)
                        } else {
                            Err(format!("the copy out has {length} bytes, not {size}"))
                        }
                    });
                    match copied {
                        Ok(seconds) => samples.push(seconds),
                        Err(why) => engines_out[index] = Err(why),
                    }
                    let _ = fs_err::remove_file(&destination);
                }
            }
        }
        let _ = fs_err::remove_file(&source);
        report.measurements.push(Measurement::from_result(
            &plain,
            "host",
            Unit::Seconds,
            match host_error {
                Some(why) => Err(why),
                None => Ok(host),
            },
        ));
        for (index, engine) in context.engines.iter().enumerate() {
            report.measurements.push(Measurement::from_result(
                &into,
                engine.label(),
                Unit::Seconds,
                engines_in[index].clone(),
            ));
            report.measurements.push(Measurement::from_result(
                &out_of,
                engine.label(),
                Unit::Seconds,
                engines_out[index].clone(),
            ));
        }
        for name in [&into, &out_of] {
            report.compare_across(name, &plain, "host", "plain cp");
            report.compare_with(name, "berth", "berth");
        }
        for measurement in &mut report.measurements {
            if measurement.engine == "berth"
                && (measurement.name == into || measurement.name == out_of)
            {
                let ratio = measurement
                    .comparisons
                    .iter()
                    .find(|comparison| comparison.against == "plain cp")
                    .map(|comparison| comparison.ratio);
                measurement.target = Some(Target::at_most("≤ 1.1 × plain cp", ratio, 1.1));
            }
        }
    }
    let names: Vec<(usize, String)> = containers
        .iter()
        .enumerate()
        .filter_map(|(index, started)| started.as_ref().ok().map(|name| (index, name.clone())))
        .collect();
    for (index, name) in names {
        context.remove(index, &[name]);
    }
    let _ = fs_err::remove_dir_all(&directory);
    report
}

fn write_source(path: &Path, size: u64) -> std::io::Result<()> {
    let file = fs_err::File::create(path)?;
    let mut writer = std::io::BufWriter::with_capacity(1 << 20, file);
    std::io::copy(&mut MixedContent::new(0xc0b1, size), &mut writer)?;
    use std::io::Write;
    writer.flush()
}
