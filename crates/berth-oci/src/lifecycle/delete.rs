//! `delete`: a stopped (or created) container's cgroup and state removed, then its poststop
//! hooks; `--force` kills a running or paused one first.

use std::time::Duration;

use nix::sys::signal::Signal;
use nix::unistd::Pid;

use crate::cgroup;
use crate::error::{OciError, Result};
use crate::hooks;
use crate::state::Status;
use crate::store::Store;

pub fn delete(store: &Store, id: &str, force: bool) -> Result<()> {
    let (lock, record) = match store.lock(id) {
        Ok(found) => found,
        Err(OciError::NotFound) if force => return Ok(()),
        Err(error) => return Err(error),
    };
    let status = store.status_held(&record);
    match status {
        Status::Stopped => {}
        Status::Created => kill_init(&record),
        Status::Running | Status::Paused | Status::Creating if force => {
            let manager = cgroup::manager(&record.cgroup_path)?;
            let _ = manager.kill_all(Signal::SIGKILL);
            if status == Status::Paused {
                let _ = manager.thaw();
            }
            kill_init(&record);
        }
        _ => {
            return Err(OciError::WrongState(format!(
                "cannot delete container {id} that is not stopped: {status}"
            )))
        }
    }
    if !super::wait_gone(&record, Duration::from_secs(10)) {
        return Err(OciError::WrongState(format!(
            "container {id}'s init (pid {}) did not exit after SIGKILL",
            record.pid
        )));
    }
    // What the init left behind (an exec'd process, in a shared pid namespace) goes too.
    let manager = cgroup::manager(&record.cgroup_path)?;
    if manager
        .processes()
        .is_ok_and(|processes| !processes.is_empty())
    {
        let _ = manager.kill_all(Signal::SIGKILL);
    }
    cgroup::remove(&record.cgroup_path)?;
    store.remove(id)?;
    drop(lock);
    let poststop = record.config.hooks.clone().unwrap_or_default().poststop;
    if let Err(error) = hooks::run("poststop", &poststop, &record.state(Status::Stopped)) {
        // runc warns and carries on: the container is gone either way.
        tracing::warn!(%error, "poststop hook failed");
        eprintln!("warning: {}", crate::error_chain(&error));
    }
    Ok(())
}

fn kill_init(record: &crate::state::Record) {
    if record.init_alive() {
        let _ = nix::sys::signal::kill(Pid::from_raw(record.pid), Signal::SIGKILL);
    }
}
