//! `network connect` and `network disconnect`: change the networks a
//! container joins at each start, and, when it runs, its live endpoints.

use std::os::fd::AsFd;

use super::endpoints::{connect_one, container_endpoints, disconnect_container, ContainerIdentity};
use super::lookup::find_network;
use super::record::NetworkRequest;
use super::rules::sync_rules;
use super::NetworkError;
use crate::containers::find_container;
use crate::containers::lookup::save_record;
use crate::containers::record::ContainerRecord;
use crate::{Engine, EngineError};

/// Looks up, as a start begins, the networks the container was created on
/// before they existed ([`NetworkRequest::awaiting_network`]) and keeps
/// what it found in the record. One still missing stays unbound: the
/// monitor's connect then fails with dockerd's "network NAME not found",
/// recorded in the container's state as dockerd records it.
pub(crate) fn bind_awaiting_networks(
    engine: &mut Engine,
    record: &mut ContainerRecord,
) -> Result<(), EngineError> {
    if record.run.networks.iter().all(NetworkRequest::is_bound) {
        return Ok(());
    }
    let (store, kernel) = engine.network_parts();
    let mut bound = false;
    for request in &mut record.run.networks {
        if request.is_bound() {
            continue;
        }
        match find_network(store, kernel, &request.name) {
            Ok(network) if !network.is_bridge() => return Err(NetworkError::HostNetwork.into()),
            Ok(network) => {
                *request = request.clone().bind_to(&network)?;
                bound = true;
            }
            Err(EngineError::Network(NetworkError::NotFound(_))) => {}
            Err(error) => return Err(error),
        }
    }
    if bound {
        save_record(store, record)?;
    }
    Ok(())
}

/// `network connect [--alias A] [--ip IP] [--link C:A] NETWORK CONTAINER`
/// (the API's `EndpointConfig`).
pub fn connect_network(
    engine: &mut Engine,
    network_text: &str,
    container_text: &str,
    settings: &berth_types::container::EndpointSettings,
) -> Result<(), EngineError> {
    let (container, network) = find_both(engine, network_text, container_text)?;
    let vm_dir = vm_dir(engine, &container.record.id);
    let (store, kernel) = engine.network_parts();
    let mut record = container.record.clone();
    let mode = record.run.network_mode.as_str();
    if mode == "none" {
        return Err(NetworkError::PrivateMode.into());
    }
    if mode == "host" || mode.starts_with("container:") || !network.is_bridge() {
        return Err(NetworkError::HostNetwork.into());
    }
    let settings = with_configured_mac(&record, &network, settings);
    let request = NetworkRequest::for_endpoint(&network, &settings)?;
    if record
        .run
        .networks
        .iter()
        .any(|request| request.network_id == network.id)
    {
        return Err(NetworkError::AlreadyConnected {
            container: record.name,
            network: network.name,
        }
        .into());
    }
    if in_vm(&record) && container.state.is_running() {
        // microvm has no hotplug: one of the cards its VM booted with spare
        // takes the network (`containers/vm/network.rs`); a stopped one
        // gets a card for it at its next start.
        refuse_unless_running(&record, &container.state)?;
        connect_running_vm(
            store,
            kernel,
            &record,
            container.state.pid,
            &request,
            &network,
            &vm_dir,
        )?;
    } else if container.state.is_running() {
        let netns = fs_err::File::open(format!("/proc/{}/ns/net", container.state.pid))
            .map_err(NetworkError::OpenNamespace)?;
        let device =
            super::endpoints::container_device(container_endpoints(store, &record.id).len());
        let identity = ContainerIdentity {
            id: &record.id,
            name: &record.name,
        };
        let (_, bridge_created) = connect_one(
            store,
            kernel,
            &identity,
            netns.as_fd(),
            &request,
            &device,
            false,
            &[],
        )?;
        if bridge_created {
            sync_rules(store, kernel)?;
        }
    }
    record.run.networks.push(request);
    save_record(store, &record)?;
    crate::events::emit_network(
        store,
        "connect",
        &network.id,
        &network.name,
        Some(&record.id),
    );
    Ok(())
}

/// The endpoint settings, with the container's `Config.MacAddress` (the
/// deprecated `--mac-address`) when none is asked for and `network` is the
/// one its network mode names: dockerd applies it at every connect to that
/// network, so a container disconnected from it and connected again (as
/// compose does before each start) keeps its MAC.
fn with_configured_mac(
    record: &crate::containers::record::ContainerRecord,
    network: &super::record::Network,
    settings: &berth_types::container::EndpointSettings,
) -> berth_types::container::EndpointSettings {
    let mut settings = settings.clone();
    let configured = record.config["MacAddress"].as_str().unwrap_or_default();
    let mode = match record.run.network_mode.as_str() {
        "default" => "bridge",
        mode => mode,
    };
    let is_mode_network =
        network.name == mode || (mode.len() >= 12 && network.id.starts_with(mode));
    if settings.mac_address.is_empty() && !configured.is_empty() && is_mode_network {
        settings.mac_address = configured.to_owned();
    }
    settings
}

/// `network disconnect NETWORK CONTAINER`.
pub fn disconnect_network(
    engine: &mut Engine,
    network_text: &str,
    container_text: &str,
) -> Result<(), EngineError> {
    let (container, network) = find_both(engine, network_text, container_text)?;
    let vm_dir = vm_dir(engine, &container.record.id);
    let (store, kernel) = engine.network_parts();
    let mut record = container.record.clone();
    let connected = record
        .run
        .networks
        .iter()
        .any(|request| request.network_id == network.id);
    if in_vm(&record) && container.state.is_running() && connected {
        // The guest first: its card goes back among the spares (its host
        // tap down and bridged to nothing), then the veth goes as for a
        // namespace container.
        refuse_unless_running(&record, &container.state)?;
        let socket = crate::containers::vm::exec::socket_path(&vm_dir);
        crate::containers::vm::exec::disconnect_network(&socket, &network.id).map_err(
            |reason| NetworkError::VmDisconnect {
                container: record.name.clone(),
                network: network.name.clone(),
                reason,
            },
        )?;
    }
    let before = record.run.networks.len();
    record
        .run
        .networks
        .retain(|request| request.network_id != network.id);
    if record.run.networks.len() == before {
        return Err(NetworkError::NotConnected {
            container: record.id,
            network: network.name,
        }
        .into());
    }
    disconnect_container(store, kernel, &record.id, Some(&network.id));
    save_record(store, &record)?;
    let (id, name) = (&network.id, &network.name);
    crate::events::emit_network(store, "disconnect", id, name, Some(&record.id));
    Ok(())
}

/// The VM directory of container `id` (where its shim's socket is).
fn vm_dir(engine: &Engine, id: &str) -> std::path::PathBuf {
    let config = engine.config();
    crate::containers::paths::ContainerPaths::new(&config.root, &config.run_root, id).vm
}

/// A paused VM cannot answer (its whole VM is frozen), a restarting one
/// has no VM: refused by name, before anything is stored or connected.
fn refuse_unless_running(
    record: &ContainerRecord,
    state: &crate::containers::state::ContainerState,
) -> Result<(), EngineError> {
    use crate::containers::state::Status;
    let (state, advice) = match state.status {
        Status::Paused => ("paused", "unpause it first"),
        Status::Restarting => ("restarting", "try again once it runs"),
        _ => return Ok(()),
    };
    Err(NetworkError::VmNotRunning {
        container: record.name.clone(),
        state,
        advice,
    }
    .into())
}

/// `network connect` of a running VM container: the veth into its shim's
/// namespace as for a namespace container (under the lowest free `ethN`),
/// then a spare card of its VM bridged to it and given the address in
/// the guest. A refusal (every card in use) or a failure leaves nothing:
/// no address, no veth, no rule.
fn connect_running_vm(
    store: &mut berth_store::Store,
    kernel: &mut dyn berth_net::kernel::Kernel,
    record: &ContainerRecord,
    pid: i32,
    request: &NetworkRequest,
    network: &super::record::Network,
    vm_dir: &std::path::Path,
) -> Result<(), EngineError> {
    let failed = |reason: String| NetworkError::VmConnect {
        container: record.name.clone(),
        network: network.name.clone(),
        reason,
    };
    let device = crate::containers::vm::network::free_device_name(pid).map_err(failed)?;
    let netns =
        fs_err::File::open(format!("/proc/{pid}/ns/net")).map_err(NetworkError::OpenNamespace)?;
    let identity = ContainerIdentity {
        id: &record.id,
        name: &record.name,
    };
    let (endpoint, bridge_created) = connect_one(
        store,
        kernel,
        &identity,
        netns.as_fd(),
        request,
        &device,
        false,
        &[],
    )?;
    let undo = |store: &mut berth_store::Store, kernel: &mut dyn berth_net::kernel::Kernel| {
        disconnect_container(store, kernel, &record.id, Some(&network.id));
    };
    if bridge_created {
        if let Err(error) = sync_rules(store, kernel) {
            undo(store, kernel);
            return Err(error);
        }
    }
    let guest =
        match crate::containers::vm::guest_network(&endpoint, std::slice::from_ref(request), false)
        {
            Ok(guest) => guest,
            Err(reason) => {
                undo(store, kernel);
                return Err(failed(reason).into());
            }
        };
    let socket = crate::containers::vm::exec::socket_path(vm_dir);
    use crate::containers::vm::exec::NetworkChangeError;
    match crate::containers::vm::exec::connect_network(&socket, &network.id, &device, guest) {
        Ok(()) => Ok(()),
        Err(error) => {
            undo(store, kernel);
            Err(match error {
                NetworkChangeError::Limit(reason) => NetworkError::NoSpareCard {
                    container: record.name.clone(),
                    network: network.name.clone(),
                    reason,
                },
                NetworkChangeError::Failed(reason) => failed(reason),
            }
            .into())
        }
    }
}

fn in_vm(record: &crate::containers::record::ContainerRecord) -> bool {
    record.run.isolation == crate::containers::record::Isolation::Vm
}

/// The container and the network a connect or disconnect names.
fn find_both(
    engine: &mut Engine,
    network_text: &str,
    container_text: &str,
) -> Result<(crate::containers::Container, super::record::Network), EngineError> {
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, container_text)?;
    let (store, kernel) = engine.network_parts();
    let network = find_network(store, kernel, network_text)?;
    Ok((container, network))
}
