//! Create-request settings berth cannot honour yet, refused by name before anything is made.
//! Docker's rule for berth: a setting is either done as Docker does it or refused with a clear
//! error — never accepted and then ignored. Values Docker itself refuses get Docker's words.

use berth_store::Store;
use berth_types::container::CreateRequest;

use crate::{EngineConfig, EngineError};

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
    // The container to join must exist at create (dockerd's words); that
    // it runs is checked at each start (`monitor/joined.rs`).
    for mode in [&host.pid_mode, &host.ipc_mode] {
        if let Some(other) = mode.strip_prefix("container:") {
            super::find_container(store, config, other)?;
        }
    }
    if let Some(other) = host.uts_mode.strip_prefix("container:") {
        super::find_container(store, config, other)?;
        return refuse(format!(
            "--uts container:{other} is not supported yet: berth cannot join another container's uts namespace"
        ));
    }
    Ok(())
}
