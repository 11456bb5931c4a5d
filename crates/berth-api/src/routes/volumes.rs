//! `/volumes/…`: list, create, inspect, remove, prune (local driver).

use std::collections::BTreeMap;

use berth_engine::volumes::{
    create_volume, find_volume, prune_volumes, remove_volume, volume_json,
};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::http::{Exchange, Response};
use crate::router::{reply, Handled};
use crate::server::Server;

pub fn list(server: &Server, exchange: &mut Exchange<'_>) -> Handled {
    let filters = crate::filters::parse(exchange.query("filters").unwrap_or_default())?;
    crate::filters::check(&filters, &["dangling", "driver", "label", "name"])?;
    let engine = server.engine()?;
    let mut volumes = Vec::new();
    for row in engine.store().volumes()? {
        let value = volume_json(&engine, &row);
        let keep = filters.iter().all(|(key, wanted)| match key.as_str() {
            "name" => row.name.contains(wanted.as_str()),
            "driver" => row.driver == *wanted,
            "label" => match wanted.split_once('=') {
                Some((label, expected)) => value["Labels"][label].as_str() == Some(expected),
                None => value["Labels"].get(wanted.as_str()).is_some(),
            },
            "dangling" => {
                let dangling = berth_engine::volumes::volume_users(&engine, &row.name)
                    .map(|users| users.is_empty())
                    .unwrap_or(false);
                matches!(wanted.as_str(), "true" | "1") == dangling
            }
            _ => true,
        });
        if keep {
            volumes.push(value);
        }
    }
    reply(Response::json(
        200,
        &json!({ "Volumes": volumes, "Warnings": Value::Null }),
    ))
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
struct CreateBody {
    name: String,
    driver: String,
    driver_opts: Option<BTreeMap<String, String>>,
    labels: Option<BTreeMap<String, String>>,
}

pub fn create(server: &Server, exchange: &mut Exchange<'_>) -> Handled {
    let body: CreateBody = exchange.json_or_default()?;
    let anonymous = body.name.is_empty();
    let name = if anonymous {
        berth_engine::containers::names::new_id()
    } else {
        body.name
    };
    berth_engine::volumes::check_driver(&name, &body.driver)?;
    let engine = server.engine()?;
    let row = create_volume(
        &engine,
        &name,
        &body.labels.unwrap_or_default(),
        &body.driver_opts.unwrap_or_default(),
        anonymous,
    )?;
    reply(Response::json(201, &volume_json(&engine, &row)))
}

pub fn inspect(server: &Server, name: &str) -> Handled {
    let engine = server.engine()?;
    let row = find_volume(&engine, name)?;
    reply(Response::json(200, &volume_json(&engine, &row)))
}

pub fn remove(server: &Server, exchange: &mut Exchange<'_>, name: &str) -> Handled {
    let force = exchange.query_bool("force");
    let engine = server.engine()?;
    remove_volume(&engine, name, force)?;
    reply(Response::empty(204))
}

pub fn prune(server: &Server, exchange: &mut Exchange<'_>) -> Handled {
    let filters = crate::filters::parse(exchange.query("filters").unwrap_or_default())?;
    crate::filters::check(&filters, &["all", "label"])?;
    let all = filters
        .iter()
        .any(|(key, value)| key == "all" && matches!(value.as_str(), "true" | "1"));
    let engine = server.engine()?;
    let (removed, reclaimed) = prune_volumes(&engine, all)?;
    reply(Response::json(
        200,
        &json!({ "VolumesDeleted": removed, "SpaceReclaimed": reclaimed }),
    ))
}
