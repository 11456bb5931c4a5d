//! `top`, `stats`, `port`.

use std::os::fd::AsRawFd;

use berth_engine::containers::{container_stats, container_top, find_container, list_containers};
use berth_engine::Engine;
use clap::Args;
use serde_json::json;

use crate::commands::output;
use crate::format::units::{bytes_size, human_size};

#[derive(Debug, Args)]
#[command(trailing_var_arg = true)]
pub struct TopArgs {
    /// CONTAINER
    pub container: String,
    /// [ps OPTIONS] (default -ef)
    #[arg(allow_hyphen_values = true)]
    pub ps_options: Vec<String>,
}

/// Docker runs `ps` on the host and keeps the container's rows.
pub fn top(engine: &Engine, args: &TopArgs) -> anyhow::Result<i32> {
    let table = container_top(engine, &args.container, &args.ps_options)?;
    let mut writer = crate::format::tabwriter::TabWriter::docker();
    writer.write_str(&format!("{}\n", table.titles.join("\t")));
    for row in &table.processes {
        writer.write_str(&format!("{}\n", row.join("\t")));
    }
    print!("{}", writer.finish());
    Ok(0)
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Show all containers (default shows just running)
    #[arg(short, long)]
    pub all: bool,
    /// Disable streaming stats and only pull the first result
    #[arg(long)]
    pub no_stream: bool,
    /// Do not truncate output
    #[arg(long)]
    pub no_trunc: bool,
    /// Format output using a custom template
    #[arg(long)]
    pub format: Option<String>,
    /// CONTAINER
    pub containers: Vec<String>,
}

const STATS_TABLE: &str = "table {{.ID}}\t{{.Name}}\t{{.CPUPerc}}\t{{.MemUsage}}\t{{.MemPerc}}\t{{.NetIO}}\t{{.BlockIO}}\t{{.PIDs}}";
const STATS_HEADERS: &[(&str, &str)] = &[
    ("ID", "CONTAINER ID"),
    ("Name", "NAME"),
    ("CPUPerc", "CPU %"),
    ("MemUsage", "MEM USAGE / LIMIT"),
    ("MemPerc", "MEM %"),
    ("NetIO", "NET I/O"),
    ("BlockIO", "BLOCK I/O"),
    ("PIDs", "PIDS"),
];

/// `stats`: a table of every container's usage, redrawn each second until interrupted, as
/// Docker streams it (the screen is cleared first when stdout is a terminal); `--no-stream`
/// prints one table, from two samples 200 ms apart. Without names, the running containers
/// (all with `-a`) are listed afresh each round.
pub fn stats(engine: &Engine, args: &StatsArgs) -> anyhow::Result<i32> {
    let terminal = nix::unistd::isatty(std::io::stdout().as_raw_fd()).unwrap_or(false);
    let interval = if args.no_stream {
        std::time::Duration::from_millis(200)
    } else {
        std::time::Duration::from_secs(1)
    };
    loop {
        let containers = stats_containers(engine, args)?;
        let rows = sample_rows(engine, args, &containers, interval);
        let table = output::render_rows(args.format.as_deref(), STATS_TABLE, &rows, STATS_HEADERS)?;
        if args.no_stream {
            print!("{table}");
            return Ok(0);
        }
        if terminal {
            // Docker's redraw: clear the screen, cursor home.
            print!("\x1b[2J\x1b[H");
        }
        print!("{table}");
        std::io::Write::flush(&mut std::io::stdout())?;
        if !args.containers.is_empty() && containers.iter().all(|c| !c.state.is_running()) {
            return Ok(0);
        }
    }
}

/// The containers to show this round: the named ones, or the running (every, with `-a`).
fn stats_containers(
    engine: &Engine,
    args: &StatsArgs,
) -> anyhow::Result<Vec<berth_engine::containers::Container>> {
    let config = engine.config().clone();
    Ok(if args.containers.is_empty() {
        list_containers(engine.store(), &config)?
            .into_iter()
            .filter(|container| args.all || container.state.is_running())
            .collect()
    } else {
        args.containers
            .iter()
            .map(|name| find_container(engine.store(), &config, name))
            .collect::<Result<Vec<_>, _>>()?
    })
}

/// One row per container from two samples `interval` apart (the CPU rate needs both).
fn sample_rows(
    engine: &Engine,
    args: &StatsArgs,
    containers: &[berth_engine::containers::Container],
    interval: std::time::Duration,
) -> Vec<serde_json::Value> {
    let first: Vec<_> = containers
        .iter()
        .map(|container| container_stats(engine, container).ok())
        .collect();
    let started = std::time::Instant::now();
    std::thread::sleep(interval);
    let elapsed = started.elapsed().as_nanos() as f64;
    let memory_total = crate::commands::system::info::memory_total();
    containers
        .iter()
        .zip(first)
        .map(|(container, before)| {
            let after = container_stats(engine, container).ok();
            let cpu = match (before.as_ref().and_then(|s| s.cpu_usage_ns), after.as_ref().and_then(|s| s.cpu_usage_ns)) {
                (Some(before), Some(after)) => (after.saturating_sub(before)) as f64 / elapsed * 100.0,
                _ => 0.0,
            };
            let usage = after.as_ref().and_then(|s| s.memory_usage).unwrap_or(0);
            let usage = usage.saturating_sub(after.as_ref().and_then(|s| s.memory_inactive_file).unwrap_or(0));
            let limit = match after.as_ref().and_then(|s| s.memory_limit) {
                Some(berth_runtime::cgroups::Limit::Value(limit)) if limit < memory_total => limit,
                _ => memory_total,
            };
            let (received, sent) = network_io(container);
            let block_io = after.as_ref().and_then(|s| s.block_io).unwrap_or_default();
            let id = &container.record.id;
            json!({
                "ID": if args.no_trunc { id.clone() } else { id[..12].to_owned() },
                "Container": id[..12].to_owned(),
                "Name": container.record.name,
                "CPUPerc": format!("{cpu:.2}%"),
                "MemUsage": format!("{} / {}", bytes_size(usage), bytes_size(limit)),
                "MemPerc": format!("{:.2}%", if limit == 0 { 0.0 } else { usage as f64 / limit as f64 * 100.0 }),
                "NetIO": format!("{} / {}", human_size(received), human_size(sent)),
                "BlockIO": format!("{} / {}", human_size(block_io.read_bytes), human_size(block_io.write_bytes)),
                "PIDs": after.as_ref().and_then(|s| s.pids_current).unwrap_or(0).to_string(),
            })
        })
        .collect()
}

/// Bytes received and sent on the container's interfaces but loopback (Docker counts its
/// networks' interfaces), from its network namespace's /proc/net/dev; 0 when not running.
fn network_io(container: &berth_engine::containers::Container) -> (u64, u64) {
    if !container.state.is_running() || container.state.pid <= 0 {
        return (0, 0);
    }
    let Ok(table) = fs_err::read_to_string(format!("/proc/{}/net/dev", container.state.pid)) else {
        return (0, 0);
    };
    parse_net_dev(&table)
}

/// `(received, sent)` bytes summed over /proc/net/dev's interfaces other than `lo`.
fn parse_net_dev(table: &str) -> (u64, u64) {
    table
        .lines()
        .skip(2)
        .filter_map(|line| {
            let (name, counters) = line.split_once(':')?;
            if name.trim() == "lo" {
                return None;
            }
            let fields: Vec<u64> = counters
                .split_whitespace()
                .filter_map(|field| field.parse().ok())
                .collect();
            Some((*fields.first()?, *fields.get(8)?))
        })
        .fold((0, 0), |(received, sent), (r, s)| (received + r, sent + s))
}

#[cfg(test)]
mod net_dev_tests {
    use super::parse_net_dev;

    #[test]
    fn loopback_is_left_out_and_the_rest_summed() {
        let table = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     140       2    0    0    0     0          0         0      140       2    0    0    0     0       0          0
  eth0:    1296      12    0    0    0     0          0         0      726       9    0    0    0     0       0          0
  eth1:       4       1    0    0    0     0          0         0        6       1    0    0    0     0       0          0
";
        assert_eq!(parse_net_dev(table), (1300, 732));
    }
}

#[derive(Debug, Args)]
pub struct PortArgs {
    /// CONTAINER
    pub container: String,
    /// PRIVATE_PORT[/PROTO]
    pub port: Option<String>,
}

/// `port CONTAINER [PRIVATE_PORT[/PROTO]]`: the published ports of a running
/// container, as Docker prints them.
pub fn port(engine: &Engine, args: &PortArgs) -> anyhow::Result<i32> {
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, &args.container)?;
    let ports = berth_engine::containers::published_ports(engine.store(), &container);
    let host = |port: &berth_engine::networks::PublishedPort| {
        format!("{}:{}", port.host_ip, port.host_port)
    };
    if let Some(wanted) = &args.port {
        let wanted = normalise_port(wanted);
        let matching: Vec<String> = ports
            .iter()
            .filter(|port| format!("{}/{}", port.container_port, port.protocol) == wanted)
            .map(host)
            .collect();
        if matching.is_empty() {
            anyhow::bail!(
                "No public port '{}' published for {}",
                wanted,
                container.record.name
            );
        }
        for line in matching {
            println!("{line}");
        }
        return Ok(0);
    }
    for port in &ports {
        println!(
            "{}/{} -> {}",
            port.container_port,
            port.protocol,
            host(port)
        );
    }
    Ok(0)
}

fn normalise_port(port: &str) -> String {
    if port.contains('/') {
        port.to_owned()
    } else {
        format!("{port}/tcp")
    }
}
