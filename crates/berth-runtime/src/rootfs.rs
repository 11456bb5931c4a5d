//! The container root on the host: overlayfs with the image layers as lower
//! dirs and a per-container upper/work dir. Mounted on the host (not only in
//! the container's namespace) so that `cp`, `export` and `diff` can reach it.

use std::path::{Path, PathBuf};

use nix::mount::{mount, umount2, MntFlags, MsFlags};

#[derive(Debug, thiserror::Error)]
pub enum RootfsError {
    #[error("failed to create {path:?}")]
    Create {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to mount the container root at {target:?} (lowerdir has {layers} layers)")]
    Mount {
        target: PathBuf,
        layers: usize,
        #[source]
        source: nix::Error,
    },
    #[error("failed to unmount {target:?}")]
    Unmount {
        target: PathBuf,
        #[source]
        source: nix::Error,
    },
}

/// Where one container's root lives.
#[derive(Clone, Debug)]
pub struct RootfsPaths {
    pub upper: PathBuf,
    pub work: PathBuf,
    pub merged: PathBuf,
}

impl RootfsPaths {
    pub fn under(container_directory: &Path) -> Self {
        Self {
            upper: container_directory.join("upper"),
            work: container_directory.join("work"),
            merged: container_directory.join("merged"),
        }
    }
}

/// Mounts overlayfs at `paths.merged`. `layers` are bottom first (as the
/// image lists them); overlayfs wants the top first.
pub fn mount_rootfs(layers: &[PathBuf], paths: &RootfsPaths) -> Result<(), RootfsError> {
    if is_mounted(&paths.merged) {
        return Ok(());
    }
    mount_overlay(layers, paths)
}

/// Mounts without checking for an existing mount (inside a fresh mount
/// namespace, where the answer is known).
pub fn mount_overlay(layers: &[PathBuf], paths: &RootfsPaths) -> Result<(), RootfsError> {
    for directory in [&paths.upper, &paths.work, &paths.merged] {
        fs_err::create_dir_all(directory).map_err(|source| RootfsError::Create {
            path: directory.clone(),
            source,
        })?;
    }
    let lower: Vec<String> = layers
        .iter()
        .rev()
        .map(|layer| escape(&layer.display().to_string()))
        .collect();
    // An image with no layers (possible with `import` of an empty tar is not,
    // but a config with zero diff_ids is) still needs a lower dir.
    let lower = if lower.is_empty() {
        let empty = paths.work.with_file_name("empty-lower");
        fs_err::create_dir_all(&empty).map_err(|source| RootfsError::Create {
            path: empty.clone(),
            source,
        })?;
        escape(&empty.display().to_string())
    } else {
        lower.join(":")
    };
    let data = format!(
        // redirect_dir and metacopy off: `diff` and `commit` read the upper
        // dir as plain files and whiteouts (berth-image `changes`).
        "lowerdir={lower},upperdir={},workdir={},redirect_dir=off,metacopy=off",
        escape(&paths.upper.display().to_string()),
        escape(&paths.work.display().to_string())
    );
    mount(
        Some("overlay"),
        &paths.merged,
        Some("overlay"),
        MsFlags::empty(),
        Some(data.as_str()),
    )
    .map_err(|source| RootfsError::Mount {
        target: paths.merged.clone(),
        layers: layers.len(),
        source,
    })
}

/// Mounts `layers` (bottom first, at least two: a lone lower needs an
/// upper) as a read-only overlay at `target`, with no writable layer: an
/// image's files as they stack (`build --output`).
pub fn mount_readonly_overlay(layers: &[PathBuf], target: &Path) -> Result<(), RootfsError> {
    let lower: Vec<String> = layers
        .iter()
        .rev()
        .map(|layer| escape(&layer.display().to_string()))
        .collect();
    mount(
        Some("overlay"),
        target,
        Some("overlay"),
        MsFlags::MS_RDONLY,
        Some(format!("lowerdir={}", lower.join(":")).as_str()),
    )
    .map_err(|source| RootfsError::Mount {
        target: target.to_path_buf(),
        layers: layers.len(),
        source,
    })
}

/// Unmounts the container root; not mounted is fine.
pub fn unmount_rootfs(paths: &RootfsPaths) -> Result<(), RootfsError> {
    if !is_mounted(&paths.merged) {
        return Ok(());
    }
    umount2(&paths.merged, MntFlags::MNT_DETACH).map_err(|source| RootfsError::Unmount {
        target: paths.merged.clone(),
        source,
    })
}

/// Overlay mount options separate with `,` and `:`; escape them.
fn escape(path: &str) -> String {
    path.replace('\\', "\\\\")
        .replace(',', "\\,")
        .replace(':', "\\:")
}

/// True when `path` is a mount point. The kernel says so in one `statx`
/// (`STATX_ATTR_MOUNT_ROOT`, Linux 5.8); older kernels' answer comes from
/// mountinfo, which costs a read of the whole mount table.
pub fn is_mounted(path: &Path) -> bool {
    match mount_root_attribute(path) {
        Some(mounted) => mounted,
        None => listed_in_mountinfo(path),
    }
}

/// `Some(is a mount root)` when the kernel reports the attribute; `None`
/// when it does not; `Some(false)` for a path that does not exist.
fn mount_root_attribute(path: &Path) -> Option<bool> {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return Some(false);
    };
    // SAFETY: statx is plain data, for which all zeroes is a valid value.
    let mut buffer: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: statx fills the buffer we own from a NUL-terminated path.
    let status = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            c_path.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW | libc::AT_STATX_DONT_SYNC,
            0,
            &mut buffer,
        )
    };
    if status != 0 {
        return match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::ENOENT | libc::ENOTDIR) => Some(false),
            _ => None,
        };
    }
    let known = buffer.stx_attributes_mask & libc::STATX_ATTR_MOUNT_ROOT as u64 != 0;
    known.then_some(buffer.stx_attributes & libc::STATX_ATTR_MOUNT_ROOT as u64 != 0)
}

fn listed_in_mountinfo(path: &Path) -> bool {
    let Ok(mountinfo) = fs_err::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let wanted = path.display().to_string();
    mountinfo.lines().any(|line| {
        line.split(' ')
            .nth(4)
            .is_some_and(|mount_point| unescape_octal(mount_point) == wanted)
    })
}

fn unescape_octal(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut output = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'\\' && index + 4 <= bytes.len() {
            if let Ok(value) = u8::from_str_radix(&text[index + 1..index + 4], 8) {
                output.push(value);
                index += 4;
                continue;
            }
        }
        output.push(bytes[index]);
        index += 1;
    }
    String::from_utf8_lossy(&output).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_overlay_separators() {
        assert_eq!(escape("/a,b:c"), "/a\\,b\\:c");
        assert_eq!(unescape_octal("/a\\040b"), "/a b");
    }

    #[test]
    fn mounts_and_unmounts_an_overlay() {
        let directory = tempfile::tempdir().unwrap();
        let lower = directory.path().join("lower");
        fs_err::create_dir(&lower).unwrap();
        fs_err::write(lower.join("file"), "lower").unwrap();
        let paths = RootfsPaths::under(&directory.path().join("container"));
        mount_rootfs(std::slice::from_ref(&lower), &paths).unwrap();
        assert!(is_mounted(&paths.merged));
        fs_err::write(paths.merged.join("new"), "upper").unwrap();
        assert_eq!(
            fs_err::read_to_string(paths.merged.join("file")).unwrap(),
            "lower"
        );
        unmount_rootfs(&paths).unwrap();
        assert!(!is_mounted(&paths.merged));
        assert!(paths.upper.join("new").exists());
        assert!(!lower.join("new").exists());
    }

    /// The statx attribute and mountinfo agree, for a bind mount of the
    /// same file system too (same device as its parent).
    #[test]
    fn mount_root_attribute_agrees_with_mountinfo() {
        let directory = tempfile::tempdir().unwrap();
        let source = directory.path().join("source");
        let target = directory.path().join("target");
        fs_err::create_dir(&source).unwrap();
        fs_err::create_dir(&target).unwrap();
        assert_eq!(mount_root_attribute(&target), Some(false));
        assert!(!listed_in_mountinfo(&target));
        mount(
            Some(&source),
            &target,
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        )
        .unwrap();
        let attribute = mount_root_attribute(&target);
        let listed = listed_in_mountinfo(&target);
        umount2(&target, MntFlags::MNT_DETACH).unwrap();
        assert_eq!(attribute, Some(true));
        assert!(listed);
        assert_eq!(
            mount_root_attribute(&directory.path().join("missing")),
            Some(false)
        );
        assert!(!is_mounted(&directory.path().join("missing")));
    }
}
