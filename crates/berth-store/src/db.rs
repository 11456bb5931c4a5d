//! The SQLite connection and schema migrations.
//!
//! WAL mode lets readers run beside one writer; every write happens in a
//! `BEGIN IMMEDIATE` transaction and waits (busy timeout) for its turn, which
//! is what keeps many concurrent `berth` processes consistent.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};

use crate::StoreError;

/// Each entry moves the schema from version `index` to `index + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: images and layers.
    r#"
    CREATE TABLE layers (
        chain_id   TEXT PRIMARY KEY,
        diff_id    TEXT NOT NULL,
        parent     TEXT,
        size       INTEGER NOT NULL
    );
    CREATE TABLE images (
        id              TEXT PRIMARY KEY,
        manifest_digest TEXT,
        created         TEXT,
        size            INTEGER NOT NULL,
        added_at        INTEGER NOT NULL
    );
    CREATE TABLE image_layers (
        image_id TEXT NOT NULL REFERENCES images(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        chain_id TEXT NOT NULL REFERENCES layers(chain_id),
        PRIMARY KEY (image_id, position)
    );
    CREATE INDEX image_layers_by_chain ON image_layers(chain_id);
    CREATE TABLE image_blobs (
        image_id TEXT NOT NULL REFERENCES images(id) ON DELETE CASCADE,
        digest   TEXT NOT NULL,
        PRIMARY KEY (image_id, digest)
    );
    CREATE INDEX image_blobs_by_digest ON image_blobs(digest);
    CREATE TABLE tags (
        reference TEXT PRIMARY KEY,
        image_id  TEXT NOT NULL REFERENCES images(id),
        tagged_at INTEGER NOT NULL
    );
    CREATE INDEX tags_by_image ON tags(image_id);
    CREATE TABLE repo_digests (
        reference TEXT PRIMARY KEY,
        image_id  TEXT NOT NULL REFERENCES images(id) ON DELETE CASCADE
    );
    "#,
    // 2: containers. The engine owns the JSON shapes of `record` (what was
    // asked for: config, host config, resolved image) and `state` (what is
    // happening: status, pids, exit code).
    r#"
    CREATE TABLE containers (
        id       TEXT PRIMARY KEY,
        name     TEXT NOT NULL UNIQUE,
        image_id TEXT NOT NULL REFERENCES images(id),
        created  TEXT NOT NULL,
        record   TEXT NOT NULL,
        state    TEXT NOT NULL
    );
    CREATE INDEX containers_by_image ON containers(image_id);
    "#,
    // 3: named and anonymous volumes (local driver).
    r#"
    CREATE TABLE volumes (
        name      TEXT PRIMARY KEY,
        driver    TEXT NOT NULL,
        created   TEXT NOT NULL,
        labels    TEXT NOT NULL,
        options   TEXT NOT NULL,
        anonymous INTEGER NOT NULL
    );
    "#,
    // 4: networks and their live endpoints. An endpoint is a running
    // container's place on a network: its address is held only while the
    // container runs, and the unique index is what keeps two containers from
    // ever getting the same address.
    r#"
    CREATE TABLE networks (
        id      TEXT PRIMARY KEY,
        name    TEXT NOT NULL UNIQUE,
        created TEXT NOT NULL,
        record  TEXT NOT NULL
    );
    CREATE TABLE endpoints (
        network_id   TEXT NOT NULL REFERENCES networks(id),
        container_id TEXT NOT NULL,
        address      TEXT NOT NULL,
        record       TEXT NOT NULL,
        PRIMARY KEY (network_id, container_id)
    );
    CREATE UNIQUE INDEX endpoints_by_address ON endpoints(network_id, address)
        WHERE address != '';
    CREATE INDEX endpoints_by_container ON endpoints(container_id);
    "#,
    // 5: an image `rmi --force` deleted while stopped containers were made
    // from it: gone for every name and lookup, its row (and so its layers)
    // kept until the last of those containers goes (moby keeps the layers
    // the containers' own layers hold).
    r#"
    ALTER TABLE images ADD COLUMN deleted INTEGER NOT NULL DEFAULT 0;
    "#,
];

pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The WAL file is cut back to this size when it restarts after a checkpoint.
const WAL_SIZE_LIMIT: i64 = 1 << 20;

pub(crate) fn open(path: &Path) -> Result<Connection, StoreError> {
    // Switching a new database to WAL takes an exclusive lock for which
    // SQLite does not call the busy handler, so when many berth processes
    // create the same root at once some see SQLITE_BUSY here; they retry.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut pause = Duration::from_millis(2);
    loop {
        match open_once(path) {
            Err(StoreError::Open { source, .. } | StoreError::Database(source))
                if is_busy(&source) && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(100));
            }
            result => return result,
        }
    }
}

/// SQLite's own busy handler sleeps 1, 2, 5, 10, 15, 20, 25… ms between
/// tries, so a command that meets a lock held for one millisecond (a
/// container's monitor recording its start, say) waited up to 33 ms.
/// berth's transactions are short: try every 100 µs for the first 10 ms,
/// then every millisecond, for about a minute in all.
pub(crate) fn wait_for_lock(attempt: i32) -> bool {
    const FINE_TRIES: i32 = 100;
    const COARSE_TRIES: i32 = 60_000;
    let pause = if attempt < FINE_TRIES {
        Duration::from_micros(100)
    } else {
        Duration::from_millis(1)
    };
    if attempt >= FINE_TRIES + COARSE_TRIES {
        return false;
    }
    std::thread::sleep(pause);
    true
}

pub(crate) fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error,
        rusqlite::Error::SqliteFailure(failure, _)
            if matches!(failure.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

fn open_once(path: &Path) -> Result<Connection, StoreError> {
    let open_error = |source| StoreError::Open {
        path: path.to_owned(),
        source,
    };
    let mut connection = Connection::open(path).map_err(open_error)?;
    // Many processes may open at once: wait for locks instead of failing.
    connection
        .busy_handler(Some(wait_for_lock))
        .map_err(open_error)?;
    // Only a new database needs switching (which needs the exclusive lock).
    let mode: String = connection
        .pragma_query_value(None, "journal_mode", |row| row.get(0))
        .map_err(open_error)?;
    if !mode.eq_ignore_ascii_case("wal") {
        connection
            .pragma_update(None, "journal_mode", "WAL")
            .map_err(open_error)?;
    }
    connection
        .pragma_update(None, "synchronous", "NORMAL")
        .map_err(open_error)?;
    connection
        .pragma_update(None, "foreign_keys", "ON")
        .map_err(open_error)?;
    // Every berth command opens and closes the database; SQLite's default is
    // to checkpoint (with fsyncs) and delete the WAL when the last
    // connection closes, which made each short command pay for it. The WAL
    // stays. But a command that opens the database with no other connection
    // open rebuilds SQLite's WAL index by reading every frame written since
    // the WAL last restarted (up to ~4 MB at SQLite's automatic 1000 pages:
    // milliseconds of each `run`), so container monitors checkpoint and
    // truncate the WAL after they have reported their container's exit
    // (`Store::checkpoint`), off every command's path; SQLite's own
    // checkpoint stays as a backstop.
    connection
        .set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )
        .map_err(open_error)?;
    connection
        .pragma_update(None, "journal_size_limit", WAL_SIZE_LIMIT)
        .map_err(open_error)?;
    migrate(&mut connection)?;
    Ok(connection)
}

fn migrate(connection: &mut Connection) -> Result<(), StoreError> {
    let current: i64 = connection.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if current == SCHEMA_VERSION {
        return Ok(());
    }
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Read again inside the write lock: another process may have migrated.
    let current: i64 = transaction.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if current > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            found: current,
            supported: SCHEMA_VERSION,
        });
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        transaction.execute_batch(sql)?;
        tracing::debug!(version = index + 1, "applied metadata migration");
    }
    transaction.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    transaction.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrates_a_new_database_once() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("metadata.db");
        let connection = open(&path).unwrap();
        let version: i64 = connection
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        let mode: String = connection
            .pragma_query_value(None, "journal_mode", |row| row.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        drop(connection);
        // Opening again applies nothing and keeps data.
        open(&path).unwrap();
    }

    #[test]
    fn refuses_a_newer_schema() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("metadata.db");
        {
            let connection = Connection::open(&path).unwrap();
            connection
                .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
                .unwrap();
        }
        assert!(matches!(open(&path), Err(StoreError::SchemaTooNew { .. })));
    }
}
