//! What a pull or push reports while it runs, one event per change, in the
//! words Docker's progress stream uses. Front ends render them (a redrawn
//! table on a terminal, plain lines in a pipe, JSON messages in the API).

use berth_types::Digest;

/// One step of a pull.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PullEvent {
    /// `TAG: Pulling from REPOSITORY` (the tag, or the digest pulled by).
    PullingFrom {
        reference: String,
        repository: String,
    },
    /// A layer's status; `id` is the first 12 hex digits of its blob digest.
    Layer { id: String, status: LayerStatus },
    /// `Digest: sha256:…`, the digest the image was pulled by.
    Digest(Digest),
    /// `Status: Downloaded newer image for …` / `Status: Image is up to date for …`.
    Status(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayerStatus {
    PullingFsLayer,
    Waiting,
    AlreadyExists,
    Downloading { current: u64, total: u64 },
    VerifyingChecksum,
    DownloadComplete,
    Extracting,
    PullComplete,
}

impl LayerStatus {
    /// Docker's words for the status.
    pub fn text(&self) -> &'static str {
        match self {
            Self::PullingFsLayer => "Pulling fs layer",
            Self::Waiting => "Waiting",
            Self::AlreadyExists => "Already exists",
            Self::Downloading { .. } => "Downloading",
            Self::VerifyingChecksum => "Verifying Checksum",
            Self::DownloadComplete => "Download complete",
            Self::Extracting => "Extracting",
            Self::PullComplete => "Pull complete",
        }
    }

    /// Bytes done and in all, for a status with a progress bar.
    pub fn progress(&self) -> Option<(u64, u64)> {
        match self {
            Self::Downloading { current, total } => Some((*current, *total)),
            _ => None,
        }
    }
}

/// One step of a push.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PushEvent {
    /// `The push refers to repository [HOST/NAME]`.
    Repository(String),
    Layer {
        id: String,
        status: PushStatus,
    },
    /// `TAG: digest: sha256:… size: N`.
    Pushed {
        tag: String,
        digest: Digest,
        size: u64,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PushStatus {
    Preparing,
    Waiting,
    Pushing { current: u64, total: u64 },
    Pushed,
    AlreadyExists,
    MountedFrom(String),
}

impl PushStatus {
    pub fn text(&self) -> String {
        match self {
            Self::Preparing => "Preparing".to_owned(),
            Self::Waiting => "Waiting".to_owned(),
            Self::Pushing { .. } => "Pushing".to_owned(),
            Self::Pushed => "Pushed".to_owned(),
            Self::AlreadyExists => "Layer already exists".to_owned(),
            Self::MountedFrom(repository) => format!("Mounted from {repository}"),
        }
    }

    pub fn progress(&self) -> Option<(u64, u64)> {
        match self {
            Self::Pushing { current, total } => Some((*current, *total)),
            _ => None,
        }
    }
}

/// The id Docker shows for a layer: 12 hex digits of its blob digest.
pub fn layer_id(digest: &Digest) -> String {
    digest.hex().chars().take(12).collect()
}
