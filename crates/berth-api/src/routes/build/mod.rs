//! `POST /build`: the classic builder's protocol (what `DOCKER_BUILDKIT=0
//! docker build`, docker-py's `images.build` and docker-compose 1.29's
//! `build:` speak), run by `berth_build::build`.
//!
//! ```text
//! query::parse       the query, resolved or refused by name, before the body is read
//! ContextDir         the body (a tar, maybe compressed) extracted safely under the root
//! read_dockerfile    the Dockerfile, read inside the context
//! BuildStream        berth_build::Progress as moby's JSON message stream
//! ```
//!
//! `X-Registry-Config` (the client's credentials, one set per registry)
//! is what the base images are pulled with; a registry it does not name
//! is pulled from anonymously, never with the server's own credentials.
//!
//! A client that disconnects mid-build: the stream notices
//! ([`BuildStream::cancelled`]), stops writing and tells the builder
//! (`Progress::cancelled`), which kills the RUN it waits for and starts
//! no further step.

pub mod context;
pub mod query;
pub mod stream;

use std::io::BufReader;

use crate::error::ApiError;
use crate::http::Exchange;
use crate::router::Handled;
use crate::server::{Outcome, Server};

pub use context::{read_dockerfile, remove_stale, ContextDir, ContextError};
pub use query::{BuildQuery, QueryError};
pub use stream::BuildStream;

/// `POST /build`.
/// `POST /build/prune`: berth's build cache emptied (`all`, `keep-storage`
/// and `filters` are BuildKit's cache policy; refused when given).
pub fn prune(server: &Server, exchange: &mut Exchange<'_>) -> Handled {
    for (name, value) in &exchange.request.query {
        let default = match name.as_str() {
            "all" => matches!(value.as_str(), "" | "0" | "false" | "False"),
            "keep-storage" => matches!(value.as_str(), "" | "0"),
            "filters" => matches!(value.as_str(), "" | "{}"),
            _ => true,
        };
        if !default {
            return Err(ApiError::new(
                501,
                format!(
                    "berth's build cache prune takes no {name}={value:?}: it empties the cache"
                ),
            ));
        }
    }
    let engine = server.engine()?;
    let (removed, bytes) = berth_build::prune_cache(&engine.config().root)
        .map_err(|error| ApiError::internal(format!("failed to prune the build cache: {error}")))?;
    crate::router::reply(crate::http::Response::json(
        200,
        &serde_json::json!({ "CachesDeleted": removed, "SpaceReclaimed": bytes }),
    ))
}

pub fn build(server: &Server, exchange: &mut Exchange<'_>) -> Handled {
    let build = query::parse(&exchange.request.query, exchange.version)?;
    let registry_credentials = super::registry_auth::config_header(exchange)?;
    let mut engine = server.engine()?;
    remove_stale(engine.root());
    let directory = ContextDir::create(engine.root())?;
    let mut body = exchange.body();
    let extracted = directory.extract(BufReader::with_capacity(1 << 20, &mut body));
    // Dropping the reader reads what the extraction left (tar padding,
    // the last chunk), so the connection can take the next request.
    drop(body);
    if let Err(error) = extracted {
        let error = ApiError::from(error);
        if exchange.body_read() {
            return Err(error);
        }
        // The rest of the body cannot be told from a next request:
        // answer, then close the connection.
        let mut stream = exchange.connection.stream();
        let _ = crate::http::write_response(&mut stream, &error.response(), false, false);
        return Ok(Outcome::Streamed { keep_alive: false });
    }
    let dockerfile = read_dockerfile(directory.path(), &build.dockerfile)?;
    let mut request = build.request(directory.path().to_owned(), dockerfile);
    request.registry_credentials = registry_credentials;
    tracing::debug!(context = %directory.path().display(), tags = ?request.tags, "building");

    let stream = exchange
        .connection
        .stream()
        .try_clone()
        .map_err(|error| ApiError::internal(error.to_string()))?;
    let mut progress = BuildStream::new(&stream, build.quiet, exchange.version >= (1, 30))
        .with_gone_check(|| crate::server::client_gone(&stream))
        .keeping_containers(request.keep_containers == berth_build::KeepContainers::All);
    let result = berth_build::build(&mut engine, &request, &mut progress);
    if progress.cancelled() {
        tracing::info!("the client of a build went away");
    }
    let outcome = match result {
        Ok(outcome) => Ok(progress.succeed(&outcome)),
        Err(error) => match progress.fail(&error) {
            Some(outcome) => Ok(outcome),
            None => Err(stream::api_error(&error)),
        },
    };
    drop(directory);
    outcome
}
