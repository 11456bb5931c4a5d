//! `kill`: a signal to the init, or with `--all` to every process of the container's cgroup.

use nix::sys::signal::Signal;
use nix::unistd::Pid;

use crate::cgroup;
use crate::error::{OciError, Result};
use crate::state::Status;
use crate::store::Store;

/// `KILL`, `SIGKILL` or `9` (runc's forms; case-insensitive names).
pub fn parse_signal(text: &str) -> Result<Signal> {
    let invalid = || OciError::invalid("signal", format!("unknown signal {text:?}"));
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

pub fn kill(store: &Store, id: &str, signal: Signal, all: bool) -> Result<()> {
    let (_lock, record) = store.lock(id)?;
    if store.status_held(&record) == Status::Stopped {
        return Err(OciError::WrongState("container not running".to_owned()));
    }
    if all {
        let manager = cgroup::manager(&record.cgroup_path)?;
        return manager.kill_all(signal).map_err(OciError::Cgroup);
    }
    if record.pid <= 0 {
        // kill(2) of 0 or -1 would reach whole process groups.
        return Err(OciError::WrongState("container not running".to_owned()));
    }
    nix::sys::signal::kill(Pid::from_raw(record.pid), signal).map_err(|source| OciError::Sys {
        action: "send the signal",
        source,
    })
}
