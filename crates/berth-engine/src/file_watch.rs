//! Waiting for a file (a container's log) or a directory's files (the event
//! log, which is rotated and may not exist yet) to change: inotify(7) where
//! the kernel allows it, a short sleep otherwise.
//!
//! Raw `libc` calls rather than `nix::sys::inotify` and `nix::poll`: the
//! workspace builds nix without its `inotify` and `poll` features. Enabling
//! them would let this file drop its three unsafe blocks.

use std::ffi::CString;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

/// The wait when inotify is unavailable.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

pub(crate) struct FileWatcher {
    inotify: Option<std::fs::File>,
}

impl FileWatcher {
    /// Watches `path` for writes, truncation, the writer closing it, and its
    /// removal or renaming.
    pub fn new(path: &Path) -> Self {
        Self::watching(path, FILE_CHANGES)
    }

    /// Watches the files in directory `path` for writes, and for files
    /// created, renamed or moved into it. Any file's change ends a wait:
    /// the caller looks again at what it follows.
    pub fn directory(path: &Path) -> Self {
        Self::watching(path, DIRECTORY_CHANGES)
    }

    fn watching(path: &Path, mask: u32) -> Self {
        let inotify = match watch(path, mask) {
            Ok(inotify) => Some(inotify),
            Err(error) => {
                tracing::debug!(%error, path = %path.display(), "inotify unavailable, polling");
                None
            }
        };
        Self { inotify }
    }

    /// A watcher that only sleeps, for tests of the fallback.
    #[cfg(test)]
    pub fn polling() -> Self {
        Self { inotify: None }
    }

    /// Returns after the file changed (or may have), or after `timeout`.
    pub fn wait(&mut self, timeout: Duration) {
        let Some(inotify) = self.inotify.as_mut() else {
            std::thread::sleep(timeout.min(POLL_INTERVAL));
            return;
        };
        let mut descriptor = libc::pollfd {
            fd: inotify.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let millis = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: `descriptor` is one initialised pollfd that lives across
        // the call, and nfds is 1. An error (EINTR) just ends this wait.
        let ready = unsafe { libc::poll(&mut descriptor, 1, millis) };
        if ready > 0 {
            // Events only say "look again"; read them all so the next poll
            // blocks. The descriptor is non-blocking: WouldBlock ends this.
            let mut events = [0u8; 4096];
            while matches!(inotify.read(&mut events), Ok(read) if read > 0) {}
        }
    }
}

const FILE_CHANGES: u32 = libc::IN_MODIFY
    | libc::IN_CLOSE_WRITE
    | libc::IN_ATTRIB
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF;

const DIRECTORY_CHANGES: u32 =
    libc::IN_MODIFY | libc::IN_CREATE | libc::IN_MOVED_TO | libc::IN_MOVED_FROM;

fn watch(path: &Path, mask: u32) -> io::Result<std::fs::File> {
    // SAFETY: inotify_init1 takes no pointers; it returns a new descriptor
    // or -1.
    let raw = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` was just returned by inotify_init1, is open, and nothing
    // else owns it.
    let inotify = unsafe { OwnedFd::from_raw_fd(raw) };
    let path = CString::new(path.as_os_str().as_bytes())
        .map_err(|error| io::Error::new(io::ErrorKind::InvalidInput, error))?;
    // SAFETY: `inotify` is an open inotify descriptor and `path` a
    // NUL-terminated string that outlives the call.
    let added = unsafe { libc::inotify_add_watch(inotify.as_raw_fd(), path.as_ptr(), mask) };
    if added < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(std::fs::File::from(inotify))
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::time::Instant;

    use super::*;

    #[test]
    fn a_write_ends_the_wait_early() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("log");
        let mut file = fs_err::File::create(&path).unwrap();
        let mut watcher = FileWatcher::new(&path);
        assert!(watcher.inotify.is_some(), "inotify is expected on Linux");
        file.write_all(b"x").unwrap();
        let started = Instant::now();
        watcher.wait(Duration::from_secs(5));
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn without_changes_the_wait_times_out() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("log");
        fs_err::write(&path, b"").unwrap();
        let mut watcher = FileWatcher::new(&path);
        let started = Instant::now();
        watcher.wait(Duration::from_millis(20));
        assert!(started.elapsed() >= Duration::from_millis(15));
    }

    #[test]
    fn a_file_created_in_a_watched_directory_ends_the_wait_early() {
        let directory = tempfile::tempdir().unwrap();
        let mut watcher = FileWatcher::directory(directory.path());
        assert!(watcher.inotify.is_some(), "inotify is expected on Linux");
        fs_err::write(directory.path().join("new"), b"x").unwrap();
        let started = Instant::now();
        watcher.wait(Duration::from_secs(5));
        assert!(started.elapsed() < Duration::from_secs(2));
        // The events were read: with no further change the next wait times out.
        let started = Instant::now();
        watcher.wait(Duration::from_millis(20));
        assert!(started.elapsed() >= Duration::from_millis(15));
    }

    #[test]
    fn a_missing_file_falls_back_to_polling() {
        let directory = tempfile::tempdir().unwrap();
        let watcher = FileWatcher::new(&directory.path().join("absent"));
        assert!(watcher.inotify.is_none());
    }
}
