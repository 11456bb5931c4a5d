//! `berth compose config`: the normalised project, as docker compose v2 prints it.

use clap::Args;

use super::ComposeArgs;

#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Print the service names, one per line
    #[arg(long)]
    pub services: bool,
    /// Print the volume names, one per line
    #[arg(long)]
    pub volumes: bool,
    /// Print the profile names, one per line
    #[arg(long)]
    pub profiles: bool,
    /// Format the output. Values: [yaml | json]
    #[arg(long, default_value = "yaml", value_parser = ["yaml", "json"])]
    pub format: String,
    /// Only validate the configuration, don't print anything
    #[arg(short, long)]
    pub quiet: bool,
    /// Save to file (default to stdout)
    #[arg(short, long, value_name = "string")]
    pub output: Option<std::path::PathBuf>,
}

pub fn run(compose: &ComposeArgs, args: &ConfigArgs) -> anyhow::Result<i32> {
    let project = super::load(compose)?;
    if args.quiet {
        return Ok(0);
    }
    let text = if args.services {
        // Dependencies first, as compose lists them (its order among independent services is
        // a Go map's, so berth sorts those by name).
        let levels = berth_compose::graph::levels(&project.services())?;
        lines(levels.iter().flatten())
    } else if args.volumes {
        let volumes = project
            .model
            .get("volumes")
            .and_then(serde_json::Value::as_object)
            .map(|volumes| volumes.keys().cloned().collect::<Vec<_>>())
            .unwrap_or_default();
        lines(volumes.iter())
    } else if args.profiles {
        lines(project.all_profiles.iter())
    } else if args.format == "json" {
        berth_compose::render::json(&project.model)
    } else {
        berth_compose::render::yaml(&project.model)
    };
    match &args.output {
        Some(path) => fs_err::write(path, text)?,
        None => print!("{text}"),
    }
    Ok(0)
}

fn lines<'a>(names: impl Iterator<Item = &'a String>) -> String {
    names.map(|name| format!("{name}\n")).collect()
}
