//! The monitor's health probes (Docker's `HEALTHCHECK`; the rules are in
//! `containers/health.rs`).
//!
//! No daemon runs them: the container's monitor does, from its copy loop.
//! Each probe is one exec through the container's [`Runtime`] — the
//! monitor becomes the probe's parent as `berth exec` becomes its
//! process's — and the loop's `poll` waits on the probe's output pipe and
//! pidfd beside the container's streams, with the next probe or the
//! probe's timeout as its wake-up. Why not a thread: the namespace
//! backend's exec forks, and a process with a second thread cannot fork
//! safely (the same rule that makes the API server spawn its monitors);
//! the poll loop is single-threaded, already wakes for the DNS server's
//! timers, and a probe costs it no more than a few descriptors.
//!
//! Each result is one `UPDATE` of the container's state row (`Health`
//! alone, in one statement, and only while the state says running, so a
//! concurrent `pause` or the exit is never overwritten) and Docker's
//! events: `exec_create`, `exec_start`, `exec_die` for the probe's exec,
//! `health_status: …` when the status changes.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use berth_runtime::{ContainerRef, ProcessSpec, Runtime, Stdio};
use berth_store::Store;
use nix::sys::signal::Signal;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use super::super::health::{Health, HealthResult, HealthSettings, MAX_OUTPUT};
use super::super::record::ContainerRecord;
use super::super::state::{now, ContainerState, Status};

/// How often a probe whose exit cannot be waited for on a pidfd is looked at.
const FALLBACK_POLL: Duration = Duration::from_millis(10);

/// One container run's health checks.
pub(super) struct HealthProber<'a> {
    settings: HealthSettings,
    store: &'a Store,
    runtime: &'a dyn Runtime,
    /// For the events: labels, image, and the name as it is now.
    record: ContainerRecord,
    container_pid: i32,
    /// The run's own process settings (user, environment, working
    /// directory, capabilities, seccomp) with the probe's command, as
    /// Docker's probe exec takes the container's.
    process: ProcessSpec,
    run_began: Instant,
    health: Health,
    next: Instant,
    probe: Option<RunningProbe>,
    /// Found at the first result: the code pages each probe faults in
    /// (SQLite, JSON, the exec path: ≈ 5 MB of the binary with fault-around)
    /// are given back after each one, which keeps an idle monitor's RSS
    /// where a monitor without a check has it (docs/BENCH.md).
    read_only: Option<super::ReadOnlyPages>,
}

struct RunningProbe {
    exec_id: String,
    pid: Pid,
    pidfd: Option<OwnedFd>,
    output: Option<OwnedFd>,
    collected: Vec<u8>,
    truncated: bool,
    start: String,
    since_start: Duration,
    deadline: Instant,
    timed_out: bool,
}

impl<'a> HealthProber<'a> {
    /// The probes of the run whose first process is `container_pid` and
    /// whose launch used `process`; None when the container has no check.
    #[allow(clippy::too_many_arguments)] // one caller; each is a distinct part of the run
    pub(super) fn new(
        store: &'a Store,
        runtime: &'a dyn Runtime,
        record: &ContainerRecord,
        container_pid: i32,
        mut process: ProcessSpec,
        health: Health,
        run_began: Instant,
    ) -> Option<Self> {
        let settings = HealthSettings::of_record(record)?;
        process.args = settings.command.clone();
        process.tty = false;
        process.console_size = None;
        let next = run_began + settings.delay(Duration::ZERO, health.status);
        Some(Self {
            settings,
            store,
            runtime,
            record: record.clone(),
            container_pid,
            process,
            run_began,
            health,
            next,
            probe: None,
            read_only: None,
        })
    }

    /// What the copy loop's poll waits on besides its own descriptors.
    pub(super) fn poll_fds(&self) -> Vec<BorrowedFd<'_>> {
        let Some(probe) = &self.probe else {
            return Vec::new();
        };
        probe
            .pidfd
            .iter()
            .chain(probe.output.iter())
            .map(|fd| fd.as_fd())
            .collect()
    }

    /// How long the loop may sleep before [`HealthProber::advance`] has
    /// work: the next probe, or the running one's timeout.
    pub(super) fn wait(&self) -> Option<Duration> {
        let now = Instant::now();
        match &self.probe {
            None => Some(self.next.saturating_duration_since(now)),
            Some(probe) if probe.pidfd.is_none() => Some(FALLBACK_POLL),
            Some(probe) if probe.timed_out => None,
            Some(probe) => Some(probe.deadline.saturating_duration_since(now)),
        }
    }

    /// Called each time the loop wakes: collects the running probe's
    /// output and exit, kills it at its timeout, starts the next when due.
    pub(super) fn advance(&mut self) {
        if self.probe.is_some() {
            self.check_probe();
        } else if Instant::now() >= self.next {
            self.start_probe();
        }
    }

    fn check_probe(&mut self) {
        let Some(probe) = self.probe.as_mut() else {
            return;
        };
        probe.read_output();
        let code = match waitpid(probe.pid, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => {
                if !probe.timed_out && Instant::now() >= probe.deadline {
                    // Docker kills a probe past its timeout. In a frozen
                    // cgroup (v1) the kill waits for the thaw: the result is
                    // recorded when the process is really gone.
                    let _ = nix::sys::signal::kill(probe.pid, Signal::SIGKILL);
                    probe.timed_out = true;
                }
                return;
            }
            Ok(WaitStatus::Exited(_, code)) => code,
            Ok(WaitStatus::Signaled(_, signal, _)) => 128 + signal as i32,
            Ok(_) => return,
            Err(nix::Error::EINTR) => return,
            Err(_) => -1,
        };
        let Some(mut probe) = self.probe.take() else {
            return;
        };
        probe.read_output();
        let code_text = code.to_string();
        crate::events::emit_container_with(
            self.store.root(),
            "exec_die",
            &self.record,
            &[("execID", &probe.exec_id), ("exitCode", &code_text)],
        );
        let output = if probe.timed_out {
            self.settings.timeout_message()
        } else {
            let mut text = String::from_utf8_lossy(&probe.collected).into_owned();
            if probe.truncated {
                text.push_str("...");
            }
            text
        };
        let result = HealthResult {
            start: probe.start.clone(),
            end: now(),
            exit_code: if probe.timed_out { -1 } else { code },
            output,
        };
        self.finish(result, probe.since_start);
    }

    fn start_probe(&mut self) {
        let start = now();
        let began = Instant::now();
        // The state as other commands left it: a paused (or stopping)
        // container is not probed, and `pause` may have made it unhealthy.
        let stored = self
            .store
            .container_name_and_state(&self.record.id)
            .ok()
            .flatten();
        let Some((name, state)) = stored else {
            // Gone (removed under a dead monitor?): nothing to report to.
            self.next = began + self.settings.interval;
            return;
        };
        let state: Option<ContainerState> = serde_json::from_str(&state).ok();
        if let Some(stored) = state.as_ref().and_then(|state| state.health.as_ref()) {
            self.health.status = stored.status;
        }
        if state.as_ref().map(|state| state.status) != Some(Status::Running) {
            self.next = began + self.settings.interval;
            return;
        }
        self.record.name = name;
        let exec_id = super::super::names::new_id();
        let root = self.store.root();
        for action in ["exec_create", "exec_start"] {
            let action = crate::events::exec_action(action, &self.settings.command);
            crate::events::emit_container_with(
                root,
                &action,
                &self.record,
                &[("execID", &exec_id)],
            );
        }
        let since_start = began.saturating_duration_since(self.run_began);
        match self.launch() {
            Ok((pid, output)) => {
                self.probe = Some(RunningProbe {
                    exec_id,
                    pidfd: super::super::stop::pidfd_open(pid.as_raw()),
                    pid,
                    output: Some(output),
                    collected: Vec::new(),
                    truncated: false,
                    start,
                    since_start,
                    deadline: Instant::now() + self.settings.timeout,
                    timed_out: false,
                });
            }
            Err(message) => {
                // Docker records a probe that could not run as exit -1 with the
                // error as its output.
                let result = HealthResult {
                    start,
                    end: now(),
                    exit_code: -1,
                    output: message,
                };
                self.finish(result, since_start);
            }
        }
    }

    /// Starts the probe's process: stdout and stderr into one pipe (Docker
    /// keeps them together), stdin empty.
    fn launch(&self) -> Result<(Pid, OwnedFd), String> {
        let (output, output_write) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC | nix::fcntl::OFlag::O_NONBLOCK)
                .map_err(|error| format!("failed to make the health check's pipe: {error}"))?;
        // The probe's end blocks, as any program's stdout does.
        let _ = nix::fcntl::fcntl(
            output_write.as_raw_fd(),
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::empty()),
        );
        let errors_write = output_write
            .try_clone()
            .map_err(|error| format!("failed to make the health check's pipe: {error}"))?;
        let stdin = fs_err::File::open("/dev/null")
            .map(|file| OwnedFd::from(file.into_file()))
            .map_err(|error| error.to_string())?;
        let stdio = Stdio {
            stdin,
            stdout: output_write,
            stderr: errors_write,
            console: None,
        };
        let container = ContainerRef {
            id: &self.record.id,
            pid: self.container_pid,
        };
        let pid = self
            .runtime
            .exec(container, &self.process, stdio)
            .map_err(|error| crate::ErrorChain(&error).to_string())?;
        Ok((pid, output))
    }

    /// Records `result` (a probe that began `since_start` into the run) in
    /// the state row and schedules the next probe.
    fn finish(&mut self, result: HealthResult, since_start: Duration) {
        let mut health = self.health.clone();
        let changed = health.record(result, since_start, &self.settings);
        let json = serde_json::to_string(&health).unwrap_or_default();
        match self
            .store
            .set_running_container_health(&self.record.id, &json)
        {
            Ok(true) => {
                self.health = health;
                if changed {
                    let action = format!("health_status: {}", self.health.status.as_str());
                    crate::events::emit_container(self.store, &action, &self.record);
                }
            }
            // Paused or stopped meanwhile: Docker drops such a result too.
            Ok(false) => {}
            Err(error) => tracing::warn!(%error, "failed to record the health check's result"),
        }
        let next_delay = self
            .settings
            .delay(self.run_began.elapsed(), self.health.status);
        self.next = Instant::now() + next_delay;
        // What the probe brought in goes back: SQLite's page cache, the
        // free heap, the code pages.
        self.store.release_memory();
        // SAFETY: malloc_trim only returns free heap pages to the kernel.
        unsafe { libc::malloc_trim(0) };
        self.read_only
            .get_or_insert_with(super::ReadOnlyPages::find)
            .release();
    }
}

impl RunningProbe {
    /// Takes what the probe wrote so far, keeping the first
    /// [`MAX_OUTPUT`] bytes (and reading, so that the probe never blocks
    /// on a full pipe); closes the pipe at its end.
    fn read_output(&mut self) {
        let Some(output) = &self.output else {
            return;
        };
        let mut buffer = [0u8; 4096];
        loop {
            match nix::unistd::read(output.as_raw_fd(), &mut buffer) {
                Ok(0) => {
                    self.output = None;
                    return;
                }
                Ok(read) => {
                    let room = MAX_OUTPUT.saturating_sub(self.collected.len());
                    let keep = room.min(read);
                    self.collected.extend_from_slice(&buffer[..keep]);
                    if keep < read {
                        self.truncated = true;
                    }
                }
                Err(nix::Error::EINTR) => continue,
                Err(nix::Error::EAGAIN) => return,
                Err(_) => {
                    self.output = None;
                    return;
                }
            }
        }
    }
}

impl Drop for HealthProber<'_> {
    /// The run is over: a probe still running is killed (the container's
    /// pid namespace took it down already when its first process died)
    /// and reaped, so the cgroup can go.
    fn drop(&mut self) {
        if let Some(probe) = self.probe.take() {
            let _ = nix::sys::signal::kill(probe.pid, Signal::SIGKILL);
            let _ = waitpid(probe.pid, None);
        }
    }
}

#[cfg(test)]
mod tests {
    //! The prober's loop on a fake runtime whose "exec" runs the probe's command on the
    //! host (no container, no root): what it records in the row and the log for passing,
    //! failing, overlong and timed-out probes, and that a paused container is not probed.

    use std::sync::atomic::{AtomicUsize, Ordering};

    use berth_runtime::cgroups::{CgroupStats, Resources};
    use berth_runtime::{NetworkIo, RuntimeError};
    use berth_store::ContainerRow;

    use super::*;
    use crate::containers::health::HealthStatus;

    /// Runs an exec's process on the host with the stdio it is given.
    #[derive(Debug, Default)]
    struct HostRuntime {
        execs: AtomicUsize,
    }

    impl Runtime for HostRuntime {
        fn name(&self) -> &'static str {
            "host"
        }
        fn signal(&self, _: ContainerRef<'_>, _: Signal) -> Result<(), RuntimeError> {
            Ok(())
        }
        fn pause(&self, _: ContainerRef<'_>) -> Result<(), RuntimeError> {
            Ok(())
        }
        fn resume(&self, _: ContainerRef<'_>) -> Result<(), RuntimeError> {
            Ok(())
        }
        fn processes(&self, _: ContainerRef<'_>) -> Result<Vec<i32>, RuntimeError> {
            Ok(Vec::new())
        }
        fn stats(&self, _: ContainerRef<'_>) -> Result<CgroupStats, RuntimeError> {
            Ok(CgroupStats::default())
        }
        fn network_io(&self, _: ContainerRef<'_>) -> NetworkIo {
            NetworkIo::default()
        }
        fn update(&self, _: ContainerRef<'_>, _: &Resources) -> Result<(), RuntimeError> {
            Ok(())
        }
        fn exec(
            &self,
            _: ContainerRef<'_>,
            process: &ProcessSpec,
            stdio: Stdio,
        ) -> Result<Pid, RuntimeError> {
            self.execs.fetch_add(1, Ordering::SeqCst);
            let child = std::process::Command::new(&process.args[0])
                .args(&process.args[1..])
                .stdin(std::process::Stdio::from(stdio.stdin))
                .stdout(std::process::Stdio::from(stdio.stdout))
                .stderr(std::process::Stdio::from(stdio.stderr))
                .spawn()
                .expect("spawn the probe");
            let pid = Pid::from_raw(child.id() as i32);
            // The prober reaps it, as it reaps a real exec.
            std::mem::forget(child);
            Ok(pid)
        }
        fn root(&self, _: ContainerRef<'_>) -> std::path::PathBuf {
            "/".into()
        }
        fn delete(&self, _: ContainerRef<'_>) -> Result<(), RuntimeError> {
            Ok(())
        }
    }

    struct Fixture {
        _root: tempfile::TempDir,
        store: Store,
        record: ContainerRecord,
        runtime: HostRuntime,
    }

    fn fixture(healthcheck: serde_json::Value) -> Fixture {
        let root = tempfile::tempdir().unwrap();
        let mut store = Store::open(root.path()).unwrap();
        let image = berth_types::Digest::of_bytes(b"image");
        store
            .add_image(&berth_store::NewImage {
                id: image.clone(),
                manifest_digest: None,
                created: None,
                layers: vec![],
                blobs: vec![],
                tags: vec![],
                repo_digests: vec![],
            })
            .unwrap();
        let record = ContainerRecord {
            id: "c".repeat(64),
            name: "probed".into(),
            image_id: image.to_string(),
            image_name: "busybox".into(),
            created: now(),
            run: Default::default(),
            config: serde_json::json!({ "Healthcheck": healthcheck }),
            host_config: serde_json::json!({}),
        };
        let state = ContainerState {
            status: Status::Running,
            health: Some(Health::restarted(None)),
            ..ContainerState::default()
        };
        store
            .insert_container(&ContainerRow {
                id: record.id.clone(),
                name: record.name.clone(),
                image_id: record.image_id.clone(),
                created: record.created.clone(),
                record: serde_json::to_string(&record).unwrap(),
                state: serde_json::to_string(&state).unwrap(),
            })
            .unwrap();
        Fixture {
            _root: root,
            store,
            record,
            runtime: HostRuntime::default(),
        }
    }

    fn process() -> ProcessSpec {
        ProcessSpec {
            args: Vec::new(),
            env: Vec::new(),
            cwd: "/".into(),
            uid: 0,
            gid: 0,
            additional_gids: Vec::new(),
            capabilities: Default::default(),
            no_new_privileges: false,
            rlimits: Vec::new(),
            seccomp: None,
            tty: false,
            console_size: None,
            oom_score_adj: None,
        }
    }

    impl Fixture {
        fn prober(&self) -> HealthProber<'_> {
            HealthProber::new(
                &self.store,
                &self.runtime,
                &self.record,
                1,
                process(),
                Health::restarted(None),
                Instant::now(),
            )
            .expect("the record has a check")
        }

        fn stored(&self) -> ContainerState {
            let (_, state) = self
                .store
                .container_name_and_state(&self.record.id)
                .unwrap()
                .unwrap();
            serde_json::from_str(&state).unwrap()
        }

        fn events(&self) -> String {
            fs_err::read_to_string(self.store.root().join("events.jsonl")).unwrap_or_default()
        }
    }

    /// Runs the prober's loop (as the copy loop would, minus poll) until `done` holds.
    fn drive(prober: &mut HealthProber<'_>, mut done: impl FnMut(&HealthProber<'_>) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !done(prober) {
            assert!(Instant::now() < deadline, "the prober never got there");
            prober.advance();
            let wait = prober.wait().unwrap_or(FALLBACK_POLL);
            std::thread::sleep(wait.min(Duration::from_millis(5)));
        }
    }

    #[test]
    fn a_passing_probe_is_recorded_with_its_output_and_events() {
        let fixture = fixture(serde_json::json!({
            "Test": ["CMD-SHELL", "echo out; echo err >&2"], "Interval": 20_000_000
        }));
        let mut prober = fixture.prober();
        drive(&mut prober, |prober| prober.health.log.len() == 2);
        let stored = fixture.stored().health.unwrap();
        assert_eq!(stored, prober.health);
        assert_eq!(stored.status, HealthStatus::Healthy);
        let output = &stored.log[0].output;
        assert!(
            output.contains("out\n") && output.contains("err\n"),
            "{output:?}"
        );
        let events = fixture.events();
        assert_eq!(
            events.matches("\"health_status: healthy\"").count(),
            1,
            "{events}"
        );
        assert_eq!(events.matches("\"exec_die\"").count(), 2, "{events}");
        assert!(events.contains("\"exec_create: /bin/sh -c echo out; echo err >&2\""));
    }

    #[test]
    fn long_output_is_cut_at_4096_bytes_and_a_failure_counts() {
        let fixture = fixture(serde_json::json!({
            "Test": ["CMD-SHELL", "head -c 10000 /dev/zero | tr '\\0' a; exit 4"],
            "Interval": 20_000_000,
            "Retries": 1
        }));
        let mut prober = fixture.prober();
        drive(&mut prober, |prober| !prober.health.log.is_empty());
        let result = &prober.health.log[0];
        assert_eq!(result.exit_code, 4);
        assert_eq!(result.output.len(), MAX_OUTPUT + 3);
        assert!(result.output.ends_with("a..."));
        assert_eq!(prober.health.failing_streak, 1);
    }

    #[test]
    fn a_probe_past_its_timeout_is_killed() {
        let fixture = fixture(serde_json::json!({
            "Test": ["CMD", "sleep", "30"], "Interval": 10_000_000, "Timeout": 100_000_000
        }));
        let mut prober = fixture.prober();
        let began = Instant::now();
        drive(&mut prober, |prober| !prober.health.log.is_empty());
        assert!(began.elapsed() < Duration::from_secs(10));
        let result = &prober.health.log[0];
        assert_eq!(result.exit_code, -1);
        assert_eq!(result.output, "Health check exceeded timeout (100ms)");
        assert!(fixture.events().contains("\"exitCode\":\"137\""));
    }

    #[test]
    fn a_paused_container_is_not_probed_and_a_late_result_is_dropped() {
        let fixture = fixture(serde_json::json!({
            "Test": ["CMD", "true"], "Interval": 10_000_000
        }));
        let paused = ContainerState {
            status: Status::Paused,
            health: Some(Health {
                status: HealthStatus::Unhealthy,
                ..Health::restarted(None)
            }),
            ..ContainerState::default()
        };
        let write = |state: &ContainerState| {
            fixture
                .store
                .set_container_state(&fixture.record.id, &serde_json::to_string(state).unwrap())
                .unwrap();
        };
        write(&paused);
        let mut prober = fixture.prober();
        let until = Instant::now() + Duration::from_millis(100);
        drive(&mut prober, |_| Instant::now() >= until);
        assert_eq!(fixture.runtime.execs.load(Ordering::SeqCst), 0);
        assert_eq!(fixture.stored(), paused);
        // A result that arrives once the container stopped running is not written.
        prober.finish(
            HealthResult {
                start: now(),
                end: now(),
                exit_code: 0,
                output: String::new(),
            },
            Duration::ZERO,
        );
        assert_eq!(fixture.stored(), paused);
        assert!(!fixture.events().contains("health_status"));
    }
}
