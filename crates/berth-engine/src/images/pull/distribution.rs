//! `GET /distribution/{name}/json` (docker-py's `inspect_distribution`):
//! what the registry holds under a name, asked of the same endpoints a pull
//! asks (the mirrors first), without pulling anything: the descriptor of
//! the manifest the name points at, and the platforms it offers (an index's
//! entries, or the one of an image manifest, read from its config).

use berth_registry::client::{FetchedManifest, ManifestKind, RegistryClient};
use berth_types::image::{ImageConfig, Platform};
use berth_types::Reference;
use serde_json::{json, Value};

use super::{parse_pull_reference, PullError, RegistrySettings};

/// dockerd's `registry.DistributionInspect`: `Descriptor` and `Platforms`.
pub fn inspect_distribution(settings: &RegistrySettings, name: &str) -> Result<Value, PullError> {
    let reference = parse_pull_reference(name)?;
    let mut clients = settings.pull_clients(reference.domain())?;
    let last = clients
        .pop()
        .expect("the registry itself is always a candidate");
    for mirror in clients {
        match describe(&mirror, &reference) {
            Ok(answer) => return Ok(answer),
            Err(error) => {
                tracing::info!(mirror = mirror.base_url(), error = %format!("{error:#}"), "mirror failed, trying the next endpoint");
            }
        }
    }
    describe(&last, &reference)
}

fn describe(client: &RegistryClient, reference: &Reference) -> Result<Value, PullError> {
    let fetched = client.get_manifest(reference)?;
    let platforms = platforms(client, reference, &fetched)?;
    Ok(json!({
        "Descriptor": {
            "mediaType": fetched.media_type,
            "digest": fetched.digest.to_string(),
            "size": fetched.bytes.len(),
        },
        "Platforms": platforms,
    }))
}

fn platforms(
    client: &RegistryClient,
    reference: &Reference,
    fetched: &FetchedManifest,
) -> Result<Vec<Platform>, PullError> {
    match fetched.parse()? {
        ManifestKind::Index(index) => Ok(index
            .manifests
            .into_iter()
            .filter_map(|entry| entry.platform)
            .collect()),
        ManifestKind::Image(manifest) => {
            let mut bytes = Vec::new();
            client.get_blob(
                reference.path(),
                &manifest.config.digest,
                Some(manifest.config.size),
                &mut bytes,
            )?;
            let config: ImageConfig =
                serde_json::from_slice(&bytes).map_err(|source| PullError::InvalidConfig {
                    digest: manifest.config.digest.clone(),
                    source,
                })?;
            Ok(vec![Platform {
                architecture: config.architecture,
                os: config.os,
                variant: config.variant,
            }])
        }
    }
}
