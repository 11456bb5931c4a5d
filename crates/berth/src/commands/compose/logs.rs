//! `berth compose logs`: the output of the project's containers, each line prefixed with the
//! container's `service-N` name padded as compose pads it; `-f` follows them all at once.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use berth_compose::converge::containers::{project_containers, ProjectContainer};
use berth_engine::containers::paths::ContainerPaths;
use berth_engine::containers::{find_container, log_location};
use berth_engine::logs::{follow_logs, read_logs, LogOptions, Stream};
use berth_engine::Engine;
use clap::Args;

use super::ComposeArgs;
use crate::cli::GlobalOptions;

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// Follow log output
    #[arg(short, long)]
    pub follow: bool,
    /// Number of lines to show from the end of the logs for each container
    #[arg(short = 'n', long, default_value = "all")]
    pub tail: String,
    /// Show timestamps
    #[arg(short, long)]
    pub timestamps: bool,
    /// Show logs since timestamp (e.g. 2013-01-02T13:23:37Z) or relative (e.g. 42m for 42 minutes)
    #[arg(long)]
    pub since: Option<String>,
    /// Show logs before a timestamp (e.g. 2013-01-02T13:23:37Z) or relative (e.g. 42m for 42 minutes)
    #[arg(long)]
    pub until: Option<String>,
    /// Produce monochrome output
    #[arg(long)]
    pub no_color: bool,
    /// Don't print prefix in logs
    #[arg(long)]
    pub no_log_prefix: bool,
    /// SERVICE
    pub services: Vec<String>,
}

pub fn run(global: &GlobalOptions, compose: &ComposeArgs, args: &LogsArgs) -> anyhow::Result<i32> {
    let project = super::load_or_name(compose)?;
    let engine = crate::commands::open(global)?;
    let options = crate::commands::container::logs::log_options(
        &args.tail,
        (args.since.as_deref(), args.until.as_deref()),
        args.timestamps,
        false,
    )?;
    let containers = chosen(&engine, &project, &args.services)?;
    let interrupted = AtomicBool::new(false);
    print_logs(
        &engine,
        &containers,
        &options,
        args.follow,
        !args.no_log_prefix,
        &interrupted,
    )?;
    Ok(0)
}

fn chosen(
    engine: &Engine,
    project: &berth_compose::Project,
    services: &[String],
) -> anyhow::Result<Vec<ProjectContainer>> {
    let known = project.services();
    for service in services {
        if !known.is_empty() && !known.contains_key(service) {
            anyhow::bail!("no such service: {service}");
        }
    }
    // Orphans (services no longer in the files) are left out, unless the files are gone.
    Ok(project_containers(engine, &project.name)?
        .into_iter()
        .filter(|c| !c.oneoff)
        .filter(|c| known.is_empty() || known.contains_key(&c.service))
        .filter(|c| services.is_empty() || services.contains(&c.service))
        .collect())
}

/// `web-1`: the name compose prefixes a container's lines with.
fn prefix_name(container: &ProjectContainer) -> String {
    format!("{}-{}", container.service, container.number)
}

/// Prints (or follows, each container in a thread, until `interrupted`) the logs of
/// `containers`.
fn print_logs(
    engine: &Engine,
    containers: &[ProjectContainer],
    options: &LogOptions,
    follow: bool,
    with_prefix: bool,
    interrupted: &AtomicBool,
) -> anyhow::Result<()> {
    // compose pads names to one more than the longest.
    let width = containers
        .iter()
        .map(|c| prefix_name(c).len())
        .max()
        .unwrap_or(0)
        + 1;
    let out = Mutex::new(());
    let config = engine.config().clone();
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let mut handles = Vec::new();
        for container in containers {
            let prefix = if with_prefix {
                format!("{:width$} | ", prefix_name(container))
            } else {
                String::new()
            };
            let config = &config;
            let out = &out;
            handles.push(scope.spawn(move || -> anyhow::Result<()> {
                let paths = ContainerPaths::new(&config.root, &config.run_root, &container.id);
                let location = log_location(&paths, &container.container.record)
                    .map_err(berth_engine::EngineError::from)?;
                let mut partial: Vec<u8> = Vec::new();
                let sink = |stream: Stream, bytes: &[u8]| {
                    partial.extend_from_slice(bytes);
                    while let Some(end) = partial.iter().position(|b| *b == b'\n') {
                        let line: Vec<u8> = partial.drain(..=end).collect();
                        let _guard = out.lock();
                        let _ = match stream {
                            Stream::Stdout => {
                                let mut stdout = std::io::stdout().lock();
                                stdout
                                    .write_all(prefix.as_bytes())
                                    .and_then(|()| stdout.write_all(&line))
                            }
                            Stream::Stderr => {
                                let mut stderr = std::io::stderr().lock();
                                stderr
                                    .write_all(prefix.as_bytes())
                                    .and_then(|()| stderr.write_all(&line))
                            }
                        };
                    }
                };
                if follow && container.container.state.is_running() {
                    let engine = crate::commands::open_config(config)?;
                    let id = container.id.clone();
                    let is_running = move || {
                        !interrupted.load(Ordering::SeqCst)
                            && find_container(engine.store(), engine.config(), &id)
                                .map(|c| c.state.is_running())
                                .unwrap_or(false)
                    };
                    follow_logs(&location, options, is_running, sink)?;
                } else {
                    read_logs(&location, options, sink)?;
                }
                Ok(())
            }));
        }
        for handle in handles {
            handle
                .join()
                .map_err(|_| anyhow::anyhow!("a log reader panicked"))??;
        }
        Ok(())
    })
}

/// Set by SIGINT/SIGTERM while `up` follows the project's output.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// `up` without `-d`: the containers' output until they have all stopped; Ctrl-C stops the
/// project's containers (compose's "Gracefully stopping...").
pub fn follow_project(
    engine: &mut Engine,
    project: &berth_compose::Project,
    services: &[String],
    timeout: Option<i64>,
) -> anyhow::Result<i32> {
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
    let action = SigAction::new(
        SigHandler::Handler(on_interrupt),
        SaFlags::empty(),
        SigSet::empty(),
    );
    for signal in [Signal::SIGINT, Signal::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe { sigaction(signal, &action) }?;
    }
    let containers = chosen(engine, project, services)?;
    let options = LogOptions {
        tail: None,
        since: None,
        until: None,
        timestamps: false,
        stdout: true,
        stderr: true,
        details: false,
    };
    print_logs(engine, &containers, &options, true, true, &INTERRUPTED)?;
    if INTERRUPTED.load(Ordering::SeqCst) {
        eprintln!("Gracefully stopping... (press Ctrl+C again to force)");
        let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
        // SAFETY: restoring the default disposition installs no handler code.
        unsafe { sigaction(Signal::SIGINT, &default) }?;
        berth_compose::converge::lifecycle::stop(
            engine,
            project,
            services,
            timeout,
            &berth_compose::converge::StderrReporter,
        )?;
        return Ok(130);
    }
    for container in &containers {
        if let Ok(found) = find_container(engine.store(), engine.config(), &container.id) {
            println!(
                "{} exited with code {}",
                prefix_name(container),
                found.state.exit_code
            );
        }
    }
    Ok(0)
}
