//! `-c/--change` lines of `import` and `commit`: the Dockerfile
//! instructions that only touch the image config.

use std::collections::BTreeMap;

use berth_types::container::HealthConfig;
use berth_types::image::ContainerConfig;
use serde_json::Value;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ChangeError {
    /// Docker's wording for an instruction `import -c` does not take.
    #[error("{0} is not a valid change command")]
    NotAllowed(String),
    #[error("{instruction} requires {what}")]
    Missing {
        instruction: &'static str,
        what: &'static str,
    },
    #[error("{instruction}: invalid argument {argument:?}")]
    Invalid {
        instruction: &'static str,
        argument: String,
    },
    #[error("unterminated quote in {0:?}")]
    Quote(String),
    /// The Dockerfile parser's own words for a bad `HEALTHCHECK` (buildkit
    /// `instructions/parse.go`, its flag parser `bflag.go`, Go's durations).
    #[error("{0}")]
    Healthcheck(String),
}

/// One parsed change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    Cmd(Vec<String>),
    Entrypoint(Vec<String>),
    Env(Vec<(String, String)>),
    Expose(Vec<String>),
    Label(Vec<(String, String)>),
    User(String),
    Volume(Vec<String>),
    Workdir(String),
    StopSignal(String),
    /// `HEALTHCHECK [--interval=…] CMD …` or `HEALTHCHECK NONE`.
    Healthcheck(HealthConfig),
}

pub fn parse_change(line: &str) -> Result<Change, ChangeError> {
    let line = line.trim();
    let (instruction, rest) = line
        .split_once(char::is_whitespace)
        .map(|(instruction, rest)| (instruction, rest.trim()))
        .unwrap_or((line, ""));
    match instruction.to_ascii_uppercase().as_str() {
        "CMD" => Ok(Change::Cmd(command_form(rest))),
        "ENTRYPOINT" => Ok(Change::Entrypoint(command_form(rest))),
        "ENV" => Ok(Change::Env(key_values("ENV", rest, true)?)),
        "LABEL" => Ok(Change::Label(key_values("LABEL", rest, false)?)),
        "EXPOSE" => expose(rest),
        "USER" => single("USER", rest).map(Change::User),
        "WORKDIR" => single("WORKDIR", rest).map(Change::Workdir),
        "STOPSIGNAL" => single("STOPSIGNAL", rest).map(Change::StopSignal),
        "HEALTHCHECK" => healthcheck(rest).map(Change::Healthcheck),
        "VOLUME" => {
            let volumes = json_array(rest).unwrap_or(words(rest)?);
            if volumes.is_empty() {
                return Err(ChangeError::Missing {
                    instruction: "VOLUME",
                    what: "at least one argument",
                });
            }
            Ok(Change::Volume(volumes))
        }
        _ => Err(ChangeError::NotAllowed(instruction.to_ascii_uppercase())),
    }
}

impl Change {
    pub fn apply(&self, config: &mut ContainerConfig) {
        match self {
            Change::Cmd(command) => config.cmd = Some(command.clone()),
            Change::Entrypoint(entrypoint) => config.entrypoint = Some(entrypoint.clone()),
            Change::Env(pairs) => {
                let env = config.env.get_or_insert_with(Vec::new);
                for (key, value) in pairs {
                    let entry = format!("{key}={value}");
                    match env
                        .iter_mut()
                        .find(|existing| existing.split('=').next() == Some(key.as_str()))
                    {
                        Some(existing) => *existing = entry,
                        None => env.push(entry),
                    }
                }
            }
            Change::Expose(ports) => {
                let exposed = config.exposed_ports.get_or_insert_with(BTreeMap::new);
                for port in ports {
                    exposed.insert(port.clone(), Value::Object(Default::default()));
                }
            }
            Change::Label(pairs) => {
                let labels = config.labels.get_or_insert_with(BTreeMap::new);
                labels.extend(pairs.iter().cloned());
            }
            Change::User(user) => config.user = Some(user.clone()),
            Change::Volume(volumes) => {
                let map = config.volumes.get_or_insert_with(BTreeMap::new);
                for volume in volumes {
                    map.insert(volume.clone(), Value::Object(Default::default()));
                }
            }
            Change::Workdir(directory) => config.working_dir = Some(directory.clone()),
            Change::StopSignal(signal) => config.stop_signal = Some(signal.clone()),
            Change::Healthcheck(health) => {
                // As moby's commit merges the new config with the container's: the
                // fields the line leaves unset keep the check that was there.
                let before: HealthConfig = config
                    .extra
                    .get("Healthcheck")
                    .and_then(|value| serde_json::from_value(value.clone()).ok())
                    .unwrap_or_default();
                let pick = |mine: i64, theirs: i64| if mine == 0 { theirs } else { mine };
                let merged = HealthConfig {
                    test: health.test.clone(),
                    interval: pick(health.interval, before.interval),
                    timeout: pick(health.timeout, before.timeout),
                    start_period: pick(health.start_period, before.start_period),
                    start_interval: pick(health.start_interval, before.start_interval),
                    retries: pick(health.retries, before.retries),
                };
                if let Ok(value) = serde_json::to_value(merged) {
                    config.extra.insert("Healthcheck".to_owned(), value);
                }
            }
        }
    }
}

/// `HEALTHCHECK`'s arguments: `--name=value` options, then `NONE` or `CMD`
/// with an exec (JSON) or shell form command.
fn healthcheck(rest: &str) -> Result<HealthConfig, ChangeError> {
    let problem = |message: String| Err(ChangeError::Healthcheck(message));
    let mut rest = rest.trim_start();
    let mut health = HealthConfig::default();
    while let Some(option) = rest.strip_prefix("--") {
        let end = option.find(char::is_whitespace).unwrap_or(option.len());
        let (flag, after) = option.split_at(end);
        rest = after.trim_start();
        let Some((name, value)) = flag.split_once('=') else {
            return problem(match flag {
                "interval" | "timeout" | "start-period" | "start-interval" | "retries" => {
                    format!("Missing a value on flag: --{flag}")
                }
                _ => format!("Unknown flag: {flag}"),
            });
        };
        let duration = |name: &str| -> Result<i64, ChangeError> {
            let nanos = berth_types::duration::parse_go_duration(value)
                .map_err(|error| ChangeError::Healthcheck(error.to_string()))?;
            if nanos != 0
                && nanos < berth_types::container::config::HEALTHCHECK_MINIMUM_DURATION_NANOS
            {
                return Err(ChangeError::Healthcheck(format!(
                    "Interval {name:?} cannot be less than 1ms"
                )));
            }
            Ok(nanos)
        };
        match name {
            "interval" => health.interval = duration(name)?,
            "timeout" => health.timeout = duration(name)?,
            "start-period" => health.start_period = duration(name)?,
            "start-interval" => health.start_interval = duration(name)?,
            "retries" => {
                let retries: i64 = value.parse().map_err(|_| {
                    ChangeError::Healthcheck(format!(
                        "strconv.ParseInt: parsing {value:?}: invalid syntax"
                    ))
                })?;
                if retries < 1 {
                    return problem(format!("--retries must be at least 1 (not {retries})"));
                }
                health.retries = retries;
            }
            _ => return problem(format!("Unknown flag: {name}")),
        }
    }
    if rest.is_empty() {
        return Err(ChangeError::Missing {
            instruction: "HEALTHCHECK",
            what: "at least one argument",
        });
    }
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let (kind, command) = rest.split_at(end);
    let command = command.trim();
    match kind.to_ascii_uppercase().as_str() {
        "NONE" => {
            if !command.is_empty() {
                return problem("HEALTHCHECK NONE takes no arguments".to_owned());
            }
            // Options are parsed (and checked) but a NONE check has none.
            Ok(HealthConfig {
                test: vec!["NONE".to_owned()],
                ..HealthConfig::default()
            })
        }
        "CMD" => {
            let test = match json_array(command) {
                Some(arguments) => std::iter::once("CMD".to_owned()).chain(arguments).collect(),
                None if command.is_empty() => Vec::new(),
                None => vec!["CMD-SHELL".to_owned(), command.to_owned()],
            };
            if test.len() < 2 {
                return problem("Missing command after HEALTHCHECK CMD".to_owned());
            }
            health.test = test;
            Ok(health)
        }
        other => problem(format!("Unknown type {other:?} in HEALTHCHECK (try CMD)")),
    }
}

/// Exec form (a JSON array) or shell form (wrapped in `/bin/sh -c`).
fn command_form(rest: &str) -> Vec<String> {
    json_array(rest).unwrap_or_else(|| vec!["/bin/sh".into(), "-c".into(), rest.into()])
}

fn json_array(text: &str) -> Option<Vec<String>> {
    if !text.starts_with('[') {
        return None;
    }
    serde_json::from_str(text).ok()
}

fn single(instruction: &'static str, rest: &str) -> Result<String, ChangeError> {
    if rest.is_empty() {
        return Err(ChangeError::Missing {
            instruction,
            what: "exactly one argument",
        });
    }
    Ok(rest.to_owned())
}

fn expose(rest: &str) -> Result<Change, ChangeError> {
    let ports = words(rest)?
        .into_iter()
        .map(|port| {
            let (number, protocol) = port.split_once('/').unwrap_or((&port, "tcp"));
            let valid_number =
                !number.is_empty() && number.split('-').all(|part| part.parse::<u16>().is_ok());
            let protocol = protocol.to_ascii_lowercase();
            if !valid_number || !matches!(protocol.as_str(), "tcp" | "udp" | "sctp") {
                return Err(ChangeError::Invalid {
                    instruction: "EXPOSE",
                    argument: port.clone(),
                });
            }
            Ok(format!("{number}/{protocol}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if ports.is_empty() {
        return Err(ChangeError::Missing {
            instruction: "EXPOSE",
            what: "at least one argument",
        });
    }
    Ok(Change::Expose(ports))
}

/// `k=v k2="v 2"`; with `legacy_space_form`, also `ENV key value words`.
fn key_values(
    instruction: &'static str,
    rest: &str,
    legacy_space_form: bool,
) -> Result<Vec<(String, String)>, ChangeError> {
    let tokens = words(rest)?;
    if tokens.is_empty() {
        return Err(ChangeError::Missing {
            instruction,
            what: "at least one argument",
        });
    }
    if legacy_space_form && !tokens[0].contains('=') {
        let (key, value) = rest
            .split_once(char::is_whitespace)
            .map(|(key, value)| (key, value.trim()))
            .unwrap_or((rest, ""));
        return Ok(vec![(key.to_owned(), value.to_owned())]);
    }
    tokens
        .into_iter()
        .map(|token| match token.split_once('=') {
            Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
            _ => Err(ChangeError::Invalid {
                instruction,
                argument: token,
            }),
        })
        .collect()
}

/// Splits on whitespace, honouring double and single quotes and backslash
/// escapes as the Dockerfile parser does for these instructions.
fn words(text: &str) -> Result<Vec<String>, ChangeError> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut characters = text.chars();
    while let Some(character) = characters.next() {
        match (quote, character) {
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            (None, '"' | '\'') => {
                quote = Some(character);
                in_word = true;
            }
            (Some(open), c) if c == open => quote = None,
            (Some('\''), c) => current.push(c),
            (_, '\\') => {
                if let Some(next) = characters.next() {
                    current.push(next);
                }
                in_word = true;
            }
            (_, c) => {
                current.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err(ChangeError::Quote(text.to_owned()));
    }
    if in_word {
        words.push(current);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| item.to_string()).collect()
    }

    #[test]
    fn command_forms() {
        assert_eq!(
            parse_change(r#"CMD ["echo","hi"]"#).unwrap(),
            Change::Cmd(strings(&["echo", "hi"]))
        );
        assert_eq!(
            parse_change("cmd echo hi there").unwrap(),
            Change::Cmd(strings(&["/bin/sh", "-c", "echo hi there"]))
        );
        assert_eq!(
            parse_change(r#"ENTRYPOINT ["/bin/sh"]"#).unwrap(),
            Change::Entrypoint(strings(&["/bin/sh"]))
        );
    }

    #[test]
    fn env_and_labels() {
        assert_eq!(
            parse_change(r#"ENV A=1 B="two words""#).unwrap(),
            Change::Env(vec![
                ("A".into(), "1".into()),
                ("B".into(), "two words".into())
            ])
        );
        assert_eq!(
            parse_change("ENV KEY value with spaces").unwrap(),
            Change::Env(vec![("KEY".into(), "value with spaces".into())])
        );
        assert_eq!(
            parse_change(r#"LABEL com.example="a b" x=y"#).unwrap(),
            Change::Label(vec![
                ("com.example".into(), "a b".into()),
                ("x".into(), "y".into())
            ])
        );
        assert!(matches!(
            parse_change("LABEL novalue"),
            Err(ChangeError::Invalid { .. })
        ));
        assert!(matches!(
            parse_change(r#"ENV A="open"#),
            Err(ChangeError::Quote(_))
        ));
    }

    #[test]
    fn expose_normalises_protocols() {
        assert_eq!(
            parse_change("EXPOSE 80 53/UDP 8000-8001").unwrap(),
            Change::Expose(strings(&["80/tcp", "53/udp", "8000-8001/tcp"]))
        );
        assert!(parse_change("EXPOSE http").is_err());
        assert!(parse_change("EXPOSE").is_err());
    }

    #[test]
    fn others_and_rejections() {
        assert_eq!(
            parse_change("USER 1000:1000").unwrap(),
            Change::User("1000:1000".into())
        );
        assert_eq!(
            parse_change("WORKDIR /srv").unwrap(),
            Change::Workdir("/srv".into())
        );
        assert_eq!(
            parse_change("STOPSIGNAL SIGINT").unwrap(),
            Change::StopSignal("SIGINT".into())
        );
        assert_eq!(
            parse_change(r#"VOLUME ["/a","/b"]"#).unwrap(),
            Change::Volume(strings(&["/a", "/b"]))
        );
        assert_eq!(
            parse_change("RUN echo").unwrap_err().to_string(),
            "RUN is not a valid change command"
        );
        assert!(parse_change("USER").is_err());
    }

    #[test]
    fn healthchecks_parse_as_the_dockerfile_parser_does() {
        assert_eq!(
            parse_change(
                "HEALTHCHECK --interval=5s --retries=2 CMD wget -q -O- localhost || exit 1"
            )
            .unwrap(),
            Change::Healthcheck(HealthConfig {
                test: strings(&["CMD-SHELL", "wget -q -O- localhost || exit 1"]),
                interval: 5_000_000_000,
                retries: 2,
                ..HealthConfig::default()
            })
        );
        assert_eq!(
            parse_change(r#"HEALTHCHECK --timeout=500ms CMD ["true", "x"]"#).unwrap(),
            Change::Healthcheck(HealthConfig {
                test: strings(&["CMD", "true", "x"]),
                timeout: 500_000_000,
                ..HealthConfig::default()
            })
        );
        assert_eq!(
            parse_change("healthcheck none").unwrap(),
            Change::Healthcheck(HealthConfig {
                test: strings(&["NONE"]),
                ..HealthConfig::default()
            })
        );
        for (line, message) in [
            ("HEALTHCHECK", "HEALTHCHECK requires at least one argument"),
            ("HEALTHCHECK NONE x", "HEALTHCHECK NONE takes no arguments"),
            ("HEALTHCHECK CMD", "Missing command after HEALTHCHECK CMD"),
            (
                "HEALTHCHECK RUN x",
                r#"Unknown type "RUN" in HEALTHCHECK (try CMD)"#,
            ),
            (
                "HEALTHCHECK --retries=0 CMD x",
                "--retries must be at least 1 (not 0)",
            ),
            (
                "HEALTHCHECK --interval=5 CMD x",
                r#"time: missing unit in duration "5""#,
            ),
            (
                "HEALTHCHECK --interval=10us CMD x",
                r#"Interval "interval" cannot be less than 1ms"#,
            ),
            (
                "HEALTHCHECK --interval CMD x",
                "Missing a value on flag: --interval",
            ),
            ("HEALTHCHECK --every=1s CMD x", "Unknown flag: every"),
        ] {
            assert_eq!(
                parse_change(line).unwrap_err().to_string(),
                message,
                "{line}"
            );
        }
    }

    #[test]
    fn a_healthcheck_change_keeps_the_fields_it_leaves_unset() {
        let mut config = ContainerConfig::default();
        config.extra.insert(
            "Healthcheck".into(),
            serde_json::json!({"Test": ["CMD-SHELL", "old"], "Timeout": 3_000_000_000i64}),
        );
        parse_change("HEALTHCHECK --interval=2s CMD new")
            .unwrap()
            .apply(&mut config);
        assert_eq!(
            config.extra["Healthcheck"],
            serde_json::json!({"Test": ["CMD-SHELL", "new"], "Interval": 2_000_000_000i64, "Timeout": 3_000_000_000i64})
        );
    }

    #[test]
    fn apply_replaces_env_keys() {
        let mut config = ContainerConfig {
            env: Some(strings(&["PATH=/bin", "A=0"])),
            ..ContainerConfig::default()
        };
        parse_change("ENV A=1 C=3").unwrap().apply(&mut config);
        parse_change("EXPOSE 80").unwrap().apply(&mut config);
        assert_eq!(config.env.unwrap(), strings(&["PATH=/bin", "A=1", "C=3"]));
        assert!(config.exposed_ports.unwrap().contains_key("80/tcp"));
    }
}
