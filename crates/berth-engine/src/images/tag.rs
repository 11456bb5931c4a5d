use berth_store::Store;

use super::resolve::{parse_reference, resolve_image};
use crate::EngineError;

/// `tag SOURCE TARGET`: points TARGET (name[:tag], default `latest`) at the
/// image SOURCE names.
pub fn tag_image(store: &mut Store, source: &str, target: &str) -> Result<(), EngineError> {
    let image = resolve_image(store, source)?;
    let reference = parse_reference(target).map_err(|error| {
        EngineError::InvalidReference(format!(
            "Error parsing reference: {target:?} is not a valid repository/tag: {error}"
        ))
    })?;
    if reference.digest().is_some() {
        return Err(EngineError::InvalidReference(
            "refusing to create a tag with a digest reference".to_owned(),
        ));
    }
    store.set_tag(&reference.to_string(), &image.id)?;
    let name = super::familiar(&reference.to_string());
    crate::events::emit_image(store, "tag", &image.id.to_string(), &name);
    Ok(())
}
