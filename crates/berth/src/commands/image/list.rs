//! `images` / `image ls`.

use berth_engine::images::{list_images, ListOptions};
use berth_engine::Engine;
use clap::Args;
use serde_json::json;

use crate::commands::output;
use crate::format::units::human_size;

#[derive(Debug, Args)]
pub struct ImagesArgs {
    /// Show all images (default hides intermediate images)
    #[arg(short, long)]
    pub all: bool,
    /// Only show image IDs
    #[arg(short, long)]
    pub quiet: bool,
    /// Show digests
    #[arg(long)]
    pub digests: bool,
    /// Don't truncate output
    #[arg(long)]
    pub no_trunc: bool,
    /// Filter output based on conditions provided (dangling=true|false, reference=PATTERN,
    /// label=KEY[=VALUE], before=IMAGE, since=IMAGE)
    #[arg(short, long = "filter", value_name = "filter")]
    pub filters: Vec<String>,
    /// Format output using a custom template: 'table', 'table TEMPLATE', 'json', 'TEMPLATE'
    #[arg(long)]
    pub format: Option<String>,
    /// REPOSITORY[:TAG]
    pub repository: Option<String>,
}

const DEFAULT_TABLE: &str =
    "table {{.Repository}}\t{{.Tag}}\t{{.ID}}\t{{.CreatedSince}}\t{{.Size}}";
const DIGESTS_TABLE: &str =
    "table {{.Repository}}\t{{.Tag}}\t{{.Digest}}\t{{.ID}}\t{{.CreatedSince}}\t{{.Size}}";

pub fn run(engine: &Engine, args: &ImagesArgs) -> anyhow::Result<i32> {
    let mut options = ListOptions {
        all: args.all,
        repository: args.repository.clone(),
        ..ListOptions::default()
    };
    for filter in &args.filters {
        match filter.split_once('=') {
            Some(("dangling", value)) => options.dangling = Some(parse_bool(value)?),
            Some(("reference", value)) => options.references.push(value.to_owned()),
            Some(("label", value)) => options.labels.push(value.to_owned()),
            Some(("before", value)) => options.before = Some(value.to_owned()),
            Some(("since", value)) => options.since = Some(value.to_owned()),
            // Docker's words (the daemon's, as its CLI prints them).
            Some((key, _)) => anyhow::bail!("Invalid filter '{key}'"),
            None => anyhow::bail!("bad format of filter (expected name=value)"),
        }
    }
    let images = list_images(engine.store(), &options)?;
    if args.quiet {
        let mut seen = std::collections::BTreeSet::new();
        for image in &images {
            if seen.insert(image.id.clone()) {
                println!(
                    "{}",
                    if args.no_trunc {
                        image.id.to_string()
                    } else {
                        image.id.short().to_owned()
                    }
                );
            }
        }
        return Ok(0);
    }
    let rows: Vec<_> = images
        .iter()
        .map(|image| {
            let (created_at, created_since) = super::created_at(image.created.as_deref());
            let id = if args.no_trunc {
                image.id.to_string()
            } else {
                image.id.short().to_owned()
            };
            json!({
                "Containers": "N/A",
                "CreatedAt": created_at,
                "CreatedSince": created_since,
                "Digest": image.digest.clone().unwrap_or_else(|| "<none>".to_owned()),
                "ID": id,
                "Repository": image.repository,
                "SharedSize": "N/A",
                "Size": human_size(image.size),
                "Tag": image.tag,
                "UniqueSize": "N/A",
                "VirtualSize": human_size(image.size),
            })
        })
        .collect();
    let default = if args.digests {
        DIGESTS_TABLE
    } else {
        DEFAULT_TABLE
    };
    print!(
        "{}",
        output::render_rows(args.format.as_deref(), default, &rows, &[])?
    );
    Ok(0)
}

fn parse_bool(value: &str) -> anyhow::Result<bool> {
    match value {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => anyhow::bail!("Invalid filter 'dangling=[{value}]'"),
    }
}
