//! `run` and `create`.

use berth_engine::containers::{
    create_container, ensure_image, PullPolicy, PullReason, RunFrontEnd, RunPlan,
};
use berth_engine::{Engine, EngineError};

use super::attach::{start_attached, AttachStreams, AttachedSession};
use super::detach::KeysFor;
use super::options::{CreateOptions, PullPolicy as CliPullPolicy, RunOptions, Stream};
use crate::commands::image::pull::{self, ProgressTarget};
use crate::exit::StatusError;

/// `run`/`create` fail with 125 when berth itself fails (Docker's rule);
/// the message carries the whole cause chain.
fn engine_failure<E>(error: E) -> anyhow::Error
where
    E: Into<anyhow::Error>,
{
    StatusError {
        status: 125,
        message: format!("{:#}", error.into()),
    }
    .into()
}

/// The CLI's part in a run: pull progress on stderr (as Docker shows it
/// for `run` and `create`), and the sealed binary before a cold start.
struct CliRun {
    quiet: bool,
}

/// A failed step of a run as the CLI reports it: the engine's failures and
/// a failed pull exit with 125 (already applied), sealing's as it says.
struct RunFailure(anyhow::Error);

impl From<EngineError> for RunFailure {
    fn from(error: EngineError) -> Self {
        Self(engine_failure(error))
    }
}

impl RunFrontEnd for CliRun {
    type Error = RunFailure;

    fn pull(
        &mut self,
        engine: &mut Engine,
        image: &str,
        platform: Option<&str>,
        reason: PullReason,
    ) -> Result<(), RunFailure> {
        if reason == PullReason::Missing {
            // docker/cli says this only when it is about to pull.
            let shown = berth_engine::images::parse_reference(image)
                .map(|reference| reference.familiar_string())
                .unwrap_or_else(|_| image.to_owned());
            eprintln!("Unable to find image '{shown}' locally");
        }
        let target = if self.quiet {
            ProgressTarget::Nowhere
        } else {
            ProgressTarget::Stderr
        };
        pull::pull(engine, image, platform, None, target)
            .map(drop)
            .map_err(|error| RunFailure(engine_failure(error)))
    }

    /// A cold start forks berth into the container, which must run from a sealed binary
    /// (re-executing from here repeats only lookups); a claimed pool member already does.
    fn before_cold_start(&mut self) -> Result<(), RunFailure> {
        crate::commands::seal_before_entering_containers().map_err(RunFailure)
    }
}

fn plan(pull: CliPullPolicy, platform: Option<&str>) -> RunPlan<'_> {
    RunPlan {
        pull: match pull {
            CliPullPolicy::Missing => PullPolicy::Missing,
            CliPullPolicy::Always => PullPolicy::Always,
            CliPullPolicy::Never => PullPolicy::Never,
        },
        platform,
    }
}

fn write_cidfile(path: Option<&std::path::Path>, id: &str) -> anyhow::Result<()> {
    if let Some(path) = path {
        fs_err::write(path, id).map_err(engine_failure)?;
    }
    Ok(())
}

fn refuse_existing_cidfile(path: Option<&std::path::Path>) -> anyhow::Result<()> {
    if let Some(path) = path {
        if path.exists() {
            return Err(engine_failure(anyhow::anyhow!(
                "Container ID file found, make sure the other container isn't running or delete {}",
                path.display()
            )));
        }
    }
    Ok(())
}

/// Flags after IMAGE belong to the command, so the IMAGE position takes
/// anything; a flag there is one clap did not know (Docker's message).
fn refuse_unknown_flag(options: &CreateOptions, command: &str) -> anyhow::Result<()> {
    let image = options.image();
    if image.starts_with('-') && image.len() > 1 {
        let flag = image.split('=').next().unwrap_or(image);
        return Err(StatusError {
            status: 125,
            message: format!("unknown flag: {flag}\nSee 'berth {command} --help'."),
        }
        .into());
    }
    Ok(())
}

/// The create's warnings, as docker/cli prints them (stderr, before the id
/// or the container's output).
fn print_warnings(engine: &Engine, request: &berth_types::container::CreateRequest) {
    for warning in berth_engine::containers::create_warnings(engine, request) {
        eprintln!("WARNING: {warning}");
    }
}

pub fn create(engine: &mut Engine, options: &CreateOptions) -> anyhow::Result<i32> {
    refuse_unknown_flag(options, "create")?;
    let (request, extras) = options.to_create_request().map_err(engine_failure)?;
    refuse_existing_cidfile(extras.container_id_file.as_deref())?;
    let mut front_end = CliRun {
        quiet: extras.quiet,
    };
    ensure_image(
        engine,
        &request.config.image,
        plan(extras.pull, options.platform.as_deref()),
        &mut front_end,
    )
    .map_err(|failure| failure.0)?;
    let id = create_container(engine, &request).map_err(engine_failure)?;
    print_warnings(engine, &request);
    write_cidfile(extras.container_id_file.as_deref(), &id)?;
    println!("{id}");
    Ok(0)
}

pub fn run(engine: &mut Engine, options: &RunOptions) -> anyhow::Result<i32> {
    refuse_unknown_flag(&options.create, "run")?;
    tracing::debug!("run: engine open");
    let (request, extras) = options.to_run_request().map_err(engine_failure)?;
    super::pty::check_tty(
        request.config.tty,
        !extras.detach && extras.attach.contains(&Stream::Stdin),
    )?;
    // Checked before anything is created. config.json is read only when
    // the keys can be used: a terminal attached to a `-t` container's stdin.
    let keys_used = request.config.tty && !extras.detach && extras.attach.contains(&Stream::Stdin);
    let keys = extras.detach_keys.as_deref();
    let detach_keys = if keys_used {
        super::detach::resolve(keys, KeysFor::Attach, crate::exit::USAGE)?
    } else {
        super::detach::check_flag(keys, KeysFor::Attach, crate::exit::USAGE)?;
        Vec::new()
    };
    refuse_existing_cidfile(extras.create.container_id_file.as_deref())?;
    let mut front_end = CliRun {
        quiet: extras.create.quiet,
    };
    // A ready sandbox from the warm pool when the run is eligible for one.
    let mut prepared = engine
        .prepare_run(
            &request,
            plan(extras.create.pull, options.create.platform.as_deref()),
            &mut front_end,
        )
        .map_err(|failure| failure.0)?;
    // The claimed member's replacement is built once this run is done with
    // the CPU, or after a moment for a longer run (see `Refill`).
    let refill = prepared.take_refill();
    let id = prepared.id.clone();
    print_warnings(engine, &request);
    write_cidfile(extras.create.container_id_file.as_deref(), &id)?;
    if extras.detach {
        prepared
            .start(engine, None)
            .map_err(|error| crate::exit::engine_status_error(&error, crate::exit::USAGE))?;
        println!("{id}");
        drop(refill);
        return Ok(0);
    }
    let session = AttachedSession {
        streams: AttachStreams {
            stdin: extras.attach.contains(&Stream::Stdin),
            stdout: extras.attach.contains(&Stream::Stdout),
            stderr: extras.attach.contains(&Stream::Stderr),
        },
        tty: request.config.tty,
        sig_proxy: extras.sig_proxy,
        detach_keys,
    };
    let status = start_attached(engine, &id, &session, prepared.claimed);
    drop(refill);
    status
}
