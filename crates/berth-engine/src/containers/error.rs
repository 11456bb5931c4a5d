//! Failures of the container lifecycle's own steps (its processes, pipes,
//! records and the host's cgroup layout), with their causes.

use berth_runtime::cgroups::CgroupError;

#[derive(Debug, thiserror::Error)]
pub enum ContainerError {
    #[error("failed to create a pipe")]
    Pipe(#[source] nix::Error),
    #[error("failed to fork {what}")]
    Fork {
        what: &'static str,
        #[source]
        source: nix::Error,
    },
    #[error("failed to open /dev/null")]
    DevNull(#[source] std::io::Error),
    #[error("failed to read the host's cgroup layout")]
    CgroupLayout(#[source] CgroupError),
    #[error("failed to encode the record of container {id}")]
    EncodeRecord {
        id: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("failed to encode the commit's intent")]
    EncodeIntent(#[source] serde_json::Error),
    #[error("failed to run ps")]
    RunPs(#[source] std::io::Error),
    /// `top`'s ps arguments were refused by ps (Docker: 500 with ps's words).
    #[error("ps failed: {0}")]
    Ps(String),
    /// Docker's words.
    #[error("Couldn't find PID field in ps output")]
    NoPidColumn,
}

impl ContainerError {
    pub fn kind(&self) -> crate::ErrorKind {
        match self {
            // Docker answers 500 for ps failures too.
            Self::Ps(_) | Self::NoPidColumn => crate::ErrorKind::InvalidArgument,
            _ => crate::ErrorKind::Internal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_stay_in_the_chain() {
        let error = ContainerError::Fork {
            what: "the exec's waiter",
            source: nix::Error::EAGAIN,
        };
        assert_eq!(error.to_string(), "failed to fork the exec's waiter");
        let engine: crate::EngineError = error.into();
        assert_eq!(
            crate::ErrorChain(&engine).to_string(),
            "failed to fork the exec's waiter: EAGAIN: Try again"
        );
        assert_eq!(engine.kind(), crate::ErrorKind::Internal);
        let ps: crate::EngineError = ContainerError::NoPidColumn.into();
        assert_eq!(ps.kind(), crate::ErrorKind::InvalidArgument);
    }
}
