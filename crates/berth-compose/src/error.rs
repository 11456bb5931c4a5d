//! The errors of loading a project. Each names the file, line and key where it has them.

use crate::yaml::Location;

#[derive(Debug, thiserror::Error)]
pub enum ComposeError {
    #[error(transparent)]
    Yaml(#[from] crate::yaml::YamlError),
    #[error(transparent)]
    Interpolate(#[from] crate::interpolate::InterpolateError),
    #[error(transparent)]
    Dotenv(#[from] crate::dotenv::DotenvError),
    /// A value of the wrong shape or an unknown key (compose's "validating FILE: ..." errors).
    #[error("{at}: {path} {message}")]
    Schema {
        at: Location,
        path: String,
        message: String,
    },
    /// A key compose knows that berth does not implement: refused, never ignored.
    #[error("{at}: {path}: berth compose does not support {what} yet")]
    Unsupported {
        at: Location,
        path: String,
        what: String,
    },
    #[error("failed to read {path:?}")]
    Read {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no configuration file provided: not found")]
    NoFile,
    #[error("dependency cycle detected: {0}")]
    Cycle(String),
    /// A project-level inconsistency, in compose's words (`... : invalid compose project`).
    #[error("{0}: invalid compose project")]
    Invalid(String),
    #[error("invalid project name {name:?}: must consist only of lowercase alphanumeric characters, hyphens, and underscores as well as start with a letter or number")]
    ProjectName { name: String },
    #[error("include cycle detected: {0}")]
    IncludeCycle(String),
    #[error("{0}")]
    Other(String),
}

impl ComposeError {
    pub fn schema(at: &Location, path: &str, message: impl Into<String>) -> Self {
        Self::Schema {
            at: at.clone(),
            path: path.to_owned(),
            message: message.into(),
        }
    }

    pub fn unsupported(at: &Location, path: &str, what: impl Into<String>) -> Self {
        Self::Unsupported {
            at: at.clone(),
            path: path.to_owned(),
            what: what.into(),
        }
    }
}
