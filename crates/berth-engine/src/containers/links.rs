//! Docker's legacy links (`--link NAME[:ALIAS]`, `HostConfig.Links`) for a
//! container on the default bridge, as dockerd keeps them:
//!
//! - at create, each linked container must exist (following a
//!   `--network container:` chain to the container that owns the
//!   namespace); links and host or container network modes conflict;
//! - at each start, each linked container must be running on the default
//!   bridge; the container then gets, per link, an /etc/hosts line
//!   (`IP\tALIAS HOSTNAME [NAME]`) and the environment Docker's
//!   `links.Link.ToEnv` makes: `ALIAS_NAME`, `ALIAS_PORT*` for the linked
//!   container's exposed ports and `ALIAS_ENV_*` for its environment;
//! - `inspect` shows them as `/CHILD:/PARENT/ALIAS`, with the current names.
//!
//! On a user-defined network dockerd registers no legacy link (its links
//! are the endpoint's, `EndpointsConfig.*.Links`, which the docker CLI
//! fills from `--link`): `HostConfig.Links` is then dropped as dockerd drops
//! it. With `--network none` the links are kept and do nothing, as dockerd's.

use serde::{Deserialize, Serialize};

use super::lookup::{find_container, find_container_unless_removed};
use super::record::ContainerRecord;
use crate::{EngineConfig, ErrorKind};
use berth_store::Store;

/// One link of a container (the parent) to another (the child).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    /// The child's id.
    pub container: String,
    /// The child's name when the link was made: what the link is called
    /// once the child is gone (dockerd keeps such a link, and refuses the
    /// start).
    pub name: String,
    pub alias: String,
}

#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("empty string specified for links")]
    Empty,
    #[error("bad format for links: {0}")]
    BadFormat(String),
    #[error("could not get container for {name}: No such container: {name}")]
    NoSuchContainer { name: String },
    #[error("conflicting options: host type networking can't be used with links. This would result in undefined behavior")]
    HostNetwork,
    #[error("conflicting options: container type network can't be used with links. This would result in undefined behavior")]
    ContainerNetwork,
    #[error("Cannot link to a non running container: /{child} AS /{parent}/{alias}")]
    NotRunning {
        child: String,
        parent: String,
        alias: String,
    },
    #[error("container {id} not attached to default bridge network")]
    NotOnBridge { id: String },
    #[error("Conflict, cannot remove the default link name of the container")]
    DefaultName,
}

impl LinkError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Empty | Self::BadFormat(_) | Self::HostNetwork | Self::ContainerNetwork => {
                ErrorKind::InvalidArgument
            }
            Self::NoSuchContainer { .. } => ErrorKind::NotFound,
            Self::DefaultName => ErrorKind::Conflict,
            Self::NotRunning { .. } | Self::NotOnBridge { .. } => ErrorKind::Internal,
        }
    }
}

/// Docker's `opts.ParseLink`: `NAME:ALIAS`, `NAME` (its own alias), or the
/// `/NAME:/PARENT/ALIAS` form inspect shows.
pub fn parse_link(text: &str) -> Result<(String, String), LinkError> {
    if text.is_empty() {
        return Err(LinkError::Empty);
    }
    let parts: Vec<&str> = text.split(':').collect();
    match parts.as_slice() {
        [name] => Ok(((*name).to_owned(), (*name).to_owned())),
        [name, alias] => match name.strip_prefix('/') {
            Some(name) => Ok((
                name.to_owned(),
                alias.rsplit('/').next().unwrap_or(alias).to_owned(),
            )),
            None => Ok(((*name).to_owned(), (*alias).to_owned())),
        },
        _ => Err(LinkError::BadFormat(text.to_owned())),
    }
}

/// Whether a container in `network_mode` (as stored: "bridge" for the
/// default) keeps legacy links: the default bridge and `none`.
fn keeps_links(network_mode: &str) -> bool {
    matches!(network_mode, "bridge" | "none")
}

/// The links `HostConfig.Links` asks for, checked as dockerd checks them at
/// create. Empty on a user-defined network (see the module doc). The first
/// of two links with one alias is kept, as dockerd's link graph keeps it.
pub(crate) fn resolve_links(
    store: &Store,
    config: &EngineConfig,
    links: &[String],
    network_mode: &str,
) -> Result<Vec<Link>, crate::EngineError> {
    if links.is_empty() {
        return Ok(Vec::new());
    }
    if network_mode == "host" {
        return Err(LinkError::HostNetwork.into());
    }
    if network_mode.starts_with("container:") {
        return Err(LinkError::ContainerNetwork.into());
    }
    if !keeps_links(network_mode) {
        return Ok(Vec::new());
    }
    let mut resolved: Vec<Link> = Vec::new();
    for text in links {
        let (name, alias) = parse_link(text)?;
        let mut child = match find_container(store, config, &name) {
            Ok(child) => child,
            Err(error) if error.is_not_found() => {
                return Err(LinkError::NoSuchContainer { name }.into())
            }
            Err(error) => return Err(error),
        };
        // A child in another's network namespace is reached at that one's address.
        let mut hops = 0;
        while let Some(owner) = child.record.run.network_mode.strip_prefix("container:") {
            hops += 1;
            if hops > 16 {
                break;
            }
            child = find_container(store, config, owner)?;
        }
        if child.record.run.network_mode == "host" {
            return Err(LinkError::HostNetwork.into());
        }
        if resolved.iter().any(|link| link.alias == alias) {
            continue;
        }
        resolved.push(Link {
            container: child.record.id.clone(),
            name: child.record.name.clone(),
            alias,
        });
    }
    Ok(resolved)
}

/// A linked container as a start sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkedContainer {
    pub alias: String,
    pub name: String,
    pub hostname: String,
    pub address: String,
    /// `Config.ExposedPorts`: `PORT/PROTO`.
    pub exposed_ports: Vec<String>,
    pub env: Vec<String>,
}

/// The linked containers of `record` for a start: each must run and be on
/// the default bridge. None of it on other networks (see the module doc).
pub(crate) fn linked_containers(
    store: &Store,
    config: &EngineConfig,
    record: &ContainerRecord,
) -> Result<Vec<LinkedContainer>, crate::EngineError> {
    if record.run.links.is_empty() || record.run.network_mode != "bridge" {
        return Ok(Vec::new());
    }
    let mut linked = Vec::new();
    for link in &record.run.links {
        let not_running = || LinkError::NotRunning {
            child: link.name.clone(),
            parent: record.name.clone(),
            alias: link.alias.clone(),
        };
        let child = match find_container_unless_removed(store, config, &link.container) {
            Ok(Some(child)) => child,
            Ok(None) => return Err(not_running().into()),
            Err(error) if error.is_not_found() => return Err(not_running().into()),
            Err(error) => return Err(error),
        };
        if !child.state.is_running() {
            return Err(LinkError::NotRunning {
                child: child.record.name.clone(),
                parent: record.name.clone(),
                alias: link.alias.clone(),
            }
            .into());
        }
        let address =
            bridge_address(store, &child.record).ok_or_else(|| LinkError::NotOnBridge {
                id: child.record.id.clone(),
            })?;
        linked.push(LinkedContainer {
            alias: link.alias.clone(),
            name: child.record.name.clone(),
            hostname: child.record.run.hostname.clone(),
            address,
            exposed_ports: child.record.run.exposed_ports.clone(),
            env: child.record.run.env.clone(),
        });
    }
    Ok(linked)
}

/// The container's address on the default bridge, if it is connected there.
fn bridge_address(store: &Store, record: &ContainerRecord) -> Option<String> {
    let bridge = record
        .run
        .networks
        .iter()
        .find(|network| network.name == "bridge")?;
    crate::networks::container_endpoints(store, &record.id)
        .into_iter()
        .find(|endpoint| endpoint.network_id == bridge.network_id)
        .map(|endpoint| endpoint.address)
}

/// dockerd's parent update: `child` runs again, perhaps at another address
/// on the default bridge, so each running container that links to it has
/// the /etc/hosts line of that link rewritten (in place: the file is bound
/// into the container) with the address it has now. Failures are logged,
/// not the start's.
pub(crate) fn update_parents_hosts(store: &Store, config: &EngineConfig, child: &ContainerRecord) {
    let Some(address) = bridge_address(store, child) else {
        return;
    };
    let rows = match store.containers() {
        Ok(rows) => rows,
        Err(error) => {
            tracing::warn!(%error, "could not list the containers linking to this one");
            return;
        }
    };
    // Only records that name the child's id can link to it.
    for row in rows
        .iter()
        .filter(|row| row.id != child.id && row.record.contains(&child.id))
    {
        let Ok(parent) = super::lookup::parse_row(row) else {
            continue;
        };
        if !parent.state.is_running() {
            continue;
        }
        let lines: Vec<String> = parent
            .record
            .run
            .links
            .iter()
            .filter(|link| link.container == child.id)
            .flat_map(|link| {
                hosts_lines(&[LinkedContainer {
                    alias: link.alias.clone(),
                    name: child.name.clone(),
                    hostname: child.run.hostname.clone(),
                    address: address.clone(),
                    exposed_ports: Vec::new(),
                    env: Vec::new(),
                }])
            })
            .collect();
        if lines.is_empty() {
            continue;
        }
        let hosts =
            super::paths::ContainerPaths::new(&config.root, &config.run_root, &parent.record.id)
                .hosts();
        if let Err(error) = rewrite_hosts_lines(&hosts, &lines) {
            tracing::warn!(parent = %parent.record.id, %error, "could not update a linking container's hosts file");
        }
    }
}

/// Replaces, in the hosts file at `path`, each line whose names are those
/// of one of `lines` with that line (its new address); the file is written
/// in place.
fn rewrite_hosts_lines(path: &std::path::Path, lines: &[String]) -> std::io::Result<()> {
    fn names(line: &str) -> Option<&str> {
        line.split_once('\t').map(|(_, names)| names)
    }
    let text = fs_err::read_to_string(path)?;
    let mut changed = false;
    let rewritten: Vec<&str> = text
        .lines()
        .map(|line| {
            let replacement = names(line).and_then(|old| {
                lines
                    .iter()
                    .find(|new| names(new) == Some(old))
                    .map(String::as_str)
            });
            match replacement {
                Some(new) if new != line => {
                    changed = true;
                    new
                }
                _ => line,
            }
        })
        .collect();
    if changed {
        let mut file = fs_err::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(path)?;
        std::io::Write::write_all(&mut file, format!("{}\n", rewritten.join("\n")).as_bytes())?;
    }
    Ok(())
}

/// The /etc/hosts line of each link, dockerd's: the alias, the linked
/// container's hostname, and its name unless that is the alias.
pub fn hosts_lines(linked: &[LinkedContainer]) -> Vec<String> {
    linked
        .iter()
        .map(|child| {
            let mut names = format!("{} {}", child.alias, child.hostname);
            if child.alias != child.name {
                names.push(' ');
                names.push_str(&child.name);
            }
            format!("{}\t{names}", child.address)
        })
        .collect()
}

/// The environment of a container with these links: the links' variables
/// first, then the container's own, which replace a link's of the same
/// name (dockerd's `ReplaceOrAppendEnvValues`).
pub fn environment(parent: &str, linked: &[LinkedContainer], own: &[String]) -> Vec<String> {
    if linked.is_empty() {
        return own.to_vec();
    }
    let mut env: Vec<String> = linked
        .iter()
        .flat_map(|child| link_env(parent, child))
        .collect();
    for entry in own {
        let key = entry.split('=').next().unwrap_or(entry);
        match env
            .iter_mut()
            .find(|existing| existing.split('=').next() == Some(key))
        {
            Some(existing) => existing.clone_from(entry),
            None => env.push(entry.clone()),
        }
    }
    env
}

/// A port as `(number, protocol)`; `80` alone is tcp.
fn parse_port(text: &str) -> Option<(u16, String)> {
    let (number, protocol) = text.split_once('/').unwrap_or((text, "tcp"));
    Some((number.parse().ok()?, protocol.to_ascii_lowercase()))
}

/// dockerd's `links.Link.ToEnv` for one link.
fn link_env(parent: &str, child: &LinkedContainer) -> Vec<String> {
    let prefix = child.alias.to_uppercase().replace('-', "_");
    let address = &child.address;
    let mut ports: Vec<(u16, String)> = child
        .exposed_ports
        .iter()
        .filter_map(|port| parse_port(port))
        .collect();
    // By number, tcp first among equals.
    ports.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| (b.1 == "tcp").cmp(&(a.1 == "tcp")))
    });
    ports.dedup();
    let mut env = Vec::new();
    if let Some((number, protocol)) = ports.first() {
        env.push(format!("{prefix}_PORT={protocol}://{address}:{number}"));
    }
    let upper = |protocol: &str| protocol.to_uppercase();
    // Runs of consecutive ports of one protocol also get _START and _END.
    let mut index = 0;
    while index < ports.len() {
        let (start, protocol) = &ports[index];
        let mut end = index;
        while end + 1 < ports.len()
            && ports[end + 1].1 == *protocol
            && u32::from(ports[end + 1].0) == u32::from(ports[end].0) + 1
        {
            end += 1;
        }
        if end > index {
            let last = ports[end].0;
            let key = format!("{prefix}_PORT_{start}_{}", upper(protocol));
            env.push(format!("{key}_START={protocol}://{address}:{start}"));
            env.push(format!("{key}_PORT_START={start}"));
            env.push(format!("{key}_END={protocol}://{address}:{last}"));
            env.push(format!("{key}_PORT_END={last}"));
        }
        index = end + 1;
    }
    for (number, protocol) in &ports {
        let key = format!("{prefix}_PORT_{number}_{}", upper(protocol));
        env.push(format!("{key}={protocol}://{address}:{number}"));
        env.push(format!("{key}_ADDR={address}"));
        env.push(format!("{key}_PORT={number}"));
        env.push(format!("{key}_PROTO={protocol}"));
    }
    env.push(format!("{prefix}_NAME=/{parent}/{}", child.alias));
    for entry in &child.env {
        let Some((name, value)) = entry.split_once('=') else {
            continue;
        };
        // Set by image builds, not the linked service's.
        if name == "HOME" || name == "PATH" {
            continue;
        }
        env.push(format!("{prefix}_ENV_{name}={value}"));
    }
    env
}

/// `rm --link /PARENT/ALIAS` (the API's `DELETE /containers/{name}?link=1`):
/// removes the parent's link, leaving both containers. A running parent's
/// /etc/hosts and environment keep the link until its next start.
pub fn remove_link(engine: &mut crate::Engine, text: &str) -> Result<(), crate::EngineError> {
    let path = text.strip_prefix('/').unwrap_or(text);
    let Some((parent, alias)) = path.rsplit_once('/') else {
        // dockerd: the name is a container's own.
        find_container(engine.store(), engine.config(), path)?;
        return Err(LinkError::DefaultName.into());
    };
    let no_such = || crate::EngineError::NoSuchContainer(text.to_owned());
    let mut container = match find_container(engine.store(), engine.config(), parent) {
        Ok(container) => container,
        Err(error) if error.is_not_found() => return Err(no_such()),
        Err(error) => return Err(error),
    };
    let before = container.record.run.links.len();
    container
        .record
        .run
        .links
        .retain(|link| link.alias != alias);
    if container.record.run.links.len() == before {
        return Err(no_such());
    }
    super::lookup::save_record(engine.store(), &container.record)
}

/// `HostConfig.Links` as `inspect` shows it: `/CHILD:/PARENT/ALIAS`, with
/// the child's current name (its name when linked, once it is gone).
pub fn inspected_links(store: &Store, record: &ContainerRecord) -> Option<Vec<String>> {
    if record.run.links.is_empty() {
        return None;
    }
    Some(
        record
            .run
            .links
            .iter()
            .map(|link| {
                let name = store
                    .container(&link.container)
                    .ok()
                    .flatten()
                    .map_or_else(|| link.name.clone(), |row| row.name);
                format!("/{name}:/{}/{}", record.name, link.alias)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn child(ports: &[&str], env: &[&str]) -> LinkedContainer {
        LinkedContainer {
            alias: "d-b".to_owned(),
            name: "lk-db".to_owned(),
            hostname: "dbhost".to_owned(),
            address: "10.232.0.2".to_owned(),
            exposed_ports: ports.iter().map(|port| (*port).to_owned()).collect(),
            env: env.iter().map(|entry| (*entry).to_owned()).collect(),
        }
    }

    #[test]
    fn links_parse_as_dockers() {
        let parsed = |text: &str| parse_link(text).unwrap();
        assert_eq!(parsed("db"), ("db".to_owned(), "db".to_owned()));
        assert_eq!(parsed("db:alias"), ("db".to_owned(), "alias".to_owned()));
        assert_eq!(
            parsed("/db:/web/alias"),
            ("db".to_owned(), "alias".to_owned())
        );
        assert_eq!(
            parse_link("a:b:c").unwrap_err().to_string(),
            "bad format for links: a:b:c"
        );
        assert_eq!(
            parse_link("").unwrap_err().to_string(),
            "empty string specified for links"
        );
    }

    #[test]
    fn the_environment_is_dockers() {
        // What docker 20.10 set for `--link lk-db:d-b` to a container with
        // `--expose 8000-8002 --expose 9000 -e A=1` (image env PATH).
        let env = link_env(
            "web",
            &child(
                &["9000/tcp", "8001/tcp", "8000/tcp", "8002/tcp"],
                &["PATH=/bin", "A=1"],
            ),
        );
        let mut sorted = env.clone();
        sorted.sort();
        assert_eq!(
            sorted,
            [
                "D_B_ENV_A=1",
                "D_B_NAME=/web/d-b",
                "D_B_PORT=tcp://10.232.0.2:8000",
                "D_B_PORT_8000_TCP=tcp://10.232.0.2:8000",
                "D_B_PORT_8000_TCP_ADDR=10.232.0.2",
                "D_B_PORT_8000_TCP_END=tcp://10.232.0.2:8002",
                "D_B_PORT_8000_TCP_PORT=8000",
                "D_B_PORT_8000_TCP_PORT_END=8002",
                "D_B_PORT_8000_TCP_PORT_START=8000",
                "D_B_PORT_8000_TCP_PROTO=tcp",
                "D_B_PORT_8000_TCP_START=tcp://10.232.0.2:8000",
                "D_B_PORT_8001_TCP=tcp://10.232.0.2:8001",
                "D_B_PORT_8001_TCP_ADDR=10.232.0.2",
                "D_B_PORT_8001_TCP_PORT=8001",
                "D_B_PORT_8001_TCP_PROTO=tcp",
                "D_B_PORT_8002_TCP=tcp://10.232.0.2:8002",
                "D_B_PORT_8002_TCP_ADDR=10.232.0.2",
                "D_B_PORT_8002_TCP_PORT=8002",
                "D_B_PORT_8002_TCP_PROTO=tcp",
                "D_B_PORT_9000_TCP=tcp://10.232.0.2:9000",
                "D_B_PORT_9000_TCP_ADDR=10.232.0.2",
                "D_B_PORT_9000_TCP_PORT=9000",
                "D_B_PORT_9000_TCP_PROTO=tcp",
            ]
        );
        // The lowest port is the link's port, tcp before udp of one number.
        let env = link_env("web", &child(&["5432/tcp", "53/udp", "53/tcp"], &[]));
        assert_eq!(env[0], "D_B_PORT=tcp://10.232.0.2:53");
        assert!(!env.iter().any(|entry| entry.contains("_START")));
        assert!(env.contains(&"D_B_PORT_53_UDP_PROTO=udp".to_owned()));
    }

    #[test]
    fn the_containers_own_variables_win() {
        let linked = [child(&[], &["A=1"])];
        let env = environment(
            "web",
            &linked,
            &["D_B_NAME=mine".to_owned(), "X=2".to_owned()],
        );
        assert_eq!(env, ["D_B_NAME=mine", "D_B_ENV_A=1", "X=2"]);
    }

    #[test]
    fn hosts_lines_name_the_alias_hostname_and_name() {
        let mut linked = child(&[], &[]);
        assert_eq!(
            hosts_lines(&[linked.clone()]),
            ["10.232.0.2\td-b dbhost lk-db"]
        );
        linked.alias = "lk-db".to_owned();
        assert_eq!(hosts_lines(&[linked]), ["10.232.0.2\tlk-db dbhost"]);
    }
}
