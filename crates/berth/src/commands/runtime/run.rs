//! `run`: `create` + `start`; in the foreground berth waits for the process (forwarding
//! signals to it), deletes the container (unless `--keep`) and exits with its status.

use std::sync::atomic::{AtomicI32, Ordering};

use berth_oci::lifecycle::{self, CreateOptions, StdioSource};

use super::cli::RunArgs;

pub fn run(store: &berth_oci::Store, args: &RunArgs) -> anyhow::Result<i32> {
    super::check_create_flags(&args.flags)?;
    let bundle = &args.flags.bundle;
    let terminal = berth_oci::convert::read_config(bundle)?
        .process
        .is_some_and(|process| process.terminal);
    crate::commands::seal_before_entering_containers()?;
    let (stdio, relay) = match &args.flags.console_socket {
        Some(path) => (StdioSource::ConsoleSocket(path.clone()), None),
        None if terminal && !args.detach => {
            let (stdio, ours) = super::terminal::pair()?;
            (stdio, Some(ours))
        }
        None => (StdioSource::Inherit, None),
    };
    let created = lifecycle::create(
        store,
        &args.id,
        CreateOptions {
            bundle: bundle.clone(),
            pid_file: args.flags.pid_file.clone(),
            stdio,
            preserve_fds: args.flags.preserve_fds,
        },
    )?;
    if let Err(error) = lifecycle::start(store, &args.id) {
        let _ = lifecycle::delete(store, &args.id, true);
        return Err(error.into());
    }
    if args.detach {
        return Ok(0);
    }
    let pid = created.launched.pid;
    forward_signals_to(pid.as_raw());
    let wait = || berth_runtime::wait_exit_code(pid);
    let code = match relay {
        Some(ours) => super::terminal::relay(ours, wait)?,
        None => wait(),
    };
    if !args.keep {
        lifecycle::delete(store, &args.id, true)?;
    }
    Ok(code)
}

/// The process signals to this berth are forwarded to.
static FORWARD_TO: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward(signal: libc::c_int) {
    let pid = FORWARD_TO.load(Ordering::Relaxed);
    if pid > 0 {
        // SAFETY: kill(2) is async-signal-safe and touches no memory.
        unsafe { libc::kill(pid, signal) };
    }
}

/// The signals a foreground `run`/`exec` passes on (runc's signal handler does the same).
pub fn forward_signals_to(pid: i32) {
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
    FORWARD_TO.store(pid, Ordering::Relaxed);
    let action = SigAction::new(
        SigHandler::Handler(forward),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for signal in [
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGQUIT,
        Signal::SIGUSR1,
        Signal::SIGUSR2,
        Signal::SIGWINCH,
    ] {
        // SAFETY: the handler only reads an atomic and calls kill(2).
        let _ = unsafe { sigaction(signal, &action) };
    }
}
