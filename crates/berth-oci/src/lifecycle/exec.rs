//! `exec`: another process in a created or running container (its namespaces, its cgroup,
//! the container's seccomp filter), from `--process` or the command line.

use std::path::PathBuf;

use berth_runtime::exec::exec_in;
use berth_runtime::ProcessSpec;
use nix::unistd::Pid;

use super::StdioSource;
use crate::cgroup;
use crate::error::{OciError, Result};
use crate::state::Status;
use crate::store::Store;

#[derive(Debug)]
pub struct ExecOptions {
    pub process: ProcessSpec,
    pub stdio: StdioSource,
    pub pid_file: Option<PathBuf>,
}

/// Starts the process; returns its pid (the caller is its parent and may wait for it).
pub fn exec(store: &Store, id: &str, options: ExecOptions) -> Result<Pid> {
    let (lock, record) = store.lock(id)?;
    match store.status_held(&record) {
        Status::Running | Status::Created => {}
        Status::Paused => {
            return Err(OciError::WrongState(
                "cannot exec in a paused container".to_owned(),
            ))
        }
        _ => {
            return Err(OciError::WrongState(
                "cannot exec in a stopped container".to_owned(),
            ))
        }
    }
    let stdio = options.stdio.into_stdio(options.process.tty)?;
    let manager = cgroup::manager(&record.cgroup_path)?;
    let pid =
        exec_in(record.pid, &options.process, stdio, manager.as_ref()).map_err(OciError::Launch)?;
    drop(lock);
    if let Some(path) = &options.pid_file {
        fs_err::write(path, pid.as_raw().to_string()).map_err(OciError::io("write", path))?;
    }
    Ok(pid)
}
