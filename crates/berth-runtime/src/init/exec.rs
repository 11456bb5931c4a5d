//! The last steps before `execve`: limits, working directory, identity,
//! capabilities, no_new_privs and seccomp (in runc's order), then the
//! program itself, found on the container's PATH.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::unistd::{Gid, Uid};

use super::{InitFailure, InitResult, Never};
use crate::capabilities;
use crate::spec::{ProcessSpec, DEFAULT_PATH};

/// A created container's wait for `start` (see [`super::ExecGate`]).
pub(crate) struct Gate {
    pub(crate) fifo: std::os::fd::OwnedFd,
    /// The report pipe: replaced at the gate so that its reader (`create`) sees it close.
    pub(crate) report_fd: std::os::fd::RawFd,
}

impl Gate {
    /// Tells `create` the container is created (the report pipe closes: it becomes a
    /// close-on-exec copy of stderr, where a later failure is then written), then waits
    /// until `start` opens the FIFO and writes the byte `start` waits for.
    fn wait(self) -> InitResult<()> {
        use std::os::fd::AsRawFd;
        // SAFETY: dup3 replaces the report pipe's descriptor (owned by `init::run`, which
        // only writes to or closes that number) with a copy of stderr.
        if unsafe { libc::dup3(2, self.report_fd, libc::O_CLOEXEC) } < 0 {
            return Err(InitFailure::io(
                "signal the container created",
                std::io::Error::last_os_error(),
            ));
        }
        let path = format!("/proc/self/fd/{}", self.fifo.as_raw_fd());
        // Blocks until `start` opens the FIFO for reading.
        #[allow(clippy::disallowed_methods)] // bare errno for InitFailure::io
        let mut fifo = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(|error| InitFailure::io("open the exec fifo", error))?;
        drop(self.fifo);
        std::io::Write::write_all(&mut fifo, b"0")
            .map_err(|error| InitFailure::io("write the exec fifo", error))
    }
}

pub(crate) fn finish_and_exec(process: &ProcessSpec, gate: Option<Gate>) -> InitResult<Never> {
    for limit in &process.rlimits {
        let value = libc::rlimit {
            rlim_cur: limit.soft,
            rlim_max: limit.hard,
        };
        // SAFETY: setrlimit reads one valid rlimit struct.
        if unsafe { libc::setrlimit(limit.resource as _, &value) } != 0 {
            let error = std::io::Error::last_os_error();
            let hint = if error.raw_os_error() == Some(libc::EPERM) {
                " (raising a hard limit needs CAP_SYS_RESOURCE, which this host does not grant)"
            } else {
                ""
            };
            return Err(InitFailure::new(
                &format!(
                    "set rlimit {}",
                    crate::spec::rlimit_name(limit.resource)
                        .map_or_else(|| limit.resource.to_string(), str::to_owned)
                ),
                format!("{error}{hint}"),
                error.raw_os_error().unwrap_or(0),
            ));
        }
    }

    if let Some(score) = process.oom_score_adj {
        // Before privileges drop: lowering the score needs CAP_SYS_RESOURCE (proc(5)).
        #[allow(clippy::disallowed_methods)] // bare errno for InitFailure::io
        std::fs::write("/proc/self/oom_score_adj", score.to_string())
            .map_err(|error| InitFailure::io("set oom_score_adj", error))?;
    }

    let cwd = Path::new(if process.cwd.is_empty() {
        "/"
    } else {
        process.cwd.as_str()
    });
    if fs_err::metadata(cwd).is_err() {
        // Docker creates a missing working directory.
        #[allow(clippy::disallowed_methods)] // bare errno for InitFailure::io
        std::fs::create_dir_all(cwd).map_err(|error| {
            InitFailure::io(&format!("create working directory {}", process.cwd), error)
        })?;
        let _ = nix::unistd::chown(
            cwd,
            Some(Uid::from_raw(process.uid)),
            Some(Gid::from_raw(process.gid)),
        );
    }
    nix::unistd::chdir(cwd)
        .map_err(|error| InitFailure::nix(&format!("chdir to {}", cwd.display()), error))?;

    // Resolve the program before dropping privileges: the lookup needs to
    // read directories the user may not; the error is what Docker reports.
    let program = find_program(&process.args, &process.env)?;
    if let Some(gate) = gate {
        // runc's order: everything that can fail for a bad configuration has been checked.
        gate.wait()?;
    }

    capabilities::limit_bounding_set(&process.capabilities)
        .map_err(|error| InitFailure::new("drop bounding capabilities", &error, libc::EPERM))?;
    if let Some(filter) = &process.seccomp {
        if !process.no_new_privileges {
            // Without no_new_privs, installing a filter needs CAP_SYS_ADMIN,
            // which we still hold here (runc does the same).
            filter
                .install()
                .map_err(|error| InitFailure::new("install seccomp filter", &error, libc::EPERM))?;
        }
    }
    // SAFETY: PR_SET_KEEPCAPS takes an integer flag and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_KEEPCAPS, 1, 0, 0, 0) };
    let groups: Vec<Gid> = process
        .additional_gids
        .iter()
        .map(|gid| Gid::from_raw(*gid))
        .collect();
    nix::unistd::setgroups(&groups).map_err(|error| InitFailure::nix("setgroups", error))?;
    let gid = Gid::from_raw(process.gid);
    nix::unistd::setresgid(gid, gid, gid).map_err(|error| InitFailure::nix("setgid", error))?;
    let uid = Uid::from_raw(process.uid);
    nix::unistd::setresuid(uid, uid, uid).map_err(|error| InitFailure::nix("setuid", error))?;
    capabilities::set_process(&process.capabilities, false)
        .map_err(|error| InitFailure::new("set capabilities", &error, libc::EPERM))?;
    if process.no_new_privileges {
        // SAFETY: PR_SET_NO_NEW_PRIVS takes integer arguments only.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(InitFailure::io(
                "set no_new_privs",
                std::io::Error::last_os_error(),
            ));
        }
        if let Some(filter) = &process.seccomp {
            filter
                .install()
                .map_err(|error| InitFailure::new("install seccomp filter", &error, libc::EPERM))?;
        }
    }

    let argv = c_strings(&process.args)?;
    let envp = c_strings(&process.env)?;
    let path = CString::new(program.as_os_str().as_bytes())
        .map_err(|_| InitFailure::new("exec", "program path contains NUL", libc::EINVAL))?;
    let error = nix::unistd::execve(&path, &argv, &envp)
        .err()
        .unwrap_or(nix::Error::UnknownErrno);
    Err(exec_failure(&process.args[0], error))
}

fn c_strings(items: &[String]) -> InitResult<Vec<CString>> {
    items
        .iter()
        .map(|item| {
            CString::new(item.as_bytes()).map_err(|_| {
                InitFailure::new(
                    "exec",
                    format!("argument {item:?} contains NUL"),
                    libc::EINVAL,
                )
            })
        })
        .collect()
}

/// Docker's (runc's) wording for programs that cannot run.
fn exec_failure(program: &str, error: nix::Error) -> InitFailure {
    let message = match error {
        nix::Error::ENOENT => {
            format!("exec: {program:?}: stat {program}: no such file or directory")
        }
        nix::Error::EACCES => format!("exec: {program:?}: permission denied"),
        other => format!("exec: {program:?}: {}", other.desc()),
    };
    InitFailure::new("exec", message, error as i32)
}

/// Docker's rule: a name with `/` is used as is; otherwise the first
/// executable match on the container's PATH.
fn find_program(args: &[String], env: &[String]) -> InitResult<PathBuf> {
    let Some(program) = args.first() else {
        return Err(InitFailure::new(
            "exec",
            "no command specified",
            libc::ENOENT,
        ));
    };
    if program.contains('/') {
        return Ok(PathBuf::from(program));
    }
    let path_value = env
        .iter()
        .rev()
        .find_map(|entry| entry.strip_prefix("PATH="))
        .unwrap_or(&DEFAULT_PATH[5..]);
    let mut denied = false;
    for directory in path_value.split(':') {
        let directory = if directory.is_empty() { "." } else { directory };
        let candidate = Path::new(directory).join(program);
        let Ok(metadata) = fs_err::metadata(&candidate) else {
            continue;
        };
        if metadata.is_dir() {
            continue;
        }
        if nix::unistd::access(&candidate, nix::unistd::AccessFlags::X_OK).is_ok() {
            return Ok(candidate);
        }
        denied = true;
    }
    if denied {
        return Err(InitFailure::new(
            "exec",
            format!("exec: {program:?}: permission denied"),
            libc::EACCES,
        ));
    }
    Err(InitFailure::new(
        "exec",
        format!("exec: {program:?}: executable file not found in $PATH"),
        libc::ENOENT,
    ))
}
