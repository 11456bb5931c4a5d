//! `push`.

use std::io::IsTerminal;

use berth_engine::images::pull::RegistrySettings;
use berth_engine::images::push::{push_image, PushRequest};
use berth_engine::Engine;
use clap::Args;

use super::progress::ProgressDisplay;

#[derive(Debug, Args)]
pub struct PushArgs {
    /// Skip image signing
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub disable_content_trust: Option<String>,
    /// Suppress verbose output
    #[arg(short, long)]
    pub quiet: bool,
    #[arg(value_name = "NAME[:TAG]")]
    pub name: String,
}

pub fn run(engine: &mut Engine, args: &PushArgs) -> anyhow::Result<i32> {
    let display = (!args.quiet).then(|| {
        ProgressDisplay::new(Box::new(std::io::stdout()), std::io::stdout().is_terminal())
    });
    let name_only = berth_types::Reference::parse_normalized(&args.name)
        .is_ok_and(|parsed| parsed.is_name_only());
    if name_only {
        if let Some(display) = &display {
            display.note("Using default tag: latest");
        }
    }
    let request = PushRequest {
        reference: args.name.clone(),
        settings: RegistrySettings::load(&berth_engine::config_file())?,
    };
    let pushed = push_image(engine.store_mut(), &request, &|event| {
        if let Some(display) = &display {
            display.push(event);
        }
    })?;
    if args.quiet {
        println!("{}", pushed.reference);
    }
    Ok(0)
}
