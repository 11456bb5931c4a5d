//! `ps` / `container ls`.

use berth_engine::containers::{
    list_containers, status_text, Container, ContainerFilters, CONTAINER_FILTERS,
};
use berth_engine::Engine;
use clap::Args;
use serde_json::json;

use crate::commands::output;
use crate::format::units::{human_duration, human_size_with_precision};

#[derive(Debug, Args)]
pub struct PsArgs {
    /// Show all containers (default shows just running)
    #[arg(short, long)]
    pub all: bool,
    /// Filter output based on conditions provided (status=, name=, label=, ancestor=, id=,
    /// exited=, network=, volume=, since=, before=, health=)
    #[arg(short, long = "filter", value_name = "filter")]
    pub filters: Vec<String>,
    /// Format output using a custom template
    #[arg(long)]
    pub format: Option<String>,
    /// Show n last created containers (includes all states)
    #[arg(short = 'n', long, default_value_t = -1)]
    pub last: i64,
    /// Show the latest created container (includes all states)
    #[arg(short, long)]
    pub latest: bool,
    /// Don't truncate output
    #[arg(long)]
    pub no_trunc: bool,
    /// Only display container IDs
    #[arg(short, long)]
    pub quiet: bool,
    /// Display total file sizes
    #[arg(short, long)]
    pub size: bool,
}

const DEFAULT_TABLE: &str =
    "table {{.ID}}\t{{.Image}}\t{{.Command}}\t{{.RunningFor}}\t{{.Status}}\t{{.Ports}}\t{{.Names}}";

/// With `-s`, Docker's table gains a SIZE column.
const SIZE_TABLE: &str = "table {{.ID}}\t{{.Image}}\t{{.Command}}\t{{.RunningFor}}\t{{.Status}}\t{{.Ports}}\t{{.Names}}\t{{.Size}}";

const HEADERS: &[(&str, &str)] = &[
    ("ID", "CONTAINER ID"),
    ("Image", "IMAGE"),
    ("Command", "COMMAND"),
    ("RunningFor", "CREATED"),
    ("Status", "STATUS"),
    ("Ports", "PORTS"),
    ("Names", "NAMES"),
    ("State", "STATE"),
    ("Labels", "LABELS"),
    ("Mounts", "MOUNTS"),
    ("Networks", "NETWORKS"),
    ("Size", "SIZE"),
];

pub fn run(engine: &Engine, args: &PsArgs) -> anyhow::Result<i32> {
    let config = engine.config().clone();
    let mut containers = list_containers(engine.store(), &config)?;
    let take_last = if args.latest { 1 } else { args.last };
    let show_all = args.all || take_last >= 0;
    let filters = args
        .filters
        .iter()
        .map(|filter| {
            filter
                .split_once('=')
                .map(|(key, value)| (key.to_owned(), value.to_owned()))
                .ok_or_else(|| anyhow::anyhow!("bad format of filter (expected name=value)"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    for (key, _) in &filters {
        anyhow::ensure!(
            CONTAINER_FILTERS.contains(&key.as_str()),
            "Invalid filter '{key}'"
        );
    }
    let has_status_filter = filters
        .iter()
        .any(|(key, _)| key == "status" || key == "exited");
    let filter = ContainerFilters::new(&filters, engine.store())?;
    containers.retain(|container| {
        (show_all || has_status_filter || container.state.is_running()) && filter.matches(container)
    });
    if take_last >= 0 {
        containers.truncate(take_last as usize);
    }
    if args.quiet {
        for container in &containers {
            println!("{}", id(container, args.no_trunc));
        }
        return Ok(0);
    }
    let now = chrono::Utc::now();
    let rows: Vec<_> = containers
        .iter()
        .map(|container| {
            let record = &container.record;
            let command = shell_join(&record.run.args);
            let command = go_quote(&if args.no_trunc {
                command
            } else {
                ellipsis(&command, 20)
            });
            let (created_at, running_for) =
                crate::commands::image::created_at(Some(&record.created));
            let labels: Vec<String> = record
                .run
                .labels
                .iter()
                .map(|(key, value)| format!("{key}={value}"))
                .collect();
            json!({
                "Command": command,
                "CreatedAt": created_at,
                "ID": id(container, args.no_trunc),
                "Image": listed_image(engine, record, args.no_trunc),
                "Labels": labels.join(","),
                "LocalVolumes": "0",
                "Mounts": "",
                "Names": record.name,
                "Networks": record.run.network_mode,
                "Ports": berth_engine::containers::published_ports(engine.store(), container)
                    .iter()
                    .map(|port| format!(
                        "{}:{}->{}/{}",
                        port.host_ip, port.host_port, port.container_port, port.protocol
                    ))
                    .collect::<Vec<_>>()
                    .join(", "),
                "RunningFor": running_for,
                "Size": size_text(engine, container, args.size),
                "State": container.state.status.as_str(),
                "Status": status_text(container, now, human_duration),
            })
        })
        .collect();
    print!(
        "{}",
        output::render_rows(
            args.format.as_deref(),
            if args.size { SIZE_TABLE } else { DEFAULT_TABLE },
            &rows,
            HEADERS
        )?
    );
    Ok(0)
}

/// Docker's SIZE: `12.3kB (virtual 2MB)` with `-s`; without it Docker leaves the sizes
/// uncomputed and `{{.Size}}` shows `0B`.
fn size_text(engine: &Engine, container: &Container, wanted: bool) -> String {
    if !wanted {
        return "0B".to_owned();
    }
    match berth_engine::containers::container_size(engine.store(), engine.config(), container) {
        Ok((rw, virtual_size)) => format!(
            "{} (virtual {})",
            human_size_with_precision(rw, 3),
            human_size_with_precision(virtual_size, 3)
        ),
        Err(error) => {
            tracing::debug!(%error, "no size");
            "0B".to_owned()
        }
    }
}

fn id(container: &Container, no_trunc: bool) -> String {
    let id = &container.record.id;
    if no_trunc {
        id.clone()
    } else {
        id[..12].to_owned()
    }
}

/// Docker's COMMAND: arguments with spaces or quotes single-quoted, as a
/// shell would need them.
fn shell_join(args: &[String]) -> String {
    args.iter()
        .map(|arg| {
            if !arg.is_empty()
                && !arg.contains(|c: char| c.is_whitespace() || "'\"\\$`".contains(c))
            {
                arg.clone()
            } else {
                format!("'{}'", arg.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Go's `strconv.Quote` for the text Docker prints.
fn go_quote(text: &str) -> String {
    crate::format::gofmt::quote(text)
}

fn ellipsis(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(width - 1).collect();
    cut.push('…');
    cut
}

/// The IMAGE column: the name the container was made with, or, once that
/// names another image or none (`rmi --force`), the image's id, short
/// unless `--no-trunc` (the docker CLI's rule).
fn listed_image(
    engine: &berth_engine::Engine,
    record: &berth_engine::containers::record::ContainerRecord,
    no_trunc: bool,
) -> String {
    let image = berth_engine::containers::listed_image(engine.store(), record);
    match berth_types::Digest::parse(&image) {
        Ok(id) if !no_trunc => id.short().to_owned(),
        _ => image,
    }
}
