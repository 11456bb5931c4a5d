//! A container's record in the state directory, its status (derived, as runc derives it,
//! from its init process and exec FIFO), and the OCI state JSON (`state`, hooks' stdin).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::config::Spec;

/// The version of the runtime specification berth implements (the state's `ociVersion`).
pub const OCI_VERSION: &str = "1.0.2";

/// What berth keeps about one container, `<root>/<id>/state.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub id: String,
    pub bundle: PathBuf,
    pub rootfs: PathBuf,
    /// The init process (0 before it exists).
    pub pid: i32,
    /// Its start time in clock ticks (`/proc/PID/stat` field 22), so that a reused pid is
    /// not mistaken for the container.
    pub pid_start: u64,
    /// RFC 3339, nanoseconds, UTC.
    pub created: String,
    pub owner: String,
    pub cgroup_path: PathBuf,
    /// The bundle's config as it was at create (hooks, annotations, exec's defaults).
    pub config: Spec,
}

/// The lifecycle states of the runtime specification, plus runc's `paused`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Creating,
    Created,
    Running,
    Paused,
    Stopped,
}

impl std::fmt::Display for Status {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            Status::Creating => "creating",
            Status::Created => "created",
            Status::Running => "running",
            Status::Paused => "paused",
            Status::Stopped => "stopped",
        })
    }
}

/// The state JSON of the runtime specification (runtime.md "State"), with runc's extra
/// `rootfs`, `created` and `owner`, in runc's order.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    pub oci_version: String,
    pub id: String,
    pub pid: i32,
    pub status: Status,
    pub bundle: PathBuf,
    pub rootfs: PathBuf,
    pub created: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    pub owner: String,
}

impl Record {
    /// The state JSON for `status` (the pid is 0 once stopped, as runc reports it).
    pub fn state(&self, status: Status) -> State {
        State {
            oci_version: OCI_VERSION.to_owned(),
            id: self.id.clone(),
            pid: if status == Status::Stopped {
                0
            } else {
                self.pid
            },
            status,
            bundle: self.bundle.clone(),
            rootfs: self.rootfs.clone(),
            created: self.created.clone(),
            annotations: self.config.annotations.clone(),
            owner: self.owner.clone(),
        }
    }

    /// Whether the init process still runs (not a zombie, not a reused pid).
    pub fn init_alive(&self) -> bool {
        self.pid > 0 && process_start(self.pid).is_some_and(|start| start == self.pid_start)
    }
}

/// A live process's start time (`/proc/PID/stat` field 22), `None` when it is gone or a
/// zombie.
pub fn process_start(pid: i32) -> Option<u64> {
    let stat = fs_err::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    // fields[0] is field 3 (the state).
    if matches!(fields.first(), Some(&"Z") | Some(&"X") | None) {
        return None;
    }
    fields.get(19)?.parse().ok()
}

/// Now, as runc writes `created`: RFC 3339 with up to nine fractional digits, trailing
/// zeros dropped (Go's RFC3339Nano).
pub fn now_rfc3339() -> String {
    let now = chrono::Utc::now();
    let mut text = now.format("%Y-%m-%dT%H:%M:%S%.9f").to_string();
    while text.ends_with('0') {
        text.pop();
    }
    if text.ends_with('.') {
        text.pop();
    }
    text.push('Z');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_is_alive_and_has_a_start_time() {
        let pid = std::process::id() as i32;
        assert!(process_start(pid).is_some());
        assert!(process_start(i32::MAX).is_none());
    }

    #[test]
    fn state_json_has_runc_keys_in_order() {
        let record = Record {
            id: "a".into(),
            bundle: "/b".into(),
            rootfs: "/b/rootfs".into(),
            pid: 42,
            pid_start: 1,
            created: "2026-01-01T00:00:00Z".into(),
            owner: String::new(),
            cgroup_path: "x/a".into(),
            config: Spec::default(),
        };
        let json = serde_json::to_string(&record.state(Status::Stopped)).unwrap();
        assert_eq!(
            json,
            r#"{"ociVersion":"1.0.2","id":"a","pid":0,"status":"stopped","bundle":"/b","rootfs":"/b/rootfs","created":"2026-01-01T00:00:00Z","owner":""}"#
        );
        assert!(now_rfc3339().ends_with('Z'));
    }
}
