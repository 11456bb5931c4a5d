//! `berth compose`: docker compose v2's commands over berth-compose. One file per verb; this
//! file holds the options every verb shares (`-f`, `-p`, `--project-directory`, `--env-file`,
//! `--profile`) and turns them into [`berth_compose::ProjectOptions`].

pub mod config;

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
        eprintln!("WARN[0000] {warning}");
    }
    Ok(project)
}

pub fn run(global: &GlobalOptions, args: &ComposeArgs) -> anyhow::Result<i32> {
    let _ = global;
    match &args.command {
        ComposeCommand::Config(config) => config::run(args, config),
    }
}
