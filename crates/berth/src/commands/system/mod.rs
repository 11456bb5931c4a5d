pub mod bench;
pub mod df;
pub mod events;
pub mod info;
pub mod serve;
pub mod version;
pub mod warm;

pub use info::InfoArgs;

use crate::cli::GlobalOptions;

/// `berth system …`
#[derive(Debug, clap::Subcommand)]
pub enum SystemCommand {
    /// Show berth disk usage
    Df(df::DfArgs),
    /// Get real time events from the engine
    Events(events::EventsArgs),
    /// Display system-wide information
    Info(InfoArgs),
}

pub fn run(global: &GlobalOptions, command: SystemCommand) -> anyhow::Result<i32> {
    match command {
        SystemCommand::Df(args) => df::run(global, &args),
        SystemCommand::Events(args) => events::run(global, &args),
        SystemCommand::Info(args) => info::run(global, &args),
    }
}
