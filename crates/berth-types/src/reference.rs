//! Docker image references. (Being written.)
pub struct Reference;
#[derive(Debug, thiserror::Error)]
#[error("invalid reference format")]
pub struct ReferenceError;
