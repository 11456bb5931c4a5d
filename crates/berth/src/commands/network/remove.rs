//! `network rm` and `network prune`.

use berth_engine::containers::list_containers;
use berth_engine::networks::{all_networks, prune_networks, remove_network};
use berth_engine::Engine;
use clap::Args;

use super::filters::Filters;
use super::lookup_message;
use crate::exit::{StatusError, FAILURE, USAGE};

#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// NETWORK
    #[arg(required = true, value_name = "NETWORK")]
    pub names: Vec<String>,
}

#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Provide filter values (e.g. 'until=<timestamp>')
    #[arg(long = "filter", value_name = "filter")]
    pub filters: Vec<String>,
    /// Do not prompt for confirmation
    #[arg(short, long)]
    pub force: bool,
}

/// Each name in turn: the name printed when removed, the error when not;
/// exit 1 if any failed (docker's `runRemove`).
pub fn remove(engine: &mut Engine, args: &RemoveArgs) -> anyhow::Result<i32> {
    let mut status = 0;
    for name in &args.names {
        let (store, kernel) = engine.network_parts();
        match remove_network(store, kernel, name) {
            Ok(()) => println!("{name}"),
            Err(error) => {
                eprintln!("Error: {}", lookup_message(&error));
                status = FAILURE;
            }
        }
    }
    Ok(status)
}

/// Removes the user-defined networks no container lists (running or not:
/// a stopped container keeps its networks for its next start) that match
/// `--filter label=…|label!=…|until=…`. Prints nothing when none went.
pub fn prune(engine: &mut Engine, args: &PruneArgs) -> anyhow::Result<i32> {
    let filters = Filters::parse(&args.filters, "--filter").map_err(|message| StatusError {
        status: USAGE,
        message: format!("{message}\nSee 'berth network prune --help'."),
    })?;
    filters.validate(&["label", "label!", "until"])?;
    let until = match filters.get("until") {
        [] => None,
        [value] => Some(berth_engine::logs::parse_docker_time(
            value,
            &chrono::Utc::now(),
        )?),
        _ => anyhow::bail!("more than one until filter specified"),
    };
    if !args.force
        && !crate::commands::confirm(
            "WARNING! This will remove all custom networks not used by at least one container.",
        )?
    {
        return Ok(0);
    }

    let mut keep: Vec<String> = list_containers(engine.store(), engine.config())?
        .into_iter()
        .flat_map(|container| container.record.run.networks)
        .map(|request| request.network_id)
        .collect();
    // The engine prunes all but the networks it is told are in use; those
    // the filters spare are added to that list.
    let (store, kernel) = engine.network_parts();
    for network in all_networks(store, kernel)? {
        let labels = &network.record.labels;
        let excluded_by_label =
            filters.contains("label!") && filters.match_labels("label!", labels);
        let too_new = until.is_some_and(|until| {
            chrono::DateTime::parse_from_rfc3339(&network.created)
                .is_ok_and(|created| created > until)
        });
        if !filters.match_labels("label", labels) || excluded_by_label || too_new {
            keep.push(network.id);
        }
    }
    let removed = prune_networks(store, kernel, &keep)?;
    if !removed.is_empty() {
        println!("Deleted Networks:");
        for name in &removed {
            println!("{name}");
        }
        println!();
    }
    Ok(0)
}
