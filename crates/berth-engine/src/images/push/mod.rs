//! `push`: a tagged image from the store to its registry. Blobs the
//! repository has are skipped, blobs another repository of the same
//! registry holds are mounted, the rest uploaded; then the manifest stored
//! with the image is put under the tag, so the pushed digest is the one the
//! image was pulled or loaded with.

use std::io::{self, Read, Seek, SeekFrom};
use std::time::{Duration, Instant};

use berth_registry::client::{BlobPush, PushedBlob, RegistryClient};
use berth_store::{ImageRecord, NewImage, Store, StoreError};
use berth_types::image::{media_type, Descriptor, Manifest};
use berth_types::{Digest, Reference, ReferenceError};

mod error;

pub use error::PushError;

use super::pull::{
    layer_id, parse_pull_reference, PullError, PushEvent, PushStatus, RegistrySettings,
};

const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

#[derive(Clone, Debug)]
pub struct PushRequest {
    /// The name as the user typed it; `latest` when it has no tag.
    pub reference: String,
    pub settings: RegistrySettings,
}

#[derive(Clone, Debug)]
pub struct PushedImage {
    pub reference: Reference,
    /// The manifest's digest in the registry.
    pub digest: Digest,
    /// The manifest's size in bytes.
    pub size: u64,
}

type Progress<'a> = &'a (dyn Fn(PushEvent) + Sync);

pub fn push_image(
    store: &mut Store,
    request: &PushRequest,
    progress: Progress<'_>,
) -> Result<PushedImage, PushError> {
    let reference = parse_pull_reference(&request.reference).map_err(|error| match error {
        PullError::InvalidReference(error) => PushError::InvalidReference(error),
        other => PushError::Connect(other),
    })?;
    let tag = reference
        .tag()
        .ok_or(PushError::InvalidReference(ReferenceError::InvalidFormat))?
        .to_owned();
    let id = store
        .image_by_tag(&reference.to_string())?
        .ok_or_else(|| PushError::NoSuchImage(reference.familiar_name()))?;
    let record = store
        .image(&id)?
        .ok_or_else(|| PushError::NoSuchImage(reference.familiar_name()))?;
    let manifest_digest = record
        .manifest_digest
        .clone()
        .filter(|digest| store.blobs().contains(digest))
        .ok_or_else(|| PushError::NoManifest { id: id.clone() })?;
    let manifest_bytes = store.blobs().read(&manifest_digest)?;
    let manifest: Manifest =
        serde_json::from_slice(&manifest_bytes).map_err(|source| PushError::InvalidManifest {
            digest: manifest_digest.clone(),
            source,
        })?;
    let repository = reference.path();
    let mount_from = mount_source(&record.repo_digests, &reference);

    let client = request.settings.client_for(reference.domain())?;
    progress(PushEvent::Repository(reference.name()));
    // Docker lists the top layer first.
    let layers: Vec<&Descriptor> = manifest.layers.iter().rev().collect();
    for layer in &layers {
        progress(PushEvent::Layer {
            id: layer_id(&layer.digest),
            status: PushStatus::Preparing,
        });
    }
    for layer in &layers {
        let status = push_blob(
            store,
            &client,
            repository,
            layer,
            mount_from.as_deref(),
            Some(progress),
        )?;
        progress(PushEvent::Layer {
            id: layer_id(&layer.digest),
            status,
        });
    }
    push_blob(
        store,
        &client,
        repository,
        &manifest.config,
        mount_from.as_deref(),
        None,
    )?;
    let media_type = manifest
        .media_type
        .clone()
        .unwrap_or_else(|| media_type::OCI_MANIFEST.to_owned());
    let digest = client.put_manifest(repository, &tag, &media_type, &manifest_bytes)?;
    let size = manifest_bytes.len() as u64;
    record_repo_digest(store, &record, &reference, &digest)?;
    progress(PushEvent::Pushed {
        tag,
        digest: digest.clone(),
        size,
    });
    Ok(PushedImage {
        reference,
        digest,
        size,
    })
}

/// Adds `NAME@DIGEST` to the image's repo digests, as Docker does after a
/// push (and later pushes to the same registry mount from there).
fn record_repo_digest(
    store: &mut Store,
    record: &ImageRecord,
    reference: &Reference,
    digest: &Digest,
) -> Result<(), PushError> {
    let repo_digest = format!("{}@{digest}", reference.name());
    if record.repo_digests.contains(&repo_digest) {
        return Ok(());
    }
    let layers = record
        .layers
        .iter()
        .map(|chain_id| {
            store
                .layer(chain_id)?
                .ok_or_else(|| StoreError::Corrupt(format!("layer {chain_id} has no record")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    store.add_image(&NewImage {
        id: record.id.clone(),
        manifest_digest: record.manifest_digest.clone(),
        created: record.created.clone(),
        layers,
        // Recorded already; nothing is removed by leaving them out.
        blobs: Vec::new(),
        tags: Vec::new(),
        repo_digests: vec![repo_digest],
    })?;
    Ok(())
}

/// Another repository of the same registry the image came from (its repo
/// digests say where), to mount blobs from instead of uploading them.
fn mount_source(repo_digests: &[String], target: &Reference) -> Option<String> {
    repo_digests
        .iter()
        .filter_map(|text| Reference::parse_normalized(text).ok())
        .find(|source| source.domain() == target.domain() && source.path() != target.path())
        .map(|source| source.path().to_owned())
}

fn push_blob(
    store: &Store,
    client: &RegistryClient,
    repository: &str,
    descriptor: &Descriptor,
    mount_from: Option<&str>,
    progress: Option<Progress<'_>>,
) -> Result<PushStatus, PushError> {
    let file = store.blobs().open(&descriptor.digest)?;
    let mut reader = ProgressReader {
        inner: io::BufReader::with_capacity(1 << 20, file),
        id: layer_id(&descriptor.digest),
        position: 0,
        total: descriptor.size,
        last_report: Instant::now(),
        progress,
    };
    let blob = BlobPush {
        digest: &descriptor.digest,
        size: descriptor.size,
        mount_from,
    };
    Ok(match client.push_blob(repository, &blob, &mut reader)? {
        PushedBlob::AlreadyExists => PushStatus::AlreadyExists,
        PushedBlob::Mounted => PushStatus::MountedFrom(mount_from.unwrap_or_default().to_owned()),
        PushedBlob::Uploaded => PushStatus::Pushed,
    })
}

/// Reports how far an upload has read, now and then.
struct ProgressReader<'a, R> {
    inner: R,
    id: String,
    position: u64,
    total: u64,
    last_report: Instant,
    progress: Option<Progress<'a>>,
}

impl<R: Read> Read for ProgressReader<'_, R> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let count = self.inner.read(buffer)?;
        self.position += count as u64;
        if let Some(progress) = self.progress {
            if self.last_report.elapsed() >= PROGRESS_INTERVAL {
                self.last_report = Instant::now();
                progress(PushEvent::Layer {
                    id: self.id.clone(),
                    status: PushStatus::Pushing {
                        current: self.position,
                        total: self.total,
                    },
                });
            }
        }
        Ok(count)
    }
}

impl<R: Seek> Seek for ProgressReader<'_, R> {
    fn seek(&mut self, position: SeekFrom) -> io::Result<u64> {
        self.position = self.inner.seek(position)?;
        Ok(self.position)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounts_come_from_another_repository_of_the_same_registry() {
        let target = Reference::parse_normalized("127.0.0.1:5000/b:1").unwrap();
        let digest = format!("@sha256:{}", "a".repeat(64));
        let digests = vec![
            format!("docker.io/library/busybox{digest}"),
            format!("127.0.0.1:5000/b{digest}"),
            format!("127.0.0.1:5000/a{digest}"),
        ];
        assert_eq!(mount_source(&digests, &target).as_deref(), Some("a"));
        assert_eq!(mount_source(&digests[..2], &target), None);
    }
}
