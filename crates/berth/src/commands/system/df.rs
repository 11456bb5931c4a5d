//! `system df`: what images, containers, volumes and the build cache hold
//! on disk, in Docker's table (`docker/cli` `formatter/disk_usage.go`).

use berth_engine::system::{disk_usage, UsageSummary};
use clap::Args;
use serde_json::{json, Value};

use crate::cli::GlobalOptions;
use crate::commands::output;
use crate::format::units::human_size_with_precision;

#[derive(Debug, Args)]
pub struct DfArgs {
    /// Format output using a custom template: 'table', 'table TEMPLATE', 'json', 'TEMPLATE'
    #[arg(long)]
    pub format: Option<String>,
}

const DEFAULT_TABLE: &str =
    "table {{.Type}}\t{{.TotalCount}}\t{{.Active}}\t{{.Size}}\t{{.Reclaimable}}";

const HEADERS: &[(&str, &str)] = &[
    ("Type", "TYPE"),
    ("TotalCount", "TOTAL"),
    ("Active", "ACTIVE"),
    ("Size", "SIZE"),
    ("Reclaimable", "RECLAIMABLE"),
];

pub fn run(global: &GlobalOptions, args: &DfArgs) -> anyhow::Result<i32> {
    let engine = crate::commands::open(global)?;
    let usage = disk_usage(&engine)?;
    let rows = [
        row("Images", &usage.images),
        row("Containers", &usage.containers),
        row("Local Volumes", &usage.volumes),
        row("Build Cache", &usage.build_cache),
    ];
    print!(
        "{}",
        output::render_rows(args.format.as_deref(), DEFAULT_TABLE, &rows, HEADERS)?
    );
    Ok(0)
}

fn row(kind: &str, usage: &UsageSummary) -> Value {
    json!({
        "Type": kind,
        "TotalCount": usage.total.to_string(),
        "Active": usage.active.to_string(),
        "Size": size(usage.size),
        "Reclaimable": reclaimable(usage),
    })
}

/// go-units `HumanSize`: four significant digits (`1.985MB`), unlike the
/// three of `docker images`.
fn size(bytes: u64) -> String {
    human_size_with_precision(bytes, 4)
}

/// `1.985MB (100%)`; the percentage (rounded down) only when there is
/// anything at all.
fn reclaimable(usage: &UsageSummary) -> String {
    if usage.size == 0 {
        return size(usage.reclaimable);
    }
    let percent = u128::from(usage.reclaimable) * 100 / u128::from(usage.size);
    format!("{} ({percent}%)", size(usage.reclaimable))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_as_docker_prints_them() {
        let usage = UsageSummary {
            total: 4,
            active: 0,
            size: 1_985_000,
            reclaimable: 1_985_000,
        };
        assert_eq!(reclaimable(&usage), "1.985MB (100%)");
        assert_eq!(reclaimable(&UsageSummary::default()), "0B");
        let half = UsageSummary {
            size: 3,
            reclaimable: 1,
            ..usage
        };
        assert_eq!(reclaimable(&half), "1B (33%)");
    }
}
