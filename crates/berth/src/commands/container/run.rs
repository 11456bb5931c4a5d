//! `run` and `create`.

use berth_engine::containers::create_container;
use berth_engine::images::resolve_image;
use berth_engine::{Engine, EngineError};

use super::attach::{start_attached, AttachStreams};
use super::options::{CreateOptions, PullPolicy, RunOptions, Stream};
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

/// Makes sure the image is present, pulling it as `--pull` says (Docker's
/// default `missing`: only when it is not in the store). Pull progress goes
/// to stderr, as Docker shows it for `run` and `create`.
fn ensure_image(
    engine: &mut Engine,
    image: &str,
    policy: PullPolicy,
    quiet: bool,
    platform: Option<&str>,
) -> anyhow::Result<()> {
    let target = if quiet {
        ProgressTarget::Nowhere
    } else {
        ProgressTarget::Stderr
    };
    let pull = |engine: &mut Engine| {
        pull::pull(engine, image, platform, None, target)
            .map(drop)
            .map_err(engine_failure)
    };
    if policy == PullPolicy::Always {
        return pull(engine);
    }
    let wanted = platform
        .map(berth_types::container::platform::parse_platform)
        .transpose()
        .map_err(engine_failure)?;
    let local = match resolve_image(engine.store(), image) {
        // Docker treats a local image of another platform than `--platform` as missing.
        Ok(_) => match &wanted {
            Some(wanted) => {
                match berth_engine::containers::local_platform_mismatch(engine, image, wanted)
                    .map_err(engine_failure)?
                {
                    Some(actual) if policy == PullPolicy::Never => {
                        return Err(engine_failure(anyhow::anyhow!(
                            "image with reference {image} was found but does not match the specified platform: wanted {}, actual: {actual}",
                            berth_types::container::platform::format_platform(wanted)
                        )));
                    }
                    Some(_) => Err(EngineError::NoSuchImage(image.to_owned())),
                    None => Ok(()),
                }
            }
            None => Ok(()),
        },
        Err(error) => Err(error),
    };
    match local {
        Ok(()) => Ok(()),
        Err(error @ EngineError::NoSuchImage(_)) => {
            // docker/cli says this only when it is about to pull.
            if policy == PullPolicy::Never {
                return Err(engine_failure(error));
            }
            let shown = berth_engine::images::parse_reference(image)
                .map(|reference| reference.familiar_string())
                .unwrap_or_else(|_| image.to_owned());
            eprintln!("Unable to find image '{shown}' locally");
            pull(engine)
        }
        Err(error) => Err(engine_failure(error)),
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

pub fn create(engine: &mut Engine, options: &CreateOptions) -> anyhow::Result<i32> {
    refuse_unknown_flag(options, "create")?;
    let (request, extras) = options.to_create_request().map_err(engine_failure)?;
    refuse_existing_cidfile(extras.container_id_file.as_deref())?;
    ensure_image(
        engine,
        &request.config.image,
        extras.pull,
        extras.quiet,
        options.platform.as_deref(),
    )?;
    let id = create_container(engine, &request).map_err(engine_failure)?;
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
    refuse_existing_cidfile(extras.create.container_id_file.as_deref())?;
    ensure_image(
        engine,
        &request.config.image,
        extras.create.pull,
        extras.create.quiet,
        options.create.platform.as_deref(),
    )?;
    tracing::debug!("run: request resolved");
    // A cold start forks berth into the container, which must run from a sealed binary
    // (re-executing from here repeats only lookups); a claimed pool member already does.
    let offered = berth_engine::warm::offered(engine, &request).map_err(engine_failure)?;
    if offered.is_empty() {
        crate::commands::seal_before_entering_containers()?;
    }
    // A ready sandbox from the warm pool when the run is eligible for one.
    let mut claimed =
        berth_engine::warm::claim(engine, &request, offered).map_err(engine_failure)?;
    if claimed.is_none() {
        crate::commands::seal_before_entering_containers()?;
    }
    // The claimed member's replacement is built once this run is done with
    // the CPU, or after a moment for a longer run (see `Refill`).
    let refill = claimed
        .as_mut()
        .and_then(|claimed| claimed.take_refill())
        .map(|refill| refill.start_after(std::time::Duration::from_millis(200)));
    let id = match &claimed {
        Some(claimed) => claimed.id.clone(),
        None => create_container(engine, &request).map_err(engine_failure)?,
    };
    tracing::debug!(warm = claimed.is_some(), "run: container created");
    write_cidfile(extras.create.container_id_file.as_deref(), &id)?;
    if extras.detach {
        let started = match claimed {
            Some(claimed) => claimed.start(None),
            None => berth_engine::containers::start_container(engine, &id, None),
        };
        started.map_err(|error| crate::exit::engine_status_error(&error, crate::exit::USAGE))?;
        println!("{id}");
        drop(refill);
        return Ok(0);
    }
    let streams = AttachStreams {
        stdin: extras.attach.contains(&Stream::Stdin),
        stdout: extras.attach.contains(&Stream::Stdout),
        stderr: extras.attach.contains(&Stream::Stderr),
    };
    let status = start_attached(
        engine,
        &id,
        streams,
        request.config.tty,
        extras.sig_proxy,
        claimed,
    );
    drop(refill);
    status
}
