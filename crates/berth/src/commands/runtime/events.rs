//! `events`: the container's usage as runc's `stats` events (`--stats`: one, else one per
//! `--interval` until the container stops), one JSON object a line.

use std::time::Duration;

use serde_json::json;

use super::cli::EventsArgs;

pub fn run(store: &berth_oci::Store, args: &EventsArgs) -> anyhow::Result<i32> {
    berth_oci::store::validate_id(&args.id)?;
    let interval = parse_interval(&args.interval)?;
    loop {
        let record = store.load(&args.id)?;
        if store.status(&record) == berth_oci::Status::Stopped {
            anyhow::bail!("container not running");
        }
        let stats = berth_oci::cgroup::manager(&record.cgroup_path)?.stats()?;
        let memory_limit = match stats.memory_limit {
            Some(berth_runtime::cgroups::Limit::Value(value)) => value,
            _ => u64::MAX,
        };
        let event = json!({
            "type": "stats",
            "id": args.id,
            "data": {
                "cpu": {"usage": {"total": stats.cpu_usage_ns.unwrap_or(0)}},
                "memory": {
                    "usage": {"usage": stats.memory_usage.unwrap_or(0), "limit": memory_limit},
                    "stats": {"inactive_file": stats.memory_inactive_file.unwrap_or(0)},
                    "oom_kill": stats.oom_kills.unwrap_or(0)
                },
                "pids": {"current": stats.pids_current.unwrap_or(0)},
                "blkio": {
                    "read_bytes": stats.block_io.map_or(0, |io| io.read_bytes),
                    "write_bytes": stats.block_io.map_or(0, |io| io.write_bytes)
                }
            }
        });
        println!("{event}");
        if args.stats {
            return Ok(0);
        }
        std::thread::sleep(interval);
    }
}

/// `5s`, `500ms`, `1m` (Go durations as runc takes them, the common forms).
fn parse_interval(text: &str) -> anyhow::Result<Duration> {
    let invalid = || anyhow::anyhow!("invalid --interval {text:?}: e.g. 5s or 500ms");
    let (number, unit) = text
        .find(|character: char| !character.is_ascii_digit())
        .map_or((text, "s"), |at| text.split_at(at));
    let number: u64 = number.parse().map_err(|_| invalid())?;
    let duration = match unit {
        "ms" => Duration::from_millis(number),
        "s" => Duration::from_secs(number),
        "m" => Duration::from_secs(number * 60),
        _ => return Err(invalid()),
    };
    if duration.is_zero() {
        return Err(invalid());
    }
    Ok(duration)
}
