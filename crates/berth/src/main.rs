//! The `berth` command line: parse, set up logging, dispatch, map errors to
//! Docker's exit codes. Also the guest agent when it is a berth microVM's
//! PID 1.

mod cli;
mod commands;
mod exit;
mod format;

use clap::Parser;

fn main() {
    // berth is also the /init of its microVMs' initramfs (crates/berth-vm,
    // docs/VM.md): PID 1 with the agent's configuration there runs the guest
    // agent instead of the CLI. For every other run this costs one getpid.
    if berth_vm::agent::is_guest_init() {
        berth_vm::agent::main();
    }
    // A VM container's shim (berth-engine `containers/vm`), started by its
    // monitor: its stdio is the container's, so nothing else may print.
    let hidden = std::env::args_os().nth(1);
    let hidden = hidden.as_deref().and_then(std::ffi::OsStr::to_str);
    if hidden == Some(berth_engine::containers::vm::shim::SHIM_COMMAND) {
        std::process::exit(berth_engine::containers::vm::shim::run(init_shim_tracing));
    }
    // A VM container's exec relay likewise: its stdio is the exec's.
    if hidden == Some(berth_engine::containers::vm::exec::EXEC_COMMAND) {
        std::process::exit(berth_engine::containers::vm::exec::run());
    }
    // `berth runtime …` or the `berth-runc` link: runc's command line (commands/runtime).
    if let Some(code) = commands::runtime::dispatch() {
        std::process::exit(code);
    }
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let code = exit::for_clap_error(&error);
            match exit::docker_words_for_clap_error(&error) {
                Some(message) => eprintln!("{message}"),
                None => {
                    let _ = error.print();
                }
            }
            std::process::exit(code);
        }
    };
    init_tracing(&cli.global);
    tracing::debug!("command line parsed");
    if let Err(code) = enter_state(&cli) {
        std::process::exit(code);
    }
    let code = match commands::run(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("{}", exit::message_for_error(&error));
            exit::for_error(&error)
        }
    };
    std::process::exit(code);
}

/// Before anything touches the roots: only root may use berth's state (it
/// is private to root; rootless berth is for later), and what berth makes
/// there is private from its creation on (umask 077; berth-engine
/// `permissions` for what containers read). A refused user gets Docker's
/// kind of message and exit status 1, and nothing is written.
fn enter_state(cli: &cli::Cli) -> Result<(), i32> {
    use berth_engine::permissions::STATE_UMASK;
    let state_use = cli.command.state_use();
    if state_use == cli::StateUse::None {
        return Ok(());
    }
    if !nix::unistd::geteuid().is_root() {
        eprintln!(
            "permission denied while trying to connect to berth's state at {}: are you root?",
            cli.global.root.display()
        );
        return Err(exit::FAILURE);
    }
    let umask = match state_use {
        cli::StateUse::Private => STATE_UMASK,
        cli::StateUse::None | cli::StateUse::CallersFiles => return Ok(()),
    };
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(umask));
    Ok(())
}

/// A VM shim's stderr is its container's: its diagnostics go to
/// `BERTH_MONITOR_LOG` only, where its monitor's go (at `BERTH_LOG`'s
/// level, `warn` by default), and nowhere without it.
fn init_shim_tracing() {
    let Some(path) = std::env::var_os("BERTH_MONITOR_LOG") else {
        return;
    };
    let Ok(file) = fs_err::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    else {
        return;
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("BERTH_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::sync::Mutex::new(file.into_parts().0))
        .with_ansi(false)
        .with_target(false)
        .init();
}

fn init_tracing(global: &cli::GlobalOptions) {
    let level = if global.debug {
        "debug"
    } else if global.log_level == "fatal" {
        "error"
    } else {
        global.log_level.as_str()
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("BERTH_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}
