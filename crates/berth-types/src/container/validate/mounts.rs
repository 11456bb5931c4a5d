//! `Binds`, `Mounts`, `Tmpfs` and `VolumesFrom` as the daemon reads them (moby
//! `volume/mounts/linux_parser.go`), minus the checks that touch the host (bind
//! sources must exist; the engine checks that when it mounts).

use super::{MountProblem, ValidationError};
use crate::container::host_config::HostConfig;
use crate::container::mount::{
    Mount, PROPAGATIONS, TYPE_BIND, TYPE_TMPFS, TYPE_VIRTIOFS, TYPE_VOLUME,
};
use crate::container::names::is_restricted_name;

/// One `Binds` entry, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindSpec {
    /// `bind` when the source is an absolute path, else `volume`.
    pub mount_type: &'static str,
    /// Host path, volume name, or empty for an anonymous volume.
    pub source: String,
    pub target: String,
    /// The options as given (`ro,z`), empty when none.
    pub mode: String,
    pub read_only: bool,
    pub propagation: Option<String>,
    /// `nocopy`: do not copy the image's files into a new volume.
    pub no_copy: bool,
}

const CONSISTENCY_MODES: &[&str] = &["consistent", "cached", "delegated"];

/// Docker's mount options: at most one each of `rw|ro`, `z|Z`, a propagation,
/// `nocopy` and a consistency; nothing else.
fn valid_mode(mode: &str) -> bool {
    if mode.is_empty() {
        return true;
    }
    let mut counts = [0_u32; 5];
    for option in mode.split(',') {
        let category = match option {
            "rw" | "ro" => 0,
            "z" | "Z" => 1,
            _ if PROPAGATIONS.contains(&option) => 2,
            "nocopy" => 3,
            _ if CONSISTENCY_MODES.contains(&option) => 4,
            _ => return false,
        };
        counts[category] += 1;
    }
    counts.iter().all(|count| *count <= 1)
}

/// Reads `target`, `source:target` or `source:target:mode` (moby `ParseMountRaw`).
pub fn parse_bind(raw: &str) -> Result<BindSpec, ValidationError> {
    let invalid = || ValidationError::VolumeSpecification(raw.to_owned());
    if raw.matches(':').count() > 2 {
        return Err(invalid());
    }
    let parts: Vec<&str> = raw.splitn(3, ':').collect();
    let (source, target, mode) = match parts.as_slice() {
        [""] | ["", ..] => return Err(invalid()),
        [target] => ("", *target, ""),
        [_, second] if valid_mode(second) => return Err(invalid()),
        [source, target] => (*source, *target, ""),
        [source, target, mode] => (*source, *target, *mode),
        _ => return Err(invalid()),
    };
    if !valid_mode(mode) {
        return Err(ValidationError::VolumeMode(mode.to_owned()));
    }
    let options: Vec<&str> = mode.split(',').collect();
    let spec = BindSpec {
        mount_type: if source.starts_with('/') {
            TYPE_BIND
        } else {
            TYPE_VOLUME
        },
        source: source.to_owned(),
        target: target.to_owned(),
        mode: mode.to_owned(),
        read_only: options.contains(&"ro"),
        propagation: options
            .iter()
            .find(|option| PROPAGATIONS.contains(option))
            .map(|option| (*option).to_owned()),
        no_copy: options.contains(&"nocopy"),
    };
    let mount = Mount {
        r#type: spec.mount_type.to_owned(),
        source: spec.source.clone(),
        target: spec.target.clone(),
        read_only: spec.read_only,
        bind_options: spec.propagation.as_ref().map(|propagation| {
            crate::container::mount::BindOptions {
                propagation: propagation.clone(),
                ..Default::default()
            }
        }),
        volume_options: spec
            .no_copy
            .then(|| crate::container::mount::VolumeOptions {
                no_copy: true,
                ..Default::default()
            }),
        ..Default::default()
    };
    validate_mount(&mount).map_err(|reason| ValidationError::VolumeSpecificationMount {
        spec: raw.to_owned(),
        reason: Box::new(reason),
    })?;
    Ok(spec)
}

/// One `Mounts` entry (moby `validateMountConfigImpl`, without the bind source
/// existence check).
pub(super) fn validate_mount(mount: &Mount) -> Result<(), ValidationError> {
    let problem = |reason| ValidationError::MountConfig {
        mount_type: mount.r#type.clone(),
        reason,
    };
    if mount.target.is_empty() {
        return Err(problem(MountProblem::MissingField("Target")));
    }
    if is_root(&mount.target) {
        return Err(problem(MountProblem::TargetIsRoot));
    }
    if !mount.target.replace('\\', "/").starts_with('/') {
        return Err(problem(MountProblem::NotAbsolute(mount.target.clone())));
    }
    match mount.r#type.as_str() {
        // A virtiofs mount is a bind that a VM container's guest gets over
        // virtio-fs (the engine refuses it for namespace containers).
        TYPE_BIND | TYPE_VIRTIOFS => {
            if mount.source.is_empty() {
                return Err(problem(MountProblem::MissingField("Source")));
            }
            if let Some(options) = &mount.bind_options {
                let propagation = &options.propagation;
                if !propagation.is_empty() && !PROPAGATIONS.contains(&propagation.as_str()) {
                    return Err(problem(MountProblem::Propagation(propagation.clone())));
                }
            }
            if mount.volume_options.is_some() {
                return Err(problem(MountProblem::ExtraField("VolumeOptions")));
            }
            if !mount.source.replace('\\', "/").starts_with('/') {
                return Err(problem(MountProblem::NotAbsolute(mount.source.clone())));
            }
        }
        TYPE_VOLUME => {
            if mount.bind_options.is_some() {
                return Err(problem(MountProblem::ExtraField("BindOptions")));
            }
            if mount.source.is_empty() && mount.read_only {
                return Err(problem(MountProblem::ReadOnlyAnonymousVolume));
            }
        }
        TYPE_TMPFS => {
            if mount.bind_options.is_some() {
                return Err(problem(MountProblem::ExtraField("BindOptions")));
            }
            if !mount.source.is_empty() {
                return Err(problem(MountProblem::ExtraField("Source")));
            }
        }
        _ => return Err(problem(MountProblem::UnknownType)),
    }
    Ok(())
}

/// `/`, `//`, `/./` and the like.
fn is_root(path: &str) -> bool {
    let path = path.replace('\\', "/");
    path.starts_with('/') && path.split('/').all(|part| part.is_empty() || part == ".")
}

/// Parses every bind, then checks the names of the local volumes that binds and
/// mounts would create.
pub(super) fn validate_binds(host: &HostConfig) -> Result<(), ValidationError> {
    let binds = host
        .binds
        .iter()
        .flatten()
        .map(|raw| parse_bind(raw))
        .collect::<Result<Vec<_>, _>>()?;
    let local = |driver: &str| driver.is_empty() || driver == "local";
    for bind in &binds {
        if bind.mount_type == TYPE_VOLUME && !bind.source.is_empty() && local(&host.volume_driver) {
            validate_volume_name(&bind.source)?;
        }
    }
    for mount in host.mounts.iter().flatten() {
        let driver = mount
            .volume_options
            .as_ref()
            .and_then(|options| options.driver_config.as_ref())
            .map_or("", |driver| driver.name.as_str());
        if mount.r#type == TYPE_VOLUME && !mount.source.is_empty() && local(driver) {
            validate_volume_name(&mount.source)?;
        }
    }
    Ok(())
}

/// A name the local volume driver accepts.
pub fn validate_volume_name(name: &str) -> Result<(), ValidationError> {
    if name.chars().count() == 1 {
        return Err(ValidationError::VolumeNameTooShort(name.to_owned()));
    }
    if !is_restricted_name(name) {
        return Err(ValidationError::VolumeName(name.to_owned()));
    }
    Ok(())
}

pub(super) fn validate_tmpfs_target(target: &str) -> Result<(), ValidationError> {
    if is_root(target) {
        return Err(ValidationError::TmpfsTargetIsRoot);
    }
    if !target.replace('\\', "/").starts_with('/') {
        return Err(ValidationError::TmpfsTargetNotAbsolute(target.to_owned()));
    }
    Ok(())
}

/// `container[:mode]` where the mode may only say `ro` or `rw` (and labels).
pub(super) fn validate_volumes_from(spec: &str) -> Result<(), ValidationError> {
    if spec.is_empty() {
        return Err(ValidationError::VolumesFromEmpty);
    }
    if let Some((_, mode)) = spec.split_once(':') {
        let options: Vec<&str> = mode.split(',').collect();
        let forbidden = options
            .iter()
            .any(|option| PROPAGATIONS.contains(option) || *option == "nocopy");
        if !valid_mode(mode) || forbidden {
            return Err(ValidationError::VolumeMode(mode.to_owned()));
        }
    }
    Ok(())
}
