//! Checks on `Config` (moby `validateContainerConfig`).

use super::ValidationError;
use crate::container::config::{ContainerConfig, HEALTHCHECK_MINIMUM_DURATION_NANOS};
use crate::container::signal::parse_signal;

pub(super) fn validate(config: &ContainerConfig) -> Result<(), ValidationError> {
    if !config.working_dir.is_empty() && !config.working_dir.starts_with('/') {
        return Err(ValidationError::WorkingDirNotAbsolute(
            config.working_dir.clone(),
        ));
    }
    if !config.stop_signal.is_empty() {
        parse_signal(&config.stop_signal)?;
    }
    for variable in config.env.iter().flatten() {
        let name = variable
            .split_once('=')
            .map_or(variable.as_str(), |(name, _)| name);
        if name.is_empty() {
            return Err(ValidationError::Environment(variable.clone()));
        }
    }
    let Some(health) = &config.healthcheck else {
        return Ok(());
    };
    let too_short = |nanos: i64| nanos != 0 && nanos < HEALTHCHECK_MINIMUM_DURATION_NANOS;
    let duration = |field| Err(ValidationError::HealthcheckDuration { field });
    if too_short(health.interval) {
        return duration("Interval");
    }
    if too_short(health.timeout) {
        return duration("Timeout");
    }
    if health.retries < 0 {
        return Err(ValidationError::HealthcheckRetries);
    }
    if too_short(health.start_period) {
        return duration("StartPeriod");
    }
    if too_short(health.start_interval) {
        return duration("StartInterval");
    }
    Ok(())
}
