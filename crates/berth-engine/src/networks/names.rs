//! The names a container on user-defined networks can resolve: every
//! running container on a network it shares, by name, alias and short id.
//! Read from the store at each query, so containers started later are
//! found too.

use std::net::{Ipv4Addr, Ipv6Addr};

use berth_store::Store;

use super::record::Endpoint;

pub struct ContainerNames<'a> {
    store: &'a Store,
    /// The asking container: it sees the networks it is on now (`network
    /// connect` while it runs included).
    container_id: String,
}

impl<'a> ContainerNames<'a> {
    pub fn new(store: &'a Store, container_id: &str) -> Self {
        Self {
            store,
            container_id: container_id.to_owned(),
        }
    }

    fn endpoints(&self) -> Vec<Endpoint> {
        let networks: Vec<String> = self
            .store
            .endpoints(None, Some(&self.container_id))
            .unwrap_or_default()
            .into_iter()
            .map(|row| row.network_id)
            // The default bridge has no name service (as Docker's): its
            // containers are reached by address, even from a container
            // that also has a user-defined network.
            .filter(|network| {
                self.store
                    .network(network)
                    .ok()
                    .flatten()
                    .is_none_or(|row| row.name != "bridge")
            })
            .collect();
        networks
            .iter()
            .flat_map(|network| {
                self.store
                    .endpoints(Some(network), None)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(Endpoint::from_row)
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

fn answers_to(endpoint: &Endpoint, name: &str) -> bool {
    endpoint.record.container_name.eq_ignore_ascii_case(name)
        || endpoint
            .record
            .aliases
            .iter()
            .any(|alias| alias.eq_ignore_ascii_case(name))
        || (name.len() == 12 && endpoint.container_id.starts_with(name))
}

/// The container a link of `endpoint` (the asking container's) names by
/// `alias`, if one does: links are resolved on their own network only.
fn linked_name<'e>(endpoint: &'e Endpoint, alias: &str) -> Option<&'e str> {
    endpoint.record.links.iter().find_map(|link| {
        let (target, link_alias) = link.split_once(':').unwrap_or((link, link));
        link_alias.eq_ignore_ascii_case(alias).then_some(target)
    })
}

impl ContainerNames<'_> {
    /// The endpoints `name` resolves to for the asking container.
    fn answering(&self, name: &str) -> Vec<Endpoint> {
        let endpoints = self.endpoints();
        // An endpoint link's alias (`--link NAME:ALIAS` on a user-defined
        // network) answers for this container alone, on the link's network.
        let linked: Vec<(String, String)> = endpoints
            .iter()
            .filter(|endpoint| endpoint.container_id == self.container_id)
            .filter_map(|endpoint| {
                linked_name(endpoint, name)
                    .map(|target| (endpoint.network_id.clone(), target.to_owned()))
            })
            .collect();
        endpoints
            .into_iter()
            .filter(|endpoint| {
                answers_to(endpoint, name)
                    || linked.iter().any(|(network, target)| {
                        endpoint.network_id == *network && answers_to(endpoint, target)
                    })
            })
            .collect()
    }
}

impl berth_net::dns::Names for ContainerNames<'_> {
    fn lookup(&self, name: &str) -> Option<Vec<Ipv4Addr>> {
        let addresses: Vec<Ipv4Addr> = self
            .answering(name)
            .iter()
            .filter_map(|endpoint| endpoint.address.parse().ok())
            .collect();
        (!addresses.is_empty()).then_some(addresses)
    }

    fn lookup_ipv6(&self, name: &str) -> Vec<Ipv6Addr> {
        self.answering(name)
            .iter()
            .filter_map(|endpoint| endpoint.record.ipv6_address.parse().ok())
            .collect()
    }

    fn reverse(&self, address: Ipv4Addr) -> Option<String> {
        let text = address.to_string();
        self.endpoints()
            .into_iter()
            .find(|endpoint| endpoint.address == text)
            .map(|endpoint| endpoint.record.container_name)
    }
}
