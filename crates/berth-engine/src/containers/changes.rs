//! `diff` and `export`: what a container changed, and its whole root.

use std::io::Write;

use berth_image::changes::{changes, export_rootfs, Change};
use berth_runtime::rootfs::{is_mounted, mount_rootfs, unmount_rootfs};

use super::lookup::{find_container, Container};
use super::paths::ContainerPaths;
use crate::{Engine, EngineError};

fn layer_paths(engine: &Engine, container: &Container) -> Result<Vec<std::path::PathBuf>, EngineError> {
    let image_id = berth_types::Digest::parse(&container.record.image_id).map_err(|error| EngineError::Start(error.to_string()))?;
    let image = engine
        .store()
        .image(&image_id)?
        .ok_or_else(|| EngineError::NoSuchImage(container.record.image_name.clone()))?;
    Ok(image.layers.iter().map(|chain_id| engine.store().layers().path(chain_id)).collect())
}

/// `diff`: Docker's A/C/D list, sorted by path.
pub fn container_diff(engine: &Engine, text: &str) -> Result<Vec<Change>, EngineError> {
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, text)?;
    let paths = ContainerPaths::new(&config.root, &config.run_root, &container.record.id);
    let mut lowers = layer_paths(engine, &container)?;
    lowers.push(paths.init_layer()?);
    let upper = paths.rootfs().upper;
    if !upper.exists() {
        return Ok(Vec::new());
    }
    changes(&upper, &lowers).map_err(|error| EngineError::Start(format!("failed to compute changes: {error}")))
}

/// `export`: the merged root as a tar stream (mounted for the duration
/// when the container is not running).
pub fn export_container(engine: &Engine, text: &str, out: impl Write) -> Result<(), EngineError> {
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, text)?;
    let paths = ContainerPaths::new(&config.root, &config.run_root, &container.record.id);
    let rootfs = paths.rootfs();
    let mounted_here = !is_mounted(&rootfs.merged);
    if mounted_here {
        let mut layers = layer_paths(engine, &container)?;
        layers.push(paths.init_layer()?);
        mount_rootfs(&layers, &rootfs).map_err(|error| EngineError::Start(error.to_string()))?;
    }
    let result = export_rootfs(&rootfs.merged, out).map_err(|error| EngineError::Start(format!("failed to export: {error}")));
    if mounted_here {
        let _ = unmount_rootfs(&rootfs);
    }
    result
}
