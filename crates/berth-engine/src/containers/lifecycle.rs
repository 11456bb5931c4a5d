//! A container's life: its states, which operations each state allows (in
//! Docker's words when it refuses), what follows an exit (the restart
//! policy and its backoff), and the order of the steps that end a run.
//!
//! ```text
//!             start                    pause
//!  created ─────────▶ running ◀──────────────────▶ paused
//!     │                │   ▲          unpause         │
//!     │           exit │   │ next run                 │ kill/stop (thawed first)
//!     │                ▼   │                          ▼
//!     │            restarting ◀── policy says restart ── exit
//!     │                │ stop / no restart
//!     │                ▼
//!     │             exited ──start──▶ running
//!     │                │
//!     └──── rm ───▶ removing ──▶ gone        (dead: a removal that failed)
//! ```
//!
//! Each transition writes its intent before its side effect, so a kill -9
//! at any point leaves a state the next command repairs (`reconcile` for a
//! dead monitor and its start record, `repair` for `rm`, `commit` and
//! `cp`): see docs/ARCHITECTURE.md, "Crash safety".
//!
//! The functions here decide; the monitor, `start`, `stop`, `pause`, `rm`
//! act. Deciding is pure, so the policies are unit-tested without a kernel.

use std::time::Duration;

use super::record::RestartPolicy;
pub use super::state::Status;
use crate::EngineError;

/// What a command wants to do to a container.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Start,
    Pause,
    Unpause,
    Exec,
    /// `rm` without `--force`.
    Remove,
}

/// Whether `operation` may act on container `id` in `status`; Docker's
/// refusal otherwise.
pub fn check(status: Status, id: &str, operation: Operation) -> Result<(), EngineError> {
    use Operation::*;
    use Status::*;
    let not_running = || EngineError::ContainerNotRunning { id: id.to_owned() };
    match (operation, status) {
        (Start, Removing | Dead) => Err(EngineError::Conflict(
            "container is marked for removal and cannot be started".to_owned(),
        )),
        (Start, _) => Ok(()),
        (Pause, Running) => Ok(()),
        (Pause, Paused) => Err(EngineError::InvalidArgument(format!(
            "Container {id} is already paused"
        ))),
        (Pause, Restarting) => Err(EngineError::Conflict(format!(
            "Container {id} is restarting, wait until the container is running"
        ))),
        (Pause, _) => Err(not_running()),
        (Unpause, Paused) => Ok(()),
        (Unpause, Running | Restarting) => Err(EngineError::InvalidArgument(format!(
            "Container {id} is not paused"
        ))),
        (Unpause, _) => Err(not_running()),
        (Exec, Running) => Ok(()),
        (Exec, Paused) => Err(EngineError::InvalidArgument(format!(
            "Container {id} is paused, unpause the container before exec"
        ))),
        (Exec, Restarting) => Err(EngineError::Conflict(format!(
            "Container {id} is restarting, wait until the container is running"
        ))),
        (Exec, _) => Err(not_running()),
        (Remove, Running | Paused | Restarting) => {
            Err(EngineError::ContainerRunning { id: id.to_owned() })
        }
        (Remove, Removing) => Err(EngineError::Conflict(format!(
            "removal of container {id} is already in progress"
        ))),
        (Remove, Created | Exited | Dead) => Ok(()),
    }
}

/// What the monitor knows when a run of the container ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exit {
    pub code: i32,
    /// `stop`, `kill` or `rm -f` asked for it (their stop marker is there).
    pub stopped_by_user: bool,
    /// Restarts so far (`RestartCount`).
    pub restarts: u32,
    /// How long this run lasted.
    pub ran_for: Duration,
}

/// What follows an exit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterExit {
    /// `restarting`, then the next run after `delay`.
    Restart { delay: Duration },
    /// `exited` for good (and removed with `--rm`).
    Stay,
}

/// Docker's restart manager: the first delay, doubled after each restart,
/// back to the first after a run of at least [`RESET_AFTER`], never above
/// [`MAX_DELAY`].
pub const FIRST_DELAY: Duration = Duration::from_millis(100);
pub const MAX_DELAY: Duration = Duration::from_secs(60);
pub const RESET_AFTER: Duration = Duration::from_secs(10);

/// The restart policy applied to an exit. `previous_delay` is the delay
/// before the run that just ended (None for a first run).
pub fn after_exit(
    policy: &RestartPolicy,
    auto_remove: bool,
    exit: Exit,
    previous_delay: Option<Duration>,
) -> AfterExit {
    if auto_remove || exit.stopped_by_user {
        return AfterExit::Stay;
    }
    let restart = match policy.name.as_str() {
        "always" | "unless-stopped" => true,
        "on-failure" => {
            exit.code != 0
                && (policy.maximum_retry_count == 0 || exit.restarts < policy.maximum_retry_count)
        }
        _ => false,
    };
    if !restart {
        return AfterExit::Stay;
    }
    let delay = match previous_delay {
        Some(previous) if exit.ran_for < RESET_AFTER => (previous * 2).min(MAX_DELAY),
        _ => FIRST_DELAY,
    };
    AfterExit::Restart { delay }
}

/// One step of the end of a container's last run, after its process and
/// its network addresses are gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndStep {
    /// The published host ports (and the container's side of the network).
    ReleasePorts,
    /// The container's row: its name is free, `ps -a` no longer lists it,
    /// `destroy` is logged (`--rm`).
    RemoveRow,
    /// Its anonymous volumes (`--rm`).
    RemoveAnonymousVolumes,
    /// Tell the waiting `run`/`start -a` the exit code; it returns then.
    Report,
    /// The cgroup and the root mount.
    Cleanup,
    /// The container's directories (`--rm`).
    RemoveFiles,
}

/// The order of the last steps. What the user can see of an `--rm`
/// removal (ports, row, name, volumes) is done before the report, so a
/// `run --rm -p P …` right after this one returns can take the same port
/// and name; the directories and the cgroup, which no command shows, go
/// after it (a monitor killed in between leaves them to `orphans`).
/// Without `--rm` the report comes last: `start -a` returns with the
/// container fully stopped.
pub fn end_steps(auto_remove: bool) -> &'static [EndStep] {
    use EndStep::*;
    if auto_remove {
        &[
            ReleasePorts,
            RemoveRow,
            RemoveAnonymousVolumes,
            Report,
            Cleanup,
            RemoveFiles,
        ]
    } else {
        &[ReleasePorts, Cleanup, Report]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(name: &str, maximum_retry_count: u32) -> RestartPolicy {
        RestartPolicy {
            name: name.to_owned(),
            maximum_retry_count,
        }
    }

    fn exit(code: i32, restarts: u32) -> Exit {
        Exit {
            code,
            stopped_by_user: false,
            restarts,
            ran_for: Duration::from_millis(5),
        }
    }

    fn restarts(policy: &RestartPolicy, exit: Exit) -> bool {
        matches!(
            after_exit(policy, false, exit, None),
            AfterExit::Restart { .. }
        )
    }

    #[test]
    fn policies_decide_as_dockers() {
        assert!(!restarts(&policy("", 0), exit(1, 0)));
        assert!(!restarts(&policy("no", 0), exit(1, 0)));
        assert!(restarts(&policy("always", 0), exit(0, 7)));
        assert!(restarts(&policy("unless-stopped", 0), exit(0, 0)));
        assert!(!restarts(&policy("on-failure", 0), exit(0, 0)));
        assert!(restarts(&policy("on-failure", 0), exit(1, 99)));
        assert!(restarts(&policy("on-failure", 2), exit(1, 1)));
        assert!(!restarts(&policy("on-failure", 2), exit(1, 2)));
    }

    #[test]
    fn a_stop_and_rm_end_every_policy() {
        let stopped = Exit {
            stopped_by_user: true,
            ..exit(137, 0)
        };
        for name in ["always", "unless-stopped", "on-failure"] {
            assert_eq!(
                after_exit(&policy(name, 0), false, stopped, None),
                AfterExit::Stay
            );
            assert_eq!(
                after_exit(&policy(name, 0), true, exit(1, 0), None),
                AfterExit::Stay
            );
        }
    }

    #[test]
    fn the_backoff_doubles_caps_and_resets_after_a_long_run() {
        let always = policy("always", 0);
        let delay = |previous, ran_for| match after_exit(
            &always,
            false,
            Exit {
                ran_for,
                ..exit(1, 3)
            },
            previous,
        ) {
            AfterExit::Restart { delay } => delay,
            AfterExit::Stay => panic!("always restarts"),
        };
        let short = Duration::from_millis(1);
        assert_eq!(delay(None, short), FIRST_DELAY);
        assert_eq!(delay(Some(FIRST_DELAY), short), FIRST_DELAY * 2);
        assert_eq!(delay(Some(Duration::from_secs(40)), short), MAX_DELAY);
        assert_eq!(
            delay(Some(Duration::from_secs(40)), RESET_AFTER),
            FIRST_DELAY
        );
    }

    #[test]
    fn an_rm_run_frees_what_users_see_before_it_reports() {
        let steps = end_steps(true);
        let at = |step| steps.iter().position(|s| *s == step).unwrap();
        for visible in [
            EndStep::ReleasePorts,
            EndStep::RemoveRow,
            EndStep::RemoveAnonymousVolumes,
        ] {
            assert!(at(visible) < at(EndStep::Report), "{visible:?}");
        }
        assert!(at(EndStep::Report) < at(EndStep::Cleanup));
        assert!(at(EndStep::Cleanup) < at(EndStep::RemoveFiles));
    }

    #[test]
    fn a_kept_container_reports_once_fully_stopped() {
        assert_eq!(
            end_steps(false).last(),
            Some(&EndStep::Report),
            "start -a returns after the cleanup"
        );
        assert!(!end_steps(false).contains(&EndStep::RemoveRow));
    }

    #[test]
    fn operations_are_refused_in_dockers_words() {
        let id = "c0ffee";
        assert!(check(Status::Created, id, Operation::Start).is_ok());
        assert!(check(Status::Exited, id, Operation::Start).is_ok());
        let text = |status, operation| check(status, id, operation).unwrap_err().to_string();
        assert_eq!(
            text(Status::Removing, Operation::Start),
            "container is marked for removal and cannot be started"
        );
        assert_eq!(
            text(Status::Paused, Operation::Pause),
            "Container c0ffee is already paused"
        );
        assert_eq!(
            text(Status::Running, Operation::Unpause),
            "Container c0ffee is not paused"
        );
        assert_eq!(
            text(Status::Exited, Operation::Pause),
            "Container c0ffee is not running"
        );
        assert_eq!(
            text(Status::Paused, Operation::Exec),
            "Container c0ffee is paused, unpause the container before exec"
        );
        assert!(matches!(
            check(Status::Running, id, Operation::Remove),
            Err(EngineError::ContainerRunning { .. })
        ));
        assert!(check(Status::Dead, id, Operation::Remove).is_ok());
    }
}
