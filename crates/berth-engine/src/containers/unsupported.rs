//! Create-request settings berth cannot honour yet, refused by name before anything is made.
//! Docker's rule for berth: a setting is either done as Docker does it or refused with a clear
//! error — never accepted and then ignored. Values Docker itself refuses get Docker's words.

use berth_store::Store;
use berth_types::container::CreateRequest;

use crate::{EngineConfig, EngineError};

/// The log drivers Docker 20.10 ships; berth writes only `json-file`.
const DOCKER_LOG_DRIVERS: &[&str] = &[
    "none",
    "local",
    "json-file",
    "syslog",
    "journald",
    "gelf",
    "fluentd",
    "awslogs",
    "splunk",
    "etwlogs",
    "gcplogs",
    "logentries",
];

/// The OCI runtimes a Docker 20.10 daemon knows by default (berth is its own `runc`), and
/// berth's microVM backend (`--runtime vm`, the same as `--isolation=vm`).
const RUNTIMES: &[&str] = &["", "runc", super::vm::RUNTIME_NAME];

/// Refuses what berth would otherwise accept and ignore.
pub(crate) fn refuse_unsupported(
    store: &Store,
    config: &EngineConfig,
    request: &CreateRequest,
) -> Result<(), EngineError> {
    let host = &request.host_config;
    let refuse = |message: String| Err(EngineError::InvalidArgument(message));
    if !RUNTIMES.contains(&host.runtime.as_str()) {
        return refuse(format!("Unknown runtime specified {}", host.runtime));
    }
    if super::record::Isolation::of_request(&host.isolation, &host.runtime)
        == super::record::Isolation::Vm
    {
        super::vm::refuse_unsupported(request).map_err(EngineError::InvalidArgument)?;
    }
    log_config(&host.log_config)?;
    for (flag, mode) in [
        ("pid", &host.pid_mode),
        ("ipc", &host.ipc_mode),
        ("uts", &host.uts_mode),
    ] {
        if let Some(other) = mode.strip_prefix("container:") {
            // Docker's answer for a container that does not exist comes first.
            super::find_container(store, config, other)?;
            return refuse(format!(
                "--{flag} container:{other} is not supported yet: berth cannot join another container's {flag} namespace"
            ));
        }
    }
    if host
        .volumes_from
        .as_ref()
        .is_some_and(|from| !from.is_empty())
    {
        return refuse("--volumes-from is not supported yet".to_owned());
    }
    let endpoint_links = request
        .networking_config
        .endpoints_config
        .values()
        .any(|endpoint| {
            endpoint
                .links
                .as_ref()
                .is_some_and(|links| !links.is_empty())
        });
    if host.links.as_ref().is_some_and(|links| !links.is_empty()) || endpoint_links {
        return refuse(
            "--link is not supported yet: use a user-defined network, whose DNS resolves container names"
                .to_owned(),
        );
    }
    Ok(())
}

/// `--log-driver` and `--log-opt`: berth's json-file log has no options yet (no rotation).
fn log_config(log: &berth_types::container::LogConfig) -> Result<(), EngineError> {
    let refuse = |message: String| Err(EngineError::InvalidArgument(message));
    match log.r#type.as_str() {
        "" | "json-file" => {}
        driver if DOCKER_LOG_DRIVERS.contains(&driver) => {
            return refuse(format!(
                "log driver {driver:?} is not supported: berth writes json-file logs only"
            ));
        }
        driver => {
            // moby's words for a driver it does not have.
            return refuse(format!(
                "error looking up logging plugin {driver}: plugin {driver:?} not found"
            ));
        }
    }
    if let Some(options) = log.config.as_ref().filter(|options| !options.is_empty()) {
        let names: Vec<&str> = options.keys().map(String::as_str).collect();
        return refuse(format!(
            "log options are not supported yet (berth's json-file log does not rotate): {}",
            names.join(", ")
        ));
    }
    Ok(())
}
