//! Docker's file log drivers: the monitor writes a container's output
//! ([`LogWriter`]), `berth logs` reads it ([`read_logs`]) and follows it
//! ([`follow_logs`]).
//!
//! - `json-file` (the default): byte for byte what dockerd (checked against
//!   20.10) writes, one JSON object per line,
//!   `{"log":"hi\n","stream":"stdout","time":"2024-01-01T00:00:00.123456789Z"}`,
//!   with an `attrs` member for `--log-opt labels/env/tag`.
//! - `local`: dockerd's length-framed protobuf records (`local.rs`), in
//!   `local-logs/container.log`, 20 MiB × 5 files, compressed, by default.
//! - `none`: no writer; reading is refused with dockerd's words.
//!
//! Both files rotate as dockerd's `loggerutils.LogFile` does
//! (`--log-opt max-size`/`max-file`/`compress`, `rotate.rs`), and the readers
//! walk `<path>.N[.gz]` … `<path>.1`, `<path>` oldest first, counting `--tail`
//! records from the newest file backwards (`files.rs`, `reader.rs`), and follow
//! the log across rotations (`follow.rs`). The options are resolved, with
//! dockerd's defaults and errors, by [`LogSettings::resolve`].
//!
//! This module knows nothing about containers or the store: it works on paths
//! and byte streams.

mod error;
mod files;
mod follow;
mod format;
mod go_parse;
mod go_time;
mod lines;
mod local;
mod output;
mod reader;
mod record;
mod rotate;
mod settings;
mod tag;
mod time_parse;
mod writer;

pub use error::LogError;
pub use files::{LogFormat, LogLocation};
pub use follow::follow_logs;
pub use go_time::TimeParseError;
pub use output::LogOptions;
pub use reader::read_logs;
pub use settings::{LogConfigError, LogDriver, LogSettings};
pub use tag::ContainerInfo;
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
