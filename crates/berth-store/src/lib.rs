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
mod usage;
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
pub use usage::{disk_usage, file_bytes, Measure, UsageCounter};
pub use volumes::VolumeRow;

/// An open berth root. Cheap to open; each `berth` process opens its own.
pub struct Store {
    root: PathBuf,
    /// Empty between `suspend` and the next use, which reopens it.
    connection: std::cell::OnceCell<rusqlite::Connection>,
    /// Bytes of disk [`Store::open`] freed removing what interrupted
    /// commands left, until [`Store::take_recovered`].
    recovered: std::cell::Cell<u64>,
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
            recovered: std::cell::Cell::new(0),
        };
        store.recover_interrupted();
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
            recovered: std::cell::Cell::new(0),
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
    /// writer has found present but not yet referenced. It marks the holder
    /// as writing (see [`Store::open`]).
    pub fn lock_shared(&self) -> Result<StoreLock, StoreError> {
        StoreLock::acquire(&self.content_lock_path(), false)?.with_marker(self.marker_path())
    }

    /// Exclusive lock held while berth's network rules are rendered from
    /// the store and applied, so the last writer applies the latest state.
    pub fn lock_network_rules(&self) -> Result<StoreLock, StoreError> {
        StoreLock::acquire(&self.root.join("locks/network.lock"), true)
    }

    /// Exclusive lock for removing content; it marks the holder as
    /// removing (see [`Store::open`]).
    pub fn lock_exclusive(&self) -> Result<StoreLock, StoreError> {
        StoreLock::acquire(&self.content_lock_path(), true)?.with_marker(self.marker_path())
    }

    /// [`Store::lock_exclusive`] when no other process holds the content
    /// lock now; `None` otherwise (for work that may wait for a later
    /// command, such as deleting an image its last container let go).
    pub fn try_lock_exclusive(&self) -> Result<Option<StoreLock>, StoreError> {
        StoreLock::try_exclusive(&self.content_lock_path())?
            .map(|lock| lock.with_marker(self.marker_path()))
            .transpose()
    }

    /// A fresh path under `tmp/` for a caller's own staging.
    pub fn staging_path(&self, prefix: &str) -> PathBuf {
        self.root.join("tmp").join(staging_name(prefix))
    }

    fn content_lock_path(&self) -> PathBuf {
        self.root.join("locks/content.lock")
    }

    fn marker_path(&self) -> PathBuf {
        self.root.join("tmp").join(staging_name(MARKER_PREFIX))
    }

    /// Removes every layer and blob no image references, and stale staging,
    /// when no other process is adding content. Returns the bytes of disk
    /// freed, or `None` when another process holds the content lock.
    pub fn try_collect_garbage(&self) -> Result<Option<u64>, StoreError> {
        let Some(lock) = StoreLock::try_exclusive(&self.content_lock_path())? else {
            return Ok(None);
        };
        self.collect_garbage(&lock).map(Some)
    }

    /// Removes unreferenced layers and blobs and everything under `tmp/`,
    /// returning the bytes of disk freed (as `du` counts them). The
    /// exclusive lock proves no writer holds content it has not recorded
    /// yet, nor staging it still writes.
    pub fn collect_garbage(&self, _exclusive: &StoreLock) -> Result<u64, StoreError> {
        let (layers, blobs) = self.referenced_content()?;
        let mut freed = 0;
        let layer_store = self.layers();
        for chain_id in layer_store.list()? {
            if !layers.contains(&chain_id) {
                tracing::debug!(%chain_id, "removing unreferenced layer");
                freed += layer_store.delete(&chain_id)?;
            }
        }
        let blob_store = self.blobs();
        for digest in blob_store.list()? {
            if !blobs.contains(&digest) {
                tracing::debug!(%digest, "removing unreferenced blob");
                freed += blob_store.delete(&digest)?;
            }
        }
        freed += self.remove_staging(|_| true);
        Ok(freed)
    }

    /// What a killed `load`, `pull`, `import`, `commit`, `rmi` or `prune`
    /// left, removed by the next berth process that opens the store.
    ///
    /// An empty `tmp/` (one `getdents`, the common case) means nothing was
    /// interrupted: every writer and remover marks `tmp/` for as long as it
    /// holds the content lock, before it changes anything. Otherwise, when
    /// the exclusive lock is free, whoever left entries is dead, and the
    /// whole garbage collection runs: staging, and the layers and blobs no
    /// image references (committed by a load or pull killed before it
    /// recorded its image, or left by a removal killed half way). When a
    /// live process holds the lock, only staging of processes that no
    /// longer exist goes (names carry the pid); the rest waits for a
    /// command that finds the lock free.
    fn recover_interrupted(&self) {
        let staging = self.root.join("tmp");
        let Ok(mut entries) = fs_err::read_dir(&staging) else {
            return;
        };
        if entries.next().is_none() {
            return;
        }
        match StoreLock::try_exclusive(&self.content_lock_path()) {
            Ok(Some(lock)) => match self.collect_garbage(&lock) {
                Ok(freed) => {
                    self.recovered.set(self.recovered.get() + freed);
                    tracing::debug!(freed, "removed what an interrupted command left")
                }
                Err(error) => {
                    tracing::warn!(%error, "failed to remove what an interrupted command left")
                }
            },
            Ok(None) => {
                // A dead process's mark stays: its committed content is
                // only found by a full collection, which needs the lock.
                let freed = self.remove_staging(|name| {
                    !name.starts_with(MARKER_PREFIX) && staging_owner_is_dead(name)
                });
                self.recovered.set(self.recovered.get() + freed);
            }
            Err(error) => tracing::warn!(%error, "failed to check the content lock"),
        }
    }

    /// The bytes of disk opening the store freed (what interrupted
    /// commands had left), counted once: `image prune` reports them as
    /// reclaimed, since they were there when it was asked to run.
    pub fn take_recovered(&self) -> u64 {
        self.recovered.replace(0)
    }

    /// SQLite's `PRAGMA integrity_check`: "ok", or what is wrong.
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        let connection = self.connection()?;
        let mut statement = connection.prepare("PRAGMA integrity_check")?;
        let rows = statement.query_map([], |row| row.get::<_, String>(0))?;
        let lines: Result<Vec<String>, _> = rows.collect();
        Ok(lines?.join("\n"))
    }

    /// Removes the entries of `tmp/` whose names `select` picks; returns
    /// the bytes freed.
    fn remove_staging(&self, select: impl Fn(&str) -> bool) -> u64 {
        let staging = self.root.join("tmp");
        let Ok(entries) = fs_err::read_dir(&staging) else {
            return 0;
        };
        let mut freed = 0;
        for entry in entries.flatten() {
            if !entry.file_name().to_str().is_some_and(&select) {
                continue;
            }
            let path = entry.path();
            match usage::remove_measured(&path) {
                Ok(bytes) => {
                    freed += bytes;
                    tracing::debug!(path = %path.display(), "removed stale staging entry")
                }
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "failed to remove stale staging entry")
                }
            }
        }
        freed
    }

    /// Rewrites the database into fewer pages when at least half of its
    /// pages are free (after `image prune` or `rm` of many rows, say) and
    /// it is big enough for that to matter. Reading the two counts costs
    /// two reads of the header page; the `VACUUM` itself copies the live
    /// pages (a few MB at most for berth's rows) and waits for nobody: a
    /// busy database is left for a later call. Returns whether it ran.
    /// Called off the hot paths: after removals, and by monitors when they
    /// checkpoint.
    pub fn vacuum_if_mostly_free(&self) -> Result<bool, StoreError> {
        let vacuumed = self.vacuum_unless_busy()?;
        if vacuumed {
            // The rewritten pages are in the WAL; the file shrinks when
            // they are copied back.
            self.checkpoint()?;
        }
        Ok(vacuumed)
    }

    fn vacuum_unless_busy(&self) -> Result<bool, StoreError> {
        let connection = self.connection()?;
        let pages: i64 = connection.pragma_query_value(None, "page_count", |row| row.get(0))?;
        let free: i64 = connection.pragma_query_value(None, "freelist_count", |row| row.get(0))?;
        if pages < VACUUM_MIN_PAGES || free * 2 < pages {
            return Ok(false);
        }
        connection.busy_handler(None)?;
        let result = connection.execute_batch("VACUUM");
        connection.busy_handler(Some(db::wait_for_lock))?;
        match result {
            Ok(()) => {
                tracing::debug!(pages, free, "vacuumed the metadata database");
                Ok(true)
            }
            Err(error) if db::is_busy(&error) => Ok(false),
            Err(error) => Err(error.into()),
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
        // The checkpoint below then also shrinks the file.
        if let Err(error) = self.vacuum_unless_busy() {
            tracing::debug!(%error, "no vacuum");
        }
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

/// Names of the content locks' marks under `tmp/` begin so.
const MARKER_PREFIX: &str = "intent";

/// Below this many pages (1 MB at SQLite's 4 KB pages) a vacuum is not
/// worth its copy.
const VACUUM_MIN_PAGES: i64 = 256;

/// Whether the process named in a staging entry (`PREFIX-PID-RANDOM`, see
/// [`staging_name`]) no longer exists. A name without a pid, or a pid that
/// exists (perhaps reused), counts as alive: that only delays its removal
/// to the next full collection.
fn staging_owner_is_dead(name: &str) -> bool {
    let mut parts = name.rsplitn(3, '-');
    let (Some(_random), Some(pid)) = (parts.next(), parts.next()) else {
        return false;
    };
    let Ok(pid) = pid.parse::<i32>() else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
        Err(nix::errno::Errno::ESRCH)
    )
}

/// A random name for a staging entry: `PREFIX-PID-RANDOM`, so that the
/// entries of a dead process can be told from a live one's.
pub(crate) fn staging_name(prefix: &str) -> String {
    use rand::Rng;
    let value: u64 = rand::thread_rng().gen();
    format!("{prefix}-{}-{value:016x}", std::process::id())
}
