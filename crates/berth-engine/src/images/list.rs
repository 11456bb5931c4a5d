//! `images` / `image ls`.

use berth_store::Store;
use berth_types::Digest;

use super::familiar_parts;
use crate::EngineError;

#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// `-a`: also intermediate images (berth keeps none yet, so the same).
    pub all: bool,
    /// `REPOSITORY[:TAG]` filter, as `docker images busybox`.
    pub repository: Option<String>,
    /// `-f dangling=true|false`.
    pub dangling: Option<bool>,
}

/// One row of `images`: an image under one of its names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageSummary {
    pub id: Digest,
    pub repository: String,
    pub tag: String,
    /// `sha256:…` of the manifest as pushed/pulled, when known.
    pub digest: Option<String>,
    pub created: Option<String>,
    pub size: u64,
}

pub fn list_images(store: &Store, options: &ListOptions) -> Result<Vec<ImageSummary>, EngineError> {
    let filter = options
        .repository
        .as_deref()
        .map(|text| {
            // `docker images busybox` matches every tag; `busybox:1` one.
            let (name, tag) = match text.rsplit_once(':') {
                Some((name, tag)) if !tag.contains('/') => (name, Some(tag)),
                _ => (text, None),
            };
            super::parse_reference(name)
                .map(|reference| (reference.familiar_name(), tag.map(str::to_owned)))
        })
        .transpose()?;

    let mut rows = Vec::new();
    for image in store.images()? {
        let dangling = image.tags.is_empty();
        if options.dangling.is_some_and(|wanted| wanted != dangling) {
            continue;
        }
        let digest = image
            .repo_digests
            .first()
            .and_then(|reference| reference.split_once('@'))
            .map(|(_, digest)| digest.to_owned());
        let names: Vec<(String, String)> = if dangling {
            vec![("<none>".to_owned(), "<none>".to_owned())]
        } else {
            image.tags.iter().map(|tag| familiar_parts(tag)).collect()
        };
        for (repository, tag) in names {
            if let Some((wanted_name, wanted_tag)) = &filter {
                if &repository != wanted_name
                    || wanted_tag.as_ref().is_some_and(|wanted| wanted != &tag)
                {
                    continue;
                }
            }
            rows.push(ImageSummary {
                id: image.id.clone(),
                repository,
                tag,
                digest: digest.clone(),
                created: image.created.clone(),
                size: image.size,
            });
        }
    }
    Ok(rows)
}
