//! `save`: images from the store into one archive that both `docker load`
//! (through `manifest.json`) and OCI tools (through `index.json`) accept,
//! the same dual layout Docker 25+ writes.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use berth_store::Store;
use berth_types::image::{
    media_type, ArchiveManifestEntry, Descriptor, Index, Manifest, ANNOTATION_CONTAINERD_NAME,
    ANNOTATION_REF_NAME,
};
use berth_types::{Digest, Reference};

use super::oci::blob_name;
use super::ArchiveError;

/// One image to save and the names to save it under (none: untagged).
#[derive(Clone, Debug)]
pub struct SaveRequest {
    pub id: Digest,
    pub tags: Vec<Reference>,
}

pub fn save_archive(
    store: &Store,
    requests: &[SaveRequest],
    output: impl Write,
) -> Result<(), ArchiveError> {
    let mut builder = tar::Builder::new(output);
    let mut written = BTreeSet::new();
    let mut index_entries = Vec::new();
    let mut manifest_entries = Vec::new();
    let blobs = store.blobs();

    for request in requests {
        let record = store
            .image(&request.id)?
            .ok_or_else(|| ArchiveError::Missing {
                file: format!("image {}", request.id),
            })?;
        let manifest_digest = record
            .manifest_digest
            .ok_or_else(|| ArchiveError::Missing {
                file: format!("manifest of image {}", request.id),
            })?;
        let manifest_bytes = blobs.read(&manifest_digest)?;
        let manifest: Manifest =
            serde_json::from_slice(&manifest_bytes).map_err(|source| ArchiveError::BadJson {
                file: blob_name(&manifest_digest),
                source,
            })?;
        let contents = std::iter::once(&manifest.config.digest)
            .chain(manifest.layers.iter().map(|layer| &layer.digest))
            .chain(std::iter::once(&manifest_digest));
        for digest in contents {
            if written.insert(digest.clone()) {
                append_blob(&mut builder, store, digest)?;
            }
        }

        let descriptor = Descriptor {
            media_type: manifest
                .media_type
                .clone()
                .unwrap_or_else(|| media_type::OCI_MANIFEST.to_owned()),
            digest: manifest_digest.clone(),
            size: manifest_bytes.len() as u64,
            annotations: None,
            platform: None,
        };
        if request.tags.is_empty() {
            index_entries.push(descriptor.clone());
        }
        for tag in &request.tags {
            let mut annotations = BTreeMap::new();
            annotations.insert(ANNOTATION_CONTAINERD_NAME.to_owned(), tag.to_string());
            if let Some(tag_name) = tag.tag() {
                annotations.insert(ANNOTATION_REF_NAME.to_owned(), tag_name.to_owned());
            }
            index_entries.push(Descriptor {
                annotations: Some(annotations),
                ..descriptor.clone()
            });
        }
        manifest_entries.push(ArchiveManifestEntry {
            config: blob_name(&manifest.config.digest),
            repo_tags: Some(
                request
                    .tags
                    .iter()
                    .map(Reference::familiar_string)
                    .collect(),
            ),
            layers: manifest
                .layers
                .iter()
                .map(|layer| blob_name(&layer.digest))
                .collect(),
        });
    }

    let index = Index {
        schema_version: 2,
        media_type: Some(media_type::OCI_INDEX.to_owned()),
        manifests: index_entries,
        annotations: None,
    };
    append_bytes(
        &mut builder,
        "oci-layout",
        br#"{"imageLayoutVersion":"1.0.0"}"#,
    )?;
    append_bytes(&mut builder, "index.json", &to_json(&index))?;
    append_bytes(&mut builder, "manifest.json", &to_json(&manifest_entries))?;
    builder
        .into_inner()
        .and_then(|mut output| output.flush())
        .map_err(write_error("archive"))?;
    Ok(())
}

fn to_json<T: serde::Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("archive metadata always serializes")
}

fn write_error(name: &str) -> impl FnOnce(std::io::Error) -> ArchiveError + '_ {
    move |source| ArchiveError::Write {
        path: name.into(),
        source,
    }
}

fn header(size: u64) -> tar::Header {
    let mut header = tar::Header::new_ustar();
    header.set_size(size);
    header.set_mode(0o644);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(0);
    header.set_entry_type(tar::EntryType::Regular);
    header
}

fn append_bytes<W: Write>(
    builder: &mut tar::Builder<W>,
    name: &str,
    bytes: &[u8],
) -> Result<(), ArchiveError> {
    builder
        .append_data(&mut header(bytes.len() as u64), name, bytes)
        .map_err(write_error(name))
}

fn append_blob<W: Write>(
    builder: &mut tar::Builder<W>,
    store: &Store,
    digest: &Digest,
) -> Result<(), ArchiveError> {
    let blobs = store.blobs();
    let size = blobs.size(digest)?;
    let file = blobs.open(digest)?;
    let name = blob_name(digest);
    builder
        .append_data(
            &mut header(size),
            &name,
            std::io::BufReader::with_capacity(1 << 20, file),
        )
        .map_err(write_error(&name))
}
