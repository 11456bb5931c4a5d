//! A container's sizes as `docker ps -s` and inspect's `SizeRw`/`SizeRootFs` give them: the
//! bytes of the files in its writable layer, and those plus its image's.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use berth_store::Store;

use super::lookup::Container;
use super::paths::ContainerPaths;
use crate::{EngineConfig, EngineError};

/// `(rw, virtual)` in bytes. A file's size counts once however many hard links it has, and
/// directories and symbolic links count nothing (moby `directory.Size`).
pub fn container_size(
    store: &Store,
    config: &EngineConfig,
    container: &Container,
) -> Result<(u64, u64), EngineError> {
    let paths = ContainerPaths::new(&config.root, &config.run_root, &container.record.id);
    let rw = files_size(&paths.rootfs().upper);
    let image = berth_types::Digest::parse(&container.record.image_id)
        .ok()
        .map(|id| store.image(&id))
        .transpose()?
        .flatten()
        .map_or(0, |image| image.size);
    Ok((rw, rw + image))
}

/// The sum of the sizes of the regular files below `root`; 0 for a missing directory.
fn files_size(root: &Path) -> u64 {
    let mut seen = HashSet::new();
    let mut total = 0;
    let mut pending = vec![root.to_owned()];
    while let Some(directory) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&directory) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(metadata) = entry.metadata() else {
                continue;
            };
            if metadata.is_dir() {
                pending.push(entry.path());
            } else if metadata.is_file() && seen.insert((metadata.dev(), metadata.ino())) {
                total += metadata.len();
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hard_links_count_once_and_directories_not_at_all() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("a/b")).unwrap();
        std::fs::write(root.path().join("a/b/one"), vec![0u8; 1000]).unwrap();
        std::fs::hard_link(root.path().join("a/b/one"), root.path().join("a/link")).unwrap();
        std::fs::write(root.path().join("two"), vec![0u8; 234]).unwrap();
        std::os::unix::fs::symlink("two", root.path().join("s")).unwrap();
        assert_eq!(files_size(root.path()), 1234);
        assert_eq!(files_size(&root.path().join("missing")), 0);
    }
}
