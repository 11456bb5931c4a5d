//! The mount of a volume with driver options at its `_data`, shared by
//! every running container that uses it (see docs/ARCHITECTURE.md,
//! *Volumes with driver options*).
//!
//! berth has no daemon to keep Docker's in-memory count, so the count is
//! on disk: `<run-root>/volumes/<name>/users/<holder>` names each user (a
//! container, or a `cp`) and the process that holds the use (pid and start
//! time). Under the volume's lock (`…/lock`, flock(2)):
//! - the first use mounts, later ones only add their file;
//! - a release removes its file and, when no live holder is left, unmounts;
//! - a holder whose process is gone (a monitor killed with -9) counts as
//!   released: every use, release and [`repair`] drops such files first, so
//!   the next container start, `volume rm`, or the reconcile of the dead
//!   container's monitor undoes its mount.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};
use nix::mount::{MntFlags, MsFlags};

use super::options::{LocalOptions, MountPlan, PlanError};
use super::VolumeError;
use crate::containers::record::{MountSource, RunSettings};
use crate::containers::state::{process_alive, process_start_time};

/// The kernel edge: mount, unmount, and whether a path is a mount point.
pub trait VolumeMounter {
    fn mount(&self, plan: &MountPlan, target: &Path) -> Result<(), MountFailure>;
    fn unmount(&self, target: &Path) -> nix::Result<()>;
    fn is_mounted(&self, target: &Path) -> bool;
}

/// mount(2) and umount2(2) on this process's mount namespace.
pub struct HostMounter;

impl VolumeMounter for HostMounter {
    fn mount(&self, plan: &MountPlan, target: &Path) -> Result<(), MountFailure> {
        mount_plan(plan, target)
    }

    fn unmount(&self, target: &Path) -> nix::Result<()> {
        // Detached: a process on the host with its working directory there
        // must not keep the volume mounted after its last container.
        nix::mount::umount2(target, MntFlags::MNT_DETACH)
    }

    fn is_mounted(&self, target: &Path) -> bool {
        berth_runtime::rootfs::is_mounted(target)
    }
}

/// Mounts `plan` at `target` as moby's `mount.Mount`: the mount, a
/// read-only remount for a read-only bind, the propagation change.
pub fn mount_plan(plan: &MountPlan, target: &Path) -> Result<(), MountFailure> {
    let failure = |flags: MsFlags, data: &str, errno| MountFailure {
        device: plan.device.clone(),
        target: target.to_owned(),
        flags,
        data: data.to_owned(),
        password: plan.password.clone(),
        errno: GoErrno(errno),
    };
    let mount_type = (!plan.mount_type.is_empty()).then_some(plan.mount_type.as_str());
    let data = (!plan.data.is_empty()).then_some(plan.data.as_str());
    nix::mount::mount(
        Some(plan.device.as_str()),
        target,
        mount_type,
        plan.flags,
        data,
    )
    .map_err(|errno| failure(plan.flags, &plan.data, errno))?;
    let undo = |error| {
        let _ = nix::mount::umount2(target, MntFlags::MNT_DETACH);
        error
    };
    if plan.flags.contains(MsFlags::MS_BIND) && plan.flags.contains(MsFlags::MS_RDONLY) {
        let flags = plan.flags | MsFlags::MS_REMOUNT;
        nix::mount::mount(None::<&str>, target, None::<&str>, flags, data)
            .map_err(|errno| undo(failure(flags, &plan.data, errno)))?;
    }
    if !plan.propagation.is_empty() {
        nix::mount::mount(
            None::<&str>,
            target,
            None::<&str>,
            plan.propagation,
            None::<&str>,
        )
        .map_err(|errno| undo(failure(plan.propagation, "", errno)))?;
    }
    Ok(())
}

/// A failed mount(2), in moby's words: `failed to mount local volume:
/// mount DEVICE:TARGET, flags: 0x…, data: …: ERRNO` (a `password=` in the
/// data masked).
#[derive(Debug, thiserror::Error)]
#[error("failed to mount local volume: mount {device}:{}{}{}", target.display(), flags_text(*flags), data_text(data, password.as_deref()))]
pub struct MountFailure {
    device: String,
    target: PathBuf,
    flags: MsFlags,
    data: String,
    password: Option<String>,
    #[source]
    errno: GoErrno,
}

fn flags_text(flags: MsFlags) -> String {
    if flags.is_empty() {
        String::new()
    } else {
        format!(", flags: {:#x}", flags.bits())
    }
}

fn data_text(data: &str, password: Option<&str>) -> String {
    if data.is_empty() {
        return String::new();
    }
    match password {
        Some(password) => format!(
            ", data: {}",
            data.replacen(&format!("password={password}"), "password=********", 1)
        ),
        None => format!(", data: {data}"),
    }
}

/// An errno as Go's syscall package words it (Docker's messages end so):
/// strerror(3) with a lowercase first letter.
#[derive(Debug, thiserror::Error)]
#[error("{}", lowercase_first(self.0.desc()))]
pub struct GoErrno(pub nix::errno::Errno);

fn lowercase_first(text: &str) -> String {
    let mut characters = text.chars();
    match characters.next() {
        Some(first) => first.to_lowercase().chain(characters).collect(),
        None => String::new(),
    }
}

/// Why a use could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum UseError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Mount(#[from] MountFailure),
}

/// Where a volume's uses are counted.
#[derive(Clone, Debug)]
pub struct VolumeUses {
    /// `<root>/volumes/<name>/_data`
    pub data: PathBuf,
    /// `<run-root>/volumes/<name>`
    pub directory: PathBuf,
}

impl VolumeUses {
    pub fn new(root: &Path, run_root: &Path, name: &str) -> Self {
        Self {
            data: super::volume_data(root, name),
            directory: run_root.join("volumes").join(name),
        }
    }

    fn users(&self) -> PathBuf {
        self.directory.join("users")
    }

    fn lock(&self) -> Result<Flock<std::fs::File>, VolumeError> {
        let registry = |source| VolumeError::Registry {
            path: self.directory.clone(),
            source,
        };
        // Under the run root, which is private (0700) already.
        fs_err::create_dir_all(self.users()).map_err(registry)?;
        let file = fs_err::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.directory.join("lock"))
            .map_err(registry)?
            .into_file();
        Flock::lock(file, FlockArg::LockExclusive)
            .map_err(|(_, errno)| registry(std::io::Error::from(errno)))
    }

    /// Records `holder` as a user held by this process and mounts unless
    /// the volume is mounted already (by a live holder, or left by a dead
    /// one: the same options). A failed mount records nothing.
    pub fn take(
        &self,
        mounter: &dyn VolumeMounter,
        options: &LocalOptions,
        holder: &str,
        resolve: &dyn Fn(&str) -> std::io::Result<std::net::IpAddr>,
    ) -> Result<(), VolumeError> {
        let _lock = self.lock()?;
        self.drop_dead_holders();
        let holder_file = self.users().join(holder);
        let pid = std::process::id() as i32;
        let start_time = process_start_time(pid).unwrap_or(0);
        fs_err::write(&holder_file, format!("{pid} {start_time}\n")).map_err(|source| {
            VolumeError::Registry {
                path: holder_file.clone(),
                source,
            }
        })?;
        if !mounter.is_mounted(&self.data) {
            let mounted = options
                .plan(resolve)
                .map_err(UseError::from)
                .and_then(|plan| Ok(mounter.mount(&plan, &self.data)?));
            if let Err(source) = mounted {
                let _ = fs_err::remove_file(&holder_file);
                return Err(VolumeError::MountVolume {
                    path: self.data.clone(),
                    source: Box::new(source),
                });
            }
        }
        Ok(())
    }

    /// Ends `holder`'s use; the last live one's release unmounts.
    pub fn release(&self, mounter: &dyn VolumeMounter, holder: &str) {
        let Ok(_lock) = self.lock() else {
            return;
        };
        let _ = fs_err::remove_file(self.users().join(holder));
        self.unmount_unless_used(mounter);
    }

    /// Drops holders whose process is gone and unmounts when none is left;
    /// returns the live holders.
    pub fn repair(&self, mounter: &dyn VolumeMounter) -> Vec<String> {
        if !self.directory.exists() && !mounter.is_mounted(&self.data) {
            return Vec::new();
        }
        let Ok(_lock) = self.lock() else {
            return Vec::new();
        };
        self.unmount_unless_used(mounter)
    }

    /// Whether a holder's process is gone (read without the lock).
    fn has_dead_holders(&self) -> bool {
        fs_err::read_dir(self.users())
            .is_ok_and(|entries| entries.flatten().any(|entry| !holder_alive(&entry.path())))
    }

    /// Removes the volume's count (at `volume rm`, when nothing uses it).
    pub fn remove(&self) {
        let _ = fs_err::remove_dir_all(&self.directory);
    }

    fn unmount_unless_used(&self, mounter: &dyn VolumeMounter) -> Vec<String> {
        let live = self.drop_dead_holders();
        if live.is_empty() && mounter.is_mounted(&self.data) {
            if let Err(error) = mounter.unmount(&self.data) {
                tracing::warn!(%error, path = %self.data.display(), "failed to unmount a volume");
            }
        }
        live
    }

    /// Removes the files of holders whose process is gone; returns the rest.
    fn drop_dead_holders(&self) -> Vec<String> {
        let Ok(entries) = fs_err::read_dir(self.users()) else {
            return Vec::new();
        };
        let mut live = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let holder = entry.file_name().to_string_lossy().into_owned();
            if holder_alive(&path) {
                live.push(holder);
            } else {
                tracing::debug!(%holder, "dropping the volume use of a process that is gone");
                let _ = fs_err::remove_file(&path);
            }
        }
        live.sort();
        live
    }
}

/// The names of the volumes `run` mounts, each once.
fn volume_names(run: &RunSettings) -> BTreeSet<&str> {
    run.mounts
        .iter()
        .filter_map(|mount| match &mount.source {
            MountSource::Volume { name } => Some(name.as_str()),
            _ => None,
        })
        .collect()
}

/// A running container's (or a copy's) uses of its volumes with driver
/// options, each mounted at its `_data` meanwhile; released when dropped.
/// A holder killed before the drop is released by the next look (see the
/// module's comment).
pub struct HeldVolumes {
    holder: String,
    held: Vec<VolumeUses>,
}

impl HeldVolumes {
    /// Takes a use of each volume of `run` that has driver options, as
    /// `holder`; on a failure, releases those taken and says why.
    pub fn take(
        root: &Path,
        run_root: &Path,
        run: &RunSettings,
        holder: &str,
    ) -> Result<Self, VolumeError> {
        let mut held = Self {
            holder: holder.to_owned(),
            held: Vec::new(),
        };
        for name in volume_names(run) {
            let Some(options) = super::read_options(root, name)? else {
                continue;
            };
            let uses = VolumeUses::new(root, run_root, name);
            uses.take(
                &HostMounter,
                &options,
                holder,
                &super::options::resolve_host,
            )?;
            held.held.push(uses);
        }
        Ok(held)
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

impl Drop for HeldVolumes {
    fn drop(&mut self) {
        for uses in &self.held {
            uses.release(&HostMounter, &self.holder);
        }
    }
}

/// After a container's monitor died: its volumes' uses by processes that
/// are gone end, and a mount nobody uses any more is undone.
pub fn repair_volumes_of(root: &Path, run_root: &Path, run: &RunSettings) {
    for name in volume_names(run) {
        if matches!(super::read_options(root, name), Ok(Some(_))) {
            VolumeUses::new(root, run_root, name).repair(&HostMounter);
        }
    }
}

/// Every volume's uses by processes that are gone end, and mounts nobody
/// uses are undone (at each container start: a monitor killed with -9
/// leaves no mount behind for long, whichever container starts next).
/// Costs one failed open when no volume with options was ever used.
pub fn repair_all(root: &Path, run_root: &Path) {
    let Ok(entries) = fs_err::read_dir(run_root.join("volumes")) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let uses = VolumeUses::new(root, run_root, &name);
        if uses.has_dead_holders() {
            uses.repair(&HostMounter);
        }
    }
}

/// Whether the process a holder file names (`pid start-time`) still runs.
fn holder_alive(path: &Path) -> bool {
    let Ok(text) = fs_err::read_to_string(path) else {
        return false;
    };
    let mut fields = text.split_whitespace().map(str::parse::<u64>);
    match (fields.next(), fields.next()) {
        (Some(Ok(pid)), Some(Ok(start_time))) => {
            i32::try_from(pid).is_ok_and(|pid| process_alive(pid, start_time))
        }
        _ => false,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    /// Records mounts and unmounts; `fail` makes mount(2) fail with ENOENT.
    #[derive(Default)]
    struct RecordingMounter {
        mounted: RefCell<BTreeSet<PathBuf>>,
        calls: RefCell<Vec<String>>,
        fail: bool,
    }

    impl VolumeMounter for RecordingMounter {
        fn mount(&self, plan: &MountPlan, target: &Path) -> Result<(), MountFailure> {
            self.calls
                .borrow_mut()
                .push(format!("mount {}", plan.device));
            if self.fail {
                return Err(MountFailure {
                    device: plan.device.clone(),
                    target: target.to_owned(),
                    flags: plan.flags,
                    data: plan.data.clone(),
                    password: plan.password.clone(),
                    errno: GoErrno(nix::errno::Errno::ENOENT),
                });
            }
            self.mounted.borrow_mut().insert(target.to_owned());
            Ok(())
        }

        fn unmount(&self, target: &Path) -> nix::Result<()> {
            self.calls.borrow_mut().push("unmount".to_owned());
            self.mounted.borrow_mut().remove(target);
            Ok(())
        }

        fn is_mounted(&self, target: &Path) -> bool {
            self.mounted.borrow().contains(target)
        }
    }

    fn bind_options() -> LocalOptions {
        LocalOptions {
            mount_type: "none".to_owned(),
            device: "/srv/data".to_owned(),
            options: "bind".to_owned(),
        }
    }

    fn no_lookup(_: &str) -> std::io::Result<std::net::IpAddr> {
        Err(std::io::Error::other("no lookups here"))
    }

    #[test]
    fn the_first_use_mounts_and_the_last_release_unmounts() {
        let temporary = tempfile::tempdir().unwrap();
        let uses = VolumeUses::new(temporary.path(), &temporary.path().join("run"), "v");
        let mounter = RecordingMounter::default();
        uses.take(&mounter, &bind_options(), "a", &no_lookup)
            .unwrap();
        uses.take(&mounter, &bind_options(), "b", &no_lookup)
            .unwrap();
        assert_eq!(*mounter.calls.borrow(), ["mount /srv/data"]);
        uses.release(&mounter, "a");
        assert!(mounter.is_mounted(&uses.data), "b still uses it");
        uses.release(&mounter, "b");
        assert!(!mounter.is_mounted(&uses.data));
        assert_eq!(*mounter.calls.borrow(), ["mount /srv/data", "unmount"]);
    }

    #[test]
    fn a_holder_whose_process_is_gone_is_released_by_the_next_look() {
        let temporary = tempfile::tempdir().unwrap();
        let uses = VolumeUses::new(temporary.path(), &temporary.path().join("run"), "v");
        let mounter = RecordingMounter::default();
        uses.take(&mounter, &bind_options(), "killed", &no_lookup)
            .unwrap();
        // As a monitor killed with -9 leaves it: a pid that has exited.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead_pid = child.id();
        child.wait().unwrap();
        fs_err::write(uses.users().join("killed"), format!("{dead_pid} 1\n")).unwrap();
        assert_eq!(uses.repair(&mounter), Vec::<String>::new());
        assert!(!mounter.is_mounted(&uses.data));
        assert!(!uses.users().join("killed").exists());
        // A live holder keeps it mounted.
        uses.take(&mounter, &bind_options(), "alive", &no_lookup)
            .unwrap();
        assert_eq!(uses.repair(&mounter), ["alive"]);
        assert!(mounter.is_mounted(&uses.data));
    }

    #[test]
    fn a_failed_mount_leaves_no_use_behind_and_says_what_docker_says() {
        let temporary = tempfile::tempdir().unwrap();
        let uses = VolumeUses::new(temporary.path(), &temporary.path().join("run"), "v");
        let mounter = RecordingMounter {
            fail: true,
            ..RecordingMounter::default()
        };
        let error = uses
            .take(&mounter, &bind_options(), "a", &no_lookup)
            .unwrap_err();
        let data = uses.data.display();
        assert_eq!(
            crate::ErrorChain(&error).to_string(),
            format!("error while mounting volume '{data}': failed to mount local volume: mount /srv/data:{data}, flags: 0x1000: no such file or directory")
        );
        assert_eq!(fs_err::read_dir(uses.users()).unwrap().count(), 0);
    }

    #[test]
    fn a_password_is_masked_in_a_mount_error() {
        let failure = MountFailure {
            device: "//h/s".to_owned(),
            target: PathBuf::from("/v/_data"),
            flags: MsFlags::empty(),
            data: "username=u,password=hunter2".to_owned(),
            password: Some("hunter2".to_owned()),
            errno: GoErrno(nix::errno::Errno::EACCES),
        };
        assert_eq!(
            crate::ErrorChain(&failure).to_string(),
            "failed to mount local volume: mount //h/s:/v/_data, data: username=u,password=********: permission denied"
        );
    }
}
