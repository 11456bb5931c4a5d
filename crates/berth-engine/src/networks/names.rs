//! The names a container on user-defined networks can resolve: every
//! running container on a network it shares, by name, alias and short id.
//! Read from the store at each query, so containers started later are
//! found too.

use std::net::Ipv4Addr;

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

impl berth_net::dns::Names for ContainerNames<'_> {
    fn lookup(&self, name: &str) -> Option<Vec<Ipv4Addr>> {
        let addresses: Vec<Ipv4Addr> = self
            .endpoints()
            .iter()
            .filter(|endpoint| answers_to(endpoint, name))
            .filter_map(|endpoint| endpoint.address.parse().ok())
            .collect();
        (!addresses.is_empty()).then_some(addresses)
    }

    fn reverse(&self, address: Ipv4Addr) -> Option<String> {
        let text = address.to_string();
        self.endpoints()
            .into_iter()
            .find(|endpoint| endpoint.address == text)
            .map(|endpoint| endpoint.record.container_name)
    }
}
