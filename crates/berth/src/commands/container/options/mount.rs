//! `--mount type=…,source=…,target=…` (docker CLI `opts/mount.go`).

use std::path::Path;

use berth_types::container::mount::{TYPE_BIND, TYPE_TMPFS, TYPE_VOLUME};
use berth_types::container::{BindOptions, Mount, TmpfsOptions, VolumeDriver, VolumeOptions};

use super::csv::read_record;
use super::error::OptionsError;
use super::values::{parse_bool, parse_bytes};
use super::volumes::absolute;

const FLAG: &str = "--mount";

/// Parses one `--mount` value. Keys are case-insensitive, as in Docker; a source
/// starting with `.` is made absolute against `cwd`.
pub fn parse_mount(value: &str, cwd: Option<&Path>) -> Result<Mount, OptionsError> {
    let fail = |message: String| OptionsError::docker(FLAG, value, message);
    let fields = read_record(value).map_err(|error| fail(error.to_string()))?;
    let mut mount = Mount {
        r#type: TYPE_VOLUME.to_owned(),
        ..Default::default()
    };
    let mut bind: Option<BindOptions> = None;
    let mut volume: Option<VolumeOptions> = None;
    let mut tmpfs: Option<TmpfsOptions> = None;
    let invalid_value = |key: &str, raw: &str| fail(format!("invalid value for {key}: {raw}"));
    for field in &fields {
        let Some((key, raw)) = field.split_once('=') else {
            match field.to_ascii_lowercase().as_str() {
                "readonly" | "ro" => mount.read_only = true,
                "volume-nocopy" => volume_options(&mut volume).no_copy = true,
                "bind-nonrecursive" => {
                    bind.get_or_insert_with(Default::default).non_recursive = true
                }
                _ => {
                    return Err(fail(format!(
                        "invalid field '{field}' must be a key=value pair"
                    )))
                }
            }
            continue;
        };
        let key = key.to_ascii_lowercase();
        match key.as_str() {
            "type" => mount.r#type = raw.to_ascii_lowercase(),
            "source" | "src" => {
                mount.source = match cwd {
                    Some(cwd) if raw.starts_with('.') => absolute(cwd, raw).display().to_string(),
                    _ => raw.to_owned(),
                };
            }
            "target" | "dst" | "destination" => mount.target = raw.to_owned(),
            "readonly" | "ro" => {
                mount.read_only = parse_bool(raw).map_err(|_| invalid_value(&key, raw))?;
            }
            "consistency" => mount.consistency = raw.to_ascii_lowercase(),
            "bind-propagation" => {
                bind.get_or_insert_with(Default::default).propagation = raw.to_ascii_lowercase();
            }
            "bind-nonrecursive" => {
                bind.get_or_insert_with(Default::default).non_recursive =
                    parse_bool(raw).map_err(|_| invalid_value(&key, raw))?;
            }
            "bind-recursive" => {
                let options = bind.get_or_insert_with(Default::default);
                match raw {
                    "enabled" => {}
                    "disabled" => options.non_recursive = true,
                    "writable" => options.read_only_non_recursive = true,
                    "readonly" => options.read_only_force_recursive = true,
                    _ => {
                        return Err(fail(format!(
                            "invalid value for {key}: {raw} (must be \"enabled\", \"disabled\", \"writable\", or \"readonly\")"
                        )))
                    }
                }
            }
            "volume-subpath" => volume_options(&mut volume).subpath = raw.to_owned(),
            "volume-nocopy" => {
                volume_options(&mut volume).no_copy = parse_bool(raw)
                    .map_err(|_| fail(format!("invalid value for volume-nocopy: {raw}")))?;
            }
            "volume-label" => {
                let options = volume_options(&mut volume);
                if let Some((name, text)) = non_empty_key(raw) {
                    options.labels.insert(name, text);
                }
            }
            "volume-driver" => {
                let options = volume_options(&mut volume);
                options
                    .driver_config
                    .get_or_insert_with(Default::default)
                    .name = raw.to_owned();
            }
            "volume-opt" => {
                let options = volume_options(&mut volume);
                let driver = options.driver_config.get_or_insert_with(Default::default);
                if let Some((name, text)) = non_empty_key(raw) {
                    driver.options.insert(name, text);
                }
            }
            "tmpfs-size" => {
                tmpfs.get_or_insert_with(Default::default).size_bytes =
                    parse_bytes(raw).map_err(|_| invalid_value(&key, raw))?;
            }
            "tmpfs-mode" => {
                // Go's ParseUint(raw, 8, 32): octal digits only, no sign.
                let mode = Some(raw)
                    .filter(|raw| !raw.starts_with('+'))
                    .and_then(|raw| u32::from_str_radix(raw, 8).ok())
                    .ok_or_else(|| invalid_value(&key, raw))?;
                tmpfs.get_or_insert_with(Default::default).mode = mode;
            }
            _ => return Err(fail(format!("unexpected key '{key}' in '{field}'"))),
        }
    }
    if mount.r#type.is_empty() {
        return Err(fail("type is required".to_owned()));
    }
    if mount.target.is_empty() {
        return Err(fail("target is required".to_owned()));
    }
    let mixes = [
        ("volume", volume.is_some(), TYPE_VOLUME),
        ("bind", bind.is_some(), TYPE_BIND),
        ("tmpfs", tmpfs.is_some(), TYPE_TMPFS),
    ];
    for (prefix, present, allowed) in mixes {
        if present && mount.r#type != allowed {
            return Err(fail(format!(
                "cannot mix '{prefix}-*' options with mount type '{}'",
                mount.r#type
            )));
        }
    }
    if let Some(options) = &bind {
        let rule = |option: &str| format!("option 'bind-recursive={option}' requires");
        if options.read_only_non_recursive && !mount.read_only {
            return Err(fail(format!(
                "{} 'readonly' to be specified in conjunction",
                rule("writable")
            )));
        }
        if options.read_only_force_recursive {
            if !mount.read_only {
                return Err(fail(format!(
                    "{} 'readonly' to be specified in conjunction",
                    rule("readonly")
                )));
            }
            if options.propagation != "rprivate" {
                return Err(fail(format!(
                    "{} 'bind-propagation=rprivate' to be specified in conjunction",
                    rule("readonly")
                )));
            }
        }
    }
    mount.bind_options = bind;
    mount.volume_options = volume;
    mount.tmpfs_options = tmpfs;
    Ok(mount)
}

/// Docker creates the volume options with an empty driver config on first use.
fn volume_options(volume: &mut Option<VolumeOptions>) -> &mut VolumeOptions {
    volume.get_or_insert_with(|| VolumeOptions {
        driver_config: Some(VolumeDriver::default()),
        ..Default::default()
    })
}

/// `key=value` with a non-empty key (Docker drops the others silently).
fn non_empty_key(raw: &str) -> Option<(String, String)> {
    let (key, value) = raw.split_once('=').unwrap_or((raw, ""));
    (!key.is_empty()).then(|| (key.to_owned(), value.to_owned()))
}
