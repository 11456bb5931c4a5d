//! `inspect` and `ps` data in Docker's shapes.

use berth_store::Store;
use serde_json::{json, Value};

use super::lookup::{parse_row, Container};
use super::paths::ContainerPaths;
use super::record::ContainerRecord;
use super::state::Status;
use crate::{EngineConfig, EngineError};

/// Docker's `ContainerJSON` (the subset berth knows).
pub fn inspect_container(store: &Store, config: &EngineConfig, container: &Container) -> Value {
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
        // A `--tmpfs` is under HostConfig.Tmpfs only; `--mount type=tmpfs` is
        // one of dockerd's mount points.
        .filter(|mount| {
            !matches!(
                mount.source,
                super::record::MountSource::Tmpfs {
                    mount_point: false,
                    ..
                }
            )
        })
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
        "LogPath": super::logging::inspect_log_path(
            &paths,
            record,
            container.state.started_at != super::state::ZERO_TIME,
        ),
        "Name": format!("/{}", record.name),
        "RestartCount": container.state.restart_count,
        "Driver": "overlay",
        "Platform": "linux",
        "MountLabel": "",
        "ProcessLabel": "",
        "AppArmorProfile": "",
        "ExecIDs": Value::Null,
        "HostConfig": inspected_host_config(store, record),
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
        "NetworkSettings": network_settings(store, container),
    })
}

/// The stored `HostConfig` with the runtime that runs it named, as dockerd
/// names its default (`runc`) for a container created without one, and its
/// legacy links as dockerd shows them (`/CHILD:/PARENT/ALIAS`, or null).
fn inspected_host_config(store: &Store, record: &super::record::ContainerRecord) -> Value {
    let mut host = record.host_config.clone();
    if let Some(fields) = host.as_object_mut() {
        fields.insert(
            "Links".to_owned(),
            json!(super::links::inspected_links(store, record)),
        );
    }
    let named = host
        .get("Runtime")
        .and_then(Value::as_str)
        .is_some_and(|runtime| !runtime.is_empty());
    if let (false, Some(fields)) = (named, host.as_object_mut()) {
        let runtime = match record.run.isolation {
            super::record::Isolation::Vm => super::vm::RUNTIME_NAME,
            super::record::Isolation::Namespaces => "runc",
        };
        fields.insert("Runtime".to_owned(), Value::from(runtime));
    }
    host
}

/// Docker's `NetworkSettings`: one entry per network the container is on,
/// with its live address while it runs; the default bridge's values also
/// at the top level, as Docker keeps them.
fn network_settings(store: &Store, container: &Container) -> Value {
    let run = &container.record.run;
    let running = container.state.is_running();
    let endpoints = if running {
        crate::networks::container_endpoints(store, &container.record.id)
    } else {
        Vec::new()
    };
    let mut networks = serde_json::Map::new();
    let mut top = json!({
        "EndpointID": "", "Gateway": "", "IPAddress": "", "IPPrefixLen": 0, "MacAddress": "",
        "IPv6Gateway": "", "GlobalIPv6Address": "", "GlobalIPv6PrefixLen": 0,
    });
    // The container's networks as requested (none for another's namespace;
    // host and none modes name their network without a request).
    let requests: Vec<crate::networks::NetworkRequest> = if !run.networks.is_empty() {
        run.networks.clone()
    } else if run.network_mode.starts_with("container:") {
        Vec::new()
    } else {
        vec![crate::networks::NetworkRequest {
            name: run.network_mode.clone(),
            ..Default::default()
        }]
    };
    // dockerd appends the short id to a user-defined network's aliases when
    // the container first starts.
    let started = container.state.started_at != super::state::ZERO_TIME;
    for request in requests {
        let name = request.name.clone();
        let network_id = request.network_id.clone();
        let endpoint = endpoints
            .iter()
            .find(|endpoint| endpoint.network_id == network_id);
        let field = |value: Option<String>| value.unwrap_or_default();
        let user_defined = name != "bridge" && !network_id.is_empty();
        let mut aliases = request.aliases.clone();
        let short_id = &container.record.id[..12];
        if user_defined && started && !aliases.iter().any(|alias| alias == short_id) {
            aliases.push(short_id.to_owned());
        }
        let or_null = |value: Value, empty: bool| if empty { Value::Null } else { value };
        // dockerd's `EndpointIPAMConfig`: each field omitted when empty,
        // null when all are.
        let mut ipam = serde_json::Map::new();
        if !request.ipv4_address.is_empty() {
            ipam.insert("IPv4Address".to_owned(), json!(request.ipv4_address));
        }
        if !request.ipv6_address.is_empty() {
            ipam.insert("IPv6Address".to_owned(), json!(request.ipv6_address));
        }
        if !request.link_local_ips.is_empty() {
            ipam.insert("LinkLocalIPs".to_owned(), json!(request.link_local_ips));
        }
        let ipam_empty = ipam.is_empty();
        let entry = json!({
            "IPAMConfig": or_null(Value::Object(ipam), ipam_empty),
            "Links": or_null(json!(request.links), request.links.is_empty()),
            "Aliases": or_null(json!(aliases), aliases.is_empty()),
            "NetworkID": network_id,
            "EndpointID": field(endpoint.map(|e| e.record.endpoint_id.clone())),
            "Gateway": field(endpoint.map(|e| e.record.gateway.clone())),
            "IPAddress": field(endpoint.map(|e| e.address.clone())),
            "IPPrefixLen": endpoint.map_or(0, |e| e.record.prefix_len),
            "IPv6Gateway": field(endpoint.map(|e| e.record.ipv6_gateway.clone())),
            "GlobalIPv6Address": field(endpoint.map(|e| e.record.ipv6_address.clone())),
            "GlobalIPv6PrefixLen": endpoint.map_or(0, |e| e.record.ipv6_prefix_len),
            // The MAC asked for until an endpoint has one, as dockerd's.
            "MacAddress": endpoint.map_or_else(
                || request.mac_address.clone(),
                |e| e.record.mac_address.clone(),
            ),
            "DriverOpts": or_null(json!(request.driver_opts), request.driver_opts.is_empty()),
        });
        if name == "bridge" {
            for key in [
                "EndpointID",
                "Gateway",
                "IPAddress",
                "IPPrefixLen",
                "MacAddress",
                "IPv6Gateway",
                "GlobalIPv6Address",
                "GlobalIPv6PrefixLen",
            ] {
                top[key] = entry[key].clone();
            }
        }
        networks.insert(name, entry);
    }
    let mut ports = serde_json::Map::new();
    // Exposed ports without a binding are listed with null, as dockerd's
    // (on a network with ports: not host, none or another's namespace).
    for port in run
        .exposed_ports
        .iter()
        .filter(|_| !run.networks.is_empty())
    {
        ports.insert(port.clone(), Value::Null);
    }
    for request in &run.ports {
        ports
            .entry(format!("{}/{}", request.container_port, request.protocol))
            .or_insert(Value::Null);
    }
    for port in endpoints.iter().flat_map(|endpoint| &endpoint.record.ports) {
        let key = format!("{}/{}", port.container_port, port.protocol);
        let binding = json!({ "HostIp": port.host_ip, "HostPort": port.host_port.to_string() });
        match ports.get_mut(&key) {
            Some(Value::Array(list)) => list.push(binding),
            _ => {
                ports.insert(key, json!([binding]));
            }
        }
    }
    if !running {
        ports.clear();
    }
    json!({
        "Bridge": "",
        "SandboxID": "",
        "HairpinMode": false,
        "LinkLocalIPv6Address": "",
        "LinkLocalIPv6PrefixLen": 0,
        "Ports": ports,
        "SandboxKey": if running { format!("/proc/{}/ns/net", container.state.pid) } else { String::new() },
        "SecondaryIPAddresses": Value::Null,
        "SecondaryIPv6Addresses": Value::Null,
        "EndpointID": top["EndpointID"],
        "Gateway": top["Gateway"],
        "GlobalIPv6Address": top["GlobalIPv6Address"],
        "GlobalIPv6PrefixLen": top["GlobalIPv6PrefixLen"],
        "IPAddress": top["IPAddress"],
        "IPPrefixLen": top["IPPrefixLen"],
        "IPv6Gateway": top["IPv6Gateway"],
        "MacAddress": top["MacAddress"],
        "Networks": networks,
    })
}

/// The image a container list names (`ps`, `GET /containers/json`):
/// the name it was created with while that still names its image, else
/// the image's id (dockerd's rule: a name since moved to another image,
/// or an image `rmi --force` deleted, shows as the id).
pub fn listed_image(store: &Store, record: &ContainerRecord) -> String {
    if record.image_name == record.image_id {
        return record.image_id.clone();
    }
    match crate::images::resolve_image(store, &record.image_name) {
        Ok(image) if image.id.to_string() == record.image_id => record.image_name.clone(),
        _ => record.image_id.clone(),
    }
}

/// The container's published ports while it runs, sorted.
pub fn published_ports(
    store: &Store,
    container: &Container,
) -> Vec<crate::networks::PublishedPort> {
    if !container.state.is_running() {
        return Vec::new();
    }
    let mut ports: Vec<_> = crate::networks::container_endpoints(store, &container.record.id)
        .into_iter()
        .flat_map(|endpoint| endpoint.record.ports)
        .collect();
    ports.sort();
    ports
}

/// Every container, newest first, each reconciled (and what removed
/// containers left behind, removed).
pub fn list_containers(
    store: &Store,
    config: &EngineConfig,
) -> Result<Vec<Container>, EngineError> {
    super::orphans::remove_orphans(store, config);
    let mut listed = Vec::new();
    for row in store.containers()? {
        let container = super::reconcile::reconcile(store, config, parse_row(&row)?);
        // A `--rm` container whose dead monitor's removal the reconcile
        // finished is gone.
        if container.state.status != super::state::Status::Removing
            || store.container(&container.record.id)?.is_some()
        {
            listed.push(container);
        }
    }
    Ok(listed)
}

/// Docker's STATUS column: "Up 2 minutes", "Up 3 seconds (healthy)", "Up 1
/// second (health: starting)", "Exited (0) 3 seconds ago", "Created", "Up 5
/// seconds (Paused)", "Restarting (1) 2 seconds ago".
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
        Status::Running => match state.health_status() {
            Some(health) => format!(
                "Up {} ({})",
                human(since(&state.started_at)),
                health.status_text()
            ),
            None => format!("Up {}", human(since(&state.started_at))),
        },
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
