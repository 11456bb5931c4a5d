//! `history`.

use berth_engine::images::{image_history, resolve_image};
use berth_engine::Engine;
use clap::Args;
use serde_json::json;

use crate::commands::output;
use crate::format::units::human_size;

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Print sizes and dates in human readable format
    #[arg(short = 'H', long, default_value_t = true, action = clap::ArgAction::Set)]
    pub human: bool,
    /// Don't truncate output
    #[arg(long)]
    pub no_trunc: bool,
    /// Only show image IDs
    #[arg(short, long)]
    pub quiet: bool,
    /// Format output using a custom template
    #[arg(long)]
    pub format: Option<String>,
    /// IMAGE
    pub image: String,
}

const DEFAULT_TABLE: &str =
    "table {{.ID}}\t{{.CreatedSince}}\t{{.CreatedBy}}\t{{.Size}}\t{{.Comment}}";

pub fn run(engine: &Engine, args: &HistoryArgs) -> anyhow::Result<i32> {
    let image = resolve_image(engine.store(), &args.image)?;
    let entries = image_history(engine.store(), &image)?;
    let short_id = |id: &Option<String>| match id {
        Some(id) if args.no_trunc => id.clone(),
        Some(id) => id.trim_start_matches("sha256:").chars().take(12).collect(),
        None => "<missing>".to_owned(),
    };
    if args.quiet {
        for entry in &entries {
            println!("{}", short_id(&entry.id));
        }
        return Ok(0);
    }
    let rows: Vec<_> = entries
        .iter()
        .map(|entry| {
            let (created_at, created_since) = super::created_at(entry.created.as_deref());
            let created_by = if args.no_trunc {
                entry.created_by.clone()
            } else {
                truncate(&entry.created_by, 45)
            };
            json!({
                "ID": short_id(&entry.id),
                "CreatedAt": if args.human { created_at.clone() } else { entry.created.clone().unwrap_or_default() },
                "CreatedSince": if args.human { created_since } else { entry.created.clone().unwrap_or_default() },
                "CreatedBy": created_by,
                "Size": if args.human { human_size(entry.size) } else { entry.size.to_string() },
                "Comment": entry.comment,
            })
        })
        .collect();
    print!(
        "{}",
        output::render_rows(
            args.format.as_deref(),
            DEFAULT_TABLE,
            &rows,
            &[("ID", "IMAGE")]
        )?
    );
    Ok(0)
}

/// Docker's `stringutils.Ellipsis`: at most `width` characters, the last
/// one an ellipsis when cut.
fn truncate(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(width - 1).collect();
    cut.push('…');
    cut
}
