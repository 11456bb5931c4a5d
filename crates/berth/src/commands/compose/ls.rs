//! `berth compose ls`: the projects that have containers, from compose's labels (no file
//! needed), as `docker compose ls` lists them.

use std::collections::BTreeMap;

use berth_compose::converge::labels;
use berth_engine::containers::list_containers;
use clap::Args;
use serde_json::json;

use crate::cli::GlobalOptions;
use crate::commands::output;

#[derive(Debug, Args)]
pub struct LsArgs {
    /// Show all stopped Compose projects
    #[arg(short, long)]
    pub all: bool,
    /// Only display project names
    #[arg(short, long)]
    pub quiet: bool,
    /// Format the output. Values: [table | json]
    #[arg(long, default_value = "table", value_parser = ["table", "json"])]
    pub format: String,
}

#[derive(Default)]
struct Listed {
    states: BTreeMap<String, usize>,
    files: String,
}

pub fn run(global: &GlobalOptions, args: &LsArgs) -> anyhow::Result<i32> {
    let engine = crate::commands::open(global)?;
    let mut projects: BTreeMap<String, Listed> = BTreeMap::new();
    for container in list_containers(engine.store(), engine.config())? {
        let container_labels = &container.record.run.labels;
        let Some(project) = container_labels.get(labels::PROJECT) else {
            continue;
        };
        let entry = projects.entry(project.clone()).or_default();
        *entry
            .states
            .entry(container.state.status.as_str().to_owned())
            .or_default() += 1;
        if let Some(files) = container_labels.get(labels::CONFIG_FILES) {
            entry.files.clone_from(files);
        }
    }
    let rows: Vec<_> = projects
        .iter()
        .filter(|(_, listed)| args.all || listed.states.contains_key("running"))
        .map(|(name, listed)| {
            let status = listed
                .states
                .iter()
                .map(|(state, count)| format!("{state}({count})"))
                .collect::<Vec<_>>()
                .join(", ");
            json!({"Name": name, "Status": status, "ConfigFiles": listed.files})
        })
        .collect();
    if args.quiet {
        for row in &rows {
            println!("{}", row["Name"].as_str().unwrap_or_default());
        }
        return Ok(0);
    }
    if args.format == "json" {
        println!("{}", serde_json::to_string(&rows)?);
        return Ok(0);
    }
    print!(
        "{}",
        output::render_rows(
            None,
            "table {{.Name}}\t{{.Status}}\t{{.ConfigFiles}}",
            &rows,
            &[
                ("Name", "NAME"),
                ("Status", "STATUS"),
                ("ConfigFiles", "CONFIG FILES")
            ],
        )?
    );
    Ok(0)
}
