//! One module per noun, one file per verb. Each command opens the engine,
//! calls it, and prints what Docker would print.

// Not wired into the command line yet; `run`/`create` land with the runtime.
pub mod compose;
pub mod container;
pub mod image;
pub mod monitor;
pub mod network;
mod output;
pub mod registry;
pub mod runtime;
pub mod swarm;
pub mod system;
pub mod volume;

use anyhow::Context;
use berth_engine::{Engine, EngineConfig};

use crate::cli::{Cli, Command, ContainerCommand, GlobalOptions, ImageCommand, Lazy};
use container::inspect::Kind;

/// Runs a parsed command line; returns the exit status.
pub fn run(cli: Cli) -> anyhow::Result<i32> {
    if enters_containers(&cli.command) {
        // First, while nothing has been done that a re-execution would repeat.
        seal_before_entering_containers()?;
    }
    if !starts_processes(&cli.command) {
        // `berth ps | head -1`: end quietly when the reader goes, as the docker CLI does,
        // rather than panic in println!. Commands that fork monitors, waiters or servers keep
        // Rust's SIGPIPE-ignored: those children must see EPIPE, not die of it.
        // SAFETY: SIG_DFL installs no handler code.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    let global = cli.global;
    match cli.command {
        Command::Version(Lazy(args)) => system::version::run(&args),
        Command::System(Lazy(command)) => system::run(&global, command),
        Command::Info(Lazy(args)) => system::info::run(&global, &args),
        Command::Build(Lazy(args)) => image::build::run(&mut open(&global)?, &args),
        Command::Image(Lazy(ImageCommand::Build(args))) => {
            image::build::run(&mut open(&global)?, &args)
        }
        Command::Images(Lazy(args)) | Command::Image(Lazy(ImageCommand::Ls(args))) => {
            image::list::run(&open(&global)?, &args)
        }
        Command::Load(Lazy(args)) | Command::Image(Lazy(ImageCommand::Load(args))) => {
            image::load::run(&mut open(&global)?, &args)
        }
        Command::Save(Lazy(args)) | Command::Image(Lazy(ImageCommand::Save(args))) => {
            image::save::run(&open(&global)?, &args)
        }
        Command::Import(Lazy(args)) | Command::Image(Lazy(ImageCommand::Import(args))) => {
            image::import::run(&mut open(&global)?, &args)
        }
        Command::Pull(Lazy(args)) | Command::Image(Lazy(ImageCommand::Pull(args))) => {
            image::pull::run(&mut open(&global)?, &args)
        }
        Command::Push(Lazy(args)) | Command::Image(Lazy(ImageCommand::Push(args))) => {
            image::push::run(&mut open(&global)?, &args)
        }
        Command::Tag(Lazy(args)) | Command::Image(Lazy(ImageCommand::Tag(args))) => {
            image::tag::run(&mut open(&global)?, &args)
        }
        Command::Rmi(Lazy(args)) | Command::Image(Lazy(ImageCommand::Rm(args))) => {
            image::remove::run(&mut open(&global)?, &args)
        }
        Command::History(Lazy(args)) | Command::Image(Lazy(ImageCommand::History(args))) => {
            image::history::run(&open(&global)?, &args)
        }
        Command::Image(Lazy(ImageCommand::Inspect(args))) => {
            image::inspect::run(&open(&global)?, &args)
        }
        Command::Inspect(Lazy(args)) => {
            container::inspect::run(&mut open(&global)?, &args, Kind::Any)
        }
        Command::Container(Lazy(ContainerCommand::Inspect(args))) => {
            container::inspect::run(&mut open(&global)?, &args, Kind::Container)
        }
        Command::Run(Lazy(options)) | Command::Container(Lazy(ContainerCommand::Run(options))) => {
            container::run::run(&mut open(&global)?, &options)
        }
        Command::Create(Lazy(options))
        | Command::Container(Lazy(ContainerCommand::Create(options))) => {
            container::run::create(&mut open(&global)?, &options)
        }
        Command::Start(Lazy(args)) | Command::Container(Lazy(ContainerCommand::Start(args))) => {
            container::lifecycle::start(&mut open(&global)?, &args)
        }
        Command::Stop(Lazy(args)) | Command::Container(Lazy(ContainerCommand::Stop(args))) => {
            container::lifecycle::stop(&mut open(&global)?, &args)
        }
        Command::Restart(Lazy(args))
        | Command::Container(Lazy(ContainerCommand::Restart(args))) => {
            container::lifecycle::restart(&mut open(&global)?, &args)
        }
        Command::Kill(Lazy(args)) | Command::Container(Lazy(ContainerCommand::Kill(args))) => {
            container::lifecycle::kill(&mut open(&global)?, &args)
        }
        Command::Rm(Lazy(args)) | Command::Container(Lazy(ContainerCommand::Rm(args))) => {
            container::lifecycle::remove(&mut open(&global)?, &args)
        }
        Command::Ps(Lazy(args)) | Command::Container(Lazy(ContainerCommand::Ls(args))) => {
            container::list::run(&open(&global)?, &args)
        }
        Command::Logs(Lazy(args)) | Command::Container(Lazy(ContainerCommand::Logs(args))) => {
            container::logs::run(&open(&global)?, &args)
        }
        Command::Exec(Lazy(args)) | Command::Container(Lazy(ContainerCommand::Exec(args))) => {
            container::exec::run(&mut open(&global)?, &args)
        }
        Command::Wait(Lazy(args)) | Command::Container(Lazy(ContainerCommand::Wait(args))) => {
            container::lifecycle::wait(&mut open(&global)?, &args)
        }
        Command::Top(Lazy(args)) | Command::Container(Lazy(ContainerCommand::Top(args))) => {
            container::top::top(&open(&global)?, &args)
        }
        Command::Pause(Lazy(args)) | Command::Container(Lazy(ContainerCommand::Pause(args))) => {
            container::lifecycle::pause(&mut open(&global)?, &args)
        }
        Command::Unpause(Lazy(args))
        | Command::Container(Lazy(ContainerCommand::Unpause(args))) => {
            container::lifecycle::unpause(&mut open(&global)?, &args)
        }
        Command::Rename(Lazy(args)) | Command::Container(Lazy(ContainerCommand::Rename(args))) => {
            container::lifecycle::rename(&mut open(&global)?, &args)
        }
        Command::Stats(Lazy(args)) | Command::Container(Lazy(ContainerCommand::Stats(args))) => {
            container::top::stats(&open(&global)?, &args)
        }
        Command::Port(Lazy(args)) | Command::Container(Lazy(ContainerCommand::Port(args))) => {
            container::top::port(&open(&global)?, &args)
        }
        Command::Diff(Lazy(args)) | Command::Container(Lazy(ContainerCommand::Diff(args))) => {
            container::changes::diff(&open(&global)?, &args)
        }
        Command::Export(Lazy(args)) | Command::Container(Lazy(ContainerCommand::Export(args))) => {
            container::changes::export(&open(&global)?, &args)
        }
        Command::Commit(Lazy(args)) | Command::Container(Lazy(ContainerCommand::Commit(args))) => {
            container::commit::commit(&mut open(&global)?, &args)
        }
        Command::Update(Lazy(args)) | Command::Container(Lazy(ContainerCommand::Update(args))) => {
            container::commit::update(&mut open(&global)?, &args)
        }
        Command::Attach(Lazy(args)) | Command::Container(Lazy(ContainerCommand::Attach(args))) => {
            container::attach_command::run(&mut open(&global)?, &args)
        }
        Command::Cp(Lazy(args)) | Command::Container(Lazy(ContainerCommand::Cp(args))) => {
            container::copy::run(&open(&global)?, &args)
        }
        Command::Container(Lazy(ContainerCommand::Prune(args))) => {
            container::lifecycle::prune(&mut open(&global)?, &args)
        }
        Command::Compose(Lazy(args)) => compose::run(&global, &args),
        Command::Volume(Lazy(command)) => volume::run(&mut open(&global)?, &command),
        Command::Network(Lazy(command)) => network::run(&mut open(&global)?, &command),
        Command::Swarm(Lazy(command)) => swarm::run(&mut open(&global)?, &command),
        Command::Login(Lazy(args)) => registry::login::run(&args),
        Command::Logout(Lazy(args)) => registry::logout::run(&args),
        Command::Bench(Lazy(args)) => system::bench::run(&global, &args),
        Command::Warm(Lazy(args)) => system::warm::run(&global, &args),
        Command::Events(Lazy(args)) => system::events::run(&global, &args),
        Command::Serve(Lazy(args)) => system::serve::run(&global, &args),
        Command::ApiHelper(Lazy(args)) => system::serve::helper(&global, &args),
        Command::Monitor(Lazy(args)) => monitor::run(&global, &args),
        Command::Image(Lazy(ImageCommand::Prune(args))) => {
            image::prune::run(&mut open(&global)?, &args)
        }
    }
}

pub fn open(global: &GlobalOptions) -> anyhow::Result<Engine> {
    open_config(&EngineConfig::new(
        global.root.clone(),
        global.run_root.clone(),
    ))
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

/// Makes sure this process runs from a binary no container can write before it forks anything
/// into a container (berth_runtime::sealed_exe): returns at once when it does, else re-executes
/// the command from a sealed copy. Non-root callers cannot start containers and are not
/// re-executed.
pub(crate) fn seal_before_entering_containers() -> anyhow::Result<()> {
    if nix::unistd::geteuid().is_root() {
        berth_runtime::sealed_exe::ensure_sealed()
            .context("refusing to start a process in a container from a writable berth binary")?;
    }
    Ok(())
}

/// The commands that fork processes which outlive their output (monitors, exec waiters, pool
/// members, servers): every command that enters containers, and `run`.
fn starts_processes(command: &Command) -> bool {
    enters_containers(command)
        || matches!(
            command,
            Command::Run(_) | Command::Container(Lazy(ContainerCommand::Run(_)))
        )
}

/// The commands whose processes enter containers (as the container's first process, an exec, a
/// pooled sandbox, or a server or monitor that starts them), sealed before they start. `run`
/// seals itself only for a cold start (`container/run.rs`): a warm one hands its process to a
/// pooled sandbox that already runs sealed.
fn enters_containers(command: &Command) -> bool {
    match command {
        Command::Start(_)
        | Command::Build(_)
        | Command::Image(Lazy(ImageCommand::Build(_)))
        | Command::Restart(_)
        | Command::Exec(_)
        | Command::Warm(_)
        | Command::Serve(_)
        | Command::ApiHelper(_)
        | Command::Monitor(_) => true,
        Command::Compose(Lazy(args)) => args.command.enters_containers(),
        Command::Container(Lazy(command)) => matches!(
            command,
            ContainerCommand::Start(_) | ContainerCommand::Restart(_) | ContainerCommand::Exec(_)
        ),
        _ => false,
    }
}
