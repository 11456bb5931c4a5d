//! `berth events`: the engine's event log (`berth_engine::events`), as
//! `docker events` prints it. Without `--until` it follows new events until
//! interrupted.

use std::io::Write;

use anyhow::Context;
use berth_engine::events::{Event, EventFilter};
use clap::Args;

use crate::cli::GlobalOptions;
use crate::commands::output;

#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Show all events created since timestamp
    #[arg(long)]
    pub since: Option<String>,
    /// Stream events until this timestamp
    #[arg(long)]
    pub until: Option<String>,
    /// Filter output based on conditions provided
    #[arg(short, long = "filter", value_name = "FILTER")]
    pub filters: Vec<String>,
    /// Format output using a custom template ('json' or a Go template)
    #[arg(long)]
    pub format: Option<String>,
}

/// A `--since`/`--until` value as nanoseconds since the epoch.
fn time(text: Option<&str>) -> anyhow::Result<Option<i64>> {
    let Some(text) = text.filter(|text| !text.is_empty()) else {
        return Ok(None);
    };
    let time = berth_engine::logs::parse_docker_time(text, &chrono::Local::now())?;
    Ok(Some(time.timestamp_nanos_opt().unwrap_or(i64::MAX)))
}

/// The docker CLI's default line: local time with nanoseconds, type,
/// action, actor id, then the attributes sorted by name.
fn default_line(event: &Event) -> String {
    let time = chrono::DateTime::from_timestamp_nanos(event.time_nano)
        .with_timezone(&chrono::Local)
        .to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
    let attributes: Vec<String> = event
        .attributes
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    let mut line = format!("{time} {} {} {}", event.kind, event.action, event.id);
    if !attributes.is_empty() {
        line.push_str(&format!(" ({})", attributes.join(", ")));
    }
    line
}

pub fn run(global: &GlobalOptions, args: &EventsArgs) -> anyhow::Result<i32> {
    let since = time(args.since.as_deref())?;
    let until = time(args.until.as_deref())?;
    let pairs = args
        .filters
        .iter()
        .map(|filter| {
            filter
                .split_once('=')
                .map(|(key, value)| (key.trim().to_lowercase(), value.to_owned()))
                .with_context(|| format!("bad format of filter (expected name=value): {filter}"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let filter = EventFilter::new(pairs)?;
    let mut failure = None;
    let stdout = std::io::stdout();
    berth_engine::events::watch(
        &global.root,
        since,
        until,
        &filter,
        |event| {
            let line = match args.format.as_deref() {
                None => Ok(default_line(event)),
                Some(format) => output::render_event(format, &event.message_json()),
            };
            let written = line.and_then(|line| {
                let mut out = stdout.lock();
                writeln!(out, "{line}")?;
                out.flush()?;
                Ok(())
            });
            match written {
                Ok(()) => true,
                Err(error) => {
                    failure = Some(error);
                    false
                }
            }
        },
        || true,
    );
    match failure {
        // A closed pipe (`berth events | head`) ends it quietly.
        Some(error)
            if error
                .downcast_ref::<std::io::Error>()
                .is_some_and(|error| error.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            Ok(0)
        }
        Some(error) => Err(error),
        None => Ok(0),
    }
}
