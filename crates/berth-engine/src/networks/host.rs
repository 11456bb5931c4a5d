//! The host objects a root owns, and when they go. A root's default bridge,
//! its nftables table and its rules in Docker's `DOCKER-USER` chain are made
//! by the first connect that needs them (looking networks up makes nothing)
//! and are needed while the root has a network user:
//!
//! - a container endpoint on any of its networks (a running container on
//!   the default bridge or a user network), or
//! - a user-defined bridge network (its bridge, made by `network create`
//!   and removed by `network rm`/`prune`, needs the table's NAT and
//!   isolation rules).
//!
//! Like Docker's `docker0`, they stay when the last user goes (making and
//! removing them around every `run --rm` of an idle root cost ≈ 85 ms a
//! run); `berth network prune` removes them when the root has no user, and
//! the removal of the last user network does too. The next connect makes
//! the bridge again (checking its address range against the host's routes:
//! another root may have taken it meanwhile) and its rules with it.
//!
//! Races: a connect holds the root's lock shared from finding (or making)
//! the bridge until its endpoint is in the store; the removal holds it
//! exclusively, and the store's rules lock, while it checks the store and
//! removes. The table itself is only ever rendered under the rules lock
//! from what the store holds (`rules::sync_rules`), and rendered as absent
//! when there is no user, so a late sync never brings back a table the
//! removal took, and a new user network's sync never loses its table to a
//! removal that checked before the network was stored.
//!
//! Crash safety: the removal writes `<root>/host-network.releasing` before
//! it removes anything and deletes it when done; the next network lookup
//! (every `run`, `create`, `network` command) that finds the mark finishes
//! the removal (or, when a user came meanwhile, just drops the mark: that
//! user's connect made the bridge and rules again). The bridge and the
//! table go at once; a crash that leaves only the bridge is found by the
//! next lookup too (a default bridge with no user), one that leaves only
//! the table by the mark (and the next connect's rule sync replaces it).

use std::path::{Path, PathBuf};

use berth_net::instance::{
    lock_host_networks, lock_root_network, HostNetworkLock, Instance, RootNetworkLock,
};
use berth_net::ipam::{choose_subnet, default_pools};
use berth_net::kernel::Kernel;
use berth_store::{NetworkStoreError, Store};

use super::lookup::{configured_bip, network_store_error, taken_subnets};
use super::record::{Network, NetworkRecord};
use super::NetworkError;
use crate::EngineError;

const RELEASING_MARK: &str = "host-network.releasing";

fn releasing_mark(root: &Path) -> PathBuf {
    root.join(RELEASING_MARK)
}

/// True while the root has a network user: an endpoint on any network, or
/// a user-defined bridge network.
pub(crate) fn root_in_use(store: &Store) -> Result<bool, EngineError> {
    if !store.endpoints(None, None)?.is_empty() {
        return Ok(true);
    }
    Ok(store
        .networks()?
        .iter()
        .filter_map(|row| Network::from_row(row).ok())
        .any(|network| network.is_bridge() && network.is_user_defined()))
}

/// Removes the root's default bridge, nftables table and `DOCKER-USER`
/// rules when it has no network user; true when it did. Waits for connects
/// in progress (they hold the root's lock shared).
pub fn release_unused_host_objects(
    store: &Store,
    kernel: &mut dyn Kernel,
) -> Result<bool, EngineError> {
    let root = store.root().to_owned();
    let _exclusive = lock_root_network(&root, true).map_err(NetworkError::LockRoot)?;
    // The rules lock too, before the check: a `network create` inserts its
    // row and then syncs the table under this lock, so its sync comes
    // either before the check (which then sees the network) or after the
    // removal (and makes the table again).
    let _rules = store.lock_network_rules()?;
    let mark = releasing_mark(&root);
    if root_in_use(store)? {
        // A user came after an interrupted removal: its connect made the
        // bridge and the rules again, so nothing is left to finish.
        remove_mark(&mark);
        return Ok(false);
    }
    let instance = Instance::for_root(&root);
    if let Err(error) = fs_err::write(&mark, b"") {
        tracing::warn!(%error, "no mark for the removal of the host networks");
    }
    tracing::debug!(bridge = %instance.default_bridge, table = %instance.table, "root has no network user: removing its bridge and rules");
    kernel
        .remove_bridge_and_rules(&instance.default_bridge, &instance.table)
        .map_err(|source| NetworkError::RemoveHostObjects {
            bridge: instance.default_bridge.clone(),
            table: instance.table.clone(),
            source,
        })?;
    remove_mark(&mark);
    Ok(true)
}

/// `release_unused_host_objects` for paths that cannot fail (a container's
/// disconnect): what it cannot remove it logs, and the next removal (or
/// `network prune`) tries again.
pub(crate) fn release_if_unused(store: &Store, kernel: &mut dyn Kernel) {
    if let Err(error) = release_unused_host_objects(store, kernel) {
        tracing::warn!(%error, "failed to remove the root's unused host networks");
    }
}

/// Finishes a removal a killed process left half done (see the module's
/// comment). One file check when there is none.
pub(crate) fn finish_interrupted_release(store: &Store, kernel: &mut dyn Kernel) {
    if releasing_mark(store.root()).exists() {
        release_if_unused(store, kernel);
    }
}

fn remove_mark(mark: &Path) {
    if let Err(error) = fs_err::remove_file(mark) {
        if error.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!(%error, "failed to remove the mark of the host networks' removal");
        }
    }
}

/// The bridge `network` needs, for a connect: made when missing (its range
/// checked again against the host's routes, under the host-wide lock, and
/// chosen anew when another root or device took it meanwhile). Returns the
/// network as it now is, whether the bridge had to be made (its rules must
/// then be applied), and the root's lock held shared, which the caller
/// keeps until its endpoint is stored.
pub(crate) fn bridge_for_connect(
    store: &mut Store,
    kernel: &mut dyn Kernel,
    network: Network,
) -> Result<(Network, bool, RootNetworkLock), EngineError> {
    let users = lock_root_network(store.root(), false).map_err(NetworkError::LockRoot)?;
    let device = network.record.device.clone();
    let bridge_error = |source| NetworkError::SetUpBridge {
        device: device.clone(),
        source,
    };
    let mut network = network;
    let mut _host_lock = None;
    if !kernel.link_exists(&device).map_err(bridge_error)? {
        let host_lock = lock_host_networks().map_err(NetworkError::LockHost)?;
        // Another connect of this root may have made it while we waited.
        if !kernel.link_exists(&device).map_err(bridge_error)? {
            network = range_still_free(store, kernel, &host_lock, network)?;
        }
        _host_lock = Some(host_lock);
    }
    let (Some(subnet), Some(gateway)) = (network.subnet(), network.gateway()) else {
        return Err(NetworkError::NoAddressRange {
            network: network.name,
        }
        .into());
    };
    let created = kernel
        .ensure_bridge(&device, gateway, subnet, network.bridge_ipv6())
        .map_err(bridge_error)?;
    Ok((network, created, users))
}

/// The network with an address range no host route and no other root
/// uses: its own when free (or given by the user: `--subnet`, `bip`), else
/// a new one from Docker's pools, stored (only while no endpoint is on it)
/// and recorded host-wide.
fn range_still_free(
    store: &mut Store,
    kernel: &mut dyn Kernel,
    host_lock: &HostNetworkLock,
    network: Network,
) -> Result<Network, EngineError> {
    let Some(subnet) = network.subnet() else {
        return Ok(network);
    };
    let root = store.root().to_owned();
    let routes = kernel.host_routes().map_err(NetworkError::HostRoutes)?;
    let others = host_lock.ranges_of_other_roots(&root);
    let reserve = |subnet, previous| {
        if let Err(error) = host_lock.reserve_range(&root, subnet, previous) {
            tracing::warn!(%error, "failed to record the network's range");
        }
    };
    let used = |range: &berth_net::ipam::Ipv4Net| range.overlaps(&subnet);
    if !routes.iter().any(used) && !others.iter().any(used) {
        // A root from before the record: its range goes into it now.
        reserve(subnet, None);
        return Ok(network);
    }
    let given = network.record.subnet_configured
        || (network.record.predefined && configured_bip()?.is_some());
    if given {
        return Ok(network);
    }
    let updated = store.update_network_record(&network.id, |current, other_networks| {
        let mut record: NetworkRecord =
            serde_json::from_str(&current.record).map_err(|error| error.to_string())?;
        let taken = [taken_subnets(other_networks), others.clone()].concat();
        let subnet =
            choose_subnet(default_pools(), &routes, &taken).map_err(|error| error.to_string())?;
        tracing::debug!(network = %current.name, old = %record.subnet, new = %subnet, "address range taken meanwhile; chose another");
        record.subnet = subnet.to_string();
        record.gateway = subnet.first_host().to_string();
        serde_json::to_string(&record).map_err(|error| error.to_string())
    });
    match updated {
        Ok(row) => {
            let moved = Network::from_row(&row)?;
            if let Some(new) = moved.subnet() {
                reserve(new, Some(subnet));
            }
            Ok(moved)
        }
        // Endpoints on it with no bridge (a host that rebooted under
        // running rows): keep the range they have.
        Err(NetworkStoreError::Refused(reason)) => {
            tracing::warn!(%reason, network = %network.name, "keeping an address range a host route also uses");
            Ok(network)
        }
        Err(error) => Err(network_store_error(error)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use berth_net::kernel::RecordingKernel;

    fn bridge_network(store: &mut Store, kernel: &mut RecordingKernel) -> Network {
        super::super::lookup::all_networks(store, kernel)
            .unwrap()
            .into_iter()
            .find(|network| network.name == "bridge")
            .unwrap()
    }

    #[test]
    fn the_last_user_takes_the_bridge_and_rules_with_it() {
        let root = tempfile::tempdir().unwrap();
        let mut store = Store::open(root.path()).unwrap();
        let mut kernel = RecordingKernel::default();
        let instance = Instance::for_root(root.path());
        let network = bridge_network(&mut store, &mut kernel);
        // Looking networks up makes no host object.
        assert!(kernel.links.is_empty(), "{:?}", kernel.calls);
        let (network, created, users) =
            bridge_for_connect(&mut store, &mut kernel, network).unwrap();
        assert!(created);
        store
            .add_endpoint(&network.id, "c1", |_| {
                Ok(("10.0.0.2".to_owned(), "{}".to_owned()))
            })
            .unwrap();
        drop(users);
        assert!(!release_unused_host_objects(&store, &mut kernel).unwrap());
        assert!(kernel.links.contains(&instance.default_bridge));
        store.remove_endpoints("c1", None).unwrap();
        assert!(release_unused_host_objects(&store, &mut kernel).unwrap());
        assert!(kernel.links.is_empty());
        assert!(kernel
            .calls
            .contains(&format!("remove rules {}", instance.table)));
        assert!(!releasing_mark(root.path()).exists());
    }

    /// A removal that starts while a connect has found the bridge but not
    /// yet stored its endpoint waits for it, then sees the new user.
    #[test]
    fn a_removal_waits_for_a_connect_in_progress() {
        let root = tempfile::tempdir().unwrap();
        let mut store = Store::open(root.path()).unwrap();
        let mut kernel = RecordingKernel::default();
        let network = bridge_network(&mut store, &mut kernel);
        let (network, _, users) = bridge_for_connect(&mut store, &mut kernel, network).unwrap();
        let path = root.path().to_owned();
        let removal = std::thread::spawn(move || {
            let store = Store::open(&path).unwrap();
            release_unused_host_objects(&store, &mut RecordingKernel::default()).unwrap()
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(
            !removal.is_finished(),
            "the removal must wait for the connect"
        );
        store
            .add_endpoint(&network.id, "c1", |_| {
                Ok(("10.0.0.2".to_owned(), "{}".to_owned()))
            })
            .unwrap();
        drop(users);
        assert!(!removal.join().unwrap(), "the connect's endpoint is a user");
    }

    #[test]
    fn a_user_network_keeps_the_rules() {
        let root = tempfile::tempdir().unwrap();
        let mut store = Store::open(root.path()).unwrap();
        let mut kernel = RecordingKernel::default();
        let request = super::super::NetworkCreate {
            name: "mine".to_owned(),
            ..Default::default()
        };
        super::super::create_network(&mut store, &mut kernel, &request).unwrap();
        assert!(!release_unused_host_objects(&store, &mut kernel).unwrap());
        super::super::remove_network(&mut store, &mut kernel, "mine").unwrap();
        assert!(kernel.links.is_empty(), "{:?}", kernel.calls);
        assert_eq!(
            kernel.calls.last().unwrap(),
            &format!("remove rules {}", Instance::for_root(root.path()).table)
        );
    }

    #[test]
    fn a_range_taken_meanwhile_is_chosen_again() {
        let root = tempfile::tempdir().unwrap();
        let mut store = Store::open(root.path()).unwrap();
        let mut kernel = RecordingKernel::default();
        let network = bridge_network(&mut store, &mut kernel);
        let first = network.subnet().unwrap();
        // Another root's bridge took the range since it was chosen.
        kernel.routes.push(first);
        let (moved, created, _users) =
            bridge_for_connect(&mut store, &mut kernel, network).unwrap();
        assert!(created);
        let subnet = moved.subnet().unwrap();
        assert!(!subnet.overlaps(&first), "{subnet} {first}");
        assert_eq!(moved.gateway().unwrap(), subnet.first_host());
        let stored = Network::from_row(&store.network(&moved.id).unwrap().unwrap()).unwrap();
        assert_eq!(stored, moved);
    }

    #[test]
    fn a_bridge_with_no_user_stays_until_it_is_pruned() {
        let root = tempfile::tempdir().unwrap();
        let mut store = Store::open(root.path()).unwrap();
        let mut kernel = RecordingKernel::default();
        let network = bridge_network(&mut store, &mut kernel);
        // The last endpoint gone: the bridge stays for the next run, as docker0 does.
        drop(bridge_for_connect(&mut store, &mut kernel, network).unwrap());
        super::super::lookup::all_networks(&mut store, &mut kernel).unwrap();
        assert!(!kernel.links.is_empty(), "{:?}", kernel.calls);
        assert!(release_unused_host_objects(&store, &mut kernel).unwrap());
        assert!(kernel.links.is_empty(), "{:?}", kernel.calls);
    }

    #[test]
    fn an_interrupted_removal_is_finished_by_the_next_lookup() {
        let root = tempfile::tempdir().unwrap();
        let mut store = Store::open(root.path()).unwrap();
        let mut kernel = RecordingKernel::default();
        let network = bridge_network(&mut store, &mut kernel);
        drop(bridge_for_connect(&mut store, &mut kernel, network).unwrap());
        // As a removal killed after its mark and the bridge's removal,
        // before the table's.
        fs_err::write(releasing_mark(root.path()), b"").unwrap();
        kernel.links.clear();
        kernel.calls.clear();
        super::super::lookup::all_networks(&mut store, &mut kernel).unwrap();
        let table = Instance::for_root(root.path()).table;
        assert!(
            kernel.calls.contains(&format!("remove rules {table}")),
            "{:?}",
            kernel.calls
        );
        assert!(!releasing_mark(root.path()).exists());
    }
}
