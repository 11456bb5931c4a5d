//! `inspect` and `ps` data in Docker's shapes.

use berth_store::Store;
use serde_json::{json, Value};

use super::lookup::{parse_row, Container};
use super::paths::ContainerPaths;
use super::state::Status;
use crate::{EngineConfig, EngineError};

/// Docker's `ContainerJSON` (the subset berth knows).
pub fn inspect_container(config: &EngineConfig, container: &Container) -> Value {
    let record = &container.record;
    let paths = ContainerPaths::new(&config.root, &config.run_root, &record.id);
    let rootfs = paths.rootfs();
    let (path, args) = match record.run.args.split_first() {
        Some((first, rest)) => (first.clone(), rest.to_vec()),
        None => (String::new(), Vec::new()),
    };
    let mounts: Vec<Value> = record
        .run
        .mounts
        .iter()
        .map(|mount| {
            let (kind, source, name) = match &mount.source {
                super::record::MountSource::Bind { host_path, .. } => {
                    ("bind", host_path.clone(), None)
                }
                super::record::MountSource::Volume { name } => (
                    "volume",
                    config
                        .root
                        .join("volumes")
                        .join(name)
                        .join("_data")
                        .display()
                        .to_string(),
                    Some(name.clone()),
                ),
                super::record::MountSource::Tmpfs { .. } => ("tmpfs", String::new(), None),
            };
            let mut value = json!({
                "Type": kind,
                "Source": source,
                "Destination": mount.destination,
                "Mode": if mount.readonly { "ro" } else { "" },
                "RW": !mount.readonly,
                "Propagation": if kind == "bind" { "rprivate" } else { "" },
            });
            if let Some(name) = name {
                value["Name"] = json!(name);
                value["Driver"] = json!("local");
            }
            value
        })
        .collect();
    json!({
        "Id": record.id,
        "Created": record.created,
        "Path": path,
        "Args": args,
        "State": container.state.to_docker(),
        "Image": record.image_id,
        "ResolvConfPath": paths.resolv_conf(),
        "HostnamePath": paths.hostname(),
        "HostsPath": paths.hosts(),
        "LogPath": paths.log(&record.id),
        "Name": format!("/{}", record.name),
        "RestartCount": container.state.restart_count,
        "Driver": "overlay",
        "Platform": "linux",
        "MountLabel": "",
        "ProcessLabel": "",
        "AppArmorProfile": "",
        "ExecIDs": Value::Null,
        "HostConfig": record.host_config,
        "GraphDriver": {
            "Data": {
                "MergedDir": rootfs.merged,
                "UpperDir": rootfs.upper,
                "WorkDir": rootfs.work,
            },
            "Name": "overlay",
        },
        "Mounts": mounts,
        "Config": record.config,
        "NetworkSettings": network_settings(&record.run.network_mode),
    })
}

/// Networking is not in yet: the shape Docker prints for `--network none`,
/// with the mode the container asked for.
fn network_settings(mode: &str) -> Value {
    let name = if mode.is_empty() { "bridge" } else { mode };
    json!({
        "Bridge": "",
        "SandboxID": "",
        "SandboxKey": "",
        "Ports": {},
        "Gateway": "",
        "IPAddress": "",
        "IPPrefixLen": 0,
        "MacAddress": "",
        "Networks": { name: {
            "IPAMConfig": Value::Null,
            "Links": Value::Null,
            "Aliases": Value::Null,
            "NetworkID": "",
            "EndpointID": "",
            "Gateway": "",
            "IPAddress": "",
            "IPPrefixLen": 0,
            "MacAddress": "",
        }},
    })
}

/// Every container, newest first, each reconciled.
pub fn list_containers(
    store: &Store,
    config: &EngineConfig,
) -> Result<Vec<Container>, EngineError> {
    store
        .containers()?
        .iter()
        .map(|row| {
            parse_row(row).map(|container| super::reconcile::reconcile(store, config, container))
        })
        .collect()
}

/// Docker's STATUS column: "Up 2 minutes", "Exited (0) 3 seconds ago",
/// "Created", "Up 5 seconds (Paused)", "Restarting (1) 2 seconds ago".
pub fn status_text(
    container: &Container,
    now: chrono::DateTime<chrono::Utc>,
    human: impl Fn(std::time::Duration) -> String,
) -> String {
    let state = &container.state;
    let since = |time: &str| {
        chrono::DateTime::parse_from_rfc3339(time)
            .map(|time| {
                (now - time.with_timezone(&chrono::Utc))
                    .to_std()
                    .unwrap_or_default()
            })
            .unwrap_or_default()
    };
    match state.status {
        Status::Created => "Created".to_owned(),
        Status::Running => format!("Up {}", human(since(&state.started_at))),
        Status::Paused => format!("Up {} (Paused)", human(since(&state.started_at))),
        Status::Restarting => format!(
            "Restarting ({}) {} ago",
            state.exit_code,
            human(since(&state.finished_at))
        ),
        Status::Removing => "Removal In Progress".to_owned(),
        Status::Dead => "Dead".to_owned(),
        Status::Exited => format!(
            "Exited ({}) {} ago",
            state.exit_code,
            human(since(&state.finished_at))
        ),
    }
}
