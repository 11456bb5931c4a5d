//! `berth image …` and the top-level aliases (`images`, `rmi`, `load`, …).

pub mod build;
mod build_plain;
mod build_tty;
pub mod history;
pub mod import;
pub mod inspect;
pub mod list;
pub mod load;
pub mod progress;
pub mod prune;
pub mod pull;
pub mod push;
pub mod remove;
pub mod save;
pub mod tag;

pub use build::BuildArgs;
pub use history::HistoryArgs;
pub use import::ImportArgs;
pub use inspect::InspectArgs;
pub use list::ImagesArgs;
pub use load::LoadArgs;
pub use prune::PruneArgs;
pub use pull::PullArgs;
pub use push::PushArgs;
pub use remove::RmiArgs;
pub use save::SaveArgs;
pub use tag::TagArgs;

/// Docker's `CreatedAt` text: `2024-01-01 00:00:00 +0000 UTC`.
pub(crate) fn created_at(created: Option<&str>) -> (String, String) {
    let parsed = created.and_then(|text| chrono::DateTime::parse_from_rfc3339(text).ok());
    match parsed {
        Some(time) => {
            let utc = time.with_timezone(&chrono::Utc);
            (
                utc.format("%Y-%m-%d %H:%M:%S +0000 UTC").to_string(),
                crate::format::units::human_duration_since(utc, chrono::Utc::now()),
            )
        }
        None => ("N/A".to_owned(), "N/A".to_owned()),
    }
}
