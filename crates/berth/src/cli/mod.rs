//! The command line: Docker's commands, flags and defaults.

mod lazy;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use lazy::Lazy;

use crate::commands::compose::ComposeArgs;
use crate::commands::container::attach_command::AttachArgs;
use crate::commands::container::changes::{DiffArgs, ExportArgs};
use crate::commands::container::commit::{CommitArgs, UpdateArgs};
use crate::commands::container::copy::CpArgs;
use crate::commands::container::exec::ExecArgs;
use crate::commands::container::inspect::InspectArgs as AnyInspectArgs;
use crate::commands::container::lifecycle::{
    ContainersArgs, KillArgs, PruneArgs as ContainerPruneArgs, RenameArgs, RmArgs, StartArgs,
    StopArgs,
};
use crate::commands::container::list::PsArgs;
use crate::commands::container::logs::LogsArgs;
use crate::commands::container::options::{CreateOptions, RunOptions};
use crate::commands::container::top::{PortArgs, StatsArgs, TopArgs};
use crate::commands::image::{
    BuildArgs, HistoryArgs, ImagesArgs, ImportArgs, InspectArgs, LoadArgs, PruneArgs, PullArgs,
    PushArgs, RmiArgs, SaveArgs, TagArgs,
};
use crate::commands::monitor::MonitorArgs;
use crate::commands::network::NetworkCommand;
use crate::commands::registry::{LoginArgs, LogoutArgs};
use crate::commands::swarm::SwarmCommand;
use crate::commands::system::bench::BenchArgs;
use crate::commands::system::events::EventsArgs;
use crate::commands::system::serve::{ApiHelperArgs, ServeArgs};
use crate::commands::system::version::VersionArgs;
use crate::commands::system::warm::WarmArgs;
use crate::commands::system::{InfoArgs, SystemCommand};
use crate::commands::volume::VolumeCommand;

/// What `berth --version` prints after the name, as `docker --version` prints
/// `Docker version 20.10.24, build 297e128`.
fn version_line() -> &'static str {
    static LINE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    LINE.get_or_init(|| {
        format!(
            "version {}, build {}",
            env!("CARGO_PKG_VERSION"),
            berth_api::version::GIT_COMMIT
        )
    })
}

/// A Docker-compatible container engine. No daemon: each command does its
/// work and exits.
#[derive(Debug, Parser)]
#[command(name = "berth", version = version_line(), disable_version_flag = true)]
pub struct Cli {
    /// Print version information and quit
    #[arg(short = 'v', long = "version", action = clap::ArgAction::Version)]
    version: Option<bool>,
    #[command(flatten)]
    pub global: GlobalOptions,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Args)]
pub struct GlobalOptions {
    /// Persistent state directory (images, containers, volumes)
    #[arg(
        long,
        global = true,
        env = "BERTH_ROOT",
        default_value = "/var/lib/berth",
        value_name = "DIR"
    )]
    pub root: PathBuf,
    /// Runtime state directory (sockets, pids)
    #[arg(
        long,
        global = true,
        env = "BERTH_RUN_ROOT",
        default_value = "/run/berth",
        value_name = "DIR"
    )]
    pub run_root: PathBuf,
    /// Enable debug output
    #[arg(short = 'D', long, global = true)]
    pub debug: bool,
    /// Set the logging level ("debug"|"info"|"warn"|"error"|"fatal")
    #[arg(long, global = true, default_value = "warn", value_name = "LEVEL",
          value_parser = ["trace", "debug", "info", "warn", "error", "fatal"])]
    pub log_level: String,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the berth version information
    Version(Lazy<VersionArgs>),
    /// Display system-wide information
    Info(Lazy<InfoArgs>),
    /// Build an image from a Dockerfile
    Build(Lazy<BuildArgs>),
    /// List images
    Images(Lazy<ImagesArgs>),
    /// Manage images
    #[command(subcommand)]
    Image(Lazy<ImageCommand>),
    /// Load an image from a tar archive or STDIN
    Load(Lazy<LoadArgs>),
    /// Save one or more images to a tar archive (streamed to STDOUT by default)
    Save(Lazy<SaveArgs>),
    /// Import the contents from a tarball to create a filesystem image
    Import(Lazy<ImportArgs>),
    /// Download an image from a registry
    Pull(Lazy<PullArgs>),
    /// Upload an image to a registry
    Push(Lazy<PushArgs>),
    /// Create a tag TARGET_IMAGE that refers to SOURCE_IMAGE
    Tag(Lazy<TagArgs>),
    /// Remove one or more images
    Rmi(Lazy<RmiArgs>),
    /// Show the history of an image
    History(Lazy<HistoryArgs>),
    /// Return low-level information on berth objects
    Inspect(Lazy<AnyInspectArgs>),
    /// Create and run a new container from an image
    Run(Lazy<RunOptions>),
    /// Create a new container
    Create(Lazy<CreateOptions>),
    /// Start one or more stopped containers
    Start(Lazy<StartArgs>),
    /// Stop one or more running containers
    Stop(Lazy<StopArgs>),
    /// Restart one or more containers
    Restart(Lazy<StopArgs>),
    /// Kill one or more running containers
    Kill(Lazy<KillArgs>),
    /// Remove one or more containers
    Rm(Lazy<RmArgs>),
    /// List containers
    Ps(Lazy<PsArgs>),
    /// Fetch the logs of a container
    Logs(Lazy<LogsArgs>),
    /// Execute a command in a running container
    Exec(Lazy<ExecArgs>),
    /// Block until one or more containers stop, then print their exit codes
    Wait(Lazy<ContainersArgs>),
    /// Display the running processes of a container
    Top(Lazy<TopArgs>),
    /// Pause all processes within one or more containers
    Pause(Lazy<ContainersArgs>),
    /// Unpause all processes within one or more containers
    Unpause(Lazy<ContainersArgs>),
    /// Rename a container
    Rename(Lazy<RenameArgs>),
    /// Display a live stream of container(s) resource usage statistics
    Stats(Lazy<StatsArgs>),
    /// List port mappings or a specific mapping for the container
    Port(Lazy<PortArgs>),
    /// Inspect changes to files or directories on a container's filesystem
    Diff(Lazy<DiffArgs>),
    /// Export a container's filesystem as a tar archive
    Export(Lazy<ExportArgs>),
    /// Create a new image from a container's changes
    Commit(Lazy<CommitArgs>),
    /// Update configuration of one or more containers
    Update(Lazy<UpdateArgs>),
    /// Copy files/folders between a container and the local filesystem
    Cp(Lazy<CpArgs>),
    /// Attach local standard input, output, and error streams to a running container
    Attach(Lazy<AttachArgs>),
    /// Manage containers
    #[command(subcommand)]
    Container(Lazy<ContainerCommand>),
    /// Define and run multi-container applications
    Compose(Lazy<ComposeArgs>),
    /// Manage volumes
    #[command(subcommand)]
    Volume(Lazy<VolumeCommand>),
    /// Manage networks
    #[command(subcommand)]
    Network(Lazy<NetworkCommand>),
    /// Manage a single-node swarm (overlay networks on this host)
    #[command(subcommand)]
    Swarm(Lazy<SwarmCommand>),
    /// Log in to a Docker registry
    Login(Lazy<LoginArgs>),
    /// Log out from a Docker registry
    Logout(Lazy<LogoutArgs>),
    /// Benchmark berth side by side with the other engines on this machine
    Bench(Lazy<BenchArgs>),
    /// Keep pre-built sandboxes of an image ready, so runs start in milliseconds
    Warm(Lazy<WarmArgs>),
    /// Get real time events from the engine
    Events(Lazy<EventsArgs>),
    /// Manage berth
    #[command(subcommand)]
    System(Lazy<SystemCommand>),
    /// Serve the Docker Engine API on a unix socket or TLS-verified TCP
    Serve(Lazy<ServeArgs>),
    /// Internal: work `berth serve` runs in a process of its own
    #[command(hide = true)]
    ApiHelper(Lazy<ApiHelperArgs>),
    /// Internal: a monitor started by a berth process with threads
    #[command(name = "__monitor", hide = true)]
    Monitor(Lazy<MonitorArgs>),
}

/// How a command touches berth's state, which decides who may run it and
/// the umask it runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateUse {
    /// No state (`version`, `login`, `logout`): anyone, the caller's umask.
    None,
    /// Writes state under the roots: root only, umask 077 (nothing berth
    /// makes there is for other users; berth-engine `permissions`).
    Private,
    /// Reads state and writes files for the caller (`save -o`, `export -o`,
    /// `cp` to the host) or runs `bench`: root only, the caller's umask.
    CallersFiles,
}

impl Command {
    pub fn state_use(&self) -> StateUse {
        match self {
            Command::Version(_) | Command::Login(_) | Command::Logout(_) => StateUse::None,
            Command::Save(_)
            | Command::Image(Lazy(ImageCommand::Save(_)))
            | Command::Export(_)
            | Command::Container(Lazy(ContainerCommand::Export(_)))
            | Command::Cp(_)
            | Command::Container(Lazy(ContainerCommand::Cp(_)))
            | Command::Bench(_) => StateUse::CallersFiles,
            _ => StateUse::Private,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum ContainerCommand {
    /// Create and run a new container from an image
    Run(RunOptions),
    /// Create a new container
    Create(CreateOptions),
    /// Start one or more stopped containers
    Start(StartArgs),
    /// Stop one or more running containers
    Stop(StopArgs),
    /// Restart one or more containers
    Restart(StopArgs),
    /// Kill one or more running containers
    Kill(KillArgs),
    /// Remove one or more containers
    #[command(visible_alias = "remove")]
    Rm(RmArgs),
    /// List containers
    #[command(visible_aliases = ["ps", "list"])]
    Ls(PsArgs),
    /// Fetch the logs of a container
    Logs(LogsArgs),
    /// Execute a command in a running container
    Exec(ExecArgs),
    /// Block until one or more containers stop, then print their exit codes
    Wait(ContainersArgs),
    /// Display the running processes of a container
    Top(TopArgs),
    /// Pause all processes within one or more containers
    Pause(ContainersArgs),
    /// Unpause all processes within one or more containers
    Unpause(ContainersArgs),
    /// Rename a container
    Rename(RenameArgs),
    /// Display a live stream of container(s) resource usage statistics
    Stats(StatsArgs),
    /// List port mappings or a specific mapping for the container
    Port(PortArgs),
    /// Display detailed information on one or more containers
    Inspect(AnyInspectArgs),
    /// Inspect changes to files or directories on a container's filesystem
    Diff(DiffArgs),
    /// Export a container's filesystem as a tar archive
    Export(ExportArgs),
    /// Create a new image from a container's changes
    Commit(CommitArgs),
    /// Update configuration of one or more containers
    Update(UpdateArgs),
    /// Copy files/folders between a container and the local filesystem
    Cp(CpArgs),
    /// Attach local standard input, output, and error streams to a running container
    Attach(AttachArgs),
    /// Remove all stopped containers
    Prune(ContainerPruneArgs),
}

#[derive(Debug, Subcommand)]
pub enum ImageCommand {
    /// Build an image from a Dockerfile
    Build(Box<BuildArgs>),
    /// List images
    #[command(visible_alias = "list")]
    Ls(ImagesArgs),
    /// Remove one or more images
    #[command(visible_alias = "remove")]
    Rm(RmiArgs),
    /// Display detailed information on one or more images
    Inspect(InspectArgs),
    /// Load an image from a tar archive or STDIN
    Load(LoadArgs),
    /// Save one or more images to a tar archive (streamed to STDOUT by default)
    Save(SaveArgs),
    /// Import the contents from a tarball to create a filesystem image
    Import(ImportArgs),
    /// Create a tag TARGET_IMAGE that refers to SOURCE_IMAGE
    Tag(TagArgs),
    /// Show the history of an image
    History(HistoryArgs),
    /// Remove unused images
    Prune(PruneArgs),
    /// Download an image from a registry
    Pull(PullArgs),
    /// Upload an image to a registry
    Push(PushArgs),
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap's own consistency checks over every subcommand (duplicate short
    /// flags between global and command options, bad defaults, …).
    #[test]
    fn command_line_definition_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
