//! Image, layer and tag metadata.

use std::collections::BTreeSet;
use std::time::{SystemTime, UNIX_EPOCH};

use berth_types::Digest;
use rusqlite::{params, OptionalExtension, TransactionBehavior};

use crate::{Store, StoreError};

/// One layer of an image, bottom first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerRecord {
    pub chain_id: Digest,
    pub diff_id: Digest,
    pub parent: Option<Digest>,
    /// Bytes of file content once unpacked.
    pub size: u64,
}

/// What `add_image` records.
#[derive(Clone, Debug)]
pub struct NewImage {
    /// The config digest.
    pub id: Digest,
    pub manifest_digest: Option<Digest>,
    /// The config's `created` timestamp (RFC 3339), as the image says.
    pub created: Option<String>,
    pub layers: Vec<LayerRecord>,
    /// Every blob the image needs kept: config, manifest, layer blobs.
    pub blobs: Vec<Digest>,
    /// Full references (`docker.io/library/busybox:latest`) to point here.
    pub tags: Vec<String>,
    /// Full `name@sha256:…` references (set by pulls).
    pub repo_digests: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageRecord {
    pub id: Digest,
    pub manifest_digest: Option<Digest>,
    pub created: Option<String>,
    pub size: u64,
    /// Unix seconds when this store first recorded the image.
    pub added_at: i64,
    /// Chain ids, bottom first.
    pub layers: Vec<Digest>,
    pub tags: Vec<String>,
    pub repo_digests: Vec<String>,
}

/// What deleting an image freed: content no other image uses, to be removed
/// from disk by the caller (under the exclusive content lock).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RemovedImage {
    pub layers: Vec<Digest>,
    pub blobs: Vec<Digest>,
}

/// A tag that `add_image` or `set_tag` moved away from another image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MovedTag {
    pub reference: String,
    pub previous: Digest,
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs() as i64)
        .unwrap_or(0)
}

fn digest_column(text: String) -> Result<Digest, StoreError> {
    Digest::parse(&text).map_err(|_| StoreError::Corrupt(format!("bad digest {text:?}")))
}

impl Store {
    /// Records an image, its layers, blobs and tags in one transaction.
    /// Tags already pointing at another image move here (as `docker load`
    /// does); the moved tags are returned.
    pub fn add_image(&mut self, image: &NewImage) -> Result<Vec<MovedTag>, StoreError> {
        let transaction = self
            .connection_mut()?
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let size: u64 = image.layers.iter().map(|layer| layer.size).sum();
        transaction.execute(
            "INSERT INTO images (id, manifest_digest, created, size, added_at)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT(id) DO UPDATE SET
                manifest_digest = COALESCE(excluded.manifest_digest, manifest_digest),
                deleted = 0",
            params![
                image.id.to_string(),
                image.manifest_digest.as_ref().map(ToString::to_string),
                image.created,
                size as i64,
                now()
            ],
        )?;
        for layer in &image.layers {
            transaction.execute(
                "INSERT OR IGNORE INTO layers (chain_id, diff_id, parent, size)
                 VALUES (?1, ?2, ?3, ?4)",
                params![
                    layer.chain_id.to_string(),
                    layer.diff_id.to_string(),
                    layer.parent.as_ref().map(ToString::to_string),
                    layer.size as i64
                ],
            )?;
        }
        transaction.execute(
            "DELETE FROM image_layers WHERE image_id = ?1",
            [image.id.to_string()],
        )?;
        for (position, layer) in image.layers.iter().enumerate() {
            transaction.execute(
                "INSERT INTO image_layers (image_id, position, chain_id) VALUES (?1, ?2, ?3)",
                params![
                    image.id.to_string(),
                    position as i64,
                    layer.chain_id.to_string()
                ],
            )?;
        }
        for blob in &image.blobs {
            transaction.execute(
                "INSERT OR IGNORE INTO image_blobs (image_id, digest) VALUES (?1, ?2)",
                params![image.id.to_string(), blob.to_string()],
            )?;
        }
        let mut moved = Vec::new();
        for reference in &image.tags {
            if let Some(previous) = set_tag_in(&transaction, reference, &image.id)? {
                moved.push(MovedTag {
                    reference: reference.clone(),
                    previous,
                });
            }
        }
        for reference in &image.repo_digests {
            transaction.execute(
                "INSERT INTO repo_digests (reference, image_id) VALUES (?1, ?2)
                 ON CONFLICT(reference) DO UPDATE SET image_id = excluded.image_id",
                params![reference, image.id.to_string()],
            )?;
        }
        transaction.commit()?;
        Ok(moved)
    }

    /// Points `reference` at `id`; returns the image it pointed at before,
    /// when that was another one.
    pub fn set_tag(&mut self, reference: &str, id: &Digest) -> Result<Option<Digest>, StoreError> {
        let transaction = self
            .connection_mut()?
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let previous = set_tag_in(&transaction, reference, id)?;
        transaction.commit()?;
        Ok(previous)
    }

    /// Removes a tag; returns the image it pointed at.
    pub fn remove_tag(&mut self, reference: &str) -> Result<Option<Digest>, StoreError> {
        let transaction = self
            .connection_mut()?
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let id = tag_target(&transaction, reference)?;
        transaction.execute("DELETE FROM tags WHERE reference = ?1", [reference])?;
        transaction.commit()?;
        Ok(id)
    }

    /// Removes a `name@digest` reference of an image.
    pub fn remove_repo_digest(&mut self, reference: &str) -> Result<(), StoreError> {
        self.connection()?
            .execute("DELETE FROM repo_digests WHERE reference = ?1", [reference])?;
        Ok(())
    }

    pub fn image_by_tag(&self, reference: &str) -> Result<Option<Digest>, StoreError> {
        tag_target(self.connection()?, reference)
    }

    pub fn image_by_repo_digest(&self, reference: &str) -> Result<Option<Digest>, StoreError> {
        self.connection()?
            .query_row(
                "SELECT image_id FROM repo_digests WHERE reference = ?1",
                [reference],
                |row| row.get::<_, String>(0),
            )
            .optional()?
            .map(digest_column)
            .transpose()
    }

    /// Image ids whose hex starts with `prefix`.
    pub fn image_ids_with_prefix(&self, prefix: &str) -> Result<Vec<Digest>, StoreError> {
        let pattern = format!("sha256:{}%", prefix.replace(['%', '_'], ""));
        let mut statement = self
            .connection()?
            .prepare_cached("SELECT id FROM images WHERE id LIKE ?1 AND deleted = 0 ORDER BY id")?;
        let rows = statement.query_map([pattern], |row| row.get::<_, String>(0))?;
        rows.map(|row| digest_column(row?)).collect()
    }

    pub fn image(&self, id: &Digest) -> Result<Option<ImageRecord>, StoreError> {
        self.image_row(id, "SELECT id, manifest_digest, created, size, added_at FROM images WHERE id = ?1 AND deleted = 0")
    }

    /// The image containers were made from, also when `rmi --force` has
    /// deleted it since ([`Store::hide_image`]): their layers.
    pub fn image_of_containers(&self, id: &Digest) -> Result<Option<ImageRecord>, StoreError> {
        self.image_row(
            id,
            "SELECT id, manifest_digest, created, size, added_at FROM images WHERE id = ?1",
        )
    }

    fn image_row(&self, id: &Digest, sql: &str) -> Result<Option<ImageRecord>, StoreError> {
        let row = self
            .connection()?
            .query_row(sql, [id.to_string()], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, Option<String>>(1)?,
                    row.get::<_, Option<String>>(2)?,
                    row.get::<_, i64>(3)?,
                    row.get::<_, i64>(4)?,
                ))
            })
            .optional()?;
        row.map(|row| self.complete_record(row)).transpose()
    }

    /// Every image, newest first.
    pub fn images(&self) -> Result<Vec<ImageRecord>, StoreError> {
        let mut statement = self.connection()?.prepare_cached(
            "SELECT id, manifest_digest, created, size, added_at FROM images WHERE deleted = 0
             ORDER BY COALESCE(created, '') DESC, added_at DESC, id",
        )?;
        let rows = statement
            .query_map([], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, Option<String>>(1)?,
                    row.get::<_, Option<String>>(2)?,
                    row.get::<_, i64>(3)?,
                    row.get::<_, i64>(4)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        rows.into_iter()
            .map(|row| self.complete_record(row))
            .collect()
    }

    fn complete_record(
        &self,
        (id, manifest_digest, created, size, added_at): (
            String,
            Option<String>,
            Option<String>,
            i64,
            i64,
        ),
    ) -> Result<ImageRecord, StoreError> {
        let connection = self.connection()?;
        let strings = |sql: &str| -> Result<Vec<String>, StoreError> {
            let mut statement = connection.prepare_cached(sql)?;
            let rows = statement.query_map([&id], |row| row.get::<_, String>(0))?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        };
        let layers =
            strings("SELECT chain_id FROM image_layers WHERE image_id = ?1 ORDER BY position")?
                .into_iter()
                .map(digest_column)
                .collect::<Result<_, _>>()?;
        let tags = strings(
            "SELECT reference FROM tags WHERE image_id = ?1 ORDER BY tagged_at, reference",
        )?;
        let repo_digests =
            strings("SELECT reference FROM repo_digests WHERE image_id = ?1 ORDER BY reference")?;
        Ok(ImageRecord {
            id: digest_column(id)?,
            manifest_digest: manifest_digest.map(digest_column).transpose()?,
            created,
            size: size as u64,
            added_at,
            layers,
            tags,
            repo_digests,
        })
    }

    pub fn layer(&self, chain_id: &Digest) -> Result<Option<LayerRecord>, StoreError> {
        let row = self
            .connection()?
            .query_row(
                "SELECT chain_id, diff_id, parent, size FROM layers WHERE chain_id = ?1",
                [chain_id.to_string()],
                |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, Option<String>>(2)?,
                        row.get::<_, i64>(3)?,
                    ))
                },
            )
            .optional()?;
        row.map(|(chain_id, diff_id, parent, size)| {
            Ok(LayerRecord {
                chain_id: digest_column(chain_id)?,
                diff_id: digest_column(diff_id)?,
                parent: parent.map(digest_column).transpose()?,
                size: size as u64,
            })
        })
        .transpose()
    }

    /// Deletes an image's metadata (tags included) and reports the layers and
    /// blobs no remaining image uses.
    pub fn delete_image(&mut self, id: &Digest) -> Result<RemovedImage, StoreError> {
        let transaction = self
            .connection_mut()?
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let removed = delete_image_in(&transaction, &id.to_string())?;
        transaction.commit()?;
        Ok(removed)
    }

    /// Deletes the image for every name and lookup while containers made
    /// from it still need its layers (`rmi --force` of an image stopped
    /// containers use, as moby's): its tags and digest references go, its
    /// row stays, marked, until [`Store::delete_unused_hidden_images`].
    pub fn hide_image(&mut self, id: &Digest) -> Result<(), StoreError> {
        let transaction = self
            .connection_mut()?
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let id_text = id.to_string();
        transaction.execute("DELETE FROM tags WHERE image_id = ?1", [&id_text])?;
        transaction.execute("DELETE FROM repo_digests WHERE image_id = ?1", [&id_text])?;
        transaction.execute("UPDATE images SET deleted = 1 WHERE id = ?1", [&id_text])?;
        transaction.commit()?;
        Ok(())
    }

    /// Whether some image [`Store::hide_image`] hid is used by no container
    /// any more (one cheap query, for the paths that remove containers).
    pub fn has_unused_hidden_images(&self) -> Result<bool, StoreError> {
        Ok(self.connection()?.query_row(
            "SELECT EXISTS (SELECT 1 FROM images WHERE deleted = 1
                AND NOT EXISTS (SELECT 1 FROM containers WHERE image_id = images.id))",
            [],
            |row| row.get(0),
        )?)
    }

    /// Deletes each hidden image no container uses any more, as
    /// [`Store::delete_image`] does; the caller holds the exclusive lock
    /// and removes the layers and blobs reported.
    pub fn delete_unused_hidden_images(
        &self,
        _exclusive: &crate::StoreLock,
    ) -> Result<Vec<(Digest, RemovedImage)>, StoreError> {
        let connection = self.connection()?;
        let transaction =
            rusqlite::Transaction::new_unchecked(connection, TransactionBehavior::Immediate)?;
        let ids: Vec<String> = {
            let mut statement = transaction.prepare(
                "SELECT id FROM images WHERE deleted = 1
                 AND NOT EXISTS (SELECT 1 FROM containers WHERE image_id = images.id)",
            )?;
            let rows = statement.query_map([], |row| row.get::<_, String>(0))?;
            rows.collect::<Result<_, _>>()?
        };
        let mut removed = Vec::with_capacity(ids.len());
        for id in ids {
            let content = delete_image_in(&transaction, &id)?;
            removed.push((digest_column(id)?, content));
        }
        transaction.commit()?;
        Ok(removed)
    }

    /// Every blob and layer some image references (for garbage collection).
    pub fn referenced_content(&self) -> Result<(BTreeSet<Digest>, BTreeSet<Digest>), StoreError> {
        let collect = |sql: &str| -> Result<BTreeSet<Digest>, StoreError> {
            let mut statement = self.connection()?.prepare(sql)?;
            let rows = statement.query_map([], |row| row.get::<_, String>(0))?;
            rows.map(|row| digest_column(row?)).collect()
        };
        Ok((
            collect("SELECT DISTINCT chain_id FROM image_layers")?,
            collect("SELECT DISTINCT digest FROM image_blobs")?,
        ))
    }

    /// The blobs an image keeps (config, manifest, layer blobs).
    pub fn image_blobs(&self, id: &Digest) -> Result<Vec<Digest>, StoreError> {
        let mut statement = self
            .connection()?
            .prepare("SELECT digest FROM image_blobs WHERE image_id = ?1")?;
        let rows = statement.query_map([id.to_string()], |row| row.get::<_, String>(0))?;
        rows.map(|row| digest_column(row?)).collect()
    }

    /// Counts for `berth info`.
    pub fn image_count(&self) -> Result<u64, StoreError> {
        let count: i64 = self.connection()?.query_row(
            "SELECT COUNT(*) FROM images WHERE deleted = 0",
            [],
            |row| row.get(0),
        )?;
        Ok(count as u64)
    }
}

/// The image row `id_text` and its tags deleted in `transaction`, with
/// the layers and blobs no remaining image uses.
fn delete_image_in(
    transaction: &rusqlite::Transaction<'_>,
    id_text: &str,
) -> Result<RemovedImage, StoreError> {
    let candidate_layers = column_set(
        transaction,
        "SELECT chain_id FROM image_layers WHERE image_id = ?1",
        id_text,
    )?;
    let candidate_blobs = column_set(
        transaction,
        "SELECT digest FROM image_blobs WHERE image_id = ?1",
        id_text,
    )?;
    transaction.execute("DELETE FROM tags WHERE image_id = ?1", [id_text])?;
    transaction.execute("DELETE FROM images WHERE id = ?1", [id_text])?;

    let mut removed = RemovedImage::default();
    for chain_id in unused(transaction, "image_layers", "chain_id", candidate_layers)? {
        transaction.execute("DELETE FROM layers WHERE chain_id = ?1", [&chain_id])?;
        removed.layers.push(digest_column(chain_id)?);
    }
    for digest in unused(transaction, "image_blobs", "digest", candidate_blobs)? {
        removed.blobs.push(digest_column(digest)?);
    }
    Ok(removed)
}

/// The `candidates` no row of `table` names in `column` any more.
fn unused(
    transaction: &rusqlite::Transaction<'_>,
    table: &str,
    column: &str,
    candidates: impl IntoIterator<Item = String>,
) -> Result<Vec<String>, StoreError> {
    let mut count =
        transaction.prepare(&format!("SELECT COUNT(*) FROM {table} WHERE {column} = ?1"))?;
    let mut unused = Vec::new();
    for candidate in candidates {
        let users: i64 = count.query_row([&candidate], |row| row.get(0))?;
        if users == 0 {
            unused.push(candidate);
        }
    }
    Ok(unused)
}

fn set_tag_in(
    transaction: &rusqlite::Transaction<'_>,
    reference: &str,
    id: &Digest,
) -> Result<Option<Digest>, StoreError> {
    let previous = tag_target(transaction, reference)?;
    transaction.execute(
        "INSERT INTO tags (reference, image_id, tagged_at) VALUES (?1, ?2, ?3)
         ON CONFLICT(reference) DO UPDATE SET image_id = excluded.image_id,
            tagged_at = excluded.tagged_at",
        params![reference, id.to_string(), now()],
    )?;
    Ok(previous.filter(|previous| previous != id))
}

fn tag_target(
    connection: &rusqlite::Connection,
    reference: &str,
) -> Result<Option<Digest>, StoreError> {
    connection
        .query_row(
            "SELECT image_id FROM tags WHERE reference = ?1",
            [reference],
            |row| row.get::<_, String>(0),
        )
        .optional()?
        .map(digest_column)
        .transpose()
}

fn column_set(
    connection: &rusqlite::Connection,
    sql: &str,
    key: &str,
) -> Result<BTreeSet<String>, StoreError> {
    let mut statement = connection.prepare(sql)?;
    let rows = statement.query_map([key], |row| row.get::<_, String>(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(name: &str, parent: Option<&LayerRecord>) -> LayerRecord {
        let diff_id = Digest::of_bytes(name.as_bytes());
        let chain_id = match parent {
            None => diff_id.clone(),
            Some(parent) => Digest::of_bytes(format!("{} {}", parent.chain_id, diff_id).as_bytes()),
        };
        LayerRecord {
            chain_id,
            diff_id,
            parent: parent.map(|parent| parent.chain_id.clone()),
            size: 10,
        }
    }

    fn image(name: &str, layers: Vec<LayerRecord>, tags: &[&str]) -> NewImage {
        let id = Digest::of_bytes(name.as_bytes());
        NewImage {
            id: id.clone(),
            manifest_digest: None,
            created: Some("2024-01-01T00:00:00Z".into()),
            blobs: std::iter::once(id)
                .chain(layers.iter().map(|layer| layer.diff_id.clone()))
                .collect(),
            layers,
            tags: tags.iter().map(|tag| tag.to_string()).collect(),
            repo_digests: vec![],
        }
    }

    #[test]
    fn shared_layers_survive_until_the_last_image_goes() {
        let root = tempfile::tempdir().unwrap();
        let mut store = Store::open(root.path()).unwrap();
        let base = layer("base", None);
        let top = layer("top", Some(&base));
        let one = image("one", vec![base.clone()], &["docker.io/library/one:latest"]);
        let two = image(
            "two",
            vec![base.clone(), top.clone()],
            &["docker.io/library/two:latest"],
        );
        store.add_image(&one).unwrap();
        store.add_image(&two).unwrap();

        let record = store.image(&two.id).unwrap().unwrap();
        assert_eq!(record.size, 20);
        assert_eq!(
            record.layers,
            vec![base.chain_id.clone(), top.chain_id.clone()]
        );
        assert_eq!(record.tags, vec!["docker.io/library/two:latest"]);

        let removed = store.delete_image(&two.id).unwrap();
        assert_eq!(removed.layers, vec![top.chain_id.clone()]);
        assert_eq!(removed.blobs.len(), 2); // config + top blob; base blob still used
        assert!(store.image(&two.id).unwrap().is_none());
        assert!(store.layer(&base.chain_id).unwrap().is_some());
        assert!(store
            .image_by_tag("docker.io/library/two:latest")
            .unwrap()
            .is_none());

        let removed = store.delete_image(&one.id).unwrap();
        assert_eq!(removed.layers, vec![base.chain_id]);
        let (layers, blobs) = store.referenced_content().unwrap();
        assert!(layers.is_empty() && blobs.is_empty());
    }

    #[test]
    fn tags_move_between_images() {
        let root = tempfile::tempdir().unwrap();
        let mut store = Store::open(root.path()).unwrap();
        let tag = "docker.io/library/app:latest";
        let old = image("old", vec![layer("a", None)], &[tag]);
        let new = image("new", vec![layer("b", None)], &[tag]);
        assert!(store.add_image(&old).unwrap().is_empty());
        let moved = store.add_image(&new).unwrap();
        assert_eq!(
            moved,
            vec![MovedTag {
                reference: tag.into(),
                previous: old.id.clone()
            }]
        );
        assert!(store.image(&old.id).unwrap().unwrap().tags.is_empty());
        assert_eq!(store.image_by_tag(tag).unwrap(), Some(new.id.clone()));
        // Re-adding the same image is idempotent.
        assert!(store.add_image(&new).unwrap().is_empty());
        assert_eq!(store.remove_tag(tag).unwrap(), Some(new.id.clone()));
        assert_eq!(
            store.image_ids_with_prefix(&new.id.hex()[..5]).unwrap(),
            vec![new.id]
        );
    }
}
