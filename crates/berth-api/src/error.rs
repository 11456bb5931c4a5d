//! The one map from engine errors to HTTP: a status and Docker's
//! `{"message": …}` body.

use berth_engine::copy::CopyError;
use berth_engine::images::{PullError, PushError};
use berth_engine::{EngineError, ErrorChain, ErrorKind};
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

/// The one map from an engine error's kind to Docker's HTTP status.
pub fn status_for_kind(kind: ErrorKind) -> u16 {
    match kind {
        ErrorKind::NotFound => 404,
        ErrorKind::Conflict | ErrorKind::NotRunning => 409,
        ErrorKind::InvalidArgument => 400,
        // Docker: an executable that cannot be found or run is the
        // client's mistake (400); the CLI makes them 126/127.
        ErrorKind::CannotInvoke | ErrorKind::CommandNotFound => 400,
        ErrorKind::Forbidden => 403,
        ErrorKind::Unauthorized => 401,
        ErrorKind::Unsupported => 501,
        ErrorKind::Unavailable => 503,
        ErrorKind::Internal => 500,
    }
}

/// Docker's status for an engine error.
pub fn status_for(error: &EngineError) -> u16 {
    status_for_kind(error.kind())
}

impl ApiError {
    /// The status of `kind` and the whole chain of `error` once, as the CLI
    /// prints it.
    fn of(kind: ErrorKind, error: &(dyn std::error::Error + 'static)) -> Self {
        Self {
            status: status_for_kind(kind),
            message: ErrorChain(error).to_string(),
        }
    }
}

impl From<EngineError> for ApiError {
    fn from(error: EngineError) -> Self {
        Self::of(error.kind(), &error)
    }
}

impl From<berth_store::StoreError> for ApiError {
    fn from(error: berth_store::StoreError) -> Self {
        Self::from(EngineError::from(error))
    }
}

impl From<CopyError> for ApiError {
    fn from(error: CopyError) -> Self {
        Self::of(error.kind(), &error)
    }
}

impl From<PullError> for ApiError {
    fn from(error: PullError) -> Self {
        Self::of(error.kind(), &error)
    }
}

impl From<PushError> for ApiError {
    fn from(error: PushError) -> Self {
        Self::of(error.kind(), &error)
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
        assert_eq!(
            status_for(&EngineError::RemoveFiles {
                id: "x".to_owned(),
                source: std::io::Error::from_raw_os_error(libc::EIO),
            }),
            500
        );
        assert_eq!(
            status_for(&EngineError::ContainerNotRunning { id: "x".to_owned() }),
            409
        );
        let failed = |status| {
            EngineError::StartFailed(berth_engine::containers::StartFailure {
                message: "x".to_owned(),
                status,
            })
        };
        assert_eq!(status_for(&failed(127)), 400);
        assert_eq!(status_for(&failed(126)), 400);
        assert_eq!(status_for(&failed(125)), 500);
    }

    #[test]
    fn every_kind_has_dockers_status() {
        let statuses = [
            (ErrorKind::NotFound, 404),
            (ErrorKind::Conflict, 409),
            (ErrorKind::NotRunning, 409),
            (ErrorKind::InvalidArgument, 400),
            (ErrorKind::CannotInvoke, 400),
            (ErrorKind::CommandNotFound, 400),
            (ErrorKind::Forbidden, 403),
            (ErrorKind::Unauthorized, 401),
            (ErrorKind::Unsupported, 501),
            (ErrorKind::Unavailable, 503),
            (ErrorKind::Internal, 500),
        ];
        for (kind, status) in statuses {
            assert_eq!(status_for_kind(kind), status, "{kind:?}");
        }
    }

    #[test]
    fn module_errors_keep_their_statuses_and_carry_their_causes() {
        use berth_engine::networks::NetworkError;
        use berth_engine::volumes::VolumeError;
        let store_error = |name: &str| berth_store::NetworkStoreError::NameInUse(name.to_owned());
        assert_eq!(
            ApiError::from(EngineError::from(NetworkError::Refused(store_error("web")))),
            ApiError::new(409, "network with name web already exists")
        );
        let active = NetworkError::ActiveEndpoints {
            name: "web".to_owned(),
            id: "abc".to_owned(),
        };
        assert_eq!(ApiError::from(EngineError::from(active)).status, 409);
        let predefined = NetworkError::PredefinedRemoval {
            name: "bridge".to_owned(),
        };
        assert_eq!(
            ApiError::from(EngineError::from(predefined)),
            ApiError::new(403, "bridge is a pre-defined network and cannot be removed")
        );
        assert_eq!(
            ApiError::from(EngineError::from(NetworkError::NotFound("x".to_owned()))),
            ApiError::new(404, "network x not found")
        );
        assert_eq!(
            ApiError::from(EngineError::from(VolumeError::NotFound("v".to_owned()))),
            ApiError::new(404, "get v: no such volume")
        );
        let in_use = VolumeError::InUse {
            name: "v".to_owned(),
            containers: vec!["c".to_owned()],
        };
        assert_eq!(ApiError::from(EngineError::from(in_use)).status, 409);
        let lock = NetworkError::LockHost(std::io::Error::from_raw_os_error(libc::EACCES));
        assert_eq!(
            ApiError::from(EngineError::from(lock)),
            ApiError::new(
                500,
                "failed to lock the host's networks: Permission denied (os error 13)"
            )
        );
    }

    #[test]
    fn copy_pull_and_push_errors_use_the_same_map() {
        let missing = CopyError::NotFound {
            path: "/x".to_owned(),
            container: "c".to_owned(),
        };
        assert_eq!(
            ApiError::from(missing),
            ApiError::new(404, "Could not find the file /x in container c")
        );
        assert_eq!(
            ApiError::from(CopyError::CompressedArchive { format: "gzip" }).status,
            400
        );
        assert_eq!(
            ApiError::from(PullError::InvalidPlatform {
                platform: "x".to_owned()
            })
            .status,
            400
        );
        assert_eq!(
            ApiError::from(PushError::NoSuchImage("x:1".to_owned())),
            ApiError::new(404, "An image does not exist locally with the tag: x:1")
        );
    }
}
