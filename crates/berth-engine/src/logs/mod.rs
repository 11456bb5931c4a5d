//! Docker's `json-file` log format: the monitor writes it ([`LogWriter`]),
//! `berth logs` reads it ([`read_logs`]) and follows it ([`follow_logs`]).
//!
//! On disk the file is byte for byte what dockerd (checked against 20.10)
//! writes: one JSON object per line,
//! `{"log":"hi\n","stream":"stdout","time":"2024-01-01T00:00:00.123456789Z"}`.
//! This module knows nothing about containers or the store: it works on paths
//! and byte streams.
//!
//! Rotation (`--log-opt max-size`/`max-file`) is not implemented: the log is a
//! single file that grows for the life of the container. Adding it changes
//! neither the record format nor this API: the writer renames `<path>` to
//! `<path>.1` (shifting older files up to `max-file - 1`) before a record
//! would take the file past `max-size`, and the reader walks `<path>.N` …
//! `<path>.1`, `<path>` oldest first, counting `--tail` lines from the newest
//! file backwards, as dockerd's `loggerutils.LogFile` does.

mod error;
mod follow;
mod format;
mod go_time;
mod lines;
mod output;
mod reader;
mod record;
mod time_parse;
mod watch;
mod writer;

pub use error::LogError;
pub use follow::follow_logs;
pub use go_time::TimeParseError;
pub use output::LogOptions;
pub use reader::read_logs;
pub use time_parse::parse_docker_time;
pub use writer::{LogWriter, MAX_RECORD_BYTES};

/// The container stream a record came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    /// The name Docker stores in the record's `stream` field.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdout => "stdout",
            Self::Stderr => "stderr",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        match name {
            "stdout" => Some(Self::Stdout),
            "stderr" => Some(Self::Stderr),
            _ => None,
        }
    }
}
