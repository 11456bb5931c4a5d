//! `berth runtime <verb>`, and berth run through a link named `berth-runc`: runc's command
//! line over berth-oci (docs/OCI-RUNTIME.md). One file per verb; errors are printed once,
//! as runc prints them (stderr, and the `--log` file in text or JSON), with exit status 1.

mod cli;
mod create;
mod delete;
mod events;
mod exec;
mod features;
mod kill;
mod list;
mod log;
mod pause;
mod ps;
mod refused;
mod resume;
mod run;
mod spec;
mod start;
mod state;
mod terminal;
mod update;

use std::ffi::OsString;

use clap::Parser;

use cli::{RuntimeCli, Verb};

/// The name of the link through which berth is runc.
pub const LINK_NAME: &str = "berth-runc";

/// The runtime's arguments when this invocation is one: `berth-runc ARGS` or
/// `berth runtime ARGS` (program name first, as clap wants them).
fn runtime_arguments() -> Option<Vec<OsString>> {
    let mut arguments: Vec<OsString> = std::env::args_os().collect();
    let program = arguments.first()?;
    let name = std::path::Path::new(program).file_name()?.to_str()?;
    if name == LINK_NAME {
        return Some(arguments);
    }
    if arguments.get(1).is_some_and(|verb| verb == "runtime") {
        arguments.remove(1);
        arguments[0] = OsString::from(LINK_NAME);
        return Some(arguments);
    }
    None
}

/// The name of the link that would pick the microVM backend (issue 20), not there yet.
const VM_LINK_NAME: &str = "berth-vm-runc";

/// Runs the runtime and returns its exit status when this invocation is the runtime's.
pub fn dispatch() -> Option<i32> {
    let program = std::env::args_os().next().unwrap_or_default();
    if std::path::Path::new(&program)
        .file_name()
        .is_some_and(|name| name == VM_LINK_NAME)
    {
        eprintln!(
            "time={:?} level=error msg=\"{VM_LINK_NAME}: VM isolation is not available through berth's OCI runtime yet; use {LINK_NAME}\"",
            chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        );
        return Some(1);
    }
    let arguments = runtime_arguments()?;
    let cli = match RuntimeCli::try_parse_from(arguments) {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return Some(if error.use_stderr() { 1 } else { 0 });
        }
    };
    if !matches!(cli.verb, Verb::Create(_) | Verb::Run(_) | Verb::Exec(_)) {
        // `berth-runc list | head -1` ends quietly, as the main CLI does; the verbs that
        // start processes keep Rust's ignored SIGPIPE (their children reset it anyway).
        // SAFETY: SIG_DFL installs no handler code.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    let logger = log::Logger::new(&cli.global);
    logger.init_tracing(cli.global.debug);
    Some(match run(&cli) {
        Ok(code) => code,
        Err(error) => {
            logger.error(&format!("{:#}", error));
            // runc's exec fails with 255, so that its callers tell it from the process's 1.
            if matches!(cli.verb, Verb::Exec(_)) {
                255
            } else {
                1
            }
        }
    })
}

fn store(cli: &RuntimeCli) -> anyhow::Result<berth_oci::Store> {
    Ok(berth_oci::Store::open(&cli.global.root)?)
}

fn run(cli: &RuntimeCli) -> anyhow::Result<i32> {
    if !matches!(cli.global.log_format.as_str(), "text" | "json") {
        anyhow::bail!(
            "invalid log-format {:?}: text or json",
            cli.global.log_format
        );
    }
    if cli.global.systemd_cgroup {
        anyhow::bail!("--systemd-cgroup is not supported by berth: use cgroupfs cgroup paths");
    }
    if let Some(mode) = cli.global.rootless.as_deref() {
        if !matches!(mode, "false" | "auto") {
            anyhow::bail!("--rootless={mode} is not supported by berth");
        }
    }
    if !nix::unistd::geteuid().is_root() && !matches!(cli.verb, Verb::Features | Verb::Spec(_)) {
        anyhow::bail!("berth's OCI runtime must run as root (rootless is not supported yet)");
    }
    match &cli.verb {
        Verb::Create(args) => create::run(&store(cli)?, args),
        Verb::Start(args) => start::run(&store(cli)?, args),
        Verb::State(args) => state::run(&store(cli)?, args),
        Verb::Kill(args) => kill::run(&store(cli)?, args),
        Verb::Delete(args) => delete::run(&store(cli)?, args),
        Verb::Exec(args) => exec::run(&store(cli)?, args),
        Verb::Ps(args) => ps::run(&store(cli)?, args),
        Verb::Pause(args) => pause::run(&store(cli)?, args),
        Verb::Resume(args) => resume::run(&store(cli)?, args),
        Verb::Features => features::run(),
        Verb::Spec(args) => spec::run(args),
        Verb::Run(args) => run::run(&store(cli)?, args),
        Verb::List(args) => list::run(&store(cli)?, args),
        Verb::Update(args) => update::run(&store(cli)?, args),
        Verb::Events(args) => events::run(&store(cli)?, args),
        Verb::Checkpoint(_) => refused::run("checkpoint"),
        Verb::Restore(_) => refused::run("restore"),
    }
}

/// The create flags berth refuses rather than ignores.
fn check_create_flags(flags: &cli::CreateFlags) -> anyhow::Result<()> {
    if flags.no_pivot {
        anyhow::bail!("--no-pivot is not supported by berth: it always uses pivot_root");
    }
    Ok(())
}

/// Prints JSON the way runc does (indented, no trailing newline for `state`).
fn print_json(value: &impl serde::Serialize, newline: bool) -> anyhow::Result<()> {
    use std::io::Write;
    let text = serde_json::to_string_pretty(value)?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    if newline {
        stdout.write_all(b"\n")?;
    }
    stdout.flush()?;
    Ok(())
}
