//! `POST /build`'s query (moby `newImageBuildOptions`) resolved into what
//! berth's builder takes, before a byte of the context is read.
//!
//! Every parameter the classic builder knows is either mapped onto
//! [`BuildRequest`] or, when set to anything but its default, refused by
//! name: berth never accepts a setting and ignores it. The defaults are
//! what the clients send when the user asked for nothing (docker CLI 20.10
//! sends `cpushares=0`, `memory=0`, `networkmode=default`, `ulimits=null`,
//! `buildargs={}`, `cachefrom=[]`, `version=1`, … on every build).
//!
//! `rm` and `forcerm` are the classic builder's: `forcerm=1` removes every
//! RUN step's container, `rm=1` (the default) keeps a failed step's, `rm=0`
//! (docker-py's default) keeps them all.

use std::collections::BTreeMap;
use std::path::PathBuf;

use berth_build::{BuildRequest, DockerfileSource, KeepContainers};
use berth_types::Reference;

use crate::error::ApiError;

/// The classic builder's default Dockerfile name.
pub const DEFAULT_DOCKERFILE: &str = "Dockerfile";

/// A build as the query asks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildQuery {
    /// `dockerfile`: a path inside the context (`Dockerfile` when empty).
    pub dockerfile: String,
    /// `t`, normalised with Docker's default tag and without duplicates,
    /// in the familiar form that "Successfully tagged" prints.
    pub tags: Vec<String>,
    /// `q`: only the image id is streamed.
    pub quiet: bool,
    pub no_cache: bool,
    pub pull: bool,
    pub build_args: BTreeMap<String, Option<String>>,
    pub labels: BTreeMap<String, String>,
    pub target: Option<String>,
    /// `networkmode`; `default` (or empty) is None.
    pub network: Option<String>,
    pub platform: Option<String>,
    /// `extrahosts` (`host:ip`) for the RUN steps.
    pub extra_hosts: Vec<String>,
    /// `shmsize` in bytes; None for 0 (the default).
    pub shm_size: Option<i64>,
    /// `cachefrom`: the images whose steps alone may serve as cache.
    pub cache_from: Vec<String>,
    /// `rm` / `forcerm`.
    pub keep_containers: KeepContainers,
    /// `memory`, `memswap`, `cpushares`, `cpuperiod`, `cpuquota`,
    /// `cpusetcpus`, `cpusetmems`, `cgroupparent`, `ulimits`.
    pub run_resources: berth_types::container::resources::Resources,
}

impl BuildQuery {
    /// The builder's request for the context at `context`, with the
    /// Dockerfile already read from it (see `context::read_dockerfile`).
    pub fn request(&self, context: PathBuf, dockerfile: String) -> BuildRequest {
        let mut request = BuildRequest::new(context);
        request.dockerfile = DockerfileSource::Inline(dockerfile);
        request.tags = self.tags.clone();
        request.build_args = self.build_args.clone();
        request.target = self.target.clone();
        request.no_cache = self.no_cache;
        request.pull = self.pull;
        request.labels = self.labels.clone();
        request.network = self.network.clone();
        request.extra_hosts = self.extra_hosts.clone();
        request.shm_size = self.shm_size;
        request.cache_from = self.cache_from.clone();
        request.keep_containers = self.keep_containers;
        request.run_resources = self.run_resources.clone();
        request.platform = self.platform.clone();
        request
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// A parameter set to something berth's builder does not do.
    #[error("berth's builder does not support the build parameter {name}={value:?}: {reason}")]
    Unsupported {
        name: &'static str,
        value: String,
        reason: &'static str,
    },
    /// `remote=`: a git repository, a tarball or a Dockerfile by URL.
    #[error("berth does not build from a remote context (remote={0:?}): send the context as the request body")]
    Remote(String),
    /// `version=2`.
    #[error("berth does not implement BuildKit's session protocol (version=2): use the classic builder (version=1, DOCKER_BUILDKIT=0)")]
    BuildKit,
    #[error("invalid version {0:?}")]
    InvalidVersion(String),
    /// moby's words for `squash` on a daemon without experimental mode.
    #[error("squash is only supported with experimental mode")]
    Squash,
    /// moby's words for `securityopt` outside Windows.
    #[error("security options are not supported on linux")]
    SecurityOptions,
    #[error("unsupported isolation: {0:?}")]
    Isolation(String),
    /// A JSON parameter that does not parse (moby: "error reading build
    /// args: …", "error reading labels: …").
    #[error("error reading {what}: {message}")]
    Json { what: &'static str, message: String },
    #[error("invalid value {value:?} for {name}: expected an integer")]
    Integer { name: &'static str, value: String },
    #[error("invalid tag {tag:?}: {source}")]
    Tag {
        tag: String,
        #[source]
        source: berth_types::ReferenceError,
    },
    /// moby `sanitizeRepoAndTags`.
    #[error("build tag cannot contain a digest")]
    DigestTag,
    #[error("invalid platform: {0}")]
    Platform(#[source] berth_types::container::platform::PlatformError),
}

impl From<QueryError> for ApiError {
    fn from(error: QueryError) -> Self {
        let status = match error {
            QueryError::Unsupported { .. } | QueryError::Remote(_) | QueryError::BuildKit => 501,
            _ => 400,
        };
        // The whole chain once, as everywhere in the API.
        ApiError::new(status, berth_engine::ErrorChain(&error).to_string())
    }
}

/// Reads the query of `POST /build`; `version` is the API version the
/// client asked for (`platform` exists from 1.32, `outputs` from 1.40).
pub fn parse(query: &[(String, String)], version: (u32, u32)) -> Result<BuildQuery, QueryError> {
    let get = |name: &str| {
        query
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    };
    let all = |name: &str| -> Vec<&str> {
        query
            .iter()
            .filter(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
            .collect()
    };
    let text = |name: &str| get(name).unwrap_or_default().trim().to_owned();
    let boolean = |name: &str| get(name).is_some_and(bool_value);

    match get("version").unwrap_or_default() {
        "" | "1" => {}
        "2" => return Err(QueryError::BuildKit),
        other => return Err(QueryError::InvalidVersion(other.to_owned())),
    }
    let remote = text("remote");
    if !remote.is_empty() {
        return Err(QueryError::Remote(remote));
    }
    if query.iter().any(|(key, _)| key == "securityopt") {
        return Err(QueryError::SecurityOptions);
    }
    if boolean("squash") {
        return Err(QueryError::Squash);
    }
    match text("isolation").as_str() {
        "" | "default" => {}
        other => return Err(QueryError::Isolation(other.to_owned())),
    }
    for (name, reason) in [
        ("session", "sessions belong to BuildKit"),
        ("buildid", "builds cannot be cancelled by id"),
    ] {
        refuse_text(&all(name), name, reason)?;
    }
    let integer = |name: &'static str| -> Result<i64, QueryError> {
        match text(name).as_str() {
            "" => Ok(0),
            value => value.parse().map_err(|_| QueryError::Integer {
                name,
                value: value.to_owned(),
            }),
        }
    };
    let ulimits = match text("ulimits").as_str() {
        "" => None,
        value => {
            serde_json::from_str::<Option<Vec<berth_types::container::resources::Ulimit>>>(value)
                .map_err(|error| QueryError::Json {
                    what: "ulimit settings",
                    message: error.to_string(),
                })?
                .filter(|ulimits| !ulimits.is_empty())
        }
    };
    // The RUN steps' resources, as a container's.
    let run_resources = berth_types::container::resources::Resources {
        memory: integer("memory")?,
        memory_swap: integer("memswap")?,
        cpu_shares: integer("cpushares")?,
        cpu_period: integer("cpuperiod")?,
        cpu_quota: integer("cpuquota")?,
        cpuset_cpus: text("cpusetcpus"),
        cpuset_mems: text("cpusetmems"),
        cgroup_parent: text("cgroupparent"),
        ulimits,
        ..Default::default()
    };
    let cache_from: Vec<String> = match text("cachefrom").as_str() {
        "" => Vec::new(),
        value => serde_json::from_str::<Option<Vec<String>>>(value)
            .map_err(|error| QueryError::Json {
                what: "cache-from",
                message: error.to_string(),
            })?
            .unwrap_or_default(),
    };
    let shm_size = match text("shmsize").as_str() {
        "" => None,
        value => match value.parse::<i64>() {
            Ok(0) => None,
            Ok(size) if size > 0 => Some(size),
            _ => {
                return Err(QueryError::Integer {
                    name: "shmsize",
                    value: value.to_owned(),
                })
            }
        },
    };
    // `extrahosts` comes once per entry (docker-py) or comma-separated.
    let extra_hosts: Vec<String> = all("extrahosts")
        .iter()
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .filter(|host| !host.is_empty())
        .map(str::to_owned)
        .collect();
    if version >= (1, 40) {
        refuse_json_list(
            get("outputs"),
            "outputs",
            "outputs",
            "the classic builder only makes an image",
        )?;
    }

    let mut dockerfile = text("dockerfile");
    if dockerfile.is_empty() {
        dockerfile = DEFAULT_DOCKERFILE.to_owned();
    }
    let network = match text("networkmode").as_str() {
        "" | "default" => None,
        other => Some(other.to_owned()),
    };
    let platform = if version >= (1, 32) {
        match text("platform").as_str() {
            "" => None,
            other => {
                berth_types::container::platform::parse_platform(other)
                    .map_err(QueryError::Platform)?;
                Some(other.to_owned())
            }
        }
    } else {
        None
    };
    Ok(BuildQuery {
        dockerfile,
        tags: tags(&all("t"))?,
        quiet: boolean("q"),
        no_cache: boolean("nocache"),
        pull: boolean("pull"),
        build_args: json_map(get("buildargs"), "build args")?,
        labels: json_map(get("labels"), "labels")?,
        target: Some(text("target")).filter(|target| !target.is_empty()),
        network,
        platform,
        extra_hosts,
        shm_size,
        cache_from,
        run_resources,
        keep_containers: if boolean("forcerm") {
            KeepContainers::None
        } else if get("rm").is_none_or(bool_value) {
            KeepContainers::Failed
        } else {
            KeepContainers::All
        },
    })
}

/// Go's `httputils.BoolValue`: anything but empty, `0`, `no`, `false`,
/// `none` (any case) is true.
fn bool_value(value: &str) -> bool {
    !matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "" | "0" | "no" | "false" | "none"
    )
}

fn refuse_text(
    values: &[&str],
    name: &'static str,
    reason: &'static str,
) -> Result<(), QueryError> {
    match values.iter().find(|value| !value.trim().is_empty()) {
        Some(value) => Err(QueryError::Unsupported {
            name,
            value: (*value).to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

/// A JSON list parameter: `null` or `[]` is the default.
fn refuse_json_list(
    value: Option<&str>,
    name: &'static str,
    what: &'static str,
    reason: &'static str,
) -> Result<(), QueryError> {
    let value = value.unwrap_or_default().trim();
    if value.is_empty() {
        return Ok(());
    }
    let list: Option<Vec<serde_json::Value>> =
        serde_json::from_str(value).map_err(|error| QueryError::Json {
            what,
            message: error.to_string(),
        })?;
    if list.unwrap_or_default().is_empty() {
        return Ok(());
    }
    Err(QueryError::Unsupported {
        name,
        value: value.to_owned(),
        reason,
    })
}

/// A JSON object parameter (`buildargs` with null values allowed, `labels`).
fn json_map<V: serde::de::DeserializeOwned>(
    value: Option<&str>,
    what: &'static str,
) -> Result<BTreeMap<String, V>, QueryError> {
    let value = value.unwrap_or_default().trim();
    if value.is_empty() {
        return Ok(BTreeMap::new());
    }
    let map: Option<BTreeMap<String, V>> =
        serde_json::from_str(value).map_err(|error| QueryError::Json {
            what,
            message: error.to_string(),
        })?;
    Ok(map.unwrap_or_default())
}

/// moby `sanitizeRepoAndTags`: each tag normalised, `latest` added, a
/// digest refused, duplicates dropped.
fn tags(values: &[&str]) -> Result<Vec<String>, QueryError> {
    let mut tags = Vec::new();
    for value in values.iter().filter(|value| !value.is_empty()) {
        let reference = Reference::parse_normalized(value).map_err(|source| QueryError::Tag {
            tag: (*value).to_owned(),
            source,
        })?;
        if reference.digest().is_some() {
            return Err(QueryError::DigestTag);
        }
        let tag = reference.with_default_tag().familiar_string();
        if !tags.contains(&tag) {
            tags.push(tag);
        }
    }
    Ok(tags)
}

#[cfg(test)]
#[path = "query_tests.rs"]
mod tests;
