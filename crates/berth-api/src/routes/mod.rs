//! One module per resource; each handler turns a request into engine
//! calls and the engine's answer into Docker's JSON.

pub mod archive;
pub mod attach;
pub mod build;
pub mod commit;
pub mod containers;
pub mod exec;
pub mod images;
pub mod logs;
pub mod networks;
pub mod registry_auth;
pub mod relay;
pub mod swarm;
pub mod system;
pub mod volumes;

/// An RFC 3339 time as Unix seconds (Docker's `Created` in lists).
pub fn unix_time(text: Option<&str>) -> i64 {
    text.and_then(|text| chrono::DateTime::parse_from_rfc3339(text).ok())
        .map_or(0, |time| time.timestamp())
}
