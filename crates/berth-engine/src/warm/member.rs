//! A pool member on disk: `<run-root>/warm/<id prefix>/` holds
//! `member.json` and the member monitor's socket. The socket's name says
//! who has the member: `offer.sock` while it is free; the run that takes it
//! renames it `claimed.sock`, and whoever ends it (its own TTL, `warm rm`,
//! a retired image) renames it `retired.sock`. rename(2) lets exactly one
//! of them win, so a member is never used twice.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// What `warm ls` shows and a claim checks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemberInfo {
    /// The id the container gets when a run claims this member.
    pub id: String,
    pub image_id: String,
    /// The image as the pool was asked for (`busybox:latest`).
    pub reference: String,
    /// Unix seconds.
    pub created: i64,
    pub monitor_pid: i32,
    pub monitor_start_time: u64,
    /// The sandbox's first process (pid 1 of the container once claimed).
    pub sandbox_pid: i32,
    pub ttl_seconds: u64,
    /// The pool's depth, for the refill after a claim.
    pub depth: u32,
    /// What a run must match to use this member (see `claim::sandbox_key`).
    pub key: serde_json::Value,
    /// The `berth warm` flags it was made with (`--isolation vm`, …): the
    /// pool it belongs to, and what its refill asks for.
    #[serde(default)]
    pub flags: Vec<String>,
}

/// Who took a member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Taker {
    Claim,
    Retire,
}

#[derive(Clone, Debug)]
pub struct MemberDir {
    pub path: PathBuf,
}

/// The directory of every member.
pub fn pool_dir(run_root: &Path) -> PathBuf {
    run_root.join("warm")
}

impl MemberDir {
    /// Named by the first 16 hex digits of the id: socket paths stay well
    /// under the 108 bytes a unix socket address allows.
    pub fn new(run_root: &Path, id: &str) -> Self {
        Self {
            path: pool_dir(run_root).join(&id[..id.len().min(16)]),
        }
    }

    pub fn info_path(&self) -> PathBuf {
        self.path.join("member.json")
    }

    pub fn offer_path(&self) -> PathBuf {
        self.path.join("offer.sock")
    }

    pub fn taken_path(&self, taker: Taker) -> PathBuf {
        self.path.join(match taker {
            Taker::Claim => "claimed.sock",
            Taker::Retire => "retired.sock",
        })
    }

    pub fn read_info(&self) -> Option<MemberInfo> {
        let bytes = fs_err::read(self.info_path()).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Written whole under a temporary name, then renamed into place.
    pub fn write_info(&self, info: &MemberInfo) -> std::io::Result<()> {
        let staging = self.path.join("member.json.tmp");
        fs_err::write(&staging, serde_json::to_vec(info)?)?;
        fs_err::rename(staging, self.info_path())
    }

    /// While the member is built: its info with the building monitor's pid
    /// (`member.json` comes once it is offered).
    fn building_path(&self) -> PathBuf {
        self.path.join("building.json")
    }

    pub fn write_building(&self, info: &MemberInfo) -> std::io::Result<()> {
        let staging = self.path.join("building.json.tmp");
        fs_err::write(&staging, serde_json::to_vec(info)?)?;
        fs_err::rename(staging, self.building_path())
    }

    /// Takes the member for `taker`; false when someone else took it first.
    pub fn take(&self, taker: Taker) -> bool {
        fs_err::rename(self.offer_path(), self.taken_path(taker)).is_ok()
    }

    /// Free to claim (its offer socket is still there).
    pub fn is_offered(&self) -> bool {
        self.offer_path().exists()
    }

    pub fn remove(&self) {
        if let Err(error) = fs_err::remove_dir_all(&self.path) {
            if error.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(path = %self.path.display(), %error, "failed to remove a pool member");
            }
        }
    }
}

/// Every member directory with its info (a member still being built has
/// no info yet and is left out).
pub fn members(run_root: &Path) -> Vec<(MemberDir, MemberInfo)> {
    let Ok(entries) = fs_err::read_dir(pool_dir(run_root)) else {
        return Vec::new();
    };
    let mut found: Vec<(MemberDir, MemberInfo)> = entries
        .flatten()
        .filter(|entry| entry.file_type().map(|kind| kind.is_dir()).unwrap_or(false))
        .filter_map(|entry| {
            let dir = MemberDir { path: entry.path() };
            let info = dir.read_info()?;
            Some((dir, info))
        })
        .collect();
    // Oldest first: a claim takes the member that has waited longest.
    found.sort_by(|left, right| (left.1.created, &left.1.id).cmp(&(right.1.created, &right.1.id)));
    found
}

/// Members still being built (no `member.json` yet), with the info their
/// monitor wrote when it began. (A directory with neither file is one
/// `fill` has just made, before its monitor runs.)
pub fn building(run_root: &Path) -> Vec<(MemberDir, MemberInfo)> {
    let Ok(entries) = fs_err::read_dir(pool_dir(run_root)) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| entry.file_type().map(|kind| kind.is_dir()).unwrap_or(false))
        .map(|entry| MemberDir { path: entry.path() })
        .filter(|dir| !dir.info_path().exists())
        .filter_map(|dir| {
            let bytes = fs_err::read(dir.building_path()).ok()?;
            let info = serde_json::from_slice(&bytes).ok()?;
            Some((dir, info))
        })
        .collect()
}

/// The member's monitor is the process that wrote its info (pid reuse is
/// caught by the start time).
pub fn monitor_alive(info: &MemberInfo) -> bool {
    info.monitor_pid > 0
        && crate::containers::state::process_start_time(info.monitor_pid)
            == Some(info.monitor_start_time)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(id: &str, created: i64) -> MemberInfo {
        MemberInfo {
            id: id.to_owned(),
            image_id: "sha256:abc".to_owned(),
            reference: "busybox:latest".to_owned(),
            created,
            monitor_pid: 0,
            monitor_start_time: 0,
            sandbox_pid: 0,
            ttl_seconds: 60,
            depth: 2,
            key: serde_json::json!({}),
            flags: Vec::new(),
        }
    }

    #[test]
    fn exactly_one_taker_wins_and_members_list_oldest_first() {
        let run_root = tempfile::tempdir().unwrap();
        let newer = MemberDir::new(run_root.path(), &"b".repeat(64));
        let older = MemberDir::new(run_root.path(), &"a".repeat(64));
        for (dir, created) in [(&newer, 20), (&older, 10)] {
            fs_err::create_dir_all(&dir.path).unwrap();
            fs_err::write(dir.offer_path(), b"").unwrap();
            dir.write_info(&info(
                &dir.path.file_name().unwrap().to_string_lossy(),
                created,
            ))
            .unwrap();
        }
        let listed: Vec<i64> = members(run_root.path())
            .iter()
            .map(|(_, info)| info.created)
            .collect();
        assert_eq!(listed, vec![10, 20]);

        assert!(older.is_offered());
        assert!(older.take(Taker::Claim));
        assert!(
            !older.take(Taker::Retire),
            "a claimed member cannot be retired"
        );
        assert!(!older.take(Taker::Claim), "nor claimed twice");
        assert!(!older.is_offered());
        assert!(newer.take(Taker::Retire));
        assert!(!newer.take(Taker::Claim));
    }

    #[test]
    fn a_member_being_built_is_found_apart_from_the_offered_ones() {
        let run_root = tempfile::tempdir().unwrap();
        let dir = MemberDir::new(run_root.path(), &"d".repeat(64));
        fs_err::create_dir_all(&dir.path).unwrap();
        dir.write_building(&info(&"d".repeat(64), 5)).unwrap();
        assert!(members(run_root.path()).is_empty());
        let found = building(run_root.path());
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].1.created, 5);
        // Once offered, it is a member like the others.
        found[0].0.write_info(&info(&"d".repeat(64), 5)).unwrap();
        assert!(building(run_root.path()).is_empty());
        assert_eq!(members(run_root.path()).len(), 1);
    }

    #[test]
    fn a_member_without_info_is_not_listed() {
        let run_root = tempfile::tempdir().unwrap();
        let building = MemberDir::new(run_root.path(), &"c".repeat(64));
        fs_err::create_dir_all(&building.path).unwrap();
        assert!(members(run_root.path()).is_empty());
    }
}
