//! A normalised service as the container it runs: the body of a Docker `POST
//! /containers/create`, the same request `berth run` and the API server hand the engine.

use std::collections::BTreeMap;

use berth_types::container::{CreateBody, CreateRequest};
use serde_json::{json, Map, Value as Json};

use super::labels;
use crate::error::ComposeError;
use crate::load::Project;
use crate::normalize::values::parse_duration;

/// Everything a container of `service` needs that the service itself does not say.
pub struct ContainerPlan<'a> {
    pub project: &'a Project,
    pub service: &'a str,
    pub config: &'a Json,
    pub number: u32,
    pub name: String,
    /// `network_mode: service:x`: the container of x to join.
    pub joined_container: Option<String>,
    pub image_id: String,
}

fn strings(value: Option<&Json>) -> Option<Json> {
    value.and_then(Json::as_array).map(|items| {
        Json::Array(
            items
                .iter()
                .map(|item| match item {
                    Json::String(text) => Json::String(text.clone()),
                    other => Json::String(other.to_string()),
                })
                .collect(),
        )
    })
}

pub fn create_request(plan: &ContainerPlan<'_>) -> Result<CreateRequest, ComposeError> {
    let service = plan.config;
    let project = plan.project;
    let get = |key: &str| service.get(key);
    let mut config = Map::new();
    let mut host = Map::new();
    let image = get("image").and_then(Json::as_str).unwrap_or_default();
    config.insert("Image".into(), json!(image));
    if let Some(command) = get("command").filter(|c| !c.is_null()) {
        config.insert("Cmd".into(), command.clone());
    }
    if let Some(entrypoint) = get("entrypoint").filter(|c| !c.is_null()) {
        config.insert("Entrypoint".into(), entrypoint.clone());
    }
    if let Some(environment) = get("environment").and_then(Json::as_object) {
        // An entry without a value (`environment: [KEY]` with KEY unset) is left out.
        let env: Vec<String> = environment
            .iter()
            .filter_map(|(key, value)| value.as_str().map(|value| format!("{key}={value}")))
            .collect();
        config.insert("Env".into(), json!(env));
    }
    for (key, field) in [
        ("user", "User"),
        ("working_dir", "WorkingDir"),
        ("hostname", "Hostname"),
        ("domainname", "Domainname"),
        ("stop_signal", "StopSignal"),
    ] {
        if let Some(value) = get(key).and_then(Json::as_str) {
            config.insert(field.into(), json!(value));
        }
    }
    if get("tty").and_then(Json::as_bool) == Some(true) {
        config.insert("Tty".into(), json!(true));
    }
    if get("stdin_open").and_then(Json::as_bool) == Some(true) {
        config.insert("OpenStdin".into(), json!(true));
    }
    if let Some(period) = get("stop_grace_period").and_then(Json::as_str) {
        let nanos = parse_duration(period).unwrap_or(0);
        config.insert("StopTimeout".into(), json!(nanos / 1_000_000_000));
    }
    if let Some(check) = get("healthcheck").and_then(Json::as_object) {
        config.insert("Healthcheck".into(), healthcheck(check));
    }
    let mut all_labels: BTreeMap<String, String> = get("labels")
        .and_then(Json::as_object)
        .map(|labels| {
            labels
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default();
    let files: Vec<String> = project
        .config_files
        .iter()
        .map(|file| file.display().to_string())
        .collect();
    for (key, value) in [
        (labels::PROJECT, project.name.clone()),
        (labels::SERVICE, plan.service.to_owned()),
        (labels::NUMBER, plan.number.to_string()),
        (labels::ONEOFF, "False".to_owned()),
        (labels::CONFIG_HASH, labels::config_hash(service)),
        (
            labels::WORKING_DIR,
            project.working_dir.display().to_string(),
        ),
        (labels::CONFIG_FILES, files.join(",")),
        (labels::VERSION, labels::version().to_owned()),
        (labels::IMAGE, plan.image_id.clone()),
        (labels::DEPENDS_ON, labels::depends_on(service)),
    ] {
        all_labels.insert(key.to_owned(), value);
    }
    config.insert("Labels".into(), json!(all_labels));

    let mut exposed = Map::new();
    for port in get("expose").and_then(Json::as_array).into_iter().flatten() {
        if let Some(text) = port.as_str() {
            let key = if text.contains('/') {
                text.to_owned()
            } else {
                format!("{text}/tcp")
            };
            exposed.insert(key, json!({}));
        }
    }
    let mut bindings: Map<String, Json> = Map::new();
    for port in get("ports").and_then(Json::as_array).into_iter().flatten() {
        let target = port.get("target").and_then(Json::as_i64).unwrap_or(0);
        let protocol = port.get("protocol").and_then(Json::as_str).unwrap_or("tcp");
        let key = format!("{target}/{protocol}");
        exposed.insert(key.clone(), json!({}));
        let binding = json!({
            "HostIp": port.get("host_ip").and_then(Json::as_str).unwrap_or(""),
            "HostPort": port.get("published").and_then(Json::as_str).unwrap_or(""),
        });
        match bindings.get_mut(&key).and_then(Json::as_array_mut) {
            Some(list) => list.push(binding),
            None => {
                bindings.insert(key, json!([binding]));
            }
        }
    }
    if !exposed.is_empty() {
        config.insert("ExposedPorts".into(), Json::Object(exposed));
    }
    if !bindings.is_empty() {
        host.insert("PortBindings".into(), Json::Object(bindings));
    }
    host.insert("Mounts".into(), Json::Array(mounts(service, project)));
    if let Some(tmpfs) = get("tmpfs").and_then(Json::as_array) {
        let map: Map<String, Json> = tmpfs
            .iter()
            .filter_map(Json::as_str)
            .map(|entry| match entry.split_once(':') {
                Some((path, options)) => (path.to_owned(), json!(options)),
                None => (entry.to_owned(), json!("")),
            })
            .collect();
        host.insert("Tmpfs".into(), Json::Object(map));
    }
    for (key, field) in [
        ("cap_add", "CapAdd"),
        ("cap_drop", "CapDrop"),
        ("security_opt", "SecurityOpt"),
        ("dns", "Dns"),
        ("dns_search", "DnsSearch"),
        ("dns_opt", "DnsOptions"),
        ("group_add", "GroupAdd"),
    ] {
        if let Some(list) = strings(get(key)) {
            host.insert(field.into(), list);
        }
    }
    if let Some(hosts) = get("extra_hosts").and_then(Json::as_array) {
        // compose's `host=ip` is the engine's `host:ip`.
        let hosts: Vec<String> = hosts
            .iter()
            .filter_map(Json::as_str)
            .map(|entry| entry.replacen('=', ":", 1))
            .collect();
        host.insert("ExtraHosts".into(), json!(hosts));
    }
    if let Some(sysctls) = get("sysctls") {
        host.insert("Sysctls".into(), sysctls.clone());
    }
    for (key, field) in [
        ("privileged", "Privileged"),
        ("read_only", "ReadonlyRootfs"),
    ] {
        if get(key).and_then(Json::as_bool) == Some(true) {
            host.insert(field.into(), json!(true));
        }
    }
    if let Some(init) = get("init").and_then(Json::as_bool) {
        host.insert("Init".into(), json!(init));
    }
    if let Some(size) = get("shm_size").and_then(Json::as_str) {
        host.insert("ShmSize".into(), json!(size.parse::<i64>().unwrap_or(0)));
    }
    if let Some(score) = get("oom_score_adj").and_then(Json::as_i64) {
        host.insert("OomScoreAdj".into(), json!(score));
    }
    for (key, field) in [("pid", "PidMode"), ("ipc", "IpcMode")] {
        if let Some(mode) = get(key).and_then(Json::as_str) {
            host.insert(field.into(), json!(mode));
        }
    }
    if let Some(restart) = get("restart").and_then(Json::as_str) {
        let (name, count) = match restart.split_once(':') {
            Some((name, count)) => (name, count.parse::<i64>().unwrap_or(0)),
            None => (restart, 0),
        };
        host.insert(
            "RestartPolicy".into(),
            json!({"Name": name, "MaximumRetryCount": count}),
        );
    }
    if let Some(logging) = get("logging").and_then(Json::as_object) {
        host.insert(
            "LogConfig".into(),
            json!({
                "Type": logging.get("driver").and_then(Json::as_str).unwrap_or(""),
                "Config": logging.get("options").cloned().unwrap_or(json!({})),
            }),
        );
    }
    if let Some(limits) = get("ulimits").and_then(Json::as_object) {
        let ulimits: Vec<Json> = limits
            .iter()
            .map(|(name, value)| match value {
                Json::Object(pair) => {
                    json!({"Name": name, "Soft": pair.get("soft"), "Hard": pair.get("hard")})
                }
                other => json!({"Name": name, "Soft": other, "Hard": other}),
            })
            .collect();
        host.insert("Ulimits".into(), json!(ulimits));
    }
    if let Some(devices) = get("devices").and_then(Json::as_array) {
        let devices: Vec<Json> = devices
            .iter()
            .map(|device| {
                json!({
                    "PathOnHost": device.get("source"),
                    "PathInContainer": device.get("target"),
                    "CgroupPermissions": device.get("permissions"),
                })
            })
            .collect();
        host.insert("Devices".into(), json!(devices));
    }
    let mut endpoints = Map::new();
    match get("network_mode").and_then(Json::as_str) {
        Some(mode) if mode.starts_with("service:") => {
            let joined = plan.joined_container.clone().unwrap_or_default();
            host.insert("NetworkMode".into(), json!(format!("container:{joined}")));
        }
        Some(mode) => {
            host.insert("NetworkMode".into(), json!(mode));
        }
        None => {
            let networks = get("networks").and_then(Json::as_object);
            let project_networks = project.model.get("networks");
            let mut first = None;
            for (key, settings) in networks.into_iter().flatten() {
                let name = project_networks
                    .and_then(|n| n.get(key))
                    .and_then(|n| n.get("name"))
                    .and_then(Json::as_str)
                    .unwrap_or(key)
                    .to_owned();
                let mut aliases = vec![plan.name.clone(), plan.service.to_owned()];
                if let Some(more) = settings.get("aliases").and_then(Json::as_array) {
                    aliases.extend(more.iter().filter_map(Json::as_str).map(str::to_owned));
                }
                let mut endpoint = json!({"Aliases": aliases});
                let v4 = settings.get("ipv4_address").and_then(Json::as_str);
                let v6 = settings.get("ipv6_address").and_then(Json::as_str);
                if v4.is_some() || v6.is_some() {
                    endpoint["IPAMConfig"] = json!({
                        "IPv4Address": v4.unwrap_or(""),
                        "IPv6Address": v6.unwrap_or(""),
                    });
                }
                first.get_or_insert_with(|| name.clone());
                endpoints.insert(name, endpoint);
            }
            if let Some(first) = first {
                host.insert("NetworkMode".into(), json!(first));
            }
        }
    }
    config.insert("HostConfig".into(), Json::Object(host));
    config.insert(
        "NetworkingConfig".into(),
        json!({"EndpointsConfig": endpoints}),
    );
    let body: CreateBody = serde_json::from_value(Json::Object(config)).map_err(|error| {
        ComposeError::Other(format!(
            "failed to make the container of service {:?}: {error}",
            plan.service
        ))
    })?;
    Ok(CreateRequest::from_body(
        body,
        Some(plan.name.clone()),
        None,
    ))
}

fn healthcheck(check: &Map<String, Json>) -> Json {
    if check.get("disable").and_then(Json::as_bool) == Some(true) {
        return json!({"Test": ["NONE"]});
    }
    let mut out = Map::new();
    if let Some(test) = check.get("test") {
        out.insert("Test".into(), test.clone());
    }
    for (key, field) in [
        ("interval", "Interval"),
        ("timeout", "Timeout"),
        ("start_period", "StartPeriod"),
        ("start_interval", "StartInterval"),
    ] {
        if let Some(value) = check.get(key).and_then(Json::as_str) {
            out.insert(field.into(), json!(parse_duration(value).unwrap_or(0)));
        }
    }
    if let Some(retries) = check.get("retries") {
        out.insert("Retries".into(), retries.clone());
    }
    Json::Object(out)
}

/// The service's volumes as the engine's mounts, named volumes by their real names.
fn mounts(service: &Json, project: &Project) -> Vec<Json> {
    let mut out = Vec::new();
    for mount in service
        .get("volumes")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
    {
        let kind = mount.get("type").and_then(Json::as_str).unwrap_or("volume");
        let mut source = mount
            .get("source")
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_owned();
        if kind == "volume" && !source.is_empty() {
            if let Some(name) = project
                .model
                .get("volumes")
                .and_then(|volumes| volumes.get(&source))
                .and_then(|volume| volume.get("name"))
                .and_then(Json::as_str)
            {
                source = name.to_owned();
            }
        }
        let mut entry = json!({
            "Type": kind,
            "Source": source,
            "Target": mount.get("target"),
            "ReadOnly": mount.get("read_only").and_then(Json::as_bool).unwrap_or(false),
        });
        if let Some(bind) = mount.get("bind") {
            let mut options = Map::new();
            if let Some(propagation) = bind.get("propagation") {
                options.insert("Propagation".into(), propagation.clone());
            }
            // A short-syntax bind creates a missing host directory, as compose asks the
            // engine to.
            let create = bind
                .get("create_host_path")
                .and_then(Json::as_bool)
                .unwrap_or(true);
            options.insert("CreateMountpoint".into(), json!(create));
            entry["BindOptions"] = Json::Object(options);
        }
        if let Some(volume) = mount.get("volume") {
            let mut options = Map::new();
            if volume.get("nocopy").and_then(Json::as_bool) == Some(true) {
                options.insert("NoCopy".into(), json!(true));
            }
            if let Some(subpath) = volume.get("subpath") {
                options.insert("Subpath".into(), subpath.clone());
            }
            entry["VolumeOptions"] = Json::Object(options);
        }
        if let Some(tmpfs) = mount.get("tmpfs") {
            let mut options = Map::new();
            if let Some(size) = tmpfs.get("size").and_then(Json::as_str) {
                options.insert("SizeBytes".into(), json!(size.parse::<i64>().unwrap_or(0)));
            }
            if let Some(mode) = tmpfs.get("mode") {
                options.insert("Mode".into(), mode.clone());
            }
            entry["TmpfsOptions"] = Json::Object(options);
        }
        out.push(entry);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::path::Path;

    fn project(text: &str) -> Project {
        crate::load::load_text(text, "p", Path::new("/p"), &BTreeMap::new()).expect("loads")
    }

    #[test]
    fn a_service_becomes_the_engines_create_request() {
        let project = project(
            "services:\n  web:\n    image: busybox\n    command: httpd -f\n    environment: {A: '1', B: null}\n    ports: ['127.0.0.1:8080:80', '53/udp']\n    volumes: [data:/data, ./site:/www:ro]\n    restart: on-failure:3\n    stop_grace_period: 1m\n    healthcheck: {test: 'true', interval: 1s}\n    networks:\n      front: {aliases: [api]}\n    extra_hosts: ['h:1.2.3.4']\nvolumes:\n  data: {}\nnetworks:\n  front: {}\n",
        );
        let services = project.services();
        let plan = ContainerPlan {
            project: &project,
            service: "web",
            config: &services["web"],
            number: 1,
            name: "p-web-1".into(),
            joined_container: None,
            image_id: "sha256:abc".into(),
        };
        let request = create_request(&plan).expect("request");
        assert_eq!(request.name.as_deref(), Some("p-web-1"));
        assert_eq!(request.config.image, "busybox");
        assert_eq!(
            request.config.cmd,
            Some(vec!["httpd".to_owned(), "-f".to_owned()])
        );
        assert_eq!(request.config.env, Some(vec!["A=1".to_owned()]));
        assert_eq!(request.config.stop_timeout, Some(60));
        let labels = request.config.labels.clone().unwrap_or_default();
        assert_eq!(labels.get(labels::PROJECT).map(String::as_str), Some("p"));
        assert_eq!(labels.get(labels::SERVICE).map(String::as_str), Some("web"));
        assert_eq!(labels.get(labels::NUMBER).map(String::as_str), Some("1"));
        let health = request.config.healthcheck.clone().expect("healthcheck");
        assert_eq!(health.test, ["CMD-SHELL", "true"]);
        assert_eq!(health.interval, 1_000_000_000);
        let host = &request.host_config;
        assert_eq!(host.restart_policy.name, "on-failure");
        assert_eq!(host.restart_policy.maximum_retry_count, 3);
        let bindings = host.port_bindings.clone().unwrap_or_default();
        assert_eq!(bindings["80/tcp"][0].host_ip, "127.0.0.1");
        assert_eq!(bindings["80/tcp"][0].host_port, "8080");
        assert_eq!(bindings["53/udp"][0].host_port, "");
        let mounts = host.mounts.clone().unwrap_or_default();
        assert_eq!(mounts[0].source, "p_data");
        assert_eq!(mounts[1].source, "/p/site");
        assert!(mounts[1].read_only);
        assert_eq!(host.network_mode, "p_front");
        assert_eq!(host.extra_hosts, Some(vec!["h:1.2.3.4".to_owned()]));
        let endpoint = &request.networking_config.endpoints_config["p_front"];
        assert_eq!(
            endpoint.aliases,
            Some(vec![
                "p-web-1".to_owned(),
                "web".to_owned(),
                "api".to_owned()
            ])
        );
    }

    #[test]
    fn network_mode_service_joins_that_container() {
        let project = project(
            "services:\n  app:\n    image: x\n  side:\n    image: x\n    network_mode: service:app\n",
        );
        let services = project.services();
        let plan = ContainerPlan {
            project: &project,
            service: "side",
            config: &services["side"],
            number: 1,
            name: "p-side-1".into(),
            joined_container: Some("0123abcd".into()),
            image_id: String::new(),
        };
        let request = create_request(&plan).expect("request");
        assert_eq!(request.host_config.network_mode, "container:0123abcd");
        assert!(request.networking_config.endpoints_config.is_empty());
    }
}
