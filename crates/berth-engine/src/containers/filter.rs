//! `ps` filters (`status=`, `name=`, `label=`, `ancestor=`, `id=`,
//! `exited=`), shared by `berth ps` and `GET /containers/json`.

use super::lookup::Container;

/// The filter keys `ps` accepts.
pub const CONTAINER_FILTERS: &[&str] = &["status", "name", "label", "ancestor", "id", "exited"];

/// Whether `container` passes `ps`'s filters: values of one key are
/// ORed, different keys ANDed, and every `label` must hold (Docker's rule:
/// `MatchKVList`; docker-compose lists a project's containers with
/// `label=…project=p` and `label=…oneoff=False` together).
pub fn container_matches(container: &Container, filters: &[(String, String)]) -> bool {
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
            _ => false,
        };
        if *key == "label" {
            values.all(matches)
        } else {
            values.any(matches)
        }
    })
}
