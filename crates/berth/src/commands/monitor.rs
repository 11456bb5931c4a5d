//! `berth __monitor`: a container's (or a warm pool member's) monitor,
//! started by a berth process that must not fork one itself because it has
//! other threads (the API server). Run by berth only: the descriptors it
//! needs are placed at fixed numbers by its starter
//! (berth-engine `containers/monitor/launch.rs`).

use clap::Args;

use berth_engine::containers::monitor::launch::{run_spawned, SpawnedMonitor, SpawnedStreams};
use berth_engine::EngineConfig;

use crate::cli::GlobalOptions;

#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// The container to monitor (its start record is taken already)
    #[arg(required_unless_present = "member", conflicts_with = "member")]
    pub id: Option<String>,
    /// A warm pool member, its record and info given on a pipe
    #[arg(long)]
    pub member: bool,
    /// The attached client's stdin is given
    #[arg(long)]
    pub stdin: bool,
    /// The attached client's stdout is given
    #[arg(long)]
    pub stdout: bool,
    /// The attached client's stderr is given
    #[arg(long)]
    pub stderr: bool,
}

pub fn run(global: &GlobalOptions, args: &MonitorArgs) -> anyhow::Result<i32> {
    let config = EngineConfig::new(global.root.clone(), global.run_root.clone());
    let what = match &args.id {
        Some(id) => SpawnedMonitor::Container(id.clone()),
        None => SpawnedMonitor::Member,
    };
    let streams = SpawnedStreams {
        stdin: args.stdin,
        stdout: args.stdout,
        stderr: args.stderr,
    };
    Ok(run_spawned(config, what, streams))
}
