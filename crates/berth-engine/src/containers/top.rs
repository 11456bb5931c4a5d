//! `top`: Docker runs `ps` on the host and keeps the rows of the
//! container's processes (moby `daemon/top_unix.go`).

use super::manage::container_processes;
use crate::{Engine, EngineError};

pub use berth_runtime::ProcessTable;

/// Runs `ps ARGS` (`-ef` when empty) and keeps the container's processes.
pub fn container_top(
    engine: &Engine,
    text: &str,
    ps_args: &[String],
) -> Result<ProcessTable, EngineError> {
    let container = super::find_container(engine.store(), engine.config(), text)?;
    if let Some(table) = super::manage::container_process_table(engine, &container, ps_args)? {
        crate::events::emit_container(engine.store(), "top", &container.record);
        return Ok(table);
    }
    let pids = container_processes(engine, &container.record.id)?;
    let options = if ps_args.is_empty() {
        vec!["-ef".to_owned()]
    } else {
        ps_args.to_vec()
    };
    let output = std::process::Command::new("ps")
        .args(&options)
        .output()
        .map_err(super::ContainerError::RunPs)?;
    if !output.status.success() {
        return Err(super::ContainerError::Ps(
            String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        )
        .into());
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    let titles: Vec<String> = header.split_whitespace().map(str::to_owned).collect();
    let pid_column = titles
        .iter()
        .position(|column| column == "PID")
        .ok_or(super::ContainerError::NoPidColumn)?;
    let columns = titles.len();
    let mut processes = Vec::new();
    for line in lines {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some(pid) = fields
            .get(pid_column)
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        if pids.contains(&pid) {
            // The last column (the command) may contain spaces.
            let (head, tail) = fields.split_at(columns.saturating_sub(1).min(fields.len()));
            let mut row: Vec<String> = head.iter().map(|field| (*field).to_owned()).collect();
            row.push(tail.join(" "));
            processes.push(row);
        }
    }
    crate::events::emit_container(engine.store(), "top", &container.record);
    Ok(ProcessTable { titles, processes })
}
