//! Running one process in the guest and streaming its output to the host.

use std::ffi::CString;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signalfd::SignalFd;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use crate::protocol::{FrameKind, RunRequest};

/// Docker's default `PATH` (the one runc and Docker put in a container with
/// none).
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Finished {
    pub code: i32,
    pub error: Option<String>,
}

impl Finished {
    fn failed(code: i32, error: String) -> Finished {
        Finished {
            code,
            error: Some(error),
        }
    }
}

/// Runs `request`, handing each piece of output to `output` as it comes, and
/// returns when the process has exited (reaping any orphan on the way: the
/// agent is PID 1). An `Err` is a failure of `output` (the channel), not of
/// the process.
pub(super) fn run(
    request: &RunRequest,
    root: Option<&Path>,
    children: &mut SignalFd,
    output: &mut dyn FnMut(FrameKind, &[u8]) -> io::Result<()>,
) -> io::Result<Finished> {
    let mut child = match spawn(request, root) {
        Ok(child) => child,
        Err(finished) => return Ok(finished),
    };
    let pid = Pid::from_raw(child.id() as i32);
    let mut pipes = [
        child
            .stdout
            .take()
            .map(|pipe| (FrameKind::Stdout, Box::new(pipe) as Box<dyn Pipe>)),
        child
            .stderr
            .take()
            .map(|pipe| (FrameKind::Stderr, Box::new(pipe) as Box<dyn Pipe>)),
    ];
    for (_, pipe) in pipes.iter().flatten() {
        fcntl(
            pipe.as_fd().as_raw_fd(),
            FcntlArg::F_SETFL(OFlag::O_NONBLOCK),
        )?;
    }
    let mut buffer = vec![0u8; 64 * 1024];
    let mut code = None;
    loop {
        if let Some(code) = code {
            // The process is gone: send what it left in the pipes and stop,
            // even if an orphan still holds them open.
            for slot in &mut pipes {
                while let Some((kind, pipe)) = slot {
                    match pipe.read(&mut buffer) {
                        Ok(0) => *slot = None,
                        Ok(read) => output(*kind, &buffer[..read])?,
                        Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
                        Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                        Err(_) => *slot = None,
                    }
                }
            }
            return Ok(Finished { code, error: None });
        }
        let mut fds = vec![PollFd::new(children.as_fd(), PollFlags::POLLIN)];
        let open: Vec<usize> = (0..pipes.len())
            .filter(|&index| pipes[index].is_some())
            .collect();
        for &index in &open {
            let (_, pipe) = pipes[index].as_ref().expect("only open pipes are listed");
            fds.push(PollFd::new(pipe.as_fd(), PollFlags::POLLIN));
        }
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => {}
            Err(nix::Error::EINTR) => continue,
            Err(error) => return Err(error.into()),
        }
        let ready = |fd: &PollFd| !fd.revents().unwrap_or(PollFlags::empty()).is_empty();
        let children_ready = ready(&fds[0]);
        let pipes_ready: Vec<usize> = open
            .iter()
            .zip(&fds[1..])
            .filter(|(_, fd)| ready(fd))
            .map(|(&i, _)| i)
            .collect();
        drop(fds);
        for index in pipes_ready {
            let slot = &mut pipes[index];
            if let Some((kind, pipe)) = slot {
                match pipe.read(&mut buffer) {
                    Ok(0) => *slot = None,
                    Ok(read) => output(*kind, &buffer[..read])?,
                    Err(error)
                        if matches!(
                            error.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                        ) => {}
                    Err(_) => *slot = None,
                }
            }
        }
        if children_ready {
            while children.read_signal().ok().flatten().is_some() {}
            code = reap(pid).or(code);
        }
    }
}

trait Pipe: Read + AsFd {}
impl<T: Read + AsFd> Pipe for T {}

/// Reaps every child that has exited; the exit code of `pid` if it is one.
fn reap(pid: Pid) -> Option<i32> {
    let mut code = None;
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(exited, status)) if exited == pid => code = Some(status),
            Ok(WaitStatus::Signaled(exited, signal, _)) if exited == pid => {
                code = Some(128 + signal as i32)
            }
            Ok(WaitStatus::StillAlive) | Err(_) => return code,
            Ok(_) => {}
        }
    }
}

/// Starts the process, `chroot`ed into `root` when there is one, or says why
/// it cannot be: 127 when the program is not there, 126 when it cannot be
/// run, with Docker's (runc's) words.
fn spawn(request: &RunRequest, root: Option<&Path>) -> Result<std::process::Child, Finished> {
    let Some(program) = request.args.first() else {
        return Err(Finished::failed(126, "no command specified".to_string()));
    };
    let path_variable = request
        .env
        .iter()
        .find_map(|entry| entry.strip_prefix("PATH="))
        .unwrap_or(DEFAULT_PATH);
    let base = root.unwrap_or(Path::new("/"));
    let executable = resolve(base, program, path_variable)?;
    let cwd = if request.cwd.is_empty() {
        "/"
    } else {
        request.cwd.as_str()
    };
    // Docker creates a missing working directory rather than failing; inside
    // the root, where an image's symlinks cannot lead it out.
    if let Err(error) = super::root::in_root(base, Path::new(cwd)) {
        return Err(Finished::failed(
            126,
            format!(
                "chdir to cwd ({cwd:?}) failed: {}",
                super::error_chain(&error)
            ),
        ));
    }
    let mut command = Command::new(&executable);
    command
        .arg0(program)
        .args(&request.args[1..])
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let cwd_c = CString::new(cwd).map_err(|_| Finished::failed(126, "cwd holds NUL".into()))?;
    let root_c = match root {
        Some(root) => Some(
            CString::new(root.as_os_str().as_bytes())
                .map_err(|_| Finished::failed(126, "root holds NUL".into()))?,
        ),
        None => None,
    };
    // SAFETY: the closure runs in the forked child before exec and calls only
    // chroot and chdir (async-signal-safe) on strings made before the fork.
    unsafe {
        command.pre_exec(move || {
            if let Some(root) = &root_c {
                if libc::chroot(root.as_ptr()) == -1 {
                    return Err(io::Error::last_os_error());
                }
            }
            if libc::chdir(cwd_c.as_ptr()) == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    if !request.env.iter().any(|entry| entry.starts_with("PATH=")) {
        command.env("PATH", DEFAULT_PATH);
    }
    for entry in &request.env {
        match entry.split_once('=') {
            Some((key, value)) if !key.is_empty() => command.env(key, value),
            _ => continue,
        };
    }
    command.spawn().map_err(|error| {
        let code = if error.kind() == io::ErrorKind::NotFound {
            127
        } else {
            126
        };
        let reason = match error.kind() {
            io::ErrorKind::PermissionDenied => "permission denied".to_string(),
            io::ErrorKind::NotFound => "no such file or directory".to_string(),
            _ => error.to_string(),
        };
        Finished::failed(code, format!("exec: {program:?}: {reason}"))
    })
}

/// `PATH` lookup as Go's `exec.LookPath`, whose errors runc (and so Docker)
/// prints, inside `root` (symlinks resolved there): the path the program has
/// once `chroot`ed.
fn resolve(root: &Path, program: &str, path_variable: &str) -> Result<PathBuf, Finished> {
    let stat = |path: &Path| {
        berth_runtime::in_root::open_in_root(root, path, libc::O_PATH, 0)
            .ok()
            .and_then(|fd| nix::sys::stat::fstat(fd.as_raw_fd()).ok())
    };
    if program.contains('/') {
        return match stat(Path::new(program)) {
            Some(_) => Ok(PathBuf::from(program)),
            None => Err(Finished::failed(
                127,
                format!("exec: {program:?}: stat {program}: no such file or directory"),
            )),
        };
    }
    path_variable
        .split(':')
        .map(|dir| Path::new(if dir.is_empty() { "." } else { dir }).join(program))
        .find(|candidate| {
            stat(candidate)
                .map(|meta| {
                    meta.st_mode & libc::S_IFMT == libc::S_IFREG && meta.st_mode & 0o111 != 0
                })
                .unwrap_or(false)
        })
        .ok_or_else(|| {
            Finished::failed(
                127,
                format!("exec: {program:?}: executable file not found in $PATH"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_programs_up_as_docker_does() {
        let host = Path::new("/");
        assert_eq!(
            resolve(host, "sh", "/nonexistent:/bin").unwrap(),
            PathBuf::from("/bin/sh")
        );
        assert_eq!(
            resolve(host, "no-such-program", "/bin").unwrap_err(),
            Finished::failed(
                127,
                r#"exec: "no-such-program": executable file not found in $PATH"#.into()
            )
        );
        assert_eq!(
            resolve(host, "/no/such", "/bin").unwrap_err(),
            Finished::failed(
                127,
                r#"exec: "/no/such": stat /no/such: no such file or directory"#.into()
            )
        );
        // Not executable: skipped in PATH, as LookPath does.
        assert!(resolve(host, "passwd", "/etc").is_err());
    }

    #[test]
    fn looks_programs_up_inside_the_root() {
        let root = tempfile::tempdir().unwrap();
        fs_err::create_dir_all(root.path().join("bin")).unwrap();
        fs_err::create_dir_all(root.path().join("opt")).unwrap();
        let tool = root.path().join("opt/tool");
        fs_err::write(&tool, "#!/bin/sh\n").unwrap();
        fs_err::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        // An absolute link inside the image means that path in the image.
        fs_err::os::unix::fs::symlink("/opt/tool", root.path().join("bin/tool")).unwrap();
        assert_eq!(
            resolve(root.path(), "tool", "/bin").unwrap(),
            PathBuf::from("/bin/tool")
        );
        // The host's /bin/sh is not the root's.
        assert!(resolve(root.path(), "sh", "/bin").is_err());
        assert!(resolve(root.path(), "/bin/sh", "/bin").is_err());
    }
}
