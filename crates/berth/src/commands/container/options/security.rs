//! `--security-opt`, `--sysctl`, `--storage-opt` and `--log-opt` (docker CLI
//! `parseSecurityOpts`, `parseSystemPaths`, `ValidateSysctl`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::error::OptionsError;

/// Security options as sent to the engine, plus the masked and read-only paths
/// (`Some([])` after `systempaths=unconfined`, which never reaches the engine).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct SecurityOptions {
    pub options: Option<Vec<String>>,
    pub masked_paths: Option<Vec<String>>,
    pub readonly_paths: Option<Vec<String>>,
}

/// Checks each option has a value (only `no-new-privileges` may stand alone) and
/// replaces `seccomp=<file>` with `seccomp=<the file's JSON, compacted>`, as the
/// docker CLI does: the engine never reads the user's files.
pub fn parse_security_options(values: &[String]) -> Result<SecurityOptions, OptionsError> {
    let mut result = SecurityOptions::default();
    if values.is_empty() {
        return Ok(result);
    }
    let mut options = Vec::new();
    for option in values {
        let (key, value, separated) = match option.split_once('=') {
            Some((key, value)) => (key, value, true),
            None if option == "no-new-privileges" => (option.as_str(), "", false),
            None => match option.split_once(':') {
                Some((key, value)) => (key, value, true),
                None => (option.as_str(), "", false),
            },
        };
        if (!separated || value.is_empty()) && key != "no-new-privileges" {
            return Err(OptionsError::SecurityOption(option.clone()));
        }
        if option == "systempaths=unconfined" {
            result.masked_paths = Some(Vec::new());
            result.readonly_paths = Some(Vec::new());
            continue;
        }
        if key == "seccomp" && !matches!(value, "builtin" | "unconfined") {
            options.push(format!("seccomp={}", read_seccomp_profile(value)?));
            continue;
        }
        options.push(option.clone());
    }
    result.options = Some(options);
    Ok(result)
}

fn read_seccomp_profile(path: &str) -> Result<String, OptionsError> {
    let path = PathBuf::from(path);
    let bytes = fs_err::read(&path).map_err(|source| OptionsError::SeccompProfileRead {
        path: path.clone(),
        source,
    })?;
    // Compacting keeps object key order and numbers exactly as written (Go's
    // json.Compact only drops insignificant whitespace).
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|source| OptionsError::SeccompProfileJson { path, source })?;
    Ok(value.to_string())
}

const NAMESPACED_SYSCTLS: &[&str] = &[
    "kernel.msgmax",
    "kernel.msgmnb",
    "kernel.msgmni",
    "kernel.sem",
    "kernel.shmall",
    "kernel.shmmax",
    "kernel.shmmni",
    "kernel.shm_rmid_forced",
];

/// `--sysctl name=value` for the namespaced sysctls Docker allows.
pub fn parse_sysctls(values: &[String]) -> Result<BTreeMap<String, String>, OptionsError> {
    let mut sysctls = BTreeMap::new();
    for value in values {
        let allowed = value.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty()
                && (NAMESPACED_SYSCTLS.contains(&name)
                    || name.starts_with("net.")
                    || name.starts_with("fs.mqueue."))
        });
        let Some((name, setting)) = value.split_once('=').filter(|_| allowed) else {
            return Err(OptionsError::docker(
                "--sysctl",
                value,
                format!("sysctl '{value}' is not allowed"),
            ));
        };
        sysctls.insert(name.to_owned(), setting.to_owned());
    }
    Ok(sysctls)
}

/// `--storage-opt key=value`.
pub fn parse_storage_options(values: &[String]) -> Result<BTreeMap<String, String>, OptionsError> {
    values
        .iter()
        .map(|value| {
            value
                .split_once('=')
                .map(|(key, setting)| (key.to_owned(), setting.to_owned()))
                .ok_or(OptionsError::StorageOption)
        })
        .collect()
}

/// `--log-opt key=value` (a bare key means an empty value); the `none` driver takes
/// no options.
pub fn parse_log_options(
    driver: &str,
    values: &[String],
) -> Result<BTreeMap<String, String>, OptionsError> {
    if driver == "none" && !values.is_empty() {
        return Err(OptionsError::LoggingOptions(driver.to_owned()));
    }
    Ok(super::env::to_map(values))
}
