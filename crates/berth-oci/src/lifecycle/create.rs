//! `create`: the container's namespaces, cgroup, root and mounts made, its init waiting at
//! the exec FIFO (berth-runtime `launch_gated`) until `start`. A failure at any step undoes
//! the earlier ones: no directory, cgroup or process is left (runc leaves none either).

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use berth_runtime::init::ExecGate;
use berth_runtime::launch::launch_gated;
use berth_runtime::Launched;
use nix::unistd::Pid;

use super::StdioSource;
use crate::convert::{self, Plan};
use crate::error::{OciError, Result};
use crate::state::{now_rfc3339, process_start, Record, Status};
use crate::store::Store;
use crate::{cgroup, hooks};

#[derive(Debug)]
pub struct CreateOptions {
    pub bundle: PathBuf,
    pub pid_file: Option<PathBuf>,
    pub stdio: StdioSource,
    pub preserve_fds: u32,
}

/// A created container: its init is a child of this process until it exits.
#[derive(Debug)]
pub struct Created {
    pub record: Record,
    pub launched: Launched,
}

pub fn create(store: &Store, id: &str, options: CreateOptions) -> Result<Created> {
    let lock = store.create_dir(id)?;
    let mut cgroup_made = None;
    let result = create_locked(store, id, options, &mut cgroup_made);
    if result.is_err() {
        if let Some(path) = cgroup_made {
            if let Err(error) = cgroup::remove(&path) {
                tracing::warn!(%error, "failed to remove the cgroup of a container that failed to create");
            }
        }
        let _ = store.remove(id);
    }
    drop(lock);
    result
}

fn create_locked(
    store: &Store,
    id: &str,
    options: CreateOptions,
    cgroup_made: &mut Option<PathBuf>,
) -> Result<Created> {
    #[allow(clippy::disallowed_methods)] // the error names the path itself
    let bundle = std::fs::canonicalize(&options.bundle)
        .map_err(OciError::io("find the bundle", &options.bundle))?;
    let config = convert::read_config(&bundle)?;
    let version = cgroup::version()?;
    let plan = convert::plan(&bundle, id, &config, &version)?;
    let mut record = Record {
        id: id.to_owned(),
        bundle: bundle.clone(),
        rootfs: plan.rootfs.clone(),
        pid: 0,
        pid_start: 0,
        created: now_rfc3339(),
        owner: String::new(),
        cgroup_path: plan.cgroup_path.clone(),
        config: config.clone(),
    };
    // Recorded before anything else is made, so that whatever a killed `create` leaves is
    // found again (its cgroup path; from the clone on, its init's pid) and `delete` removes
    // it.
    store.save(&record)?;
    let fifo = make_fifo(&store.exec_fifo(id))?;
    let manager = cgroup::manager(&plan.cgroup_path)?;
    *cgroup_made = Some(plan.cgroup_path.clone());
    manager.create(&plan.resources).map_err(OciError::Cgroup)?;
    if let Some(path) = &plan.join_uts {
        join_namespace(path, nix::sched::CloneFlags::CLONE_NEWUTS)?;
    }
    let stdio = options.stdio.into_stdio(plan.spec.process.tty)?;
    let mut prepare_error = None;
    let mut between = |pid: Pid| -> std::result::Result<(), String> {
        let result = prepare(store, &plan, &record, pid);
        result.map_err(|error| {
            let message = crate::error_chain(&error);
            prepare_error = Some(error);
            message
        })
    };
    let gate = ExecGate {
        fifo,
        preserve_fds: options.preserve_fds,
    };
    let launched = launch_gated(&plan.spec, stdio, manager.as_ref(), &mut between, gate);
    let launched = match launched {
        Ok(launched) => launched,
        Err(berth_runtime::LaunchError::Prepare(_)) if prepare_error.is_some() => {
            return Err(prepare_error.take().expect("checked just above"))
        }
        Err(error) => return Err(OciError::Launch(error)),
    };
    record.pid = launched.pid.as_raw();
    record.pid_start = process_start(record.pid).unwrap_or(0);
    if let Err(error) = store.save(&record).and_then(|()| match &options.pid_file {
        Some(path) => write_pid_file(path, record.pid),
        None => Ok(()),
    }) {
        let _ = nix::sys::signal::kill(launched.pid, nix::sys::signal::Signal::SIGKILL);
        let _ = nix::sys::wait::waitpid(launched.pid, None);
        return Err(error);
    }
    Ok(Created { record, launched })
}

/// Between the clone and the root: sysctls in the container's namespaces, then the
/// prestart and createRuntime hooks (the runtime's namespaces, state `creating`).
fn prepare(store: &Store, plan: &Plan, record: &Record, pid: Pid) -> Result<()> {
    let mut with_pid = record.clone();
    with_pid.pid = pid.as_raw();
    with_pid.pid_start = process_start(with_pid.pid).unwrap_or(0);
    store.save(&with_pid)?;
    if !plan.sysctls.is_empty() {
        write_sysctls(pid, &plan.sysctls)?;
    }
    let mut state = record.state(Status::Creating);
    state.pid = pid.as_raw();
    hooks::run("prestart", &plan.hooks.prestart, &state)?;
    hooks::run("createRuntime", &plan.hooks.create_runtime, &state)
}

/// The exec FIFO, mode 0622 so that an init that is no longer root can still open it, and
/// an `O_PATH` descriptor of it for the init.
fn make_fifo(path: &Path) -> Result<OwnedFd> {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o622)).map_err(
        |source| OciError::Sys {
            action: "create the exec fifo",
            source,
        },
    )?;
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(0o622))
        .map_err(OciError::io("set the mode of", path))?;
    let fd = nix::fcntl::open(
        path,
        nix::fcntl::OFlag::O_PATH | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|source| OciError::Sys {
        action: "open the exec fifo",
        source,
    })?;
    // SAFETY: a descriptor open(2) just returned, owned by no one else.
    Ok(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// `--pid-file`, written whole or not at all (containerd reads it as soon as `create`
/// returns), with no newline, as runc writes it.
fn write_pid_file(path: &Path, pid: i32) -> Result<()> {
    let parent = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = parent.join(format!(".{name}.berth-tmp"));
    fs_err::write(&temporary, pid.to_string()).map_err(OciError::io("write", &temporary))?;
    fs_err::rename(&temporary, path).map_err(OciError::io("write", path))
}

fn join_namespace(path: &Path, kind: nix::sched::CloneFlags) -> Result<()> {
    let file = fs_err::File::open(path).map_err(OciError::io("open the namespace", path))?;
    nix::sched::setns(file, kind).map_err(|source| OciError::Sys {
        action: "join the UTS namespace",
        source,
    })
}

/// Writes `sysctls` from a child that joined the container's network, IPC and UTS
/// namespaces (`/proc/sys/net`, `kernel.shm*`, … show the namespaces of the process that
/// opens them).
fn write_sysctls(pid: Pid, sysctls: &[(String, String)]) -> Result<()> {
    let mut namespaces = Vec::new();
    for name in ["net", "ipc", "uts"] {
        let path = format!("/proc/{pid}/ns/{name}");
        let file = fs_err::File::open(&path).map_err(OciError::io("open the namespace", &path))?;
        namespaces.push(file.into_parts().0);
    }
    let writes: Vec<(std::ffi::CString, String)> = sysctls
        .iter()
        .map(|(key, value)| {
            let path = format!("/proc/sys/{}", key.replace('.', "/"));
            std::ffi::CString::new(path)
                .map(|path| (path, value.clone()))
                .map_err(|_| OciError::invalid(format!("linux.sysctl.{key}"), "contains NUL"))
        })
        .collect::<Result<_>>()?;
    // SAFETY: the child only calls setns, open, write, close and _exit on memory prepared
    // before the fork (no allocation, no lock).
    match unsafe { nix::unistd::fork() }.map_err(|source| OciError::Sys {
        action: "fork to write sysctls",
        source,
    })? {
        nix::unistd::ForkResult::Child => {
            for file in &namespaces {
                // SAFETY: setns on a namespace descriptor this process holds.
                if unsafe { libc::setns(file.as_raw_fd(), 0) } != 0 {
                    // SAFETY: leave the forked child at once.
                    unsafe { libc::_exit(1) };
                }
            }
            for (index, (path, value)) in writes.iter().enumerate() {
                // SAFETY: open/write/close on a NUL-terminated path and a live buffer.
                let written = unsafe {
                    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                    let ok = fd >= 0 && libc::write(fd, value.as_ptr().cast(), value.len()) >= 0;
                    if fd >= 0 {
                        libc::close(fd);
                    }
                    ok
                };
                if !written {
                    // SAFETY: leave the forked child at once; the status names the sysctl.
                    unsafe { libc::_exit(10 + index.min(200) as i32) };
                }
            }
            // SAFETY: as above.
            unsafe { libc::_exit(0) }
        }
        nix::unistd::ForkResult::Parent { child } => match nix::sys::wait::waitpid(child, None) {
            Ok(nix::sys::wait::WaitStatus::Exited(_, 0)) => Ok(()),
            Ok(nix::sys::wait::WaitStatus::Exited(_, code)) if code >= 10 => {
                let (key, _) = &sysctls[usize::try_from(code - 10)
                    .unwrap_or(0)
                    .min(sysctls.len() - 1)];
                Err(OciError::invalid(
                    format!("linux.sysctl.{key}"),
                    "failed to write the sysctl in the container's namespaces",
                ))
            }
            _ => Err(OciError::invalid(
                "linux.sysctl",
                "failed to enter the container's namespaces",
            )),
        },
    }
}
