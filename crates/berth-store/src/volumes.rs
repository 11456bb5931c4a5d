//! Volume rows (the data lives under `<root>/volumes/<name>/_data`).

use rusqlite::{params, OptionalExtension};

use crate::{Store, StoreError};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeRow {
    pub name: String,
    pub driver: String,
    pub created: String,
    /// JSON object.
    pub labels: String,
    /// JSON object.
    pub options: String,
    pub anonymous: bool,
}

fn row(row: &rusqlite::Row<'_>) -> rusqlite::Result<VolumeRow> {
    Ok(VolumeRow {
        name: row.get(0)?,
        driver: row.get(1)?,
        created: row.get(2)?,
        labels: row.get(3)?,
        options: row.get(4)?,
        anonymous: row.get::<_, i64>(5)? != 0,
    })
}

impl Store {
    /// Inserts the volume unless it exists; returns the stored row.
    pub fn ensure_volume(&self, volume: &VolumeRow) -> Result<VolumeRow, StoreError> {
        self.connection()?.execute(
            "INSERT OR IGNORE INTO volumes (name, driver, created, labels, options, anonymous)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                volume.name,
                volume.driver,
                volume.created,
                volume.labels,
                volume.options,
                volume.anonymous as i64
            ],
        )?;
        self.volume(&volume.name)?
            .ok_or_else(|| StoreError::Corrupt(format!("volume {} vanished", volume.name)))
    }

    pub fn volume(&self, name: &str) -> Result<Option<VolumeRow>, StoreError> {
        Ok(self
            .connection()?
            .query_row(
                "SELECT name, driver, created, labels, options, anonymous FROM volumes WHERE name = ?1",
                [name],
                row,
            )
            .optional()?)
    }

    pub fn volumes(&self) -> Result<Vec<VolumeRow>, StoreError> {
        let mut statement = self.connection()?.prepare_cached(
            "SELECT name, driver, created, labels, options, anonymous FROM volumes ORDER BY name",
        )?;
        let rows = statement.query_map([], row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn delete_volume(&self, name: &str) -> Result<bool, StoreError> {
        Ok(self
            .connection()?
            .execute("DELETE FROM volumes WHERE name = ?1", [name])?
            == 1)
    }
}
