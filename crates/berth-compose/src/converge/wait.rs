//! `depends_on` conditions, waited for on the engine's own events: the event log is followed
//! from before the container's state is read, and each wake-up comes from a new event (the
//! log's directory changing), never from a polling interval.

use std::time::{Duration, Instant};

use berth_engine::containers::find_container;
use berth_engine::containers::health::HealthStatus;
use berth_engine::containers::state::Status;
use berth_engine::events::EventFollower;
use berth_engine::Engine;

use super::ConvergeError;

/// What a dependency must reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Condition {
    Started,
    Healthy,
    CompletedSuccessfully,
}

impl Condition {
    pub fn parse(text: &str) -> Self {
        match text {
            "service_healthy" => Condition::Healthy,
            "service_completed_successfully" => Condition::CompletedSuccessfully,
            _ => Condition::Started,
        }
    }
}

enum Verdict {
    Met,
    Wait,
    Failed(String),
}

fn verdict(
    engine: &Engine,
    id: &str,
    name: &str,
    service: &str,
    condition: Condition,
) -> Result<Verdict, ConvergeError> {
    let container = find_container(engine.store(), engine.config(), id)
        .map_err(super::engine_error(format!("failed to inspect {name}")))?;
    let state = &container.state;
    Ok(match condition {
        Condition::Started => Verdict::Met,
        Condition::Healthy => {
            if state.health.is_none()
                && berth_engine::containers::health::HealthSettings::of_record(&container.record)
                    .is_none()
            {
                Verdict::Failed(format!(
                    "dependency failed to start: container {name} has no healthcheck configured"
                ))
            } else {
                match state.health_status() {
                    Some(HealthStatus::Healthy) => Verdict::Met,
                    Some(HealthStatus::Unhealthy) => Verdict::Failed(format!(
                        "dependency failed to start: container {name} is unhealthy"
                    )),
                    _ if matches!(state.status, Status::Exited | Status::Dead) => {
                        Verdict::Failed(format!(
                            "dependency failed to start: container {name} exited ({})",
                            state.exit_code
                        ))
                    }
                    _ => Verdict::Wait,
                }
            }
        }
        Condition::CompletedSuccessfully => match state.status {
            Status::Exited | Status::Dead if state.exit_code == 0 => Verdict::Met,
            Status::Exited | Status::Dead => Verdict::Failed(format!(
                "service {service:?} didn't complete successfully: exit {}",
                state.exit_code
            )),
            _ => Verdict::Wait,
        },
    })
}

/// Waits until container `id` (of `service`) meets `condition`, or `timeout` passes.
pub fn wait_for(
    engine: &Engine,
    id: &str,
    name: &str,
    service: &str,
    condition: Condition,
    timeout: Option<Duration>,
) -> Result<(), ConvergeError> {
    if condition == Condition::Started {
        return Ok(());
    }
    // Followed before the state is read: an event after the read wakes the wait below.
    let (_, mut follower) = EventFollower::open_for(engine.root(), None, None);
    let deadline = timeout.map(|timeout| Instant::now() + timeout);
    loop {
        match verdict(engine, id, name, service, condition)? {
            Verdict::Met => return Ok(()),
            Verdict::Failed(message) => return Err(ConvergeError::Failed(message)),
            Verdict::Wait => {}
        }
        // Until an event of this container is logged (a probe's result, its exit).
        loop {
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return Err(ConvergeError::Failed(format!(
                    "timeout waiting for {name} to be {}",
                    match condition {
                        Condition::Healthy => "healthy",
                        _ => "completed",
                    }
                )));
            }
            let events = follower.poll();
            if events.iter().any(|event| event.id == id) {
                break;
            }
            // The follower's wait ends when the log changes; the bound only lets the deadline
            // be checked.
            follower.wait(Duration::from_secs(1));
        }
    }
}
