//! The container's files in the guest: its root share mounted at
//! [`GUEST_ROOT_DIR`] with `/proc`, `/sys` and a `/dev` of its own, and the
//! further shares mounted inside it, read-only where asked. Made at the first
//! `Run` that names them and kept for the next ones (`exec` runs in the same
//! root): one VM serves one container.
//!
//! Every mount point is resolved inside the root (`openat2(RESOLVE_IN_ROOT)`,
//! berth-runtime's `in_root`) and made there if missing, as Docker does, so
//! an image's symlink (`/proc -> /`, `/data -> ../../berth`) cannot put a
//! mount over the agent's own files. The VM is the boundary; this is the
//! defence in depth the namespace runtime has too.
//!
//! The process then runs `chroot`ed into the root ([`super::exec`]); the
//! agent stays PID 1 outside it. A mount namespace and `pivot_root` per
//! container process come with the namespace runtime's settings (caps,
//! seccomp, user) applied inside the guest: `pivot_root` cannot leave the
//! initramfs's rootfs, which needs the agent to move its own root first.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use fs_err as fs;
use nix::mount::{mount, MsFlags};
use nix::sys::stat::{makedev, mknod, Mode, SFlag};

use crate::protocol::{GuestMount, GuestRoot, RunRequest, GUEST_ROOT_DIR};

#[derive(Debug, thiserror::Error)]
pub enum RootError {
    #[error("failed to mount {what} on {target:?}")]
    Mount {
        what: String,
        target: PathBuf,
        #[source]
        source: nix::Error,
    },
    #[error("failed to make {path:?} inside the container root")]
    MakePath {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("mount point {path:?} resolves outside the container root")]
    Outside { path: PathBuf },
    #[error("mount target {target:?} is not an absolute path")]
    RelativeTarget { target: String },
    #[error("the guest's root is share {mounted:?} already; a run asked for {asked:?}")]
    OtherRoot { mounted: String, asked: String },
    #[error("{target:?} holds share {mounted:?} already; a run asked for {asked:?}")]
    OtherMount {
        target: String,
        mounted: String,
        asked: String,
    },
    #[error("the guest's root was staged or mounted already")]
    Staged,
    #[error("only a root share with a subdir is staged before its claim")]
    StageWithoutSubdir,
    #[error("failed to create {path:?}")]
    Create {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl RootError {
    fn other_root(mounted: &GuestRoot, asked: &GuestRoot) -> RootError {
        let name = |root: &GuestRoot| match &root.subdir {
            Some(subdir) => format!("{}:{subdir}", root.tag),
            None => root.tag.clone(),
        };
        RootError::OtherRoot {
            mounted: name(mounted),
            asked: name(asked),
        }
    }
}

/// Whether two roots are the same directory of the same share (read-only
/// or not: the first run's mount stays).
fn same_root(one: &GuestRoot, other: &GuestRoot) -> bool {
    one.tag == other.tag && one.subdir == other.subdir
}

/// What is mounted so far.
#[derive(Debug, Default)]
pub(super) struct Filesystems {
    root: Option<GuestRoot>,
    /// A warm member's root share, mounted before its claim ([`Self::stage`]).
    staged: Option<GuestRoot>,
    mounts: Vec<GuestMount>,
}

impl Filesystems {
    /// Before a warm member's claim: mounts `root`'s share (whose `subdir`
    /// the claimed container's root appears on later, and is not looked at
    /// before) and the `/proc`, `/sys` and `/dev` every container root gets,
    /// in a staging directory. The claim's `Run` then binds the subdir and
    /// moves them in, instead of paying for the share's first mount and for
    /// those under TCG while the claim waits. Nothing of a container is
    /// here yet: the member is as pristine as before.
    pub(super) fn stage(&mut self, root: &GuestRoot) -> Result<(), RootError> {
        if self.root.is_some() || self.staged.is_some() {
            return Err(RootError::Staged);
        }
        if root.subdir.is_none() {
            return Err(RootError::StageWithoutSubdir);
        }
        mount_share(root, Path::new(SHARE_DIR))?;
        let stage = Path::new(STAGE_DIR);
        let targets = KernelTargets {
            proc: stage.join("proc"),
            sys: stage.join("sys"),
            dev: stage.join("dev"),
        };
        for dir in [&targets.proc, &targets.sys, &targets.dev] {
            create_dir(dir)?;
        }
        mount_kernel_filesystems(&targets)?;
        self.staged = Some(root.clone());
        Ok(())
    }

    /// Mounts what `request` names and is not mounted yet; the directory the
    /// process is to be `chroot`ed into, or `None` for the initramfs.
    pub(super) fn prepare(&mut self, request: &RunRequest) -> Result<Option<PathBuf>, RootError> {
        let root = match (&request.root, &self.root) {
            (None, _) => None,
            (Some(asked), Some(mounted)) if !same_root(asked, mounted) => {
                return Err(RootError::other_root(mounted, asked))
            }
            (Some(_), Some(_)) => Some(PathBuf::from(GUEST_ROOT_DIR)),
            (Some(asked), None) => {
                let dir = PathBuf::from(GUEST_ROOT_DIR);
                match &self.staged {
                    Some(staged) if same_root(staged, asked) => receive_staged_root(asked, &dir)?,
                    Some(staged) => return Err(RootError::other_root(staged, asked)),
                    None => mount_root(asked, &dir)?,
                }
                self.root = Some(asked.clone());
                Some(dir)
            }
        };
        let base = root.clone().unwrap_or_else(|| PathBuf::from("/"));
        // Parents before what they hold: /data before /data/cache.
        let mut wanted: Vec<&GuestMount> = request.mounts.iter().collect();
        wanted.sort_by_key(|mount| Path::new(&mount.target).components().count());
        for asked in wanted {
            if !asked.target.starts_with('/') {
                return Err(RootError::RelativeTarget {
                    target: asked.target.clone(),
                });
            }
            if let Some(mounted) = self
                .mounts
                .iter()
                .find(|mounted| mounted.target == asked.target)
            {
                if mounted.tag != asked.tag {
                    return Err(RootError::OtherMount {
                        target: asked.target.clone(),
                        mounted: mounted.tag.clone(),
                        asked: asked.tag.clone(),
                    });
                }
                continue;
            }
            let target = in_root(&base, Path::new(&asked.target))?;
            let mut flags = MsFlags::empty();
            if asked.read_only {
                flags |= MsFlags::MS_RDONLY;
            }
            do_mount(&asked.tag, &target, "virtiofs", flags, None)?;
            self.mounts.push(asked.clone());
        }
        Ok(root)
    }
}

/// Where a root share with a `subdir` is mounted.
const SHARE_DIR: &str = "/mnt/share";

/// Where a warm member's `/proc`, `/sys` and `/dev` wait for its claim.
const STAGE_DIR: &str = "/mnt/stage";

/// The root share at `dir`, then what every container has inside it.
fn mount_root(root: &GuestRoot, dir: &Path) -> Result<(), RootError> {
    create_dir(dir)?;
    match &root.subdir {
        None => do_mount(&root.tag, dir, "virtiofs", share_flags(root), None)?,
        Some(subdir) => {
            // The share at a place of its own, its directory bound here.
            let share = Path::new(SHARE_DIR);
            mount_share(root, share)?;
            bind_subdir(share, subdir, dir)?;
        }
    }
    mount_kernel_filesystems(&KernelTargets::inside(dir)?)
}

/// A claimed member's root: its share's subdir (mounted by
/// [`Filesystems::stage`]) bound at `dir`, read-only if asked, and the
/// staged filesystems moved into it.
fn receive_staged_root(root: &GuestRoot, dir: &Path) -> Result<(), RootError> {
    create_dir(dir)?;
    let subdir = root.subdir.as_deref().unwrap_or_default();
    bind_subdir(Path::new(SHARE_DIR), subdir, dir)?;
    if root.read_only {
        do_mount(
            "",
            dir,
            "",
            MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY,
            None,
        )?;
    }
    let stage = Path::new(STAGE_DIR);
    let targets = KernelTargets::inside(dir)?;
    for (name, target) in [
        ("proc", &targets.proc),
        ("sys", &targets.sys),
        ("dev", &targets.dev),
    ] {
        // The whole tree moves: /dev's pts, shm and mqueue with it.
        do_mount(
            stage.join(name).to_str().unwrap_or_default(),
            target,
            "",
            MsFlags::MS_MOVE,
            None,
        )?;
    }
    Ok(())
}

fn share_flags(root: &GuestRoot) -> MsFlags {
    if root.read_only {
        MsFlags::MS_RDONLY
    } else {
        MsFlags::empty()
    }
}

fn mount_share(root: &GuestRoot, share: &Path) -> Result<(), RootError> {
    create_dir(share)?;
    do_mount(&root.tag, share, "virtiofs", share_flags(root), None)
}

/// The share's `subdir`, resolved inside it, bound at `dir`.
fn bind_subdir(share: &Path, subdir: &str, dir: &Path) -> Result<(), RootError> {
    let source = in_root(share, Path::new("/").join(subdir).as_path())?;
    do_mount(
        source.to_str().unwrap_or_default(),
        dir,
        "",
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None,
    )
}

/// Where a container root's `/proc`, `/sys` and `/dev` are mounted.
struct KernelTargets {
    proc: PathBuf,
    sys: PathBuf,
    dev: PathBuf,
}

impl KernelTargets {
    /// Inside the root at `dir`, resolved there (and made if missing).
    fn inside(dir: &Path) -> Result<KernelTargets, RootError> {
        Ok(KernelTargets {
            proc: in_root(dir, Path::new("/proc"))?,
            sys: in_root(dir, Path::new("/sys"))?,
            dev: in_root(dir, Path::new("/dev"))?,
        })
    }
}

/// The `/proc`, `/sys` and `/dev` every container has.
fn mount_kernel_filesystems(targets: &KernelTargets) -> Result<(), RootError> {
    let hardened = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    do_mount("proc", &targets.proc, "proc", hardened, None)?;
    // Read-only, as Docker mounts it for a container that is not privileged.
    do_mount(
        "sysfs",
        &targets.sys,
        "sysfs",
        hardened | MsFlags::MS_RDONLY,
        None,
    )?;
    // A /dev of the container's own, not the guest's devtmpfs: that one holds
    // the agent's port to the host and the guest's disks and memory.
    let dev = &targets.dev;
    do_mount(
        "tmpfs",
        dev,
        "tmpfs",
        MsFlags::MS_NOSUID | MsFlags::MS_STRICTATIME,
        Some("mode=755,size=65536k"),
    )?;
    populate_dev(dev)?;
    let pts = dev.join("pts");
    create_dir(&pts)?;
    do_mount(
        "devpts",
        &pts,
        "devpts",
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("newinstance,ptmxmode=0666,mode=0620,gid=5"),
    )?;
    let shm = dev.join("shm");
    create_dir(&shm)?;
    do_mount(
        "shm",
        &shm,
        "tmpfs",
        hardened,
        Some("mode=1777,size=65536k"),
    )?;
    let mqueue = dev.join("mqueue");
    create_dir(&mqueue)?;
    do_mount("mqueue", &mqueue, "mqueue", hardened, None)
}

/// Docker's default device nodes (all 0666) and links: the namespace
/// runtime's own list (`berth_runtime::devices`).
fn populate_dev(dev: &Path) -> Result<(), RootError> {
    use berth_runtime::devices::{DEFAULT_LINKS, DEFAULT_NODES};
    for (name, major, minor) in DEFAULT_NODES {
        let path = dev.join(name);
        let make_error = |source: nix::Error| RootError::Create {
            path: path.clone(),
            source: source.into(),
        };
        mknod(
            &path,
            SFlag::S_IFCHR,
            Mode::from_bits_truncate(0o666),
            makedev(*major, *minor),
        )
        .map_err(make_error)?;
        // mknod applies the umask; the nodes are 0666 regardless.
        fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).map_err(|source| {
            RootError::Create {
                path: path.clone(),
                source,
            }
        })?;
    }
    for (name, target) in DEFAULT_LINKS {
        let path = dev.join(name);
        fs::os::unix::fs::symlink(target, &path)
            .map_err(|source| RootError::Create { path, source })?;
    }
    Ok(())
}

fn create_dir(path: &Path) -> Result<(), RootError> {
    fs::create_dir_all(path).map_err(|source| RootError::Create {
        path: path.to_path_buf(),
        source,
    })
}

fn do_mount(
    source: &str,
    target: &Path,
    kind: &str,
    flags: MsFlags,
    data: Option<&str>,
) -> Result<(), RootError> {
    mount(Some(source), target, Some(kind), flags, data).map_err(|error| RootError::Mount {
        what: format!("{kind} {source}"),
        target: target.to_path_buf(),
        source: error,
    })
}

/// `path` inside `root` as a path in the agent's world, with every symlink
/// resolved inside the root, made (as directories) where missing.
pub(super) fn in_root(root: &Path, path: &Path) -> Result<PathBuf, RootError> {
    use berth_runtime::in_root::resolve_in_root;
    let relative = path.strip_prefix("/").unwrap_or(path);
    let resolved = match resolve_in_root(root, relative) {
        Ok(resolved) => resolved,
        Err(_) => {
            // One component at a time, each made in its resolved parent.
            let mut current = PathBuf::new();
            for component in relative.components() {
                current.push(component);
                if resolve_in_root(root, &current).is_ok() {
                    continue;
                }
                let parent = current.parent().unwrap_or(Path::new("."));
                let parent =
                    resolve_in_root(root, parent).map_err(|source| RootError::MakePath {
                        path: path.to_path_buf(),
                        source,
                    })?;
                let made = parent.join(component);
                match fs::create_dir(&made) {
                    Ok(()) => {}
                    Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(source) => {
                        return Err(RootError::MakePath {
                            path: path.to_path_buf(),
                            source,
                        })
                    }
                }
            }
            resolve_in_root(root, relative).map_err(|source| RootError::MakePath {
                path: path.to_path_buf(),
                source,
            })?
        }
    };
    // resolve_in_root reads /proc/self/fd: the real path, root included.
    let canonical_root = fs::canonicalize(root).map_err(|source| RootError::MakePath {
        path: root.to_path_buf(),
        source,
    })?;
    if !resolved.starts_with(&canonical_root) {
        return Err(RootError::Outside {
            path: path.to_path_buf(),
        });
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_stay_inside_the_root_and_are_made() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir(root.path().join("real")).unwrap();
        fs::os::unix::fs::symlink("/real", root.path().join("absolute")).unwrap();
        fs::os::unix::fs::symlink("../../../..", root.path().join("climbing")).unwrap();
        fs::os::unix::fs::symlink(outside.path(), root.path().join("away")).unwrap();
        let canonical = fs::canonicalize(root.path()).unwrap();

        assert_eq!(
            in_root(root.path(), Path::new("/absolute/data")).unwrap(),
            canonical.join("real/data")
        );
        assert!(canonical.join("real/data").is_dir());
        // `..` past the top stays at the top.
        assert_eq!(
            in_root(root.path(), Path::new("/climbing/proc")).unwrap(),
            canonical.join("proc")
        );
        // An absolute link to a host directory means that path in the root,
        // where it does not exist: refused, and nothing is made outside.
        match in_root(root.path(), Path::new("/away/x")) {
            Ok(away) => assert!(away.starts_with(&canonical), "{away:?}"),
            Err(error) => assert!(matches!(error, RootError::MakePath { .. }), "{error}"),
        }
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn relative_targets_are_refused() {
        let mut filesystems = Filesystems::default();
        let error = filesystems
            .prepare(&RunRequest {
                args: vec!["true".into()],
                env: vec![],
                cwd: "/".into(),
                root: None,
                mounts: vec![GuestMount {
                    tag: "data".into(),
                    target: "data".into(),
                    read_only: false,
                }],
                container: None,
                stdin: false,
                networks: vec![],
                embedded_dns: false,
            })
            .unwrap_err();
        assert!(matches!(error, RootError::RelativeTarget { .. }), "{error}");
    }
}
