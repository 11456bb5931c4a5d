//! A container's sizes as `docker ps -s` and inspect's `SizeRw`/`SizeRootFs` give them: the
//! bytes of the files in its writable layer, and those plus its image's.

use berth_store::Store;

use super::lookup::Container;
use super::paths::ContainerPaths;
use crate::{EngineConfig, EngineError};

/// `(rw, virtual)` in bytes. A file's size counts once however many hard links it has, and
/// directories and symbolic links count nothing (moby `directory.Size`,
/// [`berth_store::Measure::FileBytes`]).
pub fn container_size(
    store: &Store,
    config: &EngineConfig,
    container: &Container,
) -> Result<(u64, u64), EngineError> {
    let paths = ContainerPaths::new(&config.root, &config.run_root, &container.record.id);
    let rw = berth_store::file_bytes(&paths.rootfs().upper)?;
    let image = berth_types::Digest::parse(&container.record.image_id)
        .ok()
        .map(|id| store.image_of_containers(&id))
        .transpose()?
        .flatten()
        .map_or(0, |image| image.size);
    Ok((rw, rw + image))
}
