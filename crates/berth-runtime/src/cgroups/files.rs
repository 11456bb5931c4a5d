//! The few cgroupfs file operations both managers use.
//!
//! These use `std::fs` rather than `fs-err` on purpose: every function here returns a
//! [`CgroupError`] that already names the path (and, for writes, the value), and callers need
//! the bare OS error underneath (`EBUSY` from `rmdir`, `ENOENT` for a missing controller file),
//! which `fs-err` would wrap a second time.

// The errors here name the path already and callers match the bare errno (above).
#![allow(clippy::disallowed_methods)]

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::Duration;

use nix::unistd::Pid;

use super::CgroupError;

/// Reads a cgroup file, with the trailing newline removed.
pub(crate) fn read(path: &Path) -> Result<String, CgroupError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text.trim_end().to_owned()),
        Err(source) => Err(CgroupError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Like [`read`], but a missing file (a controller that is not enabled) is `None`.
pub(crate) fn read_optional(path: &Path) -> Result<Option<String>, CgroupError> {
    match read(path) {
        Ok(text) => Ok(Some(text)),
        Err(CgroupError::Read { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            Ok(None)
        }
        Err(error) => Err(error),
    }
}

/// Reads a file holding one unsigned number; a missing file is `None`.
pub(crate) fn read_u64_optional(path: &Path) -> Result<Option<u64>, CgroupError> {
    read_optional(path)?
        .map(|text| parse_u64(path, &text))
        .transpose()
}

/// Writes `value` to an existing cgroup file in one `write(2)`, as the kernel expects.
///
/// The file is never created: in cgroupfs a missing file means the controller is not there,
/// and on a fake directory it means the test forgot to lay it out; both should fail loudly.
pub(crate) fn write(path: &Path, value: &str) -> Result<(), CgroupError> {
    tracing::debug!(path = %path.display(), value, "writing cgroup file");
    // O_TRUNC changes nothing on cgroupfs, but a fake tree's file must not keep a longer
    // old value's tail.
    let result = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .and_then(|mut file| file.write_all(value.as_bytes()));
    result.map_err(|source| CgroupError::Write {
        path: path.to_owned(),
        value: value.to_owned(),
        source,
    })
}

/// Opens an existing cgroup file for writing later (close-on-exec).
pub(crate) fn open_for_write(path: &Path) -> Result<std::os::fd::OwnedFd, CgroupError> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map(std::os::fd::OwnedFd::from)
        .map_err(|source| CgroupError::OpenFile {
            path: path.to_owned(),
            source,
        })
}

/// Creates a cgroup directory and any missing parents; an existing one is fine.
pub(crate) fn create_dir(path: &Path) -> Result<(), CgroupError> {
    std::fs::create_dir_all(path).map_err(|source| CgroupError::CreateDir {
        path: path.to_owned(),
        source,
    })
}

/// Parses `cgroup.procs` (one pid per line).
pub(crate) fn read_pids(path: &Path) -> Result<Vec<Pid>, CgroupError> {
    let text = read(path)?;
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            line.trim()
                .parse::<i32>()
                .map(Pid::from_raw)
                .map_err(|error| CgroupError::Parse {
                    path: path.to_owned(),
                    reason: format!("invalid pid {line:?}: {error}"),
                })
        })
        .collect()
}

/// Finds `key N` in a flat keyed file (`memory.events`, `memory.oom_control`, `cpu.stat`,
/// `memory.stat`). A missing key is `None`: older kernels lack `oom_kill`.
pub(crate) fn keyed_value(path: &Path, text: &str, key: &str) -> Result<Option<u64>, CgroupError> {
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        if fields.next() == Some(key) {
            let value = fields.next().unwrap_or_default();
            return parse_u64(path, value).map(Some);
        }
    }
    Ok(None)
}

pub(crate) fn parse_u64(path: &Path, text: &str) -> Result<u64, CgroupError> {
    text.trim().parse().map_err(|error| CgroupError::Parse {
        path: path.to_owned(),
        reason: format!("invalid number {text:?}: {error}"),
    })
}

/// How long `remove_dir` keeps retrying `EBUSY`: the last processes of a killed container
/// may still be exiting. runc and youki retry for a similar short while.
const REMOVE_RETRIES: [Duration; 6] = [
    Duration::from_millis(10),
    Duration::from_millis(20),
    Duration::from_millis(40),
    Duration::from_millis(80),
    Duration::from_millis(160),
    Duration::from_millis(320),
];

/// Removes a cgroup directory and every cgroup below it, deepest first (a container with its
/// own cgroup namespace may have made children; the kernel refuses to remove a parent first).
/// A directory that is already gone is fine.
pub(crate) fn remove_dir(path: &Path) -> Result<(), CgroupError> {
    let children = match std::fs::read_dir(path) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
            .map(|entry| entry.path())
            .collect::<Vec<PathBuf>>(),
        Err(source) if source.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(CgroupError::RemoveDir {
                path: path.to_owned(),
                source,
            })
        }
    };
    for child in children {
        remove_dir(&child)?;
    }
    let mut delays = REMOVE_RETRIES.iter();
    loop {
        match std::fs::remove_dir(path) {
            Ok(()) => return Ok(()),
            Err(source) if source.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(source) if source.kind() == io::ErrorKind::ResourceBusy => match delays.next() {
                Some(delay) => thread::sleep(*delay),
                None => {
                    return Err(CgroupError::RemoveDir {
                        path: path.to_owned(),
                        source,
                    })
                }
            },
            Err(source) => {
                return Err(CgroupError::RemoveDir {
                    path: path.to_owned(),
                    source,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_value_finds_the_key_and_tolerates_its_absence() {
        let path = Path::new("memory.events");
        let text = "low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0";
        assert_eq!(keyed_value(path, text, "oom_kill").unwrap(), Some(1));
        assert_eq!(keyed_value(path, text, "max").unwrap(), Some(12));
        assert_eq!(
            keyed_value(path, "oom_kill_disable 0", "oom_kill").unwrap(),
            None
        );
        assert!(keyed_value(path, "oom_kill x", "oom_kill").is_err());
    }

    #[test]
    fn write_never_creates_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let error = write(&dir.path().join("memory.max"), "1").unwrap_err();
        assert!(error.to_string().contains("memory.max"), "{error}");
        assert!(!dir.path().join("memory.max").exists());
    }

    #[test]
    fn read_pids_parses_one_pid_per_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cgroup.procs");
        std::fs::write(&path, "12\n345\n").unwrap();
        assert_eq!(
            read_pids(&path).unwrap(),
            vec![Pid::from_raw(12), Pid::from_raw(345)]
        );
    }

    #[test]
    fn remove_dir_of_a_missing_directory_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        remove_dir(&dir.path().join("gone")).unwrap();
    }
}
