//! The build cache: a step's key (its parent image, its instruction as it
//! resolved, and the content it reads) → the image it made. One file per
//! key under `ROOT/build-cache/`, written whole (a temporary, then a
//! rename), so a build killed mid-write leaves no half entry; an entry
//! whose image was removed is a miss.

use std::path::{Path, PathBuf};

use berth_engine::Engine;
use berth_types::Digest;
use sha2::{Digest as _, Sha256};

/// A step's cache key, built from its parts in order.
#[derive(Clone)]
pub struct CacheKey {
    hasher: Sha256,
}

impl CacheKey {
    /// A key on `parent` (none for `FROM scratch`'s first step).
    pub fn new(parent: Option<&Digest>) -> Self {
        let mut key = Self {
            hasher: Sha256::new(),
        };
        key.add(b"berth-build-cache-v1");
        key.add(parent.map(Digest::to_string).unwrap_or_default().as_bytes());
        key
    }

    /// The key of a step on `image`: its id, or, before the first image
    /// of `FROM scratch`, the platform it is for (the image it makes
    /// carries it).
    pub fn of(image: &super::image::StepImage) -> Self {
        let mut key = Self::new(image.id.as_ref());
        if image.id.is_none() {
            key.add(berth_types::container::platform::format_platform(&image.platform).as_bytes());
        }
        // The same step of a build with another SOURCE_DATE_EPOCH (or
        // none) makes another image.
        if let Some(epoch) = image.source_date_epoch {
            key.add(b"SOURCE_DATE_EPOCH").add(&epoch.to_le_bytes());
        }
        key
    }

    /// One part, length-prefixed so that parts cannot run into each other.
    pub fn add(&mut self, part: &[u8]) -> &mut Self {
        self.hasher.update((part.len() as u64).to_le_bytes());
        self.hasher.update(part);
        self
    }

    pub fn finish(self) -> String {
        hex::encode(self.hasher.finalize())
    }
}

pub struct BuildCache {
    directory: PathBuf,
}

impl BuildCache {
    pub fn new(root: &Path) -> Self {
        Self {
            directory: root.join("build-cache"),
        }
    }

    /// The image cached under `key`, if it is still in the store.
    pub fn lookup(&self, engine: &Engine, key: &str) -> Option<Digest> {
        let text = fs_err::read_to_string(self.directory.join(key)).ok()?;
        let id = Digest::parse(text.trim()).ok()?;
        engine
            .store()
            .image(&id)
            .ok()
            .flatten()
            .map(|image| image.id)
    }

    /// Records `image` under `key`; a cache that cannot be written only
    /// costs the next build the step.
    pub fn record(&self, key: &str, image: &Digest) {
        let write = || -> std::io::Result<()> {
            fs_err::create_dir_all(&self.directory)?;
            // Stages built at the same time may record one key together.
            static WRITES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let write = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let temporary = self
                .directory
                .join(format!(".{key}.{}.{write}", std::process::id()));
            fs_err::write(&temporary, image.to_string())?;
            fs_err::rename(&temporary, self.directory.join(key))
        };
        if let Err(error) = write() {
            tracing::warn!(%error, "failed to record a build cache entry");
        }
    }
}

/// Empties the build cache (`POST /build/prune`): every key's entry goes,
/// so the next build makes each step anew; the images the steps made stay
/// until `image prune` or `rmi` removes them. Returns the keys removed and
/// the bytes their entries took.
pub fn prune_cache(root: &Path) -> std::io::Result<(Vec<String>, u64)> {
    let directory = BuildCache::new(root).directory;
    let entries = match fs_err::read_dir(&directory) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
        Err(error) => return Err(error),
    };
    let mut removed = Vec::new();
    let mut bytes = 0;
    for entry in entries {
        let entry = entry?;
        let size = entry.metadata().map(|metadata| metadata.len()).unwrap_or(0);
        fs_err::remove_file(entry.path())?;
        bytes += size;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with('.') {
            removed.push(name);
        }
    }
    removed.sort();
    Ok((removed, bytes))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn keys_differ_by_parent_and_by_where_parts_split() {
        let digest = Digest::parse(&format!("sha256:{}", "a".repeat(64))).ok();
        let mut one = CacheKey::new(None);
        one.add(b"RUN").add(b"ab");
        let mut two = CacheKey::new(None);
        two.add(b"RUNa").add(b"b");
        let mut three = CacheKey::new(digest.as_ref());
        three.add(b"RUN").add(b"ab");
        let mut again = CacheKey::new(None);
        again.add(b"RUN").add(b"ab");
        let (one, two, three, again) = (one.finish(), two.finish(), three.finish(), again.finish());
        assert_ne!(one, two);
        assert_ne!(one, three);
        assert_eq!(one, again);
    }

    #[test]
    fn a_pruned_cache_has_no_entries_left() {
        let directory = tempfile::tempdir().unwrap();
        let digest = Digest::parse(&format!("sha256:{}", "b".repeat(64))).unwrap();
        let cache = BuildCache::new(directory.path());
        cache.record("key1", &digest);
        cache.record("key2", &digest);
        let (removed, bytes) = prune_cache(directory.path()).unwrap();
        assert_eq!(removed, ["key1", "key2"]);
        assert_eq!(bytes, 2 * 71);
        assert_eq!(prune_cache(directory.path()).unwrap(), (Vec::new(), 0));
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(prune_cache(empty.path()).unwrap(), (Vec::new(), 0));
    }
}
