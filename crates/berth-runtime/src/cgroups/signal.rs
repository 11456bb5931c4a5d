//! Signalling every process of a cgroup one by one, and waiting for a freezer state; shared by
//! both managers.

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::CgroupError;

/// Sends `signal` to each pid. A process that exited meanwhile (`ESRCH`) is not an error.
pub(crate) fn signal_each(pids: &[Pid], signal: Signal) -> Result<(), CgroupError> {
    for &pid in pids {
        match kill(pid, signal) {
            Ok(()) | Err(Errno::ESRCH) => {}
            Err(source) => {
                return Err(CgroupError::Signal {
                    pid,
                    signal,
                    source,
                })
            }
        }
    }
    Ok(())
}

/// How long freezing or thawing may take before it is reported as stuck. Freezing waits for
/// every task to reach a freezable point, which takes microseconds normally and can take
/// long for tasks blocked in uninterruptible I/O (for example on a hung NFS server).
pub(crate) const FREEZE_TIMEOUT: Duration = Duration::from_secs(10);

/// Calls `check` with a growing pause between calls until it reports the wanted state
/// (`Ok(None)`) or `timeout` passes; then returns the last state seen (`Some`) for the error.
/// `on_slow` runs every half second while waiting (v1 uses it to retry the freeze).
pub(crate) fn wait_for_state(
    path: &Path,
    action: &'static str,
    timeout: Duration,
    mut check: impl FnMut() -> Result<Option<String>, CgroupError>,
    mut on_slow: impl FnMut() -> Result<(), CgroupError>,
) -> Result<(), CgroupError> {
    let start = Instant::now();
    let mut pause = Duration::from_micros(50);
    let mut last_retry = start;
    loop {
        let Some(state) = check()? else {
            return Ok(());
        };
        if start.elapsed() >= timeout {
            return Err(CgroupError::FreezeTimeout {
                action,
                path: path.to_owned(),
                state,
                waited_ms: start.elapsed().as_millis(),
            });
        }
        if last_retry.elapsed() >= Duration::from_millis(500) {
            on_slow()?;
            last_retry = Instant::now();
        }
        thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(10));
    }
}
