//! A single-node swarm: `swarm init` makes this root the one manager of a
//! swarm of one node. The state is a small file on the root
//! (`swarm.json`, written atomically); there is no raft, no join, and no
//! services, tasks, secrets or configs. What it gives is what clients test
//! on one node: overlay networks (realised as bridges, see `networks`), the
//! `ingress` network, and `info`'s swarm block. Messages a Docker user knows
//! keep moby's words (`daemon/cluster/errors.go`, `daemon/cluster/swarm.go`).

use std::path::{Path, PathBuf};

use berth_net::kernel::Kernel;
use berth_store::Store;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::containers::names::new_id;
use crate::containers::state::now;
use crate::networks::{all_networks, create_network, remove_network, NetworkCreate};
use crate::{EngineError, ErrorKind};

/// The file that holds the swarm of a root.
const STATE_FILE: &str = "swarm.json";

#[derive(Debug, thiserror::Error)]
pub enum SwarmError {
    #[error("This node is not part of a swarm")]
    NotInSwarm,
    #[error("This node is already part of a swarm. Use \"docker swarm leave\" to leave this swarm and join another one.")]
    AlreadyInSwarm,
    /// moby's words for the last manager (trailing space included).
    #[error("You are attempting to leave the swarm on a node that is participating as a manager. Removing the last manager erases all current state of the swarm. Use `--force` to ignore this message. ")]
    LastManager,
    #[error("berth's swarm mode has one node: it cannot join another swarm")]
    JoinUnsupported,
    #[error("failed to read the swarm state {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("corrupt swarm state {path}")]
    Corrupt {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("failed to serialize the swarm state")]
    Serialize(#[source] serde_json::Error),
    #[error("failed to write the swarm state {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl SwarmError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            // dockerd answers these 503 (errdefs.Unavailable).
            Self::NotInSwarm | Self::AlreadyInSwarm | Self::LastManager => ErrorKind::Unavailable,
            Self::JoinUnsupported => ErrorKind::Unsupported,
            Self::Read { .. } | Self::Corrupt { .. } | Self::Serialize(_) | Self::Write { .. } => {
                ErrorKind::Internal
            }
        }
    }
}

/// `POST /swarm/init`'s body, as far as one node uses it.
#[derive(Clone, Debug, Default)]
pub struct SwarmInit {
    pub listen_addr: String,
    pub advertise_addr: String,
    pub force_new_cluster: bool,
    /// The swarm's `Spec`, kept and shown as given (`null` for Docker's
    /// defaults).
    pub spec: Value,
}

/// The stored swarm.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SwarmState {
    pub cluster_id: String,
    pub node_id: String,
    pub created_at: String,
    pub updated_at: String,
    pub listen_addr: String,
    pub advertise_addr: String,
    #[serde(default)]
    pub spec: Value,
    pub worker_token: String,
    pub manager_token: String,
}

fn state_path(root: &Path) -> PathBuf {
    root.join(STATE_FILE)
}

/// The root's swarm, if it is in one.
pub fn load(root: &Path) -> Result<Option<SwarmState>, SwarmError> {
    let path = state_path(root);
    let text = match fs_err::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(SwarmError::Read { path, source }),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|source| SwarmError::Corrupt { path, source })
}

/// True when the root is a swarm manager (`load` failing counts as not).
pub fn is_manager(root: &Path) -> bool {
    matches!(load(root), Ok(Some(_)))
}

/// Written to a temporary file beside it, then renamed over it: a crash
/// leaves the old state or the new, never half of one.
fn save(root: &Path, state: &SwarmState) -> Result<(), SwarmError> {
    let path = state_path(root);
    let temporary = root.join(format!(".{STATE_FILE}.tmp"));
    let bytes = serde_json::to_vec_pretty(state).map_err(SwarmError::Serialize)?;
    let write = |target: &Path| -> std::io::Result<()> {
        use std::io::Write;
        let mut file = fs_err::File::create(target)?;
        file.write_all(&bytes)?;
        file.sync_all()
    };
    write(&temporary)
        .and_then(|()| fs_err::rename(&temporary, &path))
        .map_err(|source| SwarmError::Write { path, source })
}

fn forget(root: &Path) -> Result<(), SwarmError> {
    let path = state_path(root);
    match fs_err::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(SwarmError::Write { path, source }),
    }
}

/// A join token in Docker's shape (`SWMTKN-1-<cluster>-<secret>`); nothing
/// accepts it, as nothing can join.
fn token() -> String {
    format!("SWMTKN-1-{}-{}", &new_id()[..50], &new_id()[..25])
}

/// The node id: 25 characters, as swarmkit's.
fn node_id() -> String {
    new_id()[..25].to_owned()
}

/// `swarm init`: the swarm's state, then its `ingress` network (overlay,
/// swarm scope, a subnet from berth's pools). Returns the node id.
/// `ForceNewCluster` on a node already in the swarm starts it anew, as
/// dockerd's does for its one manager.
pub fn init(
    store: &mut Store,
    kernel: &mut dyn Kernel,
    request: &SwarmInit,
) -> Result<String, EngineError> {
    let root = store.root().to_path_buf();
    if let Some(existing) = load(&root)? {
        if !request.force_new_cluster {
            return Err(SwarmError::AlreadyInSwarm.into());
        }
        return Ok(existing.node_id);
    }
    let created = now();
    let state = SwarmState {
        cluster_id: node_id(),
        node_id: node_id(),
        created_at: created.clone(),
        updated_at: created,
        listen_addr: request.listen_addr.clone(),
        advertise_addr: request.advertise_addr.clone(),
        spec: request.spec.clone(),
        worker_token: token(),
        manager_token: token(),
    };
    save(&root, &state)?;
    let ingress = NetworkCreate {
        name: "ingress".to_owned(),
        driver: "overlay".to_owned(),
        ingress: true,
        scope: "swarm".to_owned(),
        ipam_options: None,
        ..NetworkCreate::default()
    };
    if let Err(error) = create_network(store, kernel, &ingress) {
        let _ = forget(&root);
        return Err(error);
    }
    Ok(state.node_id)
}

/// `swarm leave`: refused on the manager without `force` (moby's words);
/// removes the swarm-scoped networks no container is on, then the state.
/// A swarm network a container is still on stays (logged), as dockerd's
/// local copy of one does until its last container leaves.
pub fn leave(store: &mut Store, kernel: &mut dyn Kernel, force: bool) -> Result<(), EngineError> {
    let root = store.root().to_path_buf();
    if load(&root)?.is_none() {
        return Err(SwarmError::NotInSwarm.into());
    }
    if !force {
        return Err(SwarmError::LastManager.into());
    }
    for network in all_networks(store, kernel)? {
        if !network.is_swarm_scoped() {
            continue;
        }
        if let Err(error) = remove_network(store, kernel, &network.id) {
            tracing::warn!(network = %network.name, %error, "swarm network kept on leave");
        }
    }
    forget(&root)?;
    Ok(())
}

/// `GET /swarm`'s object.
pub fn inspect_json(state: &SwarmState) -> Value {
    let spec = if state.spec.is_null() {
        default_spec()
    } else {
        state.spec.clone()
    };
    json!({
        "ID": state.cluster_id,
        "Version": { "Index": 10 },
        "CreatedAt": state.created_at,
        "UpdatedAt": state.updated_at,
        "Spec": spec,
        "TLSInfo": { "TrustRoot": "", "CertIssuerSubject": "", "CertIssuerPublicKey": "" },
        "RootRotationInProgress": false,
        "DefaultAddrPool": ["10.0.0.0/8"],
        "SubnetSize": 24,
        "DataPathPort": 4789,
        "JoinTokens": { "Worker": state.worker_token, "Manager": state.manager_token },
    })
}

/// dockerd's spec of a swarm initialised without one.
fn default_spec() -> Value {
    json!({
        "Name": "default",
        "Labels": {},
        "Orchestration": { "TaskHistoryRetentionLimit": 5 },
        "Raft": {
            "SnapshotInterval": 10000,
            "KeepOldSnapshots": 0,
            "LogEntriesForSlowFollowers": 500,
            "ElectionTick": 10,
            "HeartbeatTick": 1,
        },
        "Dispatcher": { "HeartbeatPeriod": 5_000_000_000_u64 },
        "CAConfig": { "NodeCertExpiry": 7_776_000_000_000_000_u64 },
        "TaskDefaults": {},
        "EncryptionConfig": { "AutoLockManagers": false },
    })
}

/// `info`'s `Swarm` block.
pub fn info_json(root: &Path) -> Value {
    match load(root) {
        Ok(Some(state)) => {
            let address = state
                .advertise_addr
                .rsplit_once(':')
                .map_or(state.advertise_addr.as_str(), |(host, _)| host)
                .to_owned();
            json!({
                "NodeID": state.node_id,
                "NodeAddr": address,
                "LocalNodeState": "active",
                "ControlAvailable": true,
                "Error": "",
                "RemoteManagers": [{ "NodeID": state.node_id, "Addr": state.advertise_addr }],
                "Nodes": 1,
                "Managers": 1,
                "Cluster": {
                    "ID": state.cluster_id,
                    "Version": { "Index": 10 },
                    "CreatedAt": state.created_at,
                    "UpdatedAt": state.updated_at,
                    "Spec": inspect_json(&state)["Spec"],
                },
            })
        }
        Ok(None) | Err(_) => json!({
            "NodeID": "",
            "NodeAddr": "",
            "LocalNodeState": "inactive",
            "ControlAvailable": false,
            "Error": "",
            "RemoteManagers": Value::Null,
        }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use berth_net::kernel::RecordingKernel;

    fn request() -> SwarmInit {
        SwarmInit {
            listen_addr: "0.0.0.0:2377".to_owned(),
            advertise_addr: "127.0.0.1:2377".to_owned(),
            ..SwarmInit::default()
        }
    }

    #[test]
    fn init_persists_makes_ingress_and_leave_undoes_both() {
        let root = tempfile::tempdir().unwrap();
        let mut store = Store::open(root.path()).unwrap();
        let mut kernel = RecordingKernel::default();
        assert!(load(root.path()).unwrap().is_none());
        let id = init(&mut store, &mut kernel, &request()).unwrap();
        assert_eq!(id.len(), 25);
        let state = load(root.path()).unwrap().unwrap();
        assert_eq!(state.node_id, id);
        assert_eq!(info_json(root.path())["LocalNodeState"], "active");
        assert_eq!(info_json(root.path())["NodeAddr"], "127.0.0.1");
        let ingress = crate::networks::find_network(&mut store, &mut kernel, "ingress").unwrap();
        assert!(ingress.record.ingress);
        assert_eq!(ingress.record.driver, "overlay");
        assert!(!kernel.links.is_empty());

        let again = init(&mut store, &mut kernel, &request()).unwrap_err();
        assert_eq!(again.kind(), ErrorKind::Unavailable);
        assert!(again
            .to_string()
            .starts_with("This node is already part of a swarm."));
        let unforced = leave(&mut store, &mut kernel, false).unwrap_err();
        assert_eq!(unforced.kind(), ErrorKind::Unavailable);
        assert!(unforced
            .to_string()
            .starts_with("You are attempting to leave the swarm"));

        leave(&mut store, &mut kernel, true).unwrap();
        assert!(load(root.path()).unwrap().is_none());
        assert!(crate::networks::find_network(&mut store, &mut kernel, "ingress").is_err());
        assert_eq!(info_json(root.path())["LocalNodeState"], "inactive");
        let outside = leave(&mut store, &mut kernel, true).unwrap_err();
        assert_eq!(outside.to_string(), "This node is not part of a swarm");
    }

    #[test]
    fn a_corrupt_state_is_named() {
        let root = tempfile::tempdir().unwrap();
        fs_err::write(root.path().join(STATE_FILE), "{").unwrap();
        let error = load(root.path()).unwrap_err();
        assert!(error.to_string().starts_with("corrupt swarm state"));
        assert!(!is_manager(root.path()));
    }
}
