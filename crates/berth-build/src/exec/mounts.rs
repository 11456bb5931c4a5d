//! `RUN --mount=…`: what a RUN step sees besides its root, never in its
//! layer.
//!
//! - `type=cache` (`id`, `target`, `sharing=shared|locked|private`, `uid`,
//!   `gid`, `mode`, `from`, `source`): a directory under
//!   `ROOT/build-mounts/cache/` that persists between builds, bound
//!   read-write. Each RUN holds a lock file beside it: `shared` a shared
//!   lock, `locked` an exclusive one (one RUN at a time), `private` an
//!   exclusive one taken without waiting, and when the directory is in use
//!   the next one of that id (`…-1`, `…-2`: BuildKit makes a new cache
//!   mount then). With `from` (a stage, a named context or an image) a new
//!   cache starts as a copy of its `source` (default its root), and is a
//!   cache of its own for each such base, as BuildKit keys it.
//! - `type=tmpfs` (`target`, `size`): a tmpfs of the step's container.
//! - `type=secret` (`id`, `target`, `required`): the `--secret` file, bound
//!   read-only at `target` (default `/run/secrets/ID`); absent and not
//!   required: nothing is mounted.
//! - `type=bind` (`source`, `target`, `from`, `rw`): a file or directory of
//!   the context, or of `from` (a stage, a named context or an image),
//!   read-only. With `rw` the RUN may write into it, but the writes are
//!   discarded (BuildKit's rule): the RUN gets a copy (under
//!   `ROOT/build-mounts/copies/`), removed after it.
//!
//! Refused by name: `type=ssh`, `cache` with `source` but no `from`,
//! `secret` with `env=`.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use super::root_path::{clean, resolve};
use crate::ignore::IgnoreMatcher;
use crate::BuildError;

/// One parsed `--mount`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunMount {
    Cache {
        id: String,
        target: String,
        sharing: Sharing,
        owner: (u32, u32),
        mode: u32,
        /// The base a new cache starts from, and the path in it.
        from: Option<String>,
        source: Option<String>,
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
        /// A stage, a named context or an image; None: the context.
        from: Option<String>,
        source: String,
        target: String,
        /// Writable, the writes discarded.
        rw: bool,
    },
}

/// `sharing=` of a cache mount.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharing {
    Shared,
    Locked,
    Private,
}

impl RunMount {
    /// What `from=` names, if anything.
    pub fn from(&self) -> Option<&str> {
        match self {
            RunMount::Cache { from, .. } | RunMount::Bind { from, .. } => from.as_deref(),
            RunMount::Tmpfs { .. } | RunMount::Secret { .. } => None,
        }
    }

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
            let sharing = match fields.remove("sharing").as_deref() {
                None | Some("shared") => Sharing::Shared,
                Some("locked") => Sharing::Locked,
                Some("private") => Sharing::Private,
                Some(other) => {
                    return Err(BuildError::Invalid(format!("unrecognized sharing {other}")))
                }
            };
            let from = fields.remove("from").filter(|from| !from.is_empty());
            let source = fields.remove("source");
            if source.is_some() && from.is_none() {
                return Err(unsupported("type=cache with source= but no from="));
            }
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
                sharing,
                owner: (uid, gid),
                mode,
                from,
                source,
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
            let rw = [fields.remove("rw"), fields.remove("readwrite")]
                .into_iter()
                .flatten()
                .any(|value| value != "false");
            let ro = fields.remove("ro").is_some_and(|value| value != "false");
            if rw && ro {
                return Err(BuildError::Invalid(
                    "mount type=bind cannot be both ro and rw".to_owned(),
                ));
            }
            RunMount::Bind {
                from: fields.remove("from").filter(|from| !from.is_empty()),
                source: fields.remove("source").unwrap_or_else(|| ".".to_owned()),
                target: take_target(&mut fields)?,
                rw,
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
    /// Lock files of the caches, held while the step runs.
    pub locks: Vec<nix::fcntl::Flock<std::fs::File>>,
    /// The copies `rw` binds get, removed with this.
    copies: Vec<PathBuf>,
}

impl Drop for PreparedMounts {
    fn drop(&mut self) {
        for copy in &self.copies {
            let removed = if copy.is_dir() {
                fs_err::remove_dir_all(copy)
            } else {
                fs_err::remove_file(copy)
            };
            if let Err(error) = removed {
                tracing::warn!(%error, "failed to remove a build mount's copy");
            }
        }
    }
}

/// The root a mount's `from=` names, on the host (a mounted image root or
/// a named context directory), and what names its content for a cache's
/// directory (an image id, a context's name).
pub struct MountSource {
    pub root: PathBuf,
    pub key: String,
    /// A named context's `.dockerignore`: what a bind of it must not show.
    pub ignore: Option<IgnoreMatcher>,
}

/// What a bind of a context directory shows: the context as the build
/// sees it, without what its `.dockerignore` leaves out.
struct Filter<'f> {
    ignore: &'f IgnoreMatcher,
    /// The bound path, relative to the context (`/`-separated, `.` for
    /// the context itself).
    relative: String,
}

impl Filter<'_> {
    fn child(&self, name: &std::ffi::OsStr) -> Self {
        let name = name.to_string_lossy();
        Self {
            ignore: self.ignore,
            relative: if self.relative == "." {
                name.into_owned()
            } else {
                format!("{}/{name}", self.relative)
            },
        }
    }

    fn excluded(&self) -> bool {
        self.ignore.is_excluded(&self.relative)
    }

    /// Whether anything at or below this path is left out.
    fn hides_something(&self, path: &Path) -> bool {
        if self.excluded() {
            return true;
        }
        let Ok(metadata) = fs_err::symlink_metadata(path) else {
            return false;
        };
        if !metadata.is_dir() {
            return false;
        }
        let Ok(entries) = fs_err::read_dir(path) else {
            return false;
        };
        entries.flatten().any(|entry| {
            self.child(&entry.file_name())
                .hides_something(&entry.path())
        })
    }
}

/// The host side of `mounts`: cache directories made (or seeded from
/// their `from`), secrets found, bind sources resolved inside their root
/// (`sources[i]` for a mount with `from=`, else the context).
pub fn prepare(
    mounts: &[RunMount],
    sources: &[Option<MountSource>],
    root: &Path,
    (context, context_ignore): (&Path, &IgnoreMatcher),
    secrets: &BTreeMap<String, PathBuf>,
) -> Result<PreparedMounts, BuildError> {
    let mut prepared = PreparedMounts::default();
    for (mount, from) in mounts.iter().zip(sources) {
        match mount {
            RunMount::Cache {
                id,
                target,
                sharing,
                owner,
                mode,
                source,
                ..
            } => {
                let name = match from {
                    Some(from) => {
                        format!("{id}\0{}\0{}", from.key, source.as_deref().unwrap_or("/"))
                    }
                    None => id.clone(),
                };
                let (directory, lock) = cache_for(root, &name, *sharing)?;
                prepared.locks.extend(lock);
                if !directory.exists() {
                    match from {
                        Some(from) => {
                            let seed = existing(&from.root, source.as_deref().unwrap_or("/"))?;
                            make_copy(root, &seed, Some(&directory))?;
                        }
                        None => new_cache(&directory, *owner, *mode)?,
                    }
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
            RunMount::Bind {
                source, target, rw, ..
            } => {
                let (base, ignore) = match from {
                    Some(from) => (from.root.as_path(), from.ignore.as_ref()),
                    None => (context, Some(context_ignore)),
                };
                let host = existing(base, source)?;
                // A context's ignored files are not in the build's view of
                // it: a bind that would show some gets a view without them
                // (hard links where it is read-only, a copy where not).
                // No ignore file: nothing to hide, no walk of the tree.
                let filter = ignore
                    .filter(|ignore| !ignore.is_empty())
                    .map(|ignore| Filter {
                        ignore,
                        relative: relative_to(base, &host),
                    });
                if let Some(filter) = filter.as_ref().filter(|filter| filter.excluded()) {
                    return Err(BuildError::Invalid(format!(
                        "failed to compute cache key: \"/{}\": not found",
                        filter.relative.trim_start_matches("./")
                    )));
                }
                let filter = filter.filter(|filter| filter.hides_something(&host));
                if *rw || filter.is_some() {
                    let link = !*rw;
                    let copy = make_view(root, &host, filter.as_ref(), link)?;
                    let mode = if *rw { "" } else { ":ro" };
                    prepared
                        .binds
                        .push(format!("{}:{target}{mode}", copy.display()));
                    prepared.copies.push(copy);
                } else {
                    prepared
                        .binds
                        .push(format!("{}:{target}:ro", host.display()));
                }
            }
        }
    }
    Ok(prepared)
}

/// `source` inside `base` (symlinks followed in it), which must exist.
fn existing(base: &Path, source: &str) -> Result<PathBuf, BuildError> {
    let host = resolve(base, source, true).map_err(|error| BuildError::Context {
        path: base.join(source),
        source: error,
    })?;
    if fs_err::symlink_metadata(&host).is_err() {
        return Err(BuildError::Invalid(format!(
            "failed to compute cache key: \"/{}\": not found",
            source.trim_start_matches('/')
        )));
    }
    Ok(host)
}

/// The directory of cache `name` this RUN uses, and the lock it holds on
/// it (see the module's documentation).
fn cache_for(
    root: &Path,
    name: &str,
    sharing: Sharing,
) -> Result<(PathBuf, Option<nix::fcntl::Flock<std::fs::File>>), BuildError> {
    use nix::fcntl::FlockArg;
    let base = cache_directory(root, name);
    fs_err::create_dir_all(base.parent().expect("a cache directory has a parent"))
        .map_err(BuildError::Layer)?;
    let lock = |directory: &Path, how: FlockArg| -> Result<_, BuildError> {
        let file = fs_err::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(directory.with_extension("lock"))
            .map_err(BuildError::Layer)?
            .into_parts()
            .0;
        Ok(nix::fcntl::Flock::lock(file, how).ok())
    };
    match sharing {
        // Shared: the lock only tells a private mount that it is in use.
        Sharing::Shared => Ok((base.clone(), lock(&base, FlockArg::LockSharedNonblock)?)),
        Sharing::Locked => {
            let held = lock(&base, FlockArg::LockExclusive)?;
            if held.is_none() {
                return Err(BuildError::Invalid(format!(
                    "failed to lock the cache mount {}",
                    base.display()
                )));
            }
            Ok((base, held))
        }
        Sharing::Private => {
            for number in 0usize.. {
                let directory = if number == 0 {
                    base.clone()
                } else {
                    base.with_file_name(format!(
                        "{}-{number}",
                        base.file_name()
                            .expect("a cache directory has a name")
                            .to_string_lossy()
                    ))
                };
                if let Some(held) = lock(&directory, FlockArg::LockExclusiveNonblock)? {
                    return Ok((directory, Some(held)));
                }
            }
            unreachable!("an unbounded search ends with a free directory")
        }
    }
}

fn new_cache(directory: &Path, owner: (u32, u32), mode: u32) -> Result<(), BuildError> {
    fs_err::create_dir_all(directory).map_err(BuildError::Layer)?;
    nix::unistd::chown(
        directory,
        Some(nix::unistd::Uid::from_raw(owner.0)),
        Some(nix::unistd::Gid::from_raw(owner.1)),
    )
    .map_err(|error| BuildError::Layer(error.into()))?;
    fs_err::set_permissions(directory, std::fs::Permissions::from_mode(mode))
        .map_err(BuildError::Layer)
}

/// `path` relative to `base` (which holds it), `/`-separated; `.` for
/// `base` itself.
fn relative_to(base: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(base).unwrap_or(path).to_string_lossy();
    let relative = relative.trim_matches('/');
    if relative.is_empty() {
        ".".to_owned()
    } else {
        relative.to_owned()
    }
}

/// A copy of `source` (a file or a tree, owners, modes and links kept) at
/// `at`, or at a new name under `ROOT/build-mounts/copies/`; made beside its place and
/// renamed there, so that a copy cut short is never taken for a whole one.
fn make_copy(root: &Path, source: &Path, at: Option<&Path>) -> Result<PathBuf, BuildError> {
    make_tree(root, source, at, &Tree::Copy)
}

/// A view of `source` under `ROOT/build-mounts/copies/` without what
/// `filter` leaves out: its files hard links to the originals when `link`
/// (a read-only bind; copies where the file system is another), else
/// copies.
fn make_view(
    root: &Path,
    source: &Path,
    filter: Option<&Filter<'_>>,
    link: bool,
) -> Result<PathBuf, BuildError> {
    let tree = match filter {
        Some(filter) => Tree::Filtered {
            relative: filter.relative.clone(),
            ignore: filter.ignore,
            link,
        },
        None => Tree::Copy,
    };
    make_tree(root, source, None, &tree)
}

/// How [`copy_tree`] makes a tree.
enum Tree<'f> {
    /// Every entry copied.
    Copy,
    /// What `ignore` does not exclude (paths relative to its context,
    /// `relative` for the tree's top), files linked when `link`.
    Filtered {
        relative: String,
        ignore: &'f IgnoreMatcher,
        link: bool,
    },
}

impl Tree<'_> {
    fn child(&self, name: &std::ffi::OsStr) -> Self {
        match self {
            Tree::Copy => Tree::Copy,
            Tree::Filtered {
                relative,
                ignore,
                link,
            } => {
                let filter = Filter {
                    ignore,
                    relative: relative.clone(),
                };
                Tree::Filtered {
                    relative: filter.child(name).relative,
                    ignore,
                    link: *link,
                }
            }
        }
    }

    fn excluded(&self) -> bool {
        match self {
            Tree::Copy => false,
            Tree::Filtered {
                relative, ignore, ..
            } => ignore.is_excluded(relative),
        }
    }

    fn links_files(&self) -> bool {
        matches!(self, Tree::Filtered { link: true, .. })
    }
}

fn make_tree(
    root: &Path,
    source: &Path,
    at: Option<&Path>,
    tree: &Tree<'_>,
) -> Result<PathBuf, BuildError> {
    static COPIES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let number = COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!("build-mount-{}-{number}", std::process::id());
    let (staging, destination) = match at {
        Some(at) => (at.with_file_name(format!(".{name}")), at.to_path_buf()),
        None => {
            // Not under the store's tmp/: a berth process that opens the
            // store while the RUN runs (a spawned monitor) may clear that.
            let copies = root.join("build-mounts").join("copies");
            fs_err::create_dir_all(&copies).map_err(BuildError::Layer)?;
            remove_dead_copies(&copies);
            (copies.join(format!(".{name}")), copies.join(name))
        }
    };
    let copied = copy_tree(source, &staging, tree)
        .and_then(|()| fs_err::rename(&staging, &destination).map_err(BuildError::Layer));
    if copied.is_err() {
        let _ = fs_err::remove_dir_all(&staging).or_else(|_| fs_err::remove_file(&staging));
        // Another RUN seeded the same cache first: its copy serves.
        if at.is_some_and(Path::exists) {
            return Ok(destination);
        }
    }
    copied.map(|()| destination)
}

/// Removes the copies (and half-made ones) of builders that are gone: a
/// build killed during a RUN leaves its `rw` copies, named by its pid.
fn remove_dead_copies(copies: &Path) {
    let Ok(entries) = fs_err::read_dir(copies) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name
            .trim_start_matches('.')
            .strip_prefix("build-mount-")
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<i32>().ok());
        let Some(pid) = pid.filter(|pid| *pid > 0) else {
            continue;
        };
        let gone = matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
            Err(nix::errno::Errno::ESRCH)
        );
        if gone {
            let path = entry.path();
            let _ = fs_err::remove_dir_all(&path).or_else(|_| fs_err::remove_file(&path));
        }
    }
}

/// Copies a file, link, special file or directory tree, with owners and
/// modes (hard links become separate files); what `tree` excludes below
/// the top is left out, and its files are linked where it says so.
fn copy_tree(source: &Path, destination: &Path, tree: &Tree<'_>) -> Result<(), BuildError> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt as _};
    let metadata = fs_err::symlink_metadata(source).map_err(BuildError::Layer)?;
    let kind = metadata.file_type();
    if kind.is_symlink() {
        let target = fs_err::read_link(source).map_err(BuildError::Layer)?;
        fs_err::os::unix::fs::symlink(&target, destination).map_err(BuildError::Layer)?;
    } else if kind.is_dir() {
        fs_err::create_dir(destination).map_err(BuildError::Layer)?;
        for entry in fs_err::read_dir(source).map_err(BuildError::Layer)? {
            let entry = entry.map_err(BuildError::Layer)?;
            let child = tree.child(&entry.file_name());
            if child.excluded() {
                continue;
            }
            copy_tree(&entry.path(), &destination.join(entry.file_name()), &child)?;
        }
    } else if kind.is_file() && tree.links_files() {
        // The original itself: its owner and mode are already right.
        match fs_err::hard_link(source, destination) {
            Ok(()) => return Ok(()),
            Err(error) if error.raw_os_error() == Some(libc::EXDEV) => {
                fs_err::copy(source, destination).map_err(BuildError::Layer)?;
            }
            Err(error) => return Err(BuildError::Layer(error)),
        }
    } else if kind.is_file() {
        fs_err::copy(source, destination).map_err(BuildError::Layer)?;
    } else {
        let mode = nix::sys::stat::Mode::from_bits_truncate(metadata.mode());
        let kind = nix::sys::stat::SFlag::from_bits_truncate(metadata.mode() & libc::S_IFMT);
        nix::sys::stat::mknod(destination, kind, mode, metadata.rdev()).map_err(|error| {
            BuildError::Context {
                path: destination.to_owned(),
                source: error.into(),
            }
        })?;
    }
    nix::unistd::fchownat(
        None,
        destination,
        Some(nix::unistd::Uid::from_raw(metadata.uid())),
        Some(nix::unistd::Gid::from_raw(metadata.gid())),
        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
    )
    .map_err(|error| BuildError::Context {
        path: destination.to_owned(),
        source: error.into(),
    })?;
    if !kind.is_symlink() {
        fs_err::set_permissions(
            destination,
            std::fs::Permissions::from_mode(metadata.permissions().mode() & 0o7777),
        )
        .map_err(BuildError::Layer)?;
    }
    Ok(())
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
                sharing: Sharing::Locked,
                owner: (1, 0),
                mode: 0o700,
                from: None,
                source: None,
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
                from: None,
                source: ".".to_owned(),
                target: "/src".to_owned(),
                rw: false,
            }
        );
        assert_eq!(
            parse_mount("type=bind,from=build,source=/out,target=in,rw", "/w").unwrap(),
            RunMount::Bind {
                from: Some("build".to_owned()),
                source: "/out".to_owned(),
                target: "/w/in".to_owned(),
                rw: true,
            }
        );
        assert_eq!(
            parse_mount(
                "type=cache,target=/c,sharing=private,from=base,source=/seed",
                "/"
            )
            .unwrap(),
            RunMount::Cache {
                id: "/c".to_owned(),
                target: "/c".to_owned(),
                sharing: Sharing::Private,
                owner: (0, 0),
                mode: 0o755,
                from: Some("base".to_owned()),
                source: Some("/seed".to_owned()),
            }
        );
        for (bad, words) in [
            ("type=ssh", "type=ssh"),
            ("type=bind,target=/x,rw,ro", "both ro and rw"),
            ("type=cache,target=/c,source=/x", "source= but no from="),
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
