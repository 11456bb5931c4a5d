//! One module per noun, one file per verb. Each command opens the engine,
//! calls it, and prints what Docker would print.

// Not wired into the command line yet; `run`/`create` land with the runtime.
pub mod container;
pub mod image;
pub mod network;
mod output;
pub mod registry;
pub mod system;
pub mod volume;

use anyhow::Context;
use berth_engine::{Engine, EngineConfig};

use crate::cli::{Cli, Command, ContainerCommand, GlobalOptions, ImageCommand};
use container::inspect::Kind;

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
        Command::Pull(args) | Command::Image(ImageCommand::Pull(args)) => {
            image::pull::run(&mut open(&global)?, &args)
        }
        Command::Push(args) | Command::Image(ImageCommand::Push(args)) => {
            image::push::run(&mut open(&global)?, &args)
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
        Command::Image(ImageCommand::Inspect(args)) => image::inspect::run(&open(&global)?, &args),
        Command::Inspect(args) => container::inspect::run(&open(&global)?, &args, Kind::Any),
        Command::Container(ContainerCommand::Inspect(args)) => {
            container::inspect::run(&open(&global)?, &args, Kind::Container)
        }
        Command::Run(options) | Command::Container(ContainerCommand::Run(options)) => {
            container::run::run(&mut open(&global)?, &options)
        }
        Command::Create(options) | Command::Container(ContainerCommand::Create(options)) => {
            container::run::create(&mut open(&global)?, &options)
        }
        Command::Start(args) | Command::Container(ContainerCommand::Start(args)) => {
            container::lifecycle::start(&mut open(&global)?, &args)
        }
        Command::Stop(args) | Command::Container(ContainerCommand::Stop(args)) => {
            container::lifecycle::stop(&mut open(&global)?, &args)
        }
        Command::Restart(args) | Command::Container(ContainerCommand::Restart(args)) => {
            container::lifecycle::restart(&mut open(&global)?, &args)
        }
        Command::Kill(args) | Command::Container(ContainerCommand::Kill(args)) => {
            container::lifecycle::kill(&mut open(&global)?, &args)
        }
        Command::Rm(args) | Command::Container(ContainerCommand::Rm(args)) => {
            container::lifecycle::remove(&mut open(&global)?, &args)
        }
        Command::Ps(args) | Command::Container(ContainerCommand::Ls(args)) => {
            container::list::run(&open(&global)?, &args)
        }
        Command::Logs(args) | Command::Container(ContainerCommand::Logs(args)) => {
            container::logs::run(&open(&global)?, &args)
        }
        Command::Exec(args) | Command::Container(ContainerCommand::Exec(args)) => {
            container::exec::run(&open(&global)?, &args)
        }
        Command::Wait(args) | Command::Container(ContainerCommand::Wait(args)) => {
            container::lifecycle::wait(&mut open(&global)?, &args)
        }
        Command::Top(args) | Command::Container(ContainerCommand::Top(args)) => {
            container::top::top(&open(&global)?, &args)
        }
        Command::Pause(args) | Command::Container(ContainerCommand::Pause(args)) => {
            container::lifecycle::pause(&mut open(&global)?, &args)
        }
        Command::Unpause(args) | Command::Container(ContainerCommand::Unpause(args)) => {
            container::lifecycle::unpause(&mut open(&global)?, &args)
        }
        Command::Rename(args) | Command::Container(ContainerCommand::Rename(args)) => {
            container::lifecycle::rename(&mut open(&global)?, &args)
        }
        Command::Stats(args) | Command::Container(ContainerCommand::Stats(args)) => {
            container::top::stats(&open(&global)?, &args)
        }
        Command::Port(args) | Command::Container(ContainerCommand::Port(args)) => {
            container::top::port(&open(&global)?, &args)
        }
        Command::Diff(args) | Command::Container(ContainerCommand::Diff(args)) => {
            container::changes::diff(&open(&global)?, &args)
        }
        Command::Export(args) | Command::Container(ContainerCommand::Export(args)) => {
            container::changes::export(&open(&global)?, &args)
        }
        Command::Commit(args) | Command::Container(ContainerCommand::Commit(args)) => {
            container::commit::commit(&mut open(&global)?, &args)
        }
        Command::Update(args) | Command::Container(ContainerCommand::Update(args)) => {
            container::commit::update(&mut open(&global)?, &args)
        }
        Command::Attach(args) | Command::Container(ContainerCommand::Attach(args)) => {
            container::attach_command::run(&mut open(&global)?, &args)
        }
        Command::Cp(args) | Command::Container(ContainerCommand::Cp(args)) => {
            container::copy::run(&open(&global)?, &args)
        }
        Command::Container(ContainerCommand::Prune(args)) => {
            container::lifecycle::prune(&mut open(&global)?, &args)
        }
        Command::Volume(command) => volume::run(&mut open(&global)?, &command),
        Command::Network(command) => network::run(&mut open(&global)?, &command),
        Command::Login(args) => registry::login::run(&args),
        Command::Logout(args) => registry::logout::run(&args),
        Command::Bench(args) => system::bench::run(&global, &args),
        Command::Warm(args) => system::warm::run(&global, &args),
        Command::Events(args) => system::events::run(&global, &args),
        Command::Serve(args) => system::serve::run(&global, &args),
        Command::ApiHelper(args) => system::serve::helper(&global, &args),
        Command::Image(ImageCommand::Prune(args)) => image::prune::run(&mut open(&global)?, &args),
    }
}

pub fn open(global: &GlobalOptions) -> anyhow::Result<Engine> {
    open_config(&EngineConfig {
        root: global.root.clone(),
        run_root: global.run_root.clone(),
    })
}

pub fn open_config(config: &EngineConfig) -> anyhow::Result<Engine> {
    Engine::open(config.clone())
        .with_context(|| format!("failed to open the berth root {:?}", config.root))
}

/// Docker's "Are you sure you want to continue? [y/N]" prompt; false
/// unless the answer is yes.
pub fn confirm(warning: &str) -> anyhow::Result<bool> {
    use std::io::{BufRead, Write};
    print!("{warning}\nAre you sure you want to continue? [y/N] ");
    std::io::stdout().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "Yes"))
}
