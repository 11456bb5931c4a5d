//! Image formats: layer unpacking, Docker/OCI archives (`load`/`save`) and
//! rootfs import. Everything here writes through `berth_store::Store`.

pub mod archive;
pub mod changes;
pub mod commit;
pub mod import;
mod layer;
pub mod unpack;

pub use archive::oci::host_architecture;
pub use archive::{load_archive, save_archive, ArchiveError, LoadedImage, SaveRequest};
pub use import::{import_rootfs, parse_change, ImportError, ImportOptions, ImportedImage};
pub use layer::{add_layer, AddedLayer, LayerError};
