//! The volumes and bind mounts of a container that is not running, as a
//! `cp` sees them. Docker mounts them over the container's root for the
//! copy (moby `daemon/archive.go` → `mountVolumes`), so a file copied to
//! `/vol` of a created container lands in its volume, not in the layer
//! under it, and a file a stopped container wrote to its volume can be read.
//!
//! berth mounts them in a mount namespace of the copying thread alone
//! (unshare(2) `CLONE_NEWNS` on one thread, as moby 25's `containerFSView`
//! does): the host never sees them, and they go with that namespace when
//! the thread returns to its own (setns(2)) — nothing to unmount, and
//! nothing left if the process is killed mid-copy.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use nix::fcntl::OFlag;
use nix::mount::MsFlags;
use nix::sched::CloneFlags;
use nix::sys::stat::Mode;

use super::changes::ChangesError;
use super::record::{ContainerRecord, MountRequest, MountSource, RunSettings};
use crate::copy::CopyError;

/// The copying thread in a mount namespace of its own; back in the one it
/// came from (and its working directory) when dropped.
pub(crate) struct PrivateMounts {
    original: OwnedFd,
    working_directory: OwnedFd,
}

impl PrivateMounts {
    /// Moves this thread into a copy of its mount namespace where nothing
    /// mounted propagates back.
    pub(crate) fn enter() -> Result<Self, ChangesError> {
        let open = |path: &str, flags: OFlag| {
            nix::fcntl::open(path, flags | OFlag::O_CLOEXEC, Mode::empty())
                .map(owned)
                .map_err(ChangesError::PrivateNamespace)
        };
        let original = open("/proc/thread-self/ns/mnt", OFlag::O_RDONLY)?;
        let working_directory = open(".", OFlag::O_PATH | OFlag::O_DIRECTORY)?;
        // CLONE_NEWNS also gives the thread its own root and working
        // directory (CLONE_FS), which setns(2) needs on the way back.
        nix::sched::unshare(CloneFlags::CLONE_NEWNS).map_err(ChangesError::PrivateNamespace)?;
        let entered = Self {
            original,
            working_directory,
        };
        // The copy shares the host's peer groups until made private: a bind
        // mounted on the container root would show on the host too.
        nix::mount::mount(
            None::<&str>,
            "/",
            None::<&str>,
            MsFlags::MS_REC | MsFlags::MS_PRIVATE,
            None::<&str>,
        )
        .map_err(ChangesError::PrivateNamespace)?;
        Ok(entered)
    }
}

impl Drop for PrivateMounts {
    fn drop(&mut self) {
        if let Err(error) = nix::sched::setns(self.original.as_fd(), CloneFlags::CLONE_NEWNS) {
            // A thread left here would serve later requests a stale, private
            // view of the host's mounts and keep the copy's mounts alive.
            tracing::error!(%error, "failed to leave the mount namespace of a copy");
            std::process::abort();
        }
        // setns(2) moved the working directory to the namespace's root.
        if let Err(error) =
            nix::unistd::fchdir(std::os::fd::AsRawFd::as_raw_fd(&self.working_directory))
        {
            tracing::warn!(%error, "failed to return to the working directory after a copy");
        }
    }
}

fn owned(fd: std::os::fd::RawFd) -> OwnedFd {
    // SAFETY: `fd` was just returned by a successful open(2); nothing else
    // owns it, so the OwnedFd closes it exactly once.
    unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) }
}

/// Whether a copy of `record` needs its mounts over the root (a tmpfs has
/// no content while the container is not running: Docker shows the layer).
pub(crate) fn has_copy_mounts(run: &RunSettings) -> bool {
    run.mounts.iter().any(is_copy_mount)
}

fn is_copy_mount(mount: &MountRequest) -> bool {
    !matches!(mount.source, MountSource::Tmpfs { .. })
}

/// Mounts `record`'s volumes and binds over `root` (parents before what is
/// mounted inside them), creating their mount points as a start would.
/// Call inside [`PrivateMounts`].
pub(crate) fn mount_copy_mounts(
    root: &Path,
    engine_root: &Path,
    record: &ContainerRecord,
) -> Result<(), ChangesError> {
    let mut mounts: Vec<&MountRequest> = record
        .run
        .mounts
        .iter()
        .filter(|mount| is_copy_mount(mount))
        .collect();
    // moby's `sortMounts`: by the number of components of the destination.
    mounts.sort_by_key(|mount| Path::new(&mount.destination).components().count());
    for mount in mounts {
        let (source, recursive) = match &mount.source {
            MountSource::Bind {
                host_path,
                recursive,
            } => (PathBuf::from(host_path), *recursive),
            MountSource::Volume { name } => (crate::volumes::volume_data(engine_root, name), true),
            MountSource::Tmpfs { .. } => continue,
        };
        let failed = |source_path: &Path| {
            let source_path = source_path.to_owned();
            let destination = mount.destination.clone();
            move |source| ChangesError::MountVolume {
                source_path,
                destination,
                source,
            }
        };
        let is_file = fs_err::metadata(&source)
            .map_err(failed(&source))?
            .file_type()
            .is_file();
        let target = berth_runtime::in_root::create_mount_point(
            root,
            Path::new(&mount.destination),
            is_file,
        )
        .map_err(failed(&source))?;
        let mut flags = MsFlags::MS_BIND;
        if recursive {
            flags |= MsFlags::MS_REC;
        }
        nix::mount::mount(Some(&source), &target, None::<&str>, flags, None::<&str>)
            .map_err(|errno| failed(&source)(errno.into()))?;
        if mount.readonly {
            nix::mount::mount(
                None::<&str>,
                &target,
                None::<&str>,
                flags | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY,
                None::<&str>,
            )
            .map_err(|errno| failed(&source)(errno.into()))?;
        }
    }
    Ok(())
}

/// moby's `checkIfPathIsInAVolume` and `ErrRootFSReadOnly`: a copy into a
/// read-only mount, or into the root of a `--read-only` container outside
/// its mounts, is refused before anything is written.
pub fn check_copy_destination(run: &RunSettings, path: &str) -> Result<(), CopyError> {
    let path = lexical_absolute(path);
    let mount = run
        .mounts
        .iter()
        .filter(|mount| path.starts_with(lexical_absolute(&mount.destination)))
        .max_by_key(|mount| Path::new(&mount.destination).components().count());
    match mount {
        Some(mount) if mount.readonly => Err(CopyError::VolumeReadOnly),
        Some(_) => Ok(()),
        None if run.readonly_rootfs => Err(CopyError::RootfsReadOnly),
        None => Ok(()),
    }
}

/// `path` as an absolute path with `.` and `..` resolved by name.
fn lexical_absolute(path: &str) -> PathBuf {
    let mut clean = PathBuf::from("/");
    for component in Path::new(path).components() {
        match component {
            Component::Normal(name) => clean.push(name),
            Component::ParentDir => {
                clean.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    clean
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mount(destination: &str, readonly: bool, source: MountSource) -> MountRequest {
        MountRequest {
            source,
            destination: destination.to_owned(),
            readonly,
        }
    }

    fn volume(name: &str) -> MountSource {
        MountSource::Volume {
            name: name.to_owned(),
        }
    }

    fn record(mounts: Vec<MountRequest>, readonly_rootfs: bool) -> RunSettings {
        RunSettings {
            mounts,
            readonly_rootfs,
            ..RunSettings::default()
        }
    }

    #[test]
    fn copies_into_read_only_places_are_refused_with_dockers_words() {
        let mounts = vec![
            mount("/data", false, volume("a")),
            mount("/data/ro", true, volume("b")),
            mount(
                "/conf",
                true,
                MountSource::Bind {
                    host_path: "/etc".into(),
                    recursive: true,
                },
            ),
        ];
        let writable_root = record(mounts.clone(), false);
        assert!(check_copy_destination(&writable_root, "/").is_ok());
        assert!(check_copy_destination(&writable_root, "/data/x").is_ok());
        assert!(check_copy_destination(&writable_root, "/data/rox").is_ok());
        for path in [
            "/conf",
            "/conf/",
            "conf/a",
            "/data/ro/..//ro/x",
            "/x/../conf",
        ] {
            let error = check_copy_destination(&writable_root, path).unwrap_err();
            assert_eq!(
                error.to_string(),
                "mounted volume is marked read-only",
                "{path}"
            );
        }
        let read_only_root = record(mounts, true);
        assert!(check_copy_destination(&read_only_root, "/data").is_ok());
        let error = check_copy_destination(&read_only_root, "/tmp").unwrap_err();
        assert_eq!(error.to_string(), "container rootfs is marked read-only");
        assert_eq!(error.kind(), crate::ErrorKind::Forbidden);
    }

    #[test]
    fn tmpfs_mounts_are_left_out_of_a_copy() {
        let tmpfs = MountSource::Tmpfs {
            size: None,
            mode: None,
            exec: false,
            mount_point: false,
        };
        assert!(!has_copy_mounts(&record(
            vec![mount("/run", false, tmpfs.clone())],
            false
        )));
        assert!(has_copy_mounts(&record(
            vec![mount("/run", false, tmpfs), mount("/v", false, volume("v"))],
            false
        )));
    }
}
