//! `-v/--volume` and `--tmpfs` (docker CLI `parse`, compose `ParseVolume`).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use berth_types::container::EmptyObject;

use super::error::OptionsError;

/// What `-v` values become: binds and named volumes for `HostConfig.Binds`, and
/// anonymous volumes for `Config.Volumes`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Volumes {
    pub binds: Option<Vec<String>>,
    pub anonymous: BTreeMap<String, EmptyObject>,
}

/// A `-v` value split into source and target (the options are checked by
/// validation, as the daemon checks them).
struct VolumeSpec {
    source: String,
}

/// Docker's short volume syntax: `target`, `source:target` or
/// `source:target:options`. Windows drive letters are not special here (berth runs
/// on Linux), so `a:/x` is the volume `a` at `/x`.
fn parse_spec(spec: &str) -> Result<VolumeSpec, OptionsError> {
    let invalid = |problem| OptionsError::VolumeSpec {
        spec: spec.to_owned(),
        problem,
    };
    match spec.chars().count() {
        0 => return Err(OptionsError::VolumeSpecEmpty),
        1 | 2 => {
            return Ok(VolumeSpec {
                source: String::new(),
            })
        }
        _ => {}
    }
    // Left to right, as Docker reads it, so the first problem found is the one
    // Docker reports.
    let sections: Vec<&str> = spec.split(':').collect();
    let mut source: Option<&str> = None;
    let mut has_target = false;
    for (index, section) in sections.iter().enumerate() {
        let last = index + 1 == sections.len();
        if section.is_empty() {
            return Err(invalid("empty section between colons"));
        }
        match source {
            // A lone section is the target of an anonymous volume.
            None if last => {}
            None => source = Some(section),
            Some(_) if !has_target => has_target = true,
            Some(_) if !last => return Err(invalid("too many colons")),
            Some(_) => {} // the options, checked later as the daemon checks them
        }
    }
    Ok(VolumeSpec {
        source: source.unwrap_or_default().to_owned(),
    })
}

/// Sorts `-v` values into binds and anonymous volumes. A host path starting with
/// `.` is made absolute against `cwd` (what the docker CLI does); other relative
/// sources stay as they are and are named volumes to the engine.
pub fn parse_volumes(values: &[String], cwd: Option<&Path>) -> Result<Volumes, OptionsError> {
    let mut volumes = Volumes::default();
    let mut binds: Vec<String> = Vec::new();
    for value in values {
        let spec = parse_spec(value)?;
        if spec.source.is_empty() {
            volumes.anonymous.insert(value.clone(), EmptyObject);
            continue;
        }
        let bind = match (value.split_once(':'), cwd) {
            (Some((host, rest)), Some(cwd)) if host.starts_with('.') => {
                format!("{}:{rest}", absolute(cwd, host).display())
            }
            _ => value.clone(),
        };
        if !binds.contains(&bind) {
            binds.push(bind);
        }
    }
    volumes.binds = (!binds.is_empty()).then_some(binds);
    Ok(volumes)
}

/// Go's `filepath.Abs`: joined with the working directory and cleaned lexically.
pub fn absolute(cwd: &Path, relative: &str) -> PathBuf {
    let mut result = PathBuf::from("/");
    for component in cwd.join(relative).components() {
        match component {
            Component::ParentDir => {
                result.pop();
            }
            Component::Normal(part) => result.push(part),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    result
}

/// `--tmpfs /path[:options]`; a later value for the same path wins.
pub fn parse_tmpfs(values: &[String]) -> BTreeMap<String, String> {
    values
        .iter()
        .map(|value| match value.split_once(':') {
            Some((path, options)) => (path.to_owned(), options.to_owned()),
            None => (value.clone(), String::new()),
        })
        .collect()
}
