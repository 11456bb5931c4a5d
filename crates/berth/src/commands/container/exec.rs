//! `exec`.

use std::os::fd::{AsFd, OwnedFd};

use anyhow::Context;
use berth_engine::containers::{exec_detached, exec_in_container, ExecRequest};
use berth_engine::Engine;
use berth_runtime::Stdio;
use clap::Args;

use super::detach::KeysFor;
use crate::exit::{StatusError, FAILURE};

#[derive(Debug, Args)]
#[command(trailing_var_arg = true)]
pub struct ExecArgs {
    /// Detached mode: run command in the background
    #[arg(short, long)]
    pub detach: bool,
    /// Override the key sequence for detaching a container
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub detach_keys: Option<String>,
    /// Set environment variables
    #[arg(short, long = "env", value_name = "list")]
    pub env: Vec<String>,
    /// Read in a file of environment variables
    #[arg(long = "env-file", value_name = "list")]
    pub env_file: Vec<std::path::PathBuf>,
    /// Keep STDIN open even if not attached
    #[arg(short, long)]
    pub interactive: bool,
    /// Give extended privileges to the command
    #[arg(long)]
    pub privileged: bool,
    /// Allocate a pseudo-TTY
    #[arg(short, long)]
    pub tty: bool,
    /// Username or UID (format: "<name|uid>[:<group|gid>]")
    #[arg(short, long)]
    pub user: Option<String>,
    /// Working directory inside the container
    #[arg(short, long)]
    pub workdir: Option<String>,
    /// CONTAINER
    pub container: String,
    /// COMMAND [ARG...]
    #[arg(required = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

pub fn run(engine: &mut Engine, args: &ExecArgs) -> anyhow::Result<i32> {
    super::pty::check_tty(args.tty, args.interactive && !args.detach)?;
    // dockerd refuses bad keys when the exec is created, whatever it is;
    // config.json is read only when they can be used (a terminal's input).
    let keys = args.detach_keys.as_deref();
    let detach_keys = if args.tty && args.interactive && !args.detach {
        Some(super::detach::resolve(keys, KeysFor::Exec, FAILURE)?)
    } else {
        super::detach::check_flag(keys, KeysFor::Exec, FAILURE)?;
        None
    };
    let mut env = Vec::new();
    for file in &args.env_file {
        let text = fs_err::read_to_string(file)?;
        env.extend(
            text.lines()
                .map(str::trim)
                .filter(|line| !line.is_empty() && !line.starts_with('#'))
                .map(expand_env),
        );
    }
    env.extend(args.env.iter().map(|entry| expand_env(entry)));
    let request = ExecRequest {
        id: None,
        command: args.command.clone(),
        env,
        working_dir: args.workdir.clone(),
        user: args.user.clone(),
        tty: args.tty,
        console_size: berth_runtime::console::window_size(std::io::stdout())
            .map(|size| (size.ws_row, size.ws_col)),
        privileged: args.privileged,
    };
    let null = || -> anyhow::Result<OwnedFd> {
        Ok(fs_err::File::open("/dev/null")
            .context("failed to open /dev/null")?
            .into())
    };
    let dup = |fd: std::os::fd::BorrowedFd<'_>| -> anyhow::Result<OwnedFd> {
        fd.try_clone_to_owned()
            .context("failed to duplicate a standard stream")
    };
    if let Some(keys) = detach_keys {
        return super::pty::exec_with_pty_detachable(engine, &args.container, &request, keys);
    }
    if args.tty {
        return super::pty::exec_with_pty(engine, &args.container, &request, args.interactive);
    }
    if args.detach {
        // A waiter of its own reaps it (and logs its exec_die).
        exec_detached(engine, &args.container, &request).map_err(exec_failure)?;
        return Ok(0);
    }
    let stdio = Stdio {
        stdin: if args.interactive {
            dup(std::io::stdin().as_fd())?
        } else {
            null()?
        },
        stdout: dup(std::io::stdout().as_fd())?,
        stderr: dup(std::io::stderr().as_fd())?,
        console: None,
    };
    let process =
        exec_in_container(engine, &args.container, &request, stdio).map_err(exec_failure)?;
    Ok(process.wait())
}

/// `-e KEY` takes the value from our environment, as Docker does.
fn expand_env(entry: &str) -> String {
    if entry.contains('=') {
        return entry.to_owned();
    }
    match std::env::var(entry) {
        Ok(value) => format!("{entry}={value}"),
        Err(_) => entry.to_owned(),
    }
}

/// Docker's exit status for an exec that did not start: 126/127 when the
/// command cannot be invoked or found, 1 for other errors.
pub(super) fn exec_failure(error: berth_engine::EngineError) -> StatusError {
    crate::exit::engine_status_error(&error, crate::exit::FAILURE)
}
