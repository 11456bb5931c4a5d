//! A run's volumes with driver options: mounted (and filled from the image
//! when new) before the run, by the monitor, in the host's mount namespace
//! (see `crate::volumes::mounts`).

use berth_store::Store;

use crate::containers::paths::ContainerPaths;
use crate::containers::record::ContainerRecord;
use crate::{EngineConfig, EngineError};

/// `State.ExitCode` of a container whose volume could not be mounted
/// (dockerd's `exitUnknown`).
const MOUNT_FAILED: i32 = 128;

/// Takes the run's uses of its volumes with driver options (mounting them)
/// and, as Docker at a volume's first mount, fills an empty one from the
/// image (the start left those to this monitor: they were not mounted).
pub(super) fn take_volumes(
    config: &EngineConfig,
    store: &Store,
    record: &ContainerRecord,
    paths: &ContainerPaths,
    layers: Option<&[std::path::PathBuf]>,
) -> Result<crate::volumes::mounts::HeldVolumes, (String, i32)> {
    let failure = |error: EngineError| (crate::ErrorChain(&error).to_string(), 125);
    let volumes = crate::volumes::mounts::HeldVolumes::take(
        &config.root,
        &config.run_root,
        &record.run,
        &record.id,
    )
    // dockerd records 128 for a start its volume mount failed (and answers
    // 500); the docker CLI's `run` reads 127 or 126 off the message.
    .map_err(|error| (crate::ErrorChain(&error).to_string(), MOUNT_FAILED))?;
    if volumes.is_empty() {
        return Ok(volumes);
    }
    let looked_up;
    let layers = match layers {
        Some(layers) => layers,
        None => {
            looked_up =
                crate::containers::start::container_layers(store, record).map_err(failure)?;
            &looked_up
        }
    };
    paths.create_rootfs_directories().map_err(failure)?;
    crate::containers::start::populate_new_volumes(&config.root, record, paths, layers, &|name| {
        crate::containers::start::has_driver_options(&config.root, name)
    })
    .map_err(failure)?;
    Ok(volumes)
}
