//! `inspect` / `image inspect`.

use berth_engine::images::{inspect_image, resolve_image};
use berth_engine::Engine;
use clap::Args;

use crate::commands::output;

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Format output using a custom template ('json' or a Go template)
    #[arg(short, long)]
    pub format: Option<String>,
    /// Return JSON for specified type (only "image" exists so far)
    #[arg(long = "type", value_name = "type")]
    pub kind: Option<String>,
    /// Display total file sizes if the type is container
    #[arg(short, long)]
    pub size: bool,
    /// NAME|ID
    #[arg(required = true)]
    pub names: Vec<String>,
}

pub fn run(engine: &Engine, args: &InspectArgs) -> anyhow::Result<i32> {
    if let Some(kind) = args.kind.as_deref() {
        anyhow::ensure!(
            kind == "image",
            "\"{kind}\" is not a valid value for --type"
        );
    }
    let mut found = Vec::new();
    let mut status = 0;
    for name in &args.names {
        match resolve_image(engine.store(), name) {
            Ok(image) => found.push(inspect_image(engine.store(), &image)?),
            Err(error) if error.is_not_found() => {
                // Docker names the image as typed, not normalised.
                eprintln!("Error: No such image: {name}");
                status = crate::exit::FAILURE;
            }
            Err(error) => return Err(error.into()),
        }
    }
    output::print_inspect(args.format.as_deref(), &found)?;
    Ok(status)
}
