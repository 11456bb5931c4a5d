//! `berth serve`: the Docker Engine API over a unix socket (or TCP with TLS
//! client certificates, [`tls`]), so that
//! `DOCKER_HOST=unix:///run/berth/docker.sock docker …` drives berth.
//!
//! The front end is thin: each route turns its request into calls of
//! `berth-engine` (the same functions the CLI calls) and the result into
//! Docker's JSON. The engine never sees HTTP.
//!
//! Threads and forks: the server answers each connection on its own
//! thread. A fork of a multi-threaded process may only call
//! async-signal-safe functions before exec, and the engine's child code
//! allocates, logs and opens SQLite. Starting a container is safe from any
//! thread: the engine spawns `berth __monitor` instead of forking when its
//! caller has threads (`containers/monitor/launch.rs`). An exec, which joins
//! the container's namespaces, runs in the berth binary
//! (`berth api-helper exec`, see [`helper`]). Create and start use the warm
//! pool: a create that fits an offered member claims it and the server
//! holds the claim until the start (`Server::claims`; released after 30 s,
//! on `rm`/`update`/prune, and when the server exits).

pub mod error;
pub mod filters;
#[doc(hidden)]
pub mod fuzzing;
pub mod helper;
pub mod http;
pub mod limits;
pub mod listen;
mod router;
pub mod routes;
pub mod server;
pub mod tls;
pub mod version;

pub use error::ApiError;
pub use limits::ConnectionLimits;
pub use server::{serve, ServeConfig, ServeError};

/// `30s`, `5m`, `1h30m`, `500ms`, or plain seconds; `0` means never.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let invalid = || format!("invalid duration {text:?} (examples: 30s, 5m, 1h)");
    if let Ok(seconds) = text.parse::<u64>() {
        return Ok(std::time::Duration::from_secs(seconds));
    }
    let mut total = std::time::Duration::ZERO;
    let mut rest = text;
    if rest.is_empty() {
        return Err(invalid());
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .ok_or_else(invalid)?;
        let number: f64 = rest[..digits].parse().map_err(|_| invalid())?;
        let unit_end = rest[digits..]
            .find(|c: char| c.is_ascii_digit())
            .map_or(rest.len(), |offset| digits + offset);
        let seconds = match &rest[digits..unit_end] {
            "ms" => number / 1000.0,
            "s" => number,
            "m" => number * 60.0,
            "h" => number * 3600.0,
            _ => return Err(invalid()),
        };
        // Absurdly long ones (`1e30h` spelled out) are invalid, not a panic.
        total = std::time::Duration::try_from_secs_f64(seconds)
            .ok()
            .and_then(|part| total.checked_add(part))
            .ok_or_else(invalid)?;
        rest = &rest[unit_end..];
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("5x").is_err());
        assert!(parse_duration("m").is_err());
        assert!(parse_duration(&format!("{}h", "9".repeat(40))).is_err());
        assert!(parse_duration("1.5.5s").is_err());
    }
}
