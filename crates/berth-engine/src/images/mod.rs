//! Image services: everything `berth image …` and the API's `/images` do.

mod archive;
mod error;
mod history;
mod inspect;
mod list;
mod prune;
pub mod pull;
pub mod push;
mod remove;
mod resolve;
mod tag;

pub use archive::{import_image, load_images, save_images, ImportRequest};
pub use error::ImageError;
pub use history::{image_history, HistoryEntry};
pub(crate) use inspect::read_config;
pub use inspect::{image_parent, inspect_image, parent_ids, parent_map};
pub use list::{list_images, ImageSummary, ListOptions};
pub use prune::{prune_images, PruneReport};
pub use pull::{pull_image, PullError, PullEvent, PullRequest, PulledImage, PushEvent};
pub use push::{push_image, PushError, PushRequest, PushedImage};
pub(crate) use remove::delete_released_images;
pub use remove::{remove_image, RemovalEvent};
pub use resolve::{parse_reference, resolve_image};
pub use tag::tag_image;

/// A stored full reference as Docker prints it (`busybox:latest`).
pub fn familiar(reference: &str) -> String {
    berth_types::Reference::parse_normalized(reference)
        .map(|parsed| parsed.familiar_string())
        .unwrap_or_else(|_| reference.to_owned())
}

/// Repository and tag of a stored full reference, in Docker's familiar form.
pub(crate) fn familiar_parts(reference: &str) -> (String, String) {
    match berth_types::Reference::parse_normalized(reference) {
        Ok(parsed) => (
            parsed.familiar_name(),
            parsed.tag().unwrap_or("<none>").to_owned(),
        ),
        Err(_) => (reference.to_owned(), "<none>".to_owned()),
    }
}
