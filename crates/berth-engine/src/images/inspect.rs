//! `image inspect`: Docker's JSON shape (Engine API `ImageInspect`).

use berth_store::{ImageRecord, Store};
use berth_types::image::{ContainerConfig, ImageConfig};
use serde_json::{json, Map, Value};

use super::{familiar, ImageError};
use crate::EngineError;

/// The image config as stored (its blob is the image id).
pub(crate) fn read_config(store: &Store, image: &ImageRecord) -> Result<ImageConfig, EngineError> {
    let bytes = store.blobs().read(&image.id)?;
    serde_json::from_slice(&bytes).map_err(|source| {
        ImageError::InvalidConfig {
            id: image.id.clone(),
            source,
        }
        .into()
    })
}

/// The image `image` was committed from (its config's `parent`, as
/// Docker's `ParentId`), or "" for a pulled or loaded one.
pub fn image_parent(store: &Store, image: &ImageRecord) -> Result<String, EngineError> {
    let config = read_config(store, image)?;
    Ok(config
        .extra
        .get("parent")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned())
}

/// The ids of the images some of `images` were built on: the intermediate
/// images (`images` hides them without `-a`, `prune` and `rmi` take them
/// only with their last child).
pub fn parent_ids(store: &Store, images: &[ImageRecord]) -> std::collections::HashSet<String> {
    images
        .iter()
        .filter_map(|image| image_parent(store, image).ok())
        .filter(|parent| !parent.is_empty())
        .collect()
}

/// Each of `images` (by id) with the image it was built on, where it has one.
pub fn parent_map(
    store: &Store,
    images: &[ImageRecord],
) -> std::collections::HashMap<String, String> {
    images
        .iter()
        .filter_map(|image| {
            let parent = image_parent(store, image).ok()?;
            (!parent.is_empty()).then(|| (image.id.to_string(), parent))
        })
        .collect()
}

pub fn inspect_image(store: &Store, image: &ImageRecord) -> Result<Value, EngineError> {
    let config = read_config(store, image)?;
    let repo_tags: Vec<String> = image.tags.iter().map(|tag| familiar(tag)).collect();
    let repo_digests: Vec<String> = image.repo_digests.iter().map(|tag| familiar(tag)).collect();
    let layer_paths: Vec<String> = image
        .layers
        .iter()
        .map(|chain_id| store.layers().path(chain_id).display().to_string())
        .collect();
    let string = |key: &str| {
        config
            .extra
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    Ok(json!({
        "Id": image.id.to_string(),
        "RepoTags": repo_tags,
        "RepoDigests": repo_digests,
        "Parent": string("parent"),
        "Comment": config.history.last().and_then(|entry| entry.comment.clone()).unwrap_or_default(),
        "Created": image.created.clone().unwrap_or_else(|| "0001-01-01T00:00:00Z".to_owned()),
        // Docker before 25 (API < 1.45) always has these two; docker-compose
        // 1.x reads `ContainerConfig` on every recreate.
        "Container": string("container"),
        "ContainerConfig": legacy_container_config(config.extra.get("container_config")),
        "DockerVersion": string("docker_version"),
        "Author": config.author.clone().unwrap_or_default(),
        "Config": docker_config(config.config.as_ref()),
        "Architecture": config.architecture,
        "Variant": config.variant,
        "Os": config.os,
        "Size": image.size,
        "GraphDriver": {
            "Data": { "LowerDir": layer_paths.iter().rev().cloned().collect::<Vec<_>>().join(":") },
            "Name": "overlay",
        },
        "RootFS": {
            "Type": if config.rootfs.kind.is_empty() { "layers".to_owned() } else { config.rootfs.kind.clone() },
            "Layers": config.rootfs.diff_ids.iter().map(ToString::to_string).collect::<Vec<_>>(),
        },
        "Metadata": { "LastTagTime": "0001-01-01T00:00:00Z" },
    }))
    .map(|mut value| {
        // Docker omits Variant when empty.
        if let Some(object) = value.as_object_mut() {
            if object.get("Variant").is_some_and(Value::is_null) {
                object.remove("Variant");
            }
        }
        value
    })
}

/// The config of the container an image was committed from, as the image
/// records it (`container_config`), or Docker 20.10's empty one.
fn legacy_container_config(recorded: Option<&Value>) -> Value {
    if let Some(recorded @ Value::Object(_)) = recorded {
        return recorded.clone();
    }
    json!({
        "Hostname": "", "Domainname": "", "User": "",
        "AttachStdin": false, "AttachStdout": false, "AttachStderr": false,
        "Tty": false, "OpenStdin": false, "StdinOnce": false,
        "Env": null, "Cmd": null, "Image": "", "Volumes": null, "WorkingDir": "",
        "Entrypoint": null, "OnBuild": null, "Labels": null,
    })
}

/// The image's runtime config as current Docker (API 1.50+) prints it: the
/// OCI image config fields, each only when set.
pub(crate) fn docker_config(config: Option<&ContainerConfig>) -> Value {
    let Some(config) = config else {
        return Value::Object(Map::new());
    };
    let mut object = Map::new();
    let mut put = |key: &str, value: Value| {
        if !value.is_null() && value != json!("") {
            object.insert(key.to_owned(), value);
        }
    };
    put("User", json!(config.user));
    put("ExposedPorts", json!(config.exposed_ports));
    put("Env", json!(config.env));
    put("Entrypoint", json!(config.entrypoint));
    put("Cmd", json!(config.cmd));
    put("Volumes", json!(config.volumes));
    put("WorkingDir", json!(config.working_dir));
    put("Labels", json!(config.labels));
    put("StopSignal", json!(config.stop_signal));
    for key in ["ArgsEscaped", "Healthcheck", "OnBuild", "Shell"] {
        put(key, config.extra.get(key).cloned().unwrap_or(Value::Null));
    }
    Value::Object(object)
}
