//! Opening paths inside a container root as if chrooted there
//! (`openat2(RESOLVE_IN_ROOT)`, Linux 5.6): symlinks and `..` in image
//! content can never reach the host.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
const RESOLVE_IN_ROOT: u64 = 0x10;

/// Opens `path` (absolute or relative, interpreted inside `root`) with
/// `flags` (`libc::O_*`).
pub fn open_in_root(root: &Path, path: &Path, flags: i32, mode: u32) -> std::io::Result<OwnedFd> {
    let root = fs_err::File::open(root)?.into_file();
    open_at_in_root(&root, path, flags, mode)
}

pub fn open_at_in_root(
    root: &File,
    path: &Path,
    flags: i32,
    mode: u32,
) -> std::io::Result<OwnedFd> {
    let relative = path.strip_prefix("/").unwrap_or(path);
    let relative = if relative.as_os_str().is_empty() {
        Path::new(".")
    } else {
        relative
    };
    let name = CString::new(relative.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "path contains NUL"))?;
    let how = OpenHow {
        flags: (flags | libc::O_CLOEXEC) as u64,
        mode: mode as u64,
        resolve: RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: `name` is NUL-terminated and outlives the call; `how` is a
    // valid open_how of the size passed; the root fd is open.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            root.as_raw_fd(),
            name.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: openat2 returned a new file descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Reads a whole file inside `root`; `None` when it does not exist.
pub fn read_in_root(root: &Path, path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    match open_in_root(root, path, libc::O_RDONLY, 0) {
        Ok(fd) => {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut File::from(fd), &mut bytes)?;
            Ok(Some(bytes))
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

/// The host path of `path` inside `root` with every symlink resolved inside
/// the root (via /proc/self/fd of an O_PATH descriptor). Intermediate
/// components must exist.
pub fn resolve_in_root(root: &Path, path: &Path) -> std::io::Result<std::path::PathBuf> {
    let fd = open_in_root(root, path, libc::O_PATH, 0)?;
    fs_err::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// The host path of `path` inside `root`, created (a directory, or an empty
/// file with `as_file`) when missing, one component at a time through the
/// root: a mount point, as the runtime makes one at start and `cp` for a
/// container that has not run. Symlinks in the image resolve inside the root.
pub fn create_mount_point(
    root: &Path,
    path: &Path,
    as_file: bool,
) -> std::io::Result<std::path::PathBuf> {
    let relative = path.strip_prefix("/").unwrap_or(path);
    resolve_in_root(root, relative).or_else(|_| {
        let mut current = std::path::PathBuf::new();
        let components: Vec<_> = relative.components().collect();
        for (index, component) in components.iter().enumerate() {
            current.push(component);
            let last = index + 1 == components.len();
            if resolve_in_root(root, &current).is_ok() {
                continue;
            }
            let parent = resolve_in_root(root, current.parent().unwrap_or(Path::new(".")))?;
            let host = parent.join(component);
            if last && as_file {
                #[allow(clippy::disallowed_methods)]
                // bare errno for the runtime's InitFailure::io
                std::fs::OpenOptions::new()
                    .create(true)
                    .truncate(false)
                    .write(true)
                    .open(&host)?;
            } else {
                #[allow(clippy::disallowed_methods)]
                // bare errno for the runtime's InitFailure::io
                std::fs::create_dir(&host).or_else(|error| match error.kind() {
                    std::io::ErrorKind::AlreadyExists => Ok(()),
                    _ => Err(error),
                })?;
            }
        }
        resolve_in_root(root, relative)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_stay_inside_the_root() {
        let root = tempfile::tempdir().unwrap();
        fs_err::create_dir(root.path().join("etc")).unwrap();
        fs_err::write(root.path().join("etc/passwd"), "inside").unwrap();
        fs_err::os::unix::fs::symlink("/etc/passwd", root.path().join("absolute")).unwrap();
        fs_err::os::unix::fs::symlink("../../../../etc/passwd", root.path().join("climbing"))
            .unwrap();
        for name in ["absolute", "climbing", "/etc/passwd", "../etc/passwd"] {
            let bytes = read_in_root(root.path(), Path::new(name)).unwrap().unwrap();
            assert_eq!(bytes, b"inside", "{name}");
        }
        assert!(read_in_root(root.path(), Path::new("missing"))
            .unwrap()
            .is_none());
        assert_eq!(
            resolve_in_root(root.path(), Path::new("absolute")).unwrap(),
            root.path().canonicalize().unwrap().join("etc/passwd")
        );
    }
}
