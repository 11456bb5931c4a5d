use std::path::PathBuf;

use super::{LogConfigError, TimeParseError};
use crate::ErrorKind;

/// Errors of the log writer, the readers and the log settings.
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
    /// `logs` of a container whose driver keeps nothing (`none`); dockerd's words
    /// (`logger.ErrReadLogsNotSupported`, a 501).
    #[error("configured logging driver does not support reading")]
    NotReadable,
    /// berth's config file has `log-driver`/`log-opts` of the wrong shape.
    #[error("invalid log-driver or log-opts in {path:?}")]
    Defaults {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A `--log-driver`/`--log-opt` refused at create.
    #[error(transparent)]
    Config(#[from] LogConfigError),
}

impl LogError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::NoStream | Self::InvalidTime(_) | Self::Config(_) | Self::Defaults { .. } => {
                ErrorKind::InvalidArgument
            }
            Self::NotReadable => ErrorKind::Unsupported,
            Self::Open { .. } | Self::Write { .. } | Self::Read { .. } => ErrorKind::Internal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorChain;

    #[test]
    fn log_errors_have_their_kinds_and_their_cause() {
        assert_eq!(LogError::NoStream.kind(), ErrorKind::InvalidArgument);
        assert_eq!(
            LogError::NoStream.to_string(),
            "You must choose at least one stream"
        );
        let read = LogError::Read {
            path: PathBuf::from("/c/x-json.log"),
            source: std::io::Error::from_raw_os_error(libc::EIO),
        };
        assert_eq!(read.kind(), ErrorKind::Internal);
        assert_eq!(
            ErrorChain(&read).to_string(),
            "failed to read the log file \"/c/x-json.log\": Input/output error (os error 5)"
        );
    }
}
