//! `--device`, `--device-cgroup-rule`, the block IO throttles and `--ulimit`
//! (docker CLI `validateLinuxPath`, `parseLinuxDevice`, `opts/throttledevice.go`,
//! `opts/weightdevice.go`, go-units `ParseUlimit`).

use std::collections::BTreeMap;

use berth_types::container::resources::ULIMIT_NAMES;
use berth_types::container::{DeviceMapping, DeviceRequest, ThrottleDevice, Ulimit, WeightDevice};

use super::error::OptionsError;
use super::values::{parse_bytes, parse_i64_decimal, parse_unsigned};

/// Some of `r`, `w`, `m`, each at most once.
fn is_device_mode(mode: &str) -> bool {
    !mode.is_empty()
        && mode.chars().all(|c| matches!(c, 'r' | 'w' | 'm'))
        && ['r', 'w', 'm']
            .iter()
            .all(|c| mode.chars().filter(|m| m == c).count() <= 1)
}

/// A CDI device name, `vendor.com/class=name`, which Docker passes to the `cdi`
/// driver instead of mapping a path.
fn is_cdi_name(value: &str) -> bool {
    let Some((kind, name)) = value.split_once('=') else {
        return false;
    };
    let Some((vendor, class)) = kind.split_once('/') else {
        return false;
    };
    let word = |text: &str, extra: &str| {
        text.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || extra.contains(c))
    };
    word(vendor, "._-") && word(class, "_-") && word(name, "_.:-")
}

/// `--device host[:container][:mode]` values; CDI names become one device request.
pub fn parse_devices(
    values: &[String],
) -> Result<(Vec<DeviceMapping>, Option<DeviceRequest>), OptionsError> {
    let mut mappings = Vec::new();
    let mut cdi = Vec::new();
    for value in values {
        if is_cdi_name(value) {
            cdi.push(value.clone());
            continue;
        }
        mappings.push(parse_device(value)?);
    }
    let request = (!cdi.is_empty()).then(|| DeviceRequest {
        driver: "cdi".to_owned(),
        device_ids: Some(cdi),
        ..Default::default()
    });
    Ok((mappings, request))
}

fn parse_device(value: &str) -> Result<DeviceMapping, OptionsError> {
    if value.matches(':').count() > 2 {
        return Err(OptionsError::DevicePathFormat(value.to_owned()));
    }
    let parts: Vec<&str> = value.splitn(3, ':').collect();
    if parts[0].is_empty() {
        return Err(OptionsError::DevicePathFormat(value.to_owned()));
    }
    let (host, container, mode) = match parts.as_slice() {
        [path] => (clean(path), clean(path), "rwm".to_owned()),
        [path, mode] if is_device_mode(mode) => (clean(path), clean(path), (*mode).to_owned()),
        [host, container] => ((*host).to_owned(), clean(container), "rwm".to_owned()),
        [host, container, mode] => {
            if !is_device_mode(mode) {
                return Err(OptionsError::DeviceMode((*mode).to_owned()));
            }
            (
                (*host).to_owned(),
                (*container).to_owned(),
                (*mode).to_owned(),
            )
        }
        _ => return Err(OptionsError::DeviceSpecification(value.to_owned())),
    };
    if !container.starts_with('/') {
        let shown = if parts.len() == 1 || (parts.len() == 2 && is_device_mode(parts[1])) {
            parts[0]
        } else {
            parts[1]
        };
        return Err(OptionsError::DevicePathNotAbsolute(shown.to_owned()));
    }
    Ok(DeviceMapping {
        path_on_host: host,
        path_in_container: container,
        cgroup_permissions: mode,
    })
}

/// Go's `path.Clean`, lexically.
fn clean(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|last| *last != "..") => {
                parts.pop();
            }
            ".." if absolute => {}
            _ => parts.push(part),
        }
    }
    let joined = parts.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_owned(),
        (false, false) => joined,
    }
}

/// `--device-cgroup-rule 'c 1:3 mr'`: `[acb] (major|*):(minor|*) [rwm]{1,3}`.
pub fn validate_cgroup_rule(value: &str) -> Result<(), OptionsError> {
    let number =
        |text: &str| text == "*" || (!text.is_empty() && text.chars().all(|c| c.is_ascii_digit()));
    let fields: Vec<&str> = value.split(' ').collect();
    let valid = match fields.as_slice() {
        [kind, numbers, access] => {
            matches!(*kind, "a" | "c" | "b")
                && numbers
                    .split_once(':')
                    .is_some_and(|(major, minor)| number(major) && number(minor))
                && (1..=3).contains(&access.len())
                && access.chars().all(|c| matches!(c, 'r' | 'w' | 'm'))
        }
        _ => false,
    };
    if valid {
        Ok(())
    } else {
        Err(OptionsError::docker(
            "--device-cgroup-rule",
            value,
            format!("invalid device cgroup format '{value}'"),
        ))
    }
}

/// `/dev/…:value` for the throttle and weight flags.
fn split_device<'a>(
    flag: &'static str,
    value: &'a str,
) -> Result<(&'a str, &'a str), OptionsError> {
    let Some((path, rate)) = value.split_once(':').filter(|(path, _)| !path.is_empty()) else {
        return Err(OptionsError::docker(
            flag,
            value,
            format!("bad format: {value}"),
        ));
    };
    if !path.starts_with("/dev/") {
        return Err(OptionsError::docker(
            flag,
            value,
            format!("bad format for device path: {value}"),
        ));
    }
    Ok((path, rate))
}

/// `--device-read-bps`/`--device-write-bps`: a size per second.
pub fn parse_bps_device(flag: &'static str, value: &str) -> Result<ThrottleDevice, OptionsError> {
    let (path, rate) = split_device(flag, value)?;
    let rate = parse_bytes(rate).map_err(|_| {
        OptionsError::docker(flag, value, format!("invalid rate for device: {value}. The correct format is <device-path>:<number>[<unit>]. Number must be a positive integer. Unit is optional and can be kb, mb, or gb"))
    })?;
    Ok(ThrottleDevice {
        path: path.to_owned(),
        rate: rate.unsigned_abs(),
    })
}

/// `--device-read-iops`/`--device-write-iops`: operations per second.
pub fn parse_iops_device(flag: &'static str, value: &str) -> Result<ThrottleDevice, OptionsError> {
    let (path, rate) = split_device(flag, value)?;
    let rate = rate.parse::<u64>().ok().filter(|_| !rate.starts_with('+')).ok_or_else(|| {
        OptionsError::docker(flag, value, format!("invalid rate for device: {value}. The correct format is <device-path>:<number>. Number must be a positive integer"))
    })?;
    Ok(ThrottleDevice {
        path: path.to_owned(),
        rate,
    })
}

/// `--blkio-weight-device /dev/sda:200` (10–1000, or 0).
pub fn parse_weight_device(value: &str) -> Result<WeightDevice, OptionsError> {
    const FLAG: &str = "--blkio-weight-device";
    let (path, weight) = split_device(FLAG, value)?;
    let invalid =
        || OptionsError::docker(FLAG, value, format!("invalid weight for device: {value}"));
    let weight = weight
        .parse::<u16>()
        .ok()
        .filter(|weight| *weight == 0 || (10..=1000).contains(weight))
        .ok_or_else(invalid)?;
    Ok(WeightDevice {
        path: path.to_owned(),
        weight,
    })
}

/// `--ulimit name=soft[:hard]` values, one per name (the last wins), sorted by name.
pub fn parse_ulimits(values: &[String]) -> Result<Vec<Ulimit>, OptionsError> {
    let mut by_name = BTreeMap::new();
    for value in values {
        let ulimit = parse_ulimit(value)
            .map_err(|message| OptionsError::docker("--ulimit", value, message))?;
        by_name.insert(ulimit.name.clone(), ulimit);
    }
    Ok(by_name.into_values().collect())
}

fn parse_ulimit(value: &str) -> Result<Ulimit, String> {
    let Some((name, limits)) = value.split_once('=') else {
        return Err(format!("invalid ulimit argument: {value}"));
    };
    if !ULIMIT_NAMES.contains(&name) {
        return Err(format!("invalid ulimit type: {name}"));
    }
    let number = |text: &str| parse_i64_decimal(text).map_err(|error| error.to_string());
    let (soft, hard) = match limits.split(':').collect::<Vec<_>>().as_slice() {
        [soft] => {
            let soft = number(soft)?;
            (soft, soft)
        }
        [soft, hard] => {
            let hard = number(hard)?;
            (number(soft)?, hard)
        }
        _ => {
            return Err(format!(
                "too many limit value arguments - {limits}, can only have up to two, `soft[:hard]`"
            ))
        }
    };
    if hard != -1 {
        if soft == -1 {
            return Err(format!("ulimit soft limit must be less than or equal to hard limit: soft: -1 (unlimited), hard: {hard}"));
        }
        if soft > hard {
            return Err(format!(
                "ulimit soft limit must be less than or equal to hard limit: {soft} > {hard}"
            ));
        }
    }
    Ok(Ulimit {
        name: name.to_owned(),
        hard,
        soft,
    })
}

/// `--blkio-weight` (uint16).
pub fn parse_blkio_weight(value: &str) -> Result<u16, OptionsError> {
    parse_unsigned(value, 16)
        .map(|weight| weight as u16)
        .map_err(|error| OptionsError::argument("--blkio-weight", value, error))
}
