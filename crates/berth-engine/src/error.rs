//! The engine's error: one typed error per module (`NetworkError`,
//! `VolumeError`, `ImageError`, …), collected here, and the [`ErrorKind`]
//! the front ends map to the outside (HTTP status in `berth-api`, exit
//! status in the CLI) without reading any message.

use std::fmt;

use berth_store::StoreError;

use crate::containers::paths::InitLayerError;
use crate::containers::{ChangesError, CommitError, CreateError, SpecError};
use crate::copy::CopyError;
use crate::events::EventsError;
use crate::images::{ImageError, PullError, PushError};
use crate::logs::LogError;
use crate::networks::NetworkError;
use crate::system::SystemError;
use crate::volumes::VolumeError;
use crate::warm::WarmError;

/// What kind of failure an error is: the one thing the HTTP and exit-status
/// maps look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The object named does not exist (Docker's 404).
    NotFound,
    /// The object's state or a name already taken forbids it (409).
    Conflict,
    /// The request itself is wrong (400).
    InvalidArgument,
    /// The container is not running (409).
    NotRunning,
    /// Docker forbids this on the object, whatever its state: removing a
    /// predefined network (403).
    Forbidden,
    /// The registry refused the credentials (401).
    Unauthorized,
    /// berth does not do this (501).
    Unsupported,
    /// The node's state forbids it for now: not in a swarm, already in one
    /// (dockerd's 503, errdefs.Unavailable).
    Unavailable,
    /// The container's command exists but cannot be run (`run` exits 126).
    CannotInvoke,
    /// The container's command was not found (`run` exits 127).
    CommandNotFound,
    /// berth or the host failed (500; `run` exits 125).
    Internal,
}

/// Engine errors. Messages that Docker users know use Docker's words.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Shared by the image and container modules (and matched by the CLI's
    /// `run` and the API's create), so it stays here rather than in
    /// [`ImageError`].
    #[error("No such image: {0}")]
    NoSuchImage(String),
    #[error(transparent)]
    Image(#[from] ImageError),
    #[error(transparent)]
    Pull(#[from] Box<PullError>),
    #[error(transparent)]
    Push(#[from] Box<PushError>),
    #[error("No such container: {0}")]
    NoSuchContainer(String),
    #[error("Multiple IDs found with provided prefix: {0}")]
    AmbiguousContainer(String),
    #[error("Conflict. The container name \"/{name}\" is already in use by container \"{id}\". You have to remove (or rename) that container to be able to reuse that name.")]
    NameInUse { name: String, id: String },
    #[error("You cannot remove a running container {id}. Stop the container before attempting removal or force remove")]
    ContainerRunning { id: String },
    #[error("Container {id} is not running")]
    ContainerNotRunning { id: String },
    /// A container's state forbids the operation (Docker's 409s: "removal of
    /// container X is already in progress", …), in Docker's words.
    #[error("{0}")]
    Conflict(String),
    #[error("failed to remove the files of container {id}")]
    RemoveFiles {
        id: String,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to signal container {id}")]
    Signal {
        id: String,
        #[source]
        source: nix::Error,
    },
    #[error("{0}")]
    InvalidArgument(String),
    #[error(transparent)]
    Create(#[from] CreateError),
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error(transparent)]
    InitLayer(#[from] InitLayerError),
    #[error(transparent)]
    Changes(#[from] ChangesError),
    #[error(transparent)]
    Commit(#[from] CommitError),
    #[error(transparent)]
    Volume(#[from] VolumeError),
    #[error(transparent)]
    Network(#[from] NetworkError),
    #[error(transparent)]
    Swarm(#[from] crate::swarm::SwarmError),
    #[error(transparent)]
    Copy(#[from] CopyError),
    #[error(transparent)]
    Logs(#[from] LogError),
    #[error(transparent)]
    Events(#[from] EventsError),
    #[error(transparent)]
    System(#[from] SystemError),
    #[error(transparent)]
    StartFailed(crate::containers::StartFailure),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Container(#[from] crate::containers::ContainerError),
    #[error(transparent)]
    Warm(#[from] WarmError),
    #[error(transparent)]
    Link(#[from] crate::containers::links::LinkError),
    /// The container's runtime refused or failed (see `berth_runtime::backend`).
    #[error(transparent)]
    Runtime(Box<berth_runtime::RuntimeError>),
}

impl From<PullError> for EngineError {
    fn from(error: PullError) -> Self {
        Self::Pull(Box::new(error))
    }
}

impl From<PushError> for EngineError {
    fn from(error: PushError) -> Self {
        Self::Push(Box::new(error))
    }
}

impl EngineError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::NoSuchImage(_) | Self::NoSuchContainer(_) => ErrorKind::NotFound,
            Self::Image(error) => error.kind(),
            Self::Pull(error) => error.kind(),
            Self::Push(error) => error.kind(),
            Self::AmbiguousContainer(_) | Self::InvalidArgument(_) => ErrorKind::InvalidArgument,
            Self::NameInUse { .. } | Self::ContainerRunning { .. } | Self::Conflict(_) => {
                ErrorKind::Conflict
            }
            Self::ContainerNotRunning { .. } => ErrorKind::NotRunning,
            Self::Create(error) => error.kind(),
            Self::Spec(error) => error.kind(),
            Self::Changes(error) => error.kind(),
            Self::Commit(error) => error.kind(),
            Self::Volume(error) => error.kind(),
            Self::Network(error) => error.kind(),
            Self::Swarm(error) => error.kind(),
            Self::Copy(error) => error.kind(),
            Self::Logs(error) => error.kind(),
            Self::Events(error) => error.kind(),
            Self::System(error) => error.kind(),
            Self::StartFailed(failure) => match failure.status {
                126 => ErrorKind::CannotInvoke,
                127 => ErrorKind::CommandNotFound,
                _ => ErrorKind::Internal,
            },
            Self::Container(error) => error.kind(),
            Self::Warm(error) => error.kind(),
            Self::Link(error) => error.kind(),
            Self::Runtime(error) => match error.as_ref() {
                berth_runtime::RuntimeError::NotRunning { .. } => ErrorKind::NotRunning,
                berth_runtime::RuntimeError::Unsupported { .. } => ErrorKind::Unsupported,
                _ => ErrorKind::Internal,
            },
            Self::RemoveFiles { .. }
            | Self::Signal { .. }
            | Self::InitLayer(_)
            | Self::Store(_) => ErrorKind::Internal,
        }
    }

    /// The exit code Docker gives a container whose start failed with this
    /// error (its `State.ExitCode`, and `run`'s exit status): 126 when the
    /// command cannot be invoked, 127 when it is not found, else 125.
    pub fn run_status(&self) -> i32 {
        match self.kind() {
            ErrorKind::CannotInvoke => 126,
            ErrorKind::CommandNotFound => 127,
            _ => 125,
        }
    }

    /// True for "not found" errors.
    pub fn is_not_found(&self) -> bool {
        self.kind() == ErrorKind::NotFound
    }

    /// True for conflicts.
    pub fn is_conflict(&self) -> bool {
        self.kind() == ErrorKind::Conflict
    }
}

/// An error and its causes joined by ": ", as the CLI (`{:#}`) and the API
/// print one: for places that must hand on the whole message as text (a
/// monitor's report, an error inside a stream), where `to_string()` would
/// drop the causes.
pub struct ErrorChain<'a>(pub &'a (dyn std::error::Error + 'static));

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(cause) = source {
            write!(formatter, ": {cause}")?;
            source = cause.source();
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_joins_every_cause() {
        let error = EngineError::RemoveFiles {
            id: "abc".to_owned(),
            source: std::io::Error::from_raw_os_error(libc::EACCES),
        };
        assert_eq!(
            ErrorChain(&error).to_string(),
            "failed to remove the files of container abc: Permission denied (os error 13)"
        );
        assert_eq!(error.kind(), ErrorKind::Internal);
    }

    #[test]
    fn start_failures_keep_dockers_exit_statuses() {
        let failure = |status| {
            EngineError::StartFailed(crate::containers::StartFailure {
                message: "exec: \"nope\": executable file not found in $PATH".to_owned(),
                status,
            })
        };
        assert_eq!(failure(127).kind(), ErrorKind::CommandNotFound);
        assert_eq!(failure(127).run_status(), 127);
        assert_eq!(failure(126).kind(), ErrorKind::CannotInvoke);
        assert_eq!(failure(126).run_status(), 126);
        assert_eq!(failure(125).kind(), ErrorKind::Internal);
        assert_eq!(failure(125).run_status(), 125);
        assert_eq!(EngineError::NoSuchImage("x".to_owned()).run_status(), 125);
    }

    #[test]
    fn the_container_variants_have_their_kinds() {
        let id = || "abc".to_owned();
        assert!(EngineError::NoSuchContainer(id()).is_not_found());
        assert!(EngineError::NoSuchImage(id()).is_not_found());
        assert!(EngineError::NameInUse {
            name: id(),
            id: id()
        }
        .is_conflict());
        assert!(EngineError::ContainerRunning { id: id() }.is_conflict());
        assert!(EngineError::Conflict(id()).is_conflict());
        assert_eq!(
            EngineError::ContainerNotRunning { id: id() }.kind(),
            ErrorKind::NotRunning
        );
        assert_eq!(
            EngineError::AmbiguousContainer(id()).kind(),
            ErrorKind::InvalidArgument
        );
        assert_eq!(
            EngineError::Signal {
                id: id(),
                source: nix::Error::ESRCH
            }
            .kind(),
            ErrorKind::Internal
        );
    }
}
