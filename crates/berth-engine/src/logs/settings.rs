//! `--log-driver` and `--log-opt` (`HostConfig.LogConfig`) resolved into what the monitor's
//! writer and the readers need, with dockerd 20.10's defaults and its errors.
//!
//! dockerd checks the driver and the option names when the container is created and the
//! values when its logger starts; berth checks everything at create, so a bad value leaves
//! no container behind (the text is dockerd's start error, `failed to initialize logging
//! driver: …`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::go_parse::{atoi, from_human_size, parse_bool};
use super::tag::{ContainerInfo, TagError, TagTemplate};

/// The drivers berth writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LogDriver {
    /// Docker's default: one JSON object per line.
    #[default]
    JsonFile,
    /// Docker's `local`: length-framed protobuf records, rotated and compressed by default.
    Local,
    /// Nothing is kept; `logs` refuses.
    None,
}

impl LogDriver {
    pub fn name(self) -> &'static str {
        match self {
            Self::JsonFile => "json-file",
            Self::Local => "local",
            Self::None => "none",
        }
    }
}

/// The drivers Docker 20.10 has on Linux that send logs elsewhere; berth has no daemon that
/// could stay connected to their destinations.
const SHIPPING_DRIVERS: &[&str] = &[
    "awslogs",
    "fluentd",
    "gcplogs",
    "gelf",
    "journald",
    "logentries",
    "splunk",
    "syslog",
];

/// The `local` driver's defaults (moby `daemon/logger/local`): 20 MiB, 5 files, compressed.
const LOCAL_MAX_SIZE: u64 = 20 * 1024 * 1024;
const LOCAL_MAX_FILES: u32 = 5;

/// Options every driver takes (moby's built-in log options).
const COMMON_OPTIONS: &[&str] = &[
    "mode",
    "max-buffer-size",
    "cache-disabled",
    "cache-max-size",
    "cache-max-file",
    "cache-compress",
];
const JSON_FILE_OPTIONS: &[&str] = &[
    "max-file",
    "max-size",
    "compress",
    "labels",
    "labels-regex",
    "env",
    "env-regex",
    "tag",
];
const LOCAL_OPTIONS: &[&str] = &["max-file", "max-size", "compress"];

/// A log configuration berth refuses: Docker's words where Docker refuses it too.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogConfigError {
    /// moby's answer for a driver it does not have.
    #[error("error looking up logging plugin {0}: plugin \"{0}\" not found")]
    UnknownDriver(String),
    #[error("log driver \"{0}\" is not supported: berth has no daemon to send container output to {0}; use json-file, local or none")]
    ShippingDriver(String),
    #[error("unknown log opt '{0}' for json-file log driver")]
    UnknownJsonFileOption(String),
    #[error("unknown log opt '{0}' for log driver local")]
    UnknownLocalOption(String),
    /// moby's checks of the built-in options, already prefixed as dockerd prints them.
    #[error("{0}")]
    Common(String),
    /// A value dockerd's logger refuses when it starts.
    #[error("failed to initialize logging driver: {0}")]
    InvalidValue(String),
    /// A valid option berth does not implement.
    #[error("log opt '{option}' is not supported: {reason}")]
    Unsupported { option: String, reason: String },
}

/// What a container's log is: its driver and, for the file drivers, rotation and the
/// json-file extras. Stored with the container's run settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LogSettings {
    pub driver: LogDriver,
    /// Rotate before a record once the file holds at least this many bytes; None never.
    pub max_size: Option<u64>,
    /// Files kept, the one being written included (at least 1).
    pub max_files: u32,
    /// Rotated files are gzipped (`<log>.1.gz`).
    pub compress: bool,
    /// json-file: container labels and environment variables copied into each record's
    /// `attrs` (`labels=`, `env=`).
    pub labels: Vec<String>,
    pub env: Vec<String>,
    /// json-file: `tag=`, a template checked at create.
    pub tag: Option<String>,
}

impl Default for LogSettings {
    /// Docker's default: json-file, one file, never rotated.
    fn default() -> Self {
        Self {
            driver: LogDriver::JsonFile,
            max_size: None,
            max_files: 1,
            compress: false,
            labels: Vec::new(),
            env: Vec::new(),
            tag: None,
        }
    }
}

impl LogSettings {
    /// Resolves `driver` (empty for json-file) and its `options` as dockerd 20.10 does.
    pub fn resolve(
        driver: &str,
        options: &BTreeMap<String, String>,
    ) -> Result<Self, LogConfigError> {
        let driver = match driver {
            "" | "json-file" => LogDriver::JsonFile,
            "local" => LogDriver::Local,
            // moby validates nothing for `none` (the docker CLI refuses options with it).
            "none" => {
                return Ok(Self {
                    driver: LogDriver::None,
                    ..Self::default()
                })
            }
            shipping if SHIPPING_DRIVERS.contains(&shipping) => {
                return Err(LogConfigError::ShippingDriver(shipping.to_owned()))
            }
            other => return Err(LogConfigError::UnknownDriver(other.to_owned())),
        };
        let own = match driver {
            LogDriver::Local => LOCAL_OPTIONS,
            _ => JSON_FILE_OPTIONS,
        };
        if let Some(unknown) = options
            .keys()
            .find(|key| !own.contains(&key.as_str()) && !COMMON_OPTIONS.contains(&key.as_str()))
        {
            return Err(match driver {
                LogDriver::Local => LogConfigError::UnknownLocalOption(unknown.clone()),
                _ => LogConfigError::UnknownJsonFileOption(unknown.clone()),
            });
        }
        check_common(options)?;
        let settings = match driver {
            LogDriver::Local => local(options)?,
            _ => json_file(options)?,
        };
        refuse_unimplemented(options)?;
        Ok(settings)
    }

    /// The `attrs` each json-file record carries, as dockerd's `Info.ExtraAttributes` and
    /// tag make them: the named labels, then the named variables, then `tag`. None without.
    pub fn attributes(
        &self,
        info: &ContainerInfo<'_>,
        labels: &BTreeMap<String, String>,
        env: &[String],
    ) -> Option<BTreeMap<String, String>> {
        if self.driver != LogDriver::JsonFile {
            return None;
        }
        let mut attributes = BTreeMap::new();
        for name in &self.labels {
            if let Some(value) = labels.get(name) {
                attributes.insert(name.clone(), value.clone());
            }
        }
        let variables: BTreeMap<&str, &str> = env
            .iter()
            .filter_map(|entry| entry.split_once('='))
            .collect();
        for name in &self.env {
            if let Some(value) = variables.get(name.as_str()) {
                attributes.insert(name.clone(), (*value).to_owned());
            }
        }
        if let Some(tag) = self.tag.as_deref() {
            // Checked at create; a template that no longer parses is left out.
            if let Ok(template) = TagTemplate::parse(tag) {
                attributes.insert("tag".to_owned(), template.render(info));
            }
        }
        (!attributes.is_empty()).then_some(attributes)
    }
}

/// moby's checks of `mode` and `max-buffer-size`, which every driver takes.
fn check_common(options: &BTreeMap<String, String>) -> Result<(), LogConfigError> {
    let mode = options.get("mode").map(String::as_str);
    if let Some(mode) = mode {
        if !matches!(mode, "blocking" | "non-blocking") {
            return Err(LogConfigError::Common(format!(
                "logger: logging mode not supported: {mode}"
            )));
        }
    }
    if let Some(size) = options.get("max-buffer-size") {
        if mode != Some("non-blocking") {
            return Err(LogConfigError::Common(
                "logger: max-buffer-size option is only supported with 'mode=non-blocking'"
                    .to_owned(),
            ));
        }
        // RAMInBytes; only its syntax matters here, non-blocking mode is refused below.
        from_human_size(size).map_err(|error| {
            LogConfigError::Common(format!("error parsing option max-buffer-size: {error}"))
        })?;
    }
    if let Some(disabled) = options.get("cache-disabled") {
        parse_bool(disabled).map_err(|_| {
            LogConfigError::Common(format!(
                "invalid value for option cache-disabled: {disabled}"
            ))
        })?;
    }
    Ok(())
}

/// Options Docker has and berth does not do, refused by name.
fn refuse_unimplemented(options: &BTreeMap<String, String>) -> Result<(), LogConfigError> {
    let refuse = |option: &str, reason: &str| {
        Err(LogConfigError::Unsupported {
            option: option.to_owned(),
            reason: reason.to_owned(),
        })
    };
    if options.get("mode").map(String::as_str) == Some("non-blocking") {
        return refuse(
            "mode",
            "berth writes logs in blocking mode only (the container waits while its output is written)",
        );
    }
    for option in ["labels-regex", "env-regex"] {
        if options.contains_key(option) {
            return refuse(
                option,
                "berth has no Go regular expressions; name the labels or variables with 'labels' or 'env'",
            );
        }
    }
    if let Some(option) = options.keys().find(|key| key.starts_with("cache-")) {
        return refuse(
            option,
            "Docker's dual-logging cache serves drivers that cannot be read, and berth has none of those",
        );
    }
    Ok(())
}

/// moby `jsonfilelog.New`.
fn json_file(options: &BTreeMap<String, String>) -> Result<LogSettings, LogConfigError> {
    let invalid = LogConfigError::InvalidValue;
    let mut settings = LogSettings::default();
    if let Some(size) = options.get("max-size") {
        let bytes = from_human_size(size).map_err(invalid)?;
        if bytes <= 0 {
            return Err(invalid("max-size must be a positive number".to_owned()));
        }
        settings.max_size = Some(bytes.unsigned_abs());
    }
    if let Some(files) = options.get("max-file") {
        let count = atoi(files).map_err(invalid)?;
        if count < 1 {
            return Err(invalid("max-file cannot be less than 1".to_owned()));
        }
        settings.max_files = u32::try_from(count).unwrap_or(u32::MAX);
    }
    if let Some(compress) = options.get("compress") {
        settings.compress = parse_bool(compress).map_err(invalid)?;
        if settings.compress && (settings.max_files == 1 || settings.max_size.is_none()) {
            return Err(invalid(
                "compress cannot be true when max-file is less than 2 or max-size is not set"
                    .to_owned(),
            ));
        }
    }
    let names = |key: &str| -> Vec<String> {
        options
            .get(key)
            .filter(|list| !list.is_empty())
            .map(|list| list.split(',').map(str::to_owned).collect())
            .unwrap_or_default()
    };
    settings.labels = names("labels");
    settings.env = names("env");
    if let Some(tag) = options.get("tag").filter(|tag| !tag.is_empty()) {
        TagTemplate::parse(tag).map_err(|error| match error {
            TagError::Template(message) => invalid(message),
            TagError::Unsupported(reason) => LogConfigError::Unsupported {
                option: "tag".to_owned(),
                reason,
            },
        })?;
        settings.tag = Some(tag.clone());
    }
    Ok(settings)
}

/// moby `local.New` and its `validateConfig`.
fn local(options: &BTreeMap<String, String>) -> Result<LogSettings, LogConfigError> {
    let invalid = LogConfigError::InvalidValue;
    let mut max_size = i64::try_from(LOCAL_MAX_SIZE).unwrap_or(i64::MAX);
    let mut max_files = i64::from(LOCAL_MAX_FILES);
    let mut compress = true;
    if let Some(size) = options.get("max-size") {
        max_size = from_human_size(size)
            .map_err(|error| invalid(format!("invalid value for max-size: {size}: {error}")))?;
    }
    if let Some(files) = options.get("max-file") {
        max_files = atoi(files)
            .map_err(|error| invalid(format!("invalid value for max-file: {files}: {error}")))?;
    }
    if let Some(value) = options.get("compress") {
        compress = parse_bool(value)
            .map_err(|error| invalid(format!("error reading compress log option: {error}")))?;
    }
    if max_size < 0 {
        return Err(invalid("max size should be a positive number".to_owned()));
    }
    if max_files < 0 {
        return Err(invalid("max file count cannot be less than 0".to_owned()));
    }
    if compress && max_files <= 1 {
        return Err(invalid(
            "compression cannot be enabled when max file count is 1".to_owned(),
        ));
    }
    Ok(LogSettings {
        driver: LogDriver::Local,
        max_size: Some(max_size.unsigned_abs()),
        // dockerd treats 0 as 1: only the file being written is kept and read.
        max_files: u32::try_from(max_files.max(1)).unwrap_or(u32::MAX),
        compress,
        ..LogSettings::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(driver: &str, options: &[(&str, &str)]) -> Result<LogSettings, String> {
        let options = options
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect();
        LogSettings::resolve(driver, &options).map_err(|error| error.to_string())
    }

    #[test]
    fn json_file_options_resolve_to_rotation() {
        let settings = resolve("", &[("max-size", "1k"), ("max-file", "3")]).unwrap();
        assert_eq!(settings.driver, LogDriver::JsonFile);
        assert_eq!(settings.max_size, Some(1000));
        assert_eq!(settings.max_files, 3);
        assert!(!settings.compress);
        let compressed = resolve(
            "json-file",
            &[("max-size", "10m"), ("max-file", "2"), ("compress", "true")],
        )
        .unwrap();
        assert_eq!(
            (compressed.max_size, compressed.compress),
            (Some(10_000_000), true)
        );
        // dockerd takes max-file without max-size and never rotates (docker-py checks it).
        let unrotated = resolve("", &[("max-file", "100")]).unwrap();
        assert_eq!((unrotated.max_size, unrotated.max_files), (None, 100));
        assert_eq!(resolve("", &[]).unwrap(), LogSettings::default());
        let extras = resolve("", &[("labels", "a,b"), ("env", ""), ("tag", "{{.Name}}")]).unwrap();
        assert_eq!(extras.labels, ["a", "b"]);
        assert!(extras.env.is_empty());
        assert_eq!(extras.tag.as_deref(), Some("{{.Name}}"));
        assert!(resolve("", &[("mode", "blocking")]).is_ok());
    }

    #[test]
    fn bad_values_get_dockerds_words() {
        // Each message is what Docker 20.10 answered for the same options.
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
        let cases: &[Case<'_>] = &[
            ("", &[("x", "1")], "unknown log opt 'x' for json-file log driver"),
            ("", &[("cache-foo", "1")], "unknown log opt 'cache-foo' for json-file log driver"),
            ("local", &[("x", "1")], "unknown log opt 'x' for log driver local"),
            ("local", &[("labels", "a")], "unknown log opt 'labels' for log driver local"),
            ("foo", &[], "error looking up logging plugin foo: plugin \"foo\" not found"),
            ("Json-File", &[], "error looking up logging plugin Json-File: plugin \"Json-File\" not found"),
            ("etwlogs", &[], "error looking up logging plugin etwlogs: plugin \"etwlogs\" not found"),
            ("", &[("max-size", "-1")], "failed to initialize logging driver: invalid size: '-1'"),
            ("", &[("max-size", "")], "failed to initialize logging driver: invalid size: ''"),
            ("", &[("max-size", "1x")], "failed to initialize logging driver: invalid size: '1x'"),
            ("", &[("max-size", "0")], "failed to initialize logging driver: max-size must be a positive number"),
            ("", &[("max-size", "1k"), ("max-file", "0")], "failed to initialize logging driver: max-file cannot be less than 1"),
            ("", &[("max-size", "1k"), ("max-file", "a")], "failed to initialize logging driver: strconv.Atoi: parsing \"a\": invalid syntax"),
            ("", &[("compress", "true")], "failed to initialize logging driver: compress cannot be true when max-file is less than 2 or max-size is not set"),
            ("", &[("max-size", "1k"), ("compress", "maybe")], "failed to initialize logging driver: strconv.ParseBool: parsing \"maybe\": invalid syntax"),
            ("", &[("tag", "{{.Nope}}")], "failed to initialize logging driver: template: log-tag:1:2: executing \"log-tag\" at <.Nope>: can't evaluate field Nope in type *logger.Info"),
            ("", &[("tag", "{{")], "failed to initialize logging driver: template: log-tag:1: unclosed action"),
            ("", &[("mode", "bad")], "logger: logging mode not supported: bad"),
            ("", &[("max-buffer-size", "4m")], "logger: max-buffer-size option is only supported with 'mode=non-blocking'"),
            ("", &[("mode", "non-blocking"), ("max-buffer-size", "x")], "error parsing option max-buffer-size: invalid size: 'x'"),
            ("", &[("cache-disabled", "x")], "invalid value for option cache-disabled: x"),
            ("local", &[("max-size", "-1")], "failed to initialize logging driver: invalid value for max-size: -1: invalid size: '-1'"),
            ("local", &[("max-file", "a")], "failed to initialize logging driver: invalid value for max-file: a: strconv.Atoi: parsing \"a\": invalid syntax"),
            ("local", &[("max-file", "1")], "failed to initialize logging driver: compression cannot be enabled when max file count is 1"),
            ("local", &[("max-file", "0")], "failed to initialize logging driver: compression cannot be enabled when max file count is 1"),
            ("local", &[("max-file", "-1")], "failed to initialize logging driver: max file count cannot be less than 0"),
            ("local", &[("compress", "x")], "failed to initialize logging driver: error reading compress log option: strconv.ParseBool: parsing \"x\": invalid syntax"),
        ];
        for (driver, options, wanted) in cases {
            assert_eq!(
                resolve(driver, options).unwrap_err(),
                *wanted,
                "{driver} {options:?}"
            );
        }
    }

    #[test]
    fn what_berth_does_not_do_is_refused_by_name() {
        for driver in SHIPPING_DRIVERS {
            let error = resolve(driver, &[]).unwrap_err();
            assert!(
                error.starts_with(&format!(
                    "log driver \"{driver}\" is not supported: berth has no daemon"
                )),
                "{error}"
            );
        }
        for (option, value) in [
            ("labels-regex", "^a"),
            ("env-regex", "^E"),
            ("cache-disabled", "true"),
            ("cache-max-size", "1m"),
            ("mode", "non-blocking"),
            ("tag", "{{upper .Name}}"),
        ] {
            let error = resolve("", &[(option, value)]).unwrap_err();
            assert!(
                error.starts_with(&format!("log opt '{option}' is not supported: ")),
                "{option}: {error}"
            );
        }
    }

    #[test]
    fn local_has_its_own_defaults() {
        let settings = resolve("local", &[]).unwrap();
        assert_eq!(
            (settings.max_size, settings.max_files, settings.compress),
            (Some(20 * 1024 * 1024), 5, true)
        );
        let small = resolve(
            "local",
            &[("max-size", "0"), ("max-file", "0"), ("compress", "false")],
        )
        .unwrap();
        assert_eq!(
            (small.max_size, small.max_files, small.compress),
            (Some(0), 1, false)
        );
        // `none` takes anything through the API, as dockerd does.
        assert_eq!(
            resolve("none", &[("x", "1")]).unwrap().driver,
            LogDriver::None
        );
    }

    #[test]
    fn attributes_are_labels_then_env_then_tag() {
        let settings = resolve(
            "",
            &[("labels", "a,b,zz"), ("env", "E1,NOPE,a"), ("tag", "plain")],
        )
        .unwrap();
        let labels = BTreeMap::from([
            ("a".to_owned(), "1".to_owned()),
            ("b".to_owned(), "x&y".to_owned()),
        ]);
        let env = [
            "E1=v1".to_owned(),
            "a=from-env".to_owned(),
            "NOVALUE".to_owned(),
        ];
        let attributes = settings
            .attributes(&ContainerInfo::default(), &labels, &env)
            .unwrap();
        let pairs: Vec<(&str, &str)> = attributes
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("E1", "v1"),
                ("a", "from-env"),
                ("b", "x&y"),
                ("tag", "plain")
            ]
        );
        assert!(LogSettings::default()
            .attributes(&ContainerInfo::default(), &labels, &env)
            .is_none());
    }
}
