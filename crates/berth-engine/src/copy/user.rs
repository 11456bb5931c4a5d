//! The owner `cp -a` gives copied files: the container's configured user, looked up in
//! the container's own `/etc/passwd` and `/etc/group` (moby
//! `daemon/archive_tarcopyoptions_unix.go`, `getUIDGID`):
//!
//! - `user[:group]`, each a name or a number; an empty part means root (0);
//! - a numeric user without a passwd entry gets gid 0 (as `docker run --user 12345`);
//! - a user or group name that is not found is an error.

use super::error::CopyError;
use super::sys::RootDir;

/// Resolves `user` (the container's `Config.User`) to ids.
pub(crate) fn lookup(root: &RootDir, user: &str) -> Result<(u32, u32), CopyError> {
    let (user_part, group_part) = user.split_once(':').unwrap_or((user, ""));
    let (mut uid, mut gid) = (0, 0);
    if !user_part.is_empty() {
        (uid, gid) = lookup_user(root, user_part)?;
    }
    if !group_part.is_empty() {
        gid = lookup_group(root, group_part)?;
    }
    Ok((uid, gid))
}

/// A number Go's `strconv.ParseUint(s, 10, 32)` accepts and that fits an int32.
fn numeric(value: &str) -> Option<u32> {
    value
        .parse::<u32>()
        .ok()
        .filter(|id| *id <= i32::MAX as u32)
}

fn lookup_user(root: &RootDir, user: &str) -> Result<(u32, u32), CopyError> {
    let passwd = read_database(root, "/etc/passwd")?;
    let entries = records(&passwd).filter_map(|fields| {
        let uid = numeric(fields.get(2)?)?;
        let gid = numeric(fields.get(3)?)?;
        Some((fields[0].to_owned(), uid, gid))
    });
    if let Some(uid) = numeric(user) {
        let gid = entries
            .into_iter()
            .find(|(_, found, _)| *found == uid)
            .map_or(0, |(_, _, gid)| gid);
        return Ok((uid, gid));
    }
    let found = entries
        .into_iter()
        .find(|(name, _, _)| name == user)
        .map(|(_, uid, gid)| (uid, gid));
    found.ok_or_else(|| CopyError::UnknownUser {
        user: user.to_owned(),
    })
}

fn lookup_group(root: &RootDir, group: &str) -> Result<u32, CopyError> {
    if let Some(gid) = numeric(group) {
        return Ok(gid);
    }
    let database = read_database(root, "/etc/group")?;
    let found = records(&database)
        .find(|fields| fields[0] == group)
        .and_then(|fields| numeric(fields.get(2)?));
    found.ok_or_else(|| CopyError::UnknownGroup {
        group: group.to_owned(),
    })
}

/// The file's text, or empty when the container has none.
fn read_database(root: &RootDir, path: &'static str) -> Result<String, CopyError> {
    let read_error = |source| CopyError::ReadUserDatabase { path, source };
    let fd = match root.open_in(
        path.as_bytes(),
        nix::fcntl::OFlag::O_RDONLY,
        nix::sys::stat::Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(error) if super::sys::is_not_found(&error) => return Ok(String::new()),
        Err(error) => return Err(read_error(error)),
    };
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::fs::File::from(fd), &mut bytes).map_err(read_error)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// `name:…:…` lines split at `:`, comments and blank lines skipped.
fn records(text: &str) -> impl Iterator<Item = Vec<&str>> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| line.split(':').collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_and_groups_come_from_the_container() {
        let temp = tempfile::tempdir().unwrap();
        fs_err::create_dir(temp.path().join("etc")).unwrap();
        fs_err::write(
            temp.path().join("etc/passwd"),
            "root:x:0:0:root:/root:/bin/sh\nwww-data:x:33:33::/var/www:/bin/false\n",
        )
        .unwrap();
        fs_err::write(temp.path().join("etc/group"), "root:x:0:\nstaff:x:50:\n").unwrap();
        let root = RootDir::open(temp.path()).unwrap();
        assert_eq!(lookup(&root, "www-data").unwrap(), (33, 33));
        assert_eq!(lookup(&root, "33").unwrap(), (33, 33));
        assert_eq!(lookup(&root, "12345").unwrap(), (12345, 0));
        assert_eq!(lookup(&root, "www-data:staff").unwrap(), (33, 50));
        assert_eq!(lookup(&root, "www-data:7").unwrap(), (33, 7));
        assert_eq!(lookup(&root, ":33").unwrap(), (0, 33));
        assert_eq!(lookup(&root, "33:").unwrap(), (33, 33));
        assert!(matches!(
            lookup(&root, "nobody"),
            Err(CopyError::UnknownUser { .. })
        ));
        assert!(matches!(
            lookup(&root, "root:nogroup"),
            Err(CopyError::UnknownGroup { .. })
        ));
    }
}
