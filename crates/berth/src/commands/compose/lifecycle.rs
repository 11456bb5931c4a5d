//! `berth compose stop`, `start` and `rm`.

use berth_compose::converge::{lifecycle, StderrReporter};
use clap::Args;

use super::ComposeArgs;
use crate::cli::GlobalOptions;

#[derive(Debug, Args)]
pub struct StopArgs {
    /// Specify a shutdown timeout in seconds
    #[arg(short = 't', long = "timeout", value_name = "int")]
    pub timeout: Option<i64>,
    /// SERVICE
    pub services: Vec<String>,
}

#[derive(Debug, Args)]
pub struct StartArgs {
    /// SERVICE
    pub services: Vec<String>,
}

#[derive(Debug, Args)]
pub struct RmArgs {
    /// Don't ask to confirm removal
    #[arg(short, long)]
    pub force: bool,
    /// Stop the containers, if required, before removing
    #[arg(short, long)]
    pub stop: bool,
    /// Remove any anonymous volumes attached to containers (refused: not implemented yet)
    #[arg(short, long)]
    pub volumes: bool,
    /// SERVICE
    pub services: Vec<String>,
}

pub fn stop(global: &GlobalOptions, compose: &ComposeArgs, args: &StopArgs) -> anyhow::Result<i32> {
    let project = super::load_or_name(compose)?;
    let mut engine = crate::commands::open(global)?;
    lifecycle::stop(
        &mut engine,
        &project,
        &args.services,
        args.timeout,
        &StderrReporter,
    )?;
    Ok(0)
}

pub fn start(
    global: &GlobalOptions,
    compose: &ComposeArgs,
    args: &StartArgs,
) -> anyhow::Result<i32> {
    let project = super::load(compose)?;
    let mut engine = crate::commands::open(global)?;
    lifecycle::start(&mut engine, &project, &args.services, &StderrReporter)?;
    Ok(0)
}

pub fn remove(global: &GlobalOptions, compose: &ComposeArgs, args: &RmArgs) -> anyhow::Result<i32> {
    if args.volumes {
        anyhow::bail!("-v: berth compose rm does not remove anonymous volumes yet");
    }
    let project = super::load_or_name(compose)?;
    let mut engine = crate::commands::open(global)?;
    if !args.force {
        // compose asks before removing; without a terminal to ask, -f is needed.
        use std::io::IsTerminal;
        if !std::io::stdin().is_terminal() {
            anyhow::bail!("refusing to remove without confirmation: use -f");
        }
        if !crate::commands::confirm("Going to remove the project's stopped containers")? {
            return Ok(0);
        }
    }
    let removed = lifecycle::remove(
        &mut engine,
        &project,
        &args.services,
        args.stop,
        &StderrReporter,
    )?;
    if removed.is_empty() {
        eprintln!("No stopped containers");
    }
    Ok(0)
}

#[derive(Debug, Args)]
pub struct RestartArgs {
    /// Specify a shutdown timeout in seconds
    #[arg(short = 't', long = "timeout", value_name = "int")]
    pub timeout: Option<i64>,
    /// SERVICE
    pub services: Vec<String>,
}

#[derive(Debug, Args)]
pub struct KillArgs {
    /// SIGNAL to send to the container
    #[arg(short, long, default_value = "SIGKILL")]
    pub signal: String,
    /// SERVICE
    pub services: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ServicesArgs {
    /// SERVICE
    pub services: Vec<String>,
}

pub fn restart(
    global: &GlobalOptions,
    compose: &ComposeArgs,
    args: &RestartArgs,
) -> anyhow::Result<i32> {
    let project = super::load(compose)?;
    let mut engine = crate::commands::open(global)?;
    lifecycle::restart(
        &mut engine,
        &project,
        &args.services,
        args.timeout,
        &StderrReporter,
    )?;
    Ok(0)
}

pub fn kill(global: &GlobalOptions, compose: &ComposeArgs, args: &KillArgs) -> anyhow::Result<i32> {
    let project = super::load_or_name(compose)?;
    let mut engine = crate::commands::open(global)?;
    lifecycle::kill(
        &mut engine,
        &project,
        &args.services,
        &args.signal,
        &StderrReporter,
    )?;
    Ok(0)
}

pub fn pause(
    global: &GlobalOptions,
    compose: &ComposeArgs,
    args: &ServicesArgs,
    pause: bool,
) -> anyhow::Result<i32> {
    let project = super::load_or_name(compose)?;
    let mut engine = crate::commands::open(global)?;
    lifecycle::pause(
        &mut engine,
        &project,
        &args.services,
        pause,
        &StderrReporter,
    )?;
    Ok(0)
}
