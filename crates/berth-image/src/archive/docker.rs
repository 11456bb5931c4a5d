//! `manifest.json`, the index `docker save` writes.

use berth_types::image::ArchiveManifestEntry;
use berth_types::Reference;

use super::load::{ImageSource, LayerSource};
use super::staging::StagedArchive;
use super::ArchiveError;

pub(crate) const MANIFEST: &str = "manifest.json";

pub(crate) fn read_sources(staged: &StagedArchive) -> Result<Vec<ImageSource>, ArchiveError> {
    let entries: Vec<ArchiveManifestEntry> = staged.read_json(MANIFEST)?;
    entries
        .into_iter()
        .map(|entry| {
            let tags = entry
                .repo_tags
                .unwrap_or_default()
                .iter()
                .map(|tag| parse_tag(tag))
                .collect::<Result<_, _>>()?;
            Ok(ImageSource {
                config_name: entry.config,
                expected_config: None,
                manifest: None,
                layers: entry
                    .layers
                    .into_iter()
                    .map(|name| LayerSource {
                        name,
                        expected_blob: None,
                    })
                    .collect(),
                tags,
            })
        })
        .collect()
}

pub(crate) fn parse_tag(tag: &str) -> Result<Reference, ArchiveError> {
    Reference::parse_normalized(tag)
        .map(Reference::with_default_tag)
        .map_err(|source| ArchiveError::BadReference {
            reference: tag.to_owned(),
            source: Box::new(source),
        })
}
