//! Health checks as Docker runs them (moby `daemon/health.go`): the settings a
//! container's `Config.Healthcheck` resolves to, when the next probe is due,
//! and how a probe's result moves `State.Health` (starting → healthy on the
//! first success, unhealthy after `Retries` failures in a row, failures in
//! the start period not counted while the container is still starting).
//!
//! The probes themselves run in the container's monitor
//! (`monitor/health.rs`); this module is the part without processes, so unit
//! tests cover Docker's rules directly.

use std::time::Duration;

use berth_types::container::HealthConfig;
use serde::{Deserialize, Serialize};

use super::record::ContainerRecord;

/// Docker keeps this much of a probe's output (stdout and stderr together)
/// and appends "..." when there was more.
pub const MAX_OUTPUT: usize = 4096;
/// `State.Health.Log` keeps the last five results.
pub const MAX_LOG_ENTRIES: usize = 5;
const DEFAULT_INTERVAL: Duration = Duration::from_secs(30);
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
const DEFAULT_RETRIES: u32 = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HealthStatus {
    Starting,
    Healthy,
    Unhealthy,
}

impl HealthStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            HealthStatus::Starting => "starting",
            HealthStatus::Healthy => "healthy",
            HealthStatus::Unhealthy => "unhealthy",
        }
    }

    /// What `ps` shows in parentheses after "Up …" (moby `Health.String`).
    pub fn status_text(self) -> &'static str {
        match self {
            HealthStatus::Starting => "health: starting",
            other => other.as_str(),
        }
    }
}

/// The values `ps --filter health=` takes (moby `IsValidHealthString`):
/// the three statuses, and `none` for a container without a health check.
pub const HEALTH_FILTER_VALUES: &[&str] = &["starting", "healthy", "unhealthy", "none"];

/// One probe's result, in Docker's `HealthcheckResult` shape.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HealthResult {
    pub start: String,
    pub end: String,
    pub exit_code: i32,
    pub output: String,
}

/// Docker's `State.Health`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Health {
    pub status: HealthStatus,
    pub failing_streak: u32,
    /// Oldest first (`[]` before the first result, as dockerd writes it).
    #[serde(default, deserialize_with = "nullable_log")]
    pub log: Vec<HealthResult>,
}

fn nullable_log<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<HealthResult>, D::Error> {
    Ok(Option::<Vec<HealthResult>>::deserialize(deserializer)?.unwrap_or_default())
}

impl Health {
    /// The health of a run that just started (moby `initHealthMonitor`):
    /// starting, no failures counted, the earlier runs' results kept.
    pub fn restarted(previous: Option<Health>) -> Health {
        Health {
            status: HealthStatus::Starting,
            failing_streak: 0,
            log: previous.map(|health| health.log).unwrap_or_default(),
        }
    }

    /// Adds `result` to the log and applies Docker's rules (moby
    /// `handleProbeResult`); `since_start` is how long after the run's
    /// start the probe began. True when the status changed (Docker's
    /// `health_status` event).
    pub fn record(
        &mut self,
        result: HealthResult,
        since_start: Duration,
        settings: &HealthSettings,
    ) -> bool {
        let before = self.status;
        let success = result.exit_code == 0;
        self.log.push(result);
        if self.log.len() > MAX_LOG_ENTRIES {
            let excess = self.log.len() - MAX_LOG_ENTRIES;
            self.log.drain(..excess);
        }
        if success {
            self.failing_streak = 0;
            self.status = HealthStatus::Healthy;
        } else {
            // A container that never passed a probe is given its start
            // period: failures then do not count.
            let grace =
                self.status == HealthStatus::Starting && since_start < settings.start_period;
            if !grace {
                self.failing_streak += 1;
                if self.failing_streak >= settings.retries {
                    self.status = HealthStatus::Unhealthy;
                }
            }
        }
        self.status != before
    }
}

/// A container's health check, resolved: what to run and when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthSettings {
    /// The program and its arguments (the shell's for `CMD-SHELL`).
    pub command: Vec<String>,
    pub interval: Duration,
    pub timeout: Duration,
    pub start_period: Duration,
    /// Between probes during the start period, while starting (API 1.44's
    /// `StartInterval`; unset: the interval, as Docker 24 and earlier).
    pub start_interval: Option<Duration>,
    pub retries: u32,
}

fn nanos(value: i64) -> Option<Duration> {
    u64::try_from(value)
        .ok()
        .filter(|nanos| *nanos > 0)
        .map(Duration::from_nanos)
}

impl HealthSettings {
    /// The check `config` describes; None for `NONE`, an empty test, or a
    /// type Docker does not know (dockerd logs "Unknown healthcheck type"
    /// and runs nothing). `shell` is the container's `Config.Shell` (the
    /// command `CMD-SHELL` runs under; `/bin/sh -c` when empty).
    pub fn from_config(config: &HealthConfig, shell: &[String]) -> Option<Self> {
        let (kind, arguments) = config.test.split_first()?;
        let command = match kind.as_str() {
            "CMD" => arguments.to_vec(),
            "CMD-SHELL" => {
                let mut command = if shell.is_empty() {
                    vec!["/bin/sh".to_owned(), "-c".to_owned()]
                } else {
                    shell.to_vec()
                };
                command.extend(arguments.iter().cloned());
                command
            }
            "NONE" => return None,
            other => {
                tracing::warn!(kind = other, "unknown health check type (expected CMD)");
                return None;
            }
        };
        Some(Self {
            command,
            interval: nanos(config.interval).unwrap_or(DEFAULT_INTERVAL),
            timeout: nanos(config.timeout).unwrap_or(DEFAULT_TIMEOUT),
            start_period: nanos(config.start_period).unwrap_or_default(),
            start_interval: nanos(config.start_interval),
            retries: u32::try_from(config.retries)
                .ok()
                .filter(|retries| *retries > 0)
                .unwrap_or(DEFAULT_RETRIES),
        })
    }

    /// The check of a stored container (its `Config.Healthcheck`, merged
    /// with the image's at create).
    pub fn of_record(record: &ContainerRecord) -> Option<Self> {
        let config: HealthConfig =
            serde_json::from_value(record.config.get("Healthcheck")?.clone()).ok()?;
        let shell: Vec<String> = record
            .config
            .get("Shell")
            .and_then(|shell| serde_json::from_value(shell.clone()).ok())
            .unwrap_or_default();
        Self::from_config(&config, &shell)
    }

    /// How long after a probe ends (or the run starts) the next begins.
    pub fn delay(&self, since_start: Duration, status: HealthStatus) -> Duration {
        match self.start_interval {
            Some(start_interval)
                if since_start < self.start_period && status == HealthStatus::Starting =>
            {
                start_interval
            }
            _ => self.interval,
        }
    }

    /// Docker's output for a probe that ran past the timeout.
    pub fn timeout_message(&self) -> String {
        format!(
            "Health check exceeded timeout ({})",
            go_duration(self.timeout)
        )
    }
}

/// Docker's merge of the user's check with the image's (moby
/// `daemon/commit.go` `merge`): the user's whole when the image has none,
/// the image's when the user gave none, else the user's fields with each
/// unset one (empty test, zero duration or count) taken from the image's.
pub fn merge_healthcheck(
    image: Option<&HealthConfig>,
    user: Option<&HealthConfig>,
) -> Option<HealthConfig> {
    let Some(image) = image else {
        return user.cloned();
    };
    let Some(user) = user else {
        return Some(image.clone());
    };
    let pick = |mine: i64, theirs: i64| if mine == 0 { theirs } else { mine };
    Some(HealthConfig {
        test: if user.test.is_empty() {
            image.test.clone()
        } else {
            user.test.clone()
        },
        interval: pick(user.interval, image.interval),
        timeout: pick(user.timeout, image.timeout),
        start_period: pick(user.start_period, image.start_period),
        start_interval: pick(user.start_interval, image.start_interval),
        retries: pick(user.retries, image.retries),
    })
}

/// Go's `time.Duration.String` ("500ms", "1.5s", "1m30s", "2h0m0s").
pub fn go_duration(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos == 0 {
        return "0s".to_owned();
    }
    let fraction = |value: u128, scale: u128| {
        let whole = value / scale;
        let rest = value % scale;
        if rest == 0 {
            return whole.to_string();
        }
        let width = scale.ilog10() as usize;
        let digits = format!("{rest:0width$}");
        format!("{whole}.{}", digits.trim_end_matches('0'))
    };
    if nanos < 1_000 {
        return format!("{nanos}ns");
    }
    if nanos < 1_000_000 {
        return format!("{}\u{b5}s", fraction(nanos, 1_000));
    }
    if nanos < 1_000_000_000 {
        return format!("{}ms", fraction(nanos, 1_000_000));
    }
    let hours = nanos / 3_600_000_000_000;
    let minutes = nanos % 3_600_000_000_000 / 60_000_000_000;
    let seconds = fraction(nanos % 60_000_000_000, 1_000_000_000);
    match (hours, minutes) {
        (0, 0) => format!("{seconds}s"),
        (0, minutes) => format!("{minutes}m{seconds}s"),
        (hours, minutes) => format!("{hours}h{minutes}m{seconds}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(test: &[&str]) -> HealthConfig {
        HealthConfig {
            test: test.iter().map(|part| part.to_string()).collect(),
            ..HealthConfig::default()
        }
    }

    fn result(exit_code: i32) -> HealthResult {
        HealthResult {
            start: "s".into(),
            end: "e".into(),
            exit_code,
            output: String::new(),
        }
    }

    #[test]
    fn test_types_resolve_as_docker() {
        let shell = HealthSettings::from_config(&config(&["CMD-SHELL", "exit 1"]), &[]).unwrap();
        assert_eq!(shell.command, ["/bin/sh", "-c", "exit 1"]);
        assert_eq!(
            (shell.interval, shell.timeout, shell.retries),
            (Duration::from_secs(30), Duration::from_secs(30), 3)
        );
        let own_shell = ["/bin/ash".to_owned(), "-ec".to_owned()];
        assert_eq!(
            HealthSettings::from_config(&config(&["CMD-SHELL", "true"]), &own_shell)
                .unwrap()
                .command,
            ["/bin/ash", "-ec", "true"]
        );
        assert_eq!(
            HealthSettings::from_config(&config(&["CMD", "true", "x"]), &[])
                .unwrap()
                .command,
            ["true", "x"]
        );
        for none in [&["NONE"][..], &[], &["WHAT", "x"]] {
            assert_eq!(HealthSettings::from_config(&config(none), &[]), None);
        }
    }

    #[test]
    fn first_success_is_healthy_and_retries_failures_unhealthy() {
        let settings = HealthSettings::from_config(
            &HealthConfig {
                retries: 2,
                ..config(&["CMD", "x"])
            },
            &[],
        )
        .unwrap();
        let mut health = Health::restarted(None);
        let later = Duration::from_secs(10);
        assert!(!health.record(result(1), later, &settings));
        assert_eq!(
            (health.status, health.failing_streak),
            (HealthStatus::Starting, 1)
        );
        assert!(health.record(result(0), later, &settings));
        assert_eq!(
            (health.status, health.failing_streak),
            (HealthStatus::Healthy, 0)
        );
        assert!(!health.record(result(3), later, &settings));
        assert!(health.record(result(-1), later, &settings));
        assert_eq!(
            (health.status, health.failing_streak),
            (HealthStatus::Unhealthy, 2)
        );
        for _ in 0..4 {
            health.record(result(1), later, &settings);
        }
        assert_eq!(health.log.len(), MAX_LOG_ENTRIES);
        assert_eq!(health.failing_streak, 6);
        // A new run starts over, keeping the log.
        let restarted = Health::restarted(Some(health));
        assert_eq!(
            (
                restarted.status,
                restarted.failing_streak,
                restarted.log.len()
            ),
            (HealthStatus::Starting, 0, MAX_LOG_ENTRIES)
        );
    }

    #[test]
    fn start_period_failures_count_only_after_a_success() {
        let settings = HealthSettings::from_config(
            &HealthConfig {
                retries: 1,
                start_period: 5_000_000_000,
                ..config(&["CMD", "x"])
            },
            &[],
        )
        .unwrap();
        let early = Duration::from_secs(1);
        let mut health = Health::restarted(None);
        assert!(!health.record(result(1), early, &settings));
        assert_eq!(
            (health.status, health.failing_streak),
            (HealthStatus::Starting, 0)
        );
        health.record(result(0), early, &settings);
        // Healthy once: a failure counts even inside the start period.
        assert!(health.record(result(1), early, &settings));
        assert_eq!(
            (health.status, health.failing_streak),
            (HealthStatus::Unhealthy, 1)
        );
        let mut late = Health::restarted(None);
        assert!(late.record(result(1), Duration::from_secs(5), &settings));
    }

    #[test]
    fn start_interval_applies_while_starting_in_the_start_period() {
        let mut settings = HealthSettings::from_config(
            &HealthConfig {
                interval: 10_000_000_000,
                start_period: 5_000_000_000,
                ..config(&["CMD", "x"])
            },
            &[],
        )
        .unwrap();
        let early = Duration::from_secs(1);
        assert_eq!(
            settings.delay(early, HealthStatus::Starting),
            Duration::from_secs(10)
        );
        settings.start_interval = Some(Duration::from_millis(500));
        assert_eq!(
            settings.delay(early, HealthStatus::Starting),
            Duration::from_millis(500)
        );
        assert_eq!(
            settings.delay(early, HealthStatus::Healthy),
            Duration::from_secs(10)
        );
        assert_eq!(
            settings.delay(Duration::from_secs(6), HealthStatus::Starting),
            Duration::from_secs(10)
        );
    }

    #[test]
    fn user_fields_override_the_images_one_by_one() {
        let image = HealthConfig {
            test: vec!["CMD".into(), "image".into()],
            interval: 1,
            timeout: 2,
            start_period: 3,
            start_interval: 4,
            retries: 5,
        };
        let user = HealthConfig {
            interval: 10,
            retries: 50,
            ..HealthConfig::default()
        };
        let merged = merge_healthcheck(Some(&image), Some(&user)).unwrap();
        assert_eq!(merged.test, ["CMD", "image"]);
        assert_eq!(
            (
                merged.interval,
                merged.timeout,
                merged.start_period,
                merged.retries
            ),
            (10, 2, 3, 50)
        );
        let none = config(&["NONE"]);
        assert_eq!(
            merge_healthcheck(Some(&image), Some(&none)).unwrap().test,
            ["NONE"]
        );
        assert_eq!(merge_healthcheck(None, Some(&user)), Some(user.clone()));
        assert_eq!(merge_healthcheck(Some(&image), None), Some(image));
        assert_eq!(merge_healthcheck(None, None), None);
    }

    #[test]
    fn durations_print_as_go_prints_them() {
        for (nanos, text) in [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5\u{b5}s"),
            (500_000_000, "500ms"),
            (1_000_000_000, "1s"),
            (1_500_000_000, "1.5s"),
            (90_000_000_000, "1m30s"),
            (3_600_000_000_000, "1h0m0s"),
            (3_723_000_000_000, "1h2m3s"),
        ] {
            assert_eq!(go_duration(Duration::from_nanos(nanos)), text);
        }
    }

    #[test]
    fn an_empty_log_is_an_empty_list_as_docker_writes_it() {
        let health = Health::restarted(None);
        assert_eq!(
            serde_json::to_value(&health).unwrap(),
            serde_json::json!({"Status": "starting", "FailingStreak": 0, "Log": []})
        );
        let null: Health =
            serde_json::from_str(r#"{"Status":"starting","FailingStreak":0,"Log":null}"#).unwrap();
        assert_eq!(null, health);
        let back: Health = serde_json::from_value(serde_json::to_value(&health).unwrap()).unwrap();
        assert_eq!(back, health);
    }
}
