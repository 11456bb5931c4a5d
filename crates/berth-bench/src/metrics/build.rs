//! 5. A C build over a bind mount: a real C code base (zstd's library as
//!    vendored by the zstd-sys crate, else SQLite's amalgamation from
//!    libsqlite3-sys, both in the local cargo registry) compiled with gcc-12
//!    in parallel, sources and objects on a bind mount, in a container of
//!    the suite's gcc image and on the host with the host's gcc-12 (the same
//!    Debian package version when the host is Debian 12).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::context::{host_script, run_usage, usage_script, Context, StepUsage};
use crate::image::Images;
use crate::options::Metric;
use crate::process::which;
use crate::report::{Measurement, MetricReport, Unit};

const TIMEOUT: Duration = Duration::from_secs(3600);

/// A C code base found on this machine.
#[derive(Debug)]
struct Source {
    description: String,
    /// Copied into the build directory as `src`.
    directory: PathBuf,
    /// Relative to `directory`, with their sizes.
    files: Vec<(String, u64)>,
    flags: Vec<&'static str>,
}

fn cargo_registries() -> Vec<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))
        .unwrap_or_else(|| PathBuf::from("/root/.cargo"));
    let mut found: Vec<PathBuf> = fs_err::read_dir(home.join("registry/src"))
        .map(|entries| entries.flatten().map(|entry| entry.path()).collect())
        .unwrap_or_default();
    found.sort();
    found
}

/// The newest `<prefix>*` crate directory in the local registries.
fn newest_crate(prefix: &str) -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = cargo_registries()
        .iter()
        .flat_map(|registry| {
            fs_err::read_dir(registry)
                .map(|entries| {
                    entries
                        .flatten()
                        .map(|entry| entry.path())
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with(prefix))
        })
        .collect();
    candidates.sort();
    candidates.pop()
}

fn c_files(root: &Path, directories: &[&str]) -> Vec<(String, u64)> {
    let mut files = Vec::new();
    for directory in directories {
        let Ok(entries) = fs_err::read_dir(root.join(directory)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".c") {
                let size = entry.metadata().map(|metadata| metadata.len()).unwrap_or(0);
                files.push((format!("{directory}/{name}"), size));
            }
        }
    }
    files.sort();
    files
}

fn find_source(quick: bool) -> Result<Source, String> {
    if let Some(krate) = newest_crate("zstd-sys-") {
        let directory = krate.join("zstd/lib");
        let parts: &[&str] = if quick {
            &["common"]
        } else {
            &["common", "compress", "decompress", "dictBuilder"]
        };
        let files = c_files(&directory, parts);
        if !files.is_empty() {
            let version = krate
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            return Ok(Source {
                description: format!("zstd library ({version}: lib/{{{}}})", parts.join(",")),
                directory,
                files,
                flags: vec!["-O2", "-pipe", "-DZSTD_DISABLE_ASM", "-I.", "-Icommon"],
            });
        }
    }
    if let Some(krate) = newest_crate("libsqlite3-sys-") {
        let directory = krate.join("sqlite3");
        let size = fs_err::metadata(directory.join("sqlite3.c"))
            .map(|metadata| metadata.len())
            .unwrap_or(0);
        if size > 0 {
            return Ok(Source {
                description: "SQLite amalgamation (libsqlite3-sys)".to_owned(),
                directory,
                files: vec![("sqlite3.c".to_owned(), size)],
                flags: vec![
                    if quick { "-O0" } else { "-O2" },
                    "-pipe",
                    "-DSQLITE_THREADSAFE=0",
                ],
            });
        }
    }
    Err(
        "no C code base found (the zstd-sys or libsqlite3-sys crate sources in ~/.cargo/registry)"
            .to_owned(),
    )
}

/// The build script: `jobs` shell jobs, files spread largest first onto the
/// least loaded job, then an archive of every object.
fn build_script(source: &Source, jobs: usize) -> String {
    let mut files = source.files.clone();
    files.sort_by(|left, right| right.1.cmp(&left.1).then(left.0.cmp(&right.0)));
    let jobs = jobs.clamp(1, files.len().max(1));
    let mut groups: Vec<(u64, Vec<(usize, String)>)> = vec![(0, Vec::new()); jobs];
    for (number, (file, size)) in files.into_iter().enumerate() {
        if let Some(group) = groups.iter_mut().min_by_key(|group| group.0) {
            group.0 += size.max(1);
            group.1.push((number, file));
        }
    }
    let flags = source.flags.join(" ");
    let mut script = String::from(
        "# written by berth bench: sh build.sh SOURCE_DIR OUTPUT_DIR\nset -e\ncd \"$1\"\nout=\"$2\"\nmkdir -p \"$out\"\n",
    );
    for (job, (_, group)) in groups.iter().enumerate() {
        let commands: Vec<String> = group
            .iter()
            .map(|(number, file)| format!("gcc-12 {flags} -c {file} -o \"$out/o{number}.o\""))
            .collect();
        script.push_str(&format!("( {} ) & p{job}=$!\n", commands.join(" && ")));
    }
    for job in 0..groups.len() {
        script.push_str(&format!("wait $p{job}\n"));
    }
    // gcc's ar wrapper: under busybox sh a plain `ar` is busybox's applet.
    script.push_str("gcc-ar-12 rcs \"$out/libbench.a\" \"$out\"/*.o\n");
    script
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    fs_err::create_dir_all(to)?;
    for entry in fs_err::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            fs_err::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

fn check_output(directory: &Path) -> Result<(), String> {
    let library = directory.join("libbench.a");
    match fs_err::metadata(&library) {
        Ok(metadata) if metadata.len() > 0 => Ok(()),
        _ => Err(format!("the build left no {}", library.display())),
    }
}

pub fn run(context: &mut Context) -> MetricReport {
    let plan = context.plan.clone();
    let jobs = std::thread::available_parallelism()
        .map(usize::from)
        .unwrap_or(1);
    let source = match find_source(plan.quick) {
        Ok(source) => source,
        Err(why) => return MetricReport::skipped(Metric::Build.id(), Metric::Build.title(), why),
    };
    let name = format!(
        "{} C files, gcc-12 {}, {jobs} jobs",
        source.files.len(),
        source.flags.first().copied().unwrap_or("")
    );
    let mut report = MetricReport::new(
        Metric::Build.id(),
        Metric::Build.title(),
        format!(
            "{}: {} files compiled by `sh build.sh` ({jobs} parallel jobs, then `gcc-ar-12`), \
             sources and objects in a host directory: bind-mounted at /build in \
             `ENGINE run --rm berth-bench/gcc` (gcc-12, binutils, libc6-dev unpacked from \
             their Debian packages), and on the host with the host's gcc-12. Wall and CPU \
             time (user + system of the build and every compiler it ran, busybox `time`), \
             {} interleaved round(s).",
            source.description,
            source.files.len(),
            plan.build_runs
        ),
    );
    report.fact(
        "source",
        "code base",
        source.directory.display().to_string(),
    );
    let directory = match context.scratch_dir("build") {
        Ok(directory) => directory,
        Err(why) => {
            report.skipped = Some(why);
            return report;
        }
    };
    let source_directory = directory.join("src");
    if let Err(error) = copy_tree(&source.directory, &source_directory).and_then(|()| {
        fs_err::write(
            source_directory.join("build.sh"),
            build_script(&source, jobs),
        )
    }) {
        report.skipped = Some(format!("failed to copy the sources: {error}"));
        return report;
    }
    let busybox = match context.images.busybox_binary() {
        Ok(path) => path,
        Err(why) => {
            report.skipped = Some(why);
            return report;
        }
    };

    // Who builds: the host (with its own gcc-12) and every engine that has
    // the gcc image; rounds interleave them so a change in the machine's
    // load reaches all alike.
    let host_ready = if which("gcc-12").is_none() || which("gcc-ar-12").is_none() {
        Err("gcc-12 is not installed on the host (apt-get install gcc-12)".to_owned())
    } else {
        Ok(())
    };
    let mut builders: Vec<(String, Result<Option<String>, String>)> =
        vec![("host".to_owned(), host_ready.map(|()| None))];
    for index in 0..context.engines.len() {
        let engine = context.engines[index].clone();
        context.log(format!(
            "build: {} (building and loading the gcc image if needed)",
            engine.label()
        ));
        let image = context.images.ready(&engine, Images::gcc);
        builders.push((
            engine.label().to_owned(),
            image.map(|image| Some(image.reference)),
        ));
    }
    let busybox_text = busybox.display().to_string();
    let host_temporary = directory.join("time").display().to_string();
    let volume = format!("{}:/build", directory.display());
    let mut samples: Vec<Result<Vec<StepUsage>, String>> = builders
        .iter()
        .map(|(_, ready)| ready.clone().map(|_| Vec::new()))
        .collect();
    for round in 0..plan.build_runs {
        for (index, (label, ready)) in builders.iter().enumerate() {
            let (Ok(image), Ok(_)) = (ready, &samples[index]) else {
                continue;
            };
            context.log(format!("build: {label}, run {}", round + 1));
            let inside = format!("out-{label}-{round}");
            let out = directory.join(&inside);
            let mut command = match image {
                None => {
                    let step = format!(
                        "$B sh {source}/build.sh {source} {}",
                        out.display(),
                        source = source_directory.display()
                    );
                    host_script(
                        &busybox,
                        &usage_script(&busybox_text, &host_temporary, &[step]),
                    )
                }
                Some(reference) => {
                    let step = format!("$B sh /build/src/build.sh /build/src /build/{inside}");
                    let script = usage_script("/bin/busybox", "/tmp/berth-bench-time", &[step]);
                    context.engines[index - 1].command([
                        "run",
                        "--rm",
                        "--network",
                        "none",
                        "-v",
                        &volume,
                        reference,
                        "sh",
                        "-c",
                        &script,
                    ])
                }
            };
            let result = run_usage(&mut command, 1, TIMEOUT)
                .and_then(|steps| check_output(&out).map(|()| steps[0]));
            let _ = fs_err::remove_dir_all(&out);
            match result {
                Ok(usage) => {
                    if let Ok(list) = &mut samples[index] {
                        list.push(usage);
                    }
                }
                Err(why) => samples[index] = Err(why),
            }
        }
    }
    let wall_name = format!("{name} (wall time)");
    let cpu_name = format!("{name} (CPU time, user + system)");
    for ((label, _), result) in builders.iter().zip(samples) {
        let wall = result
            .clone()
            .map(|list| list.iter().map(|usage| usage.wall).collect());
        let cpu = result.map(|list| list.iter().map(|usage| usage.cpu).collect());
        report.measurements.push(Measurement::from_result(
            &wall_name,
            label.as_str(),
            Unit::Seconds,
            wall,
        ));
        report.measurements.push(Measurement::from_result(
            &cpu_name,
            label.as_str(),
            Unit::Seconds,
            cpu,
        ));
    }
    report.compare_with(&wall_name, "host", "host");
    report.compare_with(&cpu_name, "host", "host");
    let _ = fs_err::remove_dir_all(&directory);
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_scripts_balance_the_jobs() {
        let source = Source {
            description: "test".to_owned(),
            directory: PathBuf::from("/src"),
            files: vec![
                ("a.c".to_owned(), 100),
                ("b.c".to_owned(), 60),
                ("c.c".to_owned(), 50),
            ],
            flags: vec!["-O2", "-I."],
        };
        let script = build_script(&source, 2);
        assert!(script.contains("( gcc-12 -O2 -I. -c a.c -o \"$out/o0.o\" ) & p0=$!\n"));
        assert!(script.contains(
            "( gcc-12 -O2 -I. -c b.c -o \"$out/o1.o\" && gcc-12 -O2 -I. -c c.c -o \"$out/o2.o\" ) & p1=$!\n"
        ));
        assert!(script.contains("wait $p0\nwait $p1\ngcc-ar-12 rcs"));
        // More jobs than files: one job per file.
        assert_eq!(build_script(&source, 8).matches("& p").count(), 3);
    }
}
