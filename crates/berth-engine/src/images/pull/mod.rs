//! `pull`: an image from a registry into the store. The manifest is
//! resolved for one platform, layers the store lacks are downloaded
//! several at a time and unpacked in order as they arrive, and the image is
//! recorded only once everything is in place: a failed or interrupted pull
//! leaves no blob, layer or image behind.

mod all_tags;
mod connect;
mod distribution;
mod download;
mod error;
mod events;
mod platform;

use std::collections::BTreeMap;

use berth_image::add_layer;
use berth_registry::client::{host_platform, RegistryClient, ResolvedManifest};
use berth_store::{LayerRecord, NewImage, Store};
use berth_types::digest::chain_ids;
use berth_types::image::{ImageConfig, Manifest, Platform};
use berth_types::{Digest, Reference};

pub use all_tags::{pull_all_tags, PulledRepository};
pub use connect::{CredentialSource, RegistrySettings};
pub use distribution::inspect_distribution;
pub use download::{resolve_concurrency, DEFAULT_CONCURRENCY, MAX_CONCURRENCY};
pub use error::PullError;
pub use events::{layer_id, LayerStatus, PullEvent, PushEvent, PushStatus};
pub use platform::parse_platform;

use download::{run_downloads, DownloadJob, Progress, StagedFile};

/// What to pull and how.
#[derive(Clone, Debug)]
pub struct PullRequest {
    /// The name as the user typed it (`busybox`, `host:5000/x:1`,
    /// `x@sha256:…`).
    pub reference: String,
    /// `os/arch[/variant]`; the host's platform when absent.
    pub platform: Option<String>,
    /// Layers downloaded at once (see [`resolve_concurrency`]).
    pub concurrency: usize,
    pub settings: RegistrySettings,
}

/// The image a pull left in the store.
#[derive(Clone, Debug)]
pub struct PulledImage {
    pub id: Digest,
    /// The full reference pulled, with its default tag
    /// (`docker.io/library/busybox:latest`).
    pub reference: Reference,
    /// The digest the image was pulled by: its index's, else its manifest's.
    pub digest: Digest,
    /// True when the tag already named this image.
    pub up_to_date: bool,
}

/// Parses a name to pull or push with Docker's rules (`latest` added).
pub fn parse_pull_reference(text: &str) -> Result<Reference, PullError> {
    Reference::parse_normalized(text)
        .map(Reference::with_default_tag)
        .map_err(PullError::InvalidReference)
}

/// Pulls `request.reference`, reporting each step to `progress` (which
/// is called from download threads too).
pub fn pull_image(
    store: &mut Store,
    request: &PullRequest,
    progress: &(dyn Fn(PullEvent) + Sync),
) -> Result<PulledImage, PullError> {
    let reference = parse_pull_reference(&request.reference)?;
    let platform = requested_platform(request)?;
    let (client, resolved) = resolve(&request.settings, &reference, &platform)?;
    let pulled = pull_resolved(
        store,
        &client,
        &reference,
        &resolved,
        request.concurrency,
        progress,
    )?;
    progress(status_event(&reference, pulled.up_to_date));
    let (shown, name) = (reference.familiar_string(), reference.familiar_name());
    crate::events::emit_image(store, "pull", &shown, &name);
    Ok(pulled)
}

/// `request.platform`, else the host's.
fn requested_platform(request: &PullRequest) -> Result<Platform, PullError> {
    match request.platform.as_deref().filter(|text| !text.is_empty()) {
        Some(text) => parse_platform(text),
        None => Ok(host_platform()),
    }
}

/// Docker's last line of a pull (`writeStatus`): about `shown`, the
/// reference or, for all tags, the repository.
fn status_event(shown: &Reference, up_to_date: bool) -> PullEvent {
    let shown = shown.familiar_string();
    PullEvent::Status(if up_to_date {
        format!("Image is up to date for {shown}")
    } else {
        format!("Downloaded newer image for {shown}")
    })
}

/// One resolved manifest into the store, between Docker's
/// `TAG: Pulling from REPOSITORY` and `Digest: …` lines; a failure
/// removes whatever it had stored.
fn pull_resolved(
    store: &mut Store,
    client: &RegistryClient,
    reference: &Reference,
    resolved: &ResolvedManifest,
    concurrency: usize,
    progress: Progress<'_>,
) -> Result<PulledImage, PullError> {
    progress(PullEvent::PullingFrom {
        reference: match reference.digest() {
            Some(digest) => digest.to_string(),
            None => reference.tag().unwrap_or_default().to_owned(),
        },
        repository: reference.path().to_owned(),
    });
    let result = store_image(store, client, reference, resolved, concurrency, progress);
    match &result {
        Ok(pulled) => progress(PullEvent::Digest(pulled.digest.clone())),
        Err(_) => {
            if let Err(error) = store.try_collect_garbage() {
                tracing::warn!(%error, "failed to remove content of a failed pull");
            }
        }
    }
    result
}

/// The image manifest for `platform`, from the first endpoint (mirror or
/// registry) that has it.
fn resolve(
    settings: &RegistrySettings,
    reference: &Reference,
    platform: &Platform,
) -> Result<(RegistryClient, ResolvedManifest), PullError> {
    let mut clients = settings.pull_clients(reference.domain())?;
    let last = clients
        .pop()
        .expect("the registry itself is always a candidate");
    for mirror in clients {
        match mirror.resolve_manifest(reference, platform) {
            Ok(resolved) => return Ok((mirror, resolved)),
            Err(error) => {
                tracing::info!(mirror = mirror.base_url(), error = %format!("{error:#}"), "mirror failed, trying the next endpoint");
            }
        }
    }
    let resolved = last.resolve_manifest(reference, platform)?;
    Ok((last, resolved))
}

/// How one layer gets into the store.
enum LayerPlan {
    /// Unpacked and its blob kept already.
    Present(LayerRecord),
    /// The blob is here but its chain is not unpacked.
    Unpack,
    Download,
}

fn store_image(
    store: &mut Store,
    client: &RegistryClient,
    reference: &Reference,
    resolved: &ResolvedManifest,
    concurrency: usize,
    progress: Progress<'_>,
) -> Result<PulledImage, PullError> {
    let manifest = &resolved.image;
    let repository = reference.path();
    let config_digest = &manifest.config.digest;
    let config_bytes = if store.blobs().contains(config_digest) {
        store.blobs().read(config_digest)?
    } else {
        let mut bytes = Vec::new();
        client.get_blob(
            repository,
            config_digest,
            Some(manifest.config.size),
            &mut bytes,
        )?;
        bytes
    };
    let config: ImageConfig =
        serde_json::from_slice(&config_bytes).map_err(|source| PullError::InvalidConfig {
            digest: config_digest.clone(),
            source,
        })?;
    let diff_ids = &config.rootfs.diff_ids;
    if diff_ids.len() != manifest.layers.len() {
        return Err(PullError::LayerCount {
            digest: config_digest.clone(),
            expected: diff_ids.len(),
            actual: manifest.layers.len(),
        });
    }

    let _lock = store.lock_shared()?;
    let chains = chain_ids(diff_ids);
    // An image the store has already gets no layer lines, as dockerd
    // (`pullSchema2` returns early when its image store has the config).
    let layer_progress: Progress<'_> = match store.image(config_digest)? {
        Some(_) => &|_| {},
        None => progress,
    };
    let (plans, jobs) = plan_layers(store, manifest, &chains, layer_progress)?;
    for job in jobs.iter().skip(concurrency) {
        progress(PullEvent::Layer {
            id: layer_id(&job.digest),
            status: events::LayerStatus::Waiting,
        });
    }
    let mut unpacker = Unpacker {
        store,
        manifest,
        diff_ids,
        plans,
        ready: BTreeMap::new(),
        records: Vec::with_capacity(manifest.layers.len()),
        progress,
    };
    run_downloads(
        client,
        repository,
        jobs,
        concurrency,
        progress,
        |index, result| {
            unpacker.ready.insert(index, result?);
            unpacker.advance()
        },
    )?;
    unpacker.advance()?;
    let records = unpacker.records;
    debug_assert_eq!(records.len(), manifest.layers.len());

    let blobs = store.blobs();
    let id = blobs.put(&config_bytes)?;
    let manifest_digest = blobs.put(&resolved.manifest.bytes)?;
    let mut kept = vec![id.clone(), manifest_digest.clone()];
    kept.extend(manifest.layers.iter().map(|layer| layer.digest.clone()));
    if let Some(index) = &resolved.index {
        kept.push(blobs.put(&index.bytes)?);
    }
    let digest = resolved
        .index
        .as_ref()
        .map_or(&resolved.manifest.digest, |index| &index.digest)
        .clone();
    let repo_digest = format!("{}@{digest}", reference.name());
    let tags: Vec<String> = match reference.digest() {
        Some(_) => Vec::new(),
        None => vec![reference.to_string()],
    };
    let digest_owner = store.image_by_repo_digest(&repo_digest)?;
    let up_to_date = match tags.first() {
        Some(tag) => store.image_by_tag(tag)?.as_ref() == Some(&id),
        None => digest_owner.as_ref() == Some(&id),
    };
    // A repo digest never moves, as in dockerd's reference store
    // (`addDigestReference`: "cannot update"): when NAME@DIGEST names
    // another image already (another platform of the same index), that
    // image keeps it and this one is recorded without it.
    let repo_digests = match digest_owner {
        Some(owner) if owner != id => Vec::new(),
        _ => vec![repo_digest],
    };
    store.add_image(&NewImage {
        id: id.clone(),
        manifest_digest: Some(manifest_digest),
        created: config.created.clone(),
        layers: records,
        blobs: kept,
        tags,
        repo_digests,
    })?;
    Ok(PulledImage {
        id,
        reference: reference.clone(),
        digest,
        up_to_date,
    })
}

/// Which layers the store has, and the downloads for the rest.
fn plan_layers(
    store: &Store,
    manifest: &Manifest,
    chains: &[Digest],
    progress: Progress<'_>,
) -> Result<(Vec<LayerPlan>, Vec<DownloadJob>), PullError> {
    let mut plans = Vec::with_capacity(manifest.layers.len());
    let mut jobs = Vec::new();
    for (index, (layer, chain_id)) in manifest.layers.iter().zip(chains).enumerate() {
        let id = layer_id(&layer.digest);
        let blob_present = store.blobs().contains(&layer.digest);
        let record = match blob_present && store.layers().exists(chain_id) {
            true => store.layer(chain_id)?,
            false => None,
        };
        let (plan, status) = match record {
            Some(record) => (LayerPlan::Present(record), LayerStatus::AlreadyExists),
            None if blob_present => (LayerPlan::Unpack, LayerStatus::PullingFsLayer),
            None => {
                jobs.push(DownloadJob {
                    index,
                    digest: layer.digest.clone(),
                    size: layer.size,
                    path: store.staging_path("pull"),
                });
                (LayerPlan::Download, LayerStatus::PullingFsLayer)
            }
        };
        progress(PullEvent::Layer { id, status });
        plans.push(plan);
    }
    Ok((plans, jobs))
}

/// Registers layers bottom first as their blobs become available.
struct Unpacker<'a> {
    store: &'a Store,
    manifest: &'a Manifest,
    diff_ids: &'a [Digest],
    plans: Vec<LayerPlan>,
    ready: BTreeMap<usize, StagedFile>,
    records: Vec<LayerRecord>,
    progress: Progress<'a>,
}

impl Unpacker<'_> {
    /// Registers every layer it can, in order, up to the first one still
    /// downloading.
    fn advance(&mut self) -> Result<(), PullError> {
        while self.records.len() < self.plans.len() {
            let index = self.records.len();
            let record = match &self.plans[index] {
                LayerPlan::Present(record) => record.clone(),
                LayerPlan::Unpack => {
                    let file = self.store.blobs().path(&self.manifest.layers[index].digest);
                    self.unpack(index, &file)?
                }
                LayerPlan::Download => match self.ready.remove(&index) {
                    Some(staged) => self.unpack(index, staged.path())?,
                    None => return Ok(()),
                },
            };
            self.records.push(record);
        }
        Ok(())
    }

    fn unpack(&self, index: usize, file: &std::path::Path) -> Result<LayerRecord, PullError> {
        let layer = &self.manifest.layers[index];
        let id = layer_id(&layer.digest);
        (self.progress)(PullEvent::Layer {
            id: id.clone(),
            status: LayerStatus::Extracting,
        });
        let parent = self.records.last().map(|record| &record.chain_id);
        let added =
            add_layer(self.store, file, parent, Some(&self.diff_ids[index])).map_err(|source| {
                PullError::Layer {
                    digest: layer.digest.clone(),
                    source: Box::new(source),
                }
            })?;
        (self.progress)(PullEvent::Layer {
            id,
            status: LayerStatus::PullComplete,
        });
        Ok(added.record)
    }
}
