//! Resolves a path inside a root the way moby's `symlink.FollowSymlinkInScope` and a
//! chrooted `filepath.EvalSymlinks` do: every symlink is followed with the root as `/`,
//! `..` stops at the root, and the result is an absolute path inside the root with no
//! symlinks left in it.
//!
//! Unlike `openat2`, this can resolve paths that do not exist (yet): Docker reports a
//! dangling link's would-be target as its `linkTarget`, and creates the missing parents
//! of a tar entry where a symlink points.

use std::io;

use super::sys::{self, RootDir};

/// The kernel's limit on symlinks in one lookup is 40; moby's resolver allows 255.
const MAX_SYMLINKS: u32 = 255;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Missing {
    /// Keep missing components as they are written (`FollowSymlinkInScope`).
    Keep,
    /// Fail with `ENOENT` (`EvalSymlinks`).
    Fail,
}

/// Resolves `path` (absolute or relative to the root) inside `root`.
pub(crate) fn resolve(root: &RootDir, path: &[u8], missing: Missing) -> io::Result<Vec<u8>> {
    let mut resolved: Vec<Vec<u8>> = Vec::new();
    // Components still to walk, the next one last.
    let mut pending: Vec<Vec<u8>> = components(path).rev().collect();
    let mut symlinks = 0u32;
    // Once a component is missing, nothing below it can exist.
    let mut exists = true;
    while let Some(component) = pending.pop() {
        if component == b".." {
            resolved.pop();
            continue;
        }
        if !exists {
            resolved.push(component);
            continue;
        }
        let parent = root.open_directory(&joined(&resolved))?;
        match sys::lstat_at(std::os::fd::AsFd::as_fd(&parent), &component)? {
            None => {
                if missing == Missing::Fail {
                    return Err(io::Error::from_raw_os_error(libc::ENOENT));
                }
                exists = false;
                resolved.push(component);
            }
            Some(stat) if sys::file_type(&stat) == nix::sys::stat::SFlag::S_IFLNK => {
                symlinks += 1;
                if symlinks > MAX_SYMLINKS {
                    return Err(io::Error::from_raw_os_error(libc::ELOOP));
                }
                let target = sys::read_link_at(std::os::fd::AsFd::as_fd(&parent), &component)?;
                if target.first() == Some(&b'/') {
                    resolved.clear();
                }
                pending.extend(components(&target).rev());
            }
            Some(_) => resolved.push(component),
        }
    }
    Ok(joined(&resolved))
}

fn components(path: &[u8]) -> impl DoubleEndedIterator<Item = Vec<u8>> + '_ {
    path.split(|byte| *byte == b'/')
        .filter(|part| !part.is_empty() && *part != b".")
        .map(<[u8]>::to_vec)
}

fn joined(components: &[Vec<u8>]) -> Vec<u8> {
    if components.is_empty() {
        return b"/".to_vec();
    }
    let mut path = Vec::new();
    for component in components {
        path.push(b'/');
        path.extend_from_slice(component);
    }
    path
}

#[cfg(test)]
mod tests {
    use fs_err::os::unix::fs::symlink;

    use super::*;

    fn resolved(root: &RootDir, path: &str, missing: Missing) -> io::Result<String> {
        resolve(root, path.as_bytes(), missing).map(|bytes| String::from_utf8(bytes).unwrap())
    }

    #[test]
    fn follows_links_inside_the_root() {
        let temp = tempfile::tempdir().unwrap();
        let base = temp.path();
        fs_err::create_dir_all(base.join("src/dir")).unwrap();
        fs_err::write(base.join("src/file"), "x").unwrap();
        symlink("file", base.join("src/link")).unwrap();
        symlink("/src/dir", base.join("src/abs")).unwrap();
        symlink("../../../../..", base.join("src/up")).unwrap();
        symlink("nowhere/deeper", base.join("src/dangling")).unwrap();
        symlink("loop", base.join("src/loop")).unwrap();
        fs_err::write(base.join("src/up-target"), "x").unwrap();
        let root = RootDir::open(base).unwrap();

        assert_eq!(
            resolved(&root, "/src/link", Missing::Keep).unwrap(),
            "/src/file"
        );
        assert_eq!(
            resolved(&root, "src/abs/x", Missing::Keep).unwrap(),
            "/src/dir/x"
        );
        assert_eq!(
            resolved(&root, "/src/up/etc/shadow", Missing::Keep).unwrap(),
            "/etc/shadow"
        );
        assert_eq!(
            resolved(&root, "/../../src", Missing::Keep).unwrap(),
            "/src"
        );
        assert_eq!(
            resolved(&root, "/src/dangling", Missing::Keep).unwrap(),
            "/src/nowhere/deeper"
        );
        assert_eq!(
            resolved(&root, "/src/dangling", Missing::Fail)
                .unwrap_err()
                .raw_os_error(),
            Some(libc::ENOENT)
        );
        assert_eq!(
            resolved(&root, "/src/loop", Missing::Keep)
                .unwrap_err()
                .raw_os_error(),
            Some(libc::ELOOP)
        );
        assert_eq!(
            resolved(&root, "/src/file/x", Missing::Keep)
                .unwrap_err()
                .raw_os_error(),
            Some(libc::ENOTDIR)
        );
    }
}
