//! `berth compose`: docker compose v2's commands over berth-compose. One file per verb; this
//! file holds the options every verb shares (`-f`, `-p`, `--project-directory`, `--env-file`,
//! `--profile`) and turns them into [`berth_compose::ProjectOptions`].

pub mod config;
pub mod down;
pub mod exec;
pub mod lifecycle;
pub mod logs;
pub mod ls;
pub mod ps;
pub mod up;

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};

use crate::cli::GlobalOptions;

#[derive(Debug, Args)]
pub struct ComposeArgs {
    /// Compose configuration files
    #[arg(short = 'f', long = "file", value_name = "stringArray")]
    pub files: Vec<PathBuf>,
    /// Project name
    #[arg(short = 'p', long = "project-name", value_name = "string")]
    pub project_name: Option<String>,
    /// Specify an alternate working directory (default: the path of the first Compose file)
    #[arg(long, value_name = "string")]
    pub project_directory: Option<PathBuf>,
    /// Specify an alternate environment file
    #[arg(long = "env-file", value_name = "stringArray")]
    pub env_files: Vec<PathBuf>,
    /// Specify a profile to enable
    #[arg(long = "profile", value_name = "stringArray")]
    pub profiles: Vec<String>,
    #[command(subcommand)]
    pub command: ComposeCommand,
}

#[derive(Debug, Subcommand)]
pub enum ComposeCommand {
    /// Parse, resolve and render compose file in canonical format
    Config(config::ConfigArgs),
    /// Create and start containers
    Up(up::UpArgs),
    /// Stop and remove containers, networks
    Down(down::DownArgs),
    /// List containers
    Ps(ps::PsArgs),
    /// View output from containers
    Logs(logs::LogsArgs),
    /// Stop services
    Stop(lifecycle::StopArgs),
    /// Start services
    Start(lifecycle::StartArgs),
    /// Removes stopped service containers
    Rm(lifecycle::RmArgs),
    /// Restart service containers
    Restart(lifecycle::RestartArgs),
    /// Force stop service containers
    Kill(lifecycle::KillArgs),
    /// Pause services
    Pause(lifecycle::ServicesArgs),
    /// Unpause services
    Unpause(lifecycle::ServicesArgs),
    /// Execute a command in a running container
    Exec(exec::ExecArgs),
    /// List running compose projects
    Ls(ls::LsArgs),
}

impl ComposeCommand {
    /// The verbs that start containers (their processes must come from a sealed binary).
    pub fn enters_containers(&self) -> bool {
        matches!(
            self,
            ComposeCommand::Up(_)
                | ComposeCommand::Start(_)
                | ComposeCommand::Restart(_)
                | ComposeCommand::Exec(_)
        )
    }
}

impl ComposeArgs {
    pub fn project_options(&self) -> anyhow::Result<berth_compose::ProjectOptions> {
        let working_dir =
            std::env::current_dir().context("failed to read the current directory")?;
        Ok(berth_compose::ProjectOptions {
            files: self.files.clone(),
            name: self.project_name.clone(),
            project_directory: self.project_directory.clone(),
            env_files: self.env_files.clone(),
            profiles: self.profiles.clone(),
            environment: std::env::vars().collect(),
            working_dir,
        })
    }
}

/// Loads the project, printing its warnings as compose does (on stderr).
pub fn load(args: &ComposeArgs) -> anyhow::Result<berth_compose::Project> {
    let project = berth_compose::load(&args.project_options()?)?;
    for warning in &project.warnings {
        berth_compose::converge::Reporter::warn(&berth_compose::converge::StderrReporter, warning);
    }
    Ok(project)
}

/// The project, or with `-p` and no compose file, an empty project of that name (so `down`,
/// `ps`, `logs` and `stop` work on a project whose files are gone, as in compose).
pub fn load_or_name(args: &ComposeArgs) -> anyhow::Result<berth_compose::Project> {
    match berth_compose::load(&args.project_options()?) {
        Err(berth_compose::ComposeError::NoFile) if args.project_name.is_some() => {
            let name = args.project_name.clone().unwrap_or_default();
            Ok(berth_compose::Project {
                model: serde_json::json!({"name": name, "services": {}}),
                name,
                working_dir: std::env::current_dir()?,
                config_files: Vec::new(),
                all_profiles: Vec::new(),
                warnings: Vec::new(),
                variables: Default::default(),
            })
        }
        other => {
            let project = other?;
            for warning in &project.warnings {
                berth_compose::converge::Reporter::warn(
                    &berth_compose::converge::StderrReporter,
                    warning,
                );
            }
            Ok(project)
        }
    }
}

pub fn run(global: &GlobalOptions, args: &ComposeArgs) -> anyhow::Result<i32> {
    match &args.command {
        ComposeCommand::Config(config) => config::run(args, config),
        ComposeCommand::Up(up) => up::run(global, args, up),
        ComposeCommand::Down(down) => down::run(global, args, down),
        ComposeCommand::Ps(ps) => ps::run(global, args, ps),
        ComposeCommand::Logs(logs) => logs::run(global, args, logs),
        ComposeCommand::Stop(stop) => lifecycle::stop(global, args, stop),
        ComposeCommand::Start(start) => lifecycle::start(global, args, start),
        ComposeCommand::Rm(rm) => lifecycle::remove(global, args, rm),
        ComposeCommand::Restart(restart) => lifecycle::restart(global, args, restart),
        ComposeCommand::Kill(kill) => lifecycle::kill(global, args, kill),
        ComposeCommand::Pause(services) => lifecycle::pause(global, args, services, true),
        ComposeCommand::Unpause(services) => lifecycle::pause(global, args, services, false),
        ComposeCommand::Exec(exec) => exec::run(global, args, exec),
        ComposeCommand::Ls(ls) => ls::run(global, ls),
    }
}
