//! `RUN --mount=…`: what a RUN step sees besides its root, never in its
//! layer.
//!
//! - `type=cache` (`id`, `target`, `sharing=shared|locked`, `uid`, `gid`,
//!   `mode`): a directory under `ROOT/build-mounts/cache/` that persists
//!   between builds, bound read-write (`locked`: one RUN at a time, by a
//!   lock file beside it).
//! - `type=tmpfs` (`target`, `size`): a tmpfs of the step's container.
//! - `type=secret` (`id`, `target`, `required`): the `--secret` file, bound
//!   read-only at `target` (default `/run/secrets/ID`); absent and not
//!   required: nothing is mounted.
//! - `type=bind` (`source`, `target`, `ro`): a file or directory of the
//!   context, read-only.
//!
//! Refused by name: `type=ssh`, `bind` with `from=` or `rw`, `cache` with
//! `from`/`source` or `sharing=private`, `secret` with `env=`.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use super::root_path::{clean, resolve};
use crate::BuildError;

/// One parsed `--mount`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunMount {
    Cache {
        id: String,
        target: String,
        locked: bool,
        owner: (u32, u32),
        mode: u32,
    },
    Tmpfs {
        target: String,
        size: Option<String>,
    },
    Secret {
        id: String,
        target: String,
        required: bool,
    },
    Bind {
        source: String,
        target: String,
    },
}

impl RunMount {
    pub fn target(&self) -> &str {
        match self {
            RunMount::Cache { target, .. }
            | RunMount::Tmpfs { target, .. }
            | RunMount::Secret { target, .. }
            | RunMount::Bind { target, .. } => target,
        }
    }
}

fn unsupported(what: &str) -> BuildError {
    BuildError::Unsupported(format!(
        "RUN --mount {what} is not supported by berth's builder yet"
    ))
}

/// Parses one `--mount` value (BuildKit's CSV form).
pub fn parse_mount(value: &str, working_dir: &str) -> Result<RunMount, BuildError> {
    let mut fields: BTreeMap<String, String> = BTreeMap::new();
    for field in value
        .split(',')
        .map(str::trim)
        .filter(|field| !field.is_empty())
    {
        let (key, value) = match field.split_once('=') {
            Some((key, value)) => (key.to_ascii_lowercase(), value.to_owned()),
            None => (field.to_ascii_lowercase(), "true".to_owned()),
        };
        let key = match key.as_str() {
            "dst" | "destination" => "target".to_owned(),
            "src" => "source".to_owned(),
            "readonly" => "ro".to_owned(),
            _ => key,
        };
        fields.insert(key, value);
    }
    let kind = fields.remove("type").unwrap_or_else(|| "bind".to_owned());
    let absolute = |target: &str| {
        let joined = if target.starts_with('/') {
            target.to_owned()
        } else {
            format!("{working_dir}/{target}")
        };
        let parts = clean(&joined);
        let path: PathBuf = std::iter::once(std::ffi::OsString::from("/"))
            .chain(parts)
            .collect();
        path.to_string_lossy().into_owned()
    };
    let take_target = |fields: &mut BTreeMap<String, String>| {
        fields
            .remove("target")
            .filter(|target| !target.is_empty())
            .map(|target| absolute(&target))
            .ok_or_else(|| BuildError::Invalid(format!("mount type={kind} requires a target")))
    };
    let mount = match kind.as_str() {
        "cache" => {
            let target = take_target(&mut fields)?;
            let locked = match fields.remove("sharing").as_deref() {
                None | Some("shared") => false,
                Some("locked") => true,
                Some("private") => return Err(unsupported("type=cache,sharing=private")),
                Some(other) => {
                    return Err(BuildError::Invalid(format!("unrecognized sharing {other}")))
                }
            };
            let number =
                |fields: &mut BTreeMap<String, String>, name: &str, radix: u32, default: u32| {
                    fields
                        .remove(name)
                        .map(|text| {
                            u32::from_str_radix(&text, radix).map_err(|_| {
                                BuildError::Invalid(format!("invalid {name} in --mount: {text}"))
                            })
                        })
                        .transpose()
                        .map(|value| value.unwrap_or(default))
                };
            let uid = number(&mut fields, "uid", 10, 0)?;
            let gid = number(&mut fields, "gid", 10, 0)?;
            let mode = number(&mut fields, "mode", 8, 0o755)?;
            let id = fields.remove("id").unwrap_or_else(|| target.clone());
            RunMount::Cache {
                id,
                target,
                locked,
                owner: (uid, gid),
                mode,
            }
        }
        "tmpfs" => RunMount::Tmpfs {
            target: take_target(&mut fields)?,
            size: fields.remove("size"),
        },
        "secret" => {
            let id = fields.remove("id").unwrap_or_default();
            let target = match fields.remove("target") {
                Some(target) => absolute(&target),
                None if !id.is_empty() => format!("/run/secrets/{id}"),
                None => {
                    return Err(BuildError::Invalid(
                        "mount type=secret requires an id or a target".to_owned(),
                    ))
                }
            };
            let id = if id.is_empty() {
                target.rsplit('/').next().unwrap_or_default().to_owned()
            } else {
                id
            };
            let required = fields
                .remove("required")
                .is_some_and(|value| value == "true" || value.is_empty());
            RunMount::Secret {
                id,
                target,
                required,
            }
        }
        "bind" => {
            if fields.contains_key("from") {
                return Err(unsupported("type=bind,from="));
            }
            if fields.remove("rw").is_some_and(|value| value != "false")
                || fields
                    .remove("readwrite")
                    .is_some_and(|value| value != "false")
            {
                return Err(unsupported("type=bind,rw"));
            }
            fields.remove("ro");
            RunMount::Bind {
                source: fields.remove("source").unwrap_or_else(|| ".".to_owned()),
                target: take_target(&mut fields)?,
            }
        }
        "ssh" => return Err(unsupported("type=ssh")),
        other => {
            return Err(BuildError::Invalid(format!(
                "unsupported mount type {other:?}"
            )))
        }
    };
    if let Some(key) = fields.keys().next() {
        return Err(unsupported(&format!("type={kind} with {key}=")));
    }
    Ok(mount)
}

/// What the step's container gets for its mounts.
#[derive(Default)]
pub struct PreparedMounts {
    /// `source:target[:ro]`.
    pub binds: Vec<String>,
    pub tmpfs: BTreeMap<String, String>,
    /// Lock files held for `sharing=locked` caches while the step runs.
    pub locks: Vec<nix::fcntl::Flock<std::fs::File>>,
}

/// The host side of `mounts`: cache directories made, secrets found, the
/// context's bind sources resolved inside the context.
pub fn prepare(
    mounts: &[RunMount],
    root: &Path,
    context: &Path,
    secrets: &BTreeMap<String, PathBuf>,
) -> Result<PreparedMounts, BuildError> {
    let mut prepared = PreparedMounts::default();
    for mount in mounts {
        match mount {
            RunMount::Cache {
                id,
                target,
                locked,
                owner,
                mode,
            } => {
                let directory = cache_directory(root, id);
                if !directory.exists() {
                    fs_err::create_dir_all(&directory).map_err(BuildError::Layer)?;
                    nix::unistd::chown(
                        &directory,
                        Some(nix::unistd::Uid::from_raw(owner.0)),
                        Some(nix::unistd::Gid::from_raw(owner.1)),
                    )
                    .map_err(|error| BuildError::Layer(error.into()))?;
                    fs_err::set_permissions(&directory, std::fs::Permissions::from_mode(*mode))
                        .map_err(BuildError::Layer)?;
                }
                if *locked {
                    let file = fs_err::File::create(directory.with_extension("lock"))
                        .map_err(BuildError::Layer)?
                        .into_parts()
                        .0;
                    let lock = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
                        .map_err(|(_, error)| BuildError::Layer(error.into()))?;
                    prepared.locks.push(lock);
                }
                prepared
                    .binds
                    .push(format!("{}:{target}", directory.display()));
            }
            RunMount::Tmpfs { target, size } => {
                let options = size
                    .as_ref()
                    .map(|size| format!("size={size}"))
                    .unwrap_or_default();
                prepared.tmpfs.insert(target.clone(), options);
            }
            RunMount::Secret {
                id,
                target,
                required,
            } => match secrets.get(id) {
                Some(path) => prepared
                    .binds
                    .push(format!("{}:{target}:ro", path.display())),
                None if *required => {
                    return Err(BuildError::Invalid(format!(
                        "secret {id} not found: give it with --secret id={id},src=FILE"
                    )))
                }
                None => {}
            },
            RunMount::Bind { source, target } => {
                let host =
                    resolve(context, source, true).map_err(|source_error| BuildError::Context {
                        path: context.join(source),
                        source: source_error,
                    })?;
                if fs_err::symlink_metadata(&host).is_err() {
                    return Err(BuildError::Invalid(format!(
                        "failed to compute cache key: \"/{}\": not found",
                        source.trim_start_matches('/')
                    )));
                }
                prepared
                    .binds
                    .push(format!("{}:{target}:ro", host.display()));
            }
        }
    }
    Ok(prepared)
}

/// A cache id's directory (hashed: ids are free text).
fn cache_directory(root: &Path, id: &str) -> PathBuf {
    let digest = hex::encode(Sha256::digest(id.as_bytes()));
    root.join("build-mounts").join("cache").join(digest)
}

/// Removes from a step's writable layer the mount points its container
/// made for `mounts` (an empty file or directory where the image had
/// none), and their parents left empty, so that no mount shows in the
/// layer.
pub fn remove_mount_points(upper: &Path, mounts: &[RunMount]) {
    for mount in mounts {
        let mut path = upper.join(mount.target().trim_start_matches('/'));
        while path.starts_with(upper) && path != upper {
            let empty = match fs_err::symlink_metadata(&path) {
                Ok(metadata) if metadata.is_dir() => fs_err::read_dir(&path)
                    .map(|mut entries| entries.next().is_none())
                    .unwrap_or(false),
                Ok(metadata) if metadata.is_file() => metadata.len() == 0,
                _ => false,
            };
            if !empty {
                break;
            }
            let removed = if path.is_dir() {
                fs_err::remove_dir(&path)
            } else {
                fs_err::remove_file(&path)
            };
            if removed.is_err() {
                break;
            }
            match path.parent() {
                Some(parent) => path = parent.to_path_buf(),
                None => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn mounts_parse_as_buildkit_spells_them() {
        assert_eq!(
            parse_mount(
                "type=cache,target=/root/.cache,sharing=locked,uid=1,mode=0700",
                "/"
            )
            .unwrap(),
            RunMount::Cache {
                id: "/root/.cache".to_owned(),
                target: "/root/.cache".to_owned(),
                locked: true,
                owner: (1, 0),
                mode: 0o700,
            }
        );
        assert_eq!(
            parse_mount("type=tmpfs,dst=scratch,size=64m", "/work").unwrap(),
            RunMount::Tmpfs {
                target: "/work/scratch".to_owned(),
                size: Some("64m".to_owned()),
            }
        );
        assert_eq!(
            parse_mount("type=secret,id=token", "/").unwrap(),
            RunMount::Secret {
                id: "token".to_owned(),
                target: "/run/secrets/token".to_owned(),
                required: false,
            }
        );
        assert_eq!(
            parse_mount("target=/src", "/").unwrap(),
            RunMount::Bind {
                source: ".".to_owned(),
                target: "/src".to_owned(),
            }
        );
        for (bad, words) in [
            ("type=ssh", "type=ssh"),
            ("type=bind,from=build,target=/x", "from="),
            ("type=bind,target=/x,rw", "rw"),
            ("type=cache,target=/c,sharing=private", "sharing=private"),
            ("type=cache,target=/c,from=x", "from="),
            ("type=cache", "requires a target"),
            ("type=volume,target=/v", "unsupported mount type"),
        ] {
            let error = parse_mount(bad, "/").unwrap_err().to_string();
            assert!(error.contains(words), "{bad}: {error}");
        }
    }

    #[test]
    fn mount_points_leave_the_layer_but_real_content_stays() {
        let directory = tempfile::tempdir().unwrap();
        let upper = directory.path();
        fs_err::create_dir_all(upper.join("run/secrets")).unwrap();
        fs_err::write(upper.join("run/secrets/token"), "").unwrap();
        fs_err::create_dir_all(upper.join("root/.cache")).unwrap();
        fs_err::write(upper.join("root/made-by-run"), "x").unwrap();
        let mounts = [
            parse_mount("type=secret,id=token", "/").unwrap(),
            parse_mount("type=cache,target=/root/.cache", "/").unwrap(),
        ];
        remove_mount_points(upper, &mounts);
        assert!(!upper.join("run").exists());
        assert!(!upper.join("root/.cache").exists());
        assert!(upper.join("root/made-by-run").exists());
    }
}
