//! `inspect` (containers first, then images, as Docker), `container inspect`.

use berth_engine::containers::{find_container, inspect_container};
use berth_engine::images::{inspect_image, resolve_image};
use berth_engine::Engine;
use clap::Args;

use crate::commands::output;

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Format output using a custom template ('json' or a Go template)
    #[arg(short, long)]
    pub format: Option<String>,
    /// Return JSON for specified type ("container" or "image")
    #[arg(long = "type", value_name = "type")]
    pub kind: Option<String>,
    /// Display total file sizes if the type is container
    #[arg(short, long)]
    pub size: bool,
    /// NAME|ID
    #[arg(required = true)]
    pub names: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Any,
    Container,
    Image,
}

pub fn run(engine: &Engine, args: &InspectArgs, kind: Kind) -> anyhow::Result<i32> {
    let kind = match (kind, args.kind.as_deref()) {
        (Kind::Any, Some("container")) => Kind::Container,
        (Kind::Any, Some("image")) => Kind::Image,
        (Kind::Any, Some(other)) => anyhow::bail!("\"{other}\" is not a valid value for --type"),
        (kind, _) => kind,
    };
    let config = engine.config().clone();
    let mut found = Vec::new();
    let mut status = 0;
    for name in &args.names {
        let container = if kind == Kind::Image {
            None
        } else {
            match find_container(engine.store(), &config, name) {
                Ok(container) => {
                    let mut value = inspect_container(engine.store(), &config, &container);
                    if args
                        .format
                        .as_deref()
                        .is_some_and(|format| format != "json")
                    {
                        typed_defaults(&mut value);
                    }
                    Some(value)
                }
                Err(error) if error.is_not_found() => None,
                Err(error) => return Err(error.into()),
            }
        };
        let value = match container {
            Some(value) => Some(value),
            None if kind != Kind::Container => match resolve_image(engine.store(), name) {
                Ok(image) => Some(inspect_image(engine.store(), &image)?),
                Err(error) if error.is_not_found() => None,
                Err(error) => return Err(error.into()),
            },
            None => None,
        };
        match value {
            Some(value) => found.push(value),
            None => {
                // Docker's wording per command.
                let message = match kind {
                    Kind::Any => format!("No such object: {name}"),
                    Kind::Container => format!("No such container: {name}"),
                    Kind::Image => format!("No such image: {name}"),
                };
                eprintln!("Error: {message}");
                status = crate::exit::FAILURE;
            }
        }
    }
    output::print_inspect(args.format.as_deref(), &found)?;
    Ok(status)
}

/// docker/cli hands a template the container decoded into its typed struct, where
/// `State.Health` (a pointer the JSON leaves out when unset) is there as nil:
/// `{{json .State.Health}}` is `null` for a container without a health check, not an error.
fn typed_defaults(container: &mut serde_json::Value) {
    if let Some(state) = container
        .get_mut("State")
        .and_then(serde_json::Value::as_object_mut)
    {
        state.entry("Health").or_insert(serde_json::Value::Null);
    }
}
