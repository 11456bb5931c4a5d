//! `commit`, `update`.

use berth_engine::containers::record::RestartPolicy;
use berth_engine::containers::{commit_container, update_container, CommitOptions};
use berth_engine::Engine;
use berth_runtime::cgroups::{Limit, Resources};
use clap::Args;

use crate::format::units::parse_size;

#[derive(Debug, Args)]
pub struct CommitArgs {
    /// Author (e.g., "John Hannibal Smith <hannibal@a-team.com>")
    #[arg(short, long)]
    pub author: Option<String>,
    /// Apply Dockerfile instruction to the created image
    #[arg(short, long = "change", value_name = "list")]
    pub changes: Vec<String>,
    /// Commit message
    #[arg(short, long)]
    pub message: Option<String>,
    /// Pause container during commit
    #[arg(short, long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    pub pause: bool,
    /// CONTAINER
    pub container: String,
    /// [REPOSITORY[:TAG]]
    pub reference: Option<String>,
}

pub fn commit(engine: &mut Engine, args: &CommitArgs) -> anyhow::Result<i32> {
    let id = commit_container(
        engine,
        &args.container,
        &CommitOptions {
            reference: args.reference.clone(),
            author: args.author.clone(),
            message: args.message.clone(),
            changes: args.changes.clone(),
            pause: args.pause,
        },
    )?;
    println!("{id}");
    Ok(0)
}

#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// Number of CPUs
    #[arg(long)]
    pub cpus: Option<f64>,
    /// CPU shares (relative weight)
    #[arg(short = 'c', long)]
    pub cpu_shares: Option<u64>,
    /// Limit CPU CFS (Completely Fair Scheduler) period
    #[arg(long)]
    pub cpu_period: Option<u64>,
    /// Limit CPU CFS (Completely Fair Scheduler) quota
    #[arg(long, allow_hyphen_values = true)]
    pub cpu_quota: Option<i64>,
    /// CPUs in which to allow execution (0-3, 0,1)
    #[arg(long)]
    pub cpuset_cpus: Option<String>,
    /// MEMs in which to allow execution (0-3, 0,1)
    #[arg(long)]
    pub cpuset_mems: Option<String>,
    /// Memory limit
    #[arg(short, long)]
    pub memory: Option<String>,
    /// Memory soft limit
    #[arg(long)]
    pub memory_reservation: Option<String>,
    /// Swap limit equal to memory plus swap: -1 to enable unlimited swap
    #[arg(long, allow_hyphen_values = true)]
    pub memory_swap: Option<String>,
    /// Tune container pids limit (set -1 for unlimited)
    #[arg(long, allow_hyphen_values = true)]
    pub pids_limit: Option<i64>,
    /// Restart policy to apply when a container exits
    #[arg(long)]
    pub restart: Option<String>,
    /// CONTAINER
    #[arg(required = true)]
    pub containers: Vec<String>,
}

pub fn update(engine: &mut Engine, args: &UpdateArgs) -> anyhow::Result<i32> {
    let mut resources = Resources {
        cpu_shares: args.cpu_shares,
        cpu_period: args.cpu_period,
        cpu_quota: args
            .cpu_quota
            .map(|quota| u64::try_from(quota).map_or(Limit::Unlimited, Limit::Value)),
        cpuset_cpus: args.cpuset_cpus.clone(),
        cpuset_mems: args.cpuset_mems.clone(),
        memory: args
            .memory
            .as_deref()
            .map(parse_size)
            .transpose()?
            .map(Limit::Value),
        memory_reservation: args
            .memory_reservation
            .as_deref()
            .map(parse_size)
            .transpose()?
            .map(Limit::Value),
        pids_limit: args.pids_limit.map(Limit::from_docker_pids),
        ..Resources::default()
    };
    if let Some(swap) = args.memory_swap.as_deref() {
        resources.memory_swap = if swap == "-1" {
            Some(Limit::Unlimited)
        } else {
            Some(Limit::Value(parse_size(swap)?))
        };
    }
    if let Some(cpus) = args.cpus {
        anyhow::ensure!(
            cpus > 0.0,
            "invalid argument \"{cpus}\" for \"--cpus\" flag"
        );
        resources.set_nano_cpus((cpus * 1e9) as u64);
    }
    let restart = args.restart.as_deref().map(parse_restart).transpose()?;
    let fields = docker_fields(args, &resources);
    let mut status = 0;
    for name in &args.containers {
        match update_container(engine, name, &resources, restart.clone(), &fields) {
            Ok(()) => println!("{name}"),
            Err(error) => {
                eprintln!("Error: {:#}", anyhow::Error::from(error));
                status = crate::exit::FAILURE;
            }
        }
    }
    Ok(status)
}

/// The update in Docker's `HostConfig` names, as inspect shows it after.
fn docker_fields(
    args: &UpdateArgs,
    resources: &Resources,
) -> serde_json::Map<String, serde_json::Value> {
    let bytes = |limit: Option<Limit>| match limit {
        Some(Limit::Value(value)) => serde_json::json!(value),
        Some(Limit::Unlimited) => serde_json::json!(-1),
        None => serde_json::Value::Null,
    };
    let mut fields = serde_json::Map::new();
    let mut put = |key: &str, value: serde_json::Value| {
        fields.insert(key.to_owned(), value);
    };
    put("CpuShares", serde_json::json!(args.cpu_shares));
    put("CpuPeriod", serde_json::json!(args.cpu_period));
    put("CpuQuota", serde_json::json!(args.cpu_quota));
    put("CpusetCpus", serde_json::json!(args.cpuset_cpus));
    put("CpusetMems", serde_json::json!(args.cpuset_mems));
    put("Memory", bytes(resources.memory));
    put("MemoryReservation", bytes(resources.memory_reservation));
    put("MemorySwap", bytes(resources.memory_swap));
    put("PidsLimit", serde_json::json!(args.pids_limit));
    put(
        "NanoCpus",
        serde_json::json!(args.cpus.map(|cpus| (cpus * 1e9) as i64)),
    );
    fields
}

fn parse_restart(text: &str) -> anyhow::Result<RestartPolicy> {
    let (name, count) = text.split_once(':').unwrap_or((text, ""));
    anyhow::ensure!(
        matches!(name, "no" | "always" | "unless-stopped" | "on-failure"),
        "invalid restart policy '{name}'"
    );
    let maximum_retry_count = if count.is_empty() {
        0
    } else {
        count
            .parse()
            .map_err(|_| anyhow::anyhow!("maximum retry count must be an integer"))?
    };
    Ok(RestartPolicy {
        name: name.to_owned(),
        maximum_retry_count,
    })
}
