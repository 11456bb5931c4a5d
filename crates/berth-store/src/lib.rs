//! berth's on-disk state under the root directory:
//!
//! ```text
//! <root>/metadata.db          SQLite (WAL), the one source of truth for metadata
//! <root>/blobs/sha256/<hex>   content-addressed blobs (configs, manifests, layer blobs)
//! <root>/layers/<chain-hex>/  each layer unpacked once, in overlayfs form
//! <root>/tmp/                 staging: blobs and layers being written
//! <root>/locks/               advisory locks shared by every berth process
//! ```
//!
//! Everything is written under `tmp/` and renamed into place when complete, so
//! a killed process never leaves a partial blob or layer where readers look.
//! All of it is private to root (0700 directories, 0600 files; see
//! [`permissions`]).

mod blobs;
mod containers;
mod db;
mod error;
mod images;
mod layers;
mod lock;
mod networks;
pub mod permissions;
mod volumes;

use std::path::{Path, PathBuf};

pub use blobs::{BlobStore, BlobWriter};
pub use containers::{ContainerRow, ContainerStoreError};
pub use db::SCHEMA_VERSION;
pub use error::StoreError;
pub use images::{ImageRecord, LayerRecord, MovedTag, NewImage, RemovedImage};
pub use layers::{LayerStore, StagedLayer};
pub use lock::StoreLock;
pub use networks::{EndpointRow, NetworkRow, NetworkStoreError};
pub use volumes::VolumeRow;

/// An open berth root. Cheap to open; each `berth` process opens its own.
pub struct Store {
    root: PathBuf,
    /// Empty between `suspend` and the next use, which reopens it.
    connection: std::cell::OnceCell<rusqlite::Connection>,
}

impl Store {
    /// Opens (creating if needed) the store at `root`, which is made
    /// private (0700) first: created so, or tightened when an older berth
    /// left it open.
    pub fn open(root: &Path) -> Result<Self, StoreError> {
        permissions::prepare_root(root)?;
        for directory in ["blobs/sha256", "layers", "tmp", "locks"] {
            let path = root.join(directory);
            if !path.is_dir() {
                permissions::create_private_directory_all(&path)?;
            }
        }
        // SQLite would create the database 0644 (less the umask); made here
        // 0600 first, and SQLite gives its -wal and -shm files the
        // database's mode.
        let database = root.join("metadata.db");
        permissions::create_private_file(&database)?;
        let connection = db::open(&database)?;
        let store = Self {
            root: root.to_owned(),
            connection: std::cell::OnceCell::from(connection),
        };
        store.clean_stale_staging();
        Ok(store)
    }

    /// The store at `root`, its database opened by the first query rather
    /// than now. For a process forked right after its parent opened the same
    /// root (a container's monitor): the directories exist, and the monitor
    /// can launch its container before it needs the database.
    pub fn open_deferred(root: &Path) -> Self {
        Self {
            root: root.to_owned(),
            connection: std::cell::OnceCell::new(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Opens the database now if [`Store::open_deferred`] has not yet: for
    /// a process that has a moment to spare before its first query.
    pub fn open_now(&self) -> Result<(), StoreError> {
        self.connection().map(drop)
    }

    pub fn blobs(&self) -> BlobStore {
        BlobStore::new(self.root.join("blobs/sha256"), self.root.join("tmp"))
    }

    pub fn layers(&self) -> LayerStore {
        LayerStore::new(self.root.join("layers"), self.root.join("tmp"))
    }

    /// Shared lock: held while adding content, so that garbage collection
    /// (which takes the exclusive lock) never deletes a layer or blob that a
    /// writer has found present but not yet referenced.
    pub fn lock_shared(&self) -> Result<StoreLock, StoreError> {
        StoreLock::acquire(&self.root.join("locks/content.lock"), false)
    }

    /// Exclusive lock held while berth's network rules are rendered from
    /// the store and applied, so the last writer applies the latest state.
    pub fn lock_network_rules(&self) -> Result<StoreLock, StoreError> {
        StoreLock::acquire(&self.root.join("locks/network.lock"), true)
    }

    /// Exclusive lock for removing content.
    pub fn lock_exclusive(&self) -> Result<StoreLock, StoreError> {
        StoreLock::acquire(&self.root.join("locks/content.lock"), true)
    }

    /// A fresh path under `tmp/` for a caller's own staging.
    pub fn staging_path(&self, prefix: &str) -> PathBuf {
        self.root.join("tmp").join(staging_name(prefix))
    }

    /// Removes every layer and blob no image references, and stale staging,
    /// when no other process is adding content. Returns whether it ran.
    pub fn try_collect_garbage(&self) -> Result<bool, StoreError> {
        let Some(lock) = StoreLock::try_exclusive(&self.root.join("locks/content.lock"))? else {
            return Ok(false);
        };
        self.collect_garbage(&lock)?;
        Ok(true)
    }

    /// Removes unreferenced layers and blobs. The exclusive lock proves no
    /// writer holds content it has not recorded yet.
    pub fn collect_garbage(&self, _exclusive: &StoreLock) -> Result<(), StoreError> {
        let (layers, blobs) = self.referenced_content()?;
        let layer_store = self.layers();
        for chain_id in layer_store.list()? {
            if !layers.contains(&chain_id) {
                tracing::debug!(%chain_id, "removing unreferenced layer");
                layer_store.delete(&chain_id)?;
            }
        }
        let blob_store = self.blobs();
        for digest in blob_store.list()? {
            if !blobs.contains(&digest) {
                tracing::debug!(%digest, "removing unreferenced blob");
                blob_store.delete(&digest)?;
            }
        }
        self.remove_staging();
        Ok(())
    }

    /// Removes staging entries left by killed processes. Only done when no
    /// other process holds the content lock, i.e. nobody is writing.
    fn clean_stale_staging(&self) {
        let Ok(Some(_lock)) = StoreLock::try_exclusive(&self.root.join("locks/content.lock"))
        else {
            return;
        };
        self.remove_staging();
    }

    fn remove_staging(&self) {
        let staging = self.root.join("tmp");
        let Ok(entries) = std::fs::read_dir(&staging) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let result = if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            match result {
                Ok(()) => tracing::debug!(path = %path.display(), "removed stale staging entry"),
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "failed to remove stale staging entry")
                }
            }
        }
    }

    /// Closes the database connection; the next use reopens it. Required
    /// before `fork`: SQLite keeps per-process lock state that a forked
    /// child would inherit without the locks themselves, and a child that
    /// then opens the same database can reset the WAL under another process
    /// (sqlite.org/howtocorrupt.html, section 2.6). Reopening lazily also
    /// keeps a parent that has nothing more to store from opening the
    /// database at the moment its child (a container's monitor) does.
    pub fn suspend(&mut self) -> Result<(), StoreError> {
        match self.connection.take() {
            Some(connection) => connection
                .close()
                .map_err(|(_, error)| StoreError::Database(error)),
            None => Ok(()),
        }
    }

    /// Gives back the heap SQLite holds for this connection (its page
    /// cache), if one is open: for a process that now sleeps a long time
    /// (a monitor) and opens nothing.
    pub fn release_memory(&self) {
        if let Some(connection) = self.connection.get() {
            if let Err(error) = connection.execute_batch("PRAGMA shrink_memory") {
                tracing::debug!(%error, "no memory released");
            }
        }
    }

    /// Copies what the WAL holds into the database and, when no other
    /// connection is using the WAL, cuts the WAL file to one frame. It
    /// waits for no one: a busy database is left for a later checkpoint.
    /// Monitors call it once nobody waits for them.
    ///
    /// Why truncate: a process that opens the database while no other
    /// connection has it open rebuilds SQLite's WAL index by reading every
    /// frame since the WAL last restarted, and that rebuild also forgets what
    /// was checkpointed, so the WAL of a machine running one container at a
    /// time never restarted and every command read all of it (hundreds of
    /// kilobytes, about a millisecond per command).
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        let connection = self.connection()?;
        connection.busy_handler(None)?;
        let result = connection
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| {
                row.get::<_, i64>(0)
            })
            .and_then(|busy| {
                // A WAL begun anew has its header synced by its first
                // writer (synchronous=NORMAL): write a one-page frame here
                // so that the next command's write does not pay the fsync.
                // The version written is the one read (a newer berth may
                // have migrated the database since this process opened it).
                if busy == 0 {
                    let version: i64 =
                        connection.pragma_query_value(None, "user_version", |row| row.get(0))?;
                    connection.pragma_update(None, "user_version", version)?;
                }
                Ok(())
            });
        connection.busy_handler(Some(db::wait_for_lock))?;
        match result {
            Err(error) if db::is_busy(&error) => Ok(()),
            other => Ok(other?),
        }
    }

    fn database_path(&self) -> PathBuf {
        self.root.join("metadata.db")
    }

    pub(crate) fn connection(&self) -> Result<&rusqlite::Connection, StoreError> {
        if let Some(connection) = self.connection.get() {
            return Ok(connection);
        }
        let connection = db::open(&self.database_path())?;
        Ok(self.connection.get_or_init(|| connection))
    }

    pub(crate) fn connection_mut(&mut self) -> Result<&mut rusqlite::Connection, StoreError> {
        self.connection()?;
        Ok(self
            .connection
            .get_mut()
            .expect("connection() just opened the connection"))
    }
}

/// A random name for a staging entry.
pub(crate) fn staging_name(prefix: &str) -> String {
    use rand::Rng;
    let value: u64 = rand::thread_rng().gen();
    format!("{prefix}-{}-{value:016x}", std::process::id())
}
