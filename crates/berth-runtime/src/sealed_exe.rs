//! berth's own executable, made unwritable before any berth process enters a container.
//!
//! Every process that berth starts inside a container (the first process, an exec, a pooled
//! sandbox) is berth itself until its `execve`, and `/proc/<pid>/exe` of that process is the
//! host's berth binary. runc's CVE-2019-5736 showed what a container does with it: it replaces
//! its program with `#!/proc/self/exe`, so the runtime's final `execve` runs the runtime's own
//! binary again, now as the container's process and dumpable; the container opens
//! `/proc/<pid>/exe` for reading, waits for that process to exit, and reopens the descriptor
//! through `/proc/self/fd/N` for writing: the host binary, and the next `berth` as root, are
//! the container's.
//!
//! The defence here: before a command that will enter a container does anything, berth makes
//! sure the file it runs from cannot be written through any path a container can reach. If
//! `/proc/self/exe` is not already on a read-only mount, berth re-executes itself from a
//! detached, read-only bind mount of its own binary (`open_tree(OPEN_TREE_CLONE)` +
//! `mount_setattr(MOUNT_ATTR_RDONLY)` + `execveat`, Linux 5.12): the magic link then leads to
//! that mount, and a reopen for writing fails with `EROFS`. The mount is in no namespace, so
//! nothing can remount it writable and nothing is left behind when the last process using it
//! exits. Where that cannot be done (older kernels), a sealed memfd copy of the binary is the
//! fallback (what runc does), at the price of copying it. Reading the binary while it is still
//! the runtime is closed separately: those processes are not dumpable (see `exec.rs`, `init`).

use std::ffi::{CStr, CString, OsString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

/// The magic link to the running executable.
pub const SELF_EXE: &str = "/proc/self/exe";

/// The memfd fallback's seals: no more writes, no size change, no seal removal.
const MEMFD_SEALS: libc::c_int =
    libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;

#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error("failed to inspect berth's own executable {SELF_EXE}")]
    Inspect(#[source] std::io::Error),
    #[error("failed to re-execute berth from a read-only copy of itself (read-only mount: {mount}; sealed copy)")]
    Reexec {
        mount: std::io::Error,
        #[source]
        copy: std::io::Error,
    },
}

/// How the running executable is protected, if it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    /// On a read-only mount: a reopen for writing fails with `EROFS`.
    ReadOnlyMount,
    /// A memfd sealed against writes.
    SealedCopy,
}

/// How `/proc/self/exe` is protected now, or `None` when a writable path leads to it.
pub fn protection() -> Result<Option<Protection>, SealError> {
    let path = CString::new(SELF_EXE).expect("a constant path has no NUL");
    let mut stats = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: statvfs writes one statvfs struct into `stats` and reads the NUL-terminated path.
    if unsafe { libc::statvfs(path.as_ptr(), stats.as_mut_ptr()) } != 0 {
        return Err(SealError::Inspect(std::io::Error::last_os_error()));
    }
    // SAFETY: statvfs returned 0, so it filled `stats`.
    let stats = unsafe { stats.assume_init() };
    if stats.f_flag & libc::ST_RDONLY != 0 {
        return Ok(Some(Protection::ReadOnlyMount));
    }
    let file = fs_err::File::open(SELF_EXE).map_err(SealError::Inspect)?;
    // SAFETY: F_GET_SEALS reads an integer property of an open descriptor this process owns.
    let seals = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GET_SEALS) };
    if seals >= 0 && seals & libc::F_SEAL_WRITE != 0 {
        return Ok(Some(Protection::SealedCopy));
    }
    Ok(None)
}

/// Returns once the running executable cannot be written through `/proc/<pid>/exe`;
/// otherwise re-executes this program (same arguments and environment) from a read-only
/// mount of itself, or a sealed copy, and does not return. Call it first thing, before the
/// process has done anything it would do twice.
pub fn ensure_sealed() -> Result<Protection, SealError> {
    if let Some(protection) = protection()? {
        name_after_argv0();
        return Ok(protection);
    }
    let mount_error = match read_only_mount_of_self() {
        Ok(mount) => reexec(&mount),
        Err(error) => error,
    };
    let copy_error = match sealed_copy_of_self() {
        Ok(copy) => reexec(&copy),
        Err(error) => error,
    };
    Err(SealError::Reexec {
        mount: mount_error,
        copy: copy_error,
    })
}

/// A descriptor of a detached, read-only bind mount of the running executable.
fn read_only_mount_of_self() -> std::io::Result<OwnedFd> {
    read_only_mount_of(&CString::new(SELF_EXE).expect("a constant path has no NUL"))
}

/// A descriptor of a detached, read-only bind mount of the file at `path` (magic links
/// followed): a reopen for writing through it fails with `EROFS`.
fn read_only_mount_of(path: &CStr) -> std::io::Result<OwnedFd> {
    // SAFETY: open_tree reads the NUL-terminated path and returns a new descriptor or -1.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            path.as_ptr(),
            OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: open_tree returned a new descriptor that nothing else owns.
    let mount = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
    let attributes = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let empty = c"";
    // SAFETY: mount_setattr reads `attributes` (its size is passed) and the empty path, and
    // changes only the detached mount `mount` refers to.
    let result = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            mount.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_EMPTY_PATH,
            &attributes as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if result != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(mount)
}

/// A memfd holding a copy of the running executable, sealed against writes.
fn sealed_copy_of_self() -> std::io::Result<OwnedFd> {
    let name = c"berth";
    // SAFETY: memfd_create reads the NUL-terminated name and returns a new descriptor or -1.
    let fd =
        unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: memfd_create returned a new descriptor that nothing else owns.
    let mut copy = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    let mut source = fs_err::File::open(SELF_EXE)?;
    std::io::copy(&mut source, &mut copy)?;
    // SAFETY: F_ADD_SEALS sets flags on the memfd this process owns.
    if unsafe { libc::fcntl(copy.as_raw_fd(), libc::F_ADD_SEALS, MEMFD_SEALS) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(copy.into())
}

/// `execveat(fd, "", argv, environ, AT_EMPTY_PATH)`: only returns its error.
fn reexec(executable: &OwnedFd) -> std::io::Error {
    let arguments: Vec<CString> = std::env::args_os().filter_map(c_string).collect();
    let environment: Vec<CString> = std::env::vars_os()
        .filter_map(|(key, value)| {
            let mut entry = key;
            entry.push("=");
            entry.push(value);
            c_string(entry)
        })
        .collect();
    let mut argv: Vec<*const libc::c_char> = arguments.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let mut envp: Vec<*const libc::c_char> = environment.iter().map(|e| e.as_ptr()).collect();
    envp.push(std::ptr::null());
    let empty = c"";
    // SAFETY: argv and envp are NULL-terminated arrays of pointers to NUL-terminated strings
    // that live until the call returns (it returns only on failure).
    unsafe {
        libc::syscall(
            libc::SYS_execveat,
            executable.as_raw_fd(),
            empty.as_ptr(),
            argv.as_ptr(),
            envp.as_ptr(),
            libc::AT_EMPTY_PATH,
        )
    };
    std::io::Error::last_os_error()
}

fn c_string(value: OsString) -> Option<CString> {
    CString::new(value.as_bytes()).ok()
}

/// A program started through a descriptor is named after it ("3") by the kernel; give the
/// process its usual name back, so that `ps`, `pidof` and `top` show `berth`.
fn name_after_argv0() {
    let Some(argv0) = std::env::args_os().next() else {
        return;
    };
    let base = std::path::Path::new(&argv0)
        .file_name()
        .map(|name| name.as_bytes().to_vec())
        .unwrap_or_default();
    let mut name: Vec<u8> = base
        .into_iter()
        .take(15)
        .filter(|byte| *byte != 0)
        .collect();
    if name.is_empty() {
        return;
    }
    name.push(0);
    let name = CStr::from_bytes_with_nul(&name).expect("one NUL, at the end");
    // SAFETY: PR_SET_NAME reads at most 16 bytes of the NUL-terminated name.
    unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
}

/// `open_tree(2)` flag: a copy of the mount (a detached bind mount), not the mount itself.
const OPEN_TREE_CLONE: libc::c_uint = 1;

/// `mount_setattr(2)` attribute: read-only.
const MOUNT_ATTR_RDONLY: u64 = 0x0000_0001;

/// `struct mount_attr` (include/uapi/linux/mount.h).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy of the test binary in a fresh directory, to experiment on.
    fn copy_of(program: &std::path::Path) -> (tempfile::TempDir, std::path::PathBuf) {
        let directory = tempfile::tempdir().unwrap();
        let copy = directory.path().join("program");
        fs_err::copy(program, &copy).unwrap();
        (directory, copy)
    }

    #[test]
    fn the_read_only_mount_refuses_writes_through_the_magic_link() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: open_tree needs root");
            return;
        }
        let (_directory, copy) = copy_of(&std::env::current_exe().unwrap());
        let before = fs_err::read(&copy).unwrap();
        let file = fs_err::File::open(&copy).unwrap();
        let path = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd())).unwrap();
        let mount = read_only_mount_of(&path).unwrap();
        let through_mount = format!("/proc/self/fd/{}", mount.as_raw_fd());
        let error = fs_err::OpenOptions::new()
            .write(true)
            .open(&through_mount)
            .unwrap_err();
        // EROFS (fs-err keeps the kind, not the errno).
        assert_eq!(
            error.kind(),
            std::io::ErrorKind::ReadOnlyFilesystem,
            "{error}"
        );
        assert_eq!(fs_err::read(&through_mount).unwrap(), before);
        assert_eq!(fs_err::read(&copy).unwrap(), before);
    }

    #[test]
    fn the_sealed_copy_refuses_writes() {
        let copy = sealed_copy_of_self().unwrap();
        let path = format!("/proc/self/fd/{}", copy.as_raw_fd());
        // std's File: the write's bare errno is checked.
        let mut reopened = fs_err::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .into_file();
        let error = std::io::Write::write_all(&mut reopened, b"x").unwrap_err();
        assert_eq!(error.raw_os_error(), Some(libc::EPERM), "{error}");
        let bytes = fs_err::read(&path).unwrap();
        assert_eq!(bytes, fs_err::read(SELF_EXE).unwrap());
    }
}
