//! The one map from engine errors to HTTP: a status and Docker's
//! `{"message": …}` body.

use berth_engine::EngineError;
use serde_json::json;

use crate::http::Response;

/// An error answer: the status and Docker's message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub status: u16,
    pub message: String,
}

impl ApiError {
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(404, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, message)
    }

    pub fn response(&self) -> Response {
        Response::json(self.status, &json!({ "message": self.message }))
    }
}

/// Docker's status for each kind of engine error.
pub fn status_for(error: &EngineError) -> u16 {
    if error.is_not_found() {
        return 404;
    }
    if error.is_conflict() {
        return 409;
    }
    match error {
        EngineError::InvalidArgument(_)
        | EngineError::InvalidReference(_)
        | EngineError::AmbiguousImage(_)
        | EngineError::AmbiguousContainer(_) => 400,
        EngineError::ContainerNotRunning { .. } | EngineError::VolumeInUse { .. } => 409,
        // Docker: an executable that cannot be found or run is the
        // client's mistake (400); the CLI maps the words to 126/127.
        EngineError::StartFailed(failure) if matches!(failure.status, 126 | 127) => 400,
        _ => 500,
    }
}

impl From<EngineError> for ApiError {
    fn from(error: EngineError) -> Self {
        let status = status_for(&error);
        // The whole chain once, as the CLI prints it.
        let mut message = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            let text = cause.to_string();
            if !message.contains(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            source = cause.source();
        }
        Self { status, message }
    }
}

impl From<berth_store::StoreError> for ApiError {
    fn from(error: berth_store::StoreError) -> Self {
        Self::from(EngineError::from(error))
    }
}

impl From<berth_engine::copy::CopyError> for ApiError {
    fn from(error: berth_engine::copy::CopyError) -> Self {
        let message = error.to_string();
        let status = if message.starts_with("Could not find the file") {
            404
        } else {
            400
        };
        Self { status, message }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_errors_map_to_docker_statuses() {
        assert_eq!(
            ApiError::from(EngineError::NoSuchImage("busybox:latest".to_owned())),
            ApiError::new(404, "No such image: busybox:latest")
        );
        assert_eq!(
            status_for(&EngineError::NameInUse {
                name: "x".to_owned(),
                id: "y".to_owned()
            }),
            409
        );
        assert_eq!(
            status_for(&EngineError::InvalidArgument("bad".to_owned())),
            400
        );
        assert_eq!(status_for(&EngineError::Start("x".to_owned())), 500);
    }
}
