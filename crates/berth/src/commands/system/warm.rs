//! `warm IMAGE [--depth N]`, `warm ls`, `warm rm [IMAGE]`: the warm pool of
//! pre-built sandboxes that eligible runs start in.

use std::time::Duration;

use berth_engine::warm::{self, WarmSettings};
use chrono::{TimeZone, Utc};

use crate::cli::GlobalOptions;
use crate::commands::container::options::CreateOptions;
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
    /// Sandboxes of this isolation (default, or vm: booted microVMs), for
    /// runs with the same --isolation
    #[arg(long, value_name = "string", allow_hyphen_values = true)]
    pub isolation: Option<String>,
    /// Sandboxes connected to this network, for runs with the same --network
    #[arg(long, value_name = "network", allow_hyphen_values = true)]
    pub network: Option<String>,
    /// Sandboxes publishing these ports, for runs with the same -p (a fixed
    /// host port can be held by one sandbox only: use --depth 1)
    #[arg(short = 'p', long, value_name = "list", allow_hyphen_values = true)]
    pub publish: Vec<String>,
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
            let pool = pool_request(args, image)?;
            let made = warm::fill(&mut engine, &pool, depth, settings.ttl)?;
            for id in &made {
                println!("{}", &id[..12]);
            }
            Ok(0)
        }
    }
}

/// The members' request: `image` with the sandbox flags given, read by
/// `run`'s own option parser (its checks and Docker's words included),
/// and those flags again for the pool's refills.
fn pool_request(args: &WarmArgs, image: &str) -> anyhow::Result<warm::PoolRequest> {
    let mut flags = Vec::new();
    if let Some(isolation) = &args.isolation {
        flags.extend(["--isolation".to_owned(), isolation.clone()]);
    }
    if let Some(network) = &args.network {
        flags.extend(["--network".to_owned(), network.clone()]);
    }
    for publish in &args.publish {
        flags.extend(["--publish".to_owned(), publish.clone()]);
    }
    let options = CreateOptions {
        isolation: args.isolation.clone(),
        network: args.network.iter().cloned().collect(),
        publish: args.publish.clone(),
        image_and_command: vec![image.to_owned()],
        ..CreateOptions::default()
    };
    let (request, _) = options.to_create_request()?;
    Ok(warm::PoolRequest { request, flags })
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
    table.write_str("SANDBOX ID\tIMAGE\tISOLATION\tCREATED\tEXPIRES\tMEMORY\n");
    for member in &members {
        let created = Utc.timestamp_opt(member.created, 0).single().unwrap_or(now);
        let expires = created + chrono::Duration::from_std(member.ttl).unwrap_or_default();
        let left = (expires - now).to_std().unwrap_or(Duration::ZERO);
        table.write_str(&format!(
            "{}\t{}\t{}\t{}\tin {}\t{}\n",
            &member.id[..12],
            member.reference,
            member.isolation,
            human_duration_since(created, now),
            human_duration(left),
            human_size(member.memory),
        ));
    }
    print!("{}", table.finish());
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(isolation: Option<&str>, network: Option<&str>, publish: &[&str]) -> WarmArgs {
        WarmArgs {
            command: None,
            image: Some("busybox".to_owned()),
            depth: None,
            isolation: isolation.map(str::to_owned),
            network: network.map(str::to_owned),
            publish: publish.iter().map(|value| (*value).to_owned()).collect(),
        }
    }

    #[test]
    fn the_pools_flags_shape_its_members_and_its_refills() {
        let pool = pool_request(&args(None, None, &[]), "busybox").unwrap();
        assert!(pool.flags.is_empty());
        assert_eq!(pool.request.config.image, "busybox");
        let pool = pool_request(
            &args(Some("vm"), Some("none"), &["127.0.0.1::80"]),
            "busybox",
        )
        .unwrap();
        assert_eq!(
            pool.flags,
            [
                "--isolation",
                "vm",
                "--network",
                "none",
                "--publish",
                "127.0.0.1::80"
            ]
        );
        assert_eq!(pool.request.host_config.isolation, "vm");
        assert_eq!(pool.request.host_config.network_mode, "none");
        assert!(pool
            .request
            .host_config
            .port_bindings
            .as_ref()
            .is_some_and(|bindings| bindings.contains_key("80/tcp")));
        // `run`'s own checks, with its words.
        let error = pool_request(&args(Some("foo"), None, &[]), "busybox").unwrap_err();
        assert!(
            format!("{error:#}").contains("Invalid isolation: \"foo\""),
            "{error:#}"
        );
    }
}
