//! `berth compose down`: stop and remove the project's containers and networks (`-v`: its
//! volumes).

use berth_compose::converge::down::{down, DownOptions};
use berth_compose::converge::StderrReporter;
use clap::Args;

use super::ComposeArgs;
use crate::cli::GlobalOptions;

#[derive(Debug, Args)]
pub struct DownArgs {
    /// Remove named volumes declared in the "volumes" section of the Compose file and anonymous volumes attached to containers
    #[arg(short, long)]
    pub volumes: bool,
    /// Remove containers for services not defined in the Compose file
    #[arg(long)]
    pub remove_orphans: bool,
    /// Specify a shutdown timeout in seconds
    #[arg(short = 't', long = "timeout", value_name = "int")]
    pub timeout: Option<i64>,
    /// Remove images used by services (refused: not implemented yet)
    #[arg(long, value_name = "string")]
    pub rmi: Option<String>,
}

pub fn run(global: &GlobalOptions, compose: &ComposeArgs, args: &DownArgs) -> anyhow::Result<i32> {
    if args.rmi.is_some() {
        anyhow::bail!("--rmi: berth compose down does not remove images yet");
    }
    let project = super::load_or_name(compose)?;
    let mut engine = crate::commands::open(global)?;
    let options = DownOptions {
        volumes: args.volumes,
        remove_orphans: args.remove_orphans,
        timeout: args.timeout,
    };
    down(&mut engine, &project, &options, &StderrReporter)?;
    Ok(0)
}
