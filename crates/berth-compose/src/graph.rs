//! Services by dependency level: level 0 depends on nothing, level n only on levels below n.
//! `up` starts a level's services together once the level below is ready; `down` goes the
//! other way. A cycle is an error naming its services.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value as Json;

use crate::error::ComposeError;

/// The services each service depends on (only those present: an optional dependency on a
/// service that is not in the project is no edge).
pub fn dependencies(services: &BTreeMap<String, Json>) -> BTreeMap<String, Vec<String>> {
    services
        .iter()
        .map(|(name, service)| {
            let depends = service
                .get("depends_on")
                .and_then(Json::as_object)
                .map(|depends| {
                    depends
                        .keys()
                        .filter(|other| services.contains_key(*other))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            (name.clone(), depends)
        })
        .collect()
}

pub fn levels(services: &BTreeMap<String, Json>) -> Result<Vec<Vec<String>>, ComposeError> {
    let edges = dependencies(services);
    if let Some(cycle) = find_cycle(&edges) {
        return Err(ComposeError::Cycle(cycle.join(" -> ")));
    }
    let mut level_of: BTreeMap<String, usize> = BTreeMap::new();
    fn depth(
        name: &str,
        edges: &BTreeMap<String, Vec<String>>,
        level_of: &mut BTreeMap<String, usize>,
    ) -> usize {
        if let Some(level) = level_of.get(name) {
            return *level;
        }
        let level = edges
            .get(name)
            .map(|depends| {
                depends
                    .iter()
                    .map(|other| depth(other, edges, level_of) + 1)
                    .max()
                    .unwrap_or(0)
            })
            .unwrap_or(0);
        level_of.insert(name.to_owned(), level);
        level
    }
    for name in edges.keys() {
        depth(name, &edges, &mut level_of);
    }
    let count = level_of.values().max().map_or(0, |max| max + 1);
    let mut levels = vec![Vec::new(); count];
    for (name, level) in level_of {
        levels[level].push(name);
    }
    Ok(levels)
}

/// A cycle as the path that closes it (`a -> b -> a`), found depth-first in name order.
fn find_cycle(edges: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    let mut done = BTreeSet::new();
    for start in edges.keys() {
        let mut path = Vec::new();
        if let Some(cycle) = visit(start, edges, &mut path, &mut done) {
            return Some(cycle);
        }
    }
    None
}

fn visit(
    name: &str,
    edges: &BTreeMap<String, Vec<String>>,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(at) = path.iter().position(|seen| seen == name) {
        let mut cycle = path[at..].to_vec();
        cycle.push(name.to_owned());
        return Some(cycle);
    }
    if done.contains(name) {
        return None;
    }
    path.push(name.to_owned());
    for other in edges.get(name).into_iter().flatten() {
        if let Some(cycle) = visit(other, edges, path, done) {
            return Some(cycle);
        }
    }
    path.pop();
    done.insert(name.to_owned());
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn services(pairs: &[(&str, &[&str])]) -> BTreeMap<String, Json> {
        pairs
            .iter()
            .map(|(name, depends)| {
                let depends: serde_json::Map<String, Json> = depends
                    .iter()
                    .map(|other| ((*other).to_owned(), json!({"condition": "service_started"})))
                    .collect();
                ((*name).to_owned(), json!({"depends_on": depends}))
            })
            .collect()
    }

    #[test]
    fn levels_group_independent_services() {
        let levels = levels(&services(&[
            ("db", &[]),
            ("cache", &[]),
            ("migrate", &["db"]),
            ("app", &["migrate", "cache"]),
            ("worker", &["app"]),
        ]))
        .expect("no cycle");
        assert_eq!(
            levels,
            vec![
                vec!["cache".to_owned(), "db".to_owned()],
                vec!["migrate".to_owned()],
                vec!["app".to_owned()],
                vec!["worker".to_owned()],
            ]
        );
    }

    #[test]
    fn a_cycle_names_its_services() {
        let error =
            levels(&services(&[("a", &["b"]), ("b", &["c"]), ("c", &["a"])])).expect_err("cycle");
        assert_eq!(
            error.to_string(),
            "dependency cycle detected: a -> b -> c -> a"
        );
        let error = levels(&services(&[("a", &["a"])])).expect_err("self");
        assert_eq!(error.to_string(), "dependency cycle detected: a -> a");
    }
}
