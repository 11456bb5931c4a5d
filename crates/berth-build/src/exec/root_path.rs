//! Names inside a root on the host (a build context, an image's mounted
//! root) resolved as if chrooted there: `..` stops at the root, and a
//! symlink — absolute or relative — is followed inside it, never out.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};

/// How many symlinks one resolution follows before it gives up (Linux's
/// own limit).
const MAX_LINKS: usize = 40;

/// `path` (absolute or relative: both start at the root) normalized
/// lexically, `..` kept at the root: `a/../../b` → `b`. Empty for the root.
pub fn clean(path: &str) -> Vec<OsString> {
    let mut parts: Vec<OsString> = Vec::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(part) => parts.push(part.to_owned()),
            Component::ParentDir => {
                parts.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    parts
}

/// The host path of `path` inside `root` with every symlink followed in
/// the root; with `follow_last` false the last component is not
/// followed. Missing components are kept as named (the caller's lstat
/// says they are missing).
pub fn resolve(root: &Path, path: &str, follow_last: bool) -> std::io::Result<PathBuf> {
    let mut pending: Vec<OsString> = clean(path).into_iter().rev().collect();
    let mut resolved: Vec<OsString> = Vec::new();
    let mut links = 0;
    while let Some(part) = pending.pop() {
        if part == ".." {
            resolved.pop();
            continue;
        }
        let candidate = join(root, &resolved).join(&part);
        let is_last = pending.is_empty();
        let metadata = match fs_err::symlink_metadata(&candidate) {
            Ok(metadata) => metadata,
            Err(_) => {
                resolved.push(part);
                continue;
            }
        };
        if !metadata.file_type().is_symlink() || (is_last && !follow_last) {
            resolved.push(part);
            continue;
        }
        links += 1;
        if links > MAX_LINKS {
            return Err(std::io::Error::from_raw_os_error(libc::ELOOP));
        }
        let target = fs_err::read_link(&candidate)?;
        if target.is_absolute() {
            resolved.clear();
        }
        // The target's parts go first, `..` included (handled above).
        for component in target.components().rev() {
            match component {
                Component::Normal(part) => pending.push(part.to_owned()),
                Component::ParentDir => pending.push(OsString::from("..")),
                _ => {}
            }
        }
    }
    Ok(join(root, &resolved))
}

fn join(root: &Path, parts: &[OsString]) -> PathBuf {
    let mut path = root.to_path_buf();
    for part in parts {
        path.push(part);
    }
    path
}

/// `name` as bytes (tar entry names and hashes are bytes).
pub fn bytes(name: &Path) -> Vec<u8> {
    name.as_os_str().to_owned().into_vec()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use fs_err::os::unix::fs::symlink;

    #[test]
    fn clean_keeps_dot_dot_at_the_root() {
        let parts = |text: &str| {
            clean(text)
                .into_iter()
                .map(|part| part.into_string().unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(parts("a/../../b/./c/"), ["b", "c"]);
        assert_eq!(parts("/../.."), Vec::<String>::new());
        assert_eq!(parts("./x"), ["x"]);
    }

    #[test]
    fn symlinks_are_followed_inside_the_root_only() {
        let directory = tempfile::tempdir().unwrap();
        let root = directory.path();
        fs_err::create_dir_all(root.join("real/sub")).unwrap();
        symlink("/real", root.join("absolute")).unwrap();
        symlink("../../../real", root.join("real/sub/escape")).unwrap();
        symlink("/etc/passwd", root.join("host")).unwrap();
        symlink("loop", root.join("loop")).unwrap();

        assert_eq!(
            resolve(root, "/absolute/sub", true).unwrap(),
            root.join("real/sub")
        );
        assert_eq!(
            resolve(root, "real/sub/escape/sub", true).unwrap(),
            root.join("real/sub")
        );
        // The host's /etc/passwd is the root's.
        assert_eq!(
            resolve(root, "host", true).unwrap(),
            root.join("etc/passwd")
        );
        assert_eq!(resolve(root, "host", false).unwrap(), root.join("host"));
        let error = resolve(root, "loop", true).unwrap_err();
        assert_eq!(error.raw_os_error(), Some(libc::ELOOP));
    }
}
