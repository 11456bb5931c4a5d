//! The steps that change only the image config (CMD, ENTRYPOINT, EXPOSE,
//! VOLUME, HEALTHCHECK, SHELL, ONBUILD, LABEL, …), on values already
//! expanded where the instruction expands.

use berth_types::duration::parse_go_duration;
use serde_json::{json, Map, Value};

use super::image::StepImage;
use crate::dockerfile::{Command, Flag};
use crate::BuildError;

/// A command as the config stores it: the exec form as written, the shell
/// form after the stage's `SHELL`.
pub fn command_args(image: &StepImage, command: &Command) -> Vec<String> {
    match command {
        Command::Exec(args) => args.clone(),
        Command::Shell(text) => {
            let mut args = image.shell();
            args.push(text.clone());
            args
        }
    }
}

pub fn set_cmd(image: &mut StepImage, command: &Command) {
    image.config.cmd = Some(command_args(image, command));
}

/// `ENTRYPOINT`: a CMD the base image set is dropped (it was meant for
/// the base's entrypoint); one set in this stage stays.
pub fn set_entrypoint(image: &mut StepImage, command: &Command, cmd_set_in_stage: bool) {
    image.config.entrypoint = Some(command_args(image, command));
    if !cmd_set_in_stage {
        image.config.cmd = None;
    }
}

/// `EXPOSE 80 53/udp 8000-8001`: `port/protocol` keys, ranges spelled out.
pub fn expose(image: &mut StepImage, ports: &[String]) -> Result<(), BuildError> {
    let exposed = image
        .config
        .exposed_ports
        .get_or_insert_with(Default::default);
    for port in ports {
        let (number, protocol) = match port.split_once('/') {
            Some((number, protocol)) => (number, protocol.to_ascii_lowercase()),
            None => (port.as_str(), "tcp".to_owned()),
        };
        if !["tcp", "udp", "sctp"].contains(&protocol.as_str()) {
            return Err(BuildError::Invalid(format!("invalid proto: {protocol}")));
        }
        let bad = || BuildError::Invalid(format!("invalid containerPort: {number}"));
        let (low, high) = match number.split_once('-') {
            Some((low, high)) => (low, high),
            None => (number, number),
        };
        let low: u16 = low.parse().map_err(|_| bad())?;
        let high: u16 = high.parse().map_err(|_| bad())?;
        if high < low {
            return Err(bad());
        }
        for value in low..=high {
            exposed.insert(format!("{value}/{protocol}"), json!({}));
        }
    }
    Ok(())
}

pub fn volumes(image: &mut StepImage, paths: &[String]) -> Result<(), BuildError> {
    let volumes = image.config.volumes.get_or_insert_with(Default::default);
    for path in paths {
        let path = path.trim();
        if path.is_empty() {
            return Err(BuildError::Invalid(
                "VOLUME specified can not be an empty string".to_owned(),
            ));
        }
        volumes.insert(path.to_owned(), json!({}));
    }
    Ok(())
}

/// `HEALTHCHECK NONE` or `[--interval=…] CMD …`, stored as Docker stores
/// it (durations in nanoseconds, zero ones left out).
pub fn healthcheck(
    image: &mut StepImage,
    test: Option<(&Command, &[Flag])>,
) -> Result<(), BuildError> {
    let Some((command, flags)) = test else {
        image
            .config
            .extra
            .insert("Healthcheck".to_owned(), json!({ "Test": ["NONE"] }));
        return Ok(());
    };
    let mut check = Map::new();
    let test = match command {
        Command::Shell(text) => vec!["CMD-SHELL".to_owned(), text.clone()],
        Command::Exec(args) => std::iter::once("CMD".to_owned())
            .chain(args.iter().cloned())
            .collect(),
    };
    check.insert("Test".to_owned(), json!(test));
    for flag in flags {
        let value = flag.value.clone().unwrap_or_default();
        let key = match flag.name.as_str() {
            "interval" => "Interval",
            "timeout" => "Timeout",
            "start-period" => "StartPeriod",
            "start-interval" => "StartInterval",
            "retries" => {
                let retries: i64 = value.parse().map_err(|_| {
                    BuildError::Invalid(format!("invalid value for --retries: {value}"))
                })?;
                if retries < 0 {
                    return Err(BuildError::Invalid(
                        "--retries cannot be negative".to_owned(),
                    ));
                }
                if retries > 0 {
                    check.insert("Retries".to_owned(), json!(retries));
                }
                continue;
            }
            other => {
                return Err(BuildError::Invalid(format!(
                    "unknown flag: --{other} for HEALTHCHECK"
                )))
            }
        };
        let nanoseconds = parse_go_duration(&value).map_err(|error| {
            BuildError::Invalid(format!("invalid value for --{}: {error}", flag.name))
        })?;
        if nanoseconds < 0 {
            return Err(BuildError::Invalid(format!(
                "--{} cannot be negative",
                flag.name
            )));
        }
        if nanoseconds > 0 {
            check.insert(key.to_owned(), json!(nanoseconds));
        }
    }
    image
        .config
        .extra
        .insert("Healthcheck".to_owned(), Value::Object(check));
    Ok(())
}

pub fn shell(image: &mut StepImage, shell: &[String]) {
    image.config.extra.insert("Shell".to_owned(), json!(shell));
}

pub fn onbuild(image: &mut StepImage, trigger: &str) {
    let mut triggers = image.onbuild_triggers();
    triggers.push(trigger.to_owned());
    image
        .config
        .extra
        .insert("OnBuild".to_owned(), json!(triggers));
}

pub fn labels(image: &mut StepImage, labels: &[(String, String)]) {
    let map = image.config.labels.get_or_insert_with(Default::default);
    for (key, value) in labels {
        map.insert(key.clone(), value.clone());
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn shell_form_commands_take_the_stage_shell() {
        let mut image = StepImage::scratch();
        set_cmd(&mut image, &Command::Shell("echo hi".to_owned()));
        assert_eq!(
            image.config.cmd.as_deref().unwrap(),
            ["/bin/sh", "-c", "echo hi"]
        );
        shell(&mut image, &["/bin/bash".to_owned(), "-xc".to_owned()]);
        set_cmd(&mut image, &Command::Shell("ls".to_owned()));
        assert_eq!(
            image.config.cmd.as_deref().unwrap(),
            ["/bin/bash", "-xc", "ls"]
        );
    }

    #[test]
    fn an_entrypoint_drops_an_inherited_cmd_only() {
        let mut image = StepImage::scratch();
        image.config.cmd = Some(vec!["sh".to_owned()]);
        set_entrypoint(&mut image, &Command::Exec(vec!["top".to_owned()]), false);
        assert_eq!(image.config.cmd, None);
        image.config.cmd = Some(vec!["-b".to_owned()]);
        set_entrypoint(&mut image, &Command::Exec(vec!["top".to_owned()]), true);
        assert_eq!(image.config.cmd.as_deref().unwrap(), ["-b"]);
    }

    #[test]
    fn exposed_ports_get_a_protocol_and_ranges_are_spelled_out() {
        let mut image = StepImage::scratch();
        expose(
            &mut image,
            &["80".to_owned(), "53/UDP".to_owned(), "8000-8001".to_owned()],
        )
        .unwrap();
        let keys: Vec<_> = image.config.exposed_ports.unwrap().into_keys().collect();
        assert_eq!(keys, ["53/udp", "80/tcp", "8000/tcp", "8001/tcp"]);
        let mut image = StepImage::scratch();
        assert_eq!(
            expose(&mut image, &["80/icmp".to_owned()])
                .unwrap_err()
                .to_string(),
            "invalid proto: icmp"
        );
        assert_eq!(
            expose(&mut image, &["x".to_owned()])
                .unwrap_err()
                .to_string(),
            "invalid containerPort: x"
        );
    }

    #[test]
    fn healthchecks_are_stored_as_docker_stores_them() {
        let mut image = StepImage::scratch();
        let flags = [
            Flag {
                name: "interval".to_owned(),
                value: Some("5s".to_owned()),
            },
            Flag {
                name: "retries".to_owned(),
                value: Some("3".to_owned()),
            },
        ];
        healthcheck(
            &mut image,
            Some((&Command::Shell("true".to_owned()), &flags)),
        )
        .unwrap();
        assert_eq!(
            image.config.extra["Healthcheck"],
            json!({"Test": ["CMD-SHELL", "true"], "Interval": 5_000_000_000i64, "Retries": 3})
        );
        healthcheck(&mut image, None).unwrap();
        assert_eq!(image.config.extra["Healthcheck"], json!({"Test": ["NONE"]}));
        let bad = [Flag {
            name: "timeout".to_owned(),
            value: Some("soon".to_owned()),
        }];
        let error =
            healthcheck(&mut image, Some((&Command::Shell("true".to_owned()), &bad))).unwrap_err();
        assert!(
            error.to_string().starts_with("invalid value for --timeout"),
            "{error}"
        );
    }

    #[test]
    fn an_empty_volume_is_refused() {
        let mut image = StepImage::scratch();
        volumes(&mut image, &["/data".to_owned()]).unwrap();
        assert!(volumes(&mut image, &[" ".to_owned()]).is_err());
        assert!(image.config.volumes.unwrap().contains_key("/data"));
    }
}
