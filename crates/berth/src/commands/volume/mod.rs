//! `berth volume create|ls|inspect|rm|prune`.

use std::collections::BTreeMap;

use berth_engine::volumes::{
    create_volume, find_volume, prune_volumes, remove_volume, volume_json,
};
use berth_engine::Engine;
use clap::{Args, Subcommand};
use serde_json::json;

use crate::commands::output;
use crate::format::units::human_size;

#[derive(Debug, Subcommand)]
pub enum VolumeCommand {
    /// Create a volume
    Create(CreateArgs),
    /// List volumes
    #[command(visible_alias = "list")]
    Ls(ListArgs),
    /// Display detailed information on one or more volumes
    Inspect(InspectArgs),
    /// Remove one or more volumes
    #[command(visible_alias = "remove")]
    Rm(RemoveArgs),
    /// Remove unused local volumes
    Prune(PruneArgs),
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Specify volume driver name
    #[arg(short, long, default_value = "local")]
    pub driver: String,
    /// Set metadata for a volume
    #[arg(long = "label", value_name = "list")]
    pub labels: Vec<String>,
    /// Set driver specific options
    #[arg(short, long = "opt", value_name = "map")]
    pub options: Vec<String>,
    /// VOLUME (a random name when omitted)
    pub name: Option<String>,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only display volume names
    #[arg(short, long)]
    pub quiet: bool,
    /// Provide filter values (e.g. "dangling=true")
    #[arg(short, long = "filter", value_name = "filter")]
    pub filters: Vec<String>,
    /// Format output using a custom template
    #[arg(long)]
    pub format: Option<String>,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Format output using a custom template
    #[arg(short, long)]
    pub format: Option<String>,
    /// VOLUME
    #[arg(required = true)]
    pub names: Vec<String>,
}

#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// Force the removal of one or more volumes
    #[arg(short, long)]
    pub force: bool,
    /// VOLUME
    #[arg(required = true)]
    pub names: Vec<String>,
}

#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Remove all unused volumes, not just anonymous ones
    #[arg(short, long)]
    pub all: bool,
    /// Do not prompt for confirmation
    #[arg(short, long)]
    pub force: bool,
}

/// `KEY=VALUE` flags as the docker CLI's map options read them (a bare
/// `KEY` has an empty value; a later key wins).
fn key_value_map(pairs: &[String]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (key.to_owned(), value.to_owned())
        })
        .collect()
}

pub fn run(engine: &mut Engine, command: &VolumeCommand) -> anyhow::Result<i32> {
    match command {
        VolumeCommand::Create(args) => {
            let labels = key_value_map(&args.labels);
            let options = key_value_map(&args.options);
            let name = args
                .name
                .clone()
                .unwrap_or_else(berth_engine::containers::names::new_id);
            berth_engine::volumes::check_driver(&name, &args.driver)?;
            let row = create_volume(engine, &name, &labels, &options, args.name.is_none())?;
            println!("{}", row.name);
            Ok(0)
        }
        VolumeCommand::Ls(args) => list(engine, args),
        VolumeCommand::Inspect(args) => {
            let mut found = Vec::new();
            let mut status = 0;
            for name in &args.names {
                match find_volume(engine, name) {
                    Ok(row) => found.push(volume_json(engine, &row)),
                    Err(error) => {
                        eprintln!("Error: {}", berth_engine::ErrorChain(&error));
                        status = crate::exit::FAILURE;
                    }
                }
            }
            output::print_inspect(args.format.as_deref(), &found)?;
            Ok(status)
        }
        VolumeCommand::Rm(args) => {
            let mut status = 0;
            for name in &args.names {
                match remove_volume(engine, name, args.force) {
                    Ok(()) => println!("{name}"),
                    Err(error) => {
                        eprintln!("Error: {}", berth_engine::ErrorChain(&error));
                        status = crate::exit::FAILURE;
                    }
                }
            }
            Ok(status)
        }
        VolumeCommand::Prune(args) => {
            if !args.force && !crate::commands::confirm("WARNING! This will remove anonymous local volumes not used by at least one container.")? {
                return Ok(0);
            }
            let (removed, reclaimed) = prune_volumes(engine, args.all)?;
            if !removed.is_empty() {
                println!("Deleted Volumes:");
                for name in &removed {
                    println!("{name}");
                }
                println!();
            }
            println!("Total reclaimed space: {}", human_size(reclaimed));
            Ok(0)
        }
    }
}

fn list(engine: &Engine, args: &ListArgs) -> anyhow::Result<i32> {
    let mut dangling = None;
    let mut name_filter = None;
    let mut label_filters: Vec<String> = Vec::new();
    for filter in &args.filters {
        match filter.split_once('=') {
            Some(("dangling", value)) => dangling = Some(value == "true" || value == "1"),
            Some(("name", value)) => name_filter = Some(value.to_owned()),
            Some(("label", value)) => label_filters.push(value.to_owned()),
            Some((key, _)) => anyhow::bail!("Invalid filter '{key}'"),
            None => anyhow::bail!("bad format of filter (expected name=value)"),
        }
    }
    let mut rows = Vec::new();
    for row in engine.store().volumes()? {
        if let Some(wanted) = dangling {
            let unused = berth_engine::volumes::volume_users(engine, &row.name)?.is_empty();
            if unused != wanted {
                continue;
            }
        }
        if name_filter
            .as_ref()
            .is_some_and(|wanted| !row.name.contains(wanted.as_str()))
        {
            continue;
        }
        let labels: std::collections::BTreeMap<String, String> =
            serde_json::from_str(&row.labels).unwrap_or_default();
        let labels_match = label_filters
            .iter()
            .all(|filter| match filter.split_once('=') {
                Some((key, value)) => labels.get(key).is_some_and(|actual| actual == value),
                None => labels.contains_key(filter),
            });
        if !labels_match {
            continue;
        }
        rows.push(row);
    }
    if args.quiet {
        for row in &rows {
            println!("{}", row.name);
        }
        return Ok(0);
    }
    let values: Vec<_> = rows
        .iter()
        .map(|row| {
            json!({
                "Driver": row.driver,
                "Labels": row.labels,
                "Links": "N/A",
                "Mountpoint": berth_engine::volumes::volume_data(engine.root(), &row.name),
                "Name": row.name,
                "Scope": "local",
                "Size": "N/A",
            })
        })
        .collect();
    let headers = [
        ("Driver", "DRIVER"),
        ("Name", "VOLUME NAME"),
        ("Mountpoint", "MOUNTPOINT"),
        ("Scope", "SCOPE"),
    ];
    print!(
        "{}",
        output::render_rows(
            args.format.as_deref(),
            "table {{.Driver}}\t{{.Name}}",
            &values,
            &headers
        )?
    );
    Ok(0)
}
