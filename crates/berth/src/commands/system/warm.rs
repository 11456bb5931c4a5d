//! `warm IMAGE [--depth N]`, `warm ls`, `warm rm [IMAGE]`: the warm pool of
//! pre-built sandboxes that eligible runs start in.

use std::time::Duration;

use berth_engine::warm::{self, WarmSettings};
use chrono::{TimeZone, Utc};

use crate::cli::GlobalOptions;
use crate::commands::open;
use crate::format::tabwriter::TabWriter;
use crate::format::units::{human_duration, human_duration_since, human_size};

#[derive(Debug, clap::Args)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "Environment: BERTH_WARM=auto|on|off (runs use pools that exist / also start \
                  pools for every image run / never), BERTH_WARM_DEPTH (default 2), \
                  BERTH_WARM_TTL (idle members end after it, default 10m)."
)]
pub struct WarmArgs {
    #[command(subcommand)]
    pub command: Option<WarmCommand>,
    /// Keep sandboxes of this image ready
    #[arg(required = true)]
    pub image: Option<String>,
    /// How many sandboxes to keep ready (default: BERTH_WARM_DEPTH or 2)
    #[arg(long)]
    pub depth: Option<String>,
}

#[derive(Debug, clap::Subcommand)]
pub enum WarmCommand {
    /// List the ready sandboxes and the memory each holds
    Ls(WarmLsArgs),
    /// Remove the ready sandboxes of an image (all without IMAGE)
    Rm(WarmRmArgs),
}

#[derive(Debug, clap::Args)]
pub struct WarmLsArgs {
    /// Only display sandbox IDs
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Debug, clap::Args)]
pub struct WarmRmArgs {
    pub image: Option<String>,
}

pub fn run(global: &GlobalOptions, args: &WarmArgs) -> anyhow::Result<i32> {
    let settings = WarmSettings::from_env()?;
    let mut engine = open(global)?;
    match &args.command {
        Some(WarmCommand::Ls(ls)) => list(&mut engine, ls),
        Some(WarmCommand::Rm(rm)) => {
            let removed = warm::remove(&mut engine, rm.image.as_deref())?;
            println!("{removed}");
            Ok(0)
        }
        None => {
            let image = args
                .image
                .as_deref()
                .ok_or_else(|| anyhow::anyhow!("berth warm needs an IMAGE"))?;
            let depth = match &args.depth {
                Some(text) => warm::parse_depth(text)?,
                None => settings.depth,
            };
            let made = warm::fill(&mut engine, image, depth, settings.ttl)?;
            for id in &made {
                println!("{}", &id[..12]);
            }
            Ok(0)
        }
    }
}

fn list(engine: &mut berth_engine::Engine, args: &WarmLsArgs) -> anyhow::Result<i32> {
    let members = warm::list(engine)?;
    if args.quiet {
        for member in &members {
            println!("{}", &member.id[..12]);
        }
        return Ok(0);
    }
    let now = Utc::now();
    let mut table = TabWriter::docker();
    table.write_str("SANDBOX ID\tIMAGE\tCREATED\tEXPIRES\tMEMORY\n");
    for member in &members {
        let created = Utc.timestamp_opt(member.created, 0).single().unwrap_or(now);
        let expires = created + chrono::Duration::from_std(member.ttl).unwrap_or_default();
        let left = (expires - now).to_std().unwrap_or(Duration::ZERO);
        table.write_str(&format!(
            "{}\t{}\t{}\tin {}\t{}\n",
            &member.id[..12],
            member.reference,
            human_duration_since(created, now),
            human_duration(left),
            human_size(member.memory),
        ));
    }
    print!("{}", table.finish());
    Ok(0)
}
