//! `ps` filters (`status=`, `name=`, `label=`, `ancestor=`, `id=`, `exited=`, `network=`,
//! `volume=`, `since=`, `before=`, `health=`), shared by `berth ps` and `GET /containers/json`.
//! `publish=`/`expose=` are refused as unknown: Docker matches them against a running
//! container's live port list (host ports for `publish`), which this filter cannot see.

use berth_store::Store;

use super::lookup::Container;
use super::record::MountSource;
use crate::EngineError;

/// The filter keys `ps` accepts.
pub const CONTAINER_FILTERS: &[&str] = &[
    "status", "name", "label", "ancestor", "id", "exited", "network", "volume", "since", "before",
    "health",
];

/// `ps`'s filters, with `since=` and `before=` resolved against the listed containers.
pub struct ContainerFilters<'a> {
    filters: &'a [(String, String)],
    /// Creation times a container must come after (`since=`) or before (`before=`).
    since: Option<String>,
    before: Option<String>,
}

impl<'a> ContainerFilters<'a> {
    /// `since=X`/`before=X` name a container as every command does (id, name, unique id
    /// prefix: [`super::lookup::find_row`]); an unknown one is Docker's "No such container".
    pub fn new(filters: &'a [(String, String)], store: &Store) -> Result<Self, EngineError> {
        if let Some((_, value)) = filters.iter().find(|(key, value)| {
            key == "health" && !super::health::HEALTH_FILTER_VALUES.contains(&value.as_str())
        }) {
            // moby `daemon/list.go`'s words.
            return Err(EngineError::InvalidArgument(format!(
                "Unrecognised filter value for health: {value}"
            )));
        }
        let created = |key: &str| -> Result<Option<String>, EngineError> {
            match filters.iter().rev().find(|(k, _)| k == key) {
                Some((_, text)) => Ok(Some(super::lookup::find_row(store, text)?.created)),
                None => Ok(None),
            }
        };
        Ok(Self {
            filters,
            since: created("since")?,
            before: created("before")?,
        })
    }

    pub fn matches(&self, container: &Container) -> bool {
        let created = &container.record.created;
        self.since
            .as_ref()
            .is_none_or(|since| created_after(created, since))
            && self
                .before
                .as_ref()
                .is_none_or(|before| created_after(before, created))
            && container_matches(container, self.filters)
    }
}

/// Whether RFC 3339 time `a` is later than `b` (text order when either does not parse).
fn created_after(a: &str, b: &str) -> bool {
    match (
        chrono::DateTime::parse_from_rfc3339(a),
        chrono::DateTime::parse_from_rfc3339(b),
    ) {
        (Ok(a), Ok(b)) => a > b,
        _ => a > b,
    }
}

/// Whether `container` passes `ps`'s filters: values of one key are
/// ORed, different keys ANDed, and every `label` must hold (Docker's rule:
/// `MatchKVList`; docker-compose lists a project's containers with
/// `label=…project=p` and `label=…oneoff=False` together).
fn container_matches(container: &Container, filters: &[(String, String)]) -> bool {
    let mut keys: Vec<&str> = filters.iter().map(|(key, _)| key.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.iter().all(|key| {
        let mut values = filters.iter().filter(|(k, _)| k == key);
        let matches = |(_, value): &(String, String)| match *key {
            "status" => container.state.status.as_str() == value,
            "name" => container
                .record
                .name
                .contains(value.trim_start_matches('/')),
            "id" => container.record.id.starts_with(value.as_str()),
            "exited" => {
                container.state.status == super::state::Status::Exited
                    && value
                        .parse::<i32>()
                        .is_ok_and(|code| code == container.state.exit_code)
            }
            "label" => match value.split_once('=') {
                Some((label, wanted)) => container
                    .record
                    .run
                    .labels
                    .get(label)
                    .is_some_and(|actual| actual == wanted),
                None => container.record.run.labels.contains_key(value.as_str()),
            },
            "ancestor" => {
                container.record.image_name == *value
                    || container.record.image_id == *value
                    || container
                        .record
                        .image_id
                        .trim_start_matches("sha256:")
                        .starts_with(value.as_str())
                    || berth_types::Reference::parse_normalized(value)
                        .map(|reference| reference.with_default_tag().familiar_string())
                        .ok()
                        .zip(
                            berth_types::Reference::parse_normalized(&container.record.image_name)
                                .ok()
                                .map(|reference| reference.with_default_tag().familiar_string()),
                        )
                        .is_some_and(|(wanted, actual)| wanted == actual)
            }
            "network" => {
                let run = &container.record.run;
                run.network_mode == *value
                    || run.networks.iter().any(|network| {
                        network.name == *value
                            || (!value.is_empty() && network.network_id.starts_with(value.as_str()))
                    })
            }
            "volume" => container.record.run.mounts.iter().any(|mount| {
                mount.destination == *value
                    || matches!(&mount.source, MountSource::Volume { name } if name == value)
            }),
            "health" => {
                container
                    .state
                    .health_status()
                    .map_or("none", |status| status.as_str())
                    == value
            }
            // Resolved by [`ContainerFilters`].
            "since" | "before" => true,
            _ => false,
        };
        if *key == "label" {
            values.all(matches)
        } else {
            values.any(matches)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creation_times_compare_as_times() {
        assert!(created_after(
            "2026-12-01T10:00:01.5Z",
            "2026-12-01T10:00:01Z"
        ));
        assert!(!created_after(
            "2026-12-01T10:00:01Z",
            "2026-12-01T10:00:01Z"
        ));
        assert!(created_after(
            "2026-12-01T11:00:00+01:00",
            "2026-12-01T09:59:59Z"
        ));
    }
}
