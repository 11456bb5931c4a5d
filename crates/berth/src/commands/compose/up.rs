//! `berth compose up`: converge the project (berth-compose `converge::up`); without `-d`,
//! follow the containers' output with compose's `service-1  | ` prefixes until they stop.

use std::time::Duration;

use berth_compose::converge::up::{up, UpOptions};
use berth_compose::converge::{ConvergeError, StderrReporter};
use clap::Args;

use super::ComposeArgs;
use crate::cli::GlobalOptions;
use crate::commands::image::pull::{self, ProgressTarget};

#[derive(Debug, Args)]
pub struct UpArgs {
    /// Detached mode: Run containers in the background
    #[arg(short, long)]
    pub detach: bool,
    /// Recreate containers even if their configuration and image haven't changed
    #[arg(long, conflicts_with = "no_recreate")]
    pub force_recreate: bool,
    /// If containers already exist, don't recreate them
    #[arg(long)]
    pub no_recreate: bool,
    /// Don't start linked services
    #[arg(long)]
    pub no_deps: bool,
    /// Don't start the services after creating them
    #[arg(long)]
    pub no_start: bool,
    /// Remove containers for services not defined in the Compose file
    #[arg(long)]
    pub remove_orphans: bool,
    /// Wait for services to be running|healthy. Implies detached mode
    #[arg(long)]
    pub wait: bool,
    /// Maximum duration in seconds to wait for the project to be running|healthy
    #[arg(long, value_name = "int")]
    pub wait_timeout: Option<u64>,
    /// Scale SERVICE to NUM instances
    #[arg(long, value_name = "SERVICE=NUM")]
    pub scale: Vec<String>,
    /// Use this timeout in seconds for container shutdown when attached
    #[arg(short = 't', long = "timeout", value_name = "int")]
    pub timeout: Option<i64>,
    /// Build images before starting containers (refused: berth compose does not build yet)
    #[arg(long, conflicts_with = "no_build")]
    pub build: bool,
    /// Don't build an image, even if it's policy
    #[arg(long)]
    pub no_build: bool,
    /// SERVICE
    pub services: Vec<String>,
}

/// How many services converge at once unless `COMPOSE_PARALLEL_LIMIT` says otherwise.
const DEFAULT_PARALLEL_LIMIT: usize = 64;

pub fn run(global: &GlobalOptions, compose: &ComposeArgs, args: &UpArgs) -> anyhow::Result<i32> {
    if args.build {
        anyhow::bail!("--build: berth compose does not build images yet; build with `berth build`");
    }
    let project = super::load(compose)?;
    let mut engine = crate::commands::open(global)?;
    let mut scale = std::collections::BTreeMap::new();
    for entry in &args.scale {
        let (service, count) = entry
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("invalid --scale {entry:?}: expected SERVICE=NUM"))?;
        let count: u32 = count
            .parse()
            .map_err(|_| anyhow::anyhow!("invalid --scale {entry:?}: expected SERVICE=NUM"))?;
        scale.insert(service.to_owned(), count);
    }
    let parallel_limit = std::env::var("COMPOSE_PARALLEL_LIMIT")
        .ok()
        .and_then(|limit| limit.parse().ok())
        .unwrap_or(DEFAULT_PARALLEL_LIMIT);
    let options = UpOptions {
        services: args.services.clone(),
        no_deps: args.no_deps,
        force_recreate: args.force_recreate,
        no_recreate: args.no_recreate,
        no_start: args.no_start,
        remove_orphans: args.remove_orphans,
        wait: args.wait,
        wait_timeout: args.wait_timeout.map(Duration::from_secs),
        parallel_limit,
        scale,
    };
    let mut ensure_image = |engine: &mut berth_engine::Engine, image: &str| {
        if berth_engine::images::resolve_image(engine.store(), image).is_ok() {
            return Ok(());
        }
        pull::pull(engine, image, None, None, ProgressTarget::Stderr)
            .map(drop)
            .map_err(|error| ConvergeError::Failed(format!("failed to pull {image}: {error:#}")))
    };
    let summary = up(
        &mut engine,
        &project,
        &options,
        &StderrReporter,
        &mut ensure_image,
    )?;
    if summary.changes == 0 {
        eprintln!("Project {} is up to date: nothing to do", project.name);
    }
    if args.detach || args.wait || args.no_start {
        return Ok(0);
    }
    super::logs::follow_project(&mut engine, &project, &args.services, args.timeout)
}
