//! `image prune`.

use std::io::{BufRead, Write};

use berth_engine::images::{prune_images, RemovalEvent};
use berth_engine::Engine;
use clap::Args;

use crate::format::units::human_size_with_precision;

#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Remove all unused images, not just dangling ones
    #[arg(short, long)]
    pub all: bool,
    /// Do not prompt for confirmation
    #[arg(short, long)]
    pub force: bool,
}

pub fn run(engine: &mut Engine, args: &PruneArgs) -> anyhow::Result<i32> {
    if !args.force {
        let warning = if args.all {
            "WARNING! This will remove all images without at least one container associated to them."
        } else {
            "WARNING! This will remove all dangling images."
        };
        print!("{warning}\nAre you sure you want to continue? [y/N] ");
        std::io::stdout().flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes" | "Yes") {
            return Ok(0);
        }
    }
    let report = prune_images(engine.store_mut(), args.all)?;
    if !report.events.is_empty() {
        println!("Deleted Images:");
        for event in &report.events {
            match event {
                RemovalEvent::Untagged(reference) => println!("untagged: {reference}"),
                RemovalEvent::Deleted(digest) => println!("deleted: {digest}"),
            }
        }
        println!();
    }
    // go-units `HumanSize`: four significant digits, as docker/cli prints it.
    println!(
        "Total reclaimed space: {}",
        human_size_with_precision(report.reclaimed, 4)
    );
    Ok(0)
}
