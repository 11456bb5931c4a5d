//! `HEAD`/`GET`/`PUT /containers/{id}/archive` (`docker cp`) and
//! `GET /containers/{id}/export`, on the engine's copy code: paths are
//! resolved inside the container's root, as for `berth cp`.

use base64::Engine as _;
use berth_engine::containers::{
    check_copy_destination, container_copied, export_container, find_container, with_copy_root,
    CopyDirection,
};
use berth_engine::copy::{
    archive_from_container, extract_into_container, stat_path, ContainerFs, ExtractOptions,
    PathStat,
};

use crate::error::ApiError;
use crate::http::{Exchange, Response};
use crate::router::{reply, Handled};
use crate::server::{Outcome, Server};

const STAT_HEADER: &str = "X-Docker-Container-Path-Stat";

fn path_parameter(exchange: &Exchange<'_>) -> Result<String, ApiError> {
    exchange
        .query("path")
        .filter(|path| !path.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| ApiError::bad_request("path must not be empty"))
}

fn stat_header(stat: &PathStat) -> String {
    let json = serde_json::to_vec(stat).unwrap_or_default();
    base64::engine::general_purpose::STANDARD.encode(json)
}

pub fn head(server: &Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let path = path_parameter(exchange)?;
    let engine = server.engine()?;
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, id)?;
    let user = Some(container.record.run.user.clone()).filter(|user| !user.is_empty());
    let stat = with_copy_root(&engine, &container, |root| {
        let fs = ContainerFs::new(root.path, id).with_user(user.as_deref());
        Ok(stat_path(&fs, &path))
    })??;
    reply(Response::empty(200).with_header(STAT_HEADER, &stat_header(&stat)))
}

pub fn get(server: &Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let path = path_parameter(exchange)?;
    let engine = server.engine()?;
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, id)?;
    let user = Some(container.record.run.user.clone()).filter(|user| !user.is_empty());
    let outcome = with_copy_root(&engine, &container, |root| {
        let fs = ContainerFs::new(root.path, id).with_user(user.as_deref());
        // The stat goes in the head, before the tar: errors found here are
        // still proper responses.
        let stat = match stat_path(&fs, &path) {
            Ok(stat) => stat,
            Err(error) => return Ok(Err(error)),
        };
        let Ok(mut writer) = exchange.chunked(
            200,
            "application/x-tar",
            &[(STAT_HEADER, stat_header(&stat))],
        ) else {
            return Ok(Ok(Outcome::Streamed { keep_alive: false }));
        };
        match archive_from_container(&fs, &path, false, &mut writer) {
            Ok(_) => {
                container_copied(&engine, &container, CopyDirection::FromContainer);
                Ok(Ok(Outcome::Streamed {
                    keep_alive: writer.finish().is_ok(),
                }))
            }
            Err(error) => {
                tracing::warn!(%error, "archive failed while streaming");
                Ok(Ok(Outcome::Streamed { keep_alive: false }))
            }
        }
    })??;
    Ok(outcome)
}

pub fn put(server: &Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let path = path_parameter(exchange)?;
    let options = ExtractOptions {
        copy_uid_gid: exchange.query_bool("copyUIDGID"),
        no_overwrite_dir_non_dir: exchange.query_bool("noOverwriteDirNonDir"),
    };
    let engine = server.engine()?;
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, id)?;
    check_copy_destination(&container.record.run, &path)?;
    let user = Some(container.record.run.user.clone()).filter(|user| !user.is_empty());
    with_copy_root(&engine, &container, |root| {
        let fs = ContainerFs::new(root.path, id)
            .with_user(user.as_deref())
            .with_journal(Some(root.journal));
        let body = exchange.body();
        Ok(extract_into_container(&fs, &path, body, &options))
    })??;
    container_copied(&engine, &container, CopyDirection::IntoContainer);
    reply(Response::empty(200))
}

pub fn export(server: &Server, exchange: &mut Exchange<'_>, id: &str) -> Handled {
    let engine = server.engine()?;
    let config = engine.config().clone();
    find_container(engine.store(), &config, id)?;
    let Ok(mut writer) = exchange.chunked(200, "application/x-tar", &[]) else {
        return Ok(Outcome::Streamed { keep_alive: false });
    };
    match export_container(&engine, id, &mut writer) {
        Ok(()) => Ok(Outcome::Streamed {
            keep_alive: writer.finish().is_ok(),
        }),
        Err(error) => {
            tracing::warn!(%error, "export failed while streaming");
            Ok(Outcome::Streamed { keep_alive: false })
        }
    }
}
