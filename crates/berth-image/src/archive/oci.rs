//! OCI image-layout archives (`oci-layout`, `index.json`, `blobs/`).

use berth_types::image::{
    media_type, Descriptor, Index, Manifest, ANNOTATION_CONTAINERD_NAME, ANNOTATION_REF_NAME,
};
use berth_types::{Digest, Reference};

use super::docker::parse_tag;
use super::load::{ImageSource, LayerSource};
use super::staging::StagedArchive;
use super::ArchiveError;

pub(crate) const INDEX: &str = "index.json";

pub(crate) fn blob_name(digest: &Digest) -> String {
    format!("blobs/sha256/{}", digest.hex())
}

/// The Go/OCI name of the architecture berth runs on.
pub fn host_architecture() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        other => other,
    }
}

pub(crate) fn read_sources(staged: &StagedArchive) -> Result<Vec<ImageSource>, ArchiveError> {
    let index: Index = staged.read_json(INDEX)?;
    let mut sources = Vec::new();
    for descriptor in &index.manifests {
        let tags = names(descriptor)?;
        let manifest_descriptor = select_manifest(staged, descriptor)?;
        let (bytes, manifest) = read_manifest(staged, &manifest_descriptor)?;
        sources.push(ImageSource {
            config_name: blob_name(&manifest.config.digest),
            expected_config: Some(manifest.config.digest.clone()),
            layers: manifest
                .layers
                .iter()
                .map(|layer| LayerSource {
                    name: blob_name(&layer.digest),
                    expected_blob: Some(layer.digest.clone()),
                })
                .collect(),
            manifest: Some((bytes, manifest_descriptor.digest.clone())),
            tags,
        });
    }
    Ok(sources)
}

/// The references an index entry names. containerd/Docker write the full
/// name in `io.containerd.image.name`; `org.opencontainers.image.ref.name`
/// is either a full reference or only a tag (which names no repository, so
/// the image loads untagged).
fn names(descriptor: &Descriptor) -> Result<Vec<Reference>, ArchiveError> {
    let Some(annotations) = &descriptor.annotations else {
        return Ok(Vec::new());
    };
    if let Some(name) = annotations.get(ANNOTATION_CONTAINERD_NAME) {
        return Ok(vec![parse_tag(name)?]);
    }
    match annotations.get(ANNOTATION_REF_NAME) {
        Some(name) if name.contains('/') || name.contains(':') => Ok(vec![parse_tag(name)?]),
        _ => Ok(Vec::new()),
    }
}

/// Follows nested indexes down to the manifest for this host's platform.
fn select_manifest(
    staged: &StagedArchive,
    descriptor: &Descriptor,
) -> Result<Descriptor, ArchiveError> {
    let mut current = descriptor.clone();
    for _depth in 0..8 {
        let is_index = matches!(
            current.media_type.as_str(),
            media_type::OCI_INDEX | media_type::DOCKER_MANIFEST_LIST
        );
        if !is_index {
            return Ok(current);
        }
        let name = blob_name(&current.digest);
        let bytes = read_verified(staged, &name, &current.digest)?;
        let index: Index =
            serde_json::from_slice(&bytes).map_err(|source| ArchiveError::BadJson {
                file: name.clone(),
                source,
            })?;
        let architecture = host_architecture();
        let chosen = index
            .manifests
            .iter()
            .find(|entry| {
                entry.platform.as_ref().is_some_and(|platform| {
                    platform.os == "linux" && platform.architecture == architecture
                })
            })
            .or_else(|| (index.manifests.len() == 1).then(|| &index.manifests[0]))
            .ok_or_else(|| ArchiveError::NoPlatform {
                file: name,
                architecture: architecture.to_owned(),
            })?;
        current = chosen.clone();
    }
    Err(ArchiveError::Missing {
        file: "image manifest (index nesting too deep)".to_owned(),
    })
}

fn read_manifest(
    staged: &StagedArchive,
    descriptor: &Descriptor,
) -> Result<(Vec<u8>, Manifest), ArchiveError> {
    let name = blob_name(&descriptor.digest);
    let bytes = read_verified(staged, &name, &descriptor.digest)?;
    let manifest = serde_json::from_slice(&bytes)
        .map_err(|source| ArchiveError::BadJson { file: name, source })?;
    Ok((bytes, manifest))
}

pub(crate) fn read_verified(
    staged: &StagedArchive,
    name: &str,
    expected: &Digest,
) -> Result<Vec<u8>, ArchiveError> {
    let bytes = staged.read(name)?;
    if Digest::of_bytes(&bytes) != *expected {
        return Err(ArchiveError::DigestMismatch {
            file: name.to_owned(),
            expected: expected.clone(),
        });
    }
    Ok(bytes)
}
