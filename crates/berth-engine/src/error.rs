use berth_image::{ArchiveError, ImportError};
use berth_store::StoreError;

/// Engine errors. Messages that Docker users know use Docker's words.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("No such image: {0}")]
    NoSuchImage(String),
    #[error("multiple IDs found with provided prefix: {0}")]
    AmbiguousImage(String),
    #[error("{0}")]
    InvalidReference(String),
    #[error("conflict: unable to delete {id} (must be forced) - image is referenced in multiple repositories")]
    ImageReferencedByTags { id: String },
    #[error("conflict: unable to remove repository reference {reference:?} (must force) - container {container} is using its referenced image {id}")]
    ImageInUse {
        reference: String,
        container: String,
        id: String,
    },
    #[error("conflict: unable to delete {id} (must be forced) - image is being used by stopped container {container}")]
    ImageUsedByContainer { id: String, container: String },
    #[error("failed to load the image archive")]
    Load(#[source] ArchiveError),
    #[error("failed to save the image archive")]
    Save(#[source] ArchiveError),
    #[error("failed to import the root filesystem")]
    Import(#[source] ImportError),
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
    #[error("get {0}: no such volume")]
    NoSuchVolume(String),
    #[error("remove {name}: volume is in use - [{}]", containers.join(", "))]
    VolumeInUse {
        name: String,
        containers: Vec<String>,
    },
    #[error("failed to start the container: {0}")]
    Start(String),
    #[error("network {0} not found")]
    NoSuchNetwork(String),
    #[error("{0}")]
    Network(String),
    #[error(transparent)]
    StartFailed(crate::containers::StartFailure),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The container's runtime refused or failed (see `berth_runtime::backend`).
    #[error(transparent)]
    Runtime(Box<berth_runtime::RuntimeError>),
}

impl EngineError {
    /// The exit status `run` uses for this error (Docker's: 125 unless the
    /// command could not be invoked (126) or found (127)).
    pub fn run_status(&self) -> i32 {
        match self {
            Self::StartFailed(failure) => failure.status,
            _ => 125,
        }
    }

    /// True for "not found" errors (exit status and HTTP 404 map from it).
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            Self::NoSuchImage(_)
                | Self::NoSuchContainer(_)
                | Self::NoSuchVolume(_)
                | Self::NoSuchNetwork(_)
        )
    }

    /// True for conflicts (HTTP 409).
    pub fn is_conflict(&self) -> bool {
        matches!(
            self,
            Self::ImageReferencedByTags { .. }
                | Self::ImageInUse { .. }
                | Self::ImageUsedByContainer { .. }
                | Self::NameInUse { .. }
                | Self::ContainerRunning { .. }
                | Self::Conflict(_)
        )
    }
}
