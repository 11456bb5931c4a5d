//! `config.json` itself: the `auths` entries Docker's file store keeps, the
//! `credsStore`/`credHelpers` settings, and saving it back the way docker/cli
//! does (temporary file in the same directory, then rename; mode 0600 for a
//! new file, the old file's mode and owner otherwise).
//!
//! Unlike docker/cli, which re-encodes the file from its own struct and so
//! drops keys it does not know, every key berth does not change is written
//! back as it was read.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use fs_err::os::unix::fs::OpenOptionsExt;
use serde_json::{Map, Value};

use super::{AuthEntry, CredentialsError};

/// One loaded `config.json` (or an empty one where the file does not exist).
#[derive(Debug)]
pub(super) struct ConfigFile {
    path: PathBuf,
    document: Map<String, Value>,
}

impl ConfigFile {
    pub fn load(path: &Path) -> Result<Self, CredentialsError> {
        let text = match fs_err::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => {
                return Err(CredentialsError::Read {
                    path: path.to_owned(),
                    source,
                })
            }
        };
        // An empty file is an empty configuration (docker/cli ignores EOF).
        let document = if text.trim().is_empty() {
            Map::new()
        } else {
            match serde_json::from_str(&text) {
                Ok(Value::Object(document)) => document,
                Ok(_) => {
                    return Err(CredentialsError::NotAnObject {
                        path: path.to_owned(),
                    })
                }
                Err(source) => {
                    return Err(CredentialsError::Parse {
                        path: path.to_owned(),
                        source,
                    })
                }
            }
        };
        Ok(Self {
            path: path.to_owned(),
            document,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `credsStore`, when set to a non-empty name.
    pub fn credentials_store(&self) -> Option<&str> {
        self.document
            .get("credsStore")
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty())
    }

    /// `detachKeys` (the attached CLI's detach sequence), when set to a
    /// non-empty string.
    pub fn detach_keys(&self) -> Option<&str> {
        self.document
            .get("detachKeys")
            .and_then(Value::as_str)
            .filter(|keys| !keys.is_empty())
    }

    /// `credHelpers[key]`, when set to a non-empty name.
    pub fn credential_helper(&self, key: &str) -> Option<&str> {
        self.document
            .get("credHelpers")
            .and_then(|helpers| helpers.get(key))
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty())
    }

    /// Sets `credsStore`; false when it already was `name`.
    pub fn set_credentials_store(&mut self, name: &str) -> bool {
        if self.credentials_store() == Some(name) {
            return false;
        }
        self.document
            .insert("credsStore".into(), Value::String(name.to_owned()));
        true
    }

    /// docker/cli `ContainsAuth`: whether the file configures any
    /// credentials at all (only then is a platform default store skipped).
    pub fn contains_auth(&self) -> bool {
        self.credentials_store().is_some()
            || self
                .document
                .get("credHelpers")
                .and_then(Value::as_object)
                .is_some_and(|helpers| !helpers.is_empty())
            || self.auths().is_some_and(|auths| !auths.is_empty())
    }

    fn auths(&self) -> Option<&Map<String, Value>> {
        self.document.get("auths").and_then(Value::as_object)
    }

    fn auths_mut(&mut self) -> &mut Map<String, Value> {
        let auths = self
            .document
            .entry("auths")
            .or_insert_with(|| Value::Object(Map::new()));
        if !auths.is_object() {
            *auths = Value::Object(Map::new());
        }
        auths
            .as_object_mut()
            .expect("auths was just made an object")
    }

    /// The entry filed under `key`; failing that, one filed under a legacy
    /// URL form of it (`https://host/v1/` for `host`), as docker/cli's file
    /// store looks them up.
    pub fn entry(&self, key: &str) -> Result<Option<AuthEntry>, CredentialsError> {
        let Some(auths) = self.auths() else {
            return Ok(None);
        };
        let found = auths.get_key_value(key).or_else(|| {
            auths
                .iter()
                .find(|(candidate, _)| super::key::hostname(candidate) == key)
        });
        match found {
            Some((found_key, value)) => self.decode_entry(found_key, value).map(Some),
            None => Ok(None),
        }
    }

    fn decode_entry(&self, key: &str, value: &Value) -> Result<AuthEntry, CredentialsError> {
        let text = |name: &str| {
            value
                .get(name)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let mut entry = AuthEntry {
            username: text("username"),
            password: text("password"),
            identity_token: text("identitytoken"),
        };
        let auth = text("auth");
        if !auth.is_empty() {
            let invalid = |reason| CredentialsError::InvalidAuth {
                path: self.path.clone(),
                key: key.to_owned(),
                reason,
            };
            let decoded = BASE64
                .decode(auth.trim())
                .map_err(|_| invalid("\"auth\" is not base64"))?;
            let decoded =
                String::from_utf8(decoded).map_err(|_| invalid("\"auth\" is not UTF-8"))?;
            let (username, password) = decoded
                .split_once(':')
                .ok_or_else(|| invalid("\"auth\" is not \"username:password\""))?;
            entry.username = username.to_owned();
            entry.password = password.trim_matches('\0').to_owned();
        }
        Ok(entry)
    }

    /// Files `entry` under `key` as docker/cli's file store does:
    /// `{"auth": base64("user:password"), "identitytoken": …}`, empty fields
    /// left out (`{}` for a helper's placeholder). False when the entry was
    /// already exactly that, so the file need not be written.
    pub fn set_entry(&mut self, key: &str, entry: &AuthEntry) -> bool {
        let mut value = Map::new();
        if !entry.username.is_empty() || !entry.password.is_empty() {
            let pair = format!("{}:{}", entry.username, entry.password);
            value.insert("auth".into(), Value::String(BASE64.encode(pair)));
        }
        if !entry.identity_token.is_empty() {
            value.insert(
                "identitytoken".into(),
                Value::String(entry.identity_token.clone()),
            );
        }
        let value = Value::Object(value);
        let auths = self.auths_mut();
        if auths.get(key) == Some(&value) {
            return false;
        }
        auths.insert(key.to_owned(), value);
        true
    }

    /// Removes the entry filed exactly under `key`; false when there was none.
    pub fn remove_entry(&mut self, key: &str) -> bool {
        match self
            .document
            .get_mut("auths")
            .and_then(Value::as_object_mut)
        {
            Some(auths) => auths.shift_remove(key).is_some(),
            None => false,
        }
    }

    /// Writes the file: into a temporary file beside the real one (the
    /// symlink's target when `config.json` is a symlink), then renamed over
    /// it, so a reader never sees half a file.
    pub fn save(&mut self) -> Result<(), CredentialsError> {
        // docker/cli always writes "auths", even empty.
        let _ = self.auths_mut();
        self.document = docker_order(std::mem::take(&mut self.document));

        let mut text = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(b"\t");
        let mut serializer = serde_json::Serializer::with_formatter(&mut text, formatter);
        serde::Serialize::serialize(&self.document, &mut serializer).map_err(|source| {
            CredentialsError::Encode {
                path: self.path.clone(),
                source,
            }
        })?;

        let target = resolve_symlink(&self.path);
        let directory = target
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_owned();
        let write_error = |path: &Path| {
            let path = path.to_owned();
            move |source| CredentialsError::Write { path, source }
        };
        // fs-err has no DirBuilder (the mode has to be given at creation); the error names
        // the path.
        #[allow(clippy::disallowed_methods)]
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&directory)
            .map_err(write_error(&directory))?;
        let temporary = temporary_name(&target);
        let result = write_new_file(&temporary, &text)
            .and_then(|()| {
                copy_permissions(&target, &temporary);
                fs_err::rename(&temporary, &target)
            })
            .map_err(write_error(&temporary));
        if result.is_err() {
            let _ = fs_err::remove_file(&temporary);
        }
        result
    }
}

/// docker/cli's `ConfigFile` fields, in the order it writes them.
const DOCKER_KEY_ORDER: [&str; 26] = [
    "auths",
    "HttpHeaders",
    "psFormat",
    "imagesFormat",
    "networksFormat",
    "pluginsFormat",
    "volumesFormat",
    "statsFormat",
    "detachKeys",
    "credsStore",
    "credHelpers",
    "serviceInspectFormat",
    "servicesFormat",
    "tasksFormat",
    "secretFormat",
    "configFormat",
    "nodesFormat",
    "pruneFilters",
    "proxies",
    "experimental",
    "stackOrchestrator",
    "kubernetes",
    "currentContext",
    "cliPluginsExtraDirs",
    "plugins",
    "aliases",
];

/// Fields Go encodes from maps, whose keys it therefore writes sorted.
const DOCKER_MAP_KEYS: [&str; 6] = [
    "auths",
    "HttpHeaders",
    "credHelpers",
    "proxies",
    "plugins",
    "aliases",
];

/// The document laid out as docker/cli writes it (its fields in its
/// order, map keys sorted), so a file berth writes is byte for byte the
/// file docker would; keys docker does not know follow, as they were.
fn docker_order(mut document: Map<String, Value>) -> Map<String, Value> {
    let sorted = |value: Value| match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.into_iter().collect();
            entries.sort_by(|(left, _), (right, _)| left.cmp(right));
            Value::Object(entries.into_iter().collect())
        }
        other => other,
    };
    let mut ordered = Map::new();
    for key in DOCKER_KEY_ORDER {
        if let Some(mut value) = document.shift_remove(key) {
            if DOCKER_MAP_KEYS.contains(&key) {
                value = sorted(value);
            }
            if key == "plugins" {
                if let Value::Object(plugins) = &mut value {
                    for options in plugins.values_mut() {
                        *options = sorted(std::mem::take(options));
                    }
                }
            }
            ordered.insert(key.to_owned(), value);
        }
    }
    ordered.extend(document);
    ordered
}

/// Where writing `path` has to go: the target of a symlink (dangling or
/// not), else `path` itself.
fn resolve_symlink(path: &Path) -> PathBuf {
    match fs_err::canonicalize(path) {
        Ok(target) => target,
        Err(_) => match fs_err::read_link(path) {
            Ok(link) => path.parent().map_or(link.clone(), |dir| dir.join(link)),
            Err(_) => path.to_owned(),
        },
    }
}

fn temporary_name(target: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = target
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "config.json".to_owned());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.subsec_nanos())
        .unwrap_or_default();
    target.with_file_name(format!(
        ".{name}.{}.{nanos}.{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

/// A new file, mode 0600 (the secrets are in it), written and flushed.
fn write_new_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = fs_err::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// docker/cli `copyFilePermissions`: the old file's mode and owner, best
/// effort (a failure leaves the new file at 0600, owned by us).
fn copy_permissions(from: &Path, to: &Path) {
    let Ok(metadata) = fs_err::metadata(from) else {
        return;
    };
    if metadata.is_file() {
        let mode = metadata.permissions().mode() & 0o7777;
        if fs_err::set_permissions(to, std::fs::Permissions::from_mode(mode)).is_err() {
            return;
        }
    }
    if metadata.uid() > 0 && metadata.gid() > 0 {
        let _ = fs_err::os::unix::fs::chown(to, Some(metadata.uid()), Some(metadata.gid()));
    }
}
