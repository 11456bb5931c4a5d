//! Image archives: what `docker save` writes (`manifest.json`, legacy or
//! Docker 25+ layout) and OCI image-layout archives (`index.json`).

mod docker;
mod error;
pub(crate) mod load;
pub(crate) mod oci;
mod save;
mod staging;

pub use error::ArchiveError;
pub use load::{load_archive, LoadedImage};
pub use save::{save_archive, SaveRequest};
