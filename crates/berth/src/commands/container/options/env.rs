//! `-e/--env`, `--env-file`, `-l/--label` and `--label-file` (docker CLI
//! `opts/env.go`, `opts/parse.go`, `pkg/kvfile`).

use std::collections::BTreeMap;
use std::path::Path;

use super::error::OptionsError;

/// Looks a variable up in the CLI's environment (a fake one in tests).
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Docker's `ValidateEnv`: the name must not be empty; a bare `KEY` takes its value
/// from the environment, or stays a bare `KEY` when unset there.
pub fn resolve_env(value: &str, lookup: EnvLookup) -> Result<String, OptionsError> {
    let (name, has_value) = match value.split_once('=') {
        Some((name, _)) => (name, true),
        None => (value, false),
    };
    if name.is_empty() {
        return Err(OptionsError::docker(
            "-e, --env",
            value,
            format!("invalid environment variable: {value}"),
        ));
    }
    if has_value {
        return Ok(value.to_owned());
    }
    Ok(match lookup(name) {
        Some(found) => format!("{name}={found}"),
        None => value.to_owned(),
    })
}

/// Docker's `ValidateLabel`: a name without whitespace; the value may be anything.
pub fn validate_label(value: &str) -> Result<(), OptionsError> {
    let name = value.split_once('=').map_or(value, |(name, _)| name);
    let name = name.trim_start_matches([' ', '\t']);
    if name.is_empty() {
        return Err(OptionsError::docker(
            "-l, --label",
            value,
            format!("invalid label '{value}': empty name"),
        ));
    }
    if name.contains([' ', '\t']) {
        return Err(OptionsError::docker(
            "-l, --label",
            value,
            format!("label '{name}' contains whitespaces"),
        ));
    }
    Ok(())
}

/// Reads a line-delimited `KEY[=value]` file (docker `kvfile.Parse`): UTF-8, BOM
/// dropped, leading whitespace dropped, `#` comments and blank lines skipped, no
/// quote processing. A bare `KEY` is looked up with `lookup`, or dropped when there
/// is no lookup or the variable is unset.
pub fn read_key_value_file(
    path: &Path,
    lookup: Option<EnvLookup>,
) -> Result<Vec<String>, OptionsError> {
    // std's error: Docker's message (`open /x: no such file or directory`) is built from the
    // bare errno (go_os_error) and names the path itself.
    #[allow(clippy::disallowed_methods)]
    let bytes = std::fs::read(path).map_err(|error| OptionsError::ReadFile {
        path: path.to_owned(),
        error,
    })?;
    let problem = |problem: String| OptionsError::KeyValueFile {
        path: path.to_owned(),
        problem,
    };
    let mut entries = Vec::new();
    // Go's bufio.Scanner splits on '\n' and drops one trailing '\r'.
    for (index, raw) in bytes.split(|byte| *byte == b'\n').enumerate() {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let line = std::str::from_utf8(raw).map_err(|_| {
            problem(format!(
                "invalid utf8 bytes at line {}: {}",
                index + 1,
                go_byte_slice(raw)
            ))
        })?;
        let line = if index == 0 {
            line.strip_prefix('\u{feff}').unwrap_or(line)
        } else {
            line
        };
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, has_value) = match line.split_once('=') {
            Some((name, _)) => (name, true),
            None => (line, false),
        };
        if name.is_empty() {
            return Err(problem(format!("no variable name on line '{line}'")));
        }
        if name.contains([' ', '\t']) {
            return Err(problem(format!("variable '{name}' contains whitespaces")));
        }
        if has_value {
            entries.push(line.to_owned());
        } else if let Some(found) = lookup.and_then(|lookup| lookup(line)) {
            entries.push(format!("{name}={found}"));
        }
    }
    Ok(entries)
}

/// Go's `%v` of a byte slice: `[255 10]`.
fn go_byte_slice(bytes: &[u8]) -> String {
    let items: Vec<String> = bytes.iter().map(u8::to_string).collect();
    format!("[{}]", items.join(" "))
}

/// `KEY=value` entries to a map; a bare `KEY` maps to `""` and later keys win
/// (Docker's `ConvertKVStringsToMap`).
pub fn to_map(entries: &[String]) -> BTreeMap<String, String> {
    entries
        .iter()
        .map(|entry| match entry.split_once('=') {
            Some((key, value)) => (key.to_owned(), value.to_owned()),
            None => (entry.clone(), String::new()),
        })
        .collect()
}
