//! `berth serve`: the Docker Engine API on a unix socket (see `berth-api`),
//! and the hidden `berth api-helper` it runs for work that forks.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::cli::GlobalOptions;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Socket to listen on: unix:///path, or fd:// for systemd's sockets
    /// (repeatable; default unix:///run/berth/docker.sock, or the sockets
    /// systemd passed)
    #[arg(short = 'H', long = "host", value_name = "HOST")]
    pub hosts: Vec<String>,
    /// Group that owns the socket (mode 0660); default "docker" when that
    /// group exists, else root
    #[arg(short = 'G', long, value_name = "GROUP")]
    pub group: Option<String>,
    /// Exit after this long with no request or stream open (30s, 5m, 1h;
    /// 0 or unset: never)
    #[arg(long, value_name = "DURATION")]
    pub idle_timeout: Option<String>,
}

pub fn run(global: &GlobalOptions, args: &ServeArgs) -> anyhow::Result<i32> {
    let idle_timeout = args
        .idle_timeout
        .as_deref()
        .map(berth_api::parse_duration)
        .transpose()
        .map_err(anyhow::Error::msg)?
        .filter(|timeout| !timeout.is_zero());
    let helper: PathBuf =
        std::env::current_exe().context("failed to find the berth binary for its helpers")?;
    let config = berth_api::ServeConfig {
        engine: berth_engine::EngineConfig {
            root: global.root.clone(),
            run_root: global.run_root.clone(),
        },
        hosts: args.hosts.clone(),
        group: args.group.clone(),
        idle_timeout,
        helper,
    };
    berth_api::serve(config)?;
    Ok(0)
}

/// `berth api-helper KIND REQUEST`: run by `berth serve` only.
#[derive(Debug, Args)]
pub struct ApiHelperArgs {
    /// start or exec
    pub kind: String,
    /// The request, as JSON
    pub request: String,
}

pub fn helper(global: &GlobalOptions, args: &ApiHelperArgs) -> anyhow::Result<i32> {
    let config = berth_engine::EngineConfig {
        root: global.root.clone(),
        run_root: global.run_root.clone(),
    };
    Ok(berth_api::helper::run(config, &args.kind, &args.request))
}
