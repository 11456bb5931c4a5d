//! `mounts`: the standard file systems berth-runtime always makes (`/proc`, `/dev`,
//! `/dev/pts`, `/dev/shm`, `/dev/mqueue`, `/sys`, `/sys/fs/cgroup`) recognised by their
//! destination and type, and the rest (binds and tmpfs) as user mounts, applied in order
//! after them. Anything else is refused with the entry's index.

use std::path::{Path, PathBuf};

use berth_runtime::{MountKind, MountSpec};

use crate::config::Mount;
use crate::error::{OciError, Result};

#[derive(Debug, Default)]
pub(super) struct Mounts {
    pub user: Vec<MountSpec>,
    /// A cgroup file system at /sys/fs/cgroup was asked for.
    pub cgroup: bool,
    /// With `ro`.
    pub cgroup_readonly: bool,
    pub sysfs_readonly: bool,
    /// The size of a tmpfs at /dev/shm, when there is one.
    pub shm_size: Option<u64>,
    /// /dev/shm is a bind mount (Docker's and the CRI's shared /dev/shm).
    pub shm_bound: bool,
}

/// The standard mounts: destination, type, whether a config must have it, and the options
/// that describe what berth-runtime makes there (others are refused).
const STANDARD: &[(&str, &[&str], bool, &[&str])] = &[
    ("/proc", &["proc"], true, &["nosuid", "noexec", "nodev"]),
    (
        "/dev",
        &["tmpfs"],
        true,
        &["nosuid", "strictatime", "mode=755", "size=65536k"],
    ),
    (
        "/dev/pts",
        &["devpts"],
        true,
        &[
            "nosuid",
            "noexec",
            "newinstance",
            "ptmxmode=0666",
            "mode=0620",
            "mode=620",
            "gid=5",
        ],
    ),
    (
        "/dev/mqueue",
        &["mqueue"],
        true,
        &["nosuid", "noexec", "nodev"],
    ),
    (
        "/sys",
        &["sysfs"],
        true,
        &["nosuid", "noexec", "nodev", "ro", "rw"],
    ),
    (
        "/sys/fs/cgroup",
        &["cgroup", "cgroup2"],
        false,
        &["nosuid", "noexec", "nodev", "relatime", "ro", "rw"],
    ),
];

/// Options that change nothing berth does for a bind or tmpfs (the defaults, and
/// propagation that is already berth's: every container mount is private).
const DEFAULT_OPTIONS: &[&str] = &["rw", "suid", "dev", "exec", "private", "rprivate", "async"];

pub(super) fn convert(mounts: &[Mount], bundle: &Path) -> Result<Mounts> {
    let mut result = Mounts::default();
    let mut seen_standard = Vec::new();
    for (index, entry) in mounts.iter().enumerate() {
        let field = |what: &str| format!("mounts[{index}]{what}");
        if !entry.uid_mappings.is_empty() || !entry.gid_mappings.is_empty() {
            return Err(OciError::unsupported(
                field(".uidMappings"),
                "idmapped mounts are not supported by berth yet",
            ));
        }
        let destination = clean_destination(&entry.destination).ok_or_else(|| {
            OciError::invalid(
                field(".destination"),
                format!("{:?} is not an absolute path", entry.destination),
            )
        })?;
        let kind = entry.kind.as_deref().unwrap_or("");
        let is_bind = kind == "bind"
            || entry
                .options
                .iter()
                .any(|option| option == "bind" || option == "rbind");
        if let Some((_, _, _, allowed)) = STANDARD
            .iter()
            .find(|(path, types, _, _)| *path == destination && types.contains(&kind))
        {
            for option in &entry.options {
                if !allowed.contains(&option.as_str()) {
                    return Err(OciError::unsupported(
                        field(".options"),
                        format!("option {option:?} of the standard {kind} mount at {destination} is not supported by berth"),
                    ));
                }
            }
            match destination.as_str() {
                "/sys" => result.sysfs_readonly = entry.options.iter().any(|option| option == "ro"),
                "/sys/fs/cgroup" => {
                    result.cgroup = true;
                    result.cgroup_readonly = entry.options.iter().any(|option| option == "ro");
                }
                _ => {}
            }
            seen_standard.push(destination);
            continue;
        }
        if destination == "/dev/shm" && kind == "tmpfs" {
            let tmpfs = tmpfs_options(&entry.options, &field(".options"))?;
            result.shm_size = Some(tmpfs.size.unwrap_or(64 << 20));
            continue;
        }
        if is_bind {
            let source = entry
                .source
                .as_deref()
                .filter(|source| !source.is_empty())
                .ok_or_else(|| {
                    OciError::invalid(field(".source"), "a bind mount needs a source")
                })?;
            let source = if source.starts_with('/') {
                PathBuf::from(source)
            } else {
                bundle.join(source)
            };
            let mut spec = MountSpec {
                kind: MountKind::Bind {
                    source,
                    recursive: entry.options.iter().any(|option| option == "rbind"),
                },
                destination: PathBuf::from(&destination),
                readonly: false,
                nosuid: false,
                nodev: false,
                noexec: false,
            };
            for option in &entry.options {
                match option.as_str() {
                    "bind" | "rbind" => {}
                    "ro" => spec.readonly = true,
                    "nosuid" => spec.nosuid = true,
                    "nodev" => spec.nodev = true,
                    "noexec" => spec.noexec = true,
                    other if DEFAULT_OPTIONS.contains(&other) => {}
                    other => {
                        return Err(OciError::unsupported(
                            field(".options"),
                            format!("bind mount option {other:?} is not supported by berth"),
                        ))
                    }
                }
            }
            if destination == "/dev/shm" {
                result.shm_bound = true;
            }
            result.user.push(spec);
            continue;
        }
        if kind == "tmpfs" {
            let tmpfs = tmpfs_options(&entry.options, &field(".options"))?;
            result.user.push(MountSpec {
                kind: MountKind::Tmpfs {
                    size: tmpfs.size,
                    mode: tmpfs.mode,
                },
                destination: PathBuf::from(&destination),
                readonly: tmpfs.readonly,
                nosuid: tmpfs.nosuid,
                nodev: tmpfs.nodev,
                noexec: tmpfs.noexec,
            });
            continue;
        }
        return Err(OciError::unsupported(
            field(".type"),
            format!("a {kind:?} mount at {destination} is not supported by berth (binds, tmpfs and the standard file systems are)"),
        ));
    }
    for (path, types, required, _) in STANDARD {
        if *required && !seen_standard.iter().any(|seen| seen == path) {
            return Err(OciError::unsupported(
                "mounts",
                format!("berth always mounts {} at {path}; a config without that mount is not supported", types[0]),
            ));
        }
    }
    Ok(result)
}

/// `/a/./b/` → `/a/b`; `None` unless absolute and free of `..`.
fn clean_destination(destination: &str) -> Option<String> {
    if !destination.starts_with('/') {
        return None;
    }
    let mut parts = Vec::new();
    for part in destination.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            part => parts.push(part),
        }
    }
    Some(format!("/{}", parts.join("/")))
}

#[derive(Debug, Default)]
struct Tmpfs {
    size: Option<u64>,
    mode: Option<u32>,
    readonly: bool,
    nosuid: bool,
    nodev: bool,
    noexec: bool,
}

fn tmpfs_options(options: &[String], field: &str) -> Result<Tmpfs> {
    let mut tmpfs = Tmpfs::default();
    for option in options {
        if let Some(size) = option.strip_prefix("size=") {
            tmpfs.size =
                Some(parse_size(size).ok_or_else(|| {
                    OciError::invalid(field, format!("invalid tmpfs size {size:?}"))
                })?);
            continue;
        }
        if let Some(mode) = option.strip_prefix("mode=") {
            tmpfs.mode =
                Some(u32::from_str_radix(mode, 8).map_err(|_| {
                    OciError::invalid(field, format!("invalid tmpfs mode {mode:?}"))
                })?);
            continue;
        }
        match option.as_str() {
            "ro" => tmpfs.readonly = true,
            "nosuid" => tmpfs.nosuid = true,
            "nodev" => tmpfs.nodev = true,
            "noexec" => tmpfs.noexec = true,
            // tmpfs keeps its times in memory; berth mounts it with the kernel's default
            // (relatime), which is what these ask for or a difference no program sees.
            "relatime" | "strictatime" | "noatime" => {}
            other if DEFAULT_OPTIONS.contains(&other) => {}
            other => {
                return Err(OciError::unsupported(
                    field,
                    format!("tmpfs option {other:?} is not supported by berth"),
                ))
            }
        }
    }
    Ok(tmpfs)
}

/// `65536k`, `64m`, `1g` or bytes, as tmpfs takes them.
fn parse_size(text: &str) -> Option<u64> {
    let (digits, unit) = match text.char_indices().last()? {
        (at, 'k' | 'K') => (&text[..at], 1u64 << 10),
        (at, 'm' | 'M') => (&text[..at], 1 << 20),
        (at, 'g' | 'G') => (&text[..at], 1 << 30),
        _ => (text, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mount(destination: &str, kind: &str, source: &str, options: &[&str]) -> Mount {
        Mount {
            destination: destination.to_owned(),
            kind: Some(kind.to_owned()),
            source: Some(source.to_owned()),
            options: options.iter().map(|option| (*option).to_owned()).collect(),
            ..Mount::default()
        }
    }

    fn standard() -> Vec<Mount> {
        vec![
            mount("/proc", "proc", "proc", &[]),
            mount(
                "/dev",
                "tmpfs",
                "tmpfs",
                &["nosuid", "strictatime", "mode=755", "size=65536k"],
            ),
            mount(
                "/dev/pts",
                "devpts",
                "devpts",
                &[
                    "nosuid",
                    "noexec",
                    "newinstance",
                    "ptmxmode=0666",
                    "mode=0620",
                    "gid=5",
                ],
            ),
            mount(
                "/dev/shm",
                "tmpfs",
                "shm",
                &["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"],
            ),
            mount(
                "/dev/mqueue",
                "mqueue",
                "mqueue",
                &["nosuid", "noexec", "nodev"],
            ),
            mount(
                "/sys",
                "sysfs",
                "sysfs",
                &["nosuid", "noexec", "nodev", "ro"],
            ),
        ]
    }

    #[test]
    fn standard_mounts_are_recognised() {
        let mounts = convert(&standard(), Path::new("/b")).unwrap();
        assert!(mounts.user.is_empty());
        assert_eq!(mounts.shm_size, Some(64 << 20));
        assert!(mounts.sysfs_readonly);
        assert!(!mounts.cgroup);
    }

    #[test]
    fn binds_and_tmpfs_become_user_mounts_in_order() {
        let mut list = standard();
        list.push(mount("/data", "bind", "data", &["rbind", "ro"]));
        list.push(mount(
            "/run",
            "tmpfs",
            "tmpfs",
            &["nosuid", "strictatime", "mode=755", "size=65536k"],
        ));
        let mounts = convert(&list, Path::new("/b")).unwrap();
        assert_eq!(mounts.user.len(), 2);
        assert_eq!(
            mounts.user[0].kind,
            MountKind::Bind {
                source: PathBuf::from("/b/data"),
                recursive: true
            }
        );
        assert!(mounts.user[0].readonly);
        assert_eq!(
            mounts.user[1].kind,
            MountKind::Tmpfs {
                size: Some(64 << 20),
                mode: Some(0o755)
            }
        );
        assert!(mounts.user[1].nosuid);
    }

    #[test]
    fn what_berth_cannot_do_is_refused_by_index() {
        let mut list = standard();
        list.push(mount("/x", "overlay", "overlay", &[]));
        let error = convert(&list, Path::new("/b")).unwrap_err().to_string();
        assert!(error.starts_with("mounts[6].type:"), "{error}");
        let mut list = standard();
        list.push(mount("/x", "bind", "/tmp", &["rshared"]));
        let error = convert(&list, Path::new("/b")).unwrap_err().to_string();
        assert!(error.contains("\"rshared\""), "{error}");
        let error = convert(&standard()[1..], Path::new("/b"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("/proc"), "{error}");
        let mut list = standard();
        list.push(mount("relative", "tmpfs", "tmpfs", &[]));
        assert!(convert(&list, Path::new("/b")).is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("65536k"), Some(64 << 20));
        assert_eq!(parse_size("1g"), Some(1 << 30));
        assert_eq!(parse_size("100"), Some(100));
        assert_eq!(parse_size("x"), None);
    }
}
