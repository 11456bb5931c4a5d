//! `build --output`: the image's files as one tar stream, read from its
//! layers alone (no container: no init layer's mount points, no
//! `/etc/hosts`), as BuildKit's local and tar exporters write them.
//!
//! The layers are stacked as a read-only overlay in a mount namespace of
//! one thread of its own, which ends with the thread: the host never sees
//! the mount, and a kill leaves nothing mounted (only the empty mount
//! point, under `ROOT/tmp`, which the store's garbage collection empties;
//! the export holds the store's shared lock, so it never does so while the
//! export reads).

use std::io::Write;
use std::path::{Path, PathBuf};

use berth_engine::Engine;
use berth_types::Digest;
use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};

use crate::BuildError;

pub fn export_image(
    engine: &Engine,
    image: &Digest,
    out: &mut (dyn Write + Send),
) -> Result<(), BuildError> {
    let store = engine.store();
    let record = store
        .image(image)
        .map_err(berth_engine::EngineError::from)?
        .ok_or_else(|| BuildError::Invalid(format!("image {image} is not in the store")))?;
    let layers: Vec<PathBuf> = record
        .layers
        .iter()
        .map(|chain_id| store.layers().path(chain_id))
        .collect();
    // Under the store's shared lock, named as the store names staging:
    // garbage collection (which empties `tmp/` under the exclusive lock)
    // waits until the export is done, and a later one removes a killed
    // export's mount point.
    let _staging_lock = store
        .lock_shared()
        .map_err(berth_engine::EngineError::from)?;
    let mount_point = store.staging_path("build-export");
    fs_err::create_dir_all(&mount_point).map_err(BuildError::Layer)?;
    let result = std::thread::scope(|scope| {
        scope
            .spawn(|| export_layers(&layers, &mount_point, out))
            .join()
            .unwrap_or_else(|_| Err(BuildError::Invalid("the export thread panicked".to_owned())))
    });
    let _ = fs_err::remove_dir(&mount_point);
    result
}

/// On its own thread: the layers' union at `mount_point`, written as tar.
fn export_layers(
    layers: &[PathBuf],
    mount_point: &Path,
    out: &mut (dyn Write + Send),
) -> Result<(), BuildError> {
    let exported = |root: &Path, out: &mut (dyn Write + Send)| {
        berth_image::changes::export_rootfs(root, out)
            .map_err(|error| BuildError::Invalid(format!("failed to export the image: {error}")))
    };
    match layers {
        [] => {
            tar::Builder::new(out).finish().map_err(BuildError::Layer)?;
            Ok(())
        }
        // One layer is its own union (a base layer has no whiteouts).
        [only] => exported(only, out),
        _ => {
            let namespace = |error: nix::Error| BuildError::Layer(error.into());
            unshare(CloneFlags::CLONE_NEWNS).map_err(namespace)?;
            mount(
                None::<&str>,
                "/",
                None::<&str>,
                MsFlags::MS_REC | MsFlags::MS_PRIVATE,
                None::<&str>,
            )
            .map_err(namespace)?;
            berth_runtime::rootfs::mount_readonly_overlay(layers, mount_point).map_err(
                |error| BuildError::Invalid(format!("failed to mount the image's layers: {error}")),
            )?;
            exported(mount_point, out)
        }
    }
}
