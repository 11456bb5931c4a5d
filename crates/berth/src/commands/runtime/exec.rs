//! `exec`: a process from `--process` (config.json's `process` form) or from the container's
//! own process with the command line's command and flags; in the foreground berth waits and
//! exits with its status, `--detach` returns once it runs.

use berth_oci::config::ProcessFile;
use berth_oci::lifecycle::{self, ExecOptions, StdioSource};

use super::cli::ExecArgs;

pub fn run(store: &berth_oci::Store, args: &ExecArgs) -> anyhow::Result<i32> {
    if args.process_label.is_some() {
        anyhow::bail!("--process-label is not supported by berth (no SELinux)");
    }
    if args.apparmor.is_some() {
        anyhow::bail!("--apparmor is not supported by berth (no AppArmor)");
    }
    if args.preserve_fds != 0 {
        anyhow::bail!("--preserve-fds is not supported by berth's exec");
    }
    berth_oci::store::validate_id(&args.id)?;
    let record = store.load(&args.id)?;
    let linux = record.config.linux.clone().unwrap_or_default();
    let process = match &args.process {
        Some(path) => {
            if !args.command.is_empty() {
                anyhow::bail!("--process and a command cannot be given together");
            }
            let bytes = fs_err::read(path)?;
            serde_json::from_slice::<ProcessFile>(&bytes).map_err(|error| {
                anyhow::anyhow!("failed to parse the process {}: {error}", path.display())
            })?
        }
        None => from_flags(record.config.process.clone().unwrap_or_default(), args)?,
    };
    let process = berth_oci::convert::convert_process(&process, &linux)?;
    crate::commands::seal_before_entering_containers()?;
    let tty = process.tty;
    let (stdio, relay) = match &args.console_socket {
        Some(path) => (StdioSource::ConsoleSocket(path.clone()), None),
        None if tty && !args.detach => {
            let (stdio, ours) = super::terminal::pair()?;
            (stdio, Some(ours))
        }
        None => (StdioSource::Inherit, None),
    };
    let pid = lifecycle::exec(
        store,
        &args.id,
        ExecOptions {
            process,
            stdio,
            pid_file: args.pid_file.clone(),
        },
    )?;
    if args.detach {
        return Ok(0);
    }
    super::run::forward_signals_to(pid.as_raw());
    let wait = || berth_runtime::wait_exit_code(pid);
    match relay {
        Some(ours) => super::terminal::relay(ours, wait),
        None => Ok(wait()),
    }
}

/// The container's process with what the command line changes (runc's exec flags).
fn from_flags(mut process: ProcessFile, args: &ExecArgs) -> anyhow::Result<ProcessFile> {
    if args.command.is_empty() {
        anyhow::bail!("exec needs a command (or --process)");
    }
    process.args = args.command.clone();
    process.terminal = args.tty;
    process.console_size = None;
    if let Some(cwd) = &args.cwd {
        process.cwd = cwd.clone();
    }
    process.env.extend(args.env.iter().cloned());
    if let Some(user) = &args.user {
        let (uid, gid) = user.split_once(':').unwrap_or((user, ""));
        process.user.uid = uid
            .parse()
            .map_err(|_| anyhow::anyhow!("invalid --user {user:?}: UID[:GID] numbers"))?;
        if !gid.is_empty() {
            process.user.gid = gid
                .parse()
                .map_err(|_| anyhow::anyhow!("invalid --user {user:?}: UID[:GID] numbers"))?;
        }
    }
    if !args.additional_gids.is_empty() {
        process.user.additional_gids = args.additional_gids.clone();
    }
    if args.no_new_privs {
        process.no_new_privileges = true;
    }
    if !args.cap.is_empty() {
        let sets = process.capabilities.get_or_insert_with(Default::default);
        for cap in &args.cap {
            let name = berth_runtime::capabilities::name(berth_runtime::capabilities::parse(cap)?)
                .to_owned();
            for set in [&mut sets.bounding, &mut sets.effective, &mut sets.permitted] {
                if !set.contains(&name) {
                    set.push(name.clone());
                }
            }
        }
    }
    Ok(process)
}
