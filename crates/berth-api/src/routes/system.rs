//! `_ping`, `version`, `info`, `events`, `system/df`, `auth`.

use berth_engine::events::{EventFilter, EventFollower};
use berth_registry::client::{ClientConfig, LoginRequest, LOGIN_SUCCEEDED};
use berth_registry::config::RegistryConfig;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::http::{Exchange, Response};
use crate::router::{reply, Handled};
use crate::server::{client_gone, Outcome, Server};

pub fn ping(exchange: &mut Exchange<'_>) -> Handled {
    let _ = exchange;
    reply(
        Response::text(200, "OK")
            .with_header("Builder-Version", "1")
            .with_header("Cache-Control", "no-cache, no-store, must-revalidate")
            .with_header("Pragma", "no-cache"),
    )
}

pub fn version() -> Handled {
    reply(Response::json(200, &crate::version::engine_version()))
}

pub fn info(server: &Server) -> Handled {
    let engine = server.engine()?;
    let mut info = berth_engine::system::system_info(&engine)?;
    let extra = json!({
        "ID": machine_id(),
        "DriverStatus": [["Backing Filesystem", "overlay"]],
        "Plugins": {
            "Volume": ["local"],
            "Network": ["bridge", "host", "null", "overlay"],
            "Authorization": Value::Null,
            "Log": ["json-file", "local"],
        },
        "MemoryLimit": true,
        "SwapLimit": true,
        "CpuCfsPeriod": true,
        "CpuCfsQuota": true,
        "CPUShares": true,
        "CPUSet": true,
        "PidsLimit": true,
        "IPv4Forwarding": true,
        "BridgeNfIptables": true,
        "BridgeNfIp6tables": true,
        "Debug": false,
        "NFd": 0,
        "OomKillDisable": true,
        "NGoroutines": 0,
        "SystemTime": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true),
        "LoggingDriver": berth_engine::containers::default_log_config()
            .map(|config| config.r#type)
            .unwrap_or_else(|_| "json-file".to_owned()),
        "NEventsListener": 0,
        "IndexServerAddress": "https://index.docker.io/v1/",
        "RegistryConfig": {
            "AllowNondistributableArtifactsCIDRs": [],
            "AllowNondistributableArtifactsHostnames": [],
            "InsecureRegistryCIDRs": ["127.0.0.0/8"],
            "IndexConfigs": {
                "docker.io": {
                    "Name": "docker.io",
                    "Mirrors": [],
                    "Secure": true,
                    "Official": true,
                }
            },
            "Mirrors": [],
        },
        "GenericResources": Value::Null,
        "HttpProxy": "",
        "HttpsProxy": "",
        "NoProxy": "",
        "Labels": [],
        "ExperimentalBuild": false,
        "Swarm": berth_engine::swarm::info_json(&server.config.engine.root),
        "LiveRestoreEnabled": true,
        "Isolation": "",
        "InitBinary": "",
        "ContainerdCommit": { "ID": "", "Expected": "" },
        "RuncCommit": { "ID": "", "Expected": "" },
        "InitCommit": { "ID": "", "Expected": "" },
        "SecurityOptions": ["name=seccomp,profile=default"],
        "Warnings": Value::Null,
    });
    if let (Some(info), Value::Object(extra)) = (info.as_object_mut(), extra) {
        for (key, value) in extra {
            info.entry(key).or_insert(value);
        }
    }
    reply(Response::json(200, &info))
}

fn machine_id() -> String {
    fs_err::read_to_string("/etc/machine-id")
        .map(|id| id.trim().to_owned())
        .unwrap_or_default()
}

/// `since`/`until` as nanoseconds since the epoch (Docker's time forms:
/// RFC 3339, Unix seconds with a fraction, or a duration before now).
fn event_time(exchange: &Exchange<'_>, name: &str) -> Result<Option<i64>, ApiError> {
    let Some(text) = exchange.query(name).filter(|text| !text.is_empty()) else {
        return Ok(None);
    };
    let time = berth_engine::logs::parse_docker_time(text, &chrono::Utc::now())
        .map_err(|error| ApiError::bad_request(error.to_string()))?;
    Ok(Some(time.timestamp_nanos_opt().unwrap_or(i64::MAX)))
}

/// The engine's event log as Docker's stream (see
/// `berth_engine::events::watch`): it ends at `until`, or when the client
/// leaves.
pub fn events(server: &Server, exchange: &mut Exchange<'_>) -> Handled {
    let since = event_time(exchange, "since")?;
    let until = event_time(exchange, "until")?;
    let pairs = crate::filters::parse(exchange.query("filters").unwrap_or_default())?;
    let filter = EventFilter::new(pairs)?;
    // Opened before the answer: events caused after it are all seen.
    let opened = EventFollower::open_for(&server.config.engine.root, since, until);
    let stream = exchange
        .connection
        .stream()
        .try_clone()
        .map_err(|error| ApiError::internal(error.to_string()))?;
    let Ok(mut writer) = exchange.chunked(200, "application/json", &[]) else {
        return Ok(Outcome::Streamed { keep_alive: false });
    };
    let ended = berth_engine::events::watch_opened(
        opened,
        since,
        until,
        &filter,
        |event| writer.json_line(&event.message_json()).is_ok(),
        || !client_gone(&stream),
    );
    let keep_alive = ended && writer.finish().is_ok();
    Ok(Outcome::Streamed { keep_alive })
}

pub fn disk_usage(server: &Server) -> Handled {
    let engine = server.engine()?;
    let store = engine.store();
    let images = berth_engine::images::list_images(store, &Default::default())?;
    let mut seen = std::collections::BTreeSet::new();
    let mut image_rows = Vec::new();
    let mut layers_size = 0u64;
    for image in &images {
        if seen.insert(image.id.to_string()) {
            layers_size += image.size;
            let parent = store
                .image(&image.id)
                .ok()
                .flatten()
                .and_then(|record| berth_engine::images::image_parent(store, &record).ok())
                .unwrap_or_default();
            image_rows.push(json!({
                "Id": image.id.to_string(),
                "ParentId": parent,
                "RepoTags": [format!("{}:{}", image.repository, image.tag)],
                "RepoDigests": [],
                "Created": crate::routes::unix_time(image.created.as_deref()),
                "Size": image.size,
                "SharedSize": -1,
                "VirtualSize": image.size,
                "Labels": Value::Null,
                "Containers": -1,
            }));
        }
    }
    let config = engine.config().clone();
    let containers: Vec<Value> = berth_engine::containers::list_containers(store, &config)?
        .iter()
        .map(|container| crate::routes::containers::summary(store, &config, container))
        .collect();
    let volumes: Vec<Value> = store
        .volumes()?
        .iter()
        .map(|row| {
            let mut volume = berth_engine::volumes::volume_json(&engine, row);
            volume["UsageData"] = json!({ "Size": -1, "RefCount": -1 });
            volume
        })
        .collect();
    reply(Response::json(
        200,
        &json!({
            "LayersSize": layers_size,
            "Images": image_rows,
            "Containers": containers,
            "Volumes": volumes,
            "BuildCache": [],
        }),
    ))
}

/// `docker login`: dockerd's `postAuth`. The credentials are checked
/// against the registry the body names, as `berth login` checks them
/// (`berth_registry::client::login`: ping, challenge, Basic or token,
/// HTTPS then HTTP for insecure registries), on this connection's thread,
/// so other connections go on being served meanwhile. Success is 200
/// `{"IdentityToken": …, "Status": "Login Succeeded"}`; a failure has
/// dockerd's status (401 only where a token service refused the
/// credentials, 400 for an unusable address, else 500) and words.
pub fn auth(exchange: &mut Exchange<'_>) -> Handled {
    let body: Value = exchange.json()?;
    let request = login_request(&body)?;
    let registry = RegistryConfig::load_or_default(&berth_engine::config_file())
        .map_err(|error| ApiError::internal(berth_engine::ErrorChain(&error).to_string()))?;
    match berth_registry::client::login(&request, &registry, &ClientConfig::default()) {
        Ok(success) => reply(Response::json(
            200,
            &json!({
                "IdentityToken": success.identity_token.unwrap_or_default(),
                "Status": LOGIN_SUCCEEDED,
            }),
        )),
        Err(error) => Err(ApiError::new(
            error.http_status(),
            berth_engine::ErrorChain(&error).to_string(),
        )),
    }
}

/// moby's `types.AuthConfig` from the body: Go's JSON decoding matches
/// field names without regard to case; `auth` and `email` are not used
/// for the check, by dockerd either.
fn login_request(body: &Value) -> Result<LoginRequest, ApiError> {
    let Value::Object(fields) = body else {
        return Err(ApiError::bad_request(
            "json: cannot unmarshal into Go value of type types.AuthConfig",
        ));
    };
    let text = |name: &str| -> Result<String, ApiError> {
        match fields
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
        {
            None | Some((_, Value::Null)) => Ok(String::new()),
            Some((_, Value::String(text))) => Ok(text.clone()),
            Some((_, _)) => Err(ApiError::bad_request(format!(
                "json: cannot unmarshal into Go struct field AuthConfig.{name} of type string"
            ))),
        }
    };
    Ok(LoginRequest {
        server_address: text("serveraddress")?,
        username: text("username")?,
        password: text("password")?,
        identity_token: text("identitytoken")?,
    })
}
