//! `-u user[:group]` and `--group-add` resolved against the image's
//! /etc/passwd and /etc/group, with Docker's rules (moby/sys/user).

use std::path::Path;

use crate::in_root::read_in_root;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecUser {
    pub uid: u32,
    pub gid: u32,
    pub additional_gids: Vec<u32>,
    pub home: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UserError {
    #[error("unable to find user {0}: no matching entries in passwd file")]
    NoUser(String),
    #[error("unable to find group {0}: no matching entries in group file")]
    NoGroup(String),
    #[error("failed to read {path} in the container")]
    Read { path: String, kind: String },
}

struct PasswdEntry {
    name: String,
    uid: u32,
    gid: u32,
    home: String,
}

struct GroupEntry {
    name: String,
    gid: u32,
    members: Vec<String>,
}

fn read(root: &Path, path: &str) -> Result<String, UserError> {
    match read_in_root(root, Path::new(path)) {
        Ok(bytes) => Ok(bytes
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default()),
        Err(error) => Err(UserError::Read {
            path: path.to_owned(),
            kind: error.to_string(),
        }),
    }
}

fn passwd(text: &str) -> Vec<PasswdEntry> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            Some(PasswdEntry {
                name: fields.first()?.to_string(),
                uid: fields.get(2)?.parse().ok()?,
                gid: fields.get(3)?.parse().ok()?,
                home: fields.get(5).unwrap_or(&"/").to_string(),
            })
        })
        .collect()
}

fn groups(text: &str) -> Vec<GroupEntry> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            Some(GroupEntry {
                name: fields.first()?.to_string(),
                gid: fields.get(2)?.parse().ok()?,
                members: fields
                    .get(3)
                    .map(|members| {
                        members
                            .split(',')
                            .filter(|m| !m.is_empty())
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default(),
            })
        })
        .collect()
}

/// Resolves `spec` (`""`, `name`, `uid`, `name:group`, `uid:gid`, …) and
/// `group_add` inside the container root.
pub fn resolve_user(root: &Path, spec: &str, group_add: &[String]) -> Result<ExecUser, UserError> {
    resolve_user_from(
        &read(root, "/etc/passwd")?,
        &read(root, "/etc/group")?,
        spec,
        group_add,
    )
}

/// The same from the files' contents.
pub fn resolve_user_from(
    passwd_text: &str,
    group_text: &str,
    spec: &str,
    group_add: &[String],
) -> Result<ExecUser, UserError> {
    let users = passwd(passwd_text);
    let group_file = groups(group_text);
    let (user_part, group_part) = match spec.split_once(':') {
        Some((user, group)) => (user, Some(group)),
        None => (spec, None),
    };

    let mut resolved = ExecUser {
        uid: 0,
        gid: 0,
        additional_gids: Vec::new(),
        home: "/".to_owned(),
    };
    let entry = if user_part.is_empty() {
        users.iter().find(|entry| entry.uid == 0)
    } else if let Ok(uid) = user_part.parse::<u32>() {
        resolved.uid = uid;
        users.iter().find(|entry| entry.uid == uid)
    } else {
        let found = users.iter().find(|entry| entry.name == user_part);
        if found.is_none() {
            return Err(UserError::NoUser(user_part.to_owned()));
        }
        found
    };
    if let Some(entry) = entry {
        resolved.uid = entry.uid;
        resolved.gid = entry.gid;
        resolved.home = entry.home.clone();
    }

    match group_part {
        Some(group) if !group.is_empty() => {
            resolved.gid = lookup_group(&group_file, group)?;
            resolved.additional_gids.push(resolved.gid);
        }
        _ => {
            // The primary group is always among the supplementary groups
            // (runc does this; `id` shows it under groups=).
            resolved.additional_gids.push(resolved.gid);
            // Supplementary groups from the group file, only when no
            // explicit group was given (Docker's behaviour).
            if let Some(entry) = entry {
                let primary = resolved.gid;
                resolved.additional_gids.extend(
                    group_file
                        .iter()
                        .filter(|group| group.members.contains(&entry.name) && group.gid != primary)
                        .map(|group| group.gid),
                );
            }
        }
    }
    for group in group_add {
        let gid = lookup_group(&group_file, group)?;
        if !resolved.additional_gids.contains(&gid) {
            resolved.additional_gids.push(gid);
        }
    }
    Ok(resolved)
}

fn lookup_group(groups: &[GroupEntry], group: &str) -> Result<u32, UserError> {
    if let Ok(gid) = group.parse::<u32>() {
        return Ok(gid);
    }
    groups
        .iter()
        .find(|entry| entry.name == group)
        .map(|entry| entry.gid)
        .ok_or_else(|| UserError::NoGroup(group.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        fs_err::create_dir(root.path().join("etc")).unwrap();
        fs_err::write(
            root.path().join("etc/passwd"),
            "root:x:0:0:root:/root:/bin/sh\nberthuser:x:1000:1000::/home/berthuser:/bin/sh\n",
        )
        .unwrap();
        fs_err::write(
            root.path().join("etc/group"),
            "root:x:0:\nberthgroup:x:1000:\nextra:x:2000:berthuser\n",
        )
        .unwrap();
        root
    }

    #[test]
    fn docker_user_rules() {
        let root = root();
        let user = |spec: &str| resolve_user(root.path(), spec, &[]);
        assert_eq!(
            user("").unwrap(),
            ExecUser {
                uid: 0,
                gid: 0,
                additional_gids: vec![0],
                home: "/root".into()
            }
        );
        assert_eq!(
            user("berthuser").unwrap(),
            ExecUser {
                uid: 1000,
                gid: 1000,
                additional_gids: vec![1000, 2000],
                home: "/home/berthuser".into()
            }
        );
        assert_eq!(user("1000:extra").unwrap().gid, 2000);
        assert_eq!(user("1000:extra").unwrap().additional_gids, vec![2000]);
        let unknown = user("4242").unwrap();
        assert_eq!(
            (unknown.uid, unknown.gid, unknown.home.as_str()),
            (4242, 0, "/")
        );
        assert_eq!(user("4242:4343").unwrap().gid, 4343);
        assert_eq!(
            user("nobody").unwrap_err().to_string(),
            "unable to find user nobody: no matching entries in passwd file"
        );
        assert!(matches!(user("root:nogroup"), Err(UserError::NoGroup(_))));
        let added = resolve_user(root.path(), "", &["extra".into(), "3000".into()]).unwrap();
        assert_eq!(added.additional_gids, vec![0, 2000, 3000]);
    }

    #[test]
    fn missing_files_mean_numeric_only() {
        let root = tempfile::tempdir().unwrap();
        assert_eq!(resolve_user(root.path(), "7:8", &[]).unwrap().gid, 8);
        assert!(resolve_user(root.path(), "name", &[]).is_err());
    }
}
