//! Volumes (local driver): `volume create/ls/inspect/rm/prune`, and the
//! directories containers mount. A volume with driver options
//! (`type`/`device`/`o`, [`options`]) is mounted at its `_data` while
//! containers use it ([`mounts`]).

pub mod mounts;
pub mod options;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use berth_store::VolumeRow;
use serde_json::{json, Value};

use crate::{Engine, EngineError, ErrorKind};

/// What can go wrong with volumes, in Docker's words where Docker has them
/// (moby `volume/service`, `volume/local`).
#[derive(Debug, thiserror::Error)]
pub enum VolumeError {
    #[error("get {0}: no such volume")]
    NotFound(String),
    #[error("remove {name}: volume is in use - [{}]", containers.join(", "))]
    InUse {
        name: String,
        containers: Vec<String>,
    },
    #[error("create {name}: \"{name}\" includes invalid characters for a local volume name, only \"{}\" are allowed. If you intended to pass a host directory, use absolute path", berth_types::container::names::RESTRICTED_NAME_CHARS)]
    InvalidName { name: String },
    #[error("failed to remove {path:?}")]
    Remove {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// berth has the `local` driver only (no volume plugins).
    #[error(
        "create {name}: error looking up volume plugin {driver}: plugin \"{driver}\" not found"
    )]
    NoSuchDriver { name: String, driver: String },
    /// Docker's words: `create NAME: invalid option: "KEY"` (the cause).
    #[error("create {name}")]
    Options {
        name: String,
        #[source]
        source: options::OptionsError,
    },
    #[error("error while mounting volume '{}'", path.display())]
    MountVolume {
        path: PathBuf,
        #[source]
        source: Box<mounts::UseError>,
    },
    #[error("failed to count the uses of the volume at {path:?}")]
    Registry {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to read the options of volume {name}")]
    ReadOptions {
        name: String,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to write the options of volume {name}")]
    WriteOptions {
        name: String,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to run cp")]
    RunCopy(#[source] std::io::Error),
    #[error("failed to copy {image_path:?} into the volume")]
    Populate { image_path: PathBuf },
}

impl VolumeError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::NotFound(_) | Self::NoSuchDriver { .. } => ErrorKind::NotFound,
            Self::InUse { .. } => ErrorKind::Conflict,
            Self::InvalidName { .. } | Self::Options { .. } => ErrorKind::InvalidArgument,
            Self::Remove { .. }
            | Self::RunCopy(_)
            | Self::Populate { .. }
            | Self::MountVolume { .. }
            | Self::Registry { .. }
            | Self::ReadOptions { .. }
            | Self::WriteOptions { .. } => ErrorKind::Internal,
        }
    }
}

pub fn volume_data(root: &Path, name: &str) -> PathBuf {
    root.join("volumes").join(name).join("_data")
}

/// Docker's volume name rule (the same characters as container names).
fn validate_name(name: &str) -> Result<(), VolumeError> {
    if berth_types::container::names::is_restricted_name(name) {
        Ok(())
    } else {
        Err(VolumeError::InvalidName {
            name: name.to_owned(),
        })
    }
}

/// Creates the volume (row and directory) if missing; anonymous volumes
/// are named by a 64-hex id.
pub fn ensure_volume(engine: &Engine, name: &str) -> Result<VolumeRow, EngineError> {
    create_volume(
        engine,
        name,
        &BTreeMap::new(),
        &BTreeMap::new(),
        berth_types::digest::is_sha256_hex(name),
    )
}

/// Creates volume `name`, or returns it as it is when it exists (Docker
/// keeps an existing volume's options). `driver_options` of a new one are
/// checked before anything is made.
pub fn create_volume(
    engine: &Engine,
    name: &str,
    labels: &BTreeMap<String, String>,
    driver_options: &BTreeMap<String, String>,
    anonymous: bool,
) -> Result<VolumeRow, EngineError> {
    validate_name(name)?;
    let data = volume_data(engine.root(), name);
    if let Some(row) = engine.store().volume(name)? {
        // dockerd answers an existing volume as it is, without looking at
        // the options asked for.
        crate::permissions::create_shared_directory(&data)?;
        return Ok(row);
    }
    let local_options =
        options::LocalOptions::from_map(driver_options).map_err(|source| VolumeError::Options {
            name: name.to_owned(),
            source,
        })?;
    // `volumes/<name>` private (the umask), `_data` the container's.
    crate::permissions::create_shared_directory(&data)?;
    // Beside `_data`, as Docker's `opts.json` (kept as given, as Docker
    // shows them): a container's monitor reads it without the store.
    if local_options.is_some() {
        write_options(engine.root(), name, driver_options)?;
    }
    let created = crate::containers::state::now();
    let row = engine.store().ensure_volume(&VolumeRow {
        name: name.to_owned(),
        driver: "local".to_owned(),
        created: created.clone(),
        labels: serde_json::to_string(labels).unwrap_or_else(|_| "{}".to_owned()),
        options: serde_json::to_string(driver_options).unwrap_or_else(|_| "{}".to_owned()),
        anonymous,
    })?;
    // An existing volume keeps its creation time: no event for it.
    if row.created == created {
        crate::events::emit_volume(engine.store(), "create", name);
    }
    Ok(row)
}

fn options_path(root: &Path, name: &str) -> PathBuf {
    root.join("volumes").join(name).join("opts.json")
}

fn write_options(
    root: &Path,
    name: &str,
    driver_options: &BTreeMap<String, String>,
) -> Result<(), VolumeError> {
    let text = serde_json::to_string(driver_options).unwrap_or_default();
    fs_err::write(options_path(root, name), text).map_err(|source| VolumeError::WriteOptions {
        name: name.to_owned(),
        source,
    })
}

/// The options a volume was created with; None for a plain directory
/// volume (no `opts.json`).
pub fn read_options(root: &Path, name: &str) -> Result<Option<options::LocalOptions>, VolumeError> {
    let read_error = |source| VolumeError::ReadOptions {
        name: name.to_owned(),
        source,
    };
    let text = match fs_err::read_to_string(options_path(root, name)) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(read_error(error)),
    };
    let map: BTreeMap<String, String> = serde_json::from_str(&text)
        .map_err(|error| read_error(std::io::Error::new(std::io::ErrorKind::InvalidData, error)))?;
    Ok(options::LocalOptions::from_map(&map)
        .ok()
        .flatten()
        .filter(options::LocalOptions::needs_mount))
}

/// A JSON object column as Docker shows it: `null` when empty.
fn null_when_empty(text: &str) -> Value {
    let value: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    if value.as_object().is_some_and(|map| map.is_empty()) {
        Value::Null
    } else {
        value
    }
}

/// Docker's `Volume` JSON.
pub fn volume_json(engine: &Engine, row: &VolumeRow) -> Value {
    let labels = null_when_empty(&row.labels);
    json!({
        "CreatedAt": row.created,
        "Driver": row.driver,
        "Labels": labels,
        "Mountpoint": volume_data(engine.root(), &row.name),
        "Name": row.name,
        "Options": null_when_empty(&row.options),
        "Scope": "local",
    })
}

/// A volume of `driver` ("" is `local`): dockerd looks the driver up among
/// its plugins and answers 404 when none has the name.
pub fn check_driver(name: &str, driver: &str) -> Result<(), EngineError> {
    if matches!(driver, "" | "local") {
        return Ok(());
    }
    Err(VolumeError::NoSuchDriver {
        name: name.to_owned(),
        driver: driver.to_owned(),
    }
    .into())
}

pub fn find_volume(engine: &Engine, name: &str) -> Result<VolumeRow, EngineError> {
    engine
        .store()
        .volume(name)?
        .ok_or_else(|| VolumeError::NotFound(name.to_owned()).into())
}

/// Ids of containers whose mounts use the volume.
pub fn volume_users(engine: &Engine, name: &str) -> Result<Vec<String>, EngineError> {
    let mut users = Vec::new();
    for row in engine.store().containers()? {
        let Ok(record) =
            serde_json::from_str::<crate::containers::record::ContainerRecord>(&row.record)
        else {
            continue;
        };
        let uses = record
            .run
            .mounts
            .iter()
            .any(|mount| matches!(&mount.source, crate::containers::record::MountSource::Volume { name: used } if used == name));
        if uses {
            users.push(row.id);
        }
    }
    Ok(users)
}

pub fn remove_volume(engine: &Engine, name: &str, force: bool) -> Result<(), EngineError> {
    let row = match engine.store().volume(name)? {
        Some(row) => row,
        None if force => return Ok(()),
        None => return Err(VolumeError::NotFound(name.to_owned()).into()),
    };
    let users = volume_users(engine, &row.name)?;
    if !users.is_empty() {
        return Err(VolumeError::InUse {
            name: row.name,
            containers: users,
        }
        .into());
    }
    // A mount a killed monitor left is undone first; one still in use (a
    // `cp` of a stopped container) refuses. Never remove through a mount:
    // `_data` may be a bind of the user's own directory.
    let config = engine.config();
    let uses = mounts::VolumeUses::new(&config.root, &config.run_root, &row.name);
    let holders = uses.repair(&mounts::HostMounter);
    if !holders.is_empty() || berth_runtime::rootfs::is_mounted(&uses.data) {
        return Err(VolumeError::InUse {
            name: row.name,
            containers: holders,
        }
        .into());
    }
    uses.remove();
    let directory = engine.root().join("volumes").join(&row.name);
    if let Err(source) = fs_err::remove_dir_all(&directory) {
        if source.kind() != std::io::ErrorKind::NotFound {
            return Err(VolumeError::Remove {
                path: directory,
                source,
            }
            .into());
        }
    }
    engine.store().delete_volume(&row.name)?;
    crate::events::emit_volume(engine.store(), "destroy", &row.name);
    Ok(())
}

/// `volume prune`: unused anonymous volumes (with `all`, named ones too),
/// as Docker 23+. Returns the names and bytes freed.
pub fn prune_volumes(engine: &Engine, all: bool) -> Result<(Vec<String>, u64), EngineError> {
    let mut removed = Vec::new();
    let mut reclaimed = 0;
    for row in engine.store().volumes()? {
        if (!row.anonymous && !all) || !volume_users(engine, &row.name)?.is_empty() {
            continue;
        }
        reclaimed += directory_size(&volume_data(engine.root(), &row.name));
        remove_volume(engine, &row.name, false)?;
        removed.push(row.name);
    }
    Ok((removed, reclaimed))
}

fn directory_size(path: &Path) -> u64 {
    let Ok(entries) = fs_err::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => directory_size(&entry.path()),
            Ok(_) => entry.metadata().map_or(0, |metadata| metadata.len()),
            Err(_) => 0,
        })
        .sum()
}

/// Docker copies the image's content at the mount point into a volume the
/// first time an empty volume is mounted there.
pub fn populate_from_image(data: &Path, image_path: &Path) -> Result<(), EngineError> {
    let empty = fs_err::read_dir(data)
        .map(|mut entries| entries.next().is_none())
        .unwrap_or(false);
    if !empty || !image_path.is_dir() {
        return Ok(());
    }
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", image_path.display()))
        .arg(data)
        .status()
        .map_err(VolumeError::RunCopy)?;
    if !status.success() {
        return Err(VolumeError::Populate {
            image_path: image_path.to_owned(),
        }
        .into());
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ErrorChain;

    #[test]
    fn volume_errors_keep_dockers_words_and_kinds() {
        let missing = EngineError::from(VolumeError::NotFound("data".to_owned()));
        assert_eq!(missing.to_string(), "get data: no such volume");
        assert!(missing.is_not_found());
        let in_use = VolumeError::InUse {
            name: "data".to_owned(),
            containers: vec!["abc".to_owned(), "def".to_owned()],
        };
        assert_eq!(
            in_use.to_string(),
            "remove data: volume is in use - [abc, def]"
        );
        assert_eq!(in_use.kind(), ErrorKind::Conflict);
        let invalid = validate_name("a b").unwrap_err();
        assert_eq!(invalid.kind(), ErrorKind::InvalidArgument);
        assert!(invalid
            .to_string()
            .starts_with("create a b: \"a b\" includes invalid characters for a local volume name, only \"[a-zA-Z0-9][a-zA-Z0-9_.-]\" are allowed."));
        let remove = VolumeError::Remove {
            path: PathBuf::from("/v/data"),
            source: std::io::Error::from_raw_os_error(libc::EBUSY),
        };
        assert_eq!(remove.kind(), ErrorKind::Internal);
        assert_eq!(
            ErrorChain(&remove).to_string(),
            "failed to remove \"/v/data\": Device or resource busy (os error 16)"
        );
    }
}
