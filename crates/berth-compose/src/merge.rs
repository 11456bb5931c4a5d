//! Several `-f` files (and `extends`) merged by the compose specification's merge rules:
//! mappings merge key by key, the later file winning for scalars; `command`, `entrypoint` and
//! `healthcheck.test` are replaced; `environment`, `labels`, `sysctls`, `extra_hosts`,
//! `build.args`, `depends_on` and `networks` merge as mappings whether written as lists or
//! maps; other sequences (`ports`, `volumes`, `expose`, `dns`, …) are appended, and
//! normalisation then keeps one entry per port and one mount per target.

use crate::yaml::{Node, Value};

/// Keys whose values are replaced, never merged.
const REPLACED: &[&str] = &["command", "entrypoint", "test"];

/// Keys that merge as mappings of `KEY=VALUE` (lists are read as maps first).
const KEY_VALUE: &[&str] = &["environment", "labels", "sysctls", "args", "extra_hosts"];

/// Keys whose list form is a set of names (`depends_on: [a]`, `networks: [n]`).
const NAME_LISTS: &[&str] = &["depends_on", "networks"];

/// Merges `over` into `base`; `key` is the key both are the values of.
pub fn merge(base: &mut Node, over: Node, key: &str) {
    if REPLACED.contains(&key) {
        *base = over;
        return;
    }
    if KEY_VALUE.contains(&key) {
        to_map(base, '=');
        let mut over = over;
        to_map(&mut over, '=');
        return merge_maps(base, over);
    }
    if NAME_LISTS.contains(&key) {
        names_to_map(base);
        let mut over = over;
        names_to_map(&mut over);
        return merge_maps(base, over);
    }
    match (&mut base.value, over.value) {
        (Value::Map(_), over_value @ Value::Map(_)) => {
            merge_maps(base, Node::new(over_value, over.at));
        }
        (Value::Seq(items), Value::Seq(more)) => items.extend(more),
        // `dns: 8.8.8.8` over or under `dns: [1.1.1.1]`: both are lists.
        (Value::Seq(items), scalar) => items.push(Node::new(scalar, over.at)),
        (scalar @ (Value::String(_) | Value::Int(_)), Value::Seq(more)) => {
            let first = Node::new(std::mem::replace(scalar, Value::Null), base.at.clone());
            let mut items = vec![first];
            items.extend(more);
            base.value = Value::Seq(items);
        }
        (_, over_value) => {
            *base = Node::new(over_value, over.at);
        }
    }
}

fn merge_maps(base: &mut Node, over: Node) {
    let Value::Map(over_entries) = over.value else {
        *base = over;
        return;
    };
    if !matches!(base.value, Value::Map(_)) {
        *base = Node::new(Value::Map(over_entries), over.at);
        return;
    }
    for (key, value) in over_entries {
        match base.get_mut(&key) {
            Some(existing) if !matches!(value.value, Value::Null) => merge(existing, value, &key),
            Some(existing) => *existing = value,
            None => base.set(&key, value),
        }
    }
}

/// `[A=1, B]` as `{A: "1", B: null}`.
fn to_map(node: &mut Node, separator: char) {
    let Value::Seq(items) = &node.value else {
        return;
    };
    let mut entries: Vec<(String, Node)> = Vec::new();
    for item in items {
        let Some(text) = item.scalar_text() else {
            continue;
        };
        let (key, value) = match text.split_once(separator) {
            Some((key, value)) => (key.to_owned(), Value::String(value.to_owned())),
            None => (text.clone(), Value::Null),
        };
        entries.retain(|(name, _)| *name != key);
        entries.push((key, Node::new(value, item.at.clone())));
    }
    node.value = Value::Map(entries);
}

fn names_to_map(node: &mut Node) {
    let Value::Seq(items) = &node.value else {
        return;
    };
    let entries = items
        .iter()
        .filter_map(|item| {
            item.scalar_text()
                .map(|name| (name, Node::new(Value::Null, item.at.clone())))
        })
        .collect();
    node.value = Value::Map(entries);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn yaml(text: &str) -> Node {
        crate::yaml::parse(text, Path::new("/c.yaml")).expect("yaml")
    }

    #[test]
    fn files_merge_by_the_spec_rules() {
        let mut base = yaml(
            "services:\n  web:\n    image: a\n    command: [x, y]\n    environment: [A=1, B=2]\n    ports: ['80']\n    depends_on: [db]\n",
        );
        let over = yaml(
            "services:\n  web:\n    image: b\n    command: [z]\n    environment: {B: 3, C: 4}\n    ports: ['81']\n    depends_on: {cache: {condition: service_healthy}}\n",
        );
        merge(&mut base, over, "");
        let web = base
            .get("services")
            .and_then(|s| s.get("web"))
            .expect("web");
        assert_eq!(web.get("image").and_then(Node::as_str), Some("b"));
        let command: Vec<_> = match &web.get("command").expect("command").value {
            Value::Seq(items) => items.iter().filter_map(Node::as_str).collect(),
            _ => Vec::new(),
        };
        assert_eq!(command, ["z"]);
        let environment = web.get("environment").expect("env");
        assert_eq!(environment.get("A").and_then(Node::as_str), Some("1"));
        assert_eq!(
            environment.get("B").and_then(Node::scalar_text).as_deref(),
            Some("3")
        );
        assert!(environment.get("C").is_some());
        assert!(matches!(&web.get("ports").expect("ports").value, Value::Seq(p) if p.len() == 2));
        let depends = web.get("depends_on").expect("depends");
        assert!(depends.get("db").is_some() && depends.get("cache").is_some());
    }
}
