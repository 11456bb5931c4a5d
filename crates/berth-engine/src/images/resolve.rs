//! Finding an image by what a user typed: a name, a name:tag, a
//! name@digest, a full id or an id prefix (Docker's lookup order).

use berth_store::{ImageRecord, Store};
use berth_types::reference::looks_like_image_id_prefix;
use berth_types::{Digest, Reference, ReferenceError};

use super::ImageError;
use crate::EngineError;

/// Parses a user's image name with Docker's rules and adds `latest`.
pub fn parse_reference(text: &str) -> Result<Reference, ImageError> {
    parse_with_default_tag(text).map_err(ImageError::InvalidReference)
}

/// [`parse_reference`] with the parser's own error, for callers that put
/// their context around it.
pub(super) fn parse_with_default_tag(text: &str) -> Result<Reference, ReferenceError> {
    Reference::parse_normalized(text).map(Reference::with_default_tag)
}

/// Resolves `text` to an image. The error names the image as Docker does
/// (`No such image: busybox:latest`).
pub fn resolve_image(store: &Store, text: &str) -> Result<ImageRecord, EngineError> {
    let id = resolve_image_id(store, text)?;
    store
        .image(&id)?
        .ok_or_else(|| EngineError::NoSuchImage(text.to_owned()))
}

fn resolve_image_id(store: &Store, text: &str) -> Result<Digest, EngineError> {
    if let Some(hex) = text.strip_prefix("sha256:") {
        return by_id_prefix(store, hex, text);
    }
    let named = Reference::parse_normalized(text).ok();
    if let Some(reference) = &named {
        let found = match reference.digest() {
            Some(_) => store.image_by_repo_digest(&reference.to_string())?,
            None => store.image_by_tag(&reference.clone().with_default_tag().to_string())?,
        };
        if let Some(id) = found {
            return Ok(id);
        }
    }
    if looks_like_image_id_prefix(text) {
        if let Ok(id) = by_id_prefix(store, text, text) {
            return Ok(id);
        }
    }
    let shown = match named {
        Some(reference) if reference.digest().is_none() => {
            reference.with_default_tag().familiar_string()
        }
        _ => text.to_owned(),
    };
    Err(EngineError::NoSuchImage(shown))
}

fn by_id_prefix(store: &Store, hex: &str, text: &str) -> Result<Digest, EngineError> {
    if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(EngineError::NoSuchImage(text.to_owned()));
    }
    let mut matches = store.image_ids_with_prefix(&hex.to_ascii_lowercase())?;
    match matches.len() {
        0 => Err(EngineError::NoSuchImage(text.to_owned())),
        1 => Ok(matches.remove(0)),
        _ => Err(ImageError::AmbiguousPrefix(text.to_owned()).into()),
    }
}
