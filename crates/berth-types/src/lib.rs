//! Plain data shared by every berth crate: digests, image references, image
//! configs and manifests. No I/O happens here.

pub mod container;
pub mod detach_keys;
pub mod digest;
pub mod duration;
pub mod glob;
pub mod go;
pub mod image;
pub mod reference;

pub use digest::{Digest, DigestError};
pub use reference::{Reference, ReferenceError};
