//! `run` in the engine: the image (pulled as the plan says), a warm pool
//! member when one fits or else a new container, then the start. The CLI's
//! `run` and the API server's create + start call it; what differs between
//! them (pull progress, sealing the CLI's binary before a cold start) comes
//! through [`RunFrontEnd`].
//!
//! ```text
//! prepare_run(engine, &request, plan, front end)   ensure_image, then create_for_run
//! create_for_run(engine, &request, front end)      warm::offered → warm::claim, or
//!                                                  create_container → PreparedRun
//! PreparedRun::start(engine, attachment)           Claimed::start, or start_container
//! PreparedRun::release()                           a claim that will not start now
//! ```
//!
//! Safe from many threads at once (each with its own [`Engine`]): the pool's
//! claim is one atomic rename, and `start_container` starts the monitor
//! without forking a multi-threaded process (`monitor/launch.rs`).

use std::time::Duration;

use berth_types::container::platform::{format_platform, parse_platform};
use berth_types::container::CreateRequest;

use super::create::{create_container, local_platform_mismatch};
use super::monitor::Attachment;
use super::start::{start_container, StartedContainer};
use crate::images::resolve_image;
use crate::warm::{Claimed, RefillGuard};
use crate::{Engine, EngineError};

/// Docker's `--pull`: when the image is pulled before the container is made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PullPolicy {
    /// Only when the store does not have it (for `--platform`: of that
    /// platform). Docker's default.
    #[default]
    Missing,
    Always,
    Never,
}

/// Why [`prepare_run`] asks the front end to pull.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PullReason {
    /// `--pull always`.
    Always,
    /// The store has no such image (Docker then says "Unable to find image
    /// 'x' locally").
    Missing,
}

/// What the image step of a run is told.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunPlan<'a> {
    pub pull: PullPolicy,
    /// `--platform`, as given.
    pub platform: Option<&'a str>,
}

/// The front end's part in a run. Its errors carry the engine's (`From`),
/// so that what it reports itself (a failed pull, with its own output) and
/// what the engine reports reach its user in one type.
pub trait RunFrontEnd {
    type Error: From<EngineError>;

    /// Pulls `image` (for `platform`), showing progress the front end's way.
    /// A front end that never pulls leaves a missing image missing.
    fn pull(
        &mut self,
        _engine: &mut Engine,
        image: &str,
        _platform: Option<&str>,
        _reason: PullReason,
    ) -> Result<(), Self::Error> {
        Err(EngineError::NoSuchImage(image.to_owned()).into())
    }

    /// Called before anything is created for a run that may start cold (no
    /// pool member is offered, or none was claimed): the CLI seals its
    /// binary here, which re-executes it. Called again when a claim found
    /// nothing after all.
    fn before_cold_start(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// How long a claimed member's replacement waits before it is built, unless
/// the run is done sooner ([`PreparedRun::take_refill`]): a short run ends
/// before the refill competes with it for the CPU, a long one does not keep
/// the pool short.
pub const REFILL_DELAY: Duration = Duration::from_millis(200);

/// [`REFILL_DELAY`] for a VM member's replacement: booting it under TCG
/// takes both cores for seconds, which the claimed VM, still starting its
/// process 200 ms after the claim, would share; a short run is over long
/// before this (docs/VM.md, *Slice four*).
pub const VM_REFILL_DELAY: Duration = Duration::from_secs(2);

/// A container made for a run and not started yet: a claimed pool member
/// (its row stored under the member's id) or a new container.
pub struct PreparedRun {
    pub id: String,
    /// The pool member, when the run took one.
    pub claimed: Option<Claimed>,
    refill: Option<RefillGuard>,
}

impl PreparedRun {
    pub fn is_warm(&self) -> bool {
        self.claimed.is_some()
    }

    /// The claimed member's replacement, timed from the claim: dropping the
    /// guard starts it at once if its delay has not passed. Callers keep it
    /// until the run no longer needs the CPU (a short attached run's end, a
    /// detached one's start); left here, it goes with this value.
    pub fn take_refill(&mut self) -> Option<RefillGuard> {
        self.refill.take()
    }

    /// Whether a held claim still fits what is stored now (see
    /// [`Claimed::still_fits`]); one that does not is released, and the
    /// container starts cold. For a claim that waited (the API's create);
    /// `run`'s start follows its claim at once.
    pub fn keep_claim_if_it_fits(&mut self, engine: &Engine) {
        if let Some(claimed) = self.claimed.take() {
            if claimed.still_fits(engine) {
                self.claimed = Some(claimed);
            } else {
                tracing::debug!(container = %self.id, "settings changed since the claim");
                claimed.release();
            }
        }
    }

    /// Starts the container: hands the member the streams, or starts it
    /// cold. Returns once its program runs.
    pub fn start(
        self,
        engine: &mut Engine,
        attachment: Option<Attachment>,
    ) -> Result<StartedContainer, EngineError> {
        match self.claimed {
            Some(claimed) => claimed.start(attachment),
            None => start_container(engine, &self.id, attachment),
        }
    }

    /// A claim that will not be started now leaves an ordinary `created`
    /// container (see [`Claimed::release`]); a cold one is that already.
    pub fn release(self) {
        if let Some(claimed) = self.claimed {
            claimed.release();
        }
    }
}

/// The image for the run and then [`create_for_run`].
pub fn prepare_run<F: RunFrontEnd>(
    engine: &mut Engine,
    request: &CreateRequest,
    plan: RunPlan<'_>,
    front_end: &mut F,
) -> Result<PreparedRun, F::Error> {
    ensure_image(engine, &request.config.image, plan, front_end)?;
    tracing::debug!("run: request resolved");
    create_for_run(engine, request, front_end)
}

/// Makes sure the image is present, pulling it as `plan.pull` says:
/// Docker's `missing` pulls only what the store lacks, and a local image of
/// another platform than `plan.platform` counts as missing.
pub fn ensure_image<F: RunFrontEnd>(
    engine: &mut Engine,
    image: &str,
    plan: RunPlan<'_>,
    front_end: &mut F,
) -> Result<(), F::Error> {
    if plan.pull == PullPolicy::Always {
        return front_end.pull(engine, image, plan.platform, PullReason::Always);
    }
    let wanted = plan
        .platform
        .map(parse_platform)
        .transpose()
        .map_err(|error| EngineError::InvalidArgument(error.to_string()))?;
    let local = match (resolve_image(engine.store(), image), &wanted) {
        (Ok(_), Some(wanted)) => match local_platform_mismatch(engine, image, wanted)? {
            Some(actual) if plan.pull == PullPolicy::Never => {
                return Err(EngineError::InvalidArgument(format!(
                    "image with reference {image} was found but does not match the specified platform: wanted {}, actual: {actual}",
                    format_platform(wanted)
                ))
                .into());
            }
            Some(_) => Err(EngineError::NoSuchImage(image.to_owned())),
            None => Ok(()),
        },
        (Ok(_), None) => Ok(()),
        (Err(error), _) => Err(error),
    };
    match local {
        Ok(()) => Ok(()),
        Err(EngineError::NoSuchImage(_)) if plan.pull != PullPolicy::Never => {
            front_end.pull(engine, image, plan.platform, PullReason::Missing)
        }
        Err(error) => Err(error.into()),
    }
}

/// The container for a run whose image is present: a claimed warm pool
/// member when one is offered and the request fits it (the pool's rules,
/// `warm::claim`), else a new one. A claim's replacement is timed from here
/// ([`REFILL_DELAY`]).
pub fn create_for_run<F: RunFrontEnd>(
    engine: &mut Engine,
    request: &CreateRequest,
    front_end: &mut F,
) -> Result<PreparedRun, F::Error> {
    // The configured default runtime first: a VM run never claims a
    // namespace member.
    let request =
        &*super::vm::with_default_runtime(request).map_err(EngineError::InvalidArgument)?;
    let offered = crate::warm::offered(engine, request)?;
    if offered.is_empty() {
        front_end.before_cold_start()?;
    }
    let mut claimed = crate::warm::claim(engine, request, offered)?;
    if claimed.is_none() {
        front_end.before_cold_start()?;
    }
    let refill = claimed
        .as_mut()
        .and_then(Claimed::take_refill)
        .map(|refill| {
            let delay = if refill.boots_a_vm() {
                VM_REFILL_DELAY
            } else {
                REFILL_DELAY
            };
            refill.start_after(delay)
        });
    let id = match &claimed {
        Some(claimed) => claimed.id.clone(),
        None => create_container(engine, request)?,
    };
    tracing::debug!(warm = claimed.is_some(), "run: container created");
    Ok(PreparedRun {
        id,
        claimed,
        refill,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EngineConfig;

    /// Records the pulls it is asked for.
    #[derive(Default)]
    struct Recording {
        pulls: Vec<(String, Option<String>, PullReason)>,
    }

    impl RunFrontEnd for Recording {
        type Error = EngineError;

        fn pull(
            &mut self,
            _engine: &mut Engine,
            image: &str,
            platform: Option<&str>,
            reason: PullReason,
        ) -> Result<(), EngineError> {
            self.pulls
                .push((image.to_owned(), platform.map(str::to_owned), reason));
            Ok(())
        }
    }

    fn engine(directory: &std::path::Path) -> Engine {
        let config = EngineConfig::new(directory.join("root"), directory.join("run"));
        Engine::with_kernel(
            config,
            Box::new(berth_net::kernel::RecordingKernel::default()),
        )
        .unwrap()
    }

    fn plan(pull: PullPolicy, platform: Option<&str>) -> RunPlan<'_> {
        RunPlan { pull, platform }
    }

    #[test]
    fn a_missing_image_is_pulled_unless_the_policy_is_never() {
        let directory = tempfile::tempdir().unwrap();
        let mut engine = engine(directory.path());
        let mut front_end = Recording::default();
        let missing = plan(PullPolicy::Missing, Some("linux/amd64"));
        ensure_image(&mut engine, "busybox", missing, &mut front_end).unwrap();
        assert_eq!(
            front_end.pulls,
            [(
                "busybox".to_owned(),
                Some("linux/amd64".to_owned()),
                PullReason::Missing
            )]
        );

        let mut front_end = Recording::default();
        let never = plan(PullPolicy::Never, None);
        let error = ensure_image(&mut engine, "busybox", never, &mut front_end).unwrap_err();
        assert!(matches!(error, EngineError::NoSuchImage(_)), "{error}");
        assert!(front_end.pulls.is_empty());

        let always = plan(PullPolicy::Always, None);
        ensure_image(&mut engine, "busybox", always, &mut front_end).unwrap();
        assert_eq!(front_end.pulls[0].2, PullReason::Always);
    }

    #[test]
    fn a_bad_platform_fails_before_any_pull_in_dockers_words() {
        let directory = tempfile::tempdir().unwrap();
        let mut engine = engine(directory.path());
        let mut front_end = Recording::default();
        let bad = plan(PullPolicy::Missing, Some("linux/amd64/v1/extra"));
        let error = ensure_image(&mut engine, "busybox", bad, &mut front_end).unwrap_err();
        assert_eq!(
            error.to_string(),
            "\"linux/amd64/v1/extra\": cannot parse platform specifier: invalid argument"
        );
        assert!(front_end.pulls.is_empty());
    }

    #[test]
    fn a_front_end_that_does_not_pull_leaves_a_missing_image_missing() {
        struct NoPulls;
        impl RunFrontEnd for NoPulls {
            type Error = EngineError;
        }
        let directory = tempfile::tempdir().unwrap();
        let mut engine = engine(directory.path());
        let missing = plan(PullPolicy::Missing, None);
        let error = ensure_image(&mut engine, "busybox", missing, &mut NoPulls).unwrap_err();
        assert!(matches!(error, EngineError::NoSuchImage(_)), "{error}");
    }
}
