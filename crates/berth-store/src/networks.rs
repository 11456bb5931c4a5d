//! Network rows and the live endpoints on them. The engine owns the JSON of
//! both `record` columns; the store owns the rules that must hold across
//! processes: names unique, an address held by one endpoint at a time, and
//! the checks of a new network or address made in the same transaction that
//! writes it.

use rusqlite::{params, OptionalExtension, TransactionBehavior};

use crate::containers::is_unique_violation;
use crate::{Store, StoreError};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetworkRow {
    pub id: String,
    pub name: String,
    pub created: String,
    /// JSON owned by the engine (driver, subnet, gateway, options, labels).
    pub record: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndpointRow {
    pub network_id: String,
    pub container_id: String,
    /// IPv4 address, "" for an endpoint without one.
    pub address: String,
    /// JSON owned by the engine (aliases, MAC, published ports, names).
    pub record: String,
}

#[derive(Debug, thiserror::Error)]
pub enum NetworkStoreError {
    #[error("network with name {0} already exists")]
    NameInUse(String),
    /// The caller's check refused the write; its message as given.
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<rusqlite::Error> for NetworkStoreError {
    fn from(error: rusqlite::Error) -> Self {
        NetworkStoreError::Store(error.into())
    }
}

const NETWORK_COLUMNS: &str = "id, name, created, record";
const ENDPOINT_COLUMNS: &str = "network_id, container_id, address, record";

fn network_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<NetworkRow> {
    Ok(NetworkRow {
        id: row.get(0)?,
        name: row.get(1)?,
        created: row.get(2)?,
        record: row.get(3)?,
    })
}

fn endpoint_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<EndpointRow> {
    Ok(EndpointRow {
        network_id: row.get(0)?,
        container_id: row.get(1)?,
        address: row.get(2)?,
        record: row.get(3)?,
    })
}

fn select_networks(connection: &rusqlite::Connection) -> Result<Vec<NetworkRow>, rusqlite::Error> {
    let mut statement = connection.prepare_cached(&format!(
        "SELECT {NETWORK_COLUMNS} FROM networks ORDER BY created, name"
    ))?;
    let rows = statement.query_map([], network_row)?;
    rows.collect()
}

impl Store {
    /// Inserts the network `build` makes from the networks already stored
    /// (it sees them in the same write transaction, so two processes cannot
    /// both pick the same name or address range). Returns the stored row.
    pub fn insert_network(
        &mut self,
        build: impl FnOnce(&[NetworkRow]) -> Result<NetworkRow, String>,
    ) -> Result<NetworkRow, NetworkStoreError> {
        let transaction = self
            .connection_mut()?
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let existing = select_networks(&transaction)?;
        let network = build(&existing).map_err(NetworkStoreError::Refused)?;
        if existing.iter().any(|row| row.name == network.name) {
            return Err(NetworkStoreError::NameInUse(network.name.clone()));
        }
        let inserted = transaction.execute(
            &format!("INSERT INTO networks ({NETWORK_COLUMNS}) VALUES (?1, ?2, ?3, ?4)"),
            params![network.id, network.name, network.created, network.record],
        );
        match inserted {
            Ok(_) => {}
            Err(error) if is_unique_violation(&error) => {
                return Err(NetworkStoreError::NameInUse(network.name.clone()))
            }
            Err(error) => return Err(error.into()),
        }
        transaction.commit()?;
        Ok(network)
    }

    pub fn networks(&self) -> Result<Vec<NetworkRow>, StoreError> {
        Ok(select_networks(self.connection()?)?)
    }

    pub fn network(&self, id: &str) -> Result<Option<NetworkRow>, StoreError> {
        Ok(self
            .connection()?
            .query_row(
                &format!("SELECT {NETWORK_COLUMNS} FROM networks WHERE id = ?1"),
                [id],
                network_row,
            )
            .optional()?)
    }

    pub fn network_by_name(&self, name: &str) -> Result<Option<NetworkRow>, StoreError> {
        Ok(self
            .connection()?
            .query_row(
                &format!("SELECT {NETWORK_COLUMNS} FROM networks WHERE name = ?1"),
                [name],
                network_row,
            )
            .optional()?)
    }

    /// Deletes the network unless it has endpoints; Ok(false) when it was
    /// already gone. Err(Refused) names the containers still on it.
    pub fn delete_network(&mut self, id: &str) -> Result<bool, NetworkStoreError> {
        let transaction = self
            .connection_mut()?
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let holders: Vec<String> = {
            let mut statement = transaction
                .prepare_cached("SELECT container_id FROM endpoints WHERE network_id = ?1")?;
            let rows = statement.query_map([id], |row| row.get(0))?;
            rows.collect::<Result<_, _>>()?
        };
        if !holders.is_empty() {
            return Err(NetworkStoreError::Refused(holders.join(", ")));
        }
        let deleted = transaction.execute("DELETE FROM networks WHERE id = ?1", [id])? == 1;
        transaction.commit()?;
        Ok(deleted)
    }

    /// Replaces the record of network `id` with what `build` makes of the
    /// stored row and every other network (all seen in one write
    /// transaction), unless containers have endpoints on it: Err(Refused)
    /// then, as when `build` refuses. Returns the updated row.
    pub fn update_network_record(
        &mut self,
        id: &str,
        build: impl FnOnce(&NetworkRow, &[NetworkRow]) -> Result<String, String>,
    ) -> Result<NetworkRow, NetworkStoreError> {
        let transaction = self
            .connection_mut()?
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let networks = select_networks(&transaction)?;
        let Some(current) = networks.iter().find(|row| row.id == id) else {
            return Err(NetworkStoreError::Refused(format!(
                "network {id} not found"
            )));
        };
        let in_use: bool = transaction.query_row(
            "SELECT EXISTS (SELECT 1 FROM endpoints WHERE network_id = ?1)",
            [id],
            |row| row.get(0),
        )?;
        if in_use {
            return Err(NetworkStoreError::Refused(format!(
                "network {} has active endpoints",
                current.name
            )));
        }
        let others: Vec<NetworkRow> = networks
            .iter()
            .filter(|row| row.id != id)
            .cloned()
            .collect();
        let record = build(current, &others).map_err(NetworkStoreError::Refused)?;
        transaction.execute(
            "UPDATE networks SET record = ?2 WHERE id = ?1",
            params![id, record],
        )?;
        transaction.commit()?;
        Ok(NetworkRow {
            record,
            ..current.clone()
        })
    }

    /// Records the endpoint of `container_id` on `network_id`: `build` gets
    /// the addresses in use and returns the address to take and the record
    /// (an Err is its reason for refusing). Replaces an earlier endpoint of
    /// the same container on that network. Returns the address.
    pub fn add_endpoint(
        &mut self,
        network_id: &str,
        container_id: &str,
        build: impl FnOnce(&[String]) -> Result<(String, String), String>,
    ) -> Result<String, NetworkStoreError> {
        self.add_endpoint_among(network_id, container_id, |others| {
            let used: Vec<String> = others
                .iter()
                .filter(|row| !row.address.is_empty())
                .map(|row| row.address.clone())
                .collect();
            build(&used)
        })
    }

    /// As [`Store::add_endpoint`], with `build` given the network's other
    /// endpoints whole: their records hold what the address column does
    /// not (an endpoint's IPv6 address), read in the same transaction.
    pub fn add_endpoint_among(
        &mut self,
        network_id: &str,
        container_id: &str,
        build: impl FnOnce(&[EndpointRow]) -> Result<(String, String), String>,
    ) -> Result<String, NetworkStoreError> {
        let transaction = self
            .connection_mut()?
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        transaction.execute(
            "DELETE FROM endpoints WHERE network_id = ?1 AND container_id = ?2",
            [network_id, container_id],
        )?;
        let used: Vec<EndpointRow> = {
            let mut statement = transaction.prepare_cached(&format!(
                "SELECT {ENDPOINT_COLUMNS} FROM endpoints WHERE network_id = ?1"
            ))?;
            let rows = statement.query_map([network_id], endpoint_row)?;
            rows.collect::<Result<_, _>>()?
        };
        let (address, record) = build(&used).map_err(NetworkStoreError::Refused)?;
        let inserted = transaction.execute(
            &format!("INSERT INTO endpoints ({ENDPOINT_COLUMNS}) VALUES (?1, ?2, ?3, ?4)"),
            params![network_id, container_id, address, record],
        );
        match inserted {
            Ok(_) => {}
            Err(error) if is_unique_violation(&error) => {
                return Err(NetworkStoreError::Refused(format!(
                    "Address already in use: {address}"
                )))
            }
            Err(error) => return Err(error.into()),
        }
        transaction.commit()?;
        Ok(address)
    }

    /// Every endpoint, or those of one network or one container.
    pub fn endpoints(
        &self,
        network_id: Option<&str>,
        container_id: Option<&str>,
    ) -> Result<Vec<EndpointRow>, StoreError> {
        let mut statement = self.connection()?.prepare_cached(&format!(
            "SELECT {ENDPOINT_COLUMNS} FROM endpoints
             WHERE (?1 IS NULL OR network_id = ?1) AND (?2 IS NULL OR container_id = ?2)
             ORDER BY network_id, address"
        ))?;
        let rows = statement.query_map(params![network_id, container_id], endpoint_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Removes the endpoints of `container_id` (on one network, or all);
    /// returns what was removed.
    pub fn remove_endpoints(
        &self,
        container_id: &str,
        network_id: Option<&str>,
    ) -> Result<Vec<EndpointRow>, StoreError> {
        // Callers hold only a shared store (a monitor, a reconcile); the
        // write lock is taken up front all the same.
        let transaction = rusqlite::Transaction::new_unchecked(
            self.connection()?,
            TransactionBehavior::Immediate,
        )?;
        let removed: Vec<EndpointRow> = {
            let mut statement = transaction.prepare_cached(&format!(
                "SELECT {ENDPOINT_COLUMNS} FROM endpoints
                 WHERE container_id = ?1 AND (?2 IS NULL OR network_id = ?2)"
            ))?;
            let rows = statement.query_map(params![container_id, network_id], endpoint_row)?;
            rows.collect::<Result<_, _>>()?
        };
        transaction.execute(
            "DELETE FROM endpoints WHERE container_id = ?1 AND (?2 IS NULL OR network_id = ?2)",
            params![container_id, network_id],
        )?;
        transaction.commit()?;
        Ok(removed)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn network(id: &str, name: &str) -> NetworkRow {
        NetworkRow {
            id: id.to_owned(),
            name: name.to_owned(),
            created: "2026-11-30T00:00:00Z".to_owned(),
            record: "{}".to_owned(),
        }
    }

    fn first_free(used: &[String]) -> Result<(String, String), String> {
        (2..255)
            .map(|host| format!("10.1.0.{host}"))
            .find(|address| !used.contains(address))
            .map(|address| (address, "{}".to_owned()))
            .ok_or_else(|| "no address left".to_owned())
    }

    #[test]
    fn names_are_unique_and_checks_see_existing_networks() {
        let directory = tempfile::tempdir().unwrap();
        let mut store = Store::open(directory.path()).unwrap();
        store.insert_network(|_| Ok(network("a1", "one"))).unwrap();
        assert!(matches!(
            store.insert_network(|_| Ok(network("b2", "one"))),
            Err(NetworkStoreError::NameInUse(name)) if name == "one"
        ));
        let refused = store.insert_network(|existing| {
            assert_eq!(existing.len(), 1);
            Err("overlaps one".to_owned())
        });
        assert!(
            matches!(refused, Err(NetworkStoreError::Refused(message)) if message == "overlaps one")
        );
        assert_eq!(store.networks().unwrap().len(), 1);
        assert_eq!(store.network_by_name("one").unwrap().unwrap().id, "a1");
    }

    #[test]
    fn addresses_are_never_handed_out_twice_and_come_back_when_freed() {
        let directory = tempfile::tempdir().unwrap();
        let mut store = Store::open(directory.path()).unwrap();
        store.insert_network(|_| Ok(network("n1", "net"))).unwrap();
        let a = store.add_endpoint("n1", "ca", first_free).unwrap();
        let b = store.add_endpoint("n1", "cb", first_free).unwrap();
        assert_eq!((a.as_str(), b.as_str()), ("10.1.0.2", "10.1.0.3"));
        // A chooser that insists on a taken address is refused by the index.
        let clash =
            store.add_endpoint("n1", "cc", |_| Ok(("10.1.0.2".to_owned(), "{}".to_owned())));
        assert!(matches!(clash, Err(NetworkStoreError::Refused(_))));
        assert_eq!(store.remove_endpoints("ca", None).unwrap().len(), 1);
        assert_eq!(
            store.add_endpoint("n1", "cc", first_free).unwrap(),
            "10.1.0.2"
        );
        assert_eq!(store.endpoints(Some("n1"), None).unwrap().len(), 2);
        assert_eq!(
            store.endpoints(None, Some("cb")).unwrap()[0].address,
            "10.1.0.3"
        );
    }

    #[test]
    fn a_network_with_endpoints_is_not_deleted() {
        let directory = tempfile::tempdir().unwrap();
        let mut store = Store::open(directory.path()).unwrap();
        store.insert_network(|_| Ok(network("n1", "net"))).unwrap();
        store.add_endpoint("n1", "ca", first_free).unwrap();
        assert!(matches!(
            store.delete_network("n1"),
            Err(NetworkStoreError::Refused(holders)) if holders == "ca"
        ));
        store.remove_endpoints("ca", Some("n1")).unwrap();
        assert!(store.delete_network("n1").unwrap());
        assert!(!store.delete_network("n1").unwrap());
    }

    #[test]
    fn a_record_is_updated_only_while_no_endpoint_is_on_it() {
        let directory = tempfile::tempdir().unwrap();
        let mut store = Store::open(directory.path()).unwrap();
        store.insert_network(|_| Ok(network("n1", "net"))).unwrap();
        store
            .insert_network(|_| Ok(network("n2", "other")))
            .unwrap();
        let row = store
            .update_network_record("n1", |current, others| {
                assert_eq!(current.name, "net");
                assert_eq!(others.len(), 1);
                Ok("{\"subnet\":\"10.9.0.0/16\"}".to_owned())
            })
            .unwrap();
        assert_eq!(row.record, "{\"subnet\":\"10.9.0.0/16\"}");
        assert_eq!(store.network("n1").unwrap().unwrap(), row);
        store.add_endpoint("n1", "ca", first_free).unwrap();
        assert!(matches!(
            store.update_network_record("n1", |_, _| Ok("{}".to_owned())),
            Err(NetworkStoreError::Refused(_))
        ));
        assert_eq!(store.network("n1").unwrap().unwrap(), row);
        assert!(matches!(
            store.update_network_record("gone", |_, _| Ok("{}".to_owned())),
            Err(NetworkStoreError::Refused(_))
        ));
    }
}
