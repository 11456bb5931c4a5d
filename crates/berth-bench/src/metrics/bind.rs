//! 4. Bind-mount throughput: busybox `dd` writes a file (bs=1M,
//!    conv=fsync) into a host directory and reads it back (page cache warm),
//!    in a container with the directory bind-mounted and on the host with
//!    the same busybox binary. Timed inside, between microsecond stamps.
//!    berth's VM containers (`--isolation=vm`) reach the directory over
//!    virtio-fs (virtiofsd, `--cache=auto`): their rows measure that.

use std::time::Duration;

use crate::context::{host_script, run_timed, timed_script, Context};
use crate::image::Images;
use crate::options::Metric;
use crate::report::{Measurement, MetricReport, Unit};
use crate::vm::skip_reason;

const TIMEOUT: Duration = Duration::from_secs(900);

fn steps(file: &str, megabytes: u64) -> Vec<String> {
    vec![
        format!("$B dd if=/dev/zero of={file} bs=1M count={megabytes} conv=fsync 2>/dev/null"),
        format!("$B dd if={file} of=/dev/null bs=1M 2>/dev/null"),
        format!("$B rm -f {file}"),
    ]
}

pub fn run(context: &mut Context) -> MetricReport {
    let plan = context.plan.clone();
    let megabytes = plan.bind_bytes >> 20;
    let bytes = (megabytes << 20) as f64;
    let write = format!("bind-mount write, {megabytes} MiB, conv=fsync");
    let read = format!("bind-mount read, {megabytes} MiB, page cache");
    let mut report = MetricReport::new(
        Metric::Bind.id(),
        Metric::Bind.title(),
        format!(
            "busybox `dd bs=1M count={megabytes} conv=fsync` into a file in a host directory, \
             then `dd` of that file to /dev/null; inside `ENGINE run --rm -v DIR:/mnt` and on \
             the host (same busybox binary). Bytes ÷ the time between microsecond stamps \
             (`busybox ts`) around each dd, {} run(s). berth-vm: the same container \
             with `--isolation=vm`, the directory shared over virtio-fs.",
            plan.bind_runs
        ),
    );
    let directory = match context.scratch_dir("bind") {
        Ok(directory) => directory,
        Err(why) => {
            report.skipped = Some(why);
            return report;
        }
    };
    let busybox = match context.images.busybox_binary() {
        Ok(path) => path,
        Err(why) => {
            report.skipped = Some(why);
            return report;
        }
    };
    let to_rates = |result: Result<Vec<Vec<f64>>, String>| -> (Result<Vec<f64>, String>, Result<Vec<f64>, String>) {
        match result {
            Ok(rounds) => (
                Ok(rounds.iter().map(|steps| bytes / steps[0]).collect()),
                Ok(rounds.iter().map(|steps| bytes / steps[1]).collect()),
            ),
            Err(why) => (Err(why.clone()), Err(why)),
        }
    };

    context.log("bind: host");
    let host_file = directory.join("host-file").display().to_string();
    let script = timed_script(
        &busybox.display().to_string(),
        &steps(&host_file, megabytes),
    );
    let host: Result<Vec<Vec<f64>>, String> = (0..plan.bind_runs)
        .map(|_| run_timed(&mut host_script(&busybox, &script), 3, TIMEOUT))
        .collect();
    let (host_write, host_read) = to_rates(host);
    report.measurements.push(Measurement::from_result(
        &write,
        "host",
        Unit::BytesPerSecond,
        host_write,
    ));
    report.measurements.push(Measurement::from_result(
        &read,
        "host",
        Unit::BytesPerSecond,
        host_read,
    ));

    for index in 0..context.engines.len() {
        let engine = context.engines[index].clone();
        let mut variants: Vec<(String, Result<Vec<&str>, String>)> =
            vec![(engine.label().to_owned(), Ok(Vec::new()))];
        if engine.is_berth() {
            variants.push(match &context.vm {
                Ok(support) => (support.label.clone(), Ok(vec!["--isolation=vm"])),
                Err(why) => ("berth-vm".to_owned(), Err(skip_reason(why))),
            });
        }
        for (label, extra) in variants {
            context.log(format!("bind: {label}"));
            let file = format!("/mnt/file-{}", engine.label());
            let result = extra.and_then(|extra| {
                let image = context.images.ready(&engine, Images::busybox)?;
                let script = timed_script("/bin/busybox", &steps(&file, megabytes));
                let volume = format!("{}:/mnt", directory.display());
                (0..plan.bind_runs)
                    .map(|_| {
                        let mut command = engine.command(["run", "--rm"]);
                        command.args(&extra).args([
                            "--network",
                            "none",
                            "-v",
                            &volume,
                            &image.reference,
                            "sh",
                            "-c",
                            &script,
                        ]);
                        run_timed(&mut command, 3, TIMEOUT)
                    })
                    .collect()
            });
            let (engine_write, engine_read) = to_rates(result);
            report.measurements.push(Measurement::from_result(
                &write,
                label.as_str(),
                Unit::BytesPerSecond,
                engine_write,
            ));
            report.measurements.push(Measurement::from_result(
                &read,
                label.as_str(),
                Unit::BytesPerSecond,
                engine_read,
            ));
        }
    }
    for name in [&write, &read] {
        report.compare_with(name, "host", "host");
    }
    let _ = fs_err::remove_dir_all(&directory);
    report
}
