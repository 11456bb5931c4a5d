//! `pull`.

use std::io::IsTerminal;

use berth_engine::images::pull::{
    parse_pull_reference, pull_all_tags, pull_image, resolve_concurrency, PullEvent, PullRequest,
    PulledImage, RegistrySettings,
};
use berth_engine::Engine;
use clap::Args;

use super::progress::ProgressDisplay;

/// Environment variable for the number of parallel layer downloads.
const CONCURRENCY_VARIABLE: &str = "BERTH_PULL_CONCURRENCY";

#[derive(Debug, Args)]
pub struct PullArgs {
    /// Download all tagged images in the repository
    #[arg(short = 'a', long)]
    pub all_tags: bool,
    /// Skip image verification
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub disable_content_trust: Option<String>,
    /// Set platform if server is multi-platform capable
    #[arg(long, value_name = "string")]
    pub platform: Option<String>,
    /// Suppress verbose output
    #[arg(short, long)]
    pub quiet: bool,
    /// Layers downloaded at once (default 8, or $BERTH_PULL_CONCURRENCY; 1 to 32)
    #[arg(long, value_name = "int")]
    pub max_concurrent_downloads: Option<usize>,
    #[arg(value_name = "NAME[:TAG|@DIGEST]")]
    pub name: String,
}

/// Where the progress goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressTarget {
    Stdout,
    Stderr,
    Nowhere,
}

pub fn run(engine: &mut Engine, args: &PullArgs) -> anyhow::Result<i32> {
    let target = if args.quiet {
        ProgressTarget::Nowhere
    } else {
        ProgressTarget::Stdout
    };
    if args.all_tags {
        let request = request(
            &args.name,
            args.platform.as_deref(),
            args.max_concurrent_downloads,
        )?;
        let display = display(target);
        let pulled = pull_all_tags(engine.store_mut(), &request, &|event| {
            show(display.as_ref(), event)
        })?;
        // docker/cli prints the repository pulled, without tag.
        println!("{}", pulled.name);
        return Ok(0);
    }
    let pulled = pull(
        engine,
        &args.name,
        args.platform.as_deref(),
        args.max_concurrent_downloads,
        target,
    )?;
    println!("{}", pulled.reference);
    Ok(0)
}

/// Pulls `name` with progress to `target` (`run` and `create` show it on
/// stderr, as Docker).
pub fn pull(
    engine: &mut Engine,
    name: &str,
    platform: Option<&str>,
    concurrency: Option<usize>,
    target: ProgressTarget,
) -> anyhow::Result<PulledImage> {
    let reference = parse_pull_reference(name)?;
    let request = request(name, platform, concurrency)?;
    let display = display(target);
    if let Some(display) = display
        .as_ref()
        .filter(|_| target == ProgressTarget::Stdout)
    {
        // `docker pull`'s notice (not `run`'s) when the name has neither
        // tag nor digest.
        if name_has_no_tag(name) && reference.tag().is_some() {
            display.note("Using default tag: latest");
        }
    }
    let pulled = pull_image(engine.store_mut(), &request, &|event| {
        show(display.as_ref(), event)
    })?;
    // Warm pool members of what the name meant before are retired.
    berth_engine::warm::retire_reference(engine, name);
    Ok(pulled)
}

fn request(
    name: &str,
    platform: Option<&str>,
    concurrency: Option<usize>,
) -> anyhow::Result<PullRequest> {
    Ok(PullRequest {
        reference: name.to_owned(),
        platform: platform.map(str::to_owned),
        concurrency: resolve_concurrency(
            concurrency,
            std::env::var(CONCURRENCY_VARIABLE).ok().as_deref(),
        ),
        settings: RegistrySettings::load(&berth_engine::config_file())?,
    })
}

fn display(target: ProgressTarget) -> Option<ProgressDisplay> {
    match target {
        ProgressTarget::Stdout => Some(ProgressDisplay::new(
            Box::new(std::io::stdout()),
            std::io::stdout().is_terminal(),
        )),
        ProgressTarget::Stderr => Some(ProgressDisplay::new(
            Box::new(std::io::stderr()),
            std::io::stderr().is_terminal(),
        )),
        ProgressTarget::Nowhere => None,
    }
}

fn show(display: Option<&ProgressDisplay>, event: PullEvent) {
    if let Some(display) = display {
        display.pull(event);
    }
}

fn name_has_no_tag(name: &str) -> bool {
    berth_types::Reference::parse_normalized(name).is_ok_and(|parsed| parsed.is_name_only())
}
