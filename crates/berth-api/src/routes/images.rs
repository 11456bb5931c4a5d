//! `/images/…`: pull (`create`, with Docker's JSON progress stream) and
//! import (`create?fromSrc=-`), list, inspect, history, tag, push, DELETE,
//! get (save), load, prune.

use std::collections::BTreeMap;
use std::os::unix::net::UnixStream;
use std::sync::Mutex;

use berth_engine::images::pull::{
    resolve_concurrency, PullEvent, PullRequest, PushEvent, RegistrySettings,
};
use berth_engine::images::{
    familiar, image_history, import_image, inspect_image, list_images, load_images, prune_images,
    pull_image, push_image, remove_image, resolve_image, save_images, tag_image, ImportRequest,
    ListOptions, PushRequest, RemovalEvent,
};
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::http::{ChunkedWriter, Exchange, Response};
use crate::router::{reply, Handled};
use crate::routes::unix_time;
use crate::server::{Outcome, Server};

/// Docker's progress bar text (`[=====>    ]  1.2MB/3.4MB`).
fn progress_bar(current: u64, total: u64) -> String {
    if total == 0 {
        return String::new();
    }
    let width = 50u64;
    let filled = (current.min(total) * width / total) as usize;
    let mut bar = "=".repeat(filled);
    if filled < width as usize {
        bar.push('>');
        bar.push_str(&" ".repeat(width as usize - filled - 1));
    }
    format!("[{bar}] {}/{}", human(current), human(total))
}

fn human(bytes: u64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit < units.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        return format!("{bytes}B");
    }
    // Go's `%.4g`, as docker/go-units prints sizes.
    let number = format!("{value:.3}");
    let number = number.trim_end_matches('0').trim_end_matches('.');
    format!("{number}{}", units[unit])
}

fn progress_json(status: String, id: Option<String>, progress: Option<(u64, u64)>) -> Value {
    let mut value = json!({ "status": status });
    if let Some(id) = id {
        value["id"] = json!(id);
    }
    match progress {
        Some((current, total)) => {
            value["progressDetail"] = json!({ "current": current, "total": total });
            value["progress"] = json!(progress_bar(current, total));
        }
        None => value["progressDetail"] = json!({}),
    }
    value
}

pub fn pull_event(event: PullEvent) -> Value {
    match event {
        PullEvent::PullingFrom {
            reference,
            repository,
        } => progress_json(format!("Pulling from {repository}"), Some(reference), None),
        PullEvent::Layer { id, status } => {
            progress_json(status.text().to_owned(), Some(id), status.progress())
        }
        PullEvent::Digest(digest) => progress_json(format!("Digest: {digest}"), None, None),
        PullEvent::Status(text) => progress_json(format!("Status: {text}"), None, None),
    }
}

fn push_event(event: PushEvent) -> Value {
    match event {
        PushEvent::Repository(repository) => progress_json(
            format!("The push refers to repository [{repository}]"),
            None,
            None,
        ),
        PushEvent::Layer { id, status } => {
            progress_json(status.text(), Some(id), status.progress())
        }
        PushEvent::Pushed { tag, digest, size } => {
            let mut value =
                progress_json(format!("{tag}: digest: {digest} size: {size}"), None, None);
            value["aux"] = json!({ "Tag": tag, "Digest": digest.to_string(), "Size": size });
            value
        }
    }
}

/// A JSON progress stream started at the first event, so that errors
/// before it (no such image, unauthorized) are still plain responses.
struct LazyStream<'s> {
    stream: &'s UnixStream,
    writer: Mutex<Option<ChunkedWriter<&'s UnixStream>>>,
}

impl<'s> LazyStream<'s> {
    fn new(stream: &'s UnixStream) -> Self {
        Self {
            stream,
            writer: Mutex::new(None),
        }
    }

    fn send(&self, value: &Value) {
        let Ok(mut writer) = self.writer.lock() else {
            return;
        };
        if writer.is_none() {
            *writer = crate::http::start_chunked(self.stream, 200, "application/json", &[]).ok();
        }
        if let Some(writer) = writer.as_mut() {
            let _ = writer.json_line(value);
        }
    }

    fn started(&self) -> bool {
        self.writer.lock().is_ok_and(|writer| writer.is_some())
    }

    /// Ends the stream, with an error message when the work failed.
    fn finish(self, error: Option<String>) -> Outcome {
        let Ok(writer) = self.writer.into_inner() else {
            return Outcome::Streamed { keep_alive: false };
        };
        let Some(mut writer) = writer else {
            return Outcome::Streamed { keep_alive: false };
        };
        if let Some(message) = error {
            let _ = writer.json_line(&json!({
                "errorDetail": { "message": message },
                "error": message,
            }));
        }
        Outcome::Streamed {
            keep_alive: writer.finish().is_ok(),
        }
    }
}

/// `POST /images/create`: a pull (`fromImage`), or an import (`fromSrc`).
pub fn pull(server: &Server, exchange: &mut Exchange<'_>) -> Handled {
    if let Some(source) = exchange
        .query("fromSrc")
        .filter(|source| !source.is_empty())
    {
        let source = source.to_owned();
        return import(server, exchange, &source);
    }
    let from = exchange
        .query("fromImage")
        .filter(|name| !name.is_empty())
        .ok_or_else(|| ApiError::bad_request("fromImage must be given"))?;
    let tag = exchange.query("tag").unwrap_or_default();
    let name = if tag.is_empty() {
        from.to_owned()
    } else if tag.starts_with("sha256:") {
        format!("{from}@{tag}")
    } else {
        format!("{from}:{tag}")
    };
    let mut settings = RegistrySettings::load(&berth_engine::config_file())
        .map_err(|error| ApiError::internal(error.to_string()))?;
    settings.credentials = super::registry_auth::auth_header(exchange)?;
    let request = PullRequest {
        reference: name,
        platform: exchange
            .query("platform")
            .filter(|text| !text.is_empty())
            .map(str::to_owned),
        concurrency: resolve_concurrency(None, None),
        settings,
    };
    let mut engine = server.engine()?;
    let stream = exchange
        .connection
        .stream()
        .try_clone()
        .map_err(|error| ApiError::internal(error.to_string()))?;
    let lazy = LazyStream::new(&stream);
    let result = pull_image(engine.store_mut(), &request, &|event| {
        lazy.send(&pull_event(event))
    });
    match result {
        Ok(_) => Ok(lazy.finish(None)),
        Err(error) => {
            let error = ApiError::from(error);
            if lazy.started() {
                return Ok(lazy.finish(Some(error.message)));
            }
            Err(error)
        }
    }
}

/// `fromSrc=-`: the body is a root filesystem tarball (what
/// `docker import FILE` sends), made into a one-layer image by the
/// engine's import, as `berth import` does; `repo`, `tag`, `message` and
/// `changes` as Docker takes them. The answer is Docker's: one JSON status
/// line with the new image's id, or an error status. Docker downloads any
/// other `fromSrc` as a URL; berth does not (nor does `berth import`).
fn import(server: &Server, exchange: &mut Exchange<'_>, source: &str) -> Handled {
    if source != "-" {
        return Err(ApiError::new(
            501,
            format!(
                "berth does not import from a URL ({source}): download the tarball and send it as the body with fromSrc=-"
            ),
        ));
    }
    if let Some(platform) = exchange.query("platform").filter(|text| !text.is_empty()) {
        let host = format!("linux/{}", berth_image::host_architecture());
        if platform != "linux" && platform != host {
            return Err(ApiError::bad_request(format!(
                "platform {platform:?} is not supported (this host is {host})"
            )));
        }
    }
    let reference = super::commit::repo_tag_reference(
        exchange.query("repo").unwrap_or_default(),
        exchange.query("tag").unwrap_or_default(),
    )?;
    let changes: Vec<String> = exchange
        .request
        .query_all("changes")
        .into_iter()
        .map(str::to_owned)
        .collect();
    // The engine checks them too, but only once the body is being read:
    // a bad one is answered here, before it.
    for change in &changes {
        berth_image::parse_change(change)
            .map_err(|error| ApiError::bad_request(error.to_string()))?;
    }
    let request = ImportRequest {
        reference,
        changes,
        message: exchange
            .query("message")
            .filter(|message| !message.is_empty())
            .map(str::to_owned),
        source_name: source.to_owned(),
    };
    let mut engine = server.engine()?;
    let mut body = exchange.body();
    let imported = import_image(
        engine.store_mut(),
        std::io::BufReader::with_capacity(1 << 20, &mut body),
        &request,
    );
    // Dropping the reader reads what the import left (tar padding, the
    // last chunk), so the connection can take the next request.
    drop(body);
    let body_read = exchange.body_read();
    match imported {
        Ok(id) => {
            let mut line =
                serde_json::to_vec(&json!({ "status": id.to_string() })).unwrap_or_default();
            line.extend_from_slice(b"\r\n");
            reply(Response {
                status: 200,
                headers: vec![("Content-Type".to_owned(), "application/json".to_owned())],
                body: line,
            })
        }
        Err(error) if body_read => Err(ApiError::from(error)),
        Err(error) => {
            // The rest of the body cannot be told from a next request:
            // answer, then close the connection.
            let mut stream = exchange.connection.stream();
            let _ = crate::http::write_response(
                &mut stream,
                &ApiError::from(error).response(),
                false,
                false,
            );
            Ok(Outcome::Streamed { keep_alive: false })
        }
    }
}

pub fn push(server: &Server, exchange: &mut Exchange<'_>, name: &str) -> Handled {
    let tag = exchange.query("tag").unwrap_or_default();
    let reference = if tag.is_empty() {
        name.to_owned()
    } else {
        format!("{name}:{tag}")
    };
    let mut settings = RegistrySettings::load(&berth_engine::config_file())
        .map_err(|error| ApiError::internal(error.to_string()))?;
    settings.credentials = super::registry_auth::auth_header(exchange)?;
    let request = PushRequest {
        reference,
        settings,
    };
    let mut engine = server.engine()?;
    let stream = exchange
        .connection
        .stream()
        .try_clone()
        .map_err(|error| ApiError::internal(error.to_string()))?;
    let lazy = LazyStream::new(&stream);
    let result = push_image(engine.store_mut(), &request, &|event| {
        lazy.send(&push_event(event))
    });
    match result {
        Ok(_) => Ok(lazy.finish(None)),
        Err(error) => {
            let error = ApiError::from(error);
            if lazy.started() {
                return Ok(lazy.finish(Some(error.message)));
            }
            Err(error)
        }
    }
}

pub fn list(server: &Server, exchange: &mut Exchange<'_>) -> Handled {
    let filters = crate::filters::parse(exchange.query("filters").unwrap_or_default())?;
    crate::filters::check(
        &filters,
        &["dangling", "reference", "label", "before", "since"],
    )?;
    let mut options = ListOptions {
        all: exchange.query_bool("all"),
        repository: exchange
            .query("filter")
            .filter(|text| !text.is_empty())
            .map(str::to_owned),
        ..ListOptions::default()
    };
    for (key, value) in &filters {
        match key.as_str() {
            "dangling" => {
                options.dangling = Some(match value.as_str() {
                    "true" | "1" => true,
                    "false" | "0" => false,
                    _ => {
                        return Err(ApiError::bad_request(format!(
                            "Invalid filter 'dangling=[{value}]'"
                        )))
                    }
                })
            }
            // Docker's `reference` filter: Go's `path.Match` patterns
            // against the familiar `name:tag` or the name alone.
            "reference" => options.references.push(value.clone()),
            "label" => options.labels.push(value.clone()),
            "before" => options.before = Some(value.clone()),
            "since" => options.since = Some(value.clone()),
            _ => {}
        }
    }
    let engine = server.engine()?;
    let store = engine.store();
    let rows = list_images(store, &options)?;
    // One entry per image, its names together (rows are per name).
    let mut images: BTreeMap<String, Value> = BTreeMap::new();
    let mut order = Vec::new();
    for row in rows {
        let id = row.id.to_string();
        let entry = images.entry(id.clone()).or_insert_with(|| {
            order.push(id.clone());
            let record = store.image(&row.id).ok().flatten();
            let repo_digests: Vec<String> = record
                .as_ref()
                .map(|record| {
                    record
                        .repo_digests
                        .iter()
                        .map(|reference| familiar(reference))
                        .collect()
                })
                .unwrap_or_default();
            let parent = record
                .as_ref()
                .and_then(|record| berth_engine::images::image_parent(store, record).ok())
                .unwrap_or_default();
            json!({
                "Id": id,
                "ParentId": parent,
                "RepoTags": [],
                "RepoDigests": repo_digests,
                "Created": unix_time(row.created.as_deref()),
                "Size": row.size,
                "VirtualSize": row.size,
                "SharedSize": -1,
                "Labels": if row.labels.is_empty() { Value::Null } else { json!(row.labels) },
                "Containers": -1,
            })
        });
        if row.repository != "<none>" {
            if let Some(tags) = entry["RepoTags"].as_array_mut() {
                tags.push(json!(format!("{}:{}", row.repository, row.tag)));
            }
        }
    }
    let mut list: Vec<Value> = order.iter().filter_map(|id| images.remove(id)).collect();
    list.sort_by_key(|image| std::cmp::Reverse(image["Created"].as_i64().unwrap_or(0)));
    reply(Response::json(200, &Value::Array(list)))
}

pub fn inspect(server: &Server, name: &str, version: (u32, u32)) -> Handled {
    let engine = server.engine()?;
    let image = resolve_image(engine.store(), name)?;
    let mut inspected = inspect_image(engine.store(), &image)?;
    if version < (1, 50) {
        legacy_config(&mut inspected);
    }
    reply(Response::json(200, &inspected))
}

/// Before API 1.50, dockerd printed an image's `Config` as a container
/// config, every field present (docker-py reads `Config.OnBuild` of any
/// image); 1.50 keeps the OCI image config's fields that are set.
fn legacy_config(inspected: &mut Value) {
    let Some(config) = inspected.get_mut("Config").and_then(Value::as_object_mut) else {
        return;
    };
    let defaults = json!({
        "Hostname": "", "Domainname": "", "User": "",
        "AttachStdin": false, "AttachStdout": false, "AttachStderr": false,
        "Tty": false, "OpenStdin": false, "StdinOnce": false,
        "Env": null, "Cmd": null, "Image": "", "Volumes": null, "WorkingDir": "",
        "Entrypoint": null, "OnBuild": null, "Labels": null,
    });
    if let Value::Object(defaults) = defaults {
        for (key, value) in defaults {
            config.entry(key).or_insert(value);
        }
    }
}

pub fn history(server: &Server, name: &str) -> Handled {
    let engine = server.engine()?;
    let image = resolve_image(engine.store(), name)?;
    let entries: Vec<Value> = image_history(engine.store(), &image)?
        .into_iter()
        .map(|entry| {
            json!({
                "Id": entry.id.unwrap_or_else(|| "<missing>".to_owned()),
                "Created": unix_time(entry.created.as_deref()),
                "CreatedBy": entry.created_by,
                "Tags": if entry.tags.is_empty() { Value::Null } else { json!(entry.tags) },
                "Size": entry.size,
                "Comment": entry.comment,
            })
        })
        .collect();
    reply(Response::json(200, &Value::Array(entries)))
}

pub fn tag(server: &Server, exchange: &mut Exchange<'_>, name: &str) -> Handled {
    let repository = exchange
        .query("repo")
        .filter(|repo| !repo.is_empty())
        .ok_or_else(|| ApiError::bad_request("repository name must be given"))?;
    let tag = exchange.query("tag").filter(|tag| !tag.is_empty());
    let target = match tag {
        Some(tag) => format!("{repository}:{tag}"),
        None => repository.to_owned(),
    };
    let mut engine = server.engine()?;
    tag_image(engine.store_mut(), name, &target)?;
    reply(Response::empty(201))
}

pub fn remove(server: &Server, exchange: &mut Exchange<'_>, name: &str) -> Handled {
    let force = exchange.query_bool("force");
    let mut engine = server.engine()?;
    let events = remove_image(engine.store_mut(), name, force)?;
    let rows: Vec<Value> = events
        .into_iter()
        .map(|event| match event {
            RemovalEvent::Untagged(name) => json!({ "Untagged": name }),
            RemovalEvent::Deleted(id) => json!({ "Deleted": id.to_string() }),
        })
        .collect();
    reply(Response::json(200, &Value::Array(rows)))
}

pub fn save(server: &Server, exchange: &mut Exchange<'_>, name: Option<String>) -> Handled {
    let names: Vec<String> = match name {
        Some(name) => vec![name],
        None => exchange
            .request
            .query_all("names")
            .into_iter()
            .map(str::to_owned)
            .collect(),
    };
    if names.is_empty() {
        return Err(ApiError::bad_request("no images named"));
    }
    let engine = server.engine()?;
    for name in &names {
        resolve_image(engine.store(), name)?;
    }
    let Ok(mut writer) = exchange.chunked(200, "application/x-tar", &[]) else {
        return Ok(Outcome::Streamed { keep_alive: false });
    };
    match save_images(engine.store(), &names, &mut writer) {
        Ok(()) => Ok(Outcome::Streamed {
            keep_alive: writer.finish().is_ok(),
        }),
        Err(error) => {
            tracing::warn!(%error, "save failed while streaming");
            Ok(Outcome::Streamed { keep_alive: false })
        }
    }
}

/// `POST /images/load`. As dockerd, a bad archive is answered 200 with the
/// error in the stream (docker-py raises `ImageLoadError`, the CLI prints
/// it and exits 1). `quiet` only drops progress bars, which berth has none
/// `GET /distribution/{name}/json`: the registry's manifest descriptor and
/// platforms for `name`, from the endpoints a pull would ask.
pub fn distribution(exchange: &mut Exchange<'_>, name: &str) -> Handled {
    let mut settings = RegistrySettings::load(&berth_engine::config_file())
        .map_err(|error| ApiError::internal(error.to_string()))?;
    settings.credentials = super::registry_auth::auth_header(exchange)?;
    let answer = berth_engine::images::pull::inspect_distribution(&settings, name)
        .map_err(berth_engine::EngineError::from)?;
    reply(Response::json(200, &answer))
}

/// of.
pub fn load(server: &Server, exchange: &mut Exchange<'_>) -> Handled {
    let mut engine = server.engine()?;
    let body = std::io::BufReader::with_capacity(1 << 20, exchange.body());
    let loaded = match load_images(engine.store_mut(), body) {
        Ok(loaded) => loaded,
        Err(error) => {
            let message = berth_engine::ErrorChain(&error).to_string();
            let mut body = serde_json::to_vec(
                &json!({ "errorDetail": { "message": message }, "error": message }),
            )
            .unwrap_or_default();
            body.extend_from_slice(b"\r\n");
            return reply(Response {
                status: 200,
                headers: vec![("Content-Type".to_owned(), "application/json".to_owned())],
                body,
            });
        }
    };
    let mut lines = Vec::new();
    for image in loaded {
        for moved in &image.moved {
            lines.push(format!(
                "The image {} already exists, renaming the old one with ID {} to empty string\n",
                familiar(&moved.reference),
                moved.previous
            ));
        }
        if image.tags.is_empty() {
            lines.push(format!("Loaded image ID: {}\n", image.id));
        }
        for tag in &image.tags {
            lines.push(format!("Loaded image: {}\n", tag.familiar_string()));
        }
    }
    let mut body = Vec::new();
    for line in lines {
        body.extend(serde_json::to_vec(&json!({ "stream": line })).unwrap_or_default());
        body.extend_from_slice(b"\r\n");
    }
    reply(Response {
        status: 200,
        headers: vec![("Content-Type".to_owned(), "application/json".to_owned())],
        body,
    })
}

pub fn prune(server: &Server, exchange: &mut Exchange<'_>) -> Handled {
    let filters = crate::filters::parse(exchange.query("filters").unwrap_or_default())?;
    crate::filters::check(&filters, &["dangling", "until", "label"])?;
    let all = filters
        .iter()
        .any(|(key, value)| key == "dangling" && matches!(value.as_str(), "false" | "0"));
    let mut engine = server.engine()?;
    let report = prune_images(engine.store_mut(), all)?;
    let deleted: Vec<Value> = report
        .events
        .into_iter()
        .map(|event| match event {
            RemovalEvent::Untagged(name) => json!({ "Untagged": name }),
            RemovalEvent::Deleted(id) => json!({ "Deleted": id.to_string() }),
        })
        .collect();
    reply(Response::json(
        200,
        &json!({ "ImagesDeleted": deleted, "SpaceReclaimed": report.reclaimed }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_bars() {
        assert_eq!(progress_bar(0, 0), "");
        let bar = progress_bar(50, 100);
        assert!(bar.starts_with("[========================="), "{bar}");
        assert!(bar.ends_with("] 50B/100B"), "{bar}");
        assert_eq!(human(1_500_000), "1.5MB");
    }

    #[test]
    fn events_in_docker_words() {
        let value = pull_event(PullEvent::PullingFrom {
            reference: "latest".to_owned(),
            repository: "library/busybox".to_owned(),
        });
        assert_eq!(value["status"], "Pulling from library/busybox");
        assert_eq!(value["id"], "latest");
    }
}
