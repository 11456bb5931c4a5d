//! `logs`.

use std::io::Write;

use berth_engine::containers::paths::ContainerPaths;
use berth_engine::containers::{find_container, log_location};
use berth_engine::logs::{follow_logs, parse_docker_time, read_logs, LogOptions, Stream};
use berth_engine::Engine;
use clap::Args;

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// Show extra details provided to logs
    #[arg(long)]
    pub details: bool,
    /// Follow log output
    #[arg(short, long)]
    pub follow: bool,
    /// Show logs since timestamp (e.g. "2013-01-02T13:23:37Z") or relative (e.g. "42m" for 42 minutes)
    #[arg(long)]
    pub since: Option<String>,
    /// Number of lines to show from the end of the logs
    #[arg(short = 'n', long, default_value = "all")]
    pub tail: String,
    /// Show timestamps
    #[arg(short, long)]
    pub timestamps: bool,
    /// Show logs before a timestamp (e.g. "2013-01-02T13:23:37Z") or relative (e.g. "42m" for 42 minutes)
    #[arg(long)]
    pub until: Option<String>,
    /// CONTAINER
    pub container: String,
}

/// `--tail`, `--since`/`--until`, `-t` and `--details` as the engine's
/// options (`docker logs` and `docker compose logs` read them alike).
pub fn log_options(
    tail: &str,
    (since, until): (Option<&str>, Option<&str>),
    timestamps: bool,
    details: bool,
) -> anyhow::Result<LogOptions> {
    let now = chrono::Utc::now();
    let tail = match tail {
        "all" | "-1" => None,
        number => Some(
            number
                .parse::<usize>()
                .map_err(|_| anyhow::anyhow!("invalid value for \"tail\": {number:?}"))?,
        ),
    };
    let time = |text: Option<&str>| text.map(|text| parse_docker_time(text, &now)).transpose();
    Ok(LogOptions {
        tail,
        since: time(since)?,
        until: time(until)?,
        timestamps,
        stdout: true,
        stderr: true,
        details,
    })
}

pub fn run(engine: &Engine, args: &LogsArgs) -> anyhow::Result<i32> {
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, &args.container)?;
    let options = log_options(
        &args.tail,
        (args.since.as_deref(), args.until.as_deref()),
        args.timestamps,
        args.details,
    )?;
    let paths = ContainerPaths::new(&config.root, &config.run_root, &container.record.id);
    // `none` keeps nothing: dockerd's refusal, exit status 1.
    let location =
        log_location(&paths, &container.record).map_err(berth_engine::EngineError::from)?;
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let sink = |stream: Stream, bytes: &[u8]| {
        let _ = match stream {
            Stream::Stdout => stdout.lock().write_all(bytes),
            Stream::Stderr => stderr.lock().write_all(bytes),
        };
    };
    if args.follow && container.state.is_running() {
        let id = container.record.id.clone();
        let engine_for_state = crate::commands::open_config(&config)?;
        let is_running = move || {
            find_container(engine_for_state.store(), &config, &id)
                .map(|container| container.state.is_running())
                .unwrap_or(false)
        };
        follow_logs(&location, &options, is_running, sink)?;
    } else {
        read_logs(&location, &options, sink)?;
    }
    Ok(0)
}
