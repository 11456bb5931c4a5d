//! Host device nodes that `--device` and `--privileged` copy into a container:
//! their type, numbers, mode and owner, read with `lstat` as runc reads them.

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Access, DeviceKind, DeviceRule};

/// A device node to make in the container.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceNode {
    /// Absolute path inside the container.
    pub path: PathBuf,
    /// [`DeviceKind::Char`] or [`DeviceKind::Block`].
    pub kind: DeviceKind,
    pub major: u32,
    pub minor: u32,
    /// Permission bits (`st_mode & 0o7777`).
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
}

impl DeviceNode {
    /// The rule that lets the container use this node with `access`.
    pub fn rule(&self, access: Access) -> DeviceRule {
        DeviceRule::allow(self.kind, self.major, self.minor, access)
    }
}

/// Why a `--device` could not be added. The message is the daemon's, cause
/// included, so that `berth run` fails with the words `docker run` prints.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error("error gathering device information while adding custom device {path:?}: {reason}")]
    Gather { path: String, reason: String },
}

/// The device at `host` (a symlink is followed once, as Docker resolves it),
/// or every device below it when it is a directory, each at the matching path
/// below `container`. Nothing found is Docker's error: `no such file or
/// directory`, or `not a device node`.
pub fn devices_from_path(host: &str, container: &Path) -> Result<Vec<DeviceNode>, DeviceError> {
    let gather = |reason: String| DeviceError::Gather {
        path: host.to_owned(),
        reason,
    };
    let mut resolved = PathBuf::from(host);
    if fs_err::symlink_metadata(host).is_ok_and(|metadata| metadata.file_type().is_symlink()) {
        if let Ok(target) = fs_err::canonicalize(host) {
            resolved = target;
        }
    }
    let not_a_device = || gather("not a device node".to_owned());
    match node_at(&resolved, container) {
        Ok(Some(node)) => return Ok(vec![node]),
        Ok(None) => {}
        Err(error) => return Err(gather(go_error_text(&error))),
    }
    if !fs_err::metadata(&resolved).is_ok_and(|metadata| metadata.is_dir()) {
        return Err(not_a_device());
    }
    let mut nodes = Vec::new();
    walk(&resolved, &[], &mut |path| {
        let relative = path.strip_prefix(&resolved).unwrap_or(path);
        if let Ok(Some(node)) = node_at(path, &container.join(relative)) {
            nodes.push(node);
        }
    });
    if nodes.is_empty() {
        return Err(not_a_device());
    }
    Ok(nodes)
}

/// Every device node of the host's /dev, for `--privileged` (runc's
/// `HostDevices`): not below `pts`, `shm`, `fd`, `mqueue` or the `.lxc`,
/// `.lxd-mounts` and `.udev` directories, and not `/dev/console`, which
/// belongs to the container's own terminal.
pub fn host_devices() -> Vec<DeviceNode> {
    let dev = Path::new("/dev");
    let mut nodes = Vec::new();
    walk(dev, &SKIPPED_DIRECTORIES, &mut |path| {
        if path == Path::new("/dev/console") {
            return;
        }
        if let Ok(Some(node)) = node_at(path, path) {
            nodes.push(node);
        }
    });
    nodes
}

/// Directories of /dev whose nodes `--privileged` does not copy.
const SKIPPED_DIRECTORIES: [&str; 7] =
    ["pts", "shm", "fd", "mqueue", ".lxc", ".lxd-mounts", ".udev"];

/// Every non-directory below `directory`, sorted, symlinks not followed, not
/// descending into directories named in `skipped`.
fn walk(directory: &Path, skipped: &[&str], visit: &mut dyn FnMut(&Path)) {
    let Ok(entries) = fs_err::read_dir(directory) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .collect();
    paths.sort();
    for path in paths {
        match fs_err::symlink_metadata(&path) {
            Ok(metadata) if metadata.is_dir() => {
                let skip = path
                    .file_name()
                    .is_some_and(|name| skipped.iter().any(|skip| name == *skip));
                if !skip {
                    walk(&path, skipped, visit);
                }
            }
            Ok(_) => visit(&path),
            Err(_) => {}
        }
    }
}

/// The node at `host` (not following a symlink) placed at `container`; `None`
/// when it is not a device.
fn node_at(host: &Path, container: &Path) -> io::Result<Option<DeviceNode>> {
    // std's error: Docker's message is built from the bare errno (go_error_text) and names
    // the path itself.
    #[allow(clippy::disallowed_methods)]
    let metadata = std::fs::symlink_metadata(host)?;
    let file_type = metadata.file_type();
    let kind = if file_type.is_char_device() {
        DeviceKind::Char
    } else if file_type.is_block_device() {
        DeviceKind::Block
    } else {
        return Ok(None);
    };
    let device = metadata.rdev();
    Ok(Some(DeviceNode {
        path: container.to_owned(),
        kind,
        major: libc::major(device),
        minor: libc::minor(device),
        mode: metadata.mode() & 0o7777,
        uid: metadata.uid(),
        gid: metadata.gid(),
    }))
}

/// An OS error as Go prints it (`no such file or directory`), which is what
/// Docker's message carries.
fn go_error_text(error: &io::Error) -> String {
    match error.raw_os_error() {
        Some(code) => {
            let text = nix::errno::Errno::from_raw(code).desc();
            let mut characters = text.chars();
            match characters.next() {
                Some(first) => first.to_lowercase().chain(characters).collect(),
                None => text.to_owned(),
            }
        }
        None => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_node_keeps_its_numbers_mode_and_owner() {
        let nodes = devices_from_path("/dev/null", Path::new("/dev/other")).unwrap();
        assert_eq!(nodes.len(), 1);
        let node = &nodes[0];
        assert_eq!(node.path, Path::new("/dev/other"));
        assert_eq!(
            (node.kind, node.major, node.minor),
            (DeviceKind::Char, 1, 3)
        );
        assert_eq!(node.mode, 0o666);
        assert_eq!(
            node.rule(Access::READ).to_string(),
            "c 1:3 r",
            "the rule carries the requested access"
        );
    }

    #[test]
    fn missing_and_non_device_paths_fail_with_dockers_words() {
        let missing = devices_from_path("/dev/berth-no-such-device", Path::new("/dev/x"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            missing,
            "error gathering device information while adding custom device \
             \"/dev/berth-no-such-device\": no such file or directory"
        );
        let file = tempfile::NamedTempFile::new().unwrap();
        let path = file.path().to_str().unwrap();
        let not_device = devices_from_path(path, Path::new("/dev/x"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            not_device,
            format!(
                "error gathering device information while adding custom device \"{path}\": \
                 not a device node"
            )
        );
    }

    #[test]
    fn a_directory_gives_the_devices_below_it() {
        let dir = tempfile::tempdir().unwrap();
        fs_err::os::unix::fs::symlink("/dev/null", dir.path().join("link")).unwrap();
        let host = dir.path().to_str().unwrap();
        // Symlinks inside are not devices; a directory without devices is an error.
        assert!(devices_from_path(host, Path::new("/dev/d")).is_err());
        if Path::new("/dev/net/tun").exists() {
            let nodes = devices_from_path("/dev/net", Path::new("/dev/mynet")).unwrap();
            assert!(nodes
                .iter()
                .any(|node| node.path == Path::new("/dev/mynet/tun") && node.minor == 200));
        }
    }

    #[test]
    fn host_devices_skip_console_and_pts() {
        let nodes = host_devices();
        assert!(nodes.iter().any(|node| node.path == Path::new("/dev/null")));
        assert!(nodes.iter().all(
            |node| node.path != Path::new("/dev/console") && !node.path.starts_with("/dev/pts")
        ));
    }
}
