//! `berth compose ps`: the project's containers, as docker compose v2 lists them.

use berth_compose::converge::containers::project_containers;
use berth_engine::containers::{published_ports, status_text};
use clap::Args;
use serde_json::json;

use super::ComposeArgs;
use crate::cli::GlobalOptions;
use crate::commands::output;
use crate::format::units::human_duration;

#[derive(Debug, Args)]
pub struct PsArgs {
    /// Show all stopped containers (including those created by the run command)
    #[arg(short, long)]
    pub all: bool,
    /// Only display IDs
    #[arg(short, long)]
    pub quiet: bool,
    /// Display services
    #[arg(long)]
    pub services: bool,
    /// Format output using a custom template: 'table' (default), 'json', or a Go template
    #[arg(long, value_name = "string")]
    pub format: Option<String>,
    /// Filter services by status. Values: [paused | restarting | removing | running | dead | created | exited]
    #[arg(long, value_name = "stringArray")]
    pub status: Vec<String>,
    /// SERVICE
    pub service_names: Vec<String>,
}

const DEFAULT_TABLE: &str =
    "table {{.Name}}\t{{.Image}}\t{{.Command}}\t{{.Service}}\t{{.RunningFor}}\t{{.Status}}\t{{.Ports}}";

const HEADERS: &[(&str, &str)] = &[
    ("Name", "NAME"),
    ("Image", "IMAGE"),
    ("Command", "COMMAND"),
    ("Service", "SERVICE"),
    ("RunningFor", "CREATED"),
    ("Status", "STATUS"),
    ("Ports", "PORTS"),
    ("ID", "CONTAINER ID"),
    ("State", "STATE"),
];

pub fn run(global: &GlobalOptions, compose: &ComposeArgs, args: &PsArgs) -> anyhow::Result<i32> {
    let project = super::load_or_name(compose)?;
    let engine = crate::commands::open(global)?;
    let mut containers = project_containers(&engine, &project.name)?;
    containers.retain(|c| {
        (args.all || c.container.state.is_running() || !args.status.is_empty())
            && (args.all || !c.oneoff)
            && (args.service_names.is_empty() || args.service_names.contains(&c.service))
            && (args.status.is_empty()
                || args
                    .status
                    .iter()
                    .any(|status| status == c.container.state.status.as_str()))
    });
    if args.quiet {
        for container in &containers {
            println!("{}", container.id);
        }
        return Ok(0);
    }
    if args.services {
        let mut services: Vec<&str> = containers.iter().map(|c| c.service.as_str()).collect();
        services.dedup();
        for service in services {
            println!("{service}");
        }
        return Ok(0);
    }
    let now = chrono::Utc::now();
    let rows: Vec<_> = containers
        .iter()
        .map(|c| {
            let record = &c.container.record;
            let command = record.run.args.join(" ");
            let shown = if command.chars().count() > 20 {
                format!("{}…", command.chars().take(19).collect::<String>())
            } else {
                command.clone()
            };
            let (created_at, running_for) =
                crate::commands::image::created_at(Some(&record.created));
            let ports = published_ports(engine.store(), &c.container)
                .iter()
                .map(|port| {
                    format!(
                        "{}:{}->{}/{}",
                        port.host_ip, port.host_port, port.container_port, port.protocol
                    )
                })
                .collect::<Vec<_>>()
                .join(", ");
            json!({
                "ID": c.id,
                "Name": c.name,
                "Names": c.name,
                "Image": record.image_name,
                "Command": format!("\"{shown}\""),
                "Project": project.name,
                "Service": c.service,
                "CreatedAt": created_at,
                "RunningFor": running_for,
                "State": c.container.state.status.as_str(),
                "Health": c.container.state.health_status().map(|h| h.as_str()).unwrap_or(""),
                "ExitCode": c.container.state.exit_code,
                "Status": status_text(&c.container, now, human_duration),
                "Ports": ports,
                "Labels": record.run.labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(","),
            })
        })
        .collect();
    if args.format.as_deref() == Some("json") {
        // docker compose v2 writes one JSON object per line.
        for row in &rows {
            println!("{row}");
        }
        return Ok(0);
    }
    print!(
        "{}",
        output::render_rows(args.format.as_deref(), DEFAULT_TABLE, &rows, HEADERS)?
    );
    Ok(0)
}
