//! 8. Cold pull from a local registry, as scripts/bench-pull.sh: an image of
//!    busybox plus seeded random data layers (gzip) pushed once into a
//!    private `docker-registry` on 127.0.0.1, then pulled by each engine
//!    after the image was removed from it (checked gone), `sync` before
//!    every pull, rounds interleaved across engines.

use std::time::Duration;

use crate::context::{reason, sync_disks, Context};
use crate::engine::Engine;
use crate::image::Images;
use crate::options::{EngineName, Metric};
use crate::process::run_ok;
use crate::registry::{binary, LocalRegistry};
use crate::report::{format_value, Measurement, MetricReport, Unit};

const TIMEOUT: Duration = Duration::from_secs(1200);

/// Removes `references` from `engine` and says whether none is left.
fn remove(engine: &Engine, references: &[&str]) -> bool {
    for reference in references {
        if Images::engine_image_id(engine, reference).is_some() {
            let _ = engine.run(["rmi", "-f", reference]);
        }
    }
    references
        .iter()
        .all(|reference| Images::engine_image_id(engine, reference).is_none())
}

fn pull_args(engine: &Engine, remote: &str) -> Vec<String> {
    let mut args = vec!["pull".to_owned(), "-q".to_owned()];
    if engine.name == EngineName::Podman {
        args.push("--tls-verify=false".to_owned());
    }
    args.push(remote.to_owned());
    args
}

pub fn run(context: &mut Context) -> MetricReport {
    let plan = context.plan.clone();
    let Some(program) = binary() else {
        return MetricReport::skipped(
            Metric::Pull.id(),
            Metric::Pull.title(),
            "docker-registry is not installed (apt-get install docker-registry)",
        );
    };
    let mut report = MetricReport::new(
        Metric::Pull.id(),
        Metric::Pull.title(),
        format!(
            "`ENGINE pull -q 127.0.0.1:PORT/berth-bench/pull:…` of a {}-layer image (busybox \
             plus seeded random data, gzip) from Debian's docker-registry on 127.0.0.1, after \
             `rmi` of the image (checked gone); wall time of the pull, pulled image id \
             checked; {} interleaved round(s).",
            plan.pull_layers, plan.pull_runs
        ),
    );
    context.log("pull: building the image");
    let image = match context.images.pull(plan.pull_layers, plan.pull_bytes) {
        Ok(image) => image,
        Err(why) => {
            report.skipped = Some(why);
            return report;
        }
    };
    let size = fs_err::metadata(&image.archive)
        .map(|metadata| metadata.len())
        .unwrap_or(0);
    let registry = match LocalRegistry::start(&program, &context.scratch) {
        Ok(registry) => registry,
        Err(why) => {
            report.skipped = Some(why);
            return report;
        }
    };
    report.fact(
        "registry",
        "server",
        format!(
            "docker-registry {} on {}",
            registry.version,
            registry.host()
        ),
    );
    report.fact(
        "image",
        "size",
        format!(
            "{} layers, {} compressed (archive)",
            plan.pull_layers,
            format_value(Unit::Bytes, size as f64)
        ),
    );
    let path = image.reference.trim_start_matches("berth-bench/");
    let remote = format!("{}/berth-bench/{path}", registry.host());
    let measurement_name = format!(
        "cold pull, {} layers, {}",
        plan.pull_layers,
        format_value(Unit::Bytes, size as f64)
    );

    // Push once, with berth when it is measured (else the first engine).
    let pusher = context
        .engines
        .iter()
        .position(|engine| engine.is_berth())
        .unwrap_or(0);
    let engine = context.engines[pusher].clone();
    context.log(format!("pull: pushing with {}", engine.label()));
    let pushed = context
        .images
        .load(&engine, &image)
        .and_then(|()| {
            engine
                .run(["tag", &image.reference, &remote])
                .map_err(reason)
        })
        .and_then(|_| run_ok(&mut engine.command(["push", &remote]), TIMEOUT).map_err(reason));
    if let Err(why) = pushed {
        report.skipped = Some(format!("the push to the local registry failed: {why}"));
        return report;
    }
    context.images.forget(&engine, &image);

    let mut results: Vec<Result<Vec<f64>, String>> = vec![Ok(Vec::new()); context.engines.len()];
    for round in 0..plan.pull_runs {
        for (index, engine) in context.engines.iter().enumerate() {
            if results[index].is_err() {
                continue;
            }
            context.log(format!("pull: {}, round {}", engine.label(), round + 1));
            let sample = if !remove(engine, &[&remote, &image.reference]) {
                Err("the image could not be removed before the pull".to_owned())
            } else {
                sync_disks();
                run_ok(&mut engine.command(pull_args(engine, &remote)), TIMEOUT)
                    .map_err(reason)
                    .and_then(|finished| {
                        let id = Images::engine_image_id(engine, &remote);
                        if id.as_deref() == Some(image.id.as_str()) {
                            Ok(finished.elapsed.as_secs_f64())
                        } else {
                            Err(format!("pulled image id {id:?}, expected {}", image.id))
                        }
                    })
            };
            match sample {
                Ok(seconds) => {
                    if let Ok(samples) = &mut results[index] {
                        samples.push(seconds);
                    }
                }
                Err(why) => results[index] = Err(why),
            }
        }
    }
    for (index, engine) in context.engines.iter().enumerate() {
        remove(engine, &[&remote, &image.reference]);
        context.images.forget(engine, &image);
        report.measurements.push(Measurement::from_result(
            &measurement_name,
            engine.label(),
            Unit::Seconds,
            results[index].clone(),
        ));
    }
    report.compare_with(&measurement_name, "berth", "berth");
    drop(registry);
    report
}
