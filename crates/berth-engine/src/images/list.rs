//! `images` / `image ls`.

use std::collections::BTreeMap;

use berth_store::{ImageRecord, Store};
use berth_types::Digest;

use super::familiar_parts;
use crate::EngineError;

#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// `-a`: also intermediate images (untagged ones another image was
    /// built on: the steps of a build, as Docker's classic builder).
    pub all: bool,
    /// `REPOSITORY[:TAG]` filter, as `docker images busybox`.
    pub repository: Option<String>,
    /// `-f dangling=true|false`.
    pub dangling: Option<bool>,
    /// `-f reference=PATTERN` (several: any): Go's `path.Match` against
    /// the familiar `name:tag` or the name alone; an image shows with its
    /// matching names only, an untagged one never.
    pub references: Vec<String>,
    /// `-f label=KEY` or `label=KEY=VALUE` (several: all), on the image
    /// config's labels.
    pub labels: Vec<String>,
    /// `-f before=IMAGE` / `since=IMAGE`: images created before / after it.
    pub before: Option<String>,
    pub since: Option<String>,
}

/// Whether `labels` has every label filter (`KEY` or `KEY=VALUE`).
pub fn labels_match(labels: &BTreeMap<String, String>, filters: &[String]) -> bool {
    filters.iter().all(|filter| match filter.split_once('=') {
        Some((key, value)) => labels.get(key).is_some_and(|found| found == value),
        None => labels.contains_key(filter.as_str()),
    })
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
    /// The image config's labels.
    pub labels: BTreeMap<String, String>,
}

/// An image's creation time in nanoseconds (0 when it has none), for
/// `before`/`since`.
fn created_time(created: Option<&str>) -> i64 {
    created
        .and_then(|text| chrono::DateTime::parse_from_rfc3339(text).ok())
        .and_then(|time| time.timestamp_nanos_opt())
        .unwrap_or(0)
}

fn created_of(store: &Store, text: &str) -> Result<i64, EngineError> {
    Ok(created_time(
        super::resolve_image(store, text)?.created.as_deref(),
    ))
}

fn config_labels(store: &Store, image: &ImageRecord) -> BTreeMap<String, String> {
    super::read_config(store, image)
        .ok()
        .and_then(|config| config.config.and_then(|config| config.labels))
        .unwrap_or_default()
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

    let before = options
        .before
        .as_deref()
        .map(|text| created_of(store, text))
        .transpose()?;
    let since = options
        .since
        .as_deref()
        .map(|text| created_of(store, text))
        .transpose()?;
    let images = store.images()?;
    let parents = if options.all {
        Default::default()
    } else {
        super::parent_ids(store, &images)
    };
    let mut rows = Vec::new();
    for image in images {
        let dangling = image.tags.is_empty();
        if dangling && parents.contains(&image.id.to_string()) {
            continue;
        }
        if options.dangling.is_some_and(|wanted| wanted != dangling) {
            continue;
        }
        let created = created_time(image.created.as_deref());
        if before.is_some_and(|before| created >= before)
            || since.is_some_and(|since| created <= since)
        {
            continue;
        }
        let labels = config_labels(store, &image);
        if !labels_match(&labels, &options.labels) {
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
            if !options.references.is_empty() {
                let tagged = format!("{repository}:{tag}");
                let matches = |pattern: &String| {
                    berth_types::glob::glob_match(pattern, &tagged)
                        || berth_types::glob::glob_match(pattern, &repository)
                };
                if dangling || !options.references.iter().any(matches) {
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
                labels: labels.clone(),
            });
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creation_times_compare_as_times() {
        assert!(
            created_time(Some("2024-01-01T00:00:00.5Z"))
                > created_time(Some("2024-01-01T00:00:00Z"))
        );
        assert!(
            created_time(Some("2024-01-01T01:00:00+02:00"))
                < created_time(Some("2024-01-01T00:00:00Z"))
        );
        assert_eq!(created_time(None), 0);
    }

    #[test]
    fn label_filters_need_every_label() {
        let labels: BTreeMap<String, String> = [("a", "1"), ("b", "")]
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value.to_owned()))
            .collect();
        let filters = |list: &[&str]| list.iter().map(|text| text.to_string()).collect::<Vec<_>>();
        assert!(labels_match(&labels, &[]));
        assert!(labels_match(&labels, &filters(&["a"])));
        assert!(labels_match(&labels, &filters(&["a=1", "b"])));
        assert!(labels_match(&labels, &filters(&["b="])));
        assert!(!labels_match(&labels, &filters(&["a=2"])));
        assert!(!labels_match(&labels, &filters(&["a", "c"])));
    }
}
