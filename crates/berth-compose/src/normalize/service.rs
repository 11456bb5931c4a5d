//! One service in compose's normalised form: every short syntax expanded, paths absolute,
//! `env_file` read into `environment`, keys in the order docker compose v2 prints them.
//! Keys berth does not implement are refused by name.

use std::path::Path;

use serde_json::{json, Map, Value as Json};

use super::ports;
use super::values::{
    boolean, bytes, check_keys, duration, format_duration, integer, json_strings, key_value_map,
    map, must_be, object, resolve_path, shell_split, string, string_list, string_or_list, Result,
};
use super::volumes::{self, PathContext};
use crate::error::ComposeError;
use crate::interpolate::Lookup;
use crate::yaml::{Node, Value};

/// The keys of a service that berth implements, in the order compose prints them.
pub const ORDER: &[&str] = &[
    "profiles",
    "deploy",
    "restart",
    "scale",
    "container_name",
    "cap_add",
    "cap_drop",
    "command",
    "devices",
    "dns",
    "dns_opt",
    "dns_search",
    "domainname",
    "entrypoint",
    "environment",
    "extra_hosts",
    "group_add",
    "hostname",
    "image",
    "init",
    "ipc",
    "labels",
    "logging",
    "network_mode",
    "networks",
    "oom_score_adj",
    "pid",
    "privileged",
    "read_only",
    "security_opt",
    "shm_size",
    "stop_grace_period",
    "stop_signal",
    "sysctls",
    "tmpfs",
    "ulimits",
    "user",
    "volumes",
    "working_dir",
    "build",
    "depends_on",
    "expose",
    "healthcheck",
    "ports",
    "stdin_open",
    "tty",
];

/// Keys of the compose specification that berth does not implement (yet): refused by name.
pub const REFUSED: &[&str] = &[
    "annotations",
    "attach",
    "blkio_config",
    "cgroup",
    "cgroup_parent",
    "configs",
    "cpu_count",
    "cpu_percent",
    "cpu_period",
    "cpu_quota",
    "cpu_rt_period",
    "cpu_rt_runtime",
    "cpu_shares",
    "cpus",
    "cpuset",
    "credential_spec",
    "develop",
    "device_cgroup_rules",
    "external_links",
    "gpus",
    "isolation",
    "label_file",
    "links",
    "mac_address",
    "mem_limit",
    "mem_reservation",
    "mem_swappiness",
    "memswap_limit",
    "models",
    "oom_kill_disable",
    "pids_limit",
    "platform",
    "post_start",
    "pre_start",
    "pre_stop",
    "provider",
    "pull_policy",
    "runtime",
    "secrets",
    "storage_opt",
    "use_api_socket",
    "userns_mode",
    "uts",
    "volume_driver",
    "volumes_from",
];

/// Keys handled before normalisation (`extends` is resolved by the loader; `env_file` is read
/// into `environment`).
const CONSUMED: &[&str] = &["extends", "env_file"];

pub struct ServiceContext<'a> {
    /// Relative paths of this service resolve here (the project directory, or an included
    /// file's).
    pub base: &'a Path,
    pub home: Option<&'a str>,
    /// The project's variables (`.env` over the process environment), for `environment: [KEY]`
    /// and build args without a value.
    pub variables: &'a dyn Lookup,
}

pub fn normalize(name: &str, node: &Node, context: &ServiceContext<'_>) -> Result<Json> {
    let path = format!("services.{name}");
    let mut known: Vec<&str> = ORDER.to_vec();
    known.extend_from_slice(CONSUMED);
    check_keys(node, &path, &known, REFUSED)?;
    let entries = map(node, &path)?;
    let mut out = Map::new();
    let mut extensions = Vec::new();
    for (key, value) in entries {
        let field = format!("{path}.{key}");
        if key.starts_with("x-") {
            extensions.push((key.clone(), super::to_json(value)));
            continue;
        }
        let normalized = match key.as_str() {
            "extends" => continue,
            "env_file" => continue,
            "environment" => continue,
            "command" | "entrypoint" => match &value.value {
                Value::Null => Json::Null,
                Value::String(text) => json_strings(shell_split(text, value, &field)?),
                _ => json_strings(string_list(value, &field)?),
            },
            "cap_add" | "cap_drop" | "dns_opt" | "security_opt" | "group_add" | "profiles" => {
                json_strings(string_list(value, &field)?)
            }
            "dns" | "dns_search" | "tmpfs" => json_strings(string_or_list(value, &field)?),
            "container_name" | "domainname" | "hostname" | "image" | "ipc" | "network_mode"
            | "pid" | "restart" | "stop_signal" | "user" | "working_dir" => {
                json!(string(value, &field)?)
            }
            "init" => json!(boolean(value, &field)?),
            // Go's `omitempty` booleans: false is not printed.
            "privileged" | "read_only" | "stdin_open" | "tty" => {
                if !boolean(value, &field)? {
                    continue;
                }
                json!(true)
            }
            "oom_score_adj" | "scale" => json!(integer(value, &field)?),
            "shm_size" => json!(bytes(value, &field)?.to_string()),
            "stop_grace_period" => json!(format_duration(duration(value, &field)?)),
            "labels" | "sysctls" => {
                object(key_value_map(value, &field, '=', &|_| Some(json!("")))?)
            }
            "extra_hosts" => extra_hosts(value, &field)?,
            "devices" => volumes::devices(value, &field)?,
            "ports" => ports::ports(value, &field)?,
            "expose" => ports::expose(value, &field)?,
            "volumes" => volumes::volumes(
                value,
                &field,
                &PathContext {
                    base: context.base,
                    home: context.home,
                },
            )?,
            "networks" => networks(value, &field)?,
            "depends_on" => depends_on(value, &field)?,
            "healthcheck" => healthcheck(value, &field)?,
            "logging" => logging(value, &field)?,
            "ulimits" => ulimits(value, &field)?,
            "deploy" => deploy(value, &field)?,
            "build" => build(value, &field, context)?,
            other => {
                return Err(ComposeError::schema(
                    &value.at,
                    &path,
                    format!("additional properties '{other}' not allowed"),
                ))
            }
        };
        out.insert(key.clone(), normalized);
    }
    if let Some(environment) = environment(node, &path, context)? {
        out.insert("environment".into(), environment);
    }
    let network_mode = out
        .get("network_mode")
        .and_then(Json::as_str)
        .map(str::to_owned);
    if let Some(mode) = &network_mode {
        if let Some(other) = mode.strip_prefix("service:") {
            add_implicit_dependency(&mut out, other);
        }
        if out.contains_key("networks") {
            return Err(ComposeError::Other(format!(
                "service {name} declares mutually exclusive `network_mode` and `networks`: invalid compose project"
            )));
        }
    } else if !out.contains_key("networks") {
        out.insert("networks".into(), json!({"default": null}));
    }
    if !out.contains_key("image") && !out.contains_key("build") {
        return Err(ComposeError::Invalid(format!(
            "service {name:?} has neither an image nor a build context specified"
        )));
    }
    let mut ordered = Map::new();
    for key in ORDER {
        if let Some(value) = out.remove(*key) {
            ordered.insert((*key).to_owned(), value);
        }
    }
    for (key, value) in extensions {
        ordered.insert(key, value);
    }
    Ok(Json::Object(ordered))
}

/// `network_mode: service:x` makes the service depend on x (restarted with it).
fn add_implicit_dependency(out: &mut Map<String, Json>, other: &str) {
    let depends = out
        .entry("depends_on")
        .or_insert_with(|| Json::Object(Map::new()));
    if let Some(depends) = depends.as_object_mut() {
        if !depends.contains_key(other) {
            depends.insert(
                other.to_owned(),
                json!({"condition": "service_started", "restart": true, "required": true}),
            );
            let mut sorted: Vec<(String, Json)> = std::mem::take(depends).into_iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            depends.extend(sorted);
        }
    }
}

/// `environment` with `env_file`s read under it (the service's own values win).
fn environment(node: &Node, path: &str, context: &ServiceContext<'_>) -> Result<Option<Json>> {
    let mut entries: Vec<(String, Json)> = Vec::new();
    let mut any = false;
    if let Some(files) = node.get("env_file") {
        any = true;
        let field = format!("{path}.env_file");
        for (file, required) in env_files(files, &field)? {
            let resolved = resolve_path(context.base, &file, context.home);
            if !resolved.exists() {
                if required {
                    return Err(ComposeError::Other(format!(
                        "env file {} not found: stat {}: no such file or directory",
                        resolved.display(),
                        resolved.display()
                    )));
                }
                continue;
            }
            for (key, value) in crate::dotenv::read(&resolved, context.variables)? {
                match entries.iter_mut().find(|(name, _)| *name == key) {
                    Some(entry) => entry.1 = json!(value),
                    None => entries.push((key, json!(value))),
                }
            }
        }
    }
    if let Some(environment) = node.get("environment") {
        any = true;
        let field = format!("{path}.environment");
        let own = key_value_map(environment, &field, '=', &|key| {
            Some(match context.variables.lookup(key) {
                Some(value) => json!(value),
                None => Json::Null,
            })
        })?;
        for (key, value) in own {
            match entries.iter_mut().find(|(name, _)| *name == key) {
                Some(entry) => entry.1 = value,
                None => entries.push((key, value)),
            }
        }
    }
    if !any {
        return Ok(None);
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Some(object(entries)))
}

/// `env_file: a.env`, `[a.env]` or `[{path: a.env, required: false}]`.
fn env_files(node: &Node, path: &str) -> Result<Vec<(String, bool)>> {
    let items = match &node.value {
        Value::Seq(items) => items.clone(),
        _ => vec![node.clone()],
    };
    let mut out = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let field = format!("{path}.{index}");
        match &item.value {
            Value::Map(_) => {
                check_keys(item, &field, &["path", "required"], &["format"])?;
                let file = item
                    .get("path")
                    .ok_or_else(|| ComposeError::schema(&item.at, &field, "path is required"))?;
                let required = match item.get("required") {
                    Some(required) => boolean(required, &field)?,
                    None => true,
                };
                out.push((string(file, &field)?, required));
            }
            _ => out.push((string(item, &field)?, true)),
        }
    }
    Ok(out)
}

fn extra_hosts(node: &Node, path: &str) -> Result<Json> {
    let mut hosts: Vec<String> = match &node.value {
        Value::Map(entries) => entries
            .iter()
            .map(|(host, address)| {
                Ok(format!(
                    "{host}={}",
                    string(address, &format!("{path}.{host}"))?
                ))
            })
            .collect::<Result<_>>()?,
        _ => string_list(node, path)?
            .into_iter()
            .map(|entry| {
                // `host:ip` and `host=ip` are both accepted; compose prints `host=ip`. An IPv6
                // address holds colons, so only the first separator splits.
                match entry.split_once('=') {
                    Some(_) => entry,
                    None => match entry.split_once(':') {
                        Some((host, address)) => format!("{host}={address}"),
                        None => entry,
                    },
                }
            })
            .collect(),
    };
    // compose keeps hosts in a map: printed sorted by name.
    hosts.sort();
    Ok(json_strings(hosts))
}

fn networks(node: &Node, path: &str) -> Result<Json> {
    let mut entries: Vec<(String, Json)> = Vec::new();
    match &node.value {
        Value::Seq(_) => {
            for name in string_list(node, path)? {
                entries.push((name, Json::Null));
            }
        }
        Value::Map(items) => {
            for (name, value) in items {
                let field = format!("{path}.{name}");
                let value = match &value.value {
                    Value::Null => Json::Null,
                    Value::Map(_) => {
                        check_keys(
                            value,
                            &field,
                            &["aliases", "ipv4_address", "ipv6_address"],
                            &[
                                "driver_opts",
                                "gw_priority",
                                "interface_name",
                                "link_local_ips",
                                "mac_address",
                                "priority",
                            ],
                        )?;
                        let mut out = Map::new();
                        if let Some(aliases) = value.get("aliases") {
                            out.insert(
                                "aliases".into(),
                                json_strings(string_list(aliases, &format!("{field}.aliases"))?),
                            );
                        }
                        for key in ["ipv4_address", "ipv6_address"] {
                            if let Some(address) = value.get(key) {
                                out.insert(key.into(), json!(string(address, &field)?));
                            }
                        }
                        Json::Object(out)
                    }
                    _ => return Err(must_be(value, &field, "object")),
                };
                entries.push((name.clone(), value));
            }
        }
        _ => return Err(must_be(node, path, "object")),
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(object(entries))
}

fn depends_on(node: &Node, path: &str) -> Result<Json> {
    let mut entries: Vec<(String, Json)> = Vec::new();
    match &node.value {
        Value::Seq(_) => {
            for name in string_list(node, path)? {
                entries.push((
                    name,
                    json!({"condition": "service_started", "required": true}),
                ));
            }
        }
        Value::Map(items) => {
            for (name, value) in items {
                let field = format!("{path}.{name}");
                if matches!(value.value, Value::Null) {
                    entries.push((
                        name.clone(),
                        json!({"condition": "service_started", "required": true}),
                    ));
                    continue;
                }
                check_keys(value, &field, &["condition", "restart", "required"], &[])?;
                let condition = match value.get("condition") {
                    Some(condition) => string(condition, &field)?,
                    None => "service_started".to_owned(),
                };
                if !matches!(
                    condition.as_str(),
                    "service_started" | "service_healthy" | "service_completed_successfully"
                ) {
                    return Err(ComposeError::schema(
                        &value.at,
                        &format!("{field}.condition"),
                        "must be one of the following: \"service_started\", \"service_healthy\", \"service_completed_successfully\"",
                    ));
                }
                let mut out = Map::new();
                out.insert("condition".into(), json!(condition));
                if let Some(restart) = value.get("restart") {
                    out.insert("restart".into(), json!(boolean(restart, &field)?));
                }
                let required = match value.get("required") {
                    Some(required) => boolean(required, &field)?,
                    None => true,
                };
                out.insert("required".into(), json!(required));
                entries.push((name.clone(), Json::Object(out)));
            }
        }
        _ => return Err(must_be(node, path, "object")),
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(object(entries))
}

fn healthcheck(node: &Node, path: &str) -> Result<Json> {
    check_keys(
        node,
        path,
        &[
            "test",
            "interval",
            "timeout",
            "retries",
            "start_period",
            "start_interval",
            "disable",
        ],
        &[],
    )?;
    let mut out = Map::new();
    if let Some(test) = node.get("test") {
        let field = format!("{path}.test");
        let test = match &test.value {
            Value::String(text) => vec!["CMD-SHELL".to_owned(), text.clone()],
            _ => string_list(test, &field)?,
        };
        out.insert("test".into(), json_strings(test));
    }
    for key in ["timeout", "interval"] {
        if let Some(value) = node.get(key) {
            out.insert(
                key.into(),
                json!(format_duration(duration(value, &format!("{path}.{key}"))?)),
            );
        }
    }
    if let Some(retries) = node.get("retries") {
        out.insert("retries".into(), json!(integer(retries, path)?));
    }
    for key in ["start_period", "start_interval"] {
        if let Some(value) = node.get(key) {
            out.insert(
                key.into(),
                json!(format_duration(duration(value, &format!("{path}.{key}"))?)),
            );
        }
    }
    if let Some(disable) = node.get("disable") {
        if boolean(disable, path)? {
            out.insert("disable".into(), json!(true));
        }
    }
    Ok(Json::Object(out))
}

fn logging(node: &Node, path: &str) -> Result<Json> {
    check_keys(node, path, &["driver", "options"], &[])?;
    let mut out = Map::new();
    if let Some(driver) = node.get("driver") {
        out.insert("driver".into(), json!(string(driver, path)?));
    }
    if let Some(options) = node.get("options") {
        let options = key_value_map(options, &format!("{path}.options"), '=', &|_| {
            Some(Json::Null)
        })?;
        out.insert("options".into(), object(options));
    }
    Ok(Json::Object(out))
}

fn ulimits(node: &Node, path: &str) -> Result<Json> {
    let mut entries: Vec<(String, Json)> = Vec::new();
    for (name, value) in map(node, path)? {
        let field = format!("{path}.{name}");
        let value = match &value.value {
            Value::Map(_) => {
                check_keys(value, &field, &["soft", "hard"], &[])?;
                let soft = value
                    .get("soft")
                    .ok_or_else(|| ComposeError::schema(&value.at, &field, "soft is required"))?;
                let hard = value
                    .get("hard")
                    .ok_or_else(|| ComposeError::schema(&value.at, &field, "hard is required"))?;
                json!({"soft": integer(soft, &field)?, "hard": integer(hard, &field)?})
            }
            // compose keeps a single 0 as soft and hard limits of 0 (its `single` field is
            // omitted when empty).
            _ => match integer(value, &field)? {
                0 => json!({"soft": 0, "hard": 0}),
                single => json!(single),
            },
        };
        entries.push((name.clone(), value));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(object(entries))
}

fn deploy(node: &Node, path: &str) -> Result<Json> {
    check_keys(
        node,
        path,
        &["replicas"],
        &[
            "mode",
            "endpoint_mode",
            "labels",
            "placement",
            "resources",
            "restart_policy",
            "rollback_config",
            "update_config",
        ],
    )?;
    let mut out = Map::new();
    if let Some(replicas) = node.get("replicas") {
        out.insert(
            "replicas".into(),
            json!(integer(replicas, &format!("{path}.replicas"))?),
        );
    }
    Ok(Json::Object(out))
}

fn build(node: &Node, path: &str, context: &ServiceContext<'_>) -> Result<Json> {
    let mut out = Map::new();
    let (context_dir, dockerfile) = match &node.value {
        Value::String(text) => (text.clone(), None),
        Value::Map(_) => {
            check_keys(
                node,
                path,
                &["context", "dockerfile", "args", "target"],
                &[
                    "additional_contexts",
                    "cache_from",
                    "cache_to",
                    "dockerfile_inline",
                    "entitlements",
                    "extra_hosts",
                    "isolation",
                    "labels",
                    "network",
                    "no_cache",
                    "platforms",
                    "privileged",
                    "provenance",
                    "pull",
                    "sbom",
                    "secrets",
                    "shm_size",
                    "ssh",
                    "tags",
                    "ulimits",
                ],
            )?;
            let context_dir = match node.get("context") {
                Some(value) => string(value, &format!("{path}.context"))?,
                None => ".".to_owned(),
            };
            let dockerfile = match node.get("dockerfile") {
                Some(value) => Some(string(value, &format!("{path}.dockerfile"))?),
                None => None,
            };
            (context_dir, dockerfile)
        }
        _ => return Err(must_be(node, path, "object")),
    };
    out.insert(
        "context".into(),
        json!(resolve_path(context.base, &context_dir, context.home)
            .display()
            .to_string()),
    );
    out.insert(
        "dockerfile".into(),
        json!(dockerfile.unwrap_or_else(|| "Dockerfile".to_owned())),
    );
    if let Some(args) = node.get("args") {
        let args = key_value_map(args, &format!("{path}.args"), '=', &|key| {
            context.variables.lookup(key).map(Json::String)
        })?;
        out.insert("args".into(), object(args));
    }
    if let Some(target) = node.get("target") {
        out.insert("target".into(), json!(string(target, path)?));
    }
    Ok(Json::Object(out))
}
