//! berth as an OCI runtime: a bundle's `config.json` (the runtime specification 1.x) turned
//! into what berth-runtime launches, runc's lifecycle (`create` leaves the init waiting,
//! `start` lets it exec; `kill`, `delete`, `exec`, `pause`, `resume`, `update`), and the
//! state directory those commands share. The runc-compatible command line is
//! `berth runtime …` / `berth-runc …` (crates/berth `commands/runtime`); docs/OCI-RUNTIME.md.

pub mod cgroup;
pub mod config;
pub mod convert;
pub mod error;
pub mod features;
pub mod hooks;
pub mod lifecycle;
pub mod state;
pub mod store;

pub use error::{OciError, Result};
pub use state::{Record, State, Status};
pub use store::{Store, DEFAULT_ROOT};

/// An error and its causes, `: `-joined (what runc prints as one message).
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}
