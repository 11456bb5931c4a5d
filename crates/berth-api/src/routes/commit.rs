//! `POST /commit`: `docker commit`, through the engine's commit (the one
//! `berth commit` calls). The engine freezes the container's cgroup and
//! writes its layer in this process without forking, so no helper process
//! is needed.

use berth_engine::containers::{commit_container, CommitOptions};
use berth_types::image::ContainerConfig;
use berth_types::Reference;
use serde_json::json;

use crate::error::ApiError;
use crate::http::{Exchange, Response};
use crate::router::{reply, Handled};
use crate::server::Server;

/// Query `container`, `repo`, `tag`, `comment`, `author`, `pause`
/// (default true), `changes` (repeated Dockerfile lines), and a body with a
/// container config to merge (the docker CLI sends `null`). As Docker
/// (moby's `postCommit`): a bad body or reference is 400 before the
/// container is looked up; an unknown container is 404; a bad change 400;
/// the answer is `201 {"Id": "sha256:…"}`.
pub fn commit(server: &Server, exchange: &mut Exchange<'_>) -> Handled {
    let config: Option<ContainerConfig> = exchange.json_or_default()?;
    let reference = repo_tag_reference(
        exchange.query("repo").unwrap_or_default(),
        exchange.query("tag").unwrap_or_default(),
    )?;
    let container = exchange.query("container").unwrap_or_default().to_owned();
    if container.is_empty() {
        // moby's words for an empty name (daemon.GetContainer).
        return Err(ApiError::bad_request("invalid name or ID supplied: \"\""));
    }
    let mut changes = config.as_ref().map(config_changes).unwrap_or_default();
    changes.extend(
        exchange
            .request
            .query_all("changes")
            .into_iter()
            .map(str::to_owned),
    );
    let text = |name: &str| {
        exchange
            .query(name)
            .filter(|text| !text.is_empty())
            .map(str::to_owned)
    };
    let options = CommitOptions {
        reference,
        author: text("author"),
        message: text("comment"),
        changes,
        // httputils.BoolValueOrDefault: absent is true, present is a bool.
        pause: exchange.query("pause").is_none() || exchange.query_bool("pause"),
    };
    let mut engine = server.engine()?;
    let id = commit_container(&mut engine, &container, &options)?;
    reply(Response::json(201, &json!({ "Id": id.to_string() })))
}

/// moby's `httputils.RepoTagReference`: no `repo`, no reference; `repo` may
/// carry a tag, which `tag` replaces; a digest is refused (Docker's words).
/// (`docker import` through `POST /images/create?fromSrc=` uses it too.)
pub(crate) fn repo_tag_reference(repository: &str, tag: &str) -> Result<Option<String>, ApiError> {
    if repository.is_empty() {
        return Ok(None);
    }
    let invalid = |error: berth_types::ReferenceError| ApiError::bad_request(error.to_string());
    let named = Reference::parse_normalized(repository).map_err(invalid)?;
    if named.digest().is_some() {
        return Err(ApiError::bad_request("cannot import digest reference"));
    }
    let named = if tag.is_empty() {
        named
    } else {
        named.with_tag(tag).map_err(invalid)?
    };
    Ok(Some(named.to_string()))
}

/// The body's config as Dockerfile lines for the engine's commit, applied
/// before the query's `changes`. moby takes the body as the image config
/// and fills what it leaves empty from the container's (`daemon/commit.go`
/// `merge`): set fields win, `Env` and `Labels` win key by key, ports and
/// volumes are added, and an `Entrypoint` comes with the body's `Cmd` (none
/// when it has none) — the same result as these lines applied on top of the
/// container's config; a `Healthcheck` becomes a `HEALTHCHECK` line (whose
/// unset fields keep the container's). Fields outside the image config berth
/// keeps (`OnBuild`, `Shell`, …) are ignored.
fn config_changes(config: &ContainerConfig) -> Vec<String> {
    let mut lines = Vec::new();
    let quoted = |text: &str| format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""));
    let json_array = |items: &[String]| serde_json::to_string(items).unwrap_or_default();
    let env: Vec<String> = config
        .env
        .iter()
        .flatten()
        // An entry without `=` names no value; ENV cannot say it.
        .filter(|entry| {
            entry
                .split_once('=')
                .is_some_and(|(key, _)| !key.is_empty())
        })
        .map(|entry| quoted(entry))
        .collect();
    if !env.is_empty() {
        lines.push(format!("ENV {}", env.join(" ")));
    }
    let labels: Vec<String> = config
        .labels
        .iter()
        .flatten()
        .filter(|(key, _)| !key.is_empty() && !key.contains('='))
        .map(|(key, value)| quoted(&format!("{key}={value}")))
        .collect();
    if !labels.is_empty() {
        lines.push(format!("LABEL {}", labels.join(" ")));
    }
    let entrypoint = config.entrypoint.as_deref().unwrap_or_default();
    let cmd = config.cmd.as_deref().unwrap_or_default();
    if !entrypoint.is_empty() {
        lines.push(format!("ENTRYPOINT {}", json_array(entrypoint)));
        lines.push(format!("CMD {}", json_array(cmd)));
    } else if !cmd.is_empty() {
        lines.push(format!("CMD {}", json_array(cmd)));
    }
    for (instruction, value) in [
        ("USER", &config.user),
        ("WORKDIR", &config.working_dir),
        ("STOPSIGNAL", &config.stop_signal),
    ] {
        if let Some(value) = value
            .as_deref()
            .map(str::trim)
            .filter(|text| !text.is_empty())
        {
            lines.push(format!("{instruction} {value}"));
        }
    }
    let ports: Vec<&str> = config
        .exposed_ports
        .iter()
        .flatten()
        .map(|(port, _)| port.as_str())
        .collect();
    if !ports.is_empty() {
        lines.push(format!("EXPOSE {}", ports.join(" ")));
    }
    let volumes: Vec<String> = config
        .volumes
        .iter()
        .flatten()
        .map(|(path, _)| path.clone())
        .collect();
    if !volumes.is_empty() {
        lines.push(format!("VOLUME {}", json_array(&volumes)));
    }
    if let Some(line) = config
        .extra
        .get("Healthcheck")
        .and_then(|value| serde_json::from_value(value.clone()).ok())
        .and_then(|health| healthcheck_line(&health))
    {
        lines.push(line);
    }
    lines
}

/// A body's `Healthcheck` as the `HEALTHCHECK` line that sets it (durations in
/// nanoseconds, which Go's duration syntax takes as `…ns`).
fn healthcheck_line(health: &berth_types::container::HealthConfig) -> Option<String> {
    let (kind, arguments) = health.test.split_first()?;
    let mut line = "HEALTHCHECK".to_owned();
    for (flag, value) in [
        ("interval", health.interval),
        ("timeout", health.timeout),
        ("start-period", health.start_period),
        ("start-interval", health.start_interval),
    ] {
        if value > 0 {
            line.push_str(&format!(" --{flag}={value}ns"));
        }
    }
    if health.retries > 0 {
        line.push_str(&format!(" --retries={}", health.retries));
    }
    match kind.as_str() {
        "NONE" => Some("HEALTHCHECK NONE".to_owned()),
        "CMD" => Some(format!(
            "{line} CMD {}",
            serde_json::to_string(arguments).unwrap_or_default()
        )),
        "CMD-SHELL" => Some(format!("{line} CMD {}", arguments.join(" "))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use berth_image::parse_change;

    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| item.to_string()).collect()
    }

    /// The container's config with the body's lines applied, as the engine
    /// applies them.
    fn applied(base: ContainerConfig, body: &ContainerConfig) -> ContainerConfig {
        let mut config = base;
        for line in config_changes(body) {
            parse_change(&line)
                .unwrap_or_else(|error| panic!("{line:?}: {error}"))
                .apply(&mut config);
        }
        config
    }

    #[test]
    fn a_body_healthcheck_becomes_a_healthcheck_line() {
        let mut body = ContainerConfig::default();
        body.extra.insert(
            "Healthcheck".into(),
            json!({"Test": ["CMD", "true", "a b"], "Interval": 2_000_000_000i64, "Retries": 4}),
        );
        let mut container = ContainerConfig::default();
        container.extra.insert(
            "Healthcheck".into(),
            json!({"Test": ["CMD-SHELL", "old"], "Timeout": 1_000_000_000i64}),
        );
        assert_eq!(
            applied(container, &body).extra["Healthcheck"],
            json!({"Test": ["CMD", "true", "a b"], "Interval": 2_000_000_000i64, "Timeout": 1_000_000_000i64, "Retries": 4})
        );
        body.extra.insert(
            "Healthcheck".into(),
            json!({"Test": ["CMD-SHELL", "exit 0"]}),
        );
        assert_eq!(config_changes(&body), ["HEALTHCHECK CMD exit 0"]);
        body.extra
            .insert("Healthcheck".into(), json!({"Test": ["NONE"]}));
        assert_eq!(config_changes(&body), ["HEALTHCHECK NONE"]);
    }

    #[test]
    fn an_empty_body_changes_nothing() {
        assert!(config_changes(&ContainerConfig::default()).is_empty());
    }

    #[test]
    fn body_fields_merge_over_the_container_as_moby_merges() {
        let container = ContainerConfig {
            env: Some(strings(&["PATH=/bin", "KEEP=1"])),
            cmd: Some(strings(&["sh"])),
            labels: Some(BTreeMap::from([("old".to_owned(), "1".to_owned())])),
            user: Some("nobody".to_owned()),
            ..ContainerConfig::default()
        };
        let body = ContainerConfig {
            env: Some(strings(&[
                "PATH=/x",
                r#"ODD=a "quoted" \ value with spaces"#,
                "NOVALUE",
            ])),
            labels: Some(BTreeMap::from([("new".to_owned(), "a b".to_owned())])),
            entrypoint: Some(strings(&["/bin/true", "it's"])),
            working_dir: Some("/srv".to_owned()),
            exposed_ports: Some(BTreeMap::from([("81/tcp".to_owned(), json!({}))])),
            volumes: Some(BTreeMap::from([("/data".to_owned(), json!({}))])),
            ..ContainerConfig::default()
        };
        let merged = applied(container, &body);
        assert_eq!(
            merged.env.unwrap(),
            strings(&["PATH=/x", "KEEP=1", r#"ODD=a "quoted" \ value with spaces"#])
        );
        assert_eq!(
            merged.labels.unwrap(),
            BTreeMap::from([
                ("old".to_owned(), "1".to_owned()),
                ("new".to_owned(), "a b".to_owned())
            ])
        );
        // An entrypoint without a command: the container's command goes.
        assert_eq!(merged.entrypoint.unwrap(), strings(&["/bin/true", "it's"]));
        assert_eq!(merged.cmd.unwrap(), Vec::<String>::new());
        assert_eq!(merged.user.as_deref(), Some("nobody"));
        assert_eq!(merged.working_dir.as_deref(), Some("/srv"));
        assert!(merged.exposed_ports.unwrap().contains_key("81/tcp"));
        assert!(merged.volumes.unwrap().contains_key("/data"));
    }

    #[test]
    fn a_command_alone_keeps_the_container_entrypoint() {
        let container = ContainerConfig {
            entrypoint: Some(strings(&["/entry"])),
            cmd: Some(strings(&["old"])),
            ..ContainerConfig::default()
        };
        let body = ContainerConfig {
            cmd: Some(strings(&["echo", "new"])),
            ..ContainerConfig::default()
        };
        let merged = applied(container, &body);
        assert_eq!(merged.entrypoint.unwrap(), strings(&["/entry"]));
        assert_eq!(merged.cmd.unwrap(), strings(&["echo", "new"]));
    }

    #[test]
    fn references_follow_moby() {
        assert_eq!(repo_tag_reference("", "x").unwrap(), None);
        assert_eq!(
            repo_tag_reference("repo", "").unwrap().as_deref(),
            Some("docker.io/library/repo")
        );
        assert_eq!(
            repo_tag_reference("repo:old", "new").unwrap().as_deref(),
            Some("docker.io/library/repo:new")
        );
        assert_eq!(repo_tag_reference("Bad", "").unwrap_err().status, 400);
        assert_eq!(
            repo_tag_reference("good", "bad:tag").unwrap_err().status,
            400
        );
        let digest = format!("repo@sha256:{}", "a".repeat(64));
        assert_eq!(
            repo_tag_reference(&digest, "").unwrap_err().message,
            "cannot import digest reference"
        );
    }
}
