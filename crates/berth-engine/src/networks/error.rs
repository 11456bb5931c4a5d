//! What can go wrong with networks. Messages a Docker user knows keep
//! Docker's words (moby `daemon/network.go`, libnetwork).

use std::net::IpAddr;
use std::path::PathBuf;

use berth_net::ipam::IpamError;
use berth_net::kernel::KernelError;
use berth_store::NetworkStoreError;

use super::ports::PortError;
use crate::ErrorKind;

#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    // --- finding ---
    #[error("network {0} not found")]
    NotFound(String),
    #[error("network {text} is ambiguous ({count} matches found based on ID prefix)")]
    Ambiguous { text: String, count: usize },

    // --- `network create` ---
    #[error("plugin \"{driver}\" not found: berth supports the bridge driver, and overlay in a swarm, only")]
    UnsupportedDriver { driver: String },
    /// Docker's words, trailing space included.
    #[error("operation is not permitted on predefined {name} network ")]
    PredefinedName { name: String },
    #[error("invalid network name {name:?}")]
    InvalidName { name: String },
    /// A `--subnet`, `--gateway` or `--ip` that is no address; ipam's words.
    #[error(transparent)]
    InvalidAddress(IpamError),
    #[error("every ip-range or gateway must have a corresponding subnet")]
    GatewayWithoutSubnet,
    #[error("Invalid gateway address {gateway}: not in subnet {subnet}")]
    GatewayOutsideSubnet { gateway: IpAddr, subnet: String },
    /// dockerd's words for more than one pool of a family on a bridge.
    #[error("bridge driver doesn't support multiple subnets")]
    MultipleSubnets,
    /// dockerd's words for `EnableIPv6` without an IPv6 pool: its bridge
    /// has no default IPv6 pools.
    #[error("could not find an available, non-overlapping IPv6 address pool among the defaults to assign to the network")]
    NoIpv6Pool,
    #[error("failed to parse com.docker.network.enable_ipv6 value: {value} (strconv.ParseBool: parsing {value:?}: invalid syntax)")]
    InvalidEnableIpv6Option { value: String },
    #[error("failed to allocate gateway ({gateway}): Address already in use")]
    GatewayInUse { gateway: IpAddr },
    #[error("invalid bridge name {name:?}")]
    InvalidBridgeName { name: String },
    /// The docker CLI's words: dockerd itself takes a range outside the
    /// subnet and maps its host part into it; berth refuses it, and a range
    /// wider than the subnet.
    #[error("no matching subnet for range {range}")]
    RangeOutsideSubnet { range: String },
    #[error("no matching subnet for aux-address {address}")]
    AuxAddressWithoutSubnet { address: String },
    /// libnetwork's words (`ipamAllocateVersion`), as the next three.
    #[error("non parsable secondary ip address ({name}:{address}) passed for network {network}")]
    InvalidAuxAddress {
        name: String,
        address: String,
        network: String,
    },
    #[error("auxiliary address: ({name}:{address}) must belong to the master pool: {subnet}")]
    AuxAddressOutsideSubnet {
        name: String,
        address: IpAddr,
        subnet: String,
    },
    #[error("failed to allocate secondary ip address ({name}:{address}): Address already in use")]
    AuxAddressInUse { name: String, address: IpAddr },
    #[error("berth supports the default IPAM driver only; got {driver:?}")]
    UnsupportedIpamDriver { driver: String },
    /// moby's words (`daemon/cluster/errors.go`) for an overlay network
    /// outside a swarm.
    #[error("This node is not a swarm manager. Use \"docker swarm init\" or \"docker swarm join\" to connect this node to swarm and try again.")]
    NotSwarmManager,
    /// libnetwork's words for `--scope local` on an overlay network.
    #[error("cannot downgrade network scope for {driver} networks")]
    ScopeDowngrade { driver: String },
    #[error("berth creates {driver} networks with local scope only; got scope {scope:?}")]
    UnsupportedScope { driver: String, scope: String },
    #[error("invalid network scope {scope:?}: local, swarm or global")]
    InvalidScope { scope: String },
    #[error("the ingress network must use the overlay driver")]
    IngressNotOverlay,
    /// swarmkit's words (`controlapi` CreateNetwork), as dockerd wraps them.
    #[error("rpc error: code = AlreadyExists desc = ingress network ({id}) is already present")]
    IngressExists { id: String },
    /// The store refused the write: a name taken (Docker's 409), or the
    /// check the write ran (a range or an address already in use), in the
    /// store's or the check's words.
    #[error(transparent)]
    Refused(NetworkStoreError),

    // --- `network rm` ---
    #[error("{name} is a pre-defined network and cannot be removed")]
    PredefinedRemoval { name: String },
    #[error("error while removing network: network {name} id {id} has active endpoints")]
    ActiveEndpoints { name: String, id: String },

    // --- `network connect` / `disconnect`, endpoint settings ---
    #[error("container cannot be connected to multiple networks with one of the networks in private (none) mode")]
    PrivateMode,
    #[error("container cannot be disconnected from host network or connected to host network")]
    HostNetwork,
    #[error("endpoint with name {container} already exists in network {network}")]
    AlreadyConnected { container: String, network: String },
    #[error("container {container} is not connected to network {network}")]
    NotConnected { container: String, network: String },
    #[error("cannot connect the running VM container {container} to network {network}: {reason}")]
    NoSpareCard {
        container: String,
        network: String,
        reason: String,
    },
    #[error(
        "cannot change the networks of VM container {container} while it is {state}: {advice}"
    )]
    VmNotRunning {
        container: String,
        state: &'static str,
        advice: &'static str,
    },
    #[error(
        "failed to connect the running VM container {container} to network {network}: {reason}"
    )]
    VmConnect {
        container: String,
        network: String,
        reason: String,
    },
    #[error("failed to disconnect the running VM container {container} from network {network}: {reason}")]
    VmDisconnect {
        container: String,
        network: String,
        reason: String,
    },
    #[error("user specified IP address is supported on user defined networks only")]
    AddressOnPredefined,
    #[error("network-scoped alias is supported only for containers in user defined networks")]
    AliasOnPredefined,
    #[error("user specified IP address is supported only when connecting to networks with user configured subnets")]
    AddressWithoutSubnet,
    #[error("{text} is not a valid mac address")]
    InvalidMac { text: String },
    #[error("links are only supported for user-defined networks")]
    LinksOnPredefined,
    #[error("bad format for links: {text}")]
    InvalidLink { text: String },
    /// The docker CLI's well-known answer (swarmkit's words, wrapped by
    /// dockerd) for a container on a swarm network that is not attachable
    /// (and for the ingress network, which never is).
    #[error("Could not attach to network {name}: rpc error: code = PermissionDenied desc = network {name} not manually attachable")]
    NotAttachable { name: String },
    /// An endpoint setting berth does not do, refused rather than ignored.
    #[error("{setting} is not supported yet ({why})")]
    UnsupportedEndpointSetting {
        setting: &'static str,
        why: &'static str,
    },
    #[error(transparent)]
    Port(#[from] PortError),

    // --- berth's configuration (`bip`) ---
    #[error("failed to read {path}")]
    ReadConfig {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: invalid JSON")]
    ConfigJson {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path}: invalid bip {bip:?}: an address with its prefix length, like 172.26.0.1/16")]
    InvalidBip { path: PathBuf, bip: String },

    // --- the host and the kernel ---
    #[error("failed to lock the host's networks")]
    LockHost(#[source] std::io::Error),
    #[error("failed to lock the root's host networks")]
    LockRoot(#[source] std::io::Error),
    #[error("failed to read the host's routes")]
    HostRoutes(#[source] KernelError),
    #[error("failed to create the bridge {device}")]
    CreateBridge {
        device: String,
        #[source]
        source: KernelError,
    },
    #[error("failed to set up the bridge {device}")]
    SetUpBridge {
        device: String,
        #[source]
        source: KernelError,
    },
    #[error("failed to remove the bridge {bridge} and the rules of table {table}")]
    RemoveHostObjects {
        bridge: String,
        table: String,
        #[source]
        source: KernelError,
    },
    #[error("failed to program the network rules")]
    ProgramRules(#[source] KernelError),
    #[error("failed to open the container's network namespace")]
    OpenNamespace(#[source] std::io::Error),
    #[error("network {network} has no address range to connect containers to")]
    NoAddressRange { network: String },
    #[error("failed to connect to network {network}")]
    Connect {
        network: String,
        #[source]
        source: KernelError,
    },

    // --- the stored records ---
    #[error("corrupt record of network {network}")]
    CorruptRecord {
        network: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("stored address {address} is not IPv4")]
    StoredAddress { address: String },
    #[error("failed to serialize a record")]
    Serialize(#[source] serde_json::Error),
}

impl NetworkError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::NotFound(_) => ErrorKind::NotFound,
            Self::Ambiguous { .. }
            | Self::UnsupportedDriver { .. }
            | Self::PredefinedName { .. }
            | Self::InvalidName { .. }
            | Self::InvalidAddress(_)
            | Self::GatewayWithoutSubnet
            | Self::GatewayOutsideSubnet { .. }
            | Self::MultipleSubnets
            | Self::NoIpv6Pool
            | Self::InvalidEnableIpv6Option { .. }
            | Self::GatewayInUse { .. }
            | Self::InvalidBridgeName { .. }
            | Self::RangeOutsideSubnet { .. }
            | Self::AuxAddressWithoutSubnet { .. }
            | Self::InvalidAuxAddress { .. }
            | Self::AuxAddressOutsideSubnet { .. }
            | Self::AuxAddressInUse { .. }
            | Self::UnsupportedIpamDriver { .. }
            | Self::ScopeDowngrade { .. }
            | Self::InvalidScope { .. }
            | Self::IngressNotOverlay
            | Self::PrivateMode
            | Self::HostNetwork
            | Self::AlreadyConnected { .. }
            | Self::NotConnected { .. }
            | Self::AddressOnPredefined
            | Self::AliasOnPredefined
            | Self::AddressWithoutSubnet
            | Self::InvalidMac { .. }
            | Self::LinksOnPredefined
            | Self::InvalidLink { .. }
            | Self::UnsupportedEndpointSetting { .. }
            | Self::InvalidBip { .. }
            | Self::ConfigJson { .. } => ErrorKind::InvalidArgument,
            Self::Port(error) => error.kind(),
            Self::Refused(NetworkStoreError::NameInUse(_)) | Self::ActiveEndpoints { .. } => {
                ErrorKind::Conflict
            }
            Self::PredefinedRemoval { .. } | Self::NotAttachable { .. } => ErrorKind::Forbidden,
            Self::NoSpareCard { .. } | Self::VmNotRunning { .. } => ErrorKind::Conflict,
            Self::VmConnect { .. } | Self::VmDisconnect { .. } => ErrorKind::Internal,
            Self::NotSwarmManager => ErrorKind::Unavailable,
            Self::UnsupportedScope { .. } => ErrorKind::Unsupported,
            Self::IngressExists { .. } => ErrorKind::Conflict,
            Self::Refused(_)
            | Self::ReadConfig { .. }
            | Self::LockHost(_)
            | Self::LockRoot(_)
            | Self::HostRoutes(_)
            | Self::CreateBridge { .. }
            | Self::SetUpBridge { .. }
            | Self::RemoveHostObjects { .. }
            | Self::ProgramRules(_)
            | Self::OpenNamespace(_)
            | Self::NoAddressRange { .. }
            | Self::Connect { .. }
            | Self::CorruptRecord { .. }
            | Self::StoredAddress { .. }
            | Self::Serialize(_) => ErrorKind::Internal,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::{EngineError, ErrorChain};

    #[test]
    fn kinds_follow_docker() {
        assert_eq!(
            NetworkError::NotFound("x".to_owned()).kind(),
            ErrorKind::NotFound
        );
        assert_eq!(
            NetworkError::Refused(NetworkStoreError::NameInUse("x".to_owned())).kind(),
            ErrorKind::Conflict
        );
        assert_eq!(
            NetworkError::Refused(NetworkStoreError::Refused(
                "Address already in use".to_owned()
            ))
            .kind(),
            ErrorKind::Internal
        );
        let active = NetworkError::ActiveEndpoints {
            name: "n".to_owned(),
            id: "i".to_owned(),
        };
        assert_eq!(active.kind(), ErrorKind::Conflict);
        let predefined = NetworkError::PredefinedRemoval {
            name: "bridge".to_owned(),
        };
        assert_eq!(predefined.kind(), ErrorKind::Forbidden);
        assert_eq!(
            NetworkError::InvalidAddress(IpamError::InvalidCidr("x".to_owned())).kind(),
            ErrorKind::InvalidArgument
        );
        assert_eq!(
            EngineError::from(NetworkError::HostNetwork).kind(),
            ErrorKind::InvalidArgument
        );
    }

    #[test]
    fn messages_keep_dockers_words_and_the_cause_follows() {
        assert_eq!(
            NetworkError::NotFound("x".to_owned()).to_string(),
            "network x not found"
        );
        assert_eq!(
            NetworkError::Refused(NetworkStoreError::NameInUse("web".to_owned())).to_string(),
            "network with name web already exists"
        );
        assert_eq!(
            NetworkError::InvalidAddress(IpamError::InvalidCidr("10.0.0/8".to_owned())).to_string(),
            "invalid CIDR address: 10.0.0/8"
        );
        let error = EngineError::from(NetworkError::LockHost(std::io::Error::from_raw_os_error(
            libc::EACCES,
        )));
        assert_eq!(
            error.to_string(),
            "failed to lock the host's networks",
            "the cause is not repeated"
        );
        assert_eq!(
            ErrorChain(&error).to_string(),
            "failed to lock the host's networks: Permission denied (os error 13)"
        );
        let json = serde_json::from_str::<serde_json::Value>("{").unwrap_err();
        let error = NetworkError::ConfigJson {
            path: PathBuf::from("/etc/berth/config.json"),
            source: json,
        };
        assert!(
            ErrorChain(&error)
                .to_string()
                .starts_with("/etc/berth/config.json: invalid JSON: EOF"),
            "{}",
            ErrorChain(&error)
        );
    }
}
