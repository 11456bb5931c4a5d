use std::path::PathBuf;

use super::TimeParseError;

/// Errors of the json-file log writer and reader.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("failed to open the log file {path:?}")]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to write the log file {path:?}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to read the log file {path:?}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Docker's words (`daemon/logs.go`) for `--stdout=false --stderr=false`.
    #[error("You must choose at least one stream")]
    NoStream,
    /// A bad `--since`/`--until` value; the message is Docker's.
    #[error(transparent)]
    InvalidTime(#[from] TimeParseError),
}
