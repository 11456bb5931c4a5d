//! The container's mount table, built inside its new mount namespace:
//! standard filesystems, per-container /etc files, user mounts, then
//! `pivot_root`, Docker's masked and read-only paths and `--read-only`.

use std::error::Error as _;
use std::path::{Path, PathBuf};

use nix::mount::{mount, umount2, MntFlags, MsFlags};

use super::{devices, InitFailure, InitResult};
use crate::spec::{ContainerSpec, MountKind, MountSpec, NetworkMode};

const NONE: Option<&str> = None;

fn step_error(step: &str, target: &Path, error: nix::Error) -> InitFailure {
    InitFailure::new(
        &format!("{step} {}", target.display()),
        error.desc(),
        error as i32,
    )
}

fn do_mount(
    source: &str,
    target: &Path,
    fstype: Option<&str>,
    flags: MsFlags,
    data: Option<&str>,
) -> InitResult<()> {
    mount(Some(source), target, fstype, flags, data)
        .map_err(|error| step_error("mount", target, error))
}

/// /dev/shm as Docker makes it: a tmpfs of `--shm-size` in a private IPC namespace, the
/// host's own /dev/shm (bound) with `--ipc host`, none with `--ipc none`.
fn mount_shm(spec: &ContainerSpec, dev: &Path, common: MsFlags) -> InitResult<()> {
    if spec.no_shm {
        return Ok(());
    }
    let shm = dev.join("shm");
    #[allow(clippy::disallowed_methods)] // bare errno for InitFailure::io
    std::fs::create_dir_all(&shm).map_err(|error| InitFailure::io("create /dev/shm", error))?;
    if let Some(donor) = &spec.joined_namespaces.shm_of {
        return import_shm(donor, &shm);
    }
    if spec.host_namespaces.ipc {
        return do_mount(
            "/dev/shm",
            &shm,
            None,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None,
        );
    }
    do_mount(
        "shm",
        &shm,
        Some("tmpfs"),
        common,
        Some(&format!("mode=1777,size={}", spec.shm_size)),
    )
}

/// `--ipc container:`: the donor container's /dev/shm, as it sees it,
/// mounted at `target`. A mount of another mount namespace cannot be bound
/// from here, so this process (the container's init, single-threaded, before
/// its root is entered) goes into the donor's namespace (`donor`, its
/// `/proc/PID/ns/mnt`) for a detached copy of that mount (open_tree(2)),
/// comes back to its own, and attaches the copy (move_mount(2)): the two
/// containers then share one tmpfs, as Docker's do.
fn import_shm(donor: &Path, target: &Path) -> InitResult<()> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let open = |path: &Path| {
        #[allow(clippy::disallowed_methods)] // bare errno for InitFailure::io
        std::fs::File::open(path).map_err(|error| {
            InitFailure::io(
                &format!("open the IPC donor's namespace {}", path.display()),
                error,
            )
        })
    };
    let own = open(Path::new("/proc/self/ns/mnt"))?;
    let donor_namespace = open(donor)?;
    let enter = |namespace: &std::fs::File, whose: &str| {
        nix::sched::setns(namespace, nix::sched::CloneFlags::CLONE_NEWNS)
            .map_err(|error| InitFailure::nix(&format!("enter {whose} mount namespace"), error))
    };
    enter(&donor_namespace, "the IPC donor's")?;
    // SAFETY: open_tree(2) reads a NUL-terminated path and returns a new
    // descriptor (or -1), which the OwnedFd then owns.
    let tree = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            c"/dev/shm".as_ptr(),
            OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | libc::AT_RECURSIVE as libc::c_uint,
        )
    };
    let copied = (tree >= 0).then(|| {
        // SAFETY: a descriptor open_tree(2) just returned, owned by no one else.
        unsafe { OwnedFd::from_raw_fd(tree as i32) }
    });
    let copy_error = std::io::Error::last_os_error();
    // Back home before anything else, whatever open_tree did.
    enter(&own, "its own")?;
    let tree =
        copied.ok_or_else(|| InitFailure::io("copy the IPC donor's /dev/shm", copy_error))?;
    let target_c = std::ffi::CString::new(target.as_os_str().as_encoded_bytes()).map_err(|_| {
        InitFailure::new(
            "attach the IPC donor's /dev/shm",
            "the path holds NUL",
            libc::EINVAL,
        )
    })?;
    // SAFETY: move_mount(2) reads two NUL-terminated paths.
    let moved = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_FDCWD,
            target_c.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    if moved < 0 {
        return Err(InitFailure::io(
            "attach the IPC donor's /dev/shm",
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// open_tree(2)'s flag for a detached copy of the mount (linux/mount.h).
const OPEN_TREE_CLONE: libc::c_uint = 1;
/// move_mount(2)'s flag: the source is the descriptor itself (linux/mount.h).
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x0000_0004;

/// `path` inside the container root as a host path, creating it (as a
/// directory or an empty file) when missing. The parent chain is created
/// through the root with no symlink escaping it.
pub(super) fn target_in_root(rootfs: &Path, path: &Path, as_file: bool) -> InitResult<PathBuf> {
    let target = crate::in_root::create_mount_point(rootfs, path, as_file);
    let target = target.map_err(|error| {
        InitFailure::io(&format!("create mount point {}", path.display()), error)
    })?;
    if !target.starts_with(rootfs) {
        return Err(InitFailure::new(
            &format!("mount point {}", path.display()),
            "resolves outside the container root",
            libc::EPERM,
        ));
    }
    Ok(target)
}

/// Nothing mounted after this propagates to the mount namespace it came from.
pub(super) fn private_propagation() -> InitResult<()> {
    do_mount(
        "none",
        Path::new("/"),
        None,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None,
    )
}

/// The container's overlay at `spec.rootfs` (when it has one), made a mount
/// point of its own.
fn mount_root(spec: &ContainerSpec) -> InitResult<()> {
    let rootfs = &spec.rootfs;
    if let Some(overlay) = &spec.overlay {
        let paths = crate::rootfs::RootfsPaths {
            upper: overlay.upper.clone(),
            work: overlay.work.clone(),
            merged: rootfs.clone(),
        };
        crate::rootfs::mount_overlay(&overlay.lower, &paths).map_err(|error| {
            InitFailure::new(
                "mount the container root",
                format!(
                    "{error}: {}",
                    error.source().map(ToString::to_string).unwrap_or_default()
                ),
                libc::EINVAL,
            )
        })?;
    }
    // pivot_root needs the new root to be a mount point of its own.
    do_mount(
        &rootfs.display().to_string(),
        rootfs,
        None,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None,
    )
}

/// A `proc` of the caller's pid namespace at `target`.
pub(super) fn mount_proc(target: &Path) -> InitResult<()> {
    let common = MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC | MsFlags::MS_NODEV;
    do_mount("proc", target, Some("proc"), common, None)
}

/// The root a microVM gets over virtio-fs: the overlay and the `/etc`
/// files, none of the host's kernel file systems (see `guest.rs`).
pub(super) fn prepare_shared_root(spec: &ContainerSpec) -> InitResult<()> {
    mount_root(spec)?;
    mount_etc_files(spec)
}

/// `--read-only` on the host side: the bind of the root made read-only.
pub(super) fn remount_bind_readonly(target: &Path) -> InitResult<()> {
    remount_readonly(target, MsFlags::MS_BIND)
}

/// Everything before `pivot_root`, with host paths under `spec.rootfs`.
pub(super) fn prepare_root(spec: &ContainerSpec) -> InitResult<()> {
    let rootfs = &spec.rootfs;
    // Nothing we mount may propagate back to the host.
    private_propagation()?;
    mount_root(spec)?;

    let common = MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC | MsFlags::MS_NODEV;
    mount_proc(&target_in_root(rootfs, Path::new("/proc"), false)?)?;

    let dev = target_in_root(rootfs, Path::new("/dev"), false)?;
    do_mount(
        "tmpfs",
        &dev,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_STRICTATIME,
        Some("mode=755,size=65536k"),
    )?;
    devices::populate(rootfs, &dev, &spec.devices)?;
    let pts = dev.join("pts");
    #[allow(clippy::disallowed_methods)] // bare errno for InitFailure::io
    std::fs::create_dir_all(&pts).map_err(|error| InitFailure::io("create /dev/pts", error))?;
    do_mount(
        "devpts",
        &pts,
        Some("devpts"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("newinstance,ptmxmode=0666,mode=0620,gid=5"),
    )?;
    mount_shm(spec, &dev, common)?;
    let mqueue = dev.join("mqueue");
    #[allow(clippy::disallowed_methods)] // bare errno for InitFailure::io
    std::fs::create_dir_all(&mqueue)
        .map_err(|error| InitFailure::io("create /dev/mqueue", error))?;
    do_mount("mqueue", &mqueue, Some("mqueue"), common, None)?;

    let sys = target_in_root(rootfs, Path::new("/sys"), false)?;
    if spec.network == NetworkMode::Host {
        // sysfs of a network namespace we do not own cannot be mounted anew.
        do_mount("/sys", &sys, None, MsFlags::MS_BIND | MsFlags::MS_REC, None)?;
        if !spec.privileged {
            remount_readonly(&sys, MsFlags::MS_BIND | MsFlags::MS_REC)?;
        }
    } else {
        let flags = if spec.privileged {
            common
        } else {
            common | MsFlags::MS_RDONLY
        };
        do_mount("sysfs", &sys, Some("sysfs"), flags, None)?;
    }
    mount_etc_files(spec)
}

/// The per-container `/etc/hosts`, `/etc/resolv.conf` and `/etc/hostname`.
fn mount_etc_files(spec: &ContainerSpec) -> InitResult<()> {
    let rootfs = &spec.rootfs;
    for (host, container) in &spec.etc_files {
        let target = target_in_root(rootfs, container, true)?;
        do_mount(
            &host.display().to_string(),
            &target,
            None,
            MsFlags::MS_BIND,
            None,
        )?;
    }
    Ok(())
}

/// The user's mounts (`-v`, `--mount`, `--tmpfs`), after the standard ones
/// and before `pivot_root`; host paths are still reachable here.
pub(super) fn apply_user_mounts(spec: &ContainerSpec) -> InitResult<()> {
    for user_mount in &spec.mounts {
        apply_user_mount(&spec.rootfs, user_mount)?;
    }
    Ok(())
}

/// The container's view of its cgroup, read-only (Docker's default), in
/// its own cgroup namespace.
pub(super) fn mount_cgroups(spec: &ContainerSpec) -> InitResult<()> {
    let cgroup_root = spec.rootfs.join("sys/fs/cgroup");
    if fs_err::create_dir_all(&cgroup_root).is_err() {
        // Read-only sysfs without the directory: nothing to mount on.
        return Ok(());
    }
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC | MsFlags::MS_NODEV | MsFlags::MS_RDONLY;
    if spec.cgroup_v2 {
        return do_mount("cgroup", &cgroup_root, Some("cgroup2"), flags, None);
    }
    if spec.cgroup_v1_hierarchies.is_empty() {
        return Ok(());
    }
    do_mount(
        "tmpfs",
        &cgroup_root,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC | MsFlags::MS_NODEV,
        Some("mode=755"),
    )?;
    for hierarchy in &spec.cgroup_v1_hierarchies {
        let directory = cgroup_root.join(hierarchy.trim_start_matches("name="));
        #[allow(clippy::disallowed_methods)] // bare errno for InitFailure::io
        std::fs::create_dir_all(&directory)
            .map_err(|error| InitFailure::io("create cgroup mount point", error))?;
        // Each v1 hierarchy mounted anew in the cgroup namespace shows the
        // container's cgroup as its root.
        if let Err(error) = mount(
            Some("cgroup"),
            &directory,
            Some("cgroup"),
            flags,
            Some(hierarchy.as_str()),
        ) {
            tracing::debug!(hierarchy, %error, "cgroup hierarchy not mounted in the container");
            let _ = fs_err::remove_dir(&directory);
        }
    }
    remount_readonly(
        &cgroup_root,
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC | MsFlags::MS_NODEV,
    )
}

fn apply_user_mount(rootfs: &Path, user_mount: &MountSpec) -> InitResult<()> {
    let mut flags = MsFlags::empty();
    if user_mount.nosuid {
        flags |= MsFlags::MS_NOSUID;
    }
    if user_mount.nodev {
        flags |= MsFlags::MS_NODEV;
    }
    if user_mount.noexec {
        flags |= MsFlags::MS_NOEXEC;
    }
    match &user_mount.kind {
        MountKind::Bind { source, recursive } => {
            let is_file = source
                .metadata()
                .map(|metadata| !metadata.is_dir())
                .unwrap_or(false);
            let target = target_in_root(rootfs, &user_mount.destination, is_file)?;
            let mut bind = MsFlags::MS_BIND;
            if *recursive {
                bind |= MsFlags::MS_REC;
            }
            do_mount(&source.display().to_string(), &target, None, bind, None)?;
            if user_mount.readonly || !flags.is_empty() {
                let readonly = if user_mount.readonly {
                    MsFlags::MS_RDONLY
                } else {
                    MsFlags::empty()
                };
                remount_readonly_with(&target, bind | flags | readonly)?;
            }
        }
        MountKind::Tmpfs { size, mode } => {
            let target = target_in_root(rootfs, &user_mount.destination, false)?;
            let mut data = vec![format!("mode={:o}", mode.unwrap_or(0o1777))];
            if let Some(size) = size {
                data.push(format!("size={size}"));
            }
            if user_mount.readonly {
                flags |= MsFlags::MS_RDONLY;
            }
            do_mount(
                "tmpfs",
                &target,
                Some("tmpfs"),
                flags,
                Some(&data.join(",")),
            )?;
        }
    }
    Ok(())
}

fn remount_readonly(target: &Path, flags: MsFlags) -> InitResult<()> {
    remount_readonly_with(target, flags | MsFlags::MS_RDONLY)
}

fn remount_readonly_with(target: &Path, flags: MsFlags) -> InitResult<()> {
    mount(
        NONE,
        target,
        NONE,
        flags | MsFlags::MS_REMOUNT | MsFlags::MS_BIND,
        NONE,
    )
    .map_err(|error| step_error("remount", target, error))
}

/// `pivot_root(new, new)` then detach the old root (the "." trick runc
/// uses: no directory for the old root is needed).
pub(super) fn pivot_into(rootfs: &Path) -> InitResult<()> {
    nix::unistd::chdir(rootfs).map_err(|error| step_error("chdir", rootfs, error))?;
    nix::unistd::pivot_root(".", ".").map_err(|error| step_error("pivot_root", rootfs, error))?;
    umount2(".", MntFlags::MNT_DETACH)
        .map_err(|error| step_error("unmount old root", rootfs, error))?;
    nix::unistd::chdir("/").map_err(|error| step_error("chdir", Path::new("/"), error))
}

/// Masked and read-only paths, and `--read-only`, inside the new root.
pub(super) fn after_pivot(spec: &ContainerSpec) -> InitResult<()> {
    for path in &spec.masked_paths {
        let path = Path::new(path);
        match fs_err::symlink_metadata(path) {
            Ok(metadata) if metadata.is_dir() => {
                do_mount("tmpfs", path, Some("tmpfs"), MsFlags::MS_RDONLY, None)?;
            }
            Ok(_) => do_mount("/dev/null", path, None, MsFlags::MS_BIND, None)?,
            Err(_) => {} // absent on this kernel: nothing to hide
        }
    }
    for path in &spec.readonly_paths {
        let path = Path::new(path);
        if path.exists() {
            do_mount(
                &path.display().to_string(),
                path,
                None,
                MsFlags::MS_BIND | MsFlags::MS_REC,
                None,
            )?;
            remount_readonly(
                path,
                MsFlags::MS_BIND
                    | MsFlags::MS_REC
                    | MsFlags::MS_NOSUID
                    | MsFlags::MS_NODEV
                    | MsFlags::MS_NOEXEC,
            )?;
        }
    }
    if spec.readonly_rootfs {
        remount_readonly(Path::new("/"), MsFlags::MS_BIND)?;
    }
    Ok(())
}
