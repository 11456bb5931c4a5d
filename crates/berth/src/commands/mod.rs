//! One module per noun, one file per verb. Each command opens the engine,
//! calls it, and prints what Docker would print.

pub mod image;
mod output;
pub mod system;

use anyhow::Context;
use berth_engine::{Engine, EngineConfig};

use crate::cli::{Cli, Command, GlobalOptions, ImageCommand};

/// Runs a parsed command line; returns the exit status.
pub fn run(cli: Cli) -> anyhow::Result<i32> {
    let global = cli.global;
    match cli.command {
        Command::Version => system::version::run(),
        Command::Info(args) => system::info::run(&global, &args),
        Command::Images(args) | Command::Image(ImageCommand::Ls(args)) => {
            image::list::run(&open(&global)?, &args)
        }
        Command::Load(args) | Command::Image(ImageCommand::Load(args)) => {
            image::load::run(&mut open(&global)?, &args)
        }
        Command::Save(args) | Command::Image(ImageCommand::Save(args)) => {
            image::save::run(&open(&global)?, &args)
        }
        Command::Import(args) | Command::Image(ImageCommand::Import(args)) => {
            image::import::run(&mut open(&global)?, &args)
        }
        Command::Tag(args) | Command::Image(ImageCommand::Tag(args)) => {
            image::tag::run(&mut open(&global)?, &args)
        }
        Command::Rmi(args) | Command::Image(ImageCommand::Rm(args)) => {
            image::remove::run(&mut open(&global)?, &args)
        }
        Command::History(args) | Command::Image(ImageCommand::History(args)) => {
            image::history::run(&open(&global)?, &args)
        }
        Command::Inspect(args) | Command::Image(ImageCommand::Inspect(args)) => {
            image::inspect::run(&open(&global)?, &args)
        }
        Command::Image(ImageCommand::Prune(args)) => image::prune::run(&mut open(&global)?, &args),
    }
}

pub fn open(global: &GlobalOptions) -> anyhow::Result<Engine> {
    Engine::open(EngineConfig {
        root: global.root.clone(),
        run_root: global.run_root.clone(),
    })
    .with_context(|| format!("failed to open the berth root {:?}", global.root))
}
