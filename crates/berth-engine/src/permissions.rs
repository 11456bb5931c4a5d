//! Modes of what the engine makes under the roots, beside the store's own
//! (berth-store `permissions`: the root 0700, directories 0700, files 0600).
//!
//! berth's commands run with umask 077 (set by the CLI), so what they create
//! is private from the start. What a container must read is the deliberate
//! exception, made with Docker's modes whatever the umask:
//!
//! | what | mode | dockerd 20.10 |
//! |---|---|---|
//! | the run root (`/run/berth`) | 0711 | socket in `/run`, 0755 |
//! | a container's /etc/hosts, hostname, resolv.conf | 0644 | 0644 |
//! | its root file system (upper, merged) | 0755 | `diff`, `merged` 0755 |
//! | the init layer | 0755 / 0644 | `-init` layer, 0755 |
//! | a volume's `_data` | 0755 | 0755 |
//! | a container's log | 0640 | 0640 |
//!
//! The run root is 0711 rather than 0700 because `berth serve`'s default
//! socket lives in it (`/run/berth/docker.sock`, 0660 root:docker): members
//! of the socket's group must be able to reach it, without being able to
//! list what else is there (every entry in it is 0700). That is stricter
//! than dockerd, whose socket sits in the world-readable `/run`.
//!
//! A container's processes get Docker's umask, 022, rather than berth's: the
//! runtime sets it in each process it starts in a container
//! (`berth_runtime::init::set_container_umask`).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use crate::EngineError;

/// berth's own umask: nothing it makes under the roots is for other users.
pub const STATE_UMASK: u32 = 0o077;
/// The run root: traversable, not listable (see the module comment).
pub const RUN_ROOT_MODE: u32 = 0o711;
/// Directories and files containers read.
pub const SHARED_DIRECTORY: u32 = 0o755;
pub const SHARED_FILE: u32 = 0o644;

/// Directories of the run root that hold only berth's own state.
const RUN_ROOT_DIRECTORIES: [&str; 2] = ["containers", "warm"];

/// Makes the run root ready: created 0711 when missing, tightened when an
/// older berth left it 0755. One `stat` when it is already right.
pub fn prepare_run_root(run_root: &Path) -> Result<(), EngineError> {
    let io = |source: std::io::Error| {
        EngineError::Store(berth_store::StoreError::Io {
            path: run_root.to_owned(),
            source,
        })
    };
    match fs_err::metadata(run_root) {
        Ok(metadata) if metadata.is_dir() && metadata.mode() & 0o7777 == RUN_ROOT_MODE => Ok(()),
        Ok(metadata) if metadata.is_dir() => {
            tracing::info!(run_root = %run_root.display(), "making the berth run root private");
            for name in RUN_ROOT_DIRECTORIES {
                let directory = run_root.join(name);
                if directory.is_dir() {
                    private(&directory)?;
                    for entry in fs_err::read_dir(&directory).into_iter().flatten().flatten() {
                        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                            private(&entry.path())?;
                        }
                    }
                }
            }
            set_mode(run_root, RUN_ROOT_MODE)
        }
        Ok(_) => Err(io(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "not a directory",
        ))),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            berth_store::permissions::create_private_directory_all(run_root)?;
            set_mode(run_root, RUN_ROOT_MODE)
        }
        Err(source) => Err(io(source)),
    }
}

fn private(path: &Path) -> Result<(), EngineError> {
    set_mode(path, berth_store::permissions::PRIVATE_DIRECTORY)
}

pub(crate) fn set_mode(path: &Path, mode: u32) -> Result<(), EngineError> {
    Ok(berth_store::permissions::set_mode(path, mode)?)
}

/// Creates `path` as a directory containers read: 0755 whatever the umask
/// (its missing parents private, 0700). One that exists keeps its mode (a
/// container may have changed it).
pub(crate) fn create_shared_directory(path: &Path) -> Result<(), EngineError> {
    let io = |source: std::io::Error| {
        EngineError::Store(berth_store::StoreError::Io {
            path: path.to_owned(),
            source,
        })
    };
    if let Some(parent) = path.parent().filter(|parent| !parent.is_dir()) {
        berth_store::permissions::create_private_directory_all(parent)?;
    }
    match fs_err::create_dir(path) {
        Ok(()) => set_mode(path, SHARED_DIRECTORY),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists && path.is_dir() => Ok(()),
        Err(source) => Err(io(source)),
    }
}

/// Creates `path` and its missing parents on the host as Docker creates a missing `-v` source:
/// 0755 each, whatever berth's umask, since the container (any user) must reach it.
pub(crate) fn create_host_directory_all(path: &Path) -> std::io::Result<()> {
    let mut missing = Vec::new();
    let mut next = Some(path);
    while let Some(directory) = next.filter(|directory| !directory.exists()) {
        missing.push(directory);
        next = directory.parent();
    }
    for directory in missing.into_iter().rev() {
        match fs_err::create_dir(directory) {
            Ok(()) => fs_err::set_permissions(
                directory,
                std::fs::Permissions::from_mode(SHARED_DIRECTORY),
            )?,
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn mode(path: &Path) -> u32 {
        fs_err::metadata(path).unwrap().mode() & 0o7777
    }

    #[test]
    fn a_new_run_root_is_0711_and_an_old_one_is_tightened() {
        let base = tempfile::tempdir().unwrap();
        let run_root = base.path().join("run");
        prepare_run_root(&run_root).unwrap();
        assert_eq!(mode(&run_root), 0o711);

        let container = run_root.join("containers/abc");
        fs_err::create_dir_all(&container).unwrap();
        for path in [&run_root, &run_root.join("containers"), &container] {
            set_mode(path, 0o755).unwrap();
        }
        prepare_run_root(&run_root).unwrap();
        assert_eq!(mode(&run_root), 0o711);
        assert_eq!(mode(&run_root.join("containers")), 0o700);
        assert_eq!(mode(&container), 0o700);
    }

    #[test]
    fn shared_directories_are_0755_whatever_the_umask() {
        let base = tempfile::tempdir().unwrap();
        let path = base.path().join("a/_data");
        // In a child: the umask is the whole process's.
        // SAFETY: the child only makes syscalls and exits; glibc's fork
        // handlers leave its allocator usable there.
        match unsafe { nix::unistd::fork() }.unwrap() {
            nix::unistd::ForkResult::Child => {
                nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
                let made = create_shared_directory(&path).is_ok();
                // SAFETY: _exit ends the child without running the test
                // harness's exit handlers.
                unsafe { libc::_exit(i32::from(!made)) }
            }
            nix::unistd::ForkResult::Parent { child } => {
                let status = nix::sys::wait::waitpid(child, None).unwrap();
                assert_eq!(status, nix::sys::wait::WaitStatus::Exited(child, 0));
            }
        }
        assert_eq!(mode(&path), 0o755);
        assert_eq!(mode(&base.path().join("a")), 0o700);
    }
}
