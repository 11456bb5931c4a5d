//! `load`, `save`, `import`: archive formats live in `berth-image`; here they
//! meet name resolution.

use std::io::{Read, Write};

use berth_image::{
    import_rootfs, load_archive, save_archive, ImportOptions, LoadedImage, SaveRequest,
};
use berth_store::Store;
use berth_types::{Digest, Reference};

use super::resolve::{parse_reference, resolve_image};
use super::ImageError;
use crate::EngineError;

pub fn load_images(store: &mut Store, input: impl Read) -> Result<Vec<LoadedImage>, EngineError> {
    let loaded = load_archive(store, input).map_err(ImageError::Load)?;
    for image in &loaded {
        // Docker names a loaded image by its id (moby image/tarexport).
        let id = image.id.to_string();
        crate::events::emit_image(store, "load", &id, &id);
    }
    Ok(loaded)
}

/// `save IMAGE…`: a name saves that name; an id saves the image with all its
/// names (Docker's rule).
pub fn save_images(store: &Store, names: &[String], output: impl Write) -> Result<(), EngineError> {
    let mut requests: Vec<SaveRequest> = Vec::new();
    for name in names {
        let image = resolve_image(store, name)?;
        let named = parse_reference(name)
            .ok()
            .filter(|reference| image.tags.contains(&reference.to_string()));
        let tags: Vec<Reference> = match named {
            Some(reference) => vec![reference],
            None => image
                .tags
                .iter()
                .filter_map(|tag| Reference::parse_normalized(tag).ok())
                .collect(),
        };
        match requests.iter_mut().find(|request| request.id == image.id) {
            Some(existing) => {
                for tag in tags {
                    if !existing.tags.contains(&tag) {
                        existing.tags.push(tag);
                    }
                }
            }
            None => requests.push(SaveRequest { id: image.id, tags }),
        }
    }
    Ok(save_archive(store, &requests, output).map_err(ImageError::Save)?)
}

#[derive(Clone, Debug, Default)]
pub struct ImportRequest {
    pub reference: Option<String>,
    pub changes: Vec<String>,
    pub message: Option<String>,
    pub source_name: String,
}

pub fn import_image(
    store: &mut Store,
    input: impl Read,
    request: &ImportRequest,
) -> Result<Digest, EngineError> {
    let reference = request
        .reference
        .as_deref()
        .map(parse_reference)
        .transpose()?;
    let options = ImportOptions {
        reference,
        changes: request.changes.clone(),
        message: request.message.clone(),
        source_name: request.source_name.clone(),
    };
    import_rootfs(store, input, &options)
        .map(|imported| imported.id)
        .map_err(|error| ImageError::Import(error).into())
}
