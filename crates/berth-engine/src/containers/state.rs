//! A container's state, in Docker's `State` shape, plus what berth needs
//! to find its monitor again.

use serde::{Deserialize, Serialize};

use super::health::{Health, HealthStatus};

pub const ZERO_TIME: &str = "0001-01-01T00:00:00Z";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Created,
    Running,
    Paused,
    Restarting,
    Removing,
    Exited,
    Dead,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Created => "created",
            Status::Running => "running",
            Status::Paused => "paused",
            Status::Restarting => "restarting",
            Status::Removing => "removing",
            Status::Exited => "exited",
            Status::Dead => "dead",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ContainerState {
    pub status: Status,
    /// The container's first process as the host sees it (0 when stopped).
    pub pid: i32,
    pub exit_code: i32,
    #[serde(rename = "OOMKilled")]
    pub oom_killed: bool,
    pub error: String,
    pub started_at: String,
    pub finished_at: String,
    /// The monitor process and its start time (from /proc/PID/stat), so a
    /// recycled pid is never mistaken for it.
    #[serde(default)]
    pub monitor_pid: i32,
    #[serde(default)]
    pub monitor_start_time: u64,
    #[serde(default)]
    pub restart_count: u32,
    /// Docker's `State.Health`: made by the first start of a container
    /// with a health check, updated by its monitor's probes (see
    /// [`ContainerState::health_status`] for what readers show).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<Health>,
}

impl Default for ContainerState {
    fn default() -> Self {
        Self {
            status: Status::Created,
            pid: 0,
            exit_code: 0,
            oom_killed: false,
            error: String::new(),
            started_at: ZERO_TIME.to_owned(),
            finished_at: ZERO_TIME.to_owned(),
            monitor_pid: 0,
            monitor_start_time: 0,
            restart_count: 0,
            health: None,
        }
    }
}

impl ContainerState {
    /// Whether the run that followed the exit stamped `finished_before` has
    /// ended, as dockerd's waiters see it: the container is not running,
    /// or a later exit stamped its own time (a restart policy may have it
    /// restarting or running again already).
    pub fn run_ended_since(&self, finished_before: &str) -> bool {
        !self.is_running() || self.finished_at != finished_before
    }

    pub fn is_running(&self) -> bool {
        matches!(
            self.status,
            Status::Running | Status::Paused | Status::Restarting
        )
    }

    /// The health status commands show: the probes' while the container
    /// runs; `unhealthy` once it is paused, restarting or stopped, as
    /// dockerd's status becomes when it stops a container's health
    /// monitor ("for compatibility reasons", moby `CloseMonitorChannel`).
    /// None for a container that has no health check or never started.
    pub fn health_status(&self) -> Option<HealthStatus> {
        let health = self.health.as_ref()?;
        Some(if self.status == Status::Running {
            health.status
        } else {
            HealthStatus::Unhealthy
        })
    }

    /// Docker's `State` object for `inspect`.
    pub fn to_docker(&self) -> serde_json::Value {
        let mut state = serde_json::json!({
            "Status": self.status.as_str(),
            "Running": matches!(self.status, Status::Running | Status::Paused),
            "Paused": self.status == Status::Paused,
            "Restarting": self.status == Status::Restarting,
            "OOMKilled": self.oom_killed,
            "Dead": self.status == Status::Dead,
            "Pid": self.pid,
            "ExitCode": self.exit_code,
            "Error": self.error,
            "StartedAt": self.started_at,
            "FinishedAt": self.finished_at,
        });
        if let (Some(health), Some(status)) = (&self.health, self.health_status()) {
            let shown = Health {
                status,
                ..health.clone()
            };
            state["Health"] = serde_json::to_value(&shown).unwrap_or_default();
        }
        state
    }
}

/// The current time as Docker writes it (RFC 3339 with nanoseconds).
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
}

/// Field 22 of /proc/PID/stat: the process start time in clock ticks.
pub fn process_start_time(pid: i32) -> Option<u64> {
    let stat = fs_err::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces; fields after it are
    // counted from the closing parenthesis.
    let after = &stat[stat.rfind(')')? + 2..];
    after.split(' ').nth(19)?.parse().ok()
}

/// True when the process `pid` exists, started at `start_time` (0: not
/// known, any start time), and has not exited (a zombie waiting for its
/// parent to reap it counts as gone). Errs on the side of "alive": a wrong
/// "dead" makes the caller kill a healthy container.
pub fn process_alive(pid: i32, start_time: u64) -> bool {
    if pid <= 0 {
        return false;
    }
    let stat = match fs_err::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return false,
        Err(_) => return true,
    };
    let Some(end) = stat.rfind(')') else {
        return true;
    };
    let fields: Vec<&str> = stat[end + 2..].split(' ').collect();
    if matches!(fields.first().copied(), Some("Z") | Some("X")) {
        return false;
    }
    match fields.get(19).and_then(|field| field.parse::<u64>().ok()) {
        Some(actual) => start_time == 0 || actual == start_time,
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_state_shape() {
        let state = ContainerState {
            status: Status::Exited,
            exit_code: 3,
            ..ContainerState::default()
        };
        let docker = state.to_docker();
        assert_eq!(docker["Status"], "exited");
        assert_eq!(docker["Running"], false);
        assert_eq!(docker["ExitCode"], 3);
        assert_eq!(docker["StartedAt"], ZERO_TIME);
        let json = serde_json::to_string(&state).unwrap();
        assert_eq!(
            serde_json::from_str::<ContainerState>(&json).unwrap(),
            state
        );
    }

    #[test]
    fn health_shows_unhealthy_once_the_container_stops_running() {
        let health = Health {
            status: HealthStatus::Healthy,
            failing_streak: 0,
            log: Vec::new(),
        };
        let mut state = ContainerState {
            status: Status::Running,
            health: Some(health),
            ..ContainerState::default()
        };
        assert_eq!(state.health_status(), Some(HealthStatus::Healthy));
        assert_eq!(state.to_docker()["Health"]["Status"], "healthy");
        for status in [Status::Paused, Status::Restarting, Status::Exited] {
            state.status = status;
            assert_eq!(state.health_status(), Some(HealthStatus::Unhealthy));
            assert_eq!(state.to_docker()["Health"]["Status"], "unhealthy");
        }
        let plain = ContainerState::default();
        assert_eq!(plain.health_status(), None);
        assert!(plain.to_docker().get("Health").is_none());
        // Rows written before health checks existed still parse.
        let old: ContainerState = serde_json::from_str(
            r#"{"Status":"running","Pid":1,"ExitCode":0,"OOMKilled":false,"Error":"","StartedAt":"","FinishedAt":""}"#,
        )
        .unwrap();
        assert_eq!(old.health, None);
    }

    #[test]
    fn knows_its_own_process() {
        let pid = std::process::id() as i32;
        let start = process_start_time(pid).unwrap();
        assert!(process_alive(pid, start));
        assert!(!process_alive(pid, start + 1));
        assert!(!process_alive(0, start));
    }
}
