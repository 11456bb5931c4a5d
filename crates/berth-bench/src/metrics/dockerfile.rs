//! 10. Dockerfile builds (issue 18): the same two projects built by every
//!     engine, each round a clean build (`--no-cache`) and then a fully
//!     cached rebuild:
//!     - eight small RUN steps on busybox, where the builder's own cost is
//!       all there is;
//!     - a multi-stage build of a small C program: compiled in the suite's
//!       gcc image, copied into a busybox stage with ENV and WORKDIR; each
//!       round then changes one line of `hello.c` and times the rebuild
//!       (its COPY and every step after it run again, the steps before it
//!       come from the cache).
//!
//! Docker builds with BuildKit (`DOCKER_BUILDKIT=1`, through Debian's
//! docker.io CLI when it is there: it has BuildKit built in, a newer CLI
//! needs the buildx plugin).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::context::Context;
use crate::engine::Engine;
use crate::image::Images;
use crate::options::{EngineName, Metric};
use crate::process::run_ok;
use crate::report::{Measurement, MetricReport, Target, Unit};

const TIMEOUT: Duration = Duration::from_secs(900);
const TAG: &str = "berth-bench-dockerfile";

const SMALL_RUNS: &str = "ARG BUSYBOX\nFROM ${BUSYBOX}\n\
RUN echo 1 > /f1\nRUN echo 2 > /f2\nRUN echo 3 > /f3\nRUN echo 4 > /f4\n\
RUN echo 5 > /f5\nRUN echo 6 > /f6\nRUN echo 7 > /f7\nRUN echo 8 > /f8\n";

const C_PROJECT: &str = "ARG GCC\nARG BUSYBOX\nFROM ${GCC} AS build\nWORKDIR /src\n\
COPY hello.c .\nRUN gcc-12 -O2 -static -o /hello hello.c\n\
FROM ${BUSYBOX}\nENV GREETING=hello\nWORKDIR /app\nCOPY --from=build /hello /app/hello\n\
CMD [\"/app/hello\"]\n";

const HELLO_C: &str = "#include <stdio.h>\n#include <stdlib.h>\n\
int main(void) { const char *g = getenv(\"GREETING\"); printf(\"%s from a build\\n\", g ? g : \"hi\"); return 0; }\n";

/// One engine's samples of one project: clean builds, cached ones, and
/// rebuilds after a one-file change.
type Samples = [Result<Vec<f64>, String>; 3];

struct Project {
    name: &'static str,
    directory: PathBuf,
    needs_gcc: bool,
    /// The COPY source a round changes before the third build.
    changed_file: Option<&'static str>,
}

/// `hello.c` with a line that differs in each `round` and engine, so every
/// changed build misses the cache at its COPY.
fn changed_source(round: usize, engine: &str) -> String {
    format!("{HELLO_C}/* change {round} for {engine} */\n")
}

/// `ENGINE build` for this metric: Docker's with BuildKit.
fn build_command(engine: &Engine, args: &[String]) -> Command {
    let mut command = if engine.name == EngineName::Docker && Path::new("/usr/bin/docker").exists()
    {
        engine.command_with_program("/usr/bin/docker", args)
    } else {
        engine.command(args)
    };
    if engine.name == EngineName::Docker {
        command.env("DOCKER_BUILDKIT", "1");
    }
    command
}

/// One build's wall time; the id it printed (`-q`) goes to `built`, for
/// the removal at the end.
fn timed_build(
    engine: &Engine,
    project: &Project,
    args: &[String],
    built: &mut Vec<String>,
) -> Result<f64, String> {
    let mut all = vec!["build".to_owned(), "-q".to_owned()];
    all.extend(args.iter().cloned());
    all.extend(["-t".to_owned(), TAG.to_owned()]);
    all.push(project.directory.display().to_string());
    let mut command = build_command(engine, &all);
    let started = Instant::now();
    let finished = run_ok(&mut command, TIMEOUT)
        .map_err(|error| format!("{} build failed: {error}", engine.label()))?;
    let seconds = started.elapsed().as_secs_f64();
    let id = String::from_utf8_lossy(&finished.stdout).trim().to_owned();
    if !id.is_empty() {
        built.push(id);
    }
    Ok(seconds)
}

fn write_projects(directory: &Path) -> std::io::Result<Vec<Project>> {
    let small = directory.join("small-runs");
    fs_err::create_dir_all(&small)?;
    fs_err::write(small.join("Dockerfile"), SMALL_RUNS)?;
    let c = directory.join("c-program");
    fs_err::create_dir_all(&c)?;
    fs_err::write(c.join("Dockerfile"), C_PROJECT)?;
    fs_err::write(c.join("hello.c"), HELLO_C)?;
    Ok(vec![
        Project {
            name: "8 small RUN steps (busybox)",
            directory: small,
            needs_gcc: false,
            changed_file: None,
        },
        Project {
            name: "multi-stage C program (gcc-12 stage, busybox stage)",
            directory: c,
            needs_gcc: true,
            changed_file: Some("hello.c"),
        },
    ])
}

pub fn run(context: &mut Context) -> MetricReport {
    let plan = context.plan.clone();
    let mut report = MetricReport::new(
        Metric::Dockerfile.id(),
        Metric::Dockerfile.title(),
        format!(
            "Two projects, each built by every engine `{} round(s)` interleaved: a clean \
             `build --no-cache -q`, a fully cached `build -q` of the same context, and (the \
             C project) a `build -q` after one line of its COPY source changed. \
             Docker builds with BuildKit (DOCKER_BUILDKIT=1; /usr/bin/docker, Debian's \
             docker.io CLI with BuildKit built in, when present). Wall time of the CLI.",
            plan.build_runs
        ),
    );
    let directory = match context.scratch_dir("dockerfile") {
        Ok(directory) => directory,
        Err(why) => {
            report.skipped = Some(why);
            return report;
        }
    };
    let projects = match write_projects(&directory) {
        Ok(projects) => projects,
        Err(error) => {
            report.skipped = Some(format!("failed to write the projects: {error}"));
            return report;
        }
    };
    // Per engine: its base images' references, or why it cannot build.
    let mut bases: Vec<Result<(String, Option<String>), String>> = Vec::new();
    for index in 0..context.engines.len() {
        let engine = context.engines[index].clone();
        context.log(format!(
            "dockerfile: {} (loading busybox and gcc)",
            engine.label()
        ));
        let busybox = context.images.ready(&engine, Images::busybox);
        let gcc = context.images.ready(&engine, Images::gcc).ok();
        bases.push(busybox.map(|image| (image.reference, gcc.map(|gcc| gcc.reference))));
    }
    let mut samples: Vec<Vec<Samples>> = projects
        .iter()
        .map(|_| {
            bases
                .iter()
                .map(|base| match base {
                    Ok(_) => [Ok(Vec::new()), Ok(Vec::new()), Ok(Vec::new())],
                    Err(why) => [Err(why.clone()), Err(why.clone()), Err(why.clone())],
                })
                .collect()
        })
        .collect();
    let mut built: Vec<Vec<String>> = vec![Vec::new(); context.engines.len()];
    for round in 0..plan.build_runs {
        for (which, project) in projects.iter().enumerate() {
            for (index, base) in bases.iter().enumerate() {
                let Ok((busybox, gcc)) = base else {
                    continue;
                };
                let engine = &context.engines[index];
                let mut args = vec!["--build-arg".to_owned(), format!("BUSYBOX={busybox}")];
                if project.needs_gcc {
                    match gcc {
                        Some(gcc) => args.extend(["--build-arg".to_owned(), format!("GCC={gcc}")]),
                        None => {
                            let why = "no gcc image for this engine".to_owned();
                            samples[which][index] = [Err(why.clone()), Err(why.clone()), Err(why)];
                            continue;
                        }
                    }
                }
                context.log(format!(
                    "dockerfile: {}, {}, round {}",
                    engine.label(),
                    project.name,
                    round + 1
                ));
                let mut clean_args = args.clone();
                clean_args.push("--no-cache".to_owned());
                let built = &mut built[index];
                let clean = timed_build(engine, project, &clean_args, built);
                let cached = clean
                    .as_ref()
                    .map_err(Clone::clone)
                    .and_then(|_| timed_build(engine, project, &args, built));
                let changed = match project.changed_file {
                    None => Err("no COPY source to change".to_owned()),
                    Some(file) => cached.as_ref().map_err(Clone::clone).and_then(|_| {
                        fs_err::write(
                            project.directory.join(file),
                            changed_source(round, engine.label()),
                        )
                        .map_err(|error| format!("failed to change {file}: {error}"))?;
                        timed_build(engine, project, &args, built)
                    }),
                };
                for (slot, result) in samples[which][index]
                    .iter_mut()
                    .zip([clean, cached, changed])
                {
                    match (slot.as_mut(), result) {
                        (Ok(list), Ok(seconds)) => list.push(seconds),
                        (Ok(_), Err(why)) => *slot = Err(why),
                        (Err(_), _) => {}
                    }
                }
            }
        }
    }
    // What the builds made goes: the tag, and every image a build printed
    // (a --no-cache round's earlier final images are untagged, and their
    // steps go with them), so the engines keep nothing of the run.
    for (engine, built) in context.engines.iter().zip(&built) {
        let _ = engine.run(["rmi", TAG]);
        let mut ids = built.clone();
        ids.sort();
        ids.dedup();
        for id in ids.iter().rev() {
            let _ = engine.run(["rmi", "-f", id.as_str()]);
        }
    }
    for (which, project) in projects.iter().enumerate() {
        let names = [
            format!("{}, clean build (--no-cache)", project.name),
            format!("{}, fully cached rebuild", project.name),
            format!("{}, rebuild after a one-file change", project.name),
        ];
        let kinds = if project.changed_file.is_some() { 3 } else { 2 };
        for (index, engine) in context.engines.iter().enumerate() {
            for (kind, name) in names.iter().enumerate().take(kinds) {
                let result = samples[which][index][kind].clone();
                report.measurements.push(Measurement::from_result(
                    name,
                    engine.label(),
                    Unit::Seconds,
                    result,
                ));
            }
        }
        if context
            .engines
            .iter()
            .any(|engine| engine.name == EngineName::Docker)
        {
            for name in names.iter().take(kinds) {
                report.compare_with(name, "docker", "docker (BuildKit)");
            }
        }
        for measurement in &mut report.measurements {
            if measurement.engine == "berth" && measurement.name == names[1] {
                measurement.target = Some(Target::at_most(
                    "fully cached ≤ 100 ms median",
                    measurement.median(),
                    0.100,
                ));
            }
        }
    }
    let _ = fs_err::remove_dir_all(&directory);
    report
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_projects_are_written_with_their_dockerfiles() {
        let directory = tempfile::tempdir().unwrap();
        let projects = write_projects(directory.path()).unwrap();
        assert_eq!(projects.len(), 2);
        let small = fs_err::read_to_string(projects[0].directory.join("Dockerfile")).unwrap();
        assert_eq!(small.matches("\nRUN ").count(), 8);
        assert!(projects[1].directory.join("hello.c").exists());
        assert!(projects[1].needs_gcc && !projects[0].needs_gcc);
        assert_eq!(projects[1].changed_file, Some("hello.c"));
        assert!(C_PROJECT.contains("COPY hello.c ."));
        let (one, other) = (changed_source(0, "berth"), changed_source(1, "berth"));
        assert!(one.starts_with(HELLO_C) && one != other && one != HELLO_C);
    }
}
