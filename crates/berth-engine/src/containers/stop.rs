//! `stop`, `kill`, `wait`: signals to the container's first process, and
//! waiting on processes through pidfds (no polling loops on the store).
//! Each signal is logged as Docker's `kill` event, each stop as `stop`.

use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::Signal;

use super::lookup::{find_container, Container};
use super::state::{process_alive, Status};
use crate::{Engine, EngineError};

/// A pidfd for `pid`, or None when it is already gone.
pub(crate) fn pidfd_open(pid: i32) -> Option<OwnedFd> {
    berth_runtime::clone::pidfd_open(pid).ok()
}

/// Waits until `pid` exits or `timeout` passes; true when it exited.
fn wait_for_exit(pid: i32, timeout: Option<Duration>) -> bool {
    let Some(pidfd) = pidfd_open(pid) else {
        return true;
    };
    let deadline = timeout.map(|timeout| Instant::now() + timeout);
    loop {
        let remaining = match deadline {
            None => PollTimeout::NONE,
            Some(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                PollTimeout::try_from(left.as_millis().min(i32::MAX as u128) as i32)
                    .unwrap_or(PollTimeout::MAX)
            }
        };
        let mut fds = [PollFd::new(pidfd.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, remaining) {
            Ok(0) => return false,
            Ok(_) => return true,
            Err(nix::Error::EINTR) => continue,
            Err(_) => return true,
        }
    }
}

/// Waits until the container's current run has ended, as dockerd's wait
/// for "not-running": the monitor finished, or its restart policy has it
/// `restarting` (dockerd fires its waiters then; the monitor goes on).
fn wait_for_run_end(engine: &Engine, config: &crate::EngineConfig, container: &Container) {
    let state = &container.state;
    let restarts = !container.record.run.restart.is_none();
    if !restarts {
        return wait_for_monitor(container);
    }
    let began = state.finished_at.clone();
    while process_alive(state.monitor_pid, state.monitor_start_time) {
        if wait_for_exit(state.monitor_pid, Some(Duration::from_millis(50))) {
            return;
        }
        match find_container(engine.store(), config, &container.record.id) {
            Ok(now) if now.state.run_ended_since(&began) => return,
            Ok(_) => {}
            Err(_) => return,
        }
    }
}

/// Waits for the monitor to finish (state recorded, cleanup done).
fn wait_for_monitor(container: &Container) {
    let state = &container.state;
    if process_alive(state.monitor_pid, state.monitor_start_time) {
        wait_for_exit(state.monitor_pid, None);
    }
}

/// Sends `signal` to the container's first process, logging Docker's `kill`
/// event (the signal as a number) before it goes: the monitor logs `die` as
/// soon as the process is gone, and `kill` must come first.
fn signal_container(
    engine: &Engine,
    container: &Container,
    signal: Signal,
) -> Result<(), EngineError> {
    let pid = container.state.pid;
    if pid <= 0 && container.state.status == Status::Restarting {
        // Between two runs there is no process; the monitor sees the stop
        // flag before starting the next one.
        return Ok(());
    }
    if pid <= 0 {
        return Err(EngineError::ContainerNotRunning {
            id: container.record.id.clone(),
        });
    }
    let number = (signal as i32).to_string();
    let root = &engine.config().root;
    crate::events::emit_container_with(root, "kill", &container.record, &[("signal", &number)]);
    super::manage::runtime_of(engine, container)
        .signal(super::manage::runtime_ref(container), signal)
        .map_err(|error| match error {
            berth_runtime::RuntimeError::Signal { id, source } => {
                EngineError::Signal { id, source }
            }
            other => EngineError::Runtime(Box::new(other)),
        })
}

fn mark_stopped_by_user(engine: &Engine, id: &str) {
    let config = engine.config();
    let paths = super::paths::ContainerPaths::new(&config.root, &config.run_root, id);
    let _ = fs_err::create_dir_all(&paths.runtime);
    if let Err(error) = fs_err::write(paths.stop_marker(), b"") {
        tracing::warn!(%error, "failed to record the stop request");
    }
}

/// Sends `signal` and waits for the monitor to record the exit.
pub(crate) fn kill_and_wait(
    engine: &Engine,
    container: &Container,
    signal: Signal,
) -> Result<(), EngineError> {
    mark_stopped_by_user(engine, &container.record.id);
    if container.state.status == Status::Paused {
        thaw(engine, container);
    }
    signal_container(engine, container, signal)?;
    wait_for_monitor(container);
    Ok(())
}

/// Thaws a paused container so that it can take the signal that ends it.
fn thaw(engine: &Engine, container: &Container) {
    let runtime = super::manage::runtime_of(engine, container);
    if runtime
        .resume(super::manage::runtime_ref(container))
        .is_ok()
    {
        crate::events::emit_container(engine.store(), "unpause", &container.record);
    }
}

/// Docker's signal names and numbers (`KILL`, `SIGKILL`, `9`).
pub fn parse_signal(text: &str) -> Result<Signal, EngineError> {
    let invalid = || EngineError::InvalidArgument(format!("Invalid signal: {text}"));
    if let Ok(number) = text.parse::<i32>() {
        return Signal::try_from(number).map_err(|_| invalid());
    }
    let upper = text.to_ascii_uppercase();
    let name = if upper.starts_with("SIG") {
        upper
    } else {
        format!("SIG{upper}")
    };
    name.parse::<Signal>().map_err(|_| invalid())
}

/// How `stop` ends a container (Docker's `container.StopOptions`).
#[derive(Clone, Debug, Default)]
pub struct StopOptions {
    /// Seconds between the signal and SIGKILL (negative: no SIGKILL); None:
    /// the container's `StopTimeout`, else 10.
    pub timeout: Option<i64>,
    /// Sent instead of the container's `StopSignal` (`stop --signal`, API
    /// 1.42); Docker's names and numbers, as [`parse_signal`] reads them.
    pub signal: Option<String>,
}

/// `stop [-t N]`: the stop signal, then SIGKILL after the timeout.
pub fn stop_container(
    engine: &mut Engine,
    text: &str,
    timeout: Option<i64>,
) -> Result<(), EngineError> {
    let options = StopOptions {
        timeout,
        signal: None,
    };
    stop_container_with(engine, text, &options)
}

/// `stop [-t N] [-s SIGNAL]`: `options.signal` (else the container's stop
/// signal, else SIGTERM), then SIGKILL after the timeout. A bad signal is
/// refused before anything is looked up or sent, as moby's API does.
pub fn stop_container_with(
    engine: &mut Engine,
    text: &str,
    options: &StopOptions,
) -> Result<(), EngineError> {
    let requested = options.signal.as_deref().map(parse_signal).transpose()?;
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, text)?;
    if !container.state.is_running() {
        return Ok(());
    }
    mark_stopped_by_user(engine, &container.record.id);
    if container.state.status == Status::Paused {
        thaw(engine, &container);
    }
    let signal = match requested {
        Some(signal) => signal,
        None if container.record.run.stop_signal.is_empty() => Signal::SIGTERM,
        None => parse_signal(&container.record.run.stop_signal)?,
    };
    let seconds = options
        .timeout
        .or(container.record.run.stop_timeout)
        .unwrap_or(10);
    signal_container(engine, &container, signal)?;
    let exited = container.state.pid <= 0
        || seconds >= 0
            && wait_for_exit(
                container.state.pid,
                Some(Duration::from_secs(seconds as u64)),
            );
    if !exited {
        signal_container(engine, &container, Signal::SIGKILL)?;
    }
    wait_for_monitor(&container);
    // After the monitor's `die`, as Docker's `kill … die … stop`.
    crate::events::emit_container(engine.store(), "stop", &container.record);
    Ok(())
}

/// `kill [-s SIGNAL]`.
pub fn kill_container(engine: &mut Engine, text: &str, signal: &str) -> Result<(), EngineError> {
    let signal = parse_signal(signal)?;
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, text)?;
    if !container.state.is_running() {
        return Err(EngineError::ContainerNotRunning {
            id: container.record.id.clone(),
        });
    }
    if signal == Signal::SIGKILL {
        // moby's `Kill`: a SIGKILL returns once the container is no longer
        // running (a client's inspect right after it sees it exited).
        return kill_and_wait(engine, &container, signal);
    }
    if matches!(signal, Signal::SIGTERM | Signal::SIGINT) {
        mark_stopped_by_user(engine, &container.record.id);
    }
    signal_container(engine, &container, signal)
}

/// `wait`: blocks until the container is not running; returns its exit code.
pub fn wait_container(engine: &mut Engine, text: &str) -> Result<i32, EngineError> {
    let config = engine.config().clone();
    let container = find_container(engine.store(), &config, text)?;
    if container.state.is_running() {
        wait_for_run_end(engine, &config, &container);
    }
    let row = super::lookup::find_row(engine.store(), &container.record.id);
    match row {
        Ok(row) => Ok(super::lookup::parse_row(&row)?.state.exit_code),
        // Removed by --rm meanwhile: the last state we saw.
        Err(_) => Ok(container.state.exit_code),
    }
}
