//! `berth compose exec SERVICE COMMAND`: `berth exec` in the service's container (`--index`,
//! default 1), with compose's defaults: stdin attached, a TTY when stdin is a terminal unless
//! `-T`.

use std::io::IsTerminal;

use berth_compose::converge::containers::project_containers;
use clap::Args;

use super::ComposeArgs;
use crate::cli::GlobalOptions;
use crate::commands::container::exec::ExecArgs as ContainerExecArgs;

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// Detached mode: Run command in the background
    #[arg(short, long)]
    pub detach: bool,
    /// Set environment variables
    #[arg(short, long = "env", value_name = "stringArray")]
    pub env: Vec<String>,
    /// Index of the container if service has multiple replicas
    #[arg(long, default_value_t = 1)]
    pub index: u32,
    /// Disable pseudo-TTY allocation. By default `docker compose exec` allocates a TTY
    #[arg(short = 'T', long = "no-tty")]
    pub no_tty: bool,
    /// Give extended privileges to the process
    #[arg(long)]
    pub privileged: bool,
    /// Run the command as this user
    #[arg(short, long)]
    pub user: Option<String>,
    /// Path to workdir directory for this command
    #[arg(short, long)]
    pub workdir: Option<String>,
    /// SERVICE
    pub service: String,
    /// COMMAND [ARGS...]
    #[arg(required = true, allow_hyphen_values = true, trailing_var_arg = true)]
    pub command: Vec<String>,
}

pub fn run(global: &GlobalOptions, compose: &ComposeArgs, args: &ExecArgs) -> anyhow::Result<i32> {
    let project = super::load_or_name(compose)?;
    let mut engine = crate::commands::open(global)?;
    let container = project_containers(&engine, &project.name)?
        .into_iter()
        .find(|c| {
            !c.oneoff
                && c.service == args.service
                && c.number == args.index
                && c.container.state.is_running()
        })
        .ok_or_else(|| anyhow::anyhow!("service {:?} is not running", args.service))?;
    let interactive = !args.detach;
    let exec = ContainerExecArgs {
        detach: args.detach,
        detach_keys: None,
        env: args.env.clone(),
        env_file: Vec::new(),
        interactive,
        privileged: args.privileged,
        tty: interactive && !args.no_tty && std::io::stdin().is_terminal(),
        user: args.user.clone(),
        workdir: args.workdir.clone(),
        container: container.id,
        command: args.command.clone(),
    };
    crate::commands::container::exec::run(&mut engine, &exec)
}
