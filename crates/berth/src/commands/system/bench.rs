//! `berth bench`: the benchmark suite (crate berth-bench), berth side by side
//! with the other engines on the machine. This file only turns flags into
//! validated options; the suite passes this process's --root/--run-root to
//! every berth command it runs.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::cli::GlobalOptions;

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Run each metric small and once (checks that the suite works; not a
    /// measurement)
    #[arg(long)]
    pub quick: bool,
    /// Engines to measure, comma-separated: berth, docker, podman (default:
    /// every one that is found). With berth come its VM containers
    /// (--isolation=vm) where QEMU, a guest kernel (BERTH_VM_KERNEL_DIR) and
    /// virtiofsd are found, or a line saying which is missing
    #[arg(long, value_name = "LIST")]
    pub engine: Vec<String>,
    /// File sizes for the cp metric, comma-separated (default 1G,10G; with
    /// --quick 16M)
    #[arg(long, value_name = "SIZES")]
    pub size: Vec<String>,
    /// Runs per measurement (default: 3 to 20 depending on the metric; with
    /// --quick 1)
    #[arg(long, value_name = "N")]
    pub runs: Option<usize>,
    /// Directory for bench-results.md, bench-results.json and
    /// bench-results.svg
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub out: PathBuf,
    /// Metrics to run, comma-separated: start, memory, cp, bind, build,
    /// network, seccomp, pull, binary (default: all)
    #[arg(long, value_name = "LIST")]
    pub metrics: Vec<String>,
    /// The Docker daemon to measure (default: $DOCKER_HOST, else the
    /// default socket)
    #[arg(long, value_name = "HOST")]
    pub docker_host: Option<String>,
    /// Cache of built images, downloaded packages and test files
    #[arg(long, default_value = berth_bench::options::DEFAULT_WORK_DIR, value_name = "DIR")]
    pub work_dir: PathBuf,
}

pub fn run(global: &GlobalOptions, args: &BenchArgs) -> anyhow::Result<i32> {
    let absolute = |path: &PathBuf| {
        std::path::absolute(path).with_context(|| format!("failed to resolve {path:?}"))
    };
    let berth = berth_bench::BerthBinary {
        program: std::env::current_exe().context("failed to find the berth binary")?,
        root: absolute(&global.root)?,
        run_root: absolute(&global.run_root)?,
    };
    let options = berth_bench::BenchOptions::resolve(
        args.quick,
        &args.engine,
        &args.size,
        args.runs,
        absolute(&args.out)?,
        &args.metrics,
        args.docker_host.clone(),
        absolute(&args.work_dir)?,
        berth,
    )?;
    let outcome = berth_bench::run(&options)?;
    for path in [&outcome.markdown, &outcome.json, &outcome.svg] {
        println!("{}", path.display());
    }
    Ok(0)
}
