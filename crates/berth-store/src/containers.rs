//! Container rows. The store keeps the engine's JSON as text and enforces
//! what must hold across processes: unique ids and names, and no container
//! without its image.

use rusqlite::{params, OptionalExtension, TransactionBehavior};

use crate::{Store, StoreError};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerRow {
    pub id: String,
    pub name: String,
    pub image_id: String,
    pub created: String,
    pub record: String,
    pub state: String,
}

/// Why a container row could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ContainerStoreError {
    #[error("name {0:?} is already in use")]
    NameInUse(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

const COLUMNS: &str = "id, name, image_id, created, record, state";

fn row(row: &rusqlite::Row<'_>) -> rusqlite::Result<ContainerRow> {
    Ok(ContainerRow {
        id: row.get(0)?,
        name: row.get(1)?,
        image_id: row.get(2)?,
        created: row.get(3)?,
        record: row.get(4)?,
        state: row.get(5)?,
    })
}

pub(crate) fn is_unique_violation(error: &rusqlite::Error) -> bool {
    matches!(
        error,
        rusqlite::Error::SqliteFailure(failure, _)
            if failure.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                || failure.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
    )
}

impl Store {
    pub fn insert_container(
        &mut self,
        container: &ContainerRow,
    ) -> Result<(), ContainerStoreError> {
        let result = self.connection()?.execute(
            &format!("INSERT INTO containers ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"),
            params![
                container.id,
                container.name,
                container.image_id,
                container.created,
                container.record,
                container.state
            ],
        );
        match result {
            Ok(_) => Ok(()),
            Err(error) if is_unique_violation(&error) => {
                Err(ContainerStoreError::NameInUse(container.name.clone()))
            }
            Err(error) => Err(StoreError::from(error).into()),
        }
    }

    pub fn container(&self, id: &str) -> Result<Option<ContainerRow>, StoreError> {
        Ok(self
            .connection()?
            .query_row(
                &format!("SELECT {COLUMNS} FROM containers WHERE id = ?1"),
                [id],
                row,
            )
            .optional()?)
    }

    pub fn container_by_name(&self, name: &str) -> Result<Option<ContainerRow>, StoreError> {
        Ok(self
            .connection()?
            .query_row(
                &format!("SELECT {COLUMNS} FROM containers WHERE name = ?1"),
                [name],
                row,
            )
            .optional()?)
    }

    pub fn container_ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let pattern = format!("{}%", prefix.replace(['%', '_'], ""));
        let mut statement = self
            .connection()?
            .prepare_cached("SELECT id FROM containers WHERE id LIKE ?1 ORDER BY id")?;
        let rows = statement.query_map([pattern], |row| row.get::<_, String>(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Every container, newest first.
    pub fn containers(&self) -> Result<Vec<ContainerRow>, StoreError> {
        let mut statement = self.connection()?.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM containers ORDER BY created DESC, id"
        ))?;
        let rows = statement.query_map([], row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Replaces the state JSON; returns false when the container is gone.
    pub fn set_container_state(&self, id: &str, state: &str) -> Result<bool, StoreError> {
        let changed = self.connection()?.execute(
            "UPDATE containers SET state = ?2 WHERE id = ?1",
            params![id, state],
        )?;
        Ok(changed == 1)
    }

    /// The container's name and state JSON, without its record: what a
    /// monitor's health probe reads before each run.
    pub fn container_name_and_state(
        &self,
        id: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        let mut statement = self
            .connection()?
            .prepare_cached("SELECT name, state FROM containers WHERE id = ?1")?;
        Ok(statement
            .query_row([id], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?)
    }

    /// Sets the state's `Health` member to `health` (JSON) in one statement,
    /// and only while the state says `running`: a probe's result never
    /// overwrites what another command wrote meanwhile (`pause`, the exit),
    /// and a result that arrives after a pause is dropped, as Docker drops
    /// it. Returns false when nothing was written.
    pub fn set_running_container_health(&self, id: &str, health: &str) -> Result<bool, StoreError> {
        let mut statement = self.connection()?.prepare_cached(
            "UPDATE containers SET state = json_set(state, '$.Health', json(?2)) \
             WHERE id = ?1 AND json_extract(state, '$.Status') = 'running'",
        )?;
        Ok(statement.execute(params![id, health])? == 1)
    }

    /// Replaces the record JSON (e.g. `update`); returns false when gone.
    pub fn set_container_record(&self, id: &str, record: &str) -> Result<bool, StoreError> {
        let changed = self.connection()?.execute(
            "UPDATE containers SET record = ?2 WHERE id = ?1",
            params![id, record],
        )?;
        Ok(changed == 1)
    }

    pub fn rename_container(&mut self, id: &str, name: &str) -> Result<(), ContainerStoreError> {
        let transaction = self
            .connection_mut()?
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(StoreError::from)?;
        let result = transaction.execute(
            "UPDATE containers SET name = ?2 WHERE id = ?1",
            params![id, name],
        );
        match result {
            Ok(_) => {
                transaction.commit().map_err(StoreError::from)?;
                Ok(())
            }
            Err(error) if is_unique_violation(&error) => {
                Err(ContainerStoreError::NameInUse(name.to_owned()))
            }
            Err(error) => Err(StoreError::from(error).into()),
        }
    }

    /// Deletes the row; returns false when it was already gone (another
    /// process removed it first).
    pub fn delete_container(&self, id: &str) -> Result<bool, StoreError> {
        let changed = self
            .connection()?
            .execute("DELETE FROM containers WHERE id = ?1", [id])?;
        Ok(changed == 1)
    }

    /// Containers created from `image_id` (so `rmi` can refuse).
    pub fn containers_using_image(&self, image_id: &str) -> Result<Vec<ContainerRow>, StoreError> {
        let mut statement = self.connection()?.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM containers WHERE image_id = ?1"
        ))?;
        let rows = statement.query_map([image_id], row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn container_count(&self) -> Result<u64, StoreError> {
        let count: i64 =
            self.connection()?
                .query_row("SELECT COUNT(*) FROM containers", [], |row| row.get(0))?;
        Ok(count as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NewImage, Store};
    use berth_types::Digest;

    fn store_with_image() -> (tempfile::TempDir, Store, String) {
        let root = tempfile::tempdir().unwrap();
        let mut store = Store::open(root.path()).unwrap();
        let id = Digest::of_bytes(b"image");
        store
            .add_image(&NewImage {
                id: id.clone(),
                manifest_digest: None,
                created: None,
                layers: vec![],
                blobs: vec![],
                tags: vec![],
                repo_digests: vec![],
            })
            .unwrap();
        (root, store, id.to_string())
    }

    fn container(id: &str, name: &str, image: &str) -> ContainerRow {
        ContainerRow {
            id: id.into(),
            name: name.into(),
            image_id: image.into(),
            created: "2024-01-01T00:00:00Z".into(),
            record: "{}".into(),
            state: "{}".into(),
        }
    }

    #[test]
    fn names_are_unique_and_rows_round_trip() {
        let (_root, mut store, image) = store_with_image();
        store
            .insert_container(&container("aaa1", "one", &image))
            .unwrap();
        assert!(matches!(
            store.insert_container(&container("bbb2", "one", &image)),
            Err(ContainerStoreError::NameInUse(_))
        ));
        store
            .insert_container(&container("bbb2", "two", &image))
            .unwrap();
        assert!(matches!(
            store.rename_container("bbb2", "one"),
            Err(ContainerStoreError::NameInUse(_))
        ));
        store.rename_container("bbb2", "three").unwrap();
        assert_eq!(
            store.container_by_name("three").unwrap().unwrap().id,
            "bbb2"
        );
        assert_eq!(store.container_ids_with_prefix("aa").unwrap(), ["aaa1"]);
        assert!(store
            .set_container_state("aaa1", "{\"Status\":\"running\"}")
            .unwrap());
        assert_eq!(
            store.container("aaa1").unwrap().unwrap().state,
            "{\"Status\":\"running\"}"
        );
        assert_eq!(store.containers_using_image(&image).unwrap().len(), 2);
        assert!(store.delete_container("aaa1").unwrap());
        assert!(!store.delete_container("aaa1").unwrap());
        assert_eq!(store.container_count().unwrap(), 1);
    }

    /// A probe's result lands in a running container's state only, beside
    /// what other commands wrote there.
    #[test]
    fn health_is_written_into_a_running_state_only() {
        let (_root, mut store, image) = store_with_image();
        store
            .insert_container(&container("aaa1", "one", &image))
            .unwrap();
        store
            .set_container_state("aaa1", r#"{"Status":"running","Pid":7}"#)
            .unwrap();
        assert!(store
            .set_running_container_health("aaa1", r#"{"Status":"healthy","FailingStreak":0}"#)
            .unwrap());
        let (name, state) = store.container_name_and_state("aaa1").unwrap().unwrap();
        assert_eq!(name, "one");
        assert_eq!(
            state,
            r#"{"Status":"running","Pid":7,"Health":{"Status":"healthy","FailingStreak":0}}"#
        );
        store
            .set_container_state("aaa1", r#"{"Status":"paused"}"#)
            .unwrap();
        assert!(!store
            .set_running_container_health("aaa1", r#"{"Status":"healthy"}"#)
            .unwrap());
        assert_eq!(
            store.container("aaa1").unwrap().unwrap().state,
            r#"{"Status":"paused"}"#
        );
        assert!(!store.set_running_container_health("gone", "{}").unwrap());
        assert!(store.container_name_and_state("gone").unwrap().is_none());
    }

    fn wal_size(root: &std::path::Path) -> u64 {
        fs_err::metadata(root.join("metadata.db-wal"))
            .map(|metadata| metadata.len())
            .unwrap_or(0)
    }

    /// A checkpoint with no other connection empties the WAL, so the next
    /// first connection has nothing to index; with a reader holding an old
    /// snapshot it returns at once and the data stays readable.
    #[test]
    fn checkpoint_truncates_the_wal_unless_someone_reads_it() {
        let (root, mut store, image) = store_with_image();
        for index in 0..20 {
            store
                .insert_container(&container(
                    &format!("c{index}"),
                    &format!("n{index}"),
                    &image,
                ))
                .unwrap();
        }
        assert!(wal_size(root.path()) > 8192);
        store.checkpoint().unwrap();
        // The header and one page: the WAL begun anew, its header synced.
        assert_eq!(wal_size(root.path()), 32 + 24 + 4096);

        store
            .insert_container(&container("late", "late", &image))
            .unwrap();
        let reader = rusqlite::Connection::open(root.path().join("metadata.db")).unwrap();
        reader.execute_batch("BEGIN").unwrap();
        let count: i64 = reader
            .query_row("SELECT count(*) FROM containers", [], |row| row.get(0))
            .unwrap();
        assert_eq!(count, 21);
        store.delete_container("late").unwrap();
        let started = std::time::Instant::now();
        store.checkpoint().unwrap();
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "the checkpoint waited for the reader"
        );
        assert!(wal_size(root.path()) > 0, "the reader's WAL was cut");
        reader.execute_batch("COMMIT").unwrap();
        drop(reader);
        drop(store);
        let store = Store::open(root.path()).unwrap();
        assert_eq!(store.container_count().unwrap(), 20);
        assert!(store.container("late").unwrap().is_none());
    }

    /// A deferred store touches nothing until its first query, then reads
    /// what its parent wrote.
    #[test]
    fn a_deferred_store_opens_at_its_first_query() {
        let (root, mut store, image) = store_with_image();
        store
            .insert_container(&container("c1", "n1", &image))
            .unwrap();
        store.suspend().unwrap();
        let missing = root.path().join("not-yet");
        let nowhere = Store::open_deferred(&missing);
        assert!(!missing.exists());
        assert!(nowhere.container("c1").is_err());
        let deferred = Store::open_deferred(root.path());
        assert_eq!(deferred.container("c1").unwrap().unwrap().name, "n1");
    }

    #[test]
    fn a_container_needs_its_image() {
        let (_root, mut store, _image) = store_with_image();
        assert!(store
            .insert_container(&container("c", "n", "sha256:missing"))
            .is_err());
    }
}
