//! `--chown=user[:group]`: numbers as given, names looked up in the
//! destination root's `/etc/passwd` and `/etc/group` (read inside that
//! root), as BuildKit resolves them.

use std::path::Path;

use super::root_path::resolve;
use crate::BuildError;

pub fn resolve_chown(root: &Path, spec: &str) -> Result<(u32, u32), BuildError> {
    let (user, group) = match spec.split_once(':') {
        Some((user, group)) => (user, Some(group)),
        None => (spec, None),
    };
    let passwd = read_database(root, "/etc/passwd");
    let (uid, primary_gid) = match user.parse::<u32>() {
        Ok(uid) => (uid, None),
        Err(_) => {
            let entry = find(&passwd, user).ok_or_else(|| {
                BuildError::Invalid(format!(
                    "unable to convert uid/gid chown string to host mapping: can't find uid for user {user}: no such user: {user}"
                ))
            })?;
            let uid = field(&entry, 2).unwrap_or(0);
            (uid, field(&entry, 3))
        }
    };
    let gid = match group {
        None => primary_gid.unwrap_or(uid),
        Some(group) => match group.parse::<u32>() {
            Ok(gid) => gid,
            Err(_) => {
                let groups = read_database(root, "/etc/group");
                let entry = find(&groups, group).ok_or_else(|| {
                    BuildError::Invalid(format!(
                        "unable to convert uid/gid chown string to host mapping: can't find gid for group {group}: no such group: {group}"
                    ))
                })?;
                field(&entry, 2).unwrap_or(0)
            }
        },
    };
    Ok((uid, gid))
}

fn read_database(root: &Path, path: &str) -> String {
    resolve(root, path, true)
        .ok()
        .and_then(|path| fs_err::read_to_string(path).ok())
        .unwrap_or_default()
}

fn find(database: &str, name: &str) -> Option<Vec<String>> {
    database
        .lines()
        .map(|line| line.split(':').map(str::to_owned).collect::<Vec<_>>())
        .find(|fields| fields.first().map(String::as_str) == Some(name))
}

fn field(entry: &[String], index: usize) -> Option<u32> {
    entry.get(index)?.parse().ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_come_from_the_roots_databases_and_numbers_as_given() {
        let directory = tempfile::tempdir().unwrap();
        let root = directory.path();
        fs_err::create_dir_all(root.join("etc")).unwrap();
        fs_err::write(
            root.join("etc/passwd"),
            "root:x:0:0:root:/root:/bin/sh\napp:x:1000:1001::/home/app:/bin/sh\n",
        )
        .unwrap();
        fs_err::write(root.join("etc/group"), "root:x:0:\nstaff:x:50:\n").unwrap();
        assert_eq!(resolve_chown(root, "app").unwrap(), (1000, 1001));
        assert_eq!(resolve_chown(root, "app:staff").unwrap(), (1000, 50));
        assert_eq!(resolve_chown(root, "12").unwrap(), (12, 12));
        assert_eq!(resolve_chown(root, "12:34").unwrap(), (12, 34));
        assert!(resolve_chown(root, "nobody")
            .unwrap_err()
            .to_string()
            .ends_with("no such user: nobody"));
        assert!(resolve_chown(root, "0:wheel")
            .unwrap_err()
            .to_string()
            .ends_with("no such group: wheel"));
    }
}
