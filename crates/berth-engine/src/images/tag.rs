use berth_store::Store;

use super::resolve::{parse_with_default_tag, resolve_image};
use super::ImageError;
use crate::EngineError;

/// `tag SOURCE TARGET`: points TARGET (name[:tag], default `latest`) at the
/// image SOURCE names.
pub fn tag_image(store: &mut Store, source: &str, target: &str) -> Result<(), EngineError> {
    let image = resolve_image(store, source)?;
    let reference = parse_with_default_tag(target).map_err(|source| ImageError::InvalidTag {
        target: target.to_owned(),
        source,
    })?;
    if reference.digest().is_some() {
        return Err(ImageError::DigestTag.into());
    }
    store.set_tag(&reference.to_string(), &image.id)?;
    let name = super::familiar(&reference.to_string());
    crate::events::emit_image(store, "tag", &image.id.to_string(), &name);
    Ok(())
}
