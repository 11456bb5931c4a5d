//! `history`: the image config's history, newest first, with each
//! non-empty entry matched to its layer's size.

use berth_store::{ImageRecord, Store};

use super::inspect::read_config;
use crate::EngineError;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryEntry {
    /// The image id on the newest entry only (Docker prints `<missing>` for
    /// the rest).
    pub id: Option<String>,
    pub created: Option<String>,
    pub created_by: String,
    pub size: u64,
    pub comment: String,
    pub tags: Vec<String>,
}

pub fn image_history(store: &Store, image: &ImageRecord) -> Result<Vec<HistoryEntry>, EngineError> {
    let config = read_config(store, image)?;
    let mut layer_sizes = image.layers.iter().map(|chain_id| {
        store
            .layer(chain_id)
            .ok()
            .flatten()
            .map_or(0, |layer| layer.size)
    });
    let mut entries: Vec<HistoryEntry> = config
        .history
        .iter()
        .map(|entry| HistoryEntry {
            id: None,
            created: entry.created.clone(),
            created_by: entry.created_by.clone().unwrap_or_default(),
            size: if entry.empty_layer {
                0
            } else {
                layer_sizes.next().unwrap_or(0)
            },
            comment: entry.comment.clone().unwrap_or_default(),
            tags: Vec::new(),
        })
        .collect();
    if entries.is_empty() {
        // No history recorded: one line per layer, as Docker shows.
        entries = layer_sizes
            .map(|size| HistoryEntry {
                id: None,
                created: image.created.clone(),
                created_by: String::new(),
                size,
                comment: String::new(),
                tags: Vec::new(),
            })
            .collect();
    }
    entries.reverse();
    if let Some(newest) = entries.first_mut() {
        newest.id = Some(image.id.to_string());
        newest.tags = image.tags.clone();
    }
    Ok(entries)
}
