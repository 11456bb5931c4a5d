//! What a bench run measures, resolved from the command line before anything
//! runs: engine names, metric names and sizes are checked here, and the
//! per-metric plan (runs, sizes, loop counts) is fixed for quick and full
//! runs.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// Default cache of built images, downloaded packages and test files.
pub const DEFAULT_WORK_DIR: &str = "/var/tmp/berth-bench";

#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    #[error("unknown engine {name:?} (known: berth, docker, podman)")]
    UnknownEngine { name: String },
    #[error("unknown metric {name:?} (known: {known})")]
    UnknownMetric { name: String, known: String },
    #[error("invalid size {text:?} (examples: 64M, 1G, 10G, 1048576)")]
    InvalidSize { text: String },
    #[error("--runs must be at least 1")]
    NoRuns,
}

/// An engine the suite knows how to drive through its CLI.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EngineName {
    Berth,
    Docker,
    Podman,
}

impl EngineName {
    pub const ALL: [EngineName; 3] = [EngineName::Berth, EngineName::Docker, EngineName::Podman];

    pub fn as_str(self) -> &'static str {
        match self {
            EngineName::Berth => "berth",
            EngineName::Docker => "docker",
            EngineName::Podman => "podman",
        }
    }
}

impl fmt::Display for EngineName {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl FromStr for EngineName {
    type Err = OptionsError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        EngineName::ALL
            .into_iter()
            .find(|name| name.as_str() == text.trim())
            .ok_or_else(|| OptionsError::UnknownEngine {
                name: text.to_owned(),
            })
    }
}

/// One benchmark of the suite (the numbering of the issue).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    Start,
    Memory,
    Copy,
    Bind,
    Build,
    Network,
    Seccomp,
    Pull,
    Binary,
    Dockerfile,
    Oci,
}

impl Metric {
    pub const ALL: [Metric; 11] = [
        Metric::Start,
        Metric::Memory,
        Metric::Copy,
        Metric::Bind,
        Metric::Build,
        Metric::Network,
        Metric::Seccomp,
        Metric::Pull,
        Metric::Binary,
        Metric::Dockerfile,
        Metric::Oci,
    ];

    /// The name used by `--metrics` and in the JSON report.
    pub fn id(self) -> &'static str {
        match self {
            Metric::Start => "start",
            Metric::Memory => "memory",
            Metric::Copy => "cp",
            Metric::Bind => "bind",
            Metric::Build => "build",
            Metric::Network => "network",
            Metric::Seccomp => "seccomp",
            Metric::Pull => "pull",
            Metric::Binary => "binary",
            Metric::Dockerfile => "dockerfile",
            Metric::Oci => "oci",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Metric::Start => "Start latency: run --rm IMAGE echo",
            Metric::Memory => "Engine memory: idle and per running container",
            Metric::Copy => "cp of a large file, both directions, vs plain cp",
            Metric::Bind => "Bind-mount throughput inside the container vs on the host",
            Metric::Build => "C build over a bind mount, in the container vs on the host",
            Metric::Network => "Network throughput (iperf3)",
            Metric::Seccomp => "Seccomp fidelity: syscall loop and CPU-bound loop",
            Metric::Pull => "Cold pull from a local registry",
            Metric::Binary => "Binary size and engine start-up",
            Metric::Dockerfile => "Dockerfile builds: clean and fully cached",
            Metric::Oci => "OCI runtime: create + start + delete of a bundle running true",
        }
    }
}

impl FromStr for Metric {
    type Err = OptionsError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        Metric::ALL
            .into_iter()
            .find(|metric| metric.id() == text || (text == "copy" && *metric == Metric::Copy))
            .ok_or_else(|| OptionsError::UnknownMetric {
                name: text.to_owned(),
                known: Metric::ALL.map(Metric::id).join(", "),
            })
    }
}

/// Parses `1G`, `10g`, `512M`, `64k`, `1GiB`, `1048576` (binary units).
pub fn parse_size(text: &str) -> Result<u64, OptionsError> {
    let invalid = || OptionsError::InvalidSize {
        text: text.to_owned(),
    };
    let trimmed = text.trim();
    let digits_end = trimmed
        .find(|character: char| !character.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (digits, unit) = trimmed.split_at(digits_end);
    let number: u64 = digits.parse().map_err(|_| invalid())?;
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(invalid()),
    };
    let size = number.checked_shl(shift).ok_or_else(invalid)?;
    if size == 0 || size >> shift != number {
        return Err(invalid());
    }
    Ok(size)
}

/// How the suite reaches the berth binary it measures: the binary itself and
/// the global options passed to every berth command it runs.
#[derive(Clone, Debug)]
pub struct BerthBinary {
    pub program: PathBuf,
    pub root: PathBuf,
    pub run_root: PathBuf,
}

/// A validated bench run.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    pub quick: bool,
    /// None: every engine that is found.
    pub engines: Option<Vec<EngineName>>,
    /// Sizes for the `cp` metric; None: the mode's defaults.
    pub sizes: Option<Vec<u64>>,
    /// Runs per measurement; None: the mode's defaults.
    pub runs: Option<usize>,
    pub out_dir: PathBuf,
    pub metrics: Vec<Metric>,
    /// DOCKER_HOST for the docker engine; None: `$DOCKER_HOST` or the default socket.
    pub docker_host: Option<String>,
    pub work_dir: PathBuf,
    pub berth: BerthBinary,
}

impl BenchOptions {
    /// Resolves the command line's text values.
    #[allow(clippy::too_many_arguments)]
    pub fn resolve(
        quick: bool,
        engines: &[String],
        sizes: &[String],
        runs: Option<usize>,
        out_dir: PathBuf,
        metrics: &[String],
        docker_host: Option<String>,
        work_dir: PathBuf,
        berth: BerthBinary,
    ) -> Result<Self, OptionsError> {
        let split = |values: &[String]| -> Vec<String> {
            values
                .iter()
                .flat_map(|value| value.split(','))
                .map(str::trim)
                .filter(|value| !value.is_empty())
                .map(str::to_owned)
                .collect()
        };
        let engines = split(engines)
            .iter()
            .map(|name| name.parse())
            .collect::<Result<Vec<EngineName>, _>>()?;
        let mut metrics = split(metrics)
            .iter()
            .map(|name| name.parse())
            .collect::<Result<Vec<Metric>, _>>()?;
        if metrics.is_empty() {
            metrics = Metric::ALL.to_vec();
        }
        metrics.sort();
        metrics.dedup();
        let sizes = split(sizes)
            .iter()
            .map(|size| parse_size(size))
            .collect::<Result<Vec<u64>, _>>()?;
        if runs == Some(0) {
            return Err(OptionsError::NoRuns);
        }
        let mut engines = engines;
        engines.sort();
        engines.dedup();
        Ok(Self {
            quick,
            engines: (!engines.is_empty()).then_some(engines),
            sizes: (!sizes.is_empty()).then_some(sizes),
            runs,
            out_dir,
            metrics,
            docker_host,
            work_dir,
            berth,
        })
    }

    pub fn plan(&self) -> Plan {
        Plan::new(self.quick, self.runs, self.sizes.clone())
    }
}

/// Runs, sizes and loop counts of every metric.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub quick: bool,
    pub start_runs: usize,
    pub start_warmup: usize,
    /// A VM container's cold run takes seconds under TCG: fewer runs.
    pub vm_start_runs: usize,
    pub vm_start_warmup: usize,
    pub vm_memory_containers: usize,
    pub memory_samples: usize,
    pub memory_containers: usize,
    pub copy_runs: usize,
    pub copy_sizes: Vec<u64>,
    pub bind_runs: usize,
    pub bind_bytes: u64,
    pub build_runs: usize,
    pub network_runs: usize,
    pub network_seconds: u32,
    pub seccomp_runs: usize,
    pub syscall_count: u64,
    pub awk_iterations: u64,
    pub pull_runs: usize,
    pub pull_layers: usize,
    pub pull_bytes: u64,
    pub binary_runs: usize,
}

impl Plan {
    pub fn new(quick: bool, runs: Option<usize>, sizes: Option<Vec<u64>>) -> Self {
        // Full-run defaults: enough runs for a stable median where a run is
        // cheap, fewer where one run takes seconds to minutes.
        let pick = |full: usize| runs.unwrap_or(if quick { 1 } else { full });
        Self {
            quick,
            start_runs: pick(20),
            start_warmup: if quick { 1 } else { 5 },
            vm_start_runs: pick(10),
            vm_start_warmup: if quick { 0 } else { 1 },
            vm_memory_containers: if quick { 1 } else { runs.unwrap_or(3).max(2) },
            memory_samples: pick(5),
            memory_containers: if quick { 1 } else { runs.unwrap_or(5).max(2) },
            copy_runs: pick(3),
            copy_sizes: sizes.unwrap_or_else(|| {
                if quick {
                    vec![16 << 20]
                } else {
                    vec![1 << 30, 10 << 30]
                }
            }),
            bind_runs: pick(3),
            bind_bytes: if quick { 16 << 20 } else { 512 << 20 },
            build_runs: pick(3),
            network_runs: pick(3),
            network_seconds: if quick { 1 } else { 5 },
            // The targets are 1–2 %: more rounds than elsewhere.
            seccomp_runs: pick(10),
            syscall_count: if quick { 100_000 } else { 3_000_000 },
            awk_iterations: if quick { 100_000 } else { 3_000_000 },
            pull_runs: pick(3),
            pull_layers: if quick { 2 } else { 8 },
            pull_bytes: if quick { 4 << 20 } else { 120 << 20 },
            binary_runs: pick(10),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn berth() -> BerthBinary {
        BerthBinary {
            program: "/usr/bin/berth".into(),
            root: "/var/lib/berth".into(),
            run_root: "/run/berth".into(),
        }
    }

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("10g").unwrap(), 10 << 30);
        assert_eq!(parse_size("512M").unwrap(), 512 << 20);
        assert_eq!(parse_size("64KiB").unwrap(), 64 << 10);
        assert_eq!(parse_size("1048576").unwrap(), 1 << 20);
        for bad in ["", "G", "1X", "0", "-1G", "1.5G", "99999999999999T"] {
            assert!(parse_size(bad).is_err(), "{bad:?} must be refused");
        }
    }

    #[test]
    fn names_resolve_and_unknown_ones_fail_early() {
        let options = BenchOptions::resolve(
            true,
            &["docker,berth".into(), "berth".into()],
            &["1G".into()],
            Some(2),
            ".".into(),
            &["seccomp,start".into(), "copy".into()],
            None,
            DEFAULT_WORK_DIR.into(),
            berth(),
        )
        .unwrap();
        assert_eq!(
            options.engines,
            Some(vec![EngineName::Berth, EngineName::Docker])
        );
        assert_eq!(
            options.metrics,
            vec![Metric::Start, Metric::Copy, Metric::Seccomp]
        );
        assert_eq!(options.sizes, Some(vec![1 << 30]));

        let error = BenchOptions::resolve(
            false,
            &["lxc".into()],
            &[],
            None,
            ".".into(),
            &[],
            None,
            DEFAULT_WORK_DIR.into(),
            berth(),
        )
        .unwrap_err();
        assert!(error.to_string().contains("unknown engine \"lxc\""));
        let error = BenchOptions::resolve(
            false,
            &[],
            &[],
            None,
            ".".into(),
            &["speed".into()],
            None,
            DEFAULT_WORK_DIR.into(),
            berth(),
        )
        .unwrap_err();
        assert!(error.to_string().contains("known: start, memory, cp"));
    }

    #[test]
    fn no_metric_means_every_metric() {
        let options = BenchOptions::resolve(
            false,
            &[],
            &[],
            None,
            ".".into(),
            &[],
            None,
            DEFAULT_WORK_DIR.into(),
            berth(),
        )
        .unwrap();
        assert_eq!(options.metrics, Metric::ALL.to_vec());
        assert_eq!(options.engines, None);
    }

    #[test]
    fn quick_plans_run_everything_once_and_small() {
        let plan = Plan::new(true, None, None);
        assert_eq!(plan.start_runs, 1);
        assert_eq!(plan.copy_runs, 1);
        assert_eq!(plan.copy_sizes, vec![16 << 20]);
        assert_eq!((plan.vm_start_runs, plan.vm_start_warmup), (1, 0));
        assert_eq!(plan.vm_memory_containers, 1);
        let full = Plan::new(false, Some(7), Some(vec![1 << 30]));
        assert_eq!(full.start_runs, 7);
        assert_eq!((full.vm_start_runs, full.vm_start_warmup), (7, 1));
        assert_eq!(Plan::new(false, None, None).vm_memory_containers, 3);
        assert_eq!(full.syscall_count, 3_000_000);
        assert_eq!(full.copy_sizes, vec![1 << 30]);
    }
}
