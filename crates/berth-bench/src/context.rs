//! What every metric needs: the plan, the engines, the images, a scratch
//! directory for this run, and names for the containers it starts (removed
//! again at the end, whatever happened).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::engine::Engine;
use crate::image::Images;
use crate::options::{BenchOptions, Plan};
use crate::process::{run, ProcessError};
use crate::vm::VmSupport;

pub struct Context {
    pub plan: Plan,
    pub engines: Vec<Engine>,
    pub images: Images,
    /// Removed when the run ends.
    pub scratch: PathBuf,
    /// Prefix of every container and network name of this run.
    pub tag: String,
    /// Whether berth's VM containers can be measured here, or why not.
    pub vm: Result<VmSupport, String>,
    started: Vec<(usize, String)>,
}

impl Context {
    pub fn new(
        options: &BenchOptions,
        engines: Vec<Engine>,
        vm: Result<VmSupport, String>,
        scratch: PathBuf,
    ) -> Self {
        Self {
            vm,
            plan: options.plan(),
            images: Images::new(&options.work_dir),
            engines,
            scratch,
            tag: format!("berth-bench-{}", std::process::id()),
            started: Vec::new(),
        }
    }

    pub fn log(&self, text: impl AsRef<str>) {
        eprintln!("bench: {}", text.as_ref());
    }

    /// A container name of this run, remembered for the final cleanup.
    pub fn container_name(&mut self, engine: usize, what: &str) -> String {
        let name = format!("{}-{what}", self.tag);
        self.started.push((engine, name.clone()));
        name
    }

    /// Removes the named containers now (and forgets them).
    pub fn remove(&mut self, engine: usize, names: &[String]) {
        self.engines[engine].remove_containers(names);
        self.started
            .retain(|(index, name)| !(*index == engine && names.contains(name)));
    }

    /// Removes every container this run started and still remembers.
    pub fn cleanup(&mut self) {
        let started = std::mem::take(&mut self.started);
        for (index, engine) in self.engines.iter().enumerate() {
            let names: Vec<String> = started
                .iter()
                .filter(|(owner, _)| *owner == index)
                .map(|(_, name)| name.clone())
                .collect();
            engine.remove_containers(&names);
        }
    }

    /// A fresh directory under the scratch directory.
    pub fn scratch_dir(&self, name: &str) -> Result<PathBuf, String> {
        let path = self.scratch.join(name);
        if path.exists() {
            let _ = fs_err::remove_dir_all(&path);
        }
        fs_err::create_dir_all(&path).map_err(|error| error.to_string())?;
        // Containers may run as other users; the bench files are throw-away.
        let _ = fs_err::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o777));
        Ok(path)
    }
}

/// Runs `one` `warmup` times unrecorded, then `runs` times; the first
/// failure ends the series with its reason.
pub fn series(
    runs: usize,
    warmup: usize,
    mut one: impl FnMut() -> Result<f64, String>,
) -> Result<Vec<f64>, String> {
    for _ in 0..warmup {
        one()?;
    }
    (0..runs).map(|_| one()).collect()
}

pub fn reason(error: ProcessError) -> String {
    crate::image::chain(&error)
}

/// Flushes dirty pages so one copy's writeback does not land in the next
/// measurement.
pub fn sync_disks() {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
}

/// A shell script (for busybox sh) that runs `steps` one after the other and
/// prints a microsecond timestamp (busybox `ts %.s`) between them, so the
/// time of a step is measured inside the container, without the engine's
/// start-up. `busybox` is the busybox path where the script runs. A step
/// that fails prints `FAILED <n>`.
pub fn timed_script(busybox: &str, steps: &[String]) -> String {
    let mut body = String::from("echo @0");
    for (index, step) in steps.iter().enumerate() {
        body.push_str(&format!(
            "; {{ {step} ; }} >/dev/null || echo FAILED {index}; echo @{}",
            index + 1
        ));
    }
    format!("B={busybox}; ( {body} ) | $B ts %.s")
}

/// The duration of each step from a [`timed_script`]'s output.
pub fn parse_timed(output: &str, steps: usize) -> Result<Vec<f64>, String> {
    let mut marks: Vec<Option<f64>> = vec![None; steps + 1];
    for line in output.lines() {
        let mut fields = line.split_whitespace();
        let (Some(stamp), Some(mark)) = (fields.next(), fields.next()) else {
            continue;
        };
        if mark == "FAILED" {
            return Err(format!("step {} failed", fields.next().unwrap_or("?")));
        }
        let (Some(index), Ok(stamp)) = (
            mark.strip_prefix('@')
                .and_then(|index| index.parse::<usize>().ok()),
            stamp.parse::<f64>(),
        ) else {
            continue;
        };
        if index <= steps {
            marks[index] = Some(stamp);
        }
    }
    let marks: Vec<f64> = marks
        .into_iter()
        .collect::<Option<Vec<f64>>>()
        .ok_or_else(|| format!("no timestamps in the output: {:?}", output.trim()))?;
    Ok(marks.windows(2).map(|pair| pair[1] - pair[0]).collect())
}

/// Wall and CPU time (user + system, the process and its waited-for
/// children) of one step of a [`usage_script`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepUsage {
    pub wall: f64,
    pub cpu: f64,
}

/// A busybox sh script that runs each step under busybox `time`, which
/// reports wall, user and system seconds (10 ms resolution) from the
/// step's rusage. CPU time is what a step costs even on a busy machine,
/// where the wait for a CPU inflates wall time. `temporary` is a file the
/// script may write. A step that fails prints `FAILED <n>`.
pub fn usage_script(busybox: &str, temporary: &str, steps: &[String]) -> String {
    let mut script = format!("B={busybox}; T={temporary}");
    for (index, step) in steps.iter().enumerate() {
        script.push_str(&format!(
            "; {{ $B time -o $T -f '@{index} %e %U %S' {step} ; }} >/dev/null 2>&1 \
             || echo FAILED {index}; $B cat $T"
        ));
    }
    script.push_str("; $B rm -f $T");
    script
}

/// The usage of each step from a [`usage_script`]'s output.
pub fn parse_usage(output: &str, steps: usize) -> Result<Vec<StepUsage>, String> {
    let mut usages: Vec<Option<StepUsage>> = vec![None; steps];
    for line in output.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.first() == Some(&"FAILED") {
            return Err(format!("step {} failed", fields.get(1).unwrap_or(&"?")));
        }
        let [mark, wall, user, system] = fields[..] else {
            continue;
        };
        let index = mark
            .strip_prefix('@')
            .and_then(|index| index.parse::<usize>().ok());
        let numbers = (
            wall.parse::<f64>(),
            user.parse::<f64>(),
            system.parse::<f64>(),
        );
        if let (Some(index), (Ok(wall), Ok(user), Ok(system))) = (index, numbers) {
            if index < steps {
                usages[index] = Some(StepUsage {
                    wall,
                    cpu: user + system,
                });
            }
        }
    }
    usages
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| format!("no usage lines in the output: {:?}", output.trim()))
}

/// Runs `command` (a usage script) and returns each step's usage.
pub fn run_usage(
    command: &mut Command,
    steps: usize,
    timeout: Duration,
) -> Result<Vec<StepUsage>, String> {
    let finished = run(command, timeout)
        .and_then(|finished| finished.check())
        .map_err(reason)?;
    parse_usage(&finished.stdout(), steps).map_err(|error| {
        let stderr = String::from_utf8_lossy(&finished.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
        format!(
            "{error} ({})",
            tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
        )
    })
}

/// Runs a timed script with busybox sh on the host.
pub fn host_script(busybox: &Path, script: &str) -> Command {
    let mut command = Command::new(busybox);
    command.args(["sh", "-c", script]);
    command
}

/// Runs `command` (a timed script) and returns the step durations.
pub fn run_timed(
    command: &mut Command,
    steps: usize,
    timeout: Duration,
) -> Result<Vec<f64>, String> {
    let finished = run(command, timeout)
        .and_then(|finished| finished.check())
        .map_err(reason)?;
    let stdout = finished.stdout();
    parse_timed(&stdout, steps).map_err(|error| {
        let stderr = String::from_utf8_lossy(&finished.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
        format!(
            "{error} ({})",
            tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timed_output_gives_step_durations() {
        let output = "1796026631.100000 @0\n1796026632.350000 @1\n1796026632.400000 @2\n";
        let durations = parse_timed(output, 2).unwrap();
        assert!((durations[0] - 1.25).abs() < 1e-6);
        assert!((durations[1] - 0.05).abs() < 1e-6);
        assert!(parse_timed("1.0 @0\n", 1)
            .unwrap_err()
            .contains("no timestamps"));
        let failed = "1.0 @0\n1.1 FAILED 0\n1.2 @1\n";
        assert_eq!(parse_timed(failed, 1).unwrap_err(), "step 0 failed");
    }

    #[test]
    fn timed_scripts_run_under_busybox() {
        let Some(busybox) = ["/bin/busybox", "/usr/bin/busybox"]
            .into_iter()
            .map(Path::new)
            .find(|path| path.exists())
        else {
            println!("skipped: no busybox on this host");
            return;
        };
        let script = timed_script(
            &busybox.display().to_string(),
            &["$B sleep 0.2".to_owned(), "$B true".to_owned()],
        );
        let durations = run_timed(
            &mut host_script(busybox, &script),
            2,
            Duration::from_secs(10),
        )
        .unwrap();
        assert!(durations[0] >= 0.19 && durations[0] < 2.0, "{durations:?}");
        assert!(durations[1] < 0.5, "{durations:?}");
        let failing = timed_script(&busybox.display().to_string(), &["$B false".to_owned()]);
        let error = run_timed(
            &mut host_script(busybox, &failing),
            1,
            Duration::from_secs(10),
        )
        .unwrap_err();
        assert!(error.starts_with("step 0 failed"), "{error}");
    }

    #[test]
    fn usage_output_gives_wall_and_cpu_time() {
        let output = "@0 2.31 2.10 0.20\n@1 1.50 1.49 0.00\n";
        let usages = parse_usage(output, 2).unwrap();
        assert!((usages[0].wall - 2.31).abs() < 1e-9);
        assert!((usages[0].cpu - 2.30).abs() < 1e-9);
        assert!((usages[1].cpu - 1.49).abs() < 1e-9);
        assert_eq!(
            parse_usage("FAILED 1\n@0 1 1 0\n", 2).unwrap_err(),
            "step 1 failed"
        );
        assert!(parse_usage("@0 1 1 0\n", 2).is_err());
    }

    #[test]
    fn usage_scripts_run_under_busybox() {
        let Some(busybox) = ["/bin/busybox", "/usr/bin/busybox"]
            .into_iter()
            .map(Path::new)
            .find(|path| path.exists())
        else {
            println!("skipped: no busybox on this host");
            return;
        };
        let directory = tempfile::tempdir().unwrap();
        let temporary = directory.path().join("time").display().to_string();
        let busybox_text = busybox.display().to_string();
        let script = usage_script(
            &busybox_text,
            &temporary,
            &[
                "$B sleep 0.2".to_owned(),
                "$B awk 'BEGIN { for (i = 0; i < 200000; i++) s += i; print s }'".to_owned(),
            ],
        );
        let usages = run_usage(
            &mut host_script(busybox, &script),
            2,
            Duration::from_secs(20),
        )
        .unwrap();
        assert!(usages[0].wall >= 0.19 && usages[0].cpu < 0.1, "{usages:?}");
        assert!(usages[1].cpu > 0.0, "{usages:?}");
        let failing = usage_script(&busybox_text, &temporary, &["$B false".to_owned()]);
        let error = run_usage(
            &mut host_script(busybox, &failing),
            1,
            Duration::from_secs(10),
        )
        .unwrap_err();
        assert!(error.starts_with("step 0 failed"), "{error}");
    }

    #[test]
    fn series_stops_at_the_first_failure() {
        let mut calls = 0;
        let samples = series(3, 2, || {
            calls += 1;
            Ok(calls as f64)
        })
        .unwrap();
        assert_eq!(samples, vec![3.0, 4.0, 5.0]);
        let failed = series(3, 0, || Err::<f64, _>("boom".to_owned()));
        assert_eq!(failed.unwrap_err(), "boom");
    }
}
