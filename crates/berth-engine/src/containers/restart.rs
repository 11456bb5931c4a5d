//! `restart`: stop (when running), start, and Docker's `restart` event
//! after both (`kill … die … stop`, `start`, `restart`).

use super::lookup::find_container;
use super::start::{start_container, StartedContainer};
use super::stop::stop_container;
use crate::{Engine, EngineError};

/// `restart [-t N]`: the container starts detached.
pub fn restart_container(
    engine: &mut Engine,
    text: &str,
    timeout: Option<i64>,
) -> Result<StartedContainer, EngineError> {
    stop_container(engine, text, timeout)?;
    let started = start_container(engine, text, None)?;
    restarted(engine, &started.id);
    Ok(started)
}

/// Logs `restart` for a container restarted by other means (the API server
/// starts through its helper process).
pub fn restarted(engine: &Engine, text: &str) {
    let config = engine.config();
    if let Ok(container) = find_container(engine.store(), config, text) {
        crate::events::emit_container(engine.store(), "restart", &container.record);
    }
}
