//! A container's log driver: resolved at create (with the defaults of berth's config file,
//! Docker's daemon.json keys `log-driver` and `log-opts`), opened by its monitor, found by
//! `logs`, shown by `inspect`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use berth_types::container::LogConfig;

use super::paths::ContainerPaths;
use super::record::ContainerRecord;
use crate::logs::{
    ContainerInfo, LogDriver, LogError, LogFormat, LogLocation, LogSettings, LogWriter,
};

/// The engine's default log configuration: `log-driver` and `log-opts` of berth's config
/// file (`BERTH_CONFIG`, else `/etc/berth/config.json`), json-file without options when the
/// file or the keys are absent.
pub fn default_log_config() -> Result<LogConfig, LogError> {
    let path = crate::networks::config_file();
    let text = match fs_err::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(json_file_default())
        }
        Err(source) => return Err(LogError::Read { path, source }),
    };
    parse_defaults(&path, &text)
}

fn json_file_default() -> LogConfig {
    LogConfig {
        r#type: "json-file".to_owned(),
        config: Some(BTreeMap::new()),
    }
}

fn parse_defaults(path: &Path, text: &str) -> Result<LogConfig, LogError> {
    #[derive(serde::Deserialize)]
    struct Defaults {
        #[serde(rename = "log-driver", default)]
        driver: Option<String>,
        #[serde(rename = "log-opts", default)]
        options: Option<BTreeMap<String, String>>,
    }
    let defaults: Defaults = serde_json::from_str(text).map_err(|source| LogError::Defaults {
        path: path.to_owned(),
        source,
    })?;
    Ok(LogConfig {
        r#type: defaults
            .driver
            .filter(|driver| !driver.is_empty())
            .unwrap_or_else(|| "json-file".to_owned()),
        config: Some(defaults.options.unwrap_or_default()),
    })
}

/// `HostConfig.LogConfig` as dockerd stores it (`mergeAndVerifyLogConfig`): an empty type is
/// the default driver, and the default's options fill in those the request leaves out when
/// the drivers are the same; then the whole is checked. Returns what `inspect` shows and
/// what the monitor does.
pub(crate) fn resolve_log_config(
    requested: &LogConfig,
    default: &LogConfig,
) -> Result<(LogConfig, LogSettings), LogError> {
    let mut merged = requested.clone();
    if merged.r#type.is_empty() {
        merged.r#type = default.r#type.clone();
    }
    let options = merged.config.get_or_insert_with(BTreeMap::new);
    if merged.r#type == default.r#type {
        for (key, value) in default.config.iter().flatten() {
            options.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
    let settings = LogSettings::resolve(&merged.r#type, options)?;
    Ok((merged, settings))
}

/// Where `record`'s log is kept: json-file's `<id>-json.log`, local's
/// `local-logs/container.log`; None for `none`.
pub(crate) fn log_file(paths: &ContainerPaths, record: &ContainerRecord) -> Option<PathBuf> {
    match record.run.log.driver {
        LogDriver::JsonFile => Some(paths.log(&record.id)),
        LogDriver::Local => Some(paths.local_log()),
        LogDriver::None => None,
    }
}

/// How `logs` reads `record`'s log; dockerd's refusal for a driver that keeps nothing.
pub fn log_location(
    paths: &ContainerPaths,
    record: &ContainerRecord,
) -> Result<LogLocation, LogError> {
    let path = log_file(paths, record).ok_or(LogError::NotReadable)?;
    Ok(LogLocation {
        path,
        format: match record.run.log.driver {
            LogDriver::Local => LogFormat::Local,
            _ => LogFormat::JsonLines,
        },
        max_files: record.run.log.max_files.max(1),
    })
}

/// Docker's `LogPath`: the json-file log once the container has started; empty for the
/// other drivers (dockerd keeps the local driver's file out of the API on purpose).
pub(crate) fn inspect_log_path(
    paths: &ContainerPaths,
    record: &ContainerRecord,
    started: bool,
) -> String {
    match record.run.log.driver {
        LogDriver::JsonFile if started => paths.log(&record.id).display().to_string(),
        _ => String::new(),
    }
}

/// The writer for `record`'s monitor; None for `none`, or (with a warning) when the file
/// cannot be opened: the container runs without its log rather than not at all.
pub(crate) fn open_log_writer(
    paths: &ContainerPaths,
    record: &ContainerRecord,
) -> Option<LogWriter> {
    let path = log_file(paths, record)?;
    let opened = (|| {
        let local = record.run.log.driver == LogDriver::Local;
        if let Some(directory) = path
            .parent()
            .filter(|directory| local && !directory.exists())
        {
            // dockerd's `local-logs` is 0700.
            fs_err::create_dir_all(directory)
                .and_then(|()| {
                    fs_err::set_permissions(
                        directory,
                        std::os::unix::fs::PermissionsExt::from_mode(0o700),
                    )
                })
                .map_err(|source| LogError::Open {
                    path: directory.to_owned(),
                    source,
                })?;
        }
        // Only a tag can name the host.
        let hostname = match &record.run.log.tag {
            Some(tag) if tag.contains("Hostname") => nix::unistd::gethostname()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default(),
            _ => String::new(),
        };
        let info = ContainerInfo {
            id: &record.id,
            name: &record.name,
            image_name: &record.image_name,
            image_id: &record.image_id,
            command: &record.run.args,
            hostname: &hostname,
        };
        let attributes = record
            .run
            .log
            .attributes(&info, &record.run.labels, &record.run.env);
        LogWriter::open_with(&path, &record.run.log, attributes.as_ref())
    })();
    opened
        .map_err(|error| tracing::warn!(error = %crate::ErrorChain(&error), "no container log"))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(driver: &str, options: &[(&str, &str)]) -> LogConfig {
        LogConfig {
            r#type: driver.to_owned(),
            config: Some(
                options
                    .iter()
                    .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
                    .collect(),
            ),
        }
    }

    #[test]
    fn the_default_fills_in_type_and_options_of_the_same_driver() {
        let default = config("json-file", &[("max-size", "10m"), ("max-file", "3")]);
        let (merged, settings) =
            resolve_log_config(&config("", &[("max-file", "5")]), &default).unwrap();
        assert_eq!(
            merged,
            config("json-file", &[("max-file", "5"), ("max-size", "10m")])
        );
        assert_eq!(
            (settings.max_size, settings.max_files),
            (Some(10_000_000), 5)
        );
        // Another driver takes none of the default's options.
        let (merged, settings) = resolve_log_config(&config("local", &[]), &default).unwrap();
        assert_eq!(merged, config("local", &[]));
        assert_eq!(settings.driver, LogDriver::Local);
        // The API may send no Config at all; inspect shows `{}` as dockerd does.
        let bare = LogConfig {
            r#type: String::new(),
            config: None,
        };
        let (merged, _) = resolve_log_config(&bare, &json_file_default()).unwrap();
        assert_eq!(merged, config("json-file", &[]));
    }

    #[test]
    fn defaults_come_from_daemon_json_keys() {
        let path = Path::new("/etc/berth/config.json");
        let parsed = parse_defaults(
            path,
            r#"{"bip": "10.1.2.1/24", "log-driver": "local", "log-opts": {"max-size": "1m"}}"#,
        )
        .unwrap();
        assert_eq!(parsed, config("local", &[("max-size", "1m")]));
        assert_eq!(parse_defaults(path, "{}").unwrap(), json_file_default());
        let error = parse_defaults(path, r#"{"log-opts": {"max-file": 3}}"#).unwrap_err();
        assert!(
            crate::ErrorChain(&error)
                .to_string()
                .starts_with("invalid log-driver or log-opts in \"/etc/berth/config.json\""),
            "{error}"
        );
        // A bad default is found when a container would use it.
        let bad = parse_defaults(path, r#"{"log-opts": {"max-size": "-1"}}"#).unwrap();
        let error = resolve_log_config(&config("", &[]), &bad).unwrap_err();
        assert_eq!(
            error.to_string(),
            "failed to initialize logging driver: invalid size: '-1'"
        );
    }
}
